package codec

import (
	"encoding/binary"
	"math"
)

// TypePhysics is the control message that carries what an observer needs to
// continue an island with a local simulation.
const TypePhysics MessageType = 0x09

// DefaultMaxControlJoints caps the joints of one Physics message.
const DefaultMaxControlJoints = 1 << 14

// DefaultMaxControlSegments caps the static segments of one Physics message.
const DefaultMaxControlSegments = 1024

// JointKind is a joint's type in a Physics message.
type JointKind uint8

// Joint kinds. Every joint runs with the solver's defaults for force and
// bias (no force limit, 10 % of the error left after 1/60 s).
const (
	JointPivot JointKind = 0 // the two anchors coincide; Min and Max are 0
	JointPin   JointKind = 1 // the anchors keep the distance Min (= Max)
	JointSlide JointKind = 2 // the anchors' distance stays within [Min, Max]
)

// NoBody as a joint end is the world's static body: the anchor is then in
// world coordinates.
const NoBody = math.MaxUint32

// BodyMass is one member's inertia and collision box, in manifest order.
type BodyMass struct {
	Mass   float64 // kg, finite and > 0
	Moment float64 // moment of inertia about the centre of gravity, kg·m², finite and > 0
	// Width and Height are the body's collision box, metres, centred on its
	// centre of gravity and turning with it; both 0 means the body collides
	// with nothing. Friction is the box's coefficient (≥ 0).
	Width, Height, Friction float64
}

// Segment is a piece of the static world an island's bodies rest on or hit:
// a capsule from A to B (world metres) of the given radius.
type Segment struct {
	A, B     [2]float64
	Radius   float64 // metres, ≥ 0
	Friction float64 // ≥ 0
}

// JointSpec is one joint of an island. A and B are positions in the
// island's manifest (B may be NoBody); anchors are in body-local metres
// (world metres for NoBody).
type JointSpec struct {
	Kind             JointKind
	A, B             uint32
	AnchorA, AnchorB [2]float64 // x, y
	Min, Max         float64    // metres; see the kinds
}

// Physics is an island's physics, bound to one manifest (island, topology
// generation, config revision): the world settings that move it and its
// bodies' inertia, collision boxes and joints, and the static world they
// collide with. A local simulation of an island moves its bodies under
// gravity, damping, their joints and their contacts with each other and
// with the static world; other islands are not in it.
type Physics struct {
	Island, Topology, Config uint32
	// Step is the authority's fixed step, µs: 1 … 1 000 000.
	Step uint32
	// Iterations is the constraint solver's iterations per step: 1 … 1000.
	Iterations uint16
	// Gravity is the world's gravity, m/s² (x, y); finite.
	Gravity [2]float64
	// Damping is the fraction of velocity a body keeps per second, in
	// (0, 1]; 1 means none is lost.
	Damping float64
	Bodies  []BodyMass  // one per manifest member, in manifest order (≥ 1)
	Joints  []JointSpec // may be empty
	// Static is the static world geometry near the island (may be empty).
	// Contacts with other islands are not described.
	Static []Segment
}

// Bodies and joints are coded against the one before them (control version
// 6): a body equal to the one before is one byte, a joint whose kind,
// anchors and distances are the one before's and whose ends are the next
// pair (a + 1, b + 1; the static world stays) is one byte — a chain of any
// length costs about as much as two of its links. The encoding is
// canonical: an entry written out whole that could have been coded against
// the one before is malformed, so every description has one encoding (its
// digest, PhysicsDigest, is over it).
const (
	physicsHead = 4*4 + 2 + 3*8 + 4 // ids, step, iterations, gravity, damping, body count
	bodySize    = 5 * 8             // a body written out, after its flag byte
	jointEnds   = 4 + 4             // a joint's ends written out
	jointShape  = 1 + 6*8           // a joint's kind, anchors and distances written out
	segmentSize = 6 * 8
)

// Flags of a body and of a joint in a Physics message.
const (
	bodySame    = 1      // the body is the one before it
	jointShaped = 1 << 0 // kind, anchors, min and max are the joint before's
	jointNext   = 1 << 1 // the ends are the joint before's, each one body on
)

func (Physics) Type() MessageType { return TypePhysics }

func (m Physics) Size() int {
	n := ControlHeaderSize + physicsHead + 4 + 4 + segmentSize*len(m.Static)
	for i := range m.Bodies {
		n++
		if i == 0 || !sameBody(&m.Bodies[i], &m.Bodies[i-1]) {
			n += bodySize
		}
	}
	for i := range m.Joints {
		n++
		f := jointFlags(m.Joints, i)
		if f&jointNext == 0 {
			n += jointEnds
		}
		if f&jointShaped == 0 {
			n += jointShape
		}
	}
	return n
}

