package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/token"
)

// tight are admission bounds short enough for a test to meet them all.
func tight(cfg ServerConfig) ServerConfig {
	// The stall bound stays the default: a real watcher runs beside the
	// squatters, and on a loaded machine a shorter one closes it too.
	cfg.SubscribeTimeout, cfg.MessageTimeout = 300*time.Millisecond, 300*time.Millisecond
	return cfg
}

// TestSquattersAreClosed: every kind of squatter is closed with its code —
// one that never opens its control stream, one that never subscribes, one
// that starts a message and never finishes it (before and after
// subscribing), one that reads nothing — while a real watcher beside them
// keeps committing. Each holds an observer slot at most until its bound.
func TestSquattersAreClosed(t *testing.T) {
	auth, _ := scenario.NewAuthority(scenario.All[:2], 20)
	srv, ct := testServer(t, auth, tight(ServerConfig{}))
	good := committing(t, srv, ct)
	waitFor(t, "the good watcher to commit", func() bool { return good.Load() > 0 })

	half := []byte{0x00, 0x30, 0x00, 0x00, byte(codec.TypeKeyframes), 0, 0, 0} // announces 12 KiB, sends 4 of it
	subscribe := codec.Subscribe{All: true}.Append(nil)
	cases := []struct {
		name string
		act  func(t *testing.T, conn *quic.Conn)
		want quic.ApplicationErrorCode
	}{
		{"no stream", func(*testing.T, *quic.Conn) {}, CodeNoStream},
		{"no subscribe", func(t *testing.T, conn *quic.Conn) { openStream(t, conn) }, CodeNoStream},
		{"half a first message", func(t *testing.T, conn *quic.Conn) { _, _ = openStream(t, conn).Write(half) }, CodeNoStream},
		{"half a message", func(t *testing.T, conn *quic.Conn) {
			_, _ = openStream(t, conn).Write(append(append([]byte(nil), subscribe...), half...))
		}, CodeSlowRead},
		{"reads nothing", func(t *testing.T, conn *quic.Conn) { _, _ = openStream(t, conn).Write(subscribe) }, CodeBacklog},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := dialRaw(t, srv, ct)
			start := time.Now()
			c.act(t, conn)
			if code := appCode(t, conn); code != c.want {
				t.Fatalf("closed with %s (%d), want %s", CodeName(code), code, CodeName(c.want))
			}
			t.Logf("closed with %s after %v", CodeName(c.want), time.Since(start).Round(time.Millisecond))
		})
	}
	before := good.Load()
	waitFor(t, "the good watcher to keep committing", func() bool { return good.Load() > before+20 })
}

// dialRaw dials the server as a bare QUIC client.
func dialRaw(t *testing.T, srv *Server, ct *tls.Config) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guardTime(t))
	defer cancel()
	conn, err := quic.DialAddr(ctx, srv.Addr().String(), ct, quicConfig(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseWithError(0, "") })
	return conn
}

func openStream(t *testing.T, conn *quic.Conn) *quic.Stream {
	t.Helper()
	st, err := conn.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runWatcher runs a watcher until the test ends or it returns; it reports
// frames committed and, once it returns, its error.
func runWatcher(t *testing.T, cfg WatchConfig) (*atomic.Uint64, <-chan error) {
	t.Helper()
	cfg.Logger = quiet
	w, err := NewWatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func(tk *Tick) { n.Store(tk.Receiver.Stats().FramesCommitted) }) }()
	t.Cleanup(cancel)
	return &n, done
}

// refusedWith waits for a watcher's Run to end with a refusal of code.
func refusedWith(t *testing.T, done <-chan error, code quic.ApplicationErrorCode) {
	t.Helper()
	select {
	case err := <-done:
		var ce *CloseError
		if !errors.As(err, &ce) || !ce.Refused() || ce.Code != code {
			t.Fatalf("Run returned %v, want a refusal with %s", err, CodeName(code))
		}
	case <-time.After(guardTime(t)):
		t.Fatal("the watcher was not refused")
	}
}

