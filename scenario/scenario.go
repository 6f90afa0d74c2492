package scenario

import (
	"math"
	"slices"

	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
)

// Scenario builds a world and scripts what happens to it during a run.
type Scenario struct {
	Name  string
	About string
	build func(w *physics.World) *script
}

// script holds the scenario's scheduled actions, by the scenario's age in
// steps (stage.age).
type script struct {
	actions map[int64]func(w *physics.World, s *stage)
	steps   []int64 // the actions' steps, ascending (order)
	// every, when set, runs after every step with the scenario's age in
	// steps.
	every func(step int64)
}

// at makes f run once the scenario has run step steps.
func (s *script) at(step int64, f func(w *physics.World, st *stage)) {
	if s.actions == nil {
		s.actions = map[int64]func(*physics.World, *stage){}
	}
	s.actions[step] = f
	s.steps = nil
}

// order returns the actions' steps, ascending.
func (s *script) order() []int64 {
	if s.steps == nil && len(s.actions) > 0 {
		for k := range s.actions {
			s.steps = append(s.steps, k)
		}
		slices.Sort(s.steps)
	}
	return s.steps
}

// All lists every scenario, in the order the demo runs them.
var All = []Scenario{
	{"bridge", "40 planks pinned end to end between two static anchors", buildBridge},
	{"chain", "a 240-link hanging chain: the biggest frames, joint-predicted — one datagram each, or two and their parity on a lossy path", buildChain},
	{"ragdolls", "24 six-body ragdolls falling on a floor: many small islands, coalesced", buildRagdolls},
	{"break", "a bridge whose middle joint breaks at 2 s: the island splits", buildBreak},
	{"config", "a slide-jointed rope whose range changes at 2 s: config revision", buildConfig},
	{"handoff", "a chain whose authority passes to another sender at 2.5 s: epoch", buildHandoff},
	{"teleport", "a 30-link chain on the floor respawned 12 m away at 2 s: continuity segment", buildTeleport},
}

// Extra lists scenarios Pick knows but the demo does not run by default.
var Extra = []Scenario{
	{"fiedler", "900 boxes in stacks of three and a pusher sweeping through them end to end without pause, sleeping on: about a third move", buildFiedler},
	{"boxes", "900 loose boxes in stacks of three and a kinematic pusher sweeping through them, sleeping on", buildBoxes},
	{"bigworld", "10,100 bodies in 3,560 islands along a 2 km floor — carts, boxes, ragdolls, chains — and eight movers sweeping it: more than one observer's link carries", buildBigWorld},
}

// buildBoxes is a Fiedler-style scene: 300 stacks of three 0.5 m boxes on a
// floor, 1 m apart, each box its own island, and a kinematic pusher that
// travels along above them at 3 m/s and every two seconds dips to knock the
// top off the stack below it. Bodies at rest fall asleep, so at any moment
// most boxes sleep and a few tumble.
func buildBoxes(w *physics.World) *script {
	w.EnableSleep(0.5)
	w.AddGround(cp.Vector{X: -10, Y: 0}, cp.Vector{X: 460, Y: 0})
	for s := 0; s < 300; s++ {
		x := float64(s) * 1.5
		for k := 0; k < 3; k++ {
			w.AddBody(1, 0.5, 0.5, cp.Vector{X: x, Y: 0.25 + float64(k)*0.5}, 0, true)
		}
	}
	pusher := w.AddKinematic(0.6, 0.4, cp.Vector{X: -1, Y: 2.4})
	s := &script{}
	for step := int64(1); step < 60*150; step += 120 { // 150 s: one pass over the field
		s.at(step, func(*physics.World, *stage) { pusher.SetVelocity(3, -4) })   // dip 0.8 m in 0.2 s
		s.at(step+12, func(*physics.World, *stage) { pusher.SetVelocity(3, 4) }) // and back up
		s.at(step+24, func(*physics.World, *stage) { pusher.SetVelocity(3, 0) })
	}
	return s
}

