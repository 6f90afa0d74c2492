package scenario

import (
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/physics"
)

// physicsOf describes island is of world w for an observer's local
// simulation: the world's step, solver iterations, gravity and damping,
// each member's inertia and collision box in manifest order, and the island's joints with
// their ends as manifest positions (a joint to the static world has it as
// its second end), and the world's static ground.
func physicsOf(w *physics.World, is *physics.Island) codec.Physics {
	g := w.Space.Gravity()
	m := codec.Physics{Island: is.ID, Topology: is.Topology, Config: is.Config,
		Step: uint32(1_000_000 / (w.StepHz * physics.Substeps)), Iterations: uint16(w.Space.Iterations),
		Gravity: [2]float64{g.X, g.Y}, Damping: w.Space.Damping(),
		Bodies: make([]codec.BodyMass, len(is.Members)), Joints: make([]codec.JointSpec, 0, len(is.Joints))}
	pos := make(map[uint64]uint32, len(is.Members))
	for i, b := range is.Members {
		pos[b.ID.Stable] = uint32(i)
		m.Bodies[i] = codec.BodyMass{Mass: b.B.Mass(), Moment: b.B.Moment(), Width: b.Box.X, Height: b.Box.Y, Friction: b.Friction}
	}
	for _, g := range w.Ground() {
		m.Static = append(m.Static, codec.Segment{A: [2]float64{g.A.X, g.A.Y}, B: [2]float64{g.B.X, g.B.Y}, Radius: g.Radius, Friction: g.Friction})
	}
	for _, j := range is.Joints {
		s := j.Spec
		a, b, anA, anB := s.A, s.B, s.AnchorA, s.AnchorB
		if a == physics.Static {
			a, b, anA, anB = b, a, anB, anA
		}
		js := codec.JointSpec{A: pos[a.Stable], B: codec.NoBody,
			AnchorA: [2]float64{anA.X, anA.Y}, AnchorB: [2]float64{anB.X, anB.Y}}
		if b != physics.Static {
			js.B = pos[b.Stable]
		}
		switch s.Kind {
		case physics.Pin:
			js.Kind, js.Min, js.Max = codec.JointPin, s.Dist, s.Dist
		case physics.Slide:
			js.Kind, js.Min, js.Max = codec.JointSlide, s.Min, s.Max
		default:
			js.Kind = codec.JointPivot
		}
		m.Joints = append(m.Joints, js)
	}
	return m
}