// sameBody reports whether two bodies have the same bits in every field.
func sameBody(a, b *BodyMass) bool {
	return math.Float64bits(a.Mass) == math.Float64bits(b.Mass) && math.Float64bits(a.Moment) == math.Float64bits(b.Moment) &&
		math.Float64bits(a.Width) == math.Float64bits(b.Width) && math.Float64bits(a.Height) == math.Float64bits(b.Height) &&
		math.Float64bits(a.Friction) == math.Float64bits(b.Friction)
}

// sameShape reports whether two joints have the same kind and the same bits
// in every anchor and distance.
func sameShape(a, b *JointSpec) bool {
	bits := func(j *JointSpec) [6]uint64 {
		return [6]uint64{math.Float64bits(j.AnchorA[0]), math.Float64bits(j.AnchorA[1]), math.Float64bits(j.AnchorB[0]),
			math.Float64bits(j.AnchorB[1]), math.Float64bits(j.Min), math.Float64bits(j.Max)}
	}
	return a.Kind == b.Kind && bits(a) == bits(b)
}

// nextEnds returns the ends that follow a joint's: each one body on, the
// static world staying.
func nextEnds(j *JointSpec) (a, b uint32) {
	a, b = j.A+1, j.B
	if b != NoBody {
		b++
	}
	return a, b
}

// jointFlags returns how joint i of js is coded against the one before.
func jointFlags(js []JointSpec, i int) byte {
	if i == 0 {
		return 0
	}
	var f byte
	if sameShape(&js[i], &js[i-1]) {
		f |= jointShaped
	}
	if a, b := nextEnds(&js[i-1]); js[i].A == a && js[i].B == b {
		f |= jointNext
	}
	return f
}

func appendF64(b []byte, vs ...float64) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func (m Physics) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = appendU32s(b, m.Island, m.Topology, m.Config, m.Step)
	b = binary.LittleEndian.AppendUint16(b, m.Iterations)
	b = appendF64(b, m.Gravity[0], m.Gravity[1], m.Damping)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Bodies)))
	for i := range m.Bodies {
		bd := &m.Bodies[i]
		if i > 0 && sameBody(bd, &m.Bodies[i-1]) {
			b = append(b, bodySame)
			continue
		}
		b = append(b, 0)
		b = appendF64(b, bd.Mass, bd.Moment, bd.Width, bd.Height, bd.Friction)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Joints)))
	for i := range m.Joints {
		j := &m.Joints[i]
		f := jointFlags(m.Joints, i)
		b = append(b, f)
		if f&jointNext == 0 {
			b = appendU32s(b, j.A, j.B)
		}
		if f&jointShaped == 0 {
			b = append(b, byte(j.Kind))
			b = appendF64(b, j.AnchorA[0], j.AnchorA[1], j.AnchorB[0], j.AnchorB[1], j.Min, j.Max)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Static)))
	for _, g := range m.Static {
		b = appendF64(b, g.A[0], g.A[1], g.B[0], g.B[1], g.Radius, g.Friction)
	}
	return b
}

