package localsim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// TestSettleGradients: every row's gradient, as a round builds it,
// matches the change of the row's error when each body is moved or turned
// a little (finite differences), for every joint kind and a static end.
func TestSettleGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := codec.Physics{Step: 16_667, Iterations: 10, Damping: 1,
		Bodies: []codec.BodyMass{{Mass: 1, Moment: 0.1}, {Mass: 2, Moment: 0.3}, {Mass: 0.5, Moment: 0.02}},
		Joints: []codec.JointSpec{
			{Kind: codec.JointPivot, A: 0, B: codec.NoBody, AnchorA: [2]float64{-0.3, 0.1}, AnchorB: [2]float64{1, 2}},
			{Kind: codec.JointPin, A: 0, B: 1, AnchorA: [2]float64{0.3, 0}, AnchorB: [2]float64{-0.2, 0.05}, Min: 0.1, Max: 0.1},
			{Kind: codec.JointSlide, A: 2, B: 1, AnchorA: [2]float64{0.1, 0.1}, AnchorB: [2]float64{0.2, -0.1}, Max: 0.05},
		}}
	poses := []island.State{{X: 1.2, Y: 1.9, Angle: 0.3}, {X: 1.8, Y: 1.7, Angle: -0.8}, {X: 2.3, Y: 1.5, Angle: 2.1}}
	target := [][2]float64{{0.01, -0.02}, {0.05, 0.08}, {-0.03, 0.01}}
	pr := newProjector(&p)
	errs := func(ps []island.State) []float64 {
		q := newProjector(&p)
		q.round(&p, append([]island.State(nil), ps...), target, 0) // fills rows, then moves a copy
		out := make([]float64, len(q.rows))
		for r := range q.rows {
			out[r] = q.rows[r].c
		}
		return out
	}
	for range 20 {
		for i := range poses {
			poses[i].Angle += rng.Float64() - 0.5
		}
		base := errs(poses)
		pr.round(&p, append([]island.State(nil), poses...), target, 0)
		const h = 1e-7
		for b := range poses {
			for f := range 3 {
				moved := append([]island.State(nil), poses...)
				switch f {
				case 0:
					moved[b].X += h
				case 1:
					moved[b].Y += h
				default:
					moved[b].Angle += h
				}
				got := errs(moved)
				for r := range pr.rows {
					rw := &pr.rows[r]
					want := 0.0
					if rw.a == b {
						want += rw.ja[f]
					}
					if rw.b == b {
						want += rw.jb[f]
					}
					if fd := (got[r] - base[r]) / h; math.Abs(fd-want) > 1e-5 {
						t.Fatalf("row %d (joint %d), body %d, field %d: gradient %g, finite difference %g", r, rw.joint, b, f, want, fd)
					}
				}
			}
		}
	}
}

// TestSpaceOnFirstContinuation: New and Settle build no cp space; the first
// continuation builds it once, and later ones reuse it.
func TestSpaceOnFirstContinuation(t *testing.T) {
	p := codec.Physics{Step: 16_667, Iterations: 10, Damping: 1, Topology: 1, Config: 1,
		Bodies: []codec.BodyMass{{Mass: 1, Moment: 0.1}, {Mass: 2, Moment: 0.3}},
		Joints: []codec.JointSpec{{Kind: codec.JointPin, A: 0, B: 1, AnchorB: [2]float64{0.5, 0}, Min: 1, Max: 1}}}
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	poses := []island.State{{X: 0, Y: 2}, {X: 1.2, Y: 2}}
	state := func(i int) island.State { return poses[i] }
	s.Settle(poses, s.Separations(state, nil))
	if s.space != nil || s.bodies != nil || s.Bodies() != 2 || !s.Describes(1, 1, 2) {
		t.Fatalf("after New and Settle: space %v, %d bodies", s.space, s.Bodies())
	}
	key := island.Key{Island: 1, Topology: 1, Config: 1, Seq: 1}
	out := make([]island.State, 2)
	if !s.Continue(key, 0, state, 20_000, 0, out) {
		t.Fatal("continue refused")
	}
	space := s.space
	if space == nil || len(s.bodies) != 2 {
		t.Fatal("no space after a continuation")
	}
	key.Seq++
	if !s.Continue(key, 50_000, state, 20_000, 0, out) || s.space != space {
		t.Fatal("a second continuation built another space")
	}
}
