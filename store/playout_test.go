package store

import (
	"math"
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

const msT = island.Millisecond

func at(x, vx float64) func(int) island.State {
	return func(int) island.State { return island.State{X: x, VX: vx} }
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestSegmentNeverBlended: shown at 0.1 m while extrapolating segment 0,
// the island reappears 0.5 m away in segment 1. The new segment applies at
// once — never 0.1 → 0.35 → 0.6 — although 0.5 m is under the 1 m snap
// distance; the same jump within one segment is smoothed.
func TestSegmentNeverBlended(t *testing.T) {
	for _, c := range []struct {
		name    string
		seg     uint32
		atHalf  float64 // x halfway through the smoothing
		smooths bool
	}{{"new segment", 1, 0.6, false}, {"same segment", 0, 0.35, true}} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 2, Config{})
			w.commit(t, 0, w.frame(0, 0, at(0, 1)))
			w.commit(t, 0, w.frame(50*msT, 0, at(0.05, 1)))
			if v := w.s.Evaluate(7, 100*msT, 1000, 1); v.Mode != Extrapolate || !near(v.Poses[0].X, 0.1) {
				t.Fatalf("extrapolated %v x=%v", v.Mode, v.Poses[0].X)
			}
			w.commit(t, 2000, w.frame(110*msT, c.seg, at(0.6, 0)))
			w.commit(t, 2000, w.frame(150*msT, c.seg, at(0.6, 0)))
			v := w.s.Evaluate(7, 120*msT, 3000, 1)
			if v.Mode != Interpolate || v.Smoothing != c.smooths {
				t.Fatalf("recovery: %v smoothing %v", v.Mode, v.Smoothing)
			}
			v = w.s.Evaluate(7, 125*msT, 3000+50_000, 1) // half of the 100 ms smoothing
			if !near(v.Poses[0].X, c.atHalf) || !near(v.Poses[1].X, c.atHalf) {
				t.Fatalf("halfway x=%v, %v; want %v", v.Poses[0].X, v.Poses[1].X, c.atHalf)
			}
		})
	}
}

// TestCutEndsOldSegment: a teleport announced for 80 ms (segment 1) stops
// the old segment's extrapolation there; until a frame of segment 1 is held
// the island is missing, not shown where it no longer is.
func TestCutEndsOldSegment(t *testing.T) {
	w := newWorld(t, 1, Config{})
	w.commit(t, 0, w.frame(0, 0, at(0, 1)))
	w.commit(t, 0, w.frame(50*msT, 0, at(0.05, 1)))
	w.s.Cut(7, 1, 80*msT)
	if v := w.s.Evaluate(7, 79*msT, 0, 1); v.Mode != Extrapolate || !v.ValidAtR {
		t.Fatalf("before the cut: %v", v.Mode)
	}
	if v := w.s.Evaluate(7, 80*msT, 0, 1); v.Mode != Empty || v.ValidAtR || len(v.Poses) != 0 {
		t.Fatalf("at the cut: %v valid %v", v.Mode, v.ValidAtR)
	}
	w.commit(t, 0, w.frame(100*msT, 1, at(12, 0)))
	w.commit(t, 0, w.frame(150*msT, 1, at(12, 0)))
	if v := w.s.Evaluate(7, 120*msT, 0, 1); v.Mode != Interpolate || v.Poses[0].X != 12 || v.Segment != 1 || v.Smoothing {
		t.Fatalf("new segment: %v x=%v", v.Mode, v.Poses[0].X)
	}
	w.s.Cut(7, 0, 500*msT) // an older cut arriving late changes nothing
	if v := w.s.Evaluate(7, 150*msT, 0, 1); v.Mode != Interpolate {
		t.Fatalf("a stale cut hid the island: %v", v.Mode)
	}
}

