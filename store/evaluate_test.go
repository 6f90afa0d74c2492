package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

func TestModes(t *testing.T) {
	w := newWorld(t, 2, Config{ExtrapolationCap: 100_000})
	st := func(x, vx float64) func(int) island.State {
		return func(int) island.State { return island.State{X: x, VX: vx, Angle: 3.1, AngVel: 1} }
	}
	if v := w.s.Evaluate(7, 0, 0, 0); v != nil {
		t.Fatal("unknown island evaluated")
	}
	w.commit(t, 0, w.frame(1_000_000, 0, st(0, 2)))
	w.commit(t, 0, w.frame(1_050_000, 0, st(1, 2)))
	cases := []struct {
		r      island.Time
		mode   Mode
		valid  bool
		x      float64
		sample island.Time
	}{
		{900_000, HoldOldest, false, 0, 1_000_000},
		{1_000_000, Interpolate, true, 0, 1_000_000},
		{1_025_000, Interpolate, true, 0.5, 1_025_000},
		{1_050_000, Interpolate, true, 1, 1_050_000},
		{1_100_000, Extrapolate, true, 1.1, 1_100_000},
		{1_150_000, Extrapolate, true, 1.2, 1_150_000},
		{1_400_000, Stale, false, 1.2, 1_150_000},
	}
	for _, c := range cases {
		v := w.s.Evaluate(7, c.r, 0, 0)
		if v.Mode != c.mode || v.ValidAtR != c.valid || math.Abs(v.Poses[1].X-c.x) > 1e-9 || v.SampleTime != c.sample {
			t.Errorf("r=%d: %v valid=%v x=%v sample=%d, want %v %v %v %d", c.r, v.Mode, v.ValidAtR, v.Poses[1].X, v.SampleTime, c.mode, c.valid, c.x, c.sample)
		}
	}
}

// TestShortestArc: angles 3.1 and −3.1 rad are 0.083 rad apart across ±π;
// halfway is ±π, never 0.
func TestShortestArc(t *testing.T) {
	w := newWorld(t, 1, Config{})
	w.commit(t, 0, w.frame(0, 0, func(int) island.State { return island.State{Angle: 3.1} }))
	w.commit(t, 0, w.frame(100, 0, func(int) island.State { return island.State{Angle: -3.1} }))
	a := w.s.Evaluate(7, 50, 0, 0).Poses[0].Angle
	if math.Abs(math.Abs(a)-math.Pi) > 1e-9 {
		t.Fatalf("halfway angle %v, want ±π", a)
	}
	for _, d := range []float64{0, 1, -1, math.Pi - 1e-9, 3 * math.Pi, -7} {
		s := shortestArc(d)
		if s < -math.Pi || s >= math.Pi || math.Abs(math.Remainder(s-d, 2*math.Pi)) > 1e-9 {
			t.Errorf("shortestArc(%v) = %v", d, s)
		}
	}
}

// TestOneFramePairProperty: for random histories and random r, one (frame
// pair, alpha) or one (frame, extrapolation time) explains every member's
// pose: no member ever comes from a different frame than its partners.
func TestOneFramePairProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	for iter := 0; iter < 200; iter++ {
		n := 1 + r.IntN(20)
		// Recovery smoothing is switched off (every recovery snaps) so that the
		// poses are the frame pair's alone; TestRecoverySmoothing covers it.
		w := newWorld(t, n, Config{History: 2 + r.IntN(6), SnapDistance: math.SmallestNonzeroFloat64})
		var frames []island.Frame
		tm := island.Time(0)
		for k := 0; k < 3+r.IntN(8); k++ {
			tm += island.Time(1 + r.IntN(80_000))
			seg := uint32(r.IntN(2))
			f := w.frame(tm, seg, func(int) island.State {
				return island.State{X: r.NormFloat64(), Y: r.NormFloat64(), Angle: r.Float64()*6 - 3, VX: r.NormFloat64(), VY: r.NormFloat64(), AngVel: r.NormFloat64()}
			})
			frames = append(frames, f)
			w.commit(t, 0, f)
		}
		byKey := map[island.Key]island.Frame{}
		for _, f := range frames {
			byKey[f.Key] = f
		}
		for q := 0; q < 20; q++ {
			at := island.Time(r.Int64N(int64(tm) + 300_000))
			v := w.s.Evaluate(7, at, 0, 0)
			L, R := byKey[v.Left], byKey[v.Right]
			for i, p := range v.Poses {
				var want island.State
				switch v.Mode {
				case Interpolate:
					want = interpolate(L.Members[i].State, R.Members[i].State, v.Alpha)
				case SegmentCut, HoldOldest:
					want = R.Members[i].State
				case Extrapolate, Stale:
					want = extrapolate(L.Members[i].State, float64(min(v.Extrapolated, 100_000))/1e6)
				default:
					t.Fatalf("mode %v", v.Mode)
				}
				if p != want {
					t.Fatalf("iter %d r=%d member %d (%v): pose not explained by the island's frame pair: %+v vs %+v (L %v R %v alpha %v)", iter, at, i, v.Mode, p, want, v.Left, v.Right, v.Alpha)
				}
				if v.Handles[i].Gen == 0 {
					t.Fatal("member without a live handle")
				}
			}
		}
	}
}

