package physics

import (
	"math"
	"slices"
	"sync"

	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/island"
)

// JointKind names the constraint types the world replicates and measures.
type JointKind uint8

const (
	Pivot JointKind = iota // anchors coincide
	Pin                    // anchors keep a fixed distance
	Slide                  // anchor distance stays in [Min, Max]
)

func (k JointKind) String() string { return [...]string{"pivot", "pin", "slide"}[k] }

// Static names the world's static body as a joint end: it joins no island.
var Static = island.MemberID{Stable: 0, Generation: 0}

// JointSpec is everything an observer needs to rebuild and measure a joint:
// which bodies, where on them, and its parameters. Anchors are in body-local
// metres; for the static body they are world coordinates.
type JointSpec struct {
	ID               uint32
	Kind             JointKind
	A, B             island.MemberID // B may be Static
	AnchorA, AnchorB cp.Vector
	Dist             float64 // Pin: rest distance, metres
	Min, Max         float64 // Slide: allowed distance range, metres
}

// Joint is one live constraint of the world.
type Joint struct {
	Spec JointSpec
	c    *cp.Constraint
}

// Body is one dynamic body with its stable identity.
type Body struct {
	ID island.MemberID
	B  *cp.Body
	// Box is the body's collision box (width, height, metres; zero: it
	// collides with nothing) and Friction its coefficient.
	Box      cp.Vector
	Friction float64
}

// Segment is a piece of static ground: a capsule from A to B.
type Segment struct {
	A, B             cp.Vector
	Radius, Friction float64
}

// Island is the authority's view of one constraint island: its members in
// manifest order and its version counters.
type Island struct {
	ID       uint32
	Topology uint32          // bumps on any member or joint change
	Config   uint32          // bumps on constraint parameter changes
	Epoch    uint32          // bumps on authority hand-off
	Owner    island.SenderID // the sender that broadcasts it
	Segment  uint32          // bumps on teleport
	Seq      uint32          // last frame sequence sent
	Members  []*Body         // ascending MemberID
	Joints   []*Joint
	Fresh    bool // the next frame is the island's first under this topology: Initial
}

// Manifest returns the island's topology manifest.
func (is *Island) Manifest() island.Manifest {
	m := island.Manifest{Island: is.ID, Topology: is.Topology, Config: is.Config, Members: make([]island.MemberID, len(is.Members))}
	for i, b := range is.Members {
		m.Members[i] = b.ID
	}
	return m
}

// Lease returns the island's authority lease.
func (is *Island) Lease() island.Lease {
	return island.Lease{Island: is.ID, Epoch: is.Epoch, Owner: is.Owner}
}

// World wraps a cp.Space stepped at a fixed rate. Every dynamic body has a
// stable id; islands are the connected components of dynamic bodies linked by
// constraints, recomputed whenever joints are added, removed or broken.
type World struct {
	Space    *cp.Space
	StepHz   int
	steps    int64
	bodies   map[uint64]*Body
	order    []*Body
	joints   []*Joint
	ground   []Segment
	nextBody uint64
	nextJ    uint32
	islands  map[uint32]*Island
	retired  map[uint32]*Island // islands whose id disappeared; revived with their counters
	ordered  []*Island
	dirty    bool
	// TimeBase is added to every authority time the world reports, so a
	// world started later on a running authority timeline continues it. Zero
	// means the world's time starts at 0.
	TimeBase island.Time
	// StepBase is how many steps of its authority's timeline went before
	// the world's first step: its time and its sampler's cadence count them
	// as if the world had run them, so that worlds built at different steps
	// — or by different authorities of one timeline — sample at the same
	// instants. Zero means the timeline starts with the world.
	StepBase int64
	// DefaultOwner is the sender that owns newly formed islands.
	DefaultOwner island.SenderID
	// DefaultEpoch is the epoch of newly formed islands. Zero means 1. An
	// authority of a cluster sets it to its shard's epoch (package
	// cluster), so that every island it forms is fenced by its claim.
	DefaultEpoch uint32
	// Events receives topology changes since the last call to TakeEvents.
	events []Event
}