// TestStaleIslandsAreCleanedUp: an island left Stale past StaleCleanup
// loses its history and reports Empty (missing) until a new frame arrives.
func TestStaleIslandsAreCleanedUp(t *testing.T) {
	w := newWorld(t, 1, Config{StaleCleanup: 500_000})
	w.commit(t, 0, w.frame(0, 0, at(0, 0)))
	w.commit(t, 0, w.frame(50*msT, 0, at(0, 0)))
	if v := w.s.Evaluate(7, 200*msT, 0, 1); v.Mode != Stale {
		t.Fatalf("%v", v.Mode)
	}
	if v := w.s.Evaluate(7, 300*msT, 400_000, 1); v.Mode != Stale {
		t.Fatalf("%v", v.Mode)
	}
	w.s.Evaluate(7, 400*msT, 500_000, 1)
	if v := w.s.Evaluate(7, 410*msT, 510_000, 1); v.Mode != Empty || w.s.Stats().StaleCleanups != 1 {
		t.Fatalf("after the bound: %v, %d cleanups", v.Mode, w.s.Stats().StaleCleanups)
	}
}

// TestFreezeHoldsPoses: the clock froze at r = 1.0 s with the member shown
// at 1.0 m (extrapolated from 0.9 m at 0.9 s). A frame for 1.1 s arrives
// during the freeze; evaluated at the same r it would move the member to
// 0.817 m. Held, the pose stays 1.0 until the clock resumes, and then the
// change goes through the shared correction instead of a jump.
func TestFreezeHoldsPoses(t *testing.T) {
	w := newWorld(t, 1, Config{})
	w.commit(t, 0, w.frame(850*msT, 0, at(0.85, 1)))
	w.commit(t, 0, w.frame(900*msT, 0, at(0.9, 1)))
	if v := w.s.Evaluate(7, 1000*msT, 0, 1); !near(v.Poses[0].X, 1.0) {
		t.Fatalf("frozen frame x=%v", v.Poses[0].X)
	}
	w.commit(t, 10_000, w.frame(1100*msT, 0, at(0.734, 1)))
	for now := int64(20_000); now < 200_000; now += 16_000 {
		if v := w.s.Hold(7, 1000*msT, now, 1); !near(v.Poses[0].X, 1.0) {
			t.Fatalf("held pose moved to %v at the same r", v.Poses[0].X)
		}
	}
	v := w.s.Evaluate(7, 1000*msT, 200_000, 1) // the clock resumes at the same r
	if !near(v.Poses[0].X, 1.0) || !v.Smoothing {
		t.Fatalf("resume jumped to %v (smoothing %v)", v.Poses[0].X, v.Smoothing)
	}
	if v := w.s.Evaluate(7, 1000*msT, 300_000, 1); !near(v.Poses[0].X, 0.817) {
		t.Fatalf("after the correction x=%v, want 0.817", v.Poses[0].X)
	}
}

// TestHoldAcrossNewTopology: the clock froze with a 2-member island shown
// (members 1 and 2 at 1.0 and 2.0 m). While frozen, the island changes
// topology: member 3 joins, and the new version's manifest lists it first.
// Held, the view is the one shown — two poses, each beside the handle it
// was shown for — never the new version's three handles beside two poses.
func TestHoldAcrossNewTopology(t *testing.T) {
	w := newWorld(t, 2, Config{})
	xs := func(i int) island.State { return island.State{X: float64(i + 1)} }
	w.commit(t, 0, w.frame(850*msT, 0, xs))
	w.commit(t, 0, w.frame(900*msT, 0, xs))
	v := w.s.Evaluate(7, 900*msT, 0, 1)
	shown := append([]validator.Handle(nil), v.Handles...)
	third := island.MemberID{Stable: 3}
	if _, err := w.v.Registry().Announce(third); err != nil {
		t.Fatal(err)
	}
	w.man.Topology++
	w.man.Members = append([]island.MemberID{third}, w.man.Members...)
	if err := w.v.SetManifest(w.man); err != nil {
		t.Fatal(err)
	}
	w.commit(t, 10_000, w.frame(950*msT, 0, func(i int) island.State { return island.State{X: float64(10 + i)} }))
	v = w.s.Hold(7, 900*msT, 20_000, 1)
	if len(v.Handles) != len(v.Poses) || len(v.Poses) != 2 {
		t.Fatalf("held view: %d handles beside %d poses, want 2 and 2", len(v.Handles), len(v.Poses))
	}
	for i := range v.Poses {
		if v.Handles[i] != shown[i] || v.Poses[i].X != float64(i+1) {
			t.Fatalf("held member %d: handle %v at x=%v, want %v at %v", i, v.Handles[i], v.Poses[i].X, shown[i], i+1)
		}
	}
}