func (p *ctlParser) f64() float64 { return math.Float64frombits(p.u64()) }

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// physics reads a Physics body, checking every value against the ranges
// its field documents.
func (p *ctlParser) physics(maxBodies, maxJoints, maxSegments int) (Physics, error) {
	var m Physics
	if err := p.need(physicsHead-4, "physics"); err != nil {
		return m, err
	}
	m.Island, m.Topology, m.Config = p.u32(), p.u32(), p.u32()
	at := p.off
	m.Step = p.u32()
	if m.Step == 0 || m.Step > 1_000_000 {
		return Physics{}, fail(ErrMalformed, at, "physics step")
	}
	at = p.off
	m.Iterations = p.u16()
	if m.Iterations == 0 || m.Iterations > 1000 {
		return Physics{}, fail(ErrMalformed, at, "physics iterations")
	}
	at = p.off
	m.Gravity[0], m.Gravity[1], m.Damping = p.f64(), p.f64(), p.f64()
	if !finite(m.Gravity[0], m.Gravity[1]) || !(m.Damping > 0 && m.Damping <= 1) {
		return Physics{}, fail(ErrMalformed, at, "physics world")
	}
	at = p.off
	n, err := p.count(1, maxBodies, "body count")
	if err != nil {
		return Physics{}, err
	}
	if n == 0 {
		return Physics{}, fail(ErrMalformed, at, "body count")
	}
	m.Bodies = make([]BodyMass, n)
	for i := range m.Bodies {
		at = p.off
		if err := p.need(1, "body"); err != nil {
			return Physics{}, err
		}
		switch p.u8() {
		case bodySame:
			if i == 0 {
				return Physics{}, fail(ErrMalformed, at, "body")
			}
			m.Bodies[i] = m.Bodies[i-1]
			continue
		case 0:
		default:
			return Physics{}, fail(ErrMalformed, at, "body flag")
		}
		if err := p.need(bodySize, "body"); err != nil {
			return Physics{}, err
		}
		bd := BodyMass{Mass: p.f64(), Moment: p.f64(), Width: p.f64(), Height: p.f64(), Friction: p.f64()}
		if i > 0 && sameBody(&bd, &m.Bodies[i-1]) { // canonical: coded as the body before
			return Physics{}, fail(ErrMalformed, at, "body")
		}
		if !finite(bd.Mass, bd.Moment) || bd.Mass <= 0 || bd.Moment <= 0 {
			return Physics{}, fail(ErrMalformed, at, "body inertia")
		}
		if !nonNegative(bd.Width, bd.Height, bd.Friction) || (bd.Width == 0) != (bd.Height == 0) {
			return Physics{}, fail(ErrMalformed, at, "body box")
		}
		m.Bodies[i] = bd
	}
	nj, err := p.count(1, maxJoints, "joint count")
	if err != nil {
		return Physics{}, err
	}
	if nj > 0 {
		m.Joints = make([]JointSpec, nj)
	}
	for i := range m.Joints {
		at = p.off
		if err := p.need(1, "joint"); err != nil {
			return Physics{}, err
		}
		f := p.u8()
		if f&^(jointShaped|jointNext) != 0 || (i == 0 && f != 0) {
			return Physics{}, fail(ErrMalformed, at, "joint flags")
		}
		var j JointSpec
		if f&jointNext != 0 {
			j.A, j.B = nextEnds(&m.Joints[i-1])
		} else {
			if err := p.need(jointEnds, "joint"); err != nil {
				return Physics{}, err
			}
			j.A, j.B = p.u32(), p.u32()
		}
		if f&jointShaped != 0 {
			prev := &m.Joints[i-1]
			j.Kind, j.AnchorA, j.AnchorB, j.Min, j.Max = prev.Kind, prev.AnchorA, prev.AnchorB, prev.Min, prev.Max
		} else {
			if err := p.need(jointShape, "joint"); err != nil {
				return Physics{}, err
			}
			j.Kind = JointKind(p.u8())
			j.AnchorA = [2]float64{p.f64(), p.f64()}
			j.AnchorB = [2]float64{p.f64(), p.f64()}
			j.Min, j.Max = p.f64(), p.f64()
		}
		m.Joints[i] = j
		if jointFlags(m.Joints, i) != f { // canonical: whatever can be coded against the joint before is
			return Physics{}, fail(ErrMalformed, at, "joint flags")
		}
		if !j.valid(uint32(n)) {
			return Physics{}, fail(ErrMalformed, at, "joint")
		}
	}
	ns, err := p.count(segmentSize, maxSegments, "segment count")
	if err != nil {
		return Physics{}, err
	}
	if ns > 0 {
		m.Static = make([]Segment, ns)
	}
	for i := range m.Static {
		at = p.off
		g := Segment{A: [2]float64{p.f64(), p.f64()}, B: [2]float64{p.f64(), p.f64()}, Radius: p.f64(), Friction: p.f64()}
		if !finite(g.A[0], g.A[1], g.B[0], g.B[1]) || !nonNegative(g.Radius, g.Friction) {
			return Physics{}, fail(ErrMalformed, at, "segment")
		}
		m.Static[i] = g
	}
	return m, nil
}

// nonNegative reports whether every value is finite and ≥ +0 (−0 is not:
// the encoding stays canonical).
func nonNegative(vs ...float64) bool {
	for _, v := range vs {
		if !finite(v) || v < 0 || math.Signbit(v) {
			return false
		}
	}
	return true
}

// valid reports whether j is a joint of an island of n bodies as the
// Physics message defines it: a known kind, two different ends (A a body,
// B a body or NoBody), finite values and the kind's distance rule.
func (j *JointSpec) valid(n uint32) bool {
	switch {
	case j.A >= n || j.A == j.B || (j.B >= n && j.B != NoBody):
		return false
	case !finite(j.AnchorA[0], j.AnchorA[1], j.AnchorB[0], j.AnchorB[1], j.Min, j.Max):
		return false
	}
	switch j.Kind {
	case JointPivot:
		return j.Min == 0 && j.Max == 0 && !math.Signbit(j.Min) && !math.Signbit(j.Max)
	case JointPin:
		return j.Min >= 0 && j.Min == j.Max && !math.Signbit(j.Min) && !math.Signbit(j.Max)
	case JointSlide:
		return j.Min >= 0 && j.Min <= j.Max && !math.Signbit(j.Min) && !math.Signbit(j.Max)
	}
	return false
}
