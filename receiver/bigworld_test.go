package receiver

import (
	"fmt"
	"math"
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/scenario"
)

// bigWorldRun is one observer of the big world (10,100 bodies, 3,560
// islands on a 2 km floor) held to a budget, its area of interest — 80 m
// by 30 m — moving along the floor at 4 m/s, acknowledgements two
// snapshots late, no loss.
type bigWorldRun struct {
	Broadcasts    int     // measured
	BudgetBytes   int     // per second
	BusiestSecond int     // bytes, control and datagrams
	NearShare     float64 // of the broadcasts, the share in which an island within 20 m of the area's centre got a frame (mean over such island-broadcasts)
	NearWorst     float64 // the worst near island's share, among islands near for a whole second or more
	AreaMaxGap    int     // broadcasts: the longest an island in the area went without a frame
	Interest      int     // islands in interest at the end
	Committed     uint64  // frames committed
	Sent          uint64  // frames encoded for the observer
	Deferred      uint64  // frames its budget left out
	Rejected      uint64  // wire refusals, digest failures, missing baselines
}

func runBigWorld(tb testing.TB, kbps, warm, measure int) bigWorldRun {
	scs, err := scenario.Pick("bigworld")
	if err != nil {
		tb.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		tb.Fatal(err)
	}
	bc, err := broadcast.New(broadcast.Config{SendPeriod: auth.Period(), ObserverKbps: kbps})
	if err != nil {
		tb.Fatal(err)
	}
	rx, _ := New(Config{})
	_ = bc.Join(1, 0)
	const w, h, speed, near = 80.0, 30.0, 4.0, 20.0
	area := func(t float64) codec.Region {
		c := 100 + speed*t
		return codec.Region{X0: c - w/2, Y0: -5, X1: c + w/2, Y1: h - 5}
	}
	_ = bc.Subscribe(1, codec.Subscribe{Regions: []codec.Region{area(0)}})
	l := &loop{t: tb, auth: auth, bc: bc, rx: rx, lim: codec.ControlLimits{}.WithDefaults()}
	var pending [][]byte
	last := map[uint32]int{}    // island → broadcast of its last frame sent
	nearFor := map[uint32]int{} // island → broadcasts in a row it has been near
	nearGot := map[uint32]int{} // … and got a frame in them
	var out bigWorldRun
	var perBroadcast []int
	nearN, nearHit := 0, 0
	out.NearWorst = 1
	broadcasts := 0
	for broadcasts < warm+measure {
		l.now += 1_000_000 / scenario.StepHz
		msgs, frames := auth.Step()
		for _, m := range msgs {
			_ = bc.Apply(m)
		}
		if len(frames) == 0 {
			continue
		}
		broadcasts++
		t := float64(frames[0].Time) / 1e6
		r := area(t)
		_ = bc.Subscribe(1, codec.Subscribe{Regions: []codec.Region{r}}) // the camera moved
		if len(pending) >= 2 {
			l.deliver(pending[0], func(m codec.Message) { _ = bc.Feedback(1, m) })
			pending = pending[1:]
		}
		bc.Frames(frames)
		l.ctl, l.dgs = bc.Take(1, l.ctl[:0], l.dgs[:0])
		l.deliver(l.ctl, func(m codec.Message) { _ = rx.Control(l.now, m) })
		got := map[uint32]bool{}
		bytes := len(l.ctl) // control shares the budget
		for _, d := range l.dgs {
			bytes += len(d.Bytes)
			rx.Datagram(l.now, d.Bytes)
			for _, isl := range d.Islands {
				got[isl] = true
			}
		}
		rx.Render(l.now)
		pending = append(pending, rx.Feedback(nil))
		out.Sent += uint64(len(got))
		if broadcasts <= warm {
			for isl := range got {
				last[isl] = broadcasts
			}
			continue
		}
		perBroadcast = append(perBroadcast, bytes)
		cx, _ := r.Centre()
		for _, f := range frames {
			isl := f.Key.Island
			x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
			var sx, sy float64
			for _, m := range f.Members {
				x0, x1, y0, y1 = min(x0, m.State.X), max(x1, m.State.X), min(y0, m.State.Y), max(y1, m.State.Y)
				sx += m.State.X
				sy += m.State.Y
			}
			n := float64(len(f.Members))
			mx, my := sx/n, sy/n
			if got[isl] {
				last[isl] = broadcasts
			}
			if !r.Meets(x0, y0, x1, y1) {
				delete(last, isl)
				nearFor[isl], nearGot[isl] = 0, 0
				continue
			}
			if _, ok := last[isl]; !ok {
				last[isl] = broadcasts - 1 // just entered: its clock starts now
			}
			out.AreaMaxGap = max(out.AreaMaxGap, broadcasts-last[isl])
			if math.Hypot(mx-cx, my-(r.Y0+r.Y1)/2) <= near {
				nearN++
				nearFor[isl]++
				if got[isl] {
					nearHit++
					nearGot[isl]++
				}
				if nearFor[isl] == 20 {
					out.NearWorst = min(out.NearWorst, float64(nearGot[isl])/20)
					nearFor[isl], nearGot[isl] = 0, 0
				}
			} else {
				nearFor[isl], nearGot[isl] = 0, 0
			}
		}
	}
	sum := 0
	for i, n := range perBroadcast {
		sum += n
		if i >= 20 {
			sum -= perBroadcast[i-20]
		}
		out.BusiestSecond = max(out.BusiestSecond, sum)
	}
	st, bs := rx.Stats(), bc.Stats() // bs.Deferred: of the islands in interest only
	bud, _ := bc.Budget(1)
	out.Broadcasts, out.BudgetBytes = measure, kbps*1000/8
	out.NearShare = float64(nearHit) / float64(max(nearN, 1))
	out.Interest = bud.Interest
	out.Committed = st.FramesCommitted
	out.Deferred = bs.Deferred
	out.Rejected = st.Wire.Refused + st.Wire.Digest + st.Wire.NoBaseline
	return out
}

