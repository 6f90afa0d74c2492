package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
	"github.com/quic-go/quic-go"
)

// uplinkPair is an authority's server, which accepts no connections
// (DialOnly), and a front's uplink port that allows (by default) the
// server's certificate, at most maxUplinks at once (0: the default).
func uplinkPair(t *testing.T, allow func(string) bool, maxUplinks int) (srv *Server, ln *UplinkListener, upTLS *tls.Config, authPin, frontPin string) {
	t.Helper()
	var authCert, frontCert tls.Certificate
	var err error
	authCert, authPin, err = SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	frontCert, frontPin, err = SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := scenario.NewAuthority(scenario.All[:2], 20)
	srv, err = Listen(auth, ServerConfig{Listen: "127.0.0.1:0", TLS: ServerTLS(authCert), Logger: quiet, DialOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	if allow == nil {
		allow = func(fp string) bool { return fp == authPin }
	}
	ln, err = ListenUplinks(UplinkConfig{Listen: "127.0.0.1:0", Cert: frontCert, Allow: allow, MaxUplinks: maxUplinks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ln.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	upTLS, err = UplinkClientTLS(authCert, frontPin)
	if err != nil {
		t.Fatal(err)
	}
	return srv, ln, upTLS, authPin, frontPin
}

// TestUplink: an authority that dials the front serves it as an observer
// over the one connection — the front, which accepted it, subscribes and
// commits whole frames of every island — and the front knows the
// authority by its certificate.
func TestUplink(t *testing.T) {
	srv, ln, upTLS, authPin, _ := uplinkPair(t, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	upDone := make(chan error, 1)
	go func() { upDone <- srv.Uplink(ctx, ln.Addr().String(), upTLS) }()
	c, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint() != authPin {
		t.Fatalf("the uplink is known as %s, want the authority's certificate %s", c.Fingerprint(), authPin)
	}
	w, err := NewWatcher(WatchConfig{Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var committed, torn atomic.Uint64
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- w.RunConn(ctx, c, func(tk *Tick) {
			committed.Store(tk.Receiver.Stats().FramesCommitted)
			torn.Add(uint64(tk.HalfFrames))
		})
	}()
	waitFor(t, "the front to commit 40 frames over the uplink", func() bool { return committed.Load() >= 40 })
	if n := torn.Load(); n != 0 {
		t.Fatalf("%d half-frames shown over the uplink", n)
	}
	if st := ln.Stats(); st.Accepted != 1 || st.Refused != 0 {
		t.Fatalf("listener stats %+v, want one accepted, none refused", st)
	}
	// The front ends the uplink: the authority's Uplink returns the
	// front's close.
	c.Close(CodeShutdown, "front stopping")
	var ce *CloseError
	if err := <-upDone; !errors.As(err, &ce) || ce.Code != CodeShutdown {
		t.Fatalf("Uplink returned %v, want the front's close", err)
	}
	if err := <-watchDone; err == nil {
		t.Fatal("RunConn returned nil after the uplink ended")
	}
}

// TestUplinkRefused: a certificate the front does not allow gets no
// uplink (the handshake fails, counted), and neither does an observer
// that dials the uplink port.
func TestUplinkRefused(t *testing.T) {
	srv, ln, upTLS, _, frontPin := uplinkPair(t, func(string) bool { return false }, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Uplink(ctx, ln.Addr().String(), upTLS); !errors.Is(err, ErrUplinkRefused) {
		t.Fatalf("Uplink with a certificate not allowed returned %v, want ErrUplinkRefused", err)
	}
	waitFor(t, "the refused handshake to be counted", func() bool { return ln.Stats().Refused == 1 })
	obsTLS, err := ClientTLS(frontPin, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(WatchConfig{Addr: ln.Addr().String(), TLS: obsTLS, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx, nil); !errors.Is(err, ErrConnect) {
		t.Fatalf("an observer dialling the uplink port: Run returned %v, want ErrConnect", err)
	}
	if st := ln.Stats(); st.Accepted != 0 {
		t.Fatalf("listener stats %+v, want nothing accepted", st)
	}
	// The authority itself accepts nobody: it only dials.
	w, err = NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: obsTLS, DialTimeout: 300 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx, nil); !errors.Is(err, ErrConnect) {
		t.Fatalf("an observer dialling a DialOnly server: Run returned %v, want ErrConnect", err)
	}
}

// TestUplinkFull: past MaxUplinks open at once, an uplink is closed as it
// arrives, with CodeFull, and counted.
func TestUplinkFull(t *testing.T) {
	srv, ln, upTLS, _, _ := uplinkPair(t, nil, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Uplink(ctx, ln.Addr().String(), upTLS) }()
	first, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(CodeShutdown, "")
	second := make(chan error, 1)
	go func() { second <- srv.Uplink(ctx, ln.Addr().String(), upTLS) }()
	go func() { _, _ = ln.Accept(ctx) }()
	var ce *CloseError
	select {
	case err := <-second:
		if !errors.As(err, &ce) || ce.Code != CodeFull {
			t.Fatalf("a second uplink past MaxUplinks 1 ended with %v, want CodeFull", err)
		}
	case <-timeGuard(t):
		t.Fatal("a second uplink past MaxUplinks 1 was kept open")
	}
	if st := ln.Stats(); st.Full != 1 || st.Accepted != 1 {
		t.Fatalf("listener stats %+v, want one accepted, one full", st)
	}
}

// TestRefusedCert: the front's TLS alert is a refusal whether it closes the
// connection after the dial returned or fails the dial itself; a local
// crypto error or an application close is not.
func TestRefusedCert(t *testing.T) {
	alert := quic.TransportErrorCode(0x100 + 42) // bad_certificate
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"remote alert", &quic.TransportError{ErrorCode: alert, Remote: true}, true},
		{"remote alert, wrapped by the dial", fmt.Errorf("dial: %w", &quic.TransportError{ErrorCode: alert, Remote: true}), true},
		{"local alert", &quic.TransportError{ErrorCode: alert}, false},
		{"remote protocol violation", &quic.TransportError{ErrorCode: quic.ProtocolViolation, Remote: true}, false},
		{"application close", &quic.ApplicationError{ErrorCode: CodeShutdown, Remote: true}, false},
		{"timeout", context.DeadlineExceeded, false},
	} {
		if got := refusedCert(tc.err); got != tc.want {
			t.Errorf("%s: refusedCert = %v, want %v", tc.name, got, tc.want)
		}
	}
}
