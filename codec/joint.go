package codec

import (
	"math"
	"math/bits"

	"github.com/islandsync/islandsync/quant"
)

// Joint prediction. A member of an island that hangs on another member
// by a pivot joint — a chain link on the link before it, a ragdoll's
// forearm on its upper arm — sits where the joint puts it: its centre is
// the other member's centre plus that member's anchor turned by its angle,
// less its own anchor turned by its own angle; its velocity follows from
// both angular velocities the same way. A keyframe or delta of such an
// island codes those members' positions and velocities against that
// prediction, made from the members restored before them in the same
// frame, rather than against the member before (a keyframe) or the
// baseline's motion (a delta): what is left is the joint's own error, a
// quantum or two, instead of everything the body did in the interval.
// Angles and angular velocities are coded as ever.
// Both ends compute the prediction in integers only (a cosine table and
// fixed-point anchors), so every architecture restores the same bits.

// Fixed-point units of the joint predictor.
const (
	anchorBits = 20      // anchors are held in 2⁻²⁰ m
	trigBits   = 24      // cosines and sines are held in 2⁻²⁴
	maxAnchor  = 1 << 12 // m: a body anchor farther from its centre links nothing
	maxWorld   = 1 << 30 // m: a world anchor farther from the origin links nothing
	maxSpin    = 1 << 24 // quanta of angular velocity: faster, the member is predicted from its baseline
	// twoPi61 is round(2π·2⁶¹).
	twoPi61 = 14488038916154245685
)

// Links is how the members of one island hang on each other for joint
// prediction, built from the island's Physics (NewLinks): for each member
// in manifest order, the earlier member — or the static world — it hangs
// on by a pivot joint, if any, and the two anchors. Links are immutable
// and may be shared.
type Links struct {
	// Island, Topology and Config are the Physics' (and so the frames')
	// the links belong to.
	Island, Topology, Config uint32
	links                    []link
}

// link is one member's parent. parent ≥ 0 is a member position; linkWorld
// is the static world (own anchor b, world point w); linkNone is no
// parent.
type link struct {
	parent int32
	a, b   [2]int64 // parent's anchor and own anchor, body-local, 2⁻²⁰ m
	w      [2]int64 // world anchor, 2⁻²⁰ m (linkWorld)
}

const (
	linkWorld = -1
	linkNone  = -2
)

// NewLinks returns the links of p's island: each member's first pivot
// joint, in p.Joints order, to an earlier member or to the static world.
// Joints of other kinds, joints of a member to itself and anchors not
// finite or too far (body anchors beyond 4096 m of the centre, world
// anchors beyond 2³⁰ m) link nothing. It returns nil when no member hangs
// on anything.
func NewLinks(p *Physics) *Links {
	n := len(p.Bodies)
	ls := make([]link, n)
	for i := range ls {
		ls[i].parent = linkNone
	}
	any := false
	for _, j := range p.Joints {
		if j.Kind != JointPivot || int(j.A) >= n || (j.B != NoBody && int(j.B) >= n) || j.A == j.B {
			continue
		}
		var l link
		var child uint32
		var ok bool
		switch {
		case j.B == NoBody:
			child, l.parent = j.A, linkWorld
			var okB, okW bool
			l.b, okB = fixAnchor(j.AnchorA, maxAnchor)
			l.w, okW = fixAnchor(j.AnchorB, maxWorld)
			ok = okB && okW
		case j.A < j.B:
			child, l.parent = j.B, int32(j.A)
			var okA, okB bool
			l.a, okA = fixAnchor(j.AnchorA, maxAnchor)
			l.b, okB = fixAnchor(j.AnchorB, maxAnchor)
			ok = okA && okB
		default:
			child, l.parent = j.A, int32(j.B)
			var okA, okB bool
			l.a, okA = fixAnchor(j.AnchorB, maxAnchor)
			l.b, okB = fixAnchor(j.AnchorA, maxAnchor)
			ok = okA && okB
		}
		if !ok || ls[child].parent != linkNone {
			continue
		}
		ls[child], any = l, true
	}
	if !any {
		return nil
	}
	return &Links{Island: p.Island, Topology: p.Topology, Config: p.Config, links: ls}
}

// Members returns how many members the links describe.
func (l *Links) Members() int { return len(l.links) }

// fixAnchor returns v in 2⁻²⁰ m, rounded half away from zero, and whether
// both components are finite and within lim metres.
func fixAnchor(v [2]float64, lim float64) ([2]int64, bool) {
	var out [2]int64
	for i, c := range v {
		if math.IsNaN(c) || c <= -lim || c >= lim {
			return out, false
		}
		out[i] = int64(math.Round(c * (1 << anchorBits))) // scaling by a power of two is exact
	}
	return out, true
}

