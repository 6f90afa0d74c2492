package localsim

import (
	"math"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// MaxSettleEnvelope caps the entries of the matrix Settle factors for one
// island (its rows times their band). An island whose joints are listed so
// that the band is wider than that is shown as blended, unsettled.
const MaxSettleEnvelope = 1 << 20

// settleRounds caps how many times Settle solves. A round is exact for
// moves and first order for turns, so rounds converge quadratically; they
// stop when every joint stands within settleTolerance of its target (or,
// before the first, within settleTrigger).
const settleRounds = 6

// JointErrors writes to out (one per joint, in the order of the island's
// Physics message) how far states (one per member, manifest order) break
// each joint, metres: for a pivot the anchors' separation, for a pin its
// departure from the rest distance, for a slide its excursion out of range.
func (s *Island) JointErrors(states func(i int) island.State, out []float64) []float64 {
	out = out[:0]
	s.errSeps = s.Separations(states, s.errSeps) // a turn keeps the length
	for k := range s.desc.Joints {
		j := &s.desc.Joints[k]
		d := math.Hypot(s.errSeps[k][0], s.errSeps[k][1])
		lo, hi := 0.0, 0.0
		if j.Kind != codec.JointPivot {
			lo, hi = j.Min, j.Max
		}
		out = append(out, max(0, lo-d, d-hi))
	}
	return out
}

// Separations writes to out (one per joint) each joint's anchor separation
// at states — A's anchor less B's — turned into A's frame: how the joint
// stands, stretched or slack, whichever way A faces.
func (s *Island) Separations(states func(i int) island.State, out [][2]float64) [][2]float64 {
	out = out[:0]
	// Each body's state and turn once, however many joints it has.
	s.scratch = s.scratch[:0]
	s.turns = s.turns[:0]
	for i := range s.n {
		st := states(i)
		var sc [2]float64
		sc[0], sc[1] = math.Sincos(st.Angle)
		s.scratch, s.turns = append(s.scratch, st), append(s.turns, sc)
	}
	for k := range s.desc.Joints {
		j := &s.desc.Joints[k]
		sc := s.turns[j.A]
		ax, ay := turn(&s.scratch[j.A], sc, j.AnchorA)
		bx, by := j.AnchorB[0], j.AnchorB[1]
		if j.B != codec.NoBody {
			bx, by = turn(&s.scratch[j.B], s.turns[j.B], j.AnchorB)
		}
		dx, dy := ax-bx, ay-by
		out = append(out, [2]float64{dx*sc[1] + dy*sc[0], -dx*sc[0] + dy*sc[1]})
	}
	return out
}

// FrameSeparations is Separations of frame key at time t (states as
// Separations takes them), kept for the two frames asked for last: a frame
// pair is blended over many render ticks, and a frame never changes. The
// slice is the Island's, valid until a third frame is asked for.
func (s *Island) FrameSeparations(key island.Key, t island.Time, states func(i int) island.State) [][2]float64 {
	s.sepClock++
	for i := range s.seps {
		if c := &s.seps[i]; c.ok && c.key == key && c.t == t {
			c.used = s.sepClock
			return c.v
		}
	}
	c := &s.seps[0] // the one used longest ago gives way
	if s.seps[1].used < c.used {
		c = &s.seps[1]
	}
	c.v = s.Separations(states, c.v)
	c.key, c.t, c.ok, c.used = key, t, true, s.sepClock
	return c.v
}

// Settle moves and turns the bodies of poses (one per member, manifest
// order) as little as it can — weighted by mass, a turn counted as the move
// of the body's farthest anchor by four times as much — so that every joint stands as target
// says (one separation per joint, in A's frame; see Separations), the
// static world fixed. Given the separations of the frames the poses were
// blended from (blended alike), it mends what blending broke — a frame
// pair spanning a fast rotation, a correction fading out; a blend of two
// jointed poses is jointed only to first order in the rotation between
// them — and keeps what the authority's own solver leaves, such as a long
// rope stretched under its weight, which forcing every joint shut would
// pull out of place. It solves for every joint at once — the island's
// constraint equations, linearized, in a banded factorization — so a chain
// is mended where its blend bent it without links far from the error
// moving. Joints that cannot all stand so at once (a loop that cannot
// close) are met as nearly as they can be.
func (s *Island) Settle(poses []island.State, target [][2]float64) {
	if len(poses) != s.n || len(s.desc.Joints) == 0 || len(target) != len(s.desc.Joints) {
		return
	}
	if s.proj == nil {
		s.proj = newProjector(&s.desc)
	}
	if s.proj.rows == nil {
		return // the band is too wide to factor
	}
	tol := settleTrigger
	for range settleRounds {
		if !s.proj.round(&s.desc, poses, target, tol) {
			return
		}
		tol = settleTolerance
	}
}

// settleTrigger is how far, metres, a joint may stand from its target
// before Settle moves anything: a quarter of a millimetre is below what a
// player sees, and most blends of frames a render tick apart stay within
// it, so most views cost Settle one pass over the joints.
const settleTrigger = 2.5e-4

// settleTolerance is how close, metres, Settle brings every joint once it
// moves bodies at all.
const settleTolerance = 1e-5

// row is one scalar constraint, the x or the y of one joint's anchor
// separation less its target (turned with A). Each row is linear in the
// bodies' positions and, to first order, their angles.
type row struct {
	joint int
	a, b  int // bodies; b < 0: the static world
	// Per round: the row's gradient with respect to each end's x, y and
	// angle, and how far the separation is from its target. Every row
	// applies (active is kept for rows a caller may leave out).
	ja, jb [3]float64
	c      float64
	active bool
}

// projector holds the constraint rows of one island and the banded matrix
// J·W·Jᵀ it factors (W: inverse masses), with every buffer a round needs.
type projector struct {
	rows  []row
	first []int        // row r's band starts at column first[r]
	off   []int        // row r's entries start at env[off[r]]
	env   []float64    // L (below the diagonal) row by row, first[r] … r−1
	d     []float64    // the diagonal D of L·D·Lᵀ
	x     []float64    // right-hand side, then the multipliers
	inv   []float64    // inverse mass per body
	invI  []float64    // per body: the inverse of mass × (4 × farthest anchor)²
	dx    []float64    // change per body: x, y, angle
	sc    [][2]float64 // per body: sine and cosine of its angle this round
}

func newProjector(p *codec.Physics) *projector {
	pr := &projector{inv: make([]float64, len(p.Bodies)), invI: make([]float64, len(p.Bodies)),
		dx: make([]float64, 3*len(p.Bodies)), sc: make([][2]float64, len(p.Bodies))}
	// Turning is weighed as moving the body's farthest anchor four times as
	// far: a thin link's own moment of inertia would make turning it nearly
	// free, and the fix a spin where a slide does; and turns, linearized,
	// are what takes rounds to converge.
	reach := make([]float64, len(p.Bodies))
	for _, j := range p.Joints {
		reach[j.A] = max(reach[j.A], math.Hypot(j.AnchorA[0], j.AnchorA[1]))
		if j.B != codec.NoBody {
			reach[j.B] = max(reach[j.B], math.Hypot(j.AnchorB[0], j.AnchorB[1]))
		}
	}
	for i, b := range p.Bodies {
		pr.inv[i] = 1 / b.Mass
		if reach[i] > 0 {
			pr.invI[i] = 1 / (16 * b.Mass * reach[i] * reach[i])
		}
	}
	var rows []row
	for k, j := range p.Joints {
		b := int(j.B)
		if j.B == codec.NoBody {
			b = -1
		}
		rows = append(rows, row{joint: k, a: int(j.A), b: b}, row{joint: k, a: int(j.A), b: b})
	}
	// Row r couples with the rows sharing a body with it; its band starts
	// at the earliest of them.
	earliest := make([]int, len(p.Bodies))
	for i := range earliest {
		earliest[i] = -1
	}
	first := make([]int, len(rows))
	off := make([]int, len(rows)+1)
	for r, rw := range rows {
		f := r
		for _, b := range [2]int{rw.a, rw.b} {
			if b < 0 {
				continue
			}
			if earliest[b] < 0 {
				earliest[b] = r
			}
			f = min(f, earliest[b])
		}
		first[r] = f
		off[r+1] = off[r] + (r - f)
		if off[r+1] > MaxSettleEnvelope {
			return pr
		}
	}
	pr.rows, pr.first, pr.off = rows, first, off
	pr.env = make([]float64, off[len(rows)])
	pr.d = make([]float64, len(rows))
	pr.x = make([]float64, len(rows))
	return pr
}

// round linearizes the joints at poses, solves for the smallest
// mass-weighted move that zeroes their errors, and applies it. It reports
// false when every joint already holds.
func (pr *projector) round(p *codec.Physics, poses []island.State, target [][2]float64, tol float64) bool {
	for i := range poses {
		pr.sc[i][0], pr.sc[i][1] = math.Sincos(poses[i].Angle)
	}
	worst := 0.0
	for r := 0; r < len(pr.rows); r += 2 {
		rx, ry := &pr.rows[r], &pr.rows[r+1]
		j := &p.Joints[rx.joint]
		sc := pr.sc[j.A]
		ax, ay := turn(&poses[j.A], sc, j.AnchorA)
		bx, by := j.AnchorB[0], j.AnchorB[1]
		if rx.b >= 0 {
			bx, by = turn(&poses[rx.b], pr.sc[rx.b], j.AnchorB)
		}
		sin, cos := sc[0], sc[1]
		tg := &target[rx.joint]
		tx, ty := tg[0]*cos-tg[1]*sin, tg[0]*sin+tg[1]*cos // the target, turned with A
		rx.active, ry.active = true, true
		rx.c, ry.c = ax-bx-tx, ay-by-ty
		// Turning a body by dθ moves a point r from its centre by dθ·(−ry,
		// rx); A's target turns with it.
		rax, ray := ax-poses[j.A].X-tx, ay-poses[j.A].Y-ty
		rx.ja, ry.ja = [3]float64{1, 0, -ray}, [3]float64{0, 1, rax}
		if rx.b >= 0 {
			rbx, rby := bx-poses[rx.b].X, by-poses[rx.b].Y
			rx.jb, ry.jb = [3]float64{-1, 0, rby}, [3]float64{0, -1, -rbx}
		}
		worst = max(worst, math.Abs(rx.c), math.Abs(ry.c))
	}
	if worst < tol {
		return false
	}
	// Assemble J·W·Jᵀ within the band and factor it as L·D·Lᵀ.
	n := len(pr.rows)
	maxDiag := 0.0
	for r := range n {
		ri := &pr.rows[r]
		for c := pr.first[r]; c <= r; c++ {
			v := pr.coupling(ri, &pr.rows[c])
			if c == r {
				pr.d[r] = v
				maxDiag = max(maxDiag, v)
			} else {
				pr.env[pr.off[r]+c-pr.first[r]] = v
			}
		}
	}
	// A tiny regularization keeps the factorization defined where joints
	// are redundant; it moves no body, since a redundant combination of
	// multipliers has no effect on positions.
	eps := 1e-12*maxDiag + 1e-300
	for r := range n {
		if !pr.rows[r].active {
			pr.d[r] = 1 // an inactive row is the identity: its multiplier is 0
		}
		pr.d[r] += eps
	}
	for i := range n {
		fi, oi := pr.first[i], pr.off[i]-pr.first[i]
		for j := fi; j < i; j++ {
			fj, oj := pr.first[j], pr.off[j]-pr.first[j]
			sum := pr.env[oi+j]
			for k := max(fi, fj); k < j; k++ {
				sum -= pr.env[oi+k] * pr.d[k] * pr.env[oj+k]
			}
			pr.env[oi+j] = sum / pr.d[j]
		}
		di := pr.d[i]
		for k := fi; k < i; k++ {
			l := pr.env[oi+k]
			di -= l * l * pr.d[k]
		}
		pr.d[i] = max(di, eps)
	}
	// Solve L·D·Lᵀ·λ = −C.
	for i := range n {
		v := -pr.rows[i].c
		oi := pr.off[i] - pr.first[i]
		for k := pr.first[i]; k < i; k++ {
			v -= pr.env[oi+k] * pr.x[k]
		}
		pr.x[i] = v
	}
	for i := range n {
		pr.x[i] /= pr.d[i]
	}
	for i := n - 1; i >= 0; i-- {
		oi := pr.off[i] - pr.first[i]
		for k := pr.first[i]; k < i; k++ {
			pr.x[k] -= pr.env[oi+k] * pr.x[i]
		}
	}
	// Move each body by W·Jᵀ·λ.
	clear(pr.dx)
	for r := range n {
		rw := &pr.rows[r]
		if !rw.active {
			continue
		}
		l := pr.x[r]
		pr.move(rw.a, &rw.ja, l)
		if rw.b >= 0 {
			pr.move(rw.b, &rw.jb, l)
		}
	}
	// Turns are linearized: a round that would turn a body by more than
	// maxTurn is scaled down to it, and the next round goes on from there.
	// A round that is not finite, or would move a body further than
	// maxLength, is dropped whole (poses far out of any joint's reach).
	k := 1.0
	for i := range poses {
		if !within(maxLength, pr.dx[3*i], pr.dx[3*i+1], pr.dx[3*i+2]) {
			return false
		}
		if t := math.Abs(pr.dx[3*i+2]); t*k > maxTurn {
			k = maxTurn / t
		}
	}
	for i := range poses {
		poses[i].X += pr.dx[3*i] * k
		poses[i].Y += pr.dx[3*i+1] * k
		poses[i].Angle += pr.dx[3*i+2] * k
	}
	return true
}

// maxTurn is the largest turn, radians, one round of Settle gives a body.
const maxTurn = 0.5

// move adds body b's share of a row's correction: its gradient j, weighted
// by its inverse mass and inertia, times the row's multiplier l.
func (pr *projector) move(b int, j *[3]float64, l float64) {
	pr.dx[3*b] += pr.inv[b] * j[0] * l
	pr.dx[3*b+1] += pr.inv[b] * j[1] * l
	pr.dx[3*b+2] += pr.invI[b] * j[2] * l
}

// coupling is entry (r, c) of J·W·Jᵀ: over the bodies both rows move,
// their gradients' product weighted by the body's inverse mass (x, y) and
// inverse moment (angle). Inactive rows couple with nothing.
func (pr *projector) coupling(r, c *row) float64 {
	if !r.active || !c.active {
		return 0
	}
	v := 0.0
	for er, br := range [2]int{r.a, r.b} {
		if br < 0 {
			continue
		}
		jr := &r.ja
		if er == 1 {
			jr = &r.jb
		}
		for ec, bc := range [2]int{c.a, c.b} {
			if bc != br {
				continue
			}
			jc := &c.ja
			if ec == 1 {
				jc = &c.jb
			}
			v += pr.inv[br]*(jr[0]*jc[0]+jr[1]*jc[1]) + pr.invI[br]*jr[2]*jc[2]
		}
	}
	return v
}

// turn returns a body-local point's world position for pose p, whose
// angle's sine and cosine are sc.
func turn(p *island.State, sc [2]float64, local [2]float64) (float64, float64) {
	sin, cos := sc[0], sc[1]
	return p.X + local[0]*cos - local[1]*sin, p.Y + local[0]*sin + local[1]*cos
}
