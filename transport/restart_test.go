package transport

import (
	"context"
	"flag"
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
// again within 1 s of authority time of the first frame the watcher saw
// from the new server; no watcher shows a half-frame. It failed before a
// Welcome reset the assembler: the chain committed nothing for as long as
// the old server had been up.
func TestRestartAfterUptime(t *testing.T) {
	if testing.Short() {
		t.Skip("real network test")
	}
	cert, pin, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	start := func(addr string, timeline uint64) (*Server, context.CancelFunc, chan error) {
		auth, err := scenario.NewAuthority(scenario.All, 20)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := Listen(auth, ServerConfig{Listen: addr, TLS: ServerTLS(cert), Logger: quiet, Timeline: timeline})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		return srv, cancel, done
	}
	srv, stop, done := start("127.0.0.1:0", 1)
	addr := srv.Addr().String()
	ct, _ := ClientTLS(pin, "", nil)

	type result struct {
		gap        int64 // the new server's authority time, µs, when every island had committed
		islands    int
		halfFrames int
	}
	n := *restartWatchers
	results := make([]result, n)
	onOld := make(chan int, n) // watcher i commits on the first server
	onNew := make(chan int, n) // watcher i has every island of the new server committed
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
				if fresh || st.Timelines < 2 || tk.Views == nil {
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
				onNew <- i
			})
			if err != nil {
				t.Errorf("watcher %d: %v", i, err)
			}
		}()
	}
	guard := timeGuard(t)
	awaitAll(t, onOld, n, guard, "committed on the first server")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, stop, done = start(addr, 2)
	awaitAll(t, onNew, n, guard, "committed every island of the restarted server")
	wcancel()
	wg.Wait()
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
		if r.gap > 1_000_000 {
			t.Errorf("watcher %d: every island committed %d ms of authority time after the new server's first frame, want ≤ 1000", i, r.gap/1000)
		}
	}
	t.Logf("%d watchers, restart after %d broadcasts: every island (%d) committed within %d ms of the new server's first frame (authority time)",
		n, *restartUptime, results[0].islands, worst/1000)
}
