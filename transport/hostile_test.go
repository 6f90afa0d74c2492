package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/scenario"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testServer serves src on 127.0.0.1 and returns it with a client TLS
// config that pins its certificate.
func testServer(t testing.TB, src Source, cfg ServerConfig) (*Server, *tls.Config) {
	t.Helper()
	srv, ct, _ := testServerPin(t, src, cfg)
	return srv, ct
}

// testServerPin is testServer, also returning the certificate's pin.
func testServerPin(t testing.TB, src Source, cfg ServerConfig) (*Server, *tls.Config, string) {
	t.Helper()
	cert, pin, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.TLS, cfg.Logger = ServerTLS(cert), quiet
	srv, err := Listen(src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	c, err := ClientTLS(pin, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, pin
}

// rawConn dials the server as a bare QUIC client and opens the control stream.
func rawConn(t *testing.T, srv *Server, ct *tls.Config) (*quic.Conn, *quic.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, srv.Addr().String(), ct, quicConfig(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return conn, st
}

// appCode waits for the connection to end and returns the application
// error code the server closed it with.
func appCode(t *testing.T, conn *quic.Conn) quic.ApplicationErrorCode {
	t.Helper()
	select {
	case <-conn.Context().Done():
	case <-time.After(guardTime(t)):
		t.Fatal("the server did not close the connection")
	}
	var ae *quic.ApplicationError
	if !errors.As(context.Cause(conn.Context()), &ae) || !ae.Remote {
		t.Fatalf("closed by %v, want a remote application error", context.Cause(conn.Context()))
	}
	return ae.ErrorCode
}

// committing runs a well-behaved watcher and reports, through the returned
// counter, how many frames it has committed.
func committing(t *testing.T, srv *Server, ct *tls.Config) *atomic.Uint64 {
	t.Helper()
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(tk *Tick) { n.Store(tk.Receiver.Stats().FramesCommitted) })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return &n
}

// waitFor polls cond until it holds, failing only when the test's guard
// time runs out (a hang, not a slow machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(guardTime(t))
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestGarbageIsDisconnected: an observer that sends garbage on its control
// stream, a message of the wrong direction, or any datagram is closed with
// CodeProtocol, and a well-behaved watcher beside it does not notice.
func TestGarbageIsDisconnected(t *testing.T) {
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	srv, ct := testServer(t, auth, ServerConfig{})
	good := committing(t, srv, ct)
	waitFor(t, "the good watcher to commit", func() bool { return good.Load() > 0 })

	cases := map[string]func(conn *quic.Conn, st *quic.Stream){
		"garbage bytes": func(_ *quic.Conn, st *quic.Stream) { _, _ = st.Write([]byte("GET / HTTP/1.1\r\n\r\n")) },
		"huge length":   func(_ *quic.Conn, st *quic.Stream) { _, _ = st.Write([]byte{0xff, 0xff, 0xff, 0x7f, 0x10}) },
		// Well framed, so the reader passes them on; Run finds them bad.
		"malformed body": func(_ *quic.Conn, st *quic.Stream) {
			_, _ = st.Write([]byte{6, 0, 0, 0, byte(codec.TypeSubscribe), 3, 0, 0, 0, 0}) // subscribe mode 3
		},
		"unknown type": func(_ *quic.Conn, st *quic.Stream) { _, _ = st.Write([]byte{2, 0, 0, 0, 0x7f, 0}) },
		"wrong direction": func(_ *quic.Conn, st *quic.Stream) {
			_, _ = st.Write(codec.Lease{Island: 1, Epoch: 9, Owner: 9}.Append(nil))
		},
		"a datagram": func(conn *quic.Conn, st *quic.Stream) {
			_, _ = st.Write(codec.Subscribe{All: true}.Append(nil))
			_ = conn.SendDatagram([]byte("ISYN\x01\x01garbage"))
		},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			conn, st := rawConn(t, srv, ct)
			send(conn, st)
			if code := appCode(t, conn); code != CodeProtocol {
				t.Fatalf("closed with code %d, want %d", code, CodeProtocol)
			}
		})
	}
	before := good.Load()
	waitFor(t, "the good watcher to keep committing", func() bool { return good.Load() > before+20 })
}

// floodSource emits a burst of control messages at every step: 4000
// identities announced and destroyed, about 96 KB for every observer.
type floodSource struct{ gen uint32 }

func (f *floodSource) Period() int64 { return 50_000 }

func (f *floodSource) Step() ([]codec.Message, []*island.Frame) {
	f.gen++
	ids := make([]island.MemberID, 4000)
	for i := range ids {
		ids[i] = island.MemberID{Stable: uint64(i + 1), Generation: f.gen}
	}
	return []codec.Message{codec.Announce{IDs: ids}, codec.Destroy{IDs: ids}}, nil
}