// TestLateTick: ticks (100, seg 0, x 0) (104, seg 1, x 102) (106, seg 1,
// x 104) are held and tick 103 shown (102, the right frame of a cut); then
// tick 102 (seg 0, x 2) arrives late: refused as late, and tick 103 still
// gives 102. A late frame never rewrites history the playout has passed —
// but one ahead of r fills its gap.
func TestLateTick(t *testing.T) {
	const tick = island.Millisecond
	w := newWorld(t, 1, Config{})
	w.commit(t, 0, w.frame(100*tick, 0, at(0, 0)))
	w.commit(t, 0, w.frame(104*tick, 1, at(102, 0)))
	w.commit(t, 0, w.frame(106*tick, 1, at(104, 0)))
	if v := w.s.Evaluate(7, 103*tick, 0, 1); v.Mode != SegmentCut || v.Poses[0].X != 102 {
		t.Fatalf("tick 103: %v x=%v", v.Mode, v.Poses[0].X)
	}
	r, vf := w.v.Validate(wire(w.frame(102*tick, 0, at(2, 0))))
	if r != validator.OK {
		t.Fatal(r)
	}
	if c := w.s.Commit(0, vf); c != CommitLate {
		t.Fatalf("late tick 102: %v, want late", c)
	}
	if v := w.s.Evaluate(7, 103*tick, 0, 1); v.Poses[0].X != 102 {
		t.Fatalf("tick 103 after the late frame: x=%v", v.Poses[0].X)
	}
	// Within one segment the late frame would have changed what r shows.
	w2 := newWorld(t, 1, Config{})
	w2.commit(t, 0, w2.frame(100*tick, 0, at(0, 0)))
	w2.commit(t, 0, w2.frame(110*tick, 0, at(10, 0)))
	w2.s.Evaluate(7, 101*tick, 0, 1)
	w2.commit(t, 0, w2.frame(105*tick, 0, at(5.5, 0))) // ahead of r: fills the gap
	if v := w2.s.Evaluate(7, 106*tick, 0, 1); !near(v.Poses[0].X, 6.4) || v.Left.Seq != 3 {
		t.Fatalf("gap filled: x=%v from %v", v.Poses[0].X, v.Left)
	}
	_, vf = w2.v.Validate(wire(w2.frame(103*tick, 0, at(50, 0))))
	if c := w2.s.Commit(0, vf); c != CommitLate {
		t.Fatalf("a frame behind r: %v", c)
	}
}

// TestLowRateIsland: B is sampled only at 1.00 s and 1.50 s (A's frequent
// frames are another island and change nothing). B extrapolates at 1.08,
// is Stale from 1.12 holding its 1.10 pose, is valid again at r = 1.42 once
// the 1.50 sample arrives, and is still Stale at r = 1.70.
func TestLowRateIsland(t *testing.T) {
	for _, c := range []struct {
		name string
		r    island.Time
		mode Mode
	}{{"r 1.42", 1420 * msT, Interpolate}, {"r 1.70", 1700 * msT, Stale}} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 1, Config{})
			w.commit(t, 0, w.frame(1000*msT, 0, at(0, 1)))
			v := w.s.Evaluate(7, 1080*msT, 0, 1)
			if v.Mode != Extrapolate || !v.ValidAtR || !near(v.Poses[0].X, 0.08) {
				t.Fatalf("1.08: %v x=%v", v.Mode, v.Poses[0].X)
			}
			v = w.s.Evaluate(7, 1120*msT, 0, 1)
			if v.Mode != Stale || v.ValidAtR || v.SampleTime != 1100*msT || !near(v.Poses[0].X, 0.1) {
				t.Fatalf("1.12: %v valid %v sample %v x=%v", v.Mode, v.ValidAtR, v.SampleTime, v.Poses[0].X)
			}
			if c.r > 1500*msT {
				w.s.Evaluate(7, c.r, 0, 1) // the playout reached r before the sample came
			}
			r, vf := w.v.Validate(wire(w.frame(1500*msT, 0, at(0.5, 1))))
			if r != validator.OK {
				t.Fatal(r)
			}
			w.s.Commit(0, vf)
			v = w.s.Evaluate(7, c.r, 0, 1)
			if v.Mode != c.mode || v.ValidAtR != (c.mode == Interpolate) {
				t.Fatalf("%v: %v valid %v", c.r, v.Mode, v.ValidAtR)
			}
		})
	}
}