// TestFullIsRefused: past MaxObservers a watcher is closed with CodeFull,
// and its Run ends with that refusal even with Reconnect on.
func TestFullIsRefused(t *testing.T) {
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	m := NewMetrics(prometheusRegistry())
	srv, ct := testServer(t, auth, ServerConfig{MaxObservers: 1, Metrics: m})
	first, _ := runWatcher(t, WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}})
	waitFor(t, "the first watcher to commit", func() bool { return first.Load() > 0 })
	_, done := runWatcher(t, WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Reconnect: true})
	refusedWith(t, done, CodeFull)
	if j, c := counterValue(t, m.JoinsRefused.WithLabelValues("full")), counterValue(t, m.Closes.WithLabelValues("full")); j != 1 || c != 1 {
		t.Fatalf("joins refused %v, closes with full %v; want 1 and 1", j, c)
	}
}

// TestTokens: with TokenKeys a watcher without a token, with an expired
// one or with one signed by another key is refused with CodeToken before
// it is sent anything; a valid one commits; one that lists islands sees
// only those; a second connection with the same observer's token replaces
// the first.
func TestTokens(t *testing.T) {
	pub, priv, _ := token.GenerateKey(nil)
	_, other, _ := token.GenerateKey(nil)
	auth, _ := scenario.NewAuthority(scenario.All[:3], 20)
	m := NewMetrics(prometheusRegistry())
	srv, ct := testServer(t, auth, tight(ServerConfig{TokenKeys: []ed25519.PublicKey{pub}, Metrics: m}))
	sign := func(key ed25519.PrivateKey, tok token.Token) []byte {
		b, err := tok.Sign(key)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	later := time.Now().Add(time.Hour).Unix()
	cfg := func(tok []byte) WatchConfig {
		return WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Token: tok, Reconnect: true}
	}
	for name, tok := range map[string][]byte{
		"none":        nil,
		"expired":     sign(priv, token.Token{Observer: 1, Expires: time.Now().Add(-time.Minute).Unix()}),
		"another key": sign(other, token.Token{Observer: 1, Expires: later}),
		"not a token": []byte("let me in"),
	} {
		t.Run(name, func(t *testing.T) {
			_, done := runWatcher(t, cfg(tok))
			refusedWith(t, done, CodeToken)
		})
	}
	if n := srv.Observers(); n != 0 {
		t.Fatalf("a refused watcher joined: %d observers", n)
	}

	// A token that lists one island: the watcher sees that one alone.
	islands := auth.Worlds()[0].Islands()
	only := islands[0].ID
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet,
		Token: sign(priv, token.Token{Observer: 2, Expires: later, Islands: []uint32{only}})})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan []uint32, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = w.Run(ctx, func(tk *Tick) {
			if tk.Receiver.Stats().FramesCommitted > 10 {
				select {
				case seen <- append([]uint32(nil), tk.Receiver.Islands()...):
				default:
				}
			}
		})
	}()
	select {
	case got := <-seen:
		if len(got) != 1 || got[0] != only {
			t.Fatalf("a watcher whose token lists island %d knows islands %v", only, got)
		}
	case <-time.After(guardTime(t)):
		t.Fatal("the restricted watcher committed nothing")
	}
	cancel()

	// The same observer twice: the older connection is closed.
	tok := sign(priv, token.Token{Observer: 3, Expires: later})
	first, firstDone := runWatcher(t, cfg(tok))
	waitFor(t, "the first holder of the token to commit", func() bool { return first.Load() > 0 })
	second, _ := runWatcher(t, cfg(tok))
	refusedWith(t, firstDone, CodeReplaced)
	waitFor(t, "the second holder to commit", func() bool { return second.Load() > 0 })
	for _, reason := range []string{"missing", "expired", "signature", "malformed"} {
		if counterValue(t, m.TokensRefused.WithLabelValues(reason)) == 0 {
			t.Errorf("tokens refused as %s were not counted", reason)
		}
	}
}

func prometheusRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
