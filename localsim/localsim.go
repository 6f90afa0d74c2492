package localsim

import (
	"errors"
	"math"
	"slices"

	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
)

// DefaultMaxSteps caps the steps one continuation runs: at the demo's
// solver step (a 60 Hz step in four substeps), half a second past the seed
// frame, beyond any sane extrapolation cap.
const DefaultMaxSteps = 120

// ErrBadPhysics is returned for a description New cannot simulate.
var ErrBadPhysics = errors.New("localsim: bad physics description")

// Island is one island's local simulation: a cp space holding the island's
// bodies and joints, built from its Physics description the first time a
// continuation needs it (a description superseded before then costs no
// space), and re-seeded from frames. Not safe for concurrent use.
type Island struct {
	desc   codec.Physics
	n      int       // bodies
	space  *cp.Space // nil until the first continuation
	bodies []*cp.Body
	dt     float64 // seconds per step
	step   int64   // µs per step

	// The continuation in progress: seeded from frame seed at seedTime,
	// steps run since; prev and cur are the states after steps−1 and steps.
	seeded   bool
	seed     island.Key
	seedTime island.Time
	steps    int
	prev     []island.State
	cur      []island.State

	// proj solves Settle's projection; built on first use.
	proj *projector
	// seps keeps the joint separations of the last two frames asked for.
	seps [2]struct {
		key  island.Key
		t    island.Time
		v    [][2]float64
		ok   bool
		used uint64 // sepClock when last asked for
	}
	sepClock uint64
	scratch  []island.State // Separations' states and turns, reused
	turns    [][2]float64
	errSeps  [][2]float64 // JointErrors' separations, reused

	// The bridge in progress: from frame bridgeA to frame bridgeB, gap
	// holds b's states minus the continuation's at b's time. path, when
	// pathSteps > 0, holds that continuation after 0 … pathSteps steps, n
	// states each, so the bridge is read from it rather than simulated
	// again.
	bridging         bool
	bridgeA, bridgeB island.Key
	bridgeT          [2]island.Time
	gap              []island.State
	path             []island.State
	pathSteps        int
}

// A bridge keeps its continuation when it has at most maxTrace steps and
// (steps + 1) × bodies ≤ maxPath states (48 bytes each: at most 786 kB an
// island, and 65 states, 3 kB, a body). A longer one is bridged by
// simulating its first frame's continuation again, tick by tick.
const (
	maxTrace = 64
	maxPath  = 1 << 14
)

// traces reports whether a bridge of steps steps keeps its continuation.
func (s *Island) traces(steps int) bool { return steps <= maxTrace && (steps+1)*s.n <= maxPath }

// Bounds of what New simulates. A Physics message is hostile input like
// any other: values the codec accepts (any finite float) but that would
// overflow the solver's arithmetic are refused here.
const (
	maxMass   = 1e9 // kg and kg·m²; at least 1/maxMass
	maxLength = 1e5 // metres: anchors, boxes, ground, positions
	maxAccel  = 1e4 // m/s²: gravity
	maxSpeed  = 1e5 // m/s and rad/s: seeded velocities
)

// New returns the simulation p describes, or ErrBadPhysics for a
// description outside what it simulates: every value must be one
// ParseControl accepts, masses and moments within [1e-9, 1e9], lengths
// within 1e5 m and gravity within 1e4 m/s². It only checks p and keeps a
// copy of it (the caller may reuse p's slices): the cp space is built by
// the first continuation.
func New(p codec.Physics) (*Island, error) {
	if !simulatable(&p) {
		return nil, ErrBadPhysics
	}
	p.Bodies, p.Joints, p.Static = slices.Clone(p.Bodies), slices.Clone(p.Joints), slices.Clone(p.Static)
	return &Island{desc: p, n: len(p.Bodies), dt: float64(p.Step) / 1e6, step: int64(p.Step)}, nil
}

