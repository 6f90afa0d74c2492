package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/islandsync/islandsync/island"
)

// The playout clock and island evaluation as data-driven traces: each file
// under testdata/clock and testdata/evaluate is a sequence of input events
// and the states they must lead to. Rewrite the expected states with
//
//	go test ./store -run Trace -rewrite
//
// and review the diff. Times in the files are milliseconds (fractions
// allowed for authority times); printed times are milliseconds with three
// decimals (µs exact).

// msArg reads a time argument in milliseconds (fractions allowed) as µs.
func msArg(t testing.TB, td *datadriven.TestData, key string) (int64, bool) {
	if !td.HasArg(key) {
		return 0, false
	}
	var s string
	td.ScanArgs(t, key, &s)
	var v float64
	if _, err := fmt.Sscanf(s, "%g", &v); err != nil {
		t.Fatalf("%s: %s=%q is not a number of milliseconds", td.Pos, key, s)
	}
	return int64(v*1000 + 0.5*sign(v)), true
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

func mustMS(t testing.TB, td *datadriven.TestData, key string) int64 {
	v, ok := msArg(t, td, key)
	if !ok {
		t.Fatalf("%s: %s needs %s=", td.Pos, td.Cmd, key)
	}
	return v
}

// fmtMS prints µs as milliseconds with three decimals.
func fmtMS(us int64) string {
	s := "-"
	if us < 0 {
		s, us = "-", -us
	} else {
		s = ""
	}
	return fmt.Sprintf("%s%d.%03d", s, us/1000, us%1000)
}

// clockLine is the clock's state as a trace prints it.
func clockLine(c *Clock) string {
	r, ok := c.R()
	rs := "unanchored"
	if ok {
		rs = fmtMS(int64(r))
	}
	return fmt.Sprintf("%v r=%s D=%s latest=%s gen=%d", c.State(), rs, fmtMS(c.Delay()), fmtMS(int64(c.Latest())), c.Generation())
}

// TestClockTrace runs testdata/clock. Commands:
//
//	clock period=50 [extrapolation=100]   a new clock (ms)
//	observe at=650 t=600 [epoch=1]        a valid frame of authority time t arrives at local time at
//	feed from=600 to=900 every=50 late=50 observe t = from, from+every, … ≤ to, each arriving
//	                                      late ms after t, advancing the clock at each arrival
//	advance at=700                        one render tick: prints the state
//	run from=660 to=1000 [step=10]        render ticks: prints each change of state, then the state
//	stats                                 the clock's counters
//	reanchor target= earliest= rold= second=   the re-anchor rule alone
func TestClockTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/clock", func(t *testing.T, path string) {
		var c *Clock
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd != "clock" && td.Cmd != "reanchor" && c == nil {
				t.Fatalf("%s: no clock yet", td.Pos)
			}
			switch td.Cmd {
			case "clock":
				cfg := ClockConfig{SendPeriod: mustMS(t, td, "period")}
				if e, ok := msArg(t, td, "extrapolation"); ok {
					cfg.ExtrapolationCap = e
				}
				c = NewClock(cfg)
				return clockLine(c)
			case "observe":
				epoch := uint32(1)
				if td.HasArg("epoch") {
					td.ScanArgs(t, "epoch", &epoch)
				}
				c.Observe(mustMS(t, td, "at"), epoch, island.Time(mustMS(t, td, "t")))
				return ""
			case "feed":
				from, to, every, late := mustMS(t, td, "from"), mustMS(t, td, "to"), mustMS(t, td, "every"), mustMS(t, td, "late")
				for ts := from; ts <= to; ts += every {
					c.Observe(ts+late, 1, island.Time(ts))
					c.Advance(ts + late)
				}
				return clockLine(c)
			case "advance":
				c.Advance(mustMS(t, td, "at"))
				return clockLine(c)
			case "run":
				from, to := mustMS(t, td, "from"), mustMS(t, td, "to")
				step := int64(10_000)
				if s, ok := msArg(t, td, "step"); ok {
					step = s
				}
				var b strings.Builder
				prev := c.State()
				for now := from; now <= to; now += step {
					if st := c.Advance(now); st != prev {
						fmt.Fprintf(&b, "at %s: %s\n", fmtMS(now), clockLine(c))
						prev = st
					}
				}
				b.WriteString(clockLine(c))
				return b.String()
			case "stats":
				s := c.Stats()
				return fmt.Sprintf("frozen=%s waiting=%s reanchors=%d buffer=%s age=%s", fmtMS(s.FrozenTime), fmtMS(s.WaitingTime),
					s.Reanchors, fmtMS(s.BufferFill), fmtMS(s.SnapshotAge))
			case "reanchor":
				r, ok := Reanchor(mustMS(t, td, "target"), mustMS(t, td, "earliest"), mustMS(t, td, "rold"), mustMS(t, td, "second"))
				if !ok {
					return "no anchor: keep waiting"
				}
				return "anchor at " + fmtMS(r)
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

// TestEvaluateTrace runs testdata/evaluate: one island of n members (island
// 7) in a store, frames committed and the island evaluated. Commands:
//
//	island members=3 [extrapolation=100] [stale-cleanup=…]   a new store and island (ms)
//	commit t=100 [seg=0] [x=0] [vx=0] [flags=initial|releasing] [now=0]
//	                              a frame: member i at (x, i) moving at vx m/s; prints the result
//	cut seg=1 t=104               a Cut control message
//	topology                      a new topology of the island (the manifest's generation bumps)
//	evaluate r=101.5 [now=0] [gen=1]   prints mode, validity, sample time, segment and poses
//	hold r=101.5 [now=0] [gen=1]       the same for Hold (the clock Frozen)
//	stats                         the store's diagnostics: local time spent extrapolating and
//	                              held stale, frames held, recoveries smoothed and snapped
func TestEvaluateTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/evaluate", func(t *testing.T, path string) {
		var w *world
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd != "island" && w == nil {
				t.Fatalf("%s: no island yet", td.Pos)
			}
			now, _ := msArg(t, td, "now")
			gen := uint32(1)
			if td.HasArg("gen") {
				td.ScanArgs(t, "gen", &gen)
			}
			num := func(key string) float64 {
				var v float64
				if td.HasArg(key) {
					td.ScanArgs(t, key, &v)
				}
				return v
			}
			switch td.Cmd {
			case "island":
				n := 1
				td.ScanArgs(t, "members", &n)
				var cfg Config
				if e, ok := msArg(t, td, "extrapolation"); ok {
					cfg.ExtrapolationCap = e
				}
				w = newWorld(t, n, cfg)
				return ""
			case "commit":
				var seg uint32
				if td.HasArg("seg") {
					td.ScanArgs(t, "seg", &seg)
				}
				x, vx := num("x"), num("vx")
				f := w.frame(island.Time(mustMS(t, td, "t")), seg, func(i int) island.State {
					return island.State{X: x, Y: float64(i), VX: vx}
				})
				if td.HasArg("flags") {
					var fl string
					td.ScanArgs(t, "flags", &fl)
					switch fl {
					case "initial":
						f.Flags = island.FlagInitial
					case "releasing":
						f.Flags = island.FlagReleasing
					}
				}
				r, vf := w.v.Validate(wire(f))
				if r != 0 {
					return "refused by validation: " + r.String()
				}
				return w.s.Commit(now, vf).String()
			case "stats":
				st := w.s.Stats()
				return fmt.Sprintf("extrapolating=%s stale=%s frames=%d recoveries=%d snaps=%d", fmtMS(st.ExtrapolationTime),
					fmtMS(st.FreezeTime), st.BufferedFrames, st.Recoveries, st.Snaps)
			case "topology":
				w.man.Topology++
				if err := w.v.SetManifest(w.man); err != nil {
					t.Fatal(err)
				}
				return ""
			case "cut":
				var seg uint32
				td.ScanArgs(t, "seg", &seg)
				w.s.Cut(7, seg, island.Time(mustMS(t, td, "t")))
				return ""
			case "evaluate", "hold":
				r := island.Time(mustMS(t, td, "r"))
				var v *View
				if td.Cmd == "hold" {
					v = w.s.Hold(7, r, now, gen)
				} else {
					v = w.s.Evaluate(7, r, now, gen)
				}
				if v == nil {
					return "unknown island"
				}
				var b strings.Builder
				fmt.Fprintf(&b, "%v valid=%v sample=%s seg=%d", v.Mode, v.ValidAtR, fmtMS(int64(v.SampleTime)), v.Segment)
				if v.Extrapolated != 0 {
					fmt.Fprintf(&b, " extrapolated=%s", fmtMS(v.Extrapolated))
				}
				if v.Smoothing {
					b.WriteString(" smoothing")
				}
				for i, p := range v.Poses {
					fmt.Fprintf(&b, "\n  member %d: x=%.4f y=%.4f", i, p.X, p.Y)
				}
				return b.String()
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}
