package transport

import (
	"context"
	"testing"
	"time"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// TestTickQueueDepths: a watcher whose loop is held up (here, by its own
// tick callback, until the server has sent thirty more broadcasts' datagrams)
// shows the datagrams that waited meanwhile in its next tick's
// DatagramQueue. (The loop then picks at random among what is ready: with
// thirty datagrams waiting, the chance that it drains them all before the
// render tick is 2⁻³⁰.)
func TestTickQueueDepths(t *testing.T) {
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	srv, ct := testServer(t, auth, ServerConfig{})
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type seen struct{ idle, after int }
	out := make(chan seen, 1)
	done := make(chan error, 1)
	stalled, idle := false, -1
	go func() {
		done <- w.Run(ctx, func(tk *Tick) {
			switch {
			case tk.Receiver.Stats().FramesCommitted < 20:
			case idle < 0:
				idle = tk.DatagramQueue
			case !stalled:
				stalled = true
				// Held until thirty more broadcasts went out (not t.Fatal
				// here: this is the watcher's goroutine; the test's
				// guard ends a run that never gets there).
				sent := srv.Stats().Datagrams
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for srv.Stats().Datagrams < sent+30 && ctx.Err() == nil {
					<-tick.C
				}
			default:
				out <- seen{idle, tk.DatagramQueue}
				cancel()
			}
		})
	}()
	select {
	case s := <-out:
		if s.after == 0 {
			t.Fatalf("after its loop was held up the watcher's datagram queue showed %d waiting", s.after)
		}
		t.Logf("datagrams waiting: %d idle, %d after the hold-up", s.idle, s.after)
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	case <-timeGuard(t):
		t.Fatal("no tick after the hold-up")
	}
}