// build makes the cp space of the description New checked.
func (s *Island) build() {
	p, n := &s.desc, s.n
	s.space, s.bodies = physics.NewSpace(), make([]*cp.Body, n)
	s.prev, s.cur = make([]island.State, n), make([]island.State, n)
	s.space.SetGravity(cp.Vector{X: p.Gravity[0], Y: p.Gravity[1]})
	s.space.Iterations = uint(p.Iterations)
	s.space.SetDamping(p.Damping)
	for i, bd := range p.Bodies {
		s.bodies[i] = s.space.AddBody(physics.NewBody(bd.Mass, bd.Moment))
		if bd.Width > 0 && bd.Height > 0 {
			physics.AddBox(s.space, s.bodies[i], cp.Vector{X: bd.Width, Y: bd.Height}, bd.Friction)
		}
	}
	for _, g := range p.Static {
		physics.AddSegment(s.space, physics.Segment{A: cp.Vector{X: g.A[0], Y: g.A[1]}, B: cp.Vector{X: g.B[0], Y: g.B[1]},
			Radius: g.Radius, Friction: g.Friction})
	}
	for _, j := range p.Joints {
		a, b := s.bodies[j.A], s.space.StaticBody
		if j.B != codec.NoBody {
			b = s.bodies[j.B]
		}
		spec := physics.JointSpec{AnchorA: cp.Vector{X: j.AnchorA[0], Y: j.AnchorA[1]},
			AnchorB: cp.Vector{X: j.AnchorB[0], Y: j.AnchorB[1]}, Dist: j.Min, Min: j.Min, Max: j.Max}
		switch j.Kind {
		case codec.JointPivot:
			spec.Kind = physics.Pivot
		case codec.JointPin:
			spec.Kind = physics.Pin
		default: // codec.JointSlide; New refused any other kind
			spec.Kind = physics.Slide
		}
		s.space.AddConstraint(physics.NewConstraint(&spec, a, b))
	}
}

// simulatable reports whether p is within what New simulates.
func simulatable(p *codec.Physics) bool {
	n := uint32(len(p.Bodies))
	if n == 0 || p.Step == 0 || p.Iterations == 0 || !(p.Damping > 0 && p.Damping <= 1) ||
		!within(maxAccel, p.Gravity[0], p.Gravity[1]) {
		return false
	}
	for _, b := range p.Bodies {
		if !(b.Mass >= 1/maxMass && b.Mass <= maxMass && b.Moment >= 1/maxMass && b.Moment <= maxMass) ||
			!within(maxLength, b.Width, b.Height) || !within(maxMass, b.Friction) {
			return false
		}
	}
	for _, j := range p.Joints {
		if j.A >= n || (j.B >= n && j.B != codec.NoBody) || j.A == j.B || j.Kind > codec.JointSlide ||
			!within(maxLength, j.AnchorA[0], j.AnchorA[1], j.AnchorB[0], j.AnchorB[1], j.Min, j.Max) {
			return false
		}
	}
	for _, g := range p.Static {
		if !within(maxLength, g.A[0], g.A[1], g.B[0], g.B[1], g.Radius) || !within(maxMass, g.Friction) {
			return false
		}
	}
	return true
}

// within reports whether every value is finite and at most limit in size.
func within(limit float64, vs ...float64) bool {
	for _, v := range vs {
		if !(math.Abs(v) <= limit) { // false for NaN too
			return false
		}
	}
	return true
}

// sane reports whether a state is one the solver can start from or has
// produced: finite, within maxLength of the origin and maxSpeed in motion.
func sane(st *island.State) bool {
	return within(maxLength, st.X, st.Y) && within(maxSpeed, st.VX, st.VY, st.AngVel) && within(1e9, st.Angle)
}

// Describes reports whether the simulation was built for frames of this
// topology generation and config revision with n members.
func (s *Island) Describes(topology, config uint32, n int) bool {
	return s.desc.Topology == topology && s.desc.Config == config && s.n == n
}

