package transport

import (
	"sync"
	"testing"
	"time"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// TestAreaOfInterestOverQUIC: a watcher of the Fiedler scene (901 islands
// along 300 m) that subscribes to the area x 0 … 20 m is shown only islands
// around it; once it moves its area to x 100 … 120 m (SetSubscribe, as a
// camera does), it is shown the islands there and, after the server's
// grace, none of the old ones. Never a half-frame.
func TestAreaOfInterestOverQUIC(t *testing.T) {
	auth := pickAuthority(t, "fiedler")
	srv, ct := testServer(t, auth, ServerConfig{})
	first := codec.Region{X0: 0, Y0: -5, X1: 20, Y1: 10}
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{Regions: []codec.Region{first}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lo, hi float64 // the x range of the islands the last render showed
	var shown, half int
	runUntilEnd(t, w, func(tk *Tick) {
		mu.Lock()
		defer mu.Unlock()
		shown, half = 0, tk.HalfFrames
		lo, hi = 1e9, -1e9
		for _, v := range tk.Views {
			for _, p := range v.Poses {
				lo, hi = min(lo, p.State.X), max(hi, p.State.X)
			}
			if len(v.Poses) > 0 {
				shown++
			}
		}
	})
	within := func(x0, x1 float64, atLeast int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return shown >= atLeast && lo >= x0 && hi <= x1
		}
	}
	// Boxes sit 1 m apart in stacks of three: about 60 islands meet 20 m,
	// and a tumbling box may drift a few metres past the margin's 5.
	waitFor(t, "the islands of the first area", within(-10, 30, 40))
	w.SetSubscribe(codec.Subscribe{Regions: []codec.Region{{X0: 100, Y0: -5, X1: 120, Y1: 10}}})
	mu.Lock()
	t.Logf("first area: %d islands, x %.1f … %.1f", shown, lo, hi)
	mu.Unlock()
	start := time.Now()
	waitFor(t, "the islands of the second area alone", within(90, 130, 40))
	mu.Lock()
	t.Logf("second area after %v: %d islands, x %.1f … %.1f", time.Since(start), shown, lo, hi)
	mu.Unlock()
	if d := time.Since(start); d < time.Second {
		// The grace is 20 broadcasts of 50 ms: the old islands cannot have
		// been forgotten sooner, however fast or slow the machine.
		t.Fatalf("the first area's islands were gone after %v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if half != 0 {
		t.Fatalf("%d half-frames", half)
	}
}

// pickAuthority is the named scenarios' authority at 20 Hz.
func pickAuthority(t testing.TB, names string) *scenario.Authority {
	t.Helper()
	scs, err := scenario.Pick(names)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		t.Fatal(err)
	}
	return auth
}