// TestBigWorldUnderBudget: the big world to one observer at 256 kbit/s
// whose area of interest moves along the floor. No second takes more than
// the budget (plus 5 %), control and datagrams together; islands within 20 m of the
// area's centre get a frame in at least 90 % of broadcasts; no island in
// the area goes a second without one; every frame sent commits whole.
func TestBigWorldUnderBudget(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("steps 10,100 bodies for 8 s: BenchmarkBigWorld measures it; skipped with -short and -race")
	}
	r := runBigWorld(t, 256, 60, 100)
	t.Logf("%+v", r)
	checkBigWorld(t, r)
}

func checkBigWorld(tb testing.TB, r bigWorldRun) {
	tb.Helper()
	switch {
	case r.Rejected != 0:
		tb.Fatalf("%d frames refused", r.Rejected)
	case r.BusiestSecond > r.BudgetBytes+r.BudgetBytes/20:
		tb.Fatalf("a second took %d bytes, budget %d", r.BusiestSecond, r.BudgetBytes)
	case r.NearShare < 0.9:
		tb.Fatalf("islands near the centre got a frame in %.1f %% of broadcasts", 100*r.NearShare)
	case r.AreaMaxGap > 20:
		tb.Fatalf("an island in the area went %d broadcasts without a frame", r.AreaMaxGap)
	case r.Committed+8 < r.Sent:
		tb.Fatalf("committed %d of %d frames sent", r.Committed, r.Sent)
	}
}