// EventKind names what changed in the world.
type EventKind uint8

const (
	IslandFormed  EventKind = iota // a new island id appeared
	IslandChanged                  // topology or config of an island changed
	IslandGone                     // an island id disappeared (merged or emptied)
	LeaseChanged                   // an island's epoch/owner changed
	SegmentCut                     // an island jumped: a new continuity segment starts at Event.Time
)

// Event is one change an observer must learn reliably.
type Event struct {
	Kind    EventKind
	Island  uint32
	Segment uint32      // SegmentCut: the new segment
	Time    island.Time // SegmentCut: the authority time it starts at
}

// cpConstruct serializes creating cp bodies and spaces: cp/v2 numbers bodies
// with an unguarded package-level counter, so worlds built on several
// goroutines at once would race on it (the number only names a body; it
// changes no physics).
var cpConstruct sync.Mutex

// NewWorld returns an empty world with gravity and the given step rate.
func NewWorld(stepHz int) *World {
	s := NewSpace()
	s.SetGravity(cp.Vector{X: 0, Y: -9.8})
	s.Iterations = 30
	return &World{Space: s, StepHz: stepHz, bodies: map[uint64]*Body{}, islands: map[uint32]*Island{}, retired: map[uint32]*Island{}, nextBody: 1, nextJ: 1, DefaultOwner: 1}
}

// Time returns the simulation time in microseconds: TimeBase plus the
// timeline's steps so far (StepBase and the steps run).
func (w *World) Time() island.Time {
	return w.TimeBase + island.Time((w.StepBase+w.steps)*1_000_000/int64(w.StepHz))
}

// SetIDBase makes the next body's stable id first (and the following ones
// count up from it), so several worlds on one authority timeline never share
// an identity or an island id. Call it before adding bodies.
func (w *World) SetIDBase(first uint64) { w.nextBody = first }

// Steps returns how many steps have run.
func (w *World) Steps() int64 { return w.steps }

// AddBody adds a dynamic box body of the given size (metres) and mass (kg)
// at pos and returns its stable identity. collide adds a collision shape.
func (w *World) AddBody(mass, width, height float64, pos cp.Vector, angle float64, collide bool) island.MemberID {
	b := NewBody(mass, cp.MomentForBox(mass, width, height))
	b.SetPosition(pos)
	b.SetAngle(angle)
	w.Space.AddBody(b)
	body := &Body{B: b}
	if collide {
		body.Box, body.Friction = cp.Vector{X: width, Y: height}, 0.7
		AddBox(w.Space, b, body.Box, body.Friction)
	}
	id := island.MemberID{Stable: w.nextBody}
	w.nextBody++
	body.ID = id
	w.bodies[id.Stable] = body
	w.order = append(w.order, body)
	w.dirty = true
	return id
}

// AddKinematic adds a kinematic box of the given size at pos: the scene
// moves it (SetVelocity), bodies collide with it, and it joins no island (it
// is not replicated).
func (w *World) AddKinematic(width, height float64, pos cp.Vector) *cp.Body {
	cpConstruct.Lock()
	b := cp.NewKinematicBody()
	cpConstruct.Unlock()
	b.SetPosition(pos)
	w.Space.AddBody(b)
	sh := w.Space.AddShape(cp.NewBox(b, width, height, 0))
	sh.SetFriction(0.7)
	return b
}

// EnableSleep lets bodies at rest for idle seconds fall asleep: a sleeping
// body's state does not change, so replicating it costs (almost) nothing.
func (w *World) EnableSleep(idle float64) {
	w.Space.SleepTimeThreshold = idle
}

// AddGround adds a static segment from a to b for bodies to land on.
func (w *World) AddGround(a, b cp.Vector) {
	g := Segment{A: a, B: b, Radius: 0.1, Friction: 1}
	AddSegment(w.Space, g)
	w.ground = append(w.ground, g)
}