// TestApplyExactlyOnce: an engine applying views counts one apply per member
// per applied view, never more, never a member of another frame.
func TestApplyExactlyOnce(t *testing.T) {
	w := newWorld(t, 40, Config{})
	for k := 0; k < 6; k++ {
		w.commit(t, 0, w.frame(island.Time(k*50_000), 0, func(i int) island.State { return island.State{X: float64(k)} }))
	}
	applies := map[validator.Handle]int{}
	for step := 0; step < 30; step++ {
		clear(applies)
		v := w.s.Evaluate(7, island.Time(step*10_000), int64(step*10_000), 0)
		for i, h := range v.Handles { // the engine's one read-out
			applies[h]++
			_ = v.Poses[i]
		}
		if len(applies) != 40 {
			t.Fatalf("step %d: %d members applied", step, len(applies))
		}
		for h, c := range applies {
			if c != 1 {
				t.Fatalf("step %d: %v applied %d times", step, h, c)
			}
		}
	}
}

// TestRecoverySmoothing: leaving extrapolation, every member's offset decays
// over one shared window; boundary frames apply at once for the whole island.
func TestRecoverySmoothing(t *testing.T) {
	for _, boundary := range []bool{false, true} {
		w := newWorld(t, 5, Config{SmoothDuration: 100_000, SnapDistance: 5})
		w.commit(t, 0, w.frame(0, 0, func(i int) island.State { return island.State{X: float64(i), VX: 1} }))
		w.commit(t, 0, w.frame(50_000, 0, func(i int) island.State { return island.State{X: float64(i) + 0.05, VX: 1} }))
		v := w.s.Evaluate(7, 100_000, 0, 0) // extrapolating 50 ms
		if v.Mode != Extrapolate {
			t.Fatal(v.Mode)
		}
		// The authority actually stopped: the new frame disagrees with the
		// extrapolation by 0.05 m for every member.
		f := w.frame(150_000, 0, func(i int) island.State { return island.State{X: float64(i) + 0.05} })
		if boundary {
			f.Flags = island.FlagInitial
		}
		w.commit(t, 10, f)
		v = w.s.Evaluate(7, 100_000, 10, 0)
		if v.Mode != Interpolate {
			t.Fatal(v.Mode)
		}
		if boundary {
			if v.Smoothing || math.Abs(v.Poses[0].X-0.05) > 1e-12 {
				t.Fatalf("boundary frame smoothed: %v %v", v.Smoothing, v.Poses[0].X)
			}
			continue
		}
		if !v.Smoothing {
			t.Fatal("no smoothing on recovery")
		}
		for i, p := range v.Poses {
			if math.Abs(p.X-(float64(i)+0.1)) > 1e-9 { // shows the extrapolated pose at first
				t.Fatalf("member %d x=%v", i, p.X)
			}
		}
		v = w.s.Evaluate(7, 100_000, 50_010, 0) // halfway through the shared window
		for i, p := range v.Poses {
			if math.Abs(p.X-(float64(i)+0.075)) > 1e-9 {
				t.Fatalf("member %d halfway x=%v", i, p.X)
			}
		}
		v = w.s.Evaluate(7, 100_000, 100_010, 0)
		if v.Smoothing || math.Abs(v.Poses[4].X-4.05) > 1e-12 {
			t.Fatalf("after window: %v %v", v.Smoothing, v.Poses[4].X)
		}
		if st := w.s.Stats(); st.Recoveries != 1 || math.Abs(st.CorrectionMax-0.05) > 1e-9 {
			t.Fatalf("stats %+v", st)
		}
	}
}

