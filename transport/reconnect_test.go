package transport

import (
	"errors"
	"testing"
	"time"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// TestBackoff: each wait lies between half and all of a bound that doubles
// from the minimum to the cap, and starts over after a served session.
func TestBackoff(t *testing.T) {
	b := backoff{min: 200 * time.Millisecond, max: time.Second}
	low := func(n time.Duration) time.Duration { return 0 }
	high := func(n time.Duration) time.Duration { return n - 1 }
	for i, want := range []time.Duration{100, 200, 400, 500, 500} {
		if got := b.next(low); got != want*time.Millisecond {
			t.Fatalf("wait %d, lowest draw: %v, want %v ms", i, got, want)
		}
	}
	b.reset()
	for i, want := range []time.Duration{200, 400, 800, 1000} {
		if got := b.next(high); got != want*time.Millisecond {
			t.Fatalf("after reset, wait %d, highest draw: %v, want %v ms", i, got, want)
		}
	}
}

// TestPinMismatchEndsRun: a watcher whose pin does not match the server's
// certificate — a restarted server with a new identity — stops at once
// with ErrPinMismatch, though it reconnects on other losses.
func TestPinMismatchEndsRun(t *testing.T) {
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	m := NewMetrics(prometheusRegistry())
	srv, _ := testServer(t, auth, ServerConfig{Metrics: m})
	wrong, err := ClientTLS("ff00000000000000000000000000000000000000000000000000000000000000", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, done := runWatcher(t, WatchConfig{Addr: srv.Addr().String(), TLS: wrong, Subscribe: codec.Subscribe{All: true}, Reconnect: true})
	select {
	case err := <-done:
		if !errors.Is(err, ErrPinMismatch) {
			t.Fatalf("Run returned %v, want ErrPinMismatch", err)
		}
		waitFor(t, "the failed handshake to be counted", func() bool {
			return counterValue(t, m.HandshakesFailed.WithLabelValues("failed")) == 1
		})
	case <-time.After(guardTime(t)):
		t.Fatal("the watcher kept dialling a server whose certificate does not match its pin")
	}
}