// trig returns the cosine and sine, in 2⁻²⁴, of an angle of a quanta of
// 2^-bits turn: the angle is taken to 4096ths of a turn (dropping finer
// bits, or scaling coarser ones up), then read from quarterCos.
func trig(a int64, angleBits uint8) (c, s int64) {
	var k uint64
	if angleBits <= 12 {
		k = uint64(a) << (12 - angleBits)
	} else {
		k = uint64(a >> (angleBits - 12))
	}
	k &= 4095
	r := k & 1023
	cr, sr := int64(quarterCos[r]), int64(quarterCos[1024-r])
	switch k >> 10 {
	case 0:
		return cr, sr
	case 1:
		return -sr, cr
	case 2:
		return -cr, -sr
	}
	return sr, -cr
}

// turn returns anchor v turned by the angle whose cosine and sine are
// c and s: in 2⁻⁴⁴ m, each component below 2⁵⁸ in magnitude.
func turn(v [2]int64, c, s int64) [2]int64 {
	return [2]int64{c*v[0] - s*v[1], s*v[0] + c*v[1]}
}

// roundShift returns v / 2^n rounded half away from zero (1 ≤ n ≤ 62).
func roundShift(v int64, n uint) int64 {
	h := int64(1) << (n - 1)
	if v >= 0 {
		return (v + h) >> n
	}
	return -((-v + h) >> n)
}

// spinVel returns w·twoPi61 / 2ⁿ (that is w·2π·2⁶¹⁻ⁿ) rounded half away
// from zero, for |w| < 2⁶³ and 64 ≤ n ≤ 127: an angular velocity times a
// lever arm, in velocity quanta, exactly in 128 bits.
func spinVel(w int64, n uint) int64 {
	neg := w < 0
	m := uint64(w)
	if neg {
		m = -m
	}
	hi, lo := bits.Mul64(m, twoPi61)
	// add 2^(n−1) to round, then shift the 128-bit product right by n
	var carry uint64
	if n-1 >= 64 {
		hi += 1 << (n - 1 - 64)
	} else {
		lo, carry = bits.Add64(lo, 1<<(n-1), 0)
		hi += carry
	}
	var r uint64
	if n >= 64 {
		r = hi >> (n - 64)
	} else {
		r = hi<<(64-n) | lo>>n
	}
	if neg {
		return -int64(r)
	}
	return int64(r)
}

// jointOK reports whether precision p is one joint prediction works in:
// positions and velocities no finer than 2⁻²⁰, angles no finer than 2⁻³⁰
// turn.
func jointOK(p quant.Precision) bool {
	return p.Pos <= 20 && p.Vel <= 20 && p.AngVel <= 20 && p.Angle <= 30
}

// predictJoint sets q's position and velocity to where link l puts them,
// given q's own angle and angular velocity and, for a member parent, the
// parent's whole state par (nil for the world). It reports false, leaving
// q as it was, when either angular velocity is 2²⁴ quanta or more.
func predictJoint(q *quant.State, par *quant.State, l *link, p quant.Precision) bool {
	if q.AngVel >= maxSpin || q.AngVel <= -maxSpin {
		return false
	}
	cb, sb := trig(q.Angle, p.Angle)
	rb := turn(l.b, cb, sb) // own anchor, 2⁻⁴⁴ m
	posShift := uint(anchorBits + trigBits - int(p.Pos))
	// The lever arms in 2⁻²⁴ m (below 2³⁸), for the velocities.
	rbv := [2]int64{roundShift(rb[0], anchorBits), roundShift(rb[1], anchorBits)}
	velShift := uint(61 + trigBits + int(p.AngVel) - int(p.Vel))
	if par == nil {
		wShift := uint(anchorBits - int(p.Pos))
		x, y := l.w[0], l.w[1]
		if wShift > 0 {
			x, y = roundShift(x, wShift), roundShift(y, wShift)
		}
		q.X = x + roundShift(-rb[0], posShift)
		q.Y = y + roundShift(-rb[1], posShift)
		// v = −ω × r_b = (ω·r_b.y, −ω·r_b.x)
		q.VX = spinVel(q.AngVel*rbv[1], velShift)
		q.VY = spinVel(-q.AngVel*rbv[0], velShift)
		return true
	}
	if par.AngVel >= maxSpin || par.AngVel <= -maxSpin {
		return false
	}
	ca, sa := trig(par.Angle, p.Angle)
	ra := turn(l.a, ca, sa)
	rav := [2]int64{roundShift(ra[0], anchorBits), roundShift(ra[1], anchorBits)}
	q.X = par.X + roundShift(ra[0]-rb[0], posShift)
	q.Y = par.Y + roundShift(ra[1]-rb[1], posShift)
	// v = v_p + ω_p × r_a − ω × r_b, with ω × r = (−ω·r.y, ω·r.x)
	q.VX = par.VX + spinVel(-par.AngVel*rav[1]+q.AngVel*rbv[1], velShift)
	q.VY = par.VY + spinVel(par.AngVel*rav[0]-q.AngVel*rbv[0], velShift)
	return true
}