// TestVersionRaces: a lease, topology or config change between Validate and
// Commit discards the whole frame; a new version empties the history.
func TestVersionRaces(t *testing.T) {
	changes := map[string]func(w *world){
		"lease":    func(w *world) { w.v.SetLease(island.Lease{Island: 7, Epoch: 3, Owner: 3}) },
		"owner":    func(w *world) { w.v.SetLease(island.Lease{Island: 7, Epoch: 2, Owner: 9}) },
		"topology": func(w *world) { m := w.man; m.Topology++; _ = w.v.SetManifest(m) },
		"config":   func(w *world) { m := w.man; m.Config++; _ = w.v.SetManifest(m) },
	}
	for name, change := range changes {
		w := newWorld(t, 4, Config{})
		w.commit(t, 0, w.frame(0, 0, func(int) island.State { return island.State{} }))
		r, vf := w.v.Validate(wire(w.frame(50_000, 0, func(int) island.State { return island.State{X: 1} })))
		if r != validator.OK {
			t.Fatal(r)
		}
		change(w)
		if c := w.s.Commit(1, vf); c != CommitVersionChanged {
			t.Fatalf("%s: commit after change: %v", name, c)
		}
		if w.s.Frames(7) != 1 {
			t.Fatalf("%s: history changed by a discarded frame", name)
		}
	}
	// A frame under the new version starts a new history; the old one goes
	// on until playback reaches the new one's first frame, then goes.
	w := newWorld(t, 4, Config{})
	for k := 0; k < 3; k++ {
		w.commit(t, 0, w.frame(island.Time(k*50_000), 0, func(int) island.State { return island.State{} }))
	}
	w.s.LeaseChanged(7, 1000)
	w.lease.Epoch = 3
	w.v.SetLease(w.lease)
	w.commit(t, 1500, w.frame(200_000, 0, func(int) island.State { return island.State{} }))
	if st := w.s.Stats(); w.s.Frames(7) != 4 || st.Invalidations != 1 || st.HandoffLatencyLast != 500 {
		t.Fatalf("frames %d stats %+v", w.s.Frames(7), st)
	}
	if v := w.s.Evaluate(7, 120_000, 2000, 1); v.Mode != Extrapolate || v.Left.Epoch != 2 {
		t.Fatalf("before the new version's first frame: %v from epoch %d", v.Mode, v.Left.Epoch)
	}
	if v := w.s.Evaluate(7, 200_000, 2010, 1); v.Mode != Interpolate || v.Left.Epoch != 3 || w.s.Frames(7) != 1 {
		t.Fatalf("at the new version's first frame: %v from epoch %d, %d frames held", v.Mode, v.Left.Epoch, w.s.Frames(7))
	}
}

func TestHistoryBounds(t *testing.T) {
	w := newWorld(t, 2, Config{History: 3})
	for _, tm := range []island.Time{100, 300, 200, 400, 500} {
		w.commit(t, 0, w.frame(tm, 0, func(int) island.State { return island.State{} }))
	}
	if w.s.Frames(7) != 3 {
		t.Fatal(w.s.Frames(7))
	}
	r, vf := w.v.Validate(wire(w.frame(150, 0, func(int) island.State { return island.State{} })))
	if r != validator.OK || w.s.Commit(0, vf) != CommitTooOld {
		t.Fatal("too old accepted")
	}
	_, vf = w.v.Validate(wire(w.frame(400, 0, func(int) island.State { return island.State{} })))
	if w.s.Commit(0, vf) != CommitDuplicate {
		t.Fatal("duplicate accepted")
	}
	v := w.s.Evaluate(7, 350, 0, 0)
	if v.Mode != Interpolate || v.Left.Seq == 0 {
		t.Fatal(v.Mode)
	}
}

// TestHistoryModel: through seeded streams of frames — mostly in order,
// some late, some repeated, 40 times as many as the history holds — an
// island's history is always the newest History distinct times committed,
// ascending, each frame its own, and each commit's result is what that
// rule says. A copy made midway and given the same frames from then on
// keeps the same history, in storage of its own.
func TestHistoryModel(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for iter := range 50 {
		hist := 2 + r.IntN(7)
		w := newWorld(t, 1+r.IntN(3), Config{History: hist})
		var model []island.Time // ascending, at most hist
		var copied *Store
		tm := island.Time(1_000_000)
		for k := range 40 * hist {
			if k == 20*hist {
				copied = w.s.Clone(w.v, nil)
			}
			tm += island.Time(1 + r.IntN(50))
			at := tm
			switch r.IntN(8) {
			case 0: // late, maybe too late
				at -= island.Time(r.IntN(60 * hist))
			case 1: // a repeat
				if len(model) > 0 {
					at = model[r.IntN(len(model))]
				}
			}
			want := Committed
			i, dup := slices.BinarySearch(model, at)
			switch {
			case dup:
				want = CommitDuplicate
			case len(model) == hist && i == 0:
				want = CommitTooOld
			default:
				model = slices.Insert(model, i, at)
				if len(model) > hist {
					model = model[1:]
				}
			}
			_, vf := w.v.Validate(wire(w.frame(at, 0, func(int) island.State { return island.State{X: float64(at)} })))
			stores := []*Store{w.s}
			if copied != nil {
				stores = append(stores, copied)
			}
			for c, s := range stores {
				if got := s.Commit(0, vf); got != want {
					t.Fatalf("iter %d commit %d (t=%d) store %d: %v, want %v", iter, k, at, c, got, want)
				}
			}
			seen := map[*validator.Validated]bool{}
			for c, s := range stores {
				h := s.islands.Get(7)
				if len(h.frames) != len(model) {
					t.Fatalf("iter %d commit %d store %d: %d frames held, want %d", iter, k, c, len(h.frames), len(model))
				}
				for j, f := range h.frames {
					if f.Time() != model[j] || f.State(0).X != float64(model[j]) || seen[f] {
						t.Fatalf("iter %d commit %d store %d: frame %d at %d (x %v), want %d", iter, k, c, j, f.Time(), f.State(0).X, model[j])
					}
					seen[f] = true
				}
			}
		}
	}
}