// plankBridge hangs n planks between two static anchors on a V-shaped path
// whose ends are exactly where the anchors are, so the bridge starts
// consistent and then swings and settles under gravity.
func plankBridge(w *physics.World, n int, x0, y float64) []*physics.Joint {
	const plank = 0.5
	const sag = 0.35 // radians each half dips
	var ids []island.MemberID
	p := cp.Vector{X: x0, Y: y}
	for i := 0; i < n; i++ {
		a := -sag
		if i >= n/2 {
			a = sag
		}
		dir := cp.Vector{X: math.Cos(a), Y: math.Sin(a)}
		c := p.Add(dir.Mult(plank / 2))
		ids = append(ids, w.AddBody(2, plank, 0.1, c, a, false))
		p = p.Add(dir.Mult(plank))
	}
	var js []*physics.Joint
	js = append(js, w.AddJoint(physics.JointSpec{Kind: physics.Pivot, A: physics.Static, B: ids[0],
		AnchorA: cp.Vector{X: x0, Y: y}, AnchorB: cp.Vector{X: -plank / 2}}))
	for i := 1; i < n; i++ {
		js = append(js, w.AddJoint(physics.JointSpec{Kind: physics.Pin, A: ids[i-1], B: ids[i],
			AnchorA: cp.Vector{X: plank / 2}, AnchorB: cp.Vector{X: -plank / 2}}))
	}
	js = append(js, w.AddJoint(physics.JointSpec{Kind: physics.Pivot, A: ids[n-1], B: physics.Static,
		AnchorA: cp.Vector{X: plank / 2}, AnchorB: p}))
	// A gust: the left half starts moving up, the right half down.
	for i, id := range ids {
		v := 3.0
		if i >= n/2 {
			v = -3
		}
		w.Body(id).B.SetVelocity(0, v*math.Sin(math.Pi*float64(i)/float64(n)))
	}
	return js
}

// hangingChain hangs n links straight down from a static pivot and gives
// them a sideways swing that grows with depth, like a pushed pendulum.
func hangingChain(w *physics.World, n int, x0, y float64, link float64, kind physics.JointKind) ([]island.MemberID, []*physics.Joint) {
	var ids []island.MemberID
	for i := 0; i < n; i++ {
		c := cp.Vector{X: x0, Y: y - link/2 - float64(i)*link}
		ids = append(ids, w.AddBody(0.5, link, 0.05, c, -math.Pi/2, false))
	}
	js := []*physics.Joint{w.AddJoint(physics.JointSpec{Kind: physics.Pivot, A: physics.Static, B: ids[0],
		AnchorA: cp.Vector{X: x0, Y: y}, AnchorB: cp.Vector{X: -link / 2}})}
	for i := 1; i < n; i++ {
		spec := physics.JointSpec{Kind: kind, A: ids[i-1], B: ids[i], AnchorA: cp.Vector{X: link / 2}, AnchorB: cp.Vector{X: -link / 2}}
		if kind == physics.Slide {
			spec.Min, spec.Max = 0, 0.02
		}
		js = append(js, w.AddJoint(spec))
	}
	length := float64(n) * link
	for i, id := range ids {
		depth := (float64(i) + 0.5) * link
		w.Body(id).B.SetVelocity(2.5*depth/length*math.Sqrt(length), 0)
	}
	return ids, js
}

func buildBridge(w *physics.World) *script {
	plankBridge(w, 40, 0, 10)
	return &script{}
}

func buildChain(w *physics.World) *script {
	hangingChain(w, 240, 0, 52, 0.2, physics.Pivot)
	return &script{}
}

func buildRagdolls(w *physics.World) *script {
	w.AddGround(cp.Vector{X: -5, Y: 0}, cp.Vector{X: 60, Y: 0})
	for k := 0; k < 24; k++ {
		x := float64(k%8)*2.2 + 1
		y := 2 + float64(k/8)*2.5
		ragdoll(w, x, y)
	}
	return &script{}
}