// Ground returns the static segments added so far.
func (w *World) Ground() []Segment { return w.ground }

// AddBox gives body b a collision box of size box (width, height) with the
// given friction. The authority and an observer's local simulation shape
// their bodies with it.
func AddBox(s *cp.Space, b *cp.Body, box cp.Vector, friction float64) {
	sh := s.AddShape(cp.NewBox(b, box.X, box.Y, 0))
	sh.SetFriction(friction)
}

// AddSegment adds static ground g to s.
func AddSegment(s *cp.Space, g Segment) {
	sh := s.AddShape(cp.NewSegment(s.StaticBody, g.A, g.B, g.Radius))
	sh.SetFriction(g.Friction)
}

// Body returns the body with stable id, or nil.
func (w *World) Body(id island.MemberID) *Body { return w.bodies[id.Stable] }

func (w *World) cpBody(id island.MemberID) *cp.Body {
	if id == Static {
		return w.Space.StaticBody
	}
	return w.bodies[id.Stable].B
}

// AddJoint adds a constraint from spec (its ID is assigned) and returns it.
func (w *World) AddJoint(spec JointSpec) *Joint {
	spec.ID = w.nextJ
	w.nextJ++
	a, b := w.cpBody(spec.A), w.cpBody(spec.B)
	if spec.Kind == Pin { // a pin keeps the distance its anchors have now
		spec.Dist = a.LocalToWorld(spec.AnchorA).Distance(b.LocalToWorld(spec.AnchorB))
	}
	c := NewConstraint(&spec, a, b)
	w.Space.AddConstraint(c)
	j := &Joint{Spec: spec, c: c}
	w.joints = append(w.joints, j)
	w.dirty = true
	return j
}

// NewConstraint builds the constraint spec describes between a and b (b
// may be a space's static body): a pin keeps spec.Dist, a slide spec.Min …
// spec.Max. The bodies it joins do not collide with each other. The
// authority and an observer's local simulation build their joints with it,
// so both run the same constraint.
func NewConstraint(spec *JointSpec, a, b *cp.Body) *cp.Constraint {
	var c *cp.Constraint
	switch spec.Kind {
	case Pin:
		c = cp.NewPinJoint(a, b, spec.AnchorA, spec.AnchorB)
		c.Class.(*cp.PinJoint).Dist = spec.Dist
	case Slide:
		c = cp.NewSlideJoint(a, b, spec.AnchorA, spec.AnchorB, spec.Min, spec.Max)
	default:
		c = cp.NewPivotJoint2(a, b, spec.AnchorA, spec.AnchorB)
	}
	c.SetCollideBodies(false)
	return c
}

// NewSpace returns an empty cp space with the world's solver settings
// (gravity, iterations) left to the caller. Building spaces and bodies goes
// through NewSpace and NewBody so that worlds and local simulations on
// several goroutines never race on cp's body numbering.
func NewSpace() *cp.Space {
	cpConstruct.Lock()
	defer cpConstruct.Unlock()
	return cp.NewSpace()
}

// NewBody returns a dynamic cp body of the given mass (kg) and moment of
// inertia (kg·m²).
func NewBody(mass, moment float64) *cp.Body {
	cpConstruct.Lock()
	defer cpConstruct.Unlock()
	return cp.NewBody(mass, moment)
}

// RemoveJoint removes (breaks) a joint; its island may split.
func (w *World) RemoveJoint(j *Joint) {
	w.Space.RemoveConstraint(j.c)
	if i := slices.Index(w.joints, j); i >= 0 {
		w.joints = slices.Delete(w.joints, i, i+1)
	}
	w.dirty = true
}

// SetSlideRange changes a slide joint's range: its island's config revision bumps.
func (w *World) SetSlideRange(j *Joint, min, max float64) {
	sj := j.c.Class.(*cp.SlideJoint)
	sj.Min, sj.Max = min, max
	j.Spec.Min, j.Spec.Max = min, max
	w.refresh()
	if is := w.islandOf(j.Spec.A); is != nil {
		is.Config++
		is.Fresh = true
		w.events = append(w.events, Event{Kind: IslandChanged, Island: is.ID})
	}
}

