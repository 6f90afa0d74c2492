package transport

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
)

var (
	restartUptime   = flag.Int("restart-uptime", 100, "TestRestartAfterUptime: broadcasts the first server makes before it stops (20 a second)")
	restartWatchers = flag.Int("restart-watchers", 4, "TestRestartAfterUptime: watchers")
)

// TestRestartAfterUptime: a server whose frames are numbered far past the
// assembler's 64-frame stale window (100 broadcasts, 5 s, by default)
// stops; a new one — a new timeline, numbering from
// zero, every scenario — starts on the same address. Every watcher
// reconnects, and every island, the multi-datagram chain included, commits
// again, and no frame of the new server is refused as stale; no watcher
// shows a half-frame. It failed before a Welcome reset the assembler: the
// chain committed nothing for as long as the old server had been up. The
// test reports how much of the new server's authority time had passed when
// every island had committed — a figure, not a bound: how soon a watcher
// looks depends on the machine's load. (TestRestartAfterLongUptime in
// package receiver bounds it by counts: every island within 20 broadcasts.)
func TestRestartAfterUptime(t *testing.T) {
	if testing.Short() {
		t.Skip("real network test")
	}
	skipRace(t)
	cert, pin, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	start := func(addr string, timeline uint64) (*Server, context.CancelFunc, chan error) {
		// 576-byte datagrams: the chain's frames, joint-predicted, fit one
		// of the default size; cut, they take reassembly.
		return startAt(t, scenario.All, cert, addr, timeline, codec.MinMaxDatagram)
	}
	srv, stop, done := start("127.0.0.1:0", 1)
	addr := srv.Addr().String()
	ct, _ := ClientTLS(pin, "", nil)

	type result struct {
		gap        int64 // the new server's authority time, µs, when every island had committed
		islands    int
		halfFrames int
		stale      uint64 // frames refused as stale on the new timeline
	}
	// Every island the new server starts with must have its catch-up and
	// commit: count them on an authority of the same scenarios.
	fresh, _ := scenario.NewAuthority(scenario.All, 20)
	startIslands := 0
	for _, w := range fresh.Worlds() {
		startIslands += len(w.Islands())
	}
	n := *restartWatchers
	results := make([]result, n)
	onOld := make(chan int, n)  // watcher i commits on the first server
	onNew := make(chan int, n)  // watcher i has every island of the new server committed
	lost := make(chan error, n) // a watcher's session ended
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	var wg sync.WaitGroup
	for i := range n {
		w, err := NewWatcher(WatchConfig{Addr: addr, TLS: ct, Subscribe: codec.Subscribe{All: true}, Reconnect: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &results[i]
			old, fresh := false, false
			var staleAtRestart uint64
			restarted := false
			err := w.Run(wctx, func(tk *Tick) {
				res.halfFrames += tk.HalfFrames
				st := tk.Receiver.Stats()
				if !old && st.Timelines == 1 && st.Assembler.Count(assembler.Completed) > 0 {
					// Wire 2 numbers frames by broadcast: the uptime is the
					// sequence the watcher has seen.
					for _, v := range tk.Views {
						if v.Right.Seq >= uint32(*restartUptime) {
							old = true
							onOld <- i
							break
						}
					}
				}
				// Between the new Welcome and its catch-up the old timeline's
				// clock still plays, over no island at all: that is no
				// island committed. Views with frames are the new
				// timeline's (its first frame restarts the clock).
				if st.Timelines >= 2 && !restarted {
					restarted, staleAtRestart = true, st.Assembler.Count(assembler.RejectStale)
				}
				if fresh || st.Timelines < 2 || len(tk.Views) < startIslands {
					return
				}
				// The new server's time starts at zero: the newest authority
				// time received bounds the time since its first frame.
				latest := st.Clock.R + st.Clock.BufferFill
				for _, v := range tk.Views {
					if v.Mode == store.Empty {
						return
					}
				}
				fresh = true
				res.gap, res.islands = latest, len(tk.Views)
				res.stale = st.Assembler.Count(assembler.RejectStale) - staleAtRestart
				onNew <- i
			})
			if err != nil {
				lost <- fmt.Errorf("watcher %d: %w", i, err)
			}
		}()
	}
	guard := timeGuard(t)
	awaitAll(t, onOld, n, lost, guard, "committed on the first server")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, stop, done = start(addr, 2)
	awaitAll(t, onNew, n, lost, guard, "committed every island of the restarted server")
	wcancel()
	wg.Wait()
	for len(lost) > 0 {
		t.Error(<-lost)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	worst := int64(0)
	for i, r := range results {
		worst = max(worst, r.gap)
		if r.halfFrames != 0 {
			t.Errorf("watcher %d showed %d half-frames", i, r.halfFrames)
		}
		if r.stale != 0 {
			t.Errorf("watcher %d: %d frames of the new server refused as stale", i, r.stale)
		}
	}
	t.Logf("%d watchers, restart after %d broadcasts: every island (%d) committed within %d ms of the new server's first frame (authority time)",
		n, *restartUptime, results[0].islands, worst/1000)
}
