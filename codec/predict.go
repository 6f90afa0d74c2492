package codec

import (
	"math/bits"

	"github.com/islandsync/islandsync/quant"
)

// shifts returns the bits between a precision's position and velocity
// quanta and between its angle and angular velocity quanta: what a velocity
// is shifted by to advance its position over 1 s.
func shifts(p quant.Precision) (pos, angle int) {
	return int(p.Pos) - int(p.Vel), int(p.Angle) - int(p.AngVel)
}

// predict returns the state a body in state b at baseline time moves to
// after dt µs under precision p: positions and angle advance by the
// velocities (rounded to the nearest quantum, ties away from zero, in exact
// integer arithmetic), velocities stay.
func predict(b quant.State, dt int64, p quant.Precision) quant.State {
	ps, as := shifts(p)
	base := b
	predictInto(&b, dt, ps, as)
	predictVel(&b, &base, dt, ps, as)
	return b
}

// Residuals returns what a delta member carries for a body whose baseline
// state is base and whose state dt µs later is cur, both under precision
// p: X, Y and Angle less where the baseline's velocities carry them (rounded
// to the nearest quantum, ties away from zero), then VX, VY and AngVel less
// the velocities those positions imply under constant acceleration
// (2·Δ/dt − v₀). All zero means the body moved as predicted. Encoders and
// tools measuring a scene's residuals use it; docs/wire-format.md states the
// same arithmetic.
func Residuals(base, cur quant.State, dt int64, p quant.Precision) [6]int64 {
	ps, as := shifts(p)
	return residuals(&base, &cur, dt, ps, as)
}

// residuals is Residuals with the precision's shifts worked out: positions
// against the baseline's motion, then velocities against the motion those
// positions imply.
func residuals(base, cur *quant.State, dt int64, posShift, angleShift int) [6]int64 {
	pr := *base
	predictInto(&pr, dt, posShift, angleShift)
	vp := *cur
	predictVel(&vp, base, dt, posShift, angleShift)
	return [6]int64{cur.X - pr.X, cur.Y - pr.Y, cur.Angle - pr.Angle,
		cur.VX - vp.VX, cur.VY - vp.VY, cur.AngVel - vp.AngVel}
}

// predictVel predicts the velocities of a body that moved from base to q's
// positions in dt µs under constant acceleration: v = 2·Δ/dt − v₀, in exact
// integer arithmetic, rounded half away from zero. Without a usable
// interval (dt ≤ 0) or for an absurd distance (2⁴⁰ quanta or more), the
// baseline's velocity stays.
func predictVel(q, base *quant.State, dt int64, posShift, angleShift int) {
	q.VX = velFrom(q.X-base.X, base.VX, dt, posShift)
	q.VY = velFrom(q.Y-base.Y, base.VY, dt, posShift)
	q.AngVel = velFrom(q.Angle-base.Angle, base.AngVel, dt, angleShift)
}

func velFrom(dq, v0, dt int64, shift int) int64 {
	if dt <= 0 || dt >= 1<<40 || dq >= 1<<40 || dq <= -(1<<40) || shift < 0 || shift > 6 {
		return v0
	}
	num := 2 * dq * 1_000_000 // |num| < 2^61
	den := dt << uint(shift)  // < 2^46
	var v int64
	if num >= 0 {
		v = (num + den/2) / den
	} else {
		v = -((-num + den/2) / den)
	}
	return v - v0
}

// predictInto is predict in place, with the precision's shifts worked out.
// When every operand is in advance's common range it does the three
// advances inline, as advance would.
func predictInto(q *quant.State, dt int64, posShift, angleShift int) {
	const lim = 1 << 28
	if uint64(dt+lim) < 2*lim && uint64(q.VX+lim) < 2*lim && uint64(q.VY+lim) < 2*lim &&
		uint64(q.AngVel+lim) < 2*lim && uint(posShift) <= 6 && uint(angleShift) <= 6 {
		q.X += roundMicro(q.VX * dt << uint(posShift))
		q.Y += roundMicro(q.VY * dt << uint(posShift))
		q.Angle += roundMicro(q.AngVel * dt << uint(angleShift))
		return
	}
	q.X += advance(q.VX, dt, posShift)
	q.Y += advance(q.VY, dt, posShift)
	q.Angle += advance(q.AngVel, dt, angleShift)
}

// roundMicro returns p / 10⁶ rounded half away from zero, for |p| < 2⁶².
// It rounds the magnitude and signs it after, with no branch on the sign,
// and divides by multiplying: ⌊x / 10⁶⌋ for every x < 2⁶³ is the high
// product of x and ⌈2⁸³ / 10⁶⌉, shifted right by 19.
func roundMicro(p int64) int64 {
	sign := p >> 63 // 0 or −1
	hi, _ := bits.Mul64(uint64((p^sign)-sign)+500_000, 9_671_406_556_917_033_398)
	return int64(hi>>19) ^ sign - sign
}

// advance returns round(v · dt · 2^shift / 10^6) for a velocity v in its
// quanta per second and dt in µs. Out-of-range products (far beyond any
// real motion) saturate instead of overflowing; both ends compute the same.
func advance(v, dt int64, shift int) int64 {
	if v == 0 || dt == 0 {
		return 0
	}
	// The common case in plain int64: |v·dt| < 2^56 leaves room for a shift
	// of up to 6 without overflow; the result is the same as the long path.
	if v > -1<<28 && v < 1<<28 && dt > -1<<28 && dt < 1<<28 && shift >= 0 && shift <= 6 {
		return roundMicro(v * dt << uint(shift))
	}
	neg := (v < 0) != (dt < 0)
	hi, lo := bits.Mul64(abs64(v), abs64(dt))
	if hi != 0 || lo > 1<<62 {
		return saturate(neg)
	}
	n := lo
	if shift >= 0 {
		if shift > 20 || n > (1<<62)>>uint(shift) {
			return saturate(neg)
		}
		n <<= uint(shift)
		n = (n + 500_000) / 1_000_000
	} else {
		d := uint64(1_000_000) << uint(-shift)
		n = (n + d/2) / d
	}
	if neg {
		return -int64(n)
	}
	return int64(n)
}

func abs64(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}

func saturate(neg bool) int64 {
	if neg {
		return -(1 << 53)
	}
	return 1 << 53
}