// Same reports whether p is exactly the description the island was made
// from: a catch-up that repeats it need not replace the island, nor build
// its space again.
func (s *Island) Same(p *codec.Physics) bool {
	d := &s.desc
	return d.Island == p.Island && d.Topology == p.Topology && d.Config == p.Config && d.Step == p.Step &&
		d.Iterations == p.Iterations && d.Gravity == p.Gravity && d.Damping == p.Damping &&
		slices.Equal(d.Bodies, p.Bodies) && slices.Equal(d.Joints, p.Joints) && slices.Equal(d.Static, p.Static)
}

// Continue writes to out the island's states dt µs (> 0) after the frame
// key, sampled at authority time t, whose member states state(i) returns
// (i in manifest order, len(out) of them). It steps the island at the
// authority's fixed step from those states and blends the two steps around
// dt; asked again for the same frame and a later dt, it carries on from
// where it stopped, so a render tick costs what the authority spends on
// the island in the same time. Past maxSteps
// (zero: DefaultMaxSteps) it holds the last state. It reports false when
// out does not match the island.
func (s *Island) Continue(key island.Key, t island.Time, state func(i int) island.State, dt int64, maxSteps int, out []island.State) bool {
	if len(out) != s.n || dt <= 0 {
		return false
	}
	if !s.continuing(key, t, dt) && !s.reseed(key, t, state) {
		return false
	}
	want := s.stepsTo(dt, maxSteps)
	for s.steps < want {
		s.prev, s.cur = s.cur, s.prev
		s.space.Step(s.dt)
		s.steps++
		if !s.read(s.cur) {
			s.seeded = false // start again from the next frame asked for
			return false
		}
	}
	frac := 1.0
	if s.steps > 0 && int64(s.steps)*s.step > dt {
		frac = float64(dt-int64(s.steps-1)*s.step) / float64(s.step)
	}
	for i := range out {
		out[i] = blend(s.prev[i], s.cur[i], frac)
	}
	return true
}

// Bridge writes to out the island's states dt µs after frame a (at time
// ta, states stateA) on the way to frame b (at tb > ta, states stateB):
// the continuation from a at dt, moved by the share dt/(tb − ta) of the gap
// between b and the continuation at tb. At dt = tb − ta it is b exactly;
// joints stay as the continuation keeps them, give or take the gap's
// spread across a joint. The gap is worked out once per pair, from a
// continuation that is kept (up to 64 steps and 16 384 states) and read by
// later calls for the same pair at no further step; a longer one is
// simulated again, and later calls cost what Continue does. It reports
// false when out does not match the island or the pair is more than
// maxSteps (zero: DefaultMaxSteps) steps apart.
func (s *Island) Bridge(a island.Key, ta island.Time, stateA func(i int) island.State,
	b island.Key, tb island.Time, stateB func(i int) island.State, dt int64, maxSteps int, out []island.State) bool {
	span := int64(tb - ta)
	if len(out) != s.n || dt <= 0 || dt >= span || span > int64(orDefault(maxSteps))*s.step {
		return false
	}
	if s.gap == nil {
		s.gap = make([]island.State, s.n)
	}
	if !s.bridged(a, ta, b, tb) {
		s.bridging, s.pathSteps = false, 0
		if steps := s.stepsTo(span, maxSteps); s.traces(steps) {
			if !s.trace(a, ta, stateA, steps) {
				return false
			}
			s.pathAt(span, s.gap)
		} else if !s.Continue(a, ta, stateA, span, maxSteps, s.gap) {
			return false
		}
		for i := range s.gap {
			g, sb := &s.gap[i], stateB(i)
			*g = island.State{X: sb.X - g.X, Y: sb.Y - g.Y, Angle: sb.Angle - g.Angle,
				VX: sb.VX - g.VX, VY: sb.VY - g.VY, AngVel: sb.AngVel - g.AngVel}
		}
		s.bridging, s.bridgeA, s.bridgeB, s.bridgeT = true, a, b, [2]island.Time{ta, tb}
	}
	if s.pathSteps > 0 {
		s.pathAt(dt, out)
	} else if !s.Continue(a, ta, stateA, dt, maxSteps, out) {
		return false
	}
	f := float64(dt) / float64(span)
	for i := range out {
		o, g := &out[i], &s.gap[i]
		o.X += g.X * f
		o.Y += g.Y * f
		o.Angle += g.Angle * f
		o.VX += g.VX * f
		o.VY += g.VY * f
		o.AngVel += g.AngVel * f
	}
	return true
}

