package scenario

import (
	"math"

	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
)

// The big world's layout: a floor BigWorldWidth metres long cut into cells
// of bigCell metres. Every cell holds four carts (two on the floor, two
// resting on them) and three loose boxes; every bigRagdollEvery-th cell a
// ragdoll falling onto the carts, and every bigChainEvery-th a hanging
// chain. A few kinematic movers
// sweep along the whole floor, waking what they hit; everything else
// settles and sleeps.
const (
	// BigWorldWidth is the big world's floor length, metres.
	BigWorldWidth   = 2000.0
	bigCell         = 4.0 // m: 500 cells
	bigChainEvery   = 50  // cells between chains: 10 chains
	bigRagdollEvery = 10  // cells between ragdolls: 50 ragdolls
	bigChainLinks   = 30
	bigMovers       = 8
	bigMoverSpeed   = 5.0 // m/s
)

// buildBigWorld is a world bigger than one observer's link: 500 cells of
// 4 m along a 2 km floor, each with four four-box carts (two on the floor,
// two resting on top of them) and three loose boxes; every tenth cell a
// six-body ragdoll falls onto its carts, and every fiftieth has a 30-link
// chain swinging from a static pivot. 10,100 bodies in 3,560 islands. Eight
// kinematic movers sweep along the floor end to end and back at 5 m/s,
// bobbing, knocking carts, boxes and ragdolls about as they pass;
// everything else sleeps once at rest.
func buildBigWorld(w *physics.World) *script {
	w.EnableSleep(0.5)
	w.Space.Iterations = 10 // a big world trades solver stiffness for bodies: carts and boxes need few
	w.AddGround(cp.Vector{X: -5, Y: 0}, cp.Vector{X: BigWorldWidth + 5, Y: 0})
	cells := int(BigWorldWidth / bigCell)
	for c := 0; c < cells; c++ {
		x0 := float64(c) * bigCell
		for _, x := range []float64{x0, x0 + 1.7} {
			cart(w, x, 0)
			cart(w, x, 0.4)
		}
		for d := 0; d < 3; d++ {
			w.AddBody(0.5, 0.3, 0.3, cp.Vector{X: x0 + 3.5 + float64(d%2)*0.32, Y: 0.15 + float64(d/2)*0.3}, 0, true)
		}
		if c%bigRagdollEvery == bigRagdollEvery/2 {
			ragdoll(w, x0+2, 2.4) // above the carts: it falls onto them
		}
		if c%bigChainEvery == 0 {
			hangingChain(w, bigChainLinks, x0+2, 14, 0.25, physics.Pivot)
		}
	}
	movers := make([]*cp.Body, bigMovers)
	dirs := make([]float64, bigMovers)
	for i := range movers {
		movers[i] = w.AddKinematic(0.8, 0.6, cp.Vector{X: BigWorldWidth * (float64(i) + 0.5) / bigMovers, Y: 0.5})
		dirs[i] = 1
		if i%2 == 1 {
			dirs[i] = -1
		}
	}
	s := &script{}
	s.every = func(step int64) {
		for i, m := range movers {
			p := m.Position()
			switch {
			case p.X > BigWorldWidth:
				dirs[i] = -1
			case p.X < 0:
				dirs[i] = 1
			}
			m.SetVelocity(dirs[i]*bigMoverSpeed, 3*math.Sin(float64(step+int64(i)*17)/15))
		}
	}
	return s
}

// cart lays four 0.4 m boxes in a row from x with their bottoms at y, each
// pinned to the next at their shared bottom corner: one island that starts
// at rest, sleeps, and buckles and tumbles as a whole when something hits
// it.
func cart(w *physics.World, x, y float64) {
	var prev island.MemberID
	for k := 0; k < 4; k++ {
		id := w.AddBody(1, 0.4, 0.4, cp.Vector{X: x + 0.2 + float64(k)*0.4, Y: y + 0.2}, 0, true)
		if k > 0 {
			w.AddJoint(physics.JointSpec{Kind: physics.Pivot, A: prev, B: id,
				AnchorA: cp.Vector{X: 0.2, Y: -0.2}, AnchorB: cp.Vector{X: -0.2, Y: -0.2}})
		}
		prev = id
	}
}

// ragdoll builds a six-body ragdoll standing with its torso at (x, y).
func ragdoll(w *physics.World, x, y float64) {
	torso := w.AddBody(3, 0.4, 0.8, cp.Vector{X: x, Y: y}, 0, true)
	head := w.AddBody(1, 0.3, 0.3, cp.Vector{X: x, Y: y + 0.6}, 0, true)
	armL := w.AddBody(0.5, 0.5, 0.12, cp.Vector{X: x - 0.45, Y: y + 0.3}, 0, true)
	armR := w.AddBody(0.5, 0.5, 0.12, cp.Vector{X: x + 0.45, Y: y + 0.3}, 0, true)
	legL := w.AddBody(0.8, 0.14, 0.6, cp.Vector{X: x - 0.12, Y: y - 0.7}, 0, true)
	legR := w.AddBody(0.8, 0.14, 0.6, cp.Vector{X: x + 0.12, Y: y - 0.7}, 0, true)
	piv := func(a, b island.MemberID, aa, bb cp.Vector) {
		w.AddJoint(physics.JointSpec{Kind: physics.Pivot, A: a, B: b, AnchorA: aa, AnchorB: bb})
	}
	piv(torso, head, cp.Vector{Y: 0.45}, cp.Vector{Y: -0.15})
	piv(torso, armL, cp.Vector{X: -0.2, Y: 0.3}, cp.Vector{X: 0.25})
	piv(torso, armR, cp.Vector{X: 0.2, Y: 0.3}, cp.Vector{X: -0.25})
	piv(torso, legL, cp.Vector{X: -0.12, Y: -0.4}, cp.Vector{Y: 0.3})
	piv(torso, legR, cp.Vector{X: 0.12, Y: -0.4}, cp.Vector{Y: 0.3})
}