// Teleport moves every member of an island by d: a discontinuity, so its
// continuity segment bumps.
func (w *World) Teleport(islandID uint32, d cp.Vector) {
	w.refresh()
	is := w.islands[islandID]
	if is == nil {
		return
	}
	for _, b := range is.Members {
		b.B.SetPosition(b.B.Position().Add(d))
	}
	is.Segment++
	w.events = append(w.events, Event{Kind: SegmentCut, Island: is.ID, Segment: is.Segment, Time: w.Time()})
}

// HandOff moves an island's authority to owner: its epoch bumps and the next
// frame is Initial.
func (w *World) HandOff(islandID uint32, owner island.SenderID) {
	w.refresh()
	if is := w.islands[islandID]; is != nil {
		is.Epoch++
		is.Owner = owner
		is.Fresh = true
		w.events = append(w.events, Event{Kind: LeaseChanged, Island: is.ID})
	}
}

// Substeps is how many solver steps make one simulation step: long chains
// need the smaller solver step to hold their joints.
const Substeps = 4

// Step advances the simulation by one fixed step.
func (w *World) Step() {
	dt := 1 / float64(w.StepHz) / Substeps
	for range Substeps {
		w.Space.Step(dt)
	}
	w.steps++
}

// Islands returns the current islands in ascending id order.
func (w *World) Islands() []*Island {
	w.refresh()
	return w.ordered
}

// Island returns one island by id.
func (w *World) Island(id uint32) *Island {
	w.refresh()
	return w.islands[id]
}

// TakeEvents returns and clears the topology events since the last call.
func (w *World) TakeEvents() []Event {
	w.refresh()
	ev := w.events
	w.events = nil
	return ev
}

func (w *World) islandOf(id island.MemberID) *Island {
	for _, is := range w.ordered {
		for _, b := range is.Members {
			if b.ID == id {
				return is
			}
		}
	}
	return nil
}

// refresh recomputes islands after a structural change: connected
// components over dynamic bodies and joints between two dynamic bodies (the
// static body joins none). An island's id is its smallest member stable id,
// so a split keeps the id on the part holding that member and a merge keeps
// the smaller id. A changed member or joint set bumps the topology.
func (w *World) refresh() {
	if !w.dirty {
		return
	}
	w.dirty = false
	parent := map[uint64]uint64{}
	find := func(x uint64) uint64 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, b := range w.order {
		parent[b.ID.Stable] = b.ID.Stable
	}
	for _, j := range w.joints {
		if j.Spec.A == Static || j.Spec.B == Static {
			continue
		}
		ra, rb := find(j.Spec.A.Stable), find(j.Spec.B.Stable)
		if ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	groups := map[uint64][]*Body{}
	var roots []uint64
	for _, b := range w.order {
		r := find(b.ID.Stable)
		if groups[r] == nil {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], b)
	}
	jointsOf := map[uint64][]*Joint{}
	for _, j := range w.joints {
		end := j.Spec.A
		if end == Static {
			end = j.Spec.B
		}
		if end == Static {
			continue
		}
		r := find(end.Stable)
		jointsOf[r] = append(jointsOf[r], j)
	}
	slices.Sort(roots)
	next := map[uint32]*Island{}
	var ordered []*Island
	for _, root := range roots {
		members := groups[root]
		slices.SortFunc(members, func(a, b *Body) int {
			if a.ID.Less(b.ID) {
				return -1
			}
			return 1
		})
		id := uint32(members[0].ID.Stable)
		joints := jointsOf[root]
		is := w.islands[id]
		if is == nil && w.retired[id] != nil {
			// The id comes back: continue its counters so no observer
			// mistakes the new island for an old stream.
			is = w.retired[id]
			delete(w.retired, id)
			is.Topology++
			is.Fresh = true
			w.events = append(w.events, Event{Kind: IslandFormed, Island: id})
		} else if is == nil {
			is = &Island{ID: id, Topology: 1, Config: 1, Epoch: max(w.DefaultEpoch, 1), Owner: w.DefaultOwner, Fresh: true}
			w.events = append(w.events, Event{Kind: IslandFormed, Island: id})
		} else if !slices.Equal(is.Members, members) || !slices.Equal(is.Joints, joints) {
			is.Topology++
			is.Fresh = true
			w.events = append(w.events, Event{Kind: IslandChanged, Island: id})
		}
		is.Members, is.Joints = members, joints
		next[id] = is
		ordered = append(ordered, is)
	}
	for _, is := range w.ordered {
		if next[is.ID] == nil {
			w.retired[is.ID] = is
			w.events = append(w.events, Event{Kind: IslandGone, Island: is.ID})
		}
	}
	slices.SortFunc(ordered, func(a, b *Island) int { return int(a.ID) - int(b.ID) })
	w.islands, w.ordered = next, ordered
}