// trace seeds the continuation of frame key at time t and runs it steps
// steps, keeping the states after each in path: the continuation then
// stands at those steps, as Continue leaves it.
func (s *Island) trace(key island.Key, t island.Time, state func(i int) island.State, steps int) bool {
	if !s.reseed(key, t, state) {
		return false
	}
	s.path = slices.Grow(s.path[:0], (steps+1)*s.n)[:(steps+1)*s.n]
	copy(s.path, s.cur)
	for k := 1; k <= steps; k++ {
		s.space.Step(s.dt)
		if !s.read(s.path[k*s.n : (k+1)*s.n]) {
			s.seeded = false
			return false
		}
	}
	if steps > 0 {
		copy(s.prev, s.path[(steps-1)*s.n:steps*s.n])
		copy(s.cur, s.path[steps*s.n:])
	}
	s.steps, s.pathSteps = steps, steps
	return true
}

// pathAt writes to out the traced continuation at dt (0 < dt, within the
// steps traced), blending the two steps around it as Continue does.
func (s *Island) pathAt(dt int64, out []island.State) {
	k := int((dt + s.step - 1) / s.step)
	frac := 1.0
	if int64(k)*s.step > dt {
		frac = float64(dt-int64(k-1)*s.step) / float64(s.step)
	}
	lo, hi := s.path[(k-1)*s.n:k*s.n], s.path[k*s.n:(k+1)*s.n]
	for i := range out {
		out[i] = blend(lo[i], hi[i], frac)
	}
}

// StepsFor returns how many steps Continue would run to reach dt past
// frame key at time t from where the simulation stands (zero when it is
// there already): what the call costs, for a caller with a budget.
func (s *Island) StepsFor(key island.Key, t island.Time, dt int64, maxSteps int) int {
	if s.continuing(key, t, dt) {
		return max(s.stepsTo(dt, maxSteps)-s.steps, 0)
	}
	return WarmSteps + s.stepsTo(dt, maxSteps)
}

// BridgeStepsFor is StepsFor for Bridge: the steps to work out the pair's
// gap, if not known yet, and then to continue to dt.
func (s *Island) BridgeStepsFor(a island.Key, ta island.Time, b island.Key, tb island.Time, dt int64, maxSteps int) int {
	switch steps := s.stepsTo(int64(tb-ta), maxSteps); {
	case s.bridged(a, ta, b, tb) && s.pathSteps > 0:
		return 0 // read from the traced continuation
	case s.bridged(a, ta, b, tb):
		return s.StepsFor(a, ta, dt, maxSteps)
	case s.traces(steps):
		return WarmSteps + steps
	}
	return s.StepsFor(a, ta, int64(tb-ta), maxSteps) + WarmSteps + s.stepsTo(dt, maxSteps)
}

// continuing reports whether the continuation in progress is frame key's
// at time t and has not run past dt, so that reaching dt carries it on.
func (s *Island) continuing(key island.Key, t island.Time, dt int64) bool {
	return s.seeded && s.seed == key && s.seedTime == t && int64(s.steps-1)*s.step <= dt
}

// bridged reports whether the gap of pair (a, b) is worked out already.
func (s *Island) bridged(a island.Key, ta island.Time, b island.Key, tb island.Time) bool {
	return s.bridging && s.bridgeA == a && s.bridgeB == b && s.bridgeT == [2]island.Time{ta, tb}
}

// stepsTo returns the steps from the frame that reach dt, at most maxSteps
// (zero: DefaultMaxSteps).
func (s *Island) stepsTo(dt int64, maxSteps int) int {
	return min(int((dt+s.step-1)/s.step), orDefault(maxSteps))
}