func buildBreak(w *physics.World) *script {
	js := plankBridge(w, 40, 0, 10)
	s := &script{}
	s.at(120, func(w *physics.World, _ *stage) { w.RemoveJoint(js[20]) })
	return s
}

func buildConfig(w *physics.World) *script {
	_, js := hangingChain(w, 40, 0, 20, 0.25, physics.Slide)
	s := &script{}
	s.at(120, func(w *physics.World, _ *stage) {
		for _, j := range js[1:] {
			w.SetSlideRange(j, 0, 0.06) // the rope gets looser
		}
	})
	return s
}

func buildHandoff(w *physics.World) *script {
	ids, _ := hangingChain(w, 60, 0, 20, 0.25, physics.Pivot)
	s := &script{}
	s.at(150, func(w *physics.World, st *stage) { st.handOff(uint32(ids[0].Stable), 2) })
	return s
}

func buildTeleport(w *physics.World) *script {
	w.AddGround(cp.Vector{X: -20, Y: 0}, cp.Vector{X: 60, Y: 0})
	var ids []island.MemberID
	for i := 0; i < 30; i++ {
		ids = append(ids, w.AddBody(0.5, 0.25, 0.08, cp.Vector{X: float64(i) * 0.25, Y: 3 + float64(i%2)*0.01}, 0, true))
	}
	for i := 1; i < len(ids); i++ {
		w.AddJoint(physics.JointSpec{Kind: physics.Pivot, A: ids[i-1], B: ids[i], AnchorA: cp.Vector{X: 0.125}, AnchorB: cp.Vector{X: -0.125}})
	}
	s := &script{}
	s.at(120, func(w *physics.World, _ *stage) {
		// A respawn: the whole chain jumps 6 m up and 10 m along. Nothing
		// travels the space between; observers must not draw it.
		w.Teleport(uint32(ids[0].Stable), cp.Vector{X: 10, Y: 6})
	})
	return s
}

// buildFiedler is the scene of Glenn Fiedler's snapshot-compression
// articles in 2D: 300 stacks of three 0.5 m boxes side by side on a long
// floor, each box its own island, and a kinematic pusher that sweeps
// through the field end to end and back for as long as the run lasts,
// bobbing between the floor and above the stacks so that it scatters the
// boxes instead of bulldozing them into one heap. Boxes at rest fall
// asleep. About a third of the bodies change state between 20 Hz
// snapshots: the busy scene games are full of.
func buildFiedler(w *physics.World) *script {
	w.EnableSleep(0.5)
	end := float64(fiedlerStacks) * fiedlerPitch
	w.AddGround(cp.Vector{X: -5, Y: 0}, cp.Vector{X: end + 5, Y: 0})
	for s := 0; s < fiedlerStacks; s++ {
		x := float64(s) * fiedlerPitch
		for k := 0; k < 3; k++ {
			w.AddBody(1, 0.5, 0.5, cp.Vector{X: x, Y: 0.25 + float64(k)*0.5}, 0, true)
		}
	}
	pusher := w.AddKinematic(0.6, 0.6, cp.Vector{X: -2, Y: fiedlerLow})
	dir := 1.0
	s := &script{}
	s.every = func(step int64) {
		p := pusher.Position()
		switch {
		case p.X > end+1:
			dir = -1
		case p.X < -2:
			dir = 1
		}
		vy := fiedlerBob
		if (step/fiedlerHalf)%2 == 1 {
			vy = -vy
		}
		pusher.SetVelocity(dir*fiedlerSpeed, vy)
	}
	return s
}

// The Fiedler scene's knobs.
var (
	fiedlerStacks = 300
	fiedlerPitch  = 1.0       // m between stacks
	fiedlerLow    = 0.35      // m: the pusher's lowest centre
	fiedlerSpeed  = 6.0       // m/s along the floor
	fiedlerBob    = 8.0       // m/s up or down
	fiedlerHalf   = int64(12) // steps per half bob: 12 × 8/60 = 1.6 m of travel
)