// Sample captures the whole island at the current simulation time into dst,
// reusing dst.Members. Every member is read at the same step.
func (w *World) Sample(is *Island, dst *island.Frame) {
	dst.Sender = is.Owner
	dst.Key = island.Key{Island: is.ID, Epoch: is.Epoch, Topology: is.Topology, Config: is.Config, Seq: is.Seq}
	dst.Time = w.Time()
	dst.Segment = is.Segment
	dst.Flags = 0
	dst.Members = dst.Members[:0]
	for _, b := range is.Members {
		p, v := b.B.Position(), b.B.Velocity()
		dst.Members = append(dst.Members, island.Member{ID: b.ID, State: island.State{
			X: p.X, Y: p.Y, Angle: b.B.Angle(), VX: v.X, VY: v.Y, AngVel: b.B.AngularVelocity()}})
	}
}

// PoseSource gives a body's displayed pose; ok is false when it is not shown.
type PoseSource func(id island.MemberID) (x, y, angle float64, ok bool)

// JointError returns how far a joint's displayed poses violate it, metres:
// for a pivot the anchor separation, for a pin the deviation from its rest
// distance, for a slide the excursion outside [Min, Max].
func JointError(spec *JointSpec, pose PoseSource) (float64, bool) {
	pa, ok := anchor(spec.A, spec.AnchorA, pose)
	if !ok {
		return 0, false
	}
	pb, ok := anchor(spec.B, spec.AnchorB, pose)
	if !ok {
		return 0, false
	}
	d := math.Hypot(pa.X-pb.X, pa.Y-pb.Y)
	switch spec.Kind {
	case Pin:
		return math.Abs(d - spec.Dist), true
	case Slide:
		return max(0, spec.Min-d, d-spec.Max), true
	}
	return d, true
}

func anchor(id island.MemberID, local cp.Vector, pose PoseSource) (cp.Vector, bool) {
	if id == Static {
		return local, true
	}
	x, y, a, ok := pose(id)
	if !ok {
		return cp.Vector{}, false
	}
	s, c := math.Sincos(a)
	return cp.Vector{X: x + c*local.X - s*local.Y, Y: y + s*local.X + c*local.Y}, true
}

// Restore sets the pose and velocity of every body whose id last holds —
// a world taking over islands another authority stepped continues them
// from the newest state that authority sent — and wakes it. Bodies last
// does not name keep theirs. It returns how many bodies it set.
func (w *World) Restore(last func(id island.MemberID) (island.State, bool)) int {
	n := 0
	for _, b := range w.bodies {
		s, ok := last(b.ID)
		if !ok || !s.Finite() {
			continue
		}
		b.B.SetPosition(cp.Vector{X: s.X, Y: s.Y})
		b.B.SetAngle(s.Angle)
		b.B.SetVelocity(s.VX, s.VY)
		b.B.SetAngularVelocity(s.AngVel)
		b.B.Activate()
		n++
	}
	if n > 0 {
		w.dirty = true
	}
	return n
}