// TestNonReaderIsClosed: an observer that never reads its control stream
// is closed with CodeBacklog once its backlog passes the cap, instead of
// growing the server's memory; a watcher that reads keeps its connection.
func TestNonReaderIsClosed(t *testing.T) {
	skipRace(t)
	srv, ct := testServer(t, &floodSource{}, ServerConfig{ControlBacklog: 1 << 20})
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var applied atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(tk *Tick) {
			applied.Store(tk.Receiver.Stats().Control.Applied[codec.TypeDestroy])
		})
	}()

	conn, st := rawConn(t, srv, ct)
	_, _ = st.Write(codec.Subscribe{All: true}.Append(nil))
	if code := appCode(t, conn); code != CodeBacklog {
		t.Fatalf("closed with code %d, want %d", code, CodeBacklog)
	}
	before := applied.Load()
	waitFor(t, "the reading watcher to keep up", func() bool { return applied.Load() > before+10 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the reading watcher lost its connection: %v", err)
	}
}

// TestSlowObserverQueue: a broadcast's datagrams replace queued ones whose
// islands all have a newer frame (counted), and the queue never passes its
// cap.
func TestSlowObserverQueue(t *testing.T) {
	p := &peer{dgCap: 4, wakeDG: make(chan struct{}, 1)}
	dg := func(islands ...uint32) broadcast.Datagram {
		return broadcast.Datagram{Bytes: []byte{1}, Islands: islands}
	}
	if f, d := p.queueDatagrams([]broadcast.Datagram{dg(1), dg(2, 3), dg(4)}); f != 0 || d != 0 {
		t.Fatalf("first broadcast dropped %d frames, %d datagrams", f, d)
	}
	// A broadcast of islands 1, 2, 3: the queued datagrams of 1 and of 2+3
	// are superseded (3 frames, 2 datagrams); island 4's stays.
	f, d := p.queueDatagrams([]broadcast.Datagram{dg(1, 2), dg(3)})
	if f != 3 || d != 2 || len(p.dgs) != 3 || p.dgs[0].Islands[0] != 4 {
		t.Fatalf("superseding: %d frames, %d datagrams dropped, queue %v", f, d, p.dgs)
	}
	// Island 5 alone supersedes nothing; the queue is over its cap of 4 by
	// one, so the oldest (island 4's) goes.
	f, d = p.queueDatagrams([]broadcast.Datagram{dg(5), dg(5)})
	if f != 1 || d != 1 || len(p.dgs) != 4 || p.dgs[0].Islands[0] != 1 {
		t.Fatalf("over the cap: %d frames, %d datagrams dropped, queue %v", f, d, p.dgs)
	}
}

// TestReconnectAndRestart: the watcher reconnects to a server on the same
// timeline (a fresh catch-up, the clock kept) and to a restarted server (a
// new timeline: the clock waits, then plays on it).
func TestReconnectAndRestart(t *testing.T) {
	cert, pin, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	start := func(addr string, timeline uint64) (*Server, context.CancelFunc, chan error) {
		return startAt(t, scenario.All[:1], cert, addr, timeline, 0)
	}
	srv, stop, done := start("127.0.0.1:0", 7)
	addr := srv.Addr().String()
	tlsConf, _ := ClientTLS(pin, "", nil)
	w, err := NewWatcher(WatchConfig{Addr: addr, TLS: tlsConf, Subscribe: codec.Subscribe{All: true}, Reconnect: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	type snap struct {
		committed, reconnects, timelines uint64
		playing                          bool
	}
	var cur atomic.Pointer[snap]
	cur.Store(&snap{})
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() {
		wdone <- w.Run(wctx, func(tk *Tick) {
			st := tk.Receiver.Stats()
			cur.Store(&snap{st.FramesCommitted, st.Reconnects, st.Timelines, len(tk.Views) > 0})
		})
	}()
	waitFor(t, "frames from the first server", func() bool { return cur.Load().committed > 10 })

	stop()
	<-done
	_, stop, done = start(addr, 7) // the same timeline: a reconnect
	base := cur.Load().committed
	waitFor(t, "a reconnect", func() bool { s := cur.Load(); return s.reconnects == 1 && s.committed > base+10 })
	if s := cur.Load(); s.timelines != 1 {
		t.Fatalf("a reconnect counted as a new timeline: %+v", s)
	}

	stop()
	<-done
	_, stop, done = start(addr, 8) // a restarted authority: a new timeline
	base = cur.Load().committed
	waitFor(t, "the new timeline to play", func() bool {
		s := cur.Load()
		return s.timelines == 2 && s.committed > base+10 && s.playing
	})
	wcancel()
	if err := <-wdone; err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
}

// startAt serves scs on addr under timeline with cert, datagrams capped
// at maxDatagram bytes (0: the path's); stop with the returned cancel,
// then read Run's result from the channel.
func startAt(t *testing.T, scs []scenario.Scenario, cert tls.Certificate, addr string, timeline uint64, maxDatagram int) (*Server, context.CancelFunc, chan error) {
	t.Helper()
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(auth, ServerConfig{Listen: addr, TLS: ServerTLS(cert), Logger: quiet, Timeline: timeline, MaxDatagram: maxDatagram})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	return srv, cancel, done
}
