package store

import (
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

// fakeExt records what the store asks of an Extrapolator and answers with
// recognizable poses: X = 1000 + dt in ms for a continuation, 2000 + dt for
// a bridge.
type fakeExt struct {
	refuse             bool
	extrapolated       []int64
	bridged            []int64
	settledA, settledB []uint32 // frame sequences (0: no frame)
	settledAlpha       []float64
}

func (f *fakeExt) Extrapolate(v *validator.Validated, dt int64, out []island.State) bool {
	f.extrapolated = append(f.extrapolated, dt)
	return f.fill(out, 1000+float64(dt)/1000)
}

func (f *fakeExt) Bridge(a, b *validator.Validated, dt int64, out []island.State) bool {
	f.bridged = append(f.bridged, dt)
	return f.fill(out, 2000+float64(dt)/1000)
}

// fill puts every member at x, unless the fake refuses.
func (f *fakeExt) fill(out []island.State, x float64) bool {
	for i := range out {
		out[i] = island.State{X: x}
	}
	return !f.refuse
}

func (f *fakeExt) Settle(a, b *validator.Validated, alpha float64, poses []island.State) {
	seq := func(v *validator.Validated) uint32 {
		if v == nil {
			return 0
		}
		return v.Key().Seq
	}
	f.settledA, f.settledB = append(f.settledA, seq(a)), append(f.settledB, seq(b))
	f.settledAlpha = append(f.settledAlpha, alpha)
}

// TestExtrapolator: past the newest frame the store continues the island
// with its Extrapolator (counted), and with straight lines when it
// refuses; a pair wider than BridgeGap is bridged, a narrower one blended;
// every view is settled against the frames it came from.
func TestExtrapolator(t *testing.T) {
	w := newWorld(t, 2, Config{ExtrapolationCap: 100_000})
	ext := &fakeExt{}
	w.s.SetExtrapolator(ext)
	st := func(x float64) func(int) island.State {
		return func(int) island.State { return island.State{X: x, VX: 1} }
	}
	// Frames 1 (t = 1.00 s), 2 (1.05 s) and 3 (1.25 s: frames lost between).
	for i, f := range []struct {
		t island.Time
		x float64
	}{{1_000_000, 0}, {1_050_000, 1}, {1_250_000, 5}} {
		fr := w.frame(f.t, 0, st(f.x))
		fr.Key.Seq = uint32(i + 1)
		w.commit(t, 0, fr)
	}
	v := w.s.Evaluate(7, 1_025_000, 0, 1) // 50 ms pair: a plain blend
	if v.Mode != Interpolate || v.Poses[0].X != 0.5 || len(ext.bridged) != 0 {
		t.Fatalf("narrow pair: %v x=%v, bridged %v", v.Mode, v.Poses[0].X, ext.bridged)
	}
	if n := len(ext.settledA); n != 1 || ext.settledA[0] != 1 || ext.settledB[0] != 2 || ext.settledAlpha[0] != 0.5 {
		t.Fatalf("settled against %v %v alpha %v", ext.settledA, ext.settledB, ext.settledAlpha)
	}
	v = w.s.Evaluate(7, 1_100_000, 0, 1) // 200 ms pair: bridged, 50 ms in
	if v.Mode != Interpolate || v.Poses[0].X != 2050 || len(ext.bridged) != 1 || ext.bridged[0] != 50_000 {
		t.Fatalf("wide pair: %v x=%v, bridged %v", v.Mode, v.Poses[0].X, ext.bridged)
	}
	v = w.s.Evaluate(7, 1_300_000, 0, 1) // 50 ms past the newest frame
	if v.Mode != Extrapolate || v.Poses[0].X != 1050 || w.s.Stats().Simulated != 1 {
		t.Fatalf("past the newest: %v x=%v, simulated %d", v.Mode, v.Poses[0].X, w.s.Stats().Simulated)
	}
	if last := len(ext.settledA) - 1; ext.settledA[last] != 3 || ext.settledB[last] != 0 {
		t.Fatalf("an extrapolation settled against %d and %d", ext.settledA[last], ext.settledB[last])
	}
	v = w.s.Evaluate(7, 1_500_000, 0, 1) // past the cap: Stale, continued to the cap
	if v.Mode != Stale || v.Poses[0].X != 1100 {
		t.Fatalf("past the cap: %v x=%v", v.Mode, v.Poses[0].X)
	}
	ext.refuse = true
	v = w.s.Evaluate(7, 1_300_000, 0, 1)
	if v.Mode != Extrapolate || v.Poses[0].X != 5.05 || w.s.Stats().Simulated != 2 {
		t.Fatalf("refused: %v x=%v, simulated %d", v.Mode, v.Poses[0].X, w.s.Stats().Simulated)
	}
}

// TestOldSegmentUntilCut: frames of segment 0 up to 1.95 s, a cut to
// segment 1 at 2.00 s, its first frame at 2.05 s. Before the cut the old
// segment continues from its last frame (extrapolated, never the new
// segment early); from the cut on, the new segment shows.
func TestOldSegmentUntilCut(t *testing.T) {
	w := newWorld(t, 1, Config{ExtrapolationCap: 100_000})
	w.commit(t, 0, w.frame(1_950_000, 0, func(int) island.State { return island.State{X: 0, VX: 2} }))
	w.commit(t, 0, w.frame(2_050_000, 1, func(int) island.State { return island.State{X: 100} }))
	w.s.Cut(7, 1, 2_000_000)
	v := w.s.Evaluate(7, 1_975_000, 0, 1)
	if v.Mode != Extrapolate || v.Segment != 0 || v.Poses[0].X != 0.05 {
		t.Fatalf("before the cut: %v segment %d x=%v", v.Mode, v.Segment, v.Poses[0].X)
	}
	v = w.s.Evaluate(7, 2_010_000, 0, 1)
	if v.Mode != SegmentCut || v.Segment != 1 || v.Poses[0].X != 100 {
		t.Fatalf("after the cut: %v segment %d x=%v", v.Mode, v.Segment, v.Poses[0].X)
	}
}
