package cluster

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/transport"
)

var (
	scaleRun      = flag.Bool("scale", false, "run TestFrontScale: fronts as processes of their own, QUIC watchers on each")
	scaleWatchers = flag.Int("scale-watchers", 64, "TestFrontScale: watchers per front")
	scaleFull     = flag.Bool("scale-full", false, "TestFrontScale: real watchers (the whole receive path) instead of stand-ins that only confirm datagrams")
)

// frontProc is a front running as an islandserver process.
type frontProc struct {
	name, addr, pin string
	cmd             *exec.Cmd
}

// cpu returns the CPU time the process has used (user and system), read
// from /proc.
func (f *frontProc) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", f.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(rest[11], 10, 64)
	stime, _ := strconv.ParseInt(rest[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// TestFrontScale measures what a front spends on each observer: fronts run
// as islandserver processes of their own (so their CPU time can be read
// apart from the watchers'), two authorities and the QUIC watchers run in
// the test. One front with 64 watchers (-scale-watchers), then two fronts
// with 64 each. It reports, per front, the CPU time per observer per
// broadcast beyond the front's idle cost, and how many datagrams per second
// each watcher confirmed. The watchers are stand-ins
// (transport.WatchConfig.ConfirmOnly): to a front, observers that receive
// everything, at a fraction of a real one's CPU, so that 128 fit beside
// the fronts and authorities on a small machine; -scale-full runs the
// whole receive path in each instead (on 2 cores, 64 such watchers commit
// about 30 of the 540 frames/s each, and a second front's 64 may never all
// start). A measurement: run it with -scale -v.
func TestFrontScale(t *testing.T) {
	if !*scaleRun {
		t.Skip("a measurement: go test ./cluster -run TestFrontScale -scale -v")
	}
	const names = "bridge,ragdolls,handoff,chain"
	scs, err := scenario.Pick(names)
	if err != nil {
		t.Fatal(err)
	}
	p, cli := world(t)
	tb := watchTable(t, cli, p)
	startNode(t, p, "a", Authority, scs)
	startNode(t, p, "b", Authority, scs)
	await(t, "a and b share the shards", heldBy(tb, span(len(scs)), "a", "b"))

	bin := filepath.Join(t.TempDir(), "islandserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/islandsync/islandsync/cmd/islandserver").CombinedOutput(); err != nil {
		t.Fatalf("building islandserver: %v\n%s", err, out)
	}
	startFront := func(name string) *frontProc {
		f := &frontProc{name: name}
		f.cmd = exec.Command(bin, "-etcd", strings.Join(etcd.Endpoints(), ","), "-role", "front", "-name", name,
			"-world", p, "-scenario", names, "-listen", "127.0.0.1:0", "-state", "", "-lease-ttl", "2s",
			"-max-observers", "256", "-log-level", "warn")
		out, err := f.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.cmd.Process.Signal(os.Interrupt); _ = f.cmd.Wait() })
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) > 4 && fields[0] == "front" && fields[2] == "serving":
				f.addr = fields[4]
			case len(fields) > 0 && fields[0] == "watch":
				f.pin = fields[len(fields)-1]
			}
			if f.addr != "" && f.pin != "" {
				go func() {
					for sc.Scan() {
					}
				}()
				return f
			}
		}
		t.Fatalf("front %s printed no address", name)
		return nil
	}
	// watchers starts n watchers of f; each counts the frames it commits
	// (with -scale-full) or the datagrams it confirms.
	watchers := func(f *frontProc, n int) (*atomic.Int64, func()) {
		var commits atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, n)
		tlsc, err := transport.ClientTLS(f.pin, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var joined atomic.Int64
		for range n {
			w, err := transport.NewWatcher(transport.WatchConfig{Addr: f.addr, TLS: tlsc, Subscribe: codec.Subscribe{All: true},
				RenderRate: 4, Logger: slog.New(slog.DiscardHandler), ConfirmOnly: !*scaleFull})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				var last int64
				_ = w.Run(ctx, func(tk *transport.Tick) {
					st := tk.Receiver.Stats()
					c := int64(st.FramesCommitted)
					if !*scaleFull {
						c = int64(st.Datagrams)
					}
					if c > 0 && last == 0 {
						joined.Add(1)
					}
					commits.Add(c - last)
					last = c
				})
				done <- struct{}{}
			}()
		}
		await(t, fmt.Sprintf("%d watchers of %s receive", n, f.name), func() bool { return joined.Load() == int64(n) })
		return &commits, func() {
			cancel()
			for range n {
				<-done
			}
		}
	}
	const window = 5 * time.Second
	broadcasts := window.Seconds() * 20 // -hz 20
	// cost returns each front's CPU per broadcast over the window, and
	// how many frames (or datagrams) per second each watcher of counted
	// committed (or confirmed).
	cost := func(counted []*atomic.Int64, watching int, fs ...*frontProc) ([]time.Duration, float64) {
		before := make([]time.Duration, len(fs))
		for i, f := range fs {
			before[i] = f.cpu(t)
		}
		var c0 int64
		for _, c := range counted {
			c0 += c.Load()
		}
		<-time.After(window) // a measurement window, not a bound
		out := make([]time.Duration, len(fs))
		for i, f := range fs {
			out[i] = (f.cpu(t) - before[i]) / time.Duration(broadcasts)
		}
		var c1 int64
		for _, c := range counted {
			c1 += c.Load()
		}
		return out, float64(c1-c0) / window.Seconds() / float64(max(watching, 1))
	}
	f1 := startFront("f1")
	idle1, _ := cost(nil, 0, f1)
	n := *scaleWatchers
	c1, stop1 := watchers(f1, n)
	busy1, rate1 := cost([]*atomic.Int64{c1}, n, f1)
	unit := "datagrams/s confirmed"
	if *scaleFull {
		unit = "frames/s committed"
	}
	t.Logf("one front, %d watchers: %v per broadcast idle, %v with them: %v per observer per broadcast; each watcher %.0f %s",
		n, idle1[0], busy1[0], (busy1[0]-idle1[0])/time.Duration(n), rate1, unit)
	f2 := startFront("f2")
	idle2, _ := cost(nil, 0, f2)
	c2, stop2 := watchers(f2, n)
	both, rate2 := cost([]*atomic.Int64{c1, c2}, 2*n, f1, f2)
	t.Logf("two fronts, %d watchers each: f1 %v per broadcast (%v per observer), f2 %v (%v per observer; idle %v); each watcher %.0f %s",
		n, both[0], (both[0]-idle1[0])/time.Duration(n), both[1], (both[1]-idle2[0])/time.Duration(n), idle2[0], rate2, unit)
	stop1()
	stop2()
}