func orDefault(maxSteps int) int {
	if maxSteps <= 0 {
		return DefaultMaxSteps
	}
	return maxSteps
}

// WarmSteps is how many solver steps a continuation spends at its frame's
// state before it starts: the authority's solver carries its impulses from
// step to step, which no frame carries, and a long chain started cold sags
// away from it in the first steps. Over every demo scenario 100 ms on,
// warmed continuations are 0.20 m off the authority in all, cold ones
// 0.26 m (straight lines: 2.6 m); the swinging 240-link chain mid-run is
// 4 mm off warmed against 28 mm cold, though early in its run, whipping
// hardest, 39 mm against 22 mm.
const WarmSteps = 8

// reseed puts every body at the frame's state, warms the solver there and
// forgets the steps run.
func (s *Island) reseed(key island.Key, t island.Time, state func(i int) island.State) bool {
	s.seeded = false
	for i := range s.n {
		if st := state(i); !sane(&st) {
			return false // far out or too fast to simulate: the caller goes straight
		}
	}
	if s.space == nil {
		s.build()
	}
	put := func() {
		for i, b := range s.bodies {
			st := state(i)
			b.SetPosition(cp.Vector{X: st.X, Y: st.Y})
			b.SetAngle(st.Angle)
			b.SetVelocity(st.VX, st.VY)
			b.SetAngularVelocity(st.AngVel)
			s.cur[i] = st
		}
	}
	// Warm the solver at the frame's state: step, put the bodies back,
	// again. The joint and contact impulses it keeps then start near the
	// ones the authority's solver carried into this frame.
	put()
	for range WarmSteps {
		s.space.Step(s.dt)
		put()
	}
	copy(s.prev, s.cur)
	s.seeded, s.seed, s.seedTime, s.steps = true, key, t, 0
	return true
}

// read copies the bodies' states to dst and reports whether they are all
// sane (a solver blown up by its input stops there).
func (s *Island) read(dst []island.State) bool {
	ok := true
	for i, b := range s.bodies {
		p, v := b.Position(), b.Velocity()
		dst[i] = island.State{X: p.X, Y: p.Y, Angle: b.Angle(), VX: v.X, VY: v.Y, AngVel: b.AngularVelocity()}
		ok = ok && sane(&dst[i])
	}
	return ok
}

// blend moves a toward b by f (0 … 1), field by field.
func blend(a, b island.State, f float64) island.State {
	return island.State{
		X: a.X + (b.X-a.X)*f, Y: a.Y + (b.Y-a.Y)*f, Angle: a.Angle + (b.Angle-a.Angle)*f,
		VX: a.VX + (b.VX-a.VX)*f, VY: a.VY + (b.VY-a.VY)*f, AngVel: a.AngVel + (b.AngVel-a.AngVel)*f,
	}
}

// Built reports whether the island's cp space is built: it is from the
// first continuation or bridge until Release.
func (s *Island) Built() bool { return s.space != nil }

// Release lets go of the cp space and every buffer a continuation or a
// bridge filled — about half a megabyte an island whatever its size, and
// up to 786 kB more of a kept bridge — and keeps the description, so the
// next continuation builds a fresh space as the first one did: it runs
// exactly as the first continuation of a Copy would. Settle's solver is
// kept (it is sized by the joints alone). For a caller that bounds its
// memory: a space that has not run for a while costs as much as one in
// use.
func (s *Island) Release() {
	s.space, s.bodies, s.prev, s.cur = nil, nil, nil, nil
	s.seeded, s.steps = false, 0
	s.bridging, s.gap, s.path, s.pathSteps = false, nil, nil, 0
}

// Bodies returns how many bodies the simulation holds.
func (s *Island) Bodies() int { return s.n }

// Copy returns a simulation of the same description whose space is not
// built yet: a continuation in progress is not copied (cp spaces cannot
// be), so the copy's first continuation seeds afresh from its frame.
func (s *Island) Copy() *Island {
	return &Island{desc: s.desc, n: s.n, dt: s.dt, step: s.step}
}