// The interpolation tests, with ticks of 10 ms: (100, x 0) and (102, x 10)
// give 5 at 101, 0 at 100, and 0 held before the buffer at 99.
func TestInterpolationBrackets(t *testing.T) {
	const tick = 10 * island.Millisecond
	w := newWorld(t, 1, Config{})
	w.commit(t, 0, w.frame(100*tick, 0, at(0, 0)))
	w.commit(t, 0, w.frame(102*tick, 0, at(10, 0)))
	for _, c := range []struct {
		r    island.Time
		x    float64
		mode Mode
	}{{101 * tick, 5, Interpolate}, {100 * tick, 0, Interpolate}, {99 * tick, 0, HoldOldest}} {
		w2 := newWorld(t, 1, Config{}) // a fresh store: r only moves forward
		w2.commit(t, 0, w2.frame(100*tick, 0, at(0, 0)))
		w2.commit(t, 0, w2.frame(102*tick, 0, at(10, 0)))
		if v := w2.s.Evaluate(7, c.r, 0, 1); v.Mode != c.mode || v.Poses[0].X != c.x {
			t.Fatalf("at %v: %v x=%v, want %v x=%v", c.r, v.Mode, v.Poses[0].X, c.mode, c.x)
		}
	}
}

// Extrapolation past the newest: (100, x 0, v 5/tick), (101, x 5, v 5/tick)
// give 10 at 102.
func TestExtrapolationPastNewest(t *testing.T) {
	const tick = 10 * island.Millisecond
	w := newWorld(t, 1, Config{})
	v5 := 5.0 / tick.Seconds() // 5 per tick, in m/s
	w.commit(t, 0, w.frame(100*tick, 0, at(0, v5)))
	w.commit(t, 0, w.frame(101*tick, 0, at(5, v5)))
	if v := w.s.Evaluate(7, 102*tick, 0, 1); v.Mode != Extrapolate || !near(v.Poses[0].X, 10) {
		t.Fatalf("at 102: %v x=%v", v.Mode, v.Poses[0].X)
	}
}

// A correction fades: from 0 toward 10, a quarter of the way through the
// smoothing the member shows 2.5, and at the end 10.
func TestCorrectionFades(t *testing.T) {
	w := newWorld(t, 1, Config{SmoothDuration: 100_000, SnapDistance: 20})
	w.commit(t, 0, w.frame(0, 0, at(0, 0)))
	w.s.Evaluate(7, 50*msT, 0, 1) // extrapolating at 0
	w.commit(t, 0, w.frame(60*msT, 0, at(10, 0)))
	w.commit(t, 0, w.frame(100*msT, 0, at(10, 0)))
	w.s.Evaluate(7, 70*msT, 1_000, 1) // recovery starts: shows 0
	if v := w.s.Evaluate(7, 70*msT, 1_000+25_000, 1); !near(v.Poses[0].X, 2.5) {
		t.Fatalf("a quarter through: %v", v.Poses[0].X)
	}
	if v := w.s.Evaluate(7, 70*msT, 1_000+100_000, 1); v.Poses[0].X != 10 || v.Smoothing {
		t.Fatalf("at the end: %v", v.Poses[0].X)
	}
}