// BenchmarkBigWorld measures the big world under a budget with a moving
// area of interest (runBigWorld): 3 s of warm-up (the join's catch-up —
// the identities, leases, manifests and physics of the islands in the
// area — is paid from the budget first), 10 s measured; at
// 256 kbit/s (the goals checkBigWorld holds it to) and 64 kbit/s, where
// the budget leaves frames out and priority decides.
func BenchmarkBigWorld(b *testing.B) {
	for _, kbps := range []int{256, 64} {
		b.Run(fmt.Sprintf("kbps=%d", kbps), func(b *testing.B) {
			var r bigWorldRun
			for range b.N {
				r = runBigWorld(b, kbps, 60, 200)
			}
			if kbps == 256 {
				checkBigWorld(b, r)
			}
			b.ReportMetric(float64(r.BusiestSecond)/float64(r.BudgetBytes), "busiest/budget")
			b.ReportMetric(100*r.NearShare, "near-updated-%")
			b.ReportMetric(100*r.NearWorst, "near-worst-%")
			b.ReportMetric(float64(r.AreaMaxGap), "area-max-gap-broadcasts")
			b.ReportMetric(float64(r.Interest), "islands-in-interest")
			b.ReportMetric(float64(r.Deferred)/float64(r.Broadcasts+60), "deferred/broadcast")
		})
	}
}

// BenchmarkBigWorldFanOut measures the authority's side of the big world
// for 1 and 64 observers, each held to 256 kbit/s with its own 80 m area of
// interest spread along the floor and moving at 4 m/s, acknowledging every
// snapshot: the time of Frames and Take per observer per broadcast (the
// world's step and the observers' receive paths are not timed), after 2 s
// of warm-up.
func BenchmarkBigWorldFanOut(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("observers=%d", n), func(b *testing.B) {
			scs, _ := scenario.Pick("bigworld")
			auth, err := scenario.NewAuthority(scs, 20)
			if err != nil {
				b.Fatal(err)
			}
			bc, _ := broadcast.New(broadcast.Config{SendPeriod: auth.Period(), ObserverKbps: 256})
			lim := codec.ControlLimits{}.WithDefaults()
			rxs := make([]*Receiver, n)
			area := func(k int, t float64) codec.Region {
				c := 100 + float64(k)*1800/float64(n) + 4*t
				return codec.Region{X0: c - 40, Y0: -5, X1: c + 40, Y1: 25}
			}
			for k := range rxs {
				rxs[k], _ = New(Config{})
				_ = bc.Join(broadcast.ObserverID(k+1), 0)
				_ = bc.Subscribe(broadcast.ObserverID(k+1), codec.Subscribe{Regions: []codec.Region{area(k, 0)}})
			}
			var now int64
			var ctl []byte
			var dgs []broadcast.Datagram
			broadcastOnce := func(timed bool) {
				var frames []*island.Frame
				for len(frames) == 0 {
					now += 1_000_000 / scenario.StepHz
					var msgs []codec.Message
					msgs, frames = auth.Step()
					for _, m := range msgs {
						_ = bc.Apply(m)
					}
				}
				t := float64(frames[0].Time) / 1e6
				for k := range rxs {
					_ = bc.Subscribe(broadcast.ObserverID(k+1), codec.Subscribe{Regions: []codec.Region{area(k, t)}})
				}
				if timed {
					b.StartTimer()
				}
				bc.Frames(frames)
				for k, rx := range rxs {
					if timed {
						b.StartTimer()
					}
					ctl, dgs = bc.Take(broadcast.ObserverID(k+1), ctl[:0], dgs[:0])
					b.StopTimer()
					for len(ctl) > 0 {
						m, used, err := codec.ParseControl(ctl, &lim)
						if err != nil {
							b.Fatal(err)
						}
						_ = rx.Control(now, m)
						ctl = ctl[used:]
					}
					for _, d := range dgs {
						rx.Datagram(now, d.Bytes)
					}
					rx.Render(now)
					fb := rx.Feedback(nil)
					if _, err := bc.FeedbackBytes(broadcast.ObserverID(k+1), fb); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			for range 40 {
				broadcastOnce(false)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				broadcastOnce(true)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/observer-broadcast")
		})
	}
}
