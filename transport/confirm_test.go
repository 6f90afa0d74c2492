package transport

import (
	"context"
	"sync"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// TestConfirmOnlyWatcher: a watcher with ConfirmOnly confirms the
// datagrams the server sends it without restoring any — every tick shows
// no views and nothing commits — and, confirming everything, keeps being
// sent datagrams: 40 confirmed, counted, not timed.
func TestConfirmOnlyWatcher(t *testing.T) {
	auth, err := scenario.NewAuthority([]scenario.Scenario{scenario.All[0]}, 20)
	if err != nil {
		t.Fatal(err)
	}
	srv, ct := testServer(t, auth, ServerConfig{})
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet, ConfirmOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var confirmed, committed uint64
	views := 0
	runUntilEnd(t, w, func(tk *Tick) {
		mu.Lock()
		defer mu.Unlock()
		st := tk.Receiver.Stats()
		confirmed, committed = st.Datagrams, st.FramesCommitted
		views += len(tk.Views)
	})
	waitFor(t, "40 datagrams confirmed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return confirmed >= 40
	})
	mu.Lock()
	defer mu.Unlock()
	if committed != 0 || views != 0 {
		t.Fatalf("a confirming watcher committed %d frames and showed %d views", committed, views)
	}
}

// runUntilEnd runs w until the test ends, calling onTick on every tick; a
// Run that ends with an error fails the test.
func runUntilEnd(t *testing.T, w *Watcher, onTick func(*Tick)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, onTick) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}
