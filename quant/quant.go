package quant

import (
	"errors"
	"math"

	"github.com/islandsync/islandsync/island"
)

// Class is a constraint class: how much error an island's joints tolerate.
type Class uint8

const (
	// Rigid: bodies held together by stiff joints (bridges, ragdolls).
	Rigid Class = iota
	// Chain: long hinge chains, where small per-link errors add up.
	Chain
	// Loose: decoration nobody joins to anything that matters.
	Loose
	numClasses
)

func (c Class) String() string {
	switch c {
	case Rigid:
		return "rigid"
	case Chain:
		return "chain"
	case Loose:
		return "loose"
	}
	return "unknown"
}

// Precision is the quantum of each field as a power of two: a field with
// bits b is held in units of 2^-b of its unit.
type Precision struct {
	Pos    uint8 // position: units of 2^-Pos metres
	Angle  uint8 // rotation: units of 2^-Angle turns
	Vel    uint8 // linear velocity: units of 2^-Vel m/s
	AngVel uint8 // angular velocity: units of 2^-AngVel turns per second
}

// Precision returns the class's default precision. Rigid and Chain hold
// positions to 1/512 m and angles to 2^-12 turn (error at most 0.98 mm and
// 0.77 mrad), velocities to 1/128 m/s and 2^-8 turn/s (0.4 mm after 0.1 s
// of extrapolation). Loose holds 1/128 m, 2^-9 turn, 1/32 m/s, 2^-6 turn/s.
func (c Class) Precision() Precision {
	switch c {
	case Chain:
		return Precision{Pos: 9, Angle: 12, Vel: 7, AngVel: 8}
	case Loose:
		return Precision{Pos: 7, Angle: 9, Vel: 5, AngVel: 6}
	}
	return Precision{Pos: 9, Angle: 12, Vel: 7, AngVel: 8}
}

// Error is the largest error quantization adds to each field.
type Error struct {
	Pos    float64 // metres, per axis
	Angle  float64 // radians
	Vel    float64 // m/s, per axis
	AngVel float64 // rad/s
}

// MaxError returns half of each quantum: the bound on |value − restored|.
func (p Precision) MaxError() Error {
	return Error{Pos: math.Ldexp(0.5, -int(p.Pos)), Angle: math.Pi * math.Ldexp(1, -int(p.Angle)),
		Vel: math.Ldexp(0.5, -int(p.Vel)), AngVel: math.Pi * math.Ldexp(1, -int(p.AngVel))}
}

// State is a quantized body state. Its zero value is a body at rest at the
// origin. It is comparable: two states are equal exactly when every field
// restores to the same value.
type State struct {
	X, Y, Angle, VX, VY, AngVel int64
}

// Errors.
var (
	ErrRange     = errors.New("quant: value outside the encodable range")
	ErrNonFinite = errors.New("quant: non-finite value")
)

// limit is the largest quantized magnitude: integers up to 2^53 convert to
// float64 and back exactly.
const limit = 1 << 53

// pow2 returns 2^bits exactly (bits ≤ 62).
func pow2(bits uint8) float64 { return float64(int64(1) << bits) }

// invPow2 is 2^-bits, built from its exponent: multiplying by it equals
// dividing by pow2(bits) exactly, without a division.
func invPow2(bits uint8) float64 { return math.Float64frombits(uint64(1023-int(bits)) << 52) }

func q(v float64, bits uint8) (int64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, ErrNonFinite
	}
	r := math.Round(v * pow2(bits)) // scaling by a power of two is exact
	if r >= limit || r <= -limit {
		return 0, ErrRange
	}
	return int64(r), nil
}

const turn = 2 * math.Pi

// Quantize returns s in p's units, or ErrNonFinite, or ErrRange.
func Quantize(s island.State, p Precision) (State, error) {
	var out State
	var errs [6]error
	out.X, errs[0] = q(s.X, p.Pos)
	out.Y, errs[1] = q(s.Y, p.Pos)
	out.Angle, errs[2] = q(s.Angle/turn, p.Angle)
	out.VX, errs[3] = q(s.VX, p.Vel)
	out.VY, errs[4] = q(s.VY, p.Vel)
	out.AngVel, errs[5] = q(s.AngVel/turn, p.AngVel)
	for _, err := range errs {
		if err != nil {
			return State{}, err
		}
	}
	return out, nil
}

// State restores the float state q stands for under p. Multiplying by the
// reciprocal of a power of two is exact, so every platform restores the
// same bits.
func (s State) State(p Precision) island.State { return p.Scales().State(s) }

// Scales is a precision's reciprocal quanta, worked out once to restore
// many states: Scales.State(q) equals q.State(p) bit for bit.
type Scales struct {
	pos, angle, vel, angVel float64 // metres, turns, m/s, turns/s per quantum
}

// Scales returns p's reciprocal quanta.
func (p Precision) Scales() Scales {
	return Scales{pos: invPow2(p.Pos), angle: invPow2(p.Angle), vel: invPow2(p.Vel), angVel: invPow2(p.AngVel)}
}

// State restores the float state q stands for.
func (c Scales) State(q State) island.State {
	return island.State{
		X: float64(q.X) * c.pos, Y: float64(q.Y) * c.pos,
		Angle: float64(q.Angle) * c.angle * turn,
		VX:    float64(q.VX) * c.vel, VY: float64(q.VY) * c.vel,
		AngVel: float64(q.AngVel) * c.angVel * turn,
	}
}

// Restore writes the float state q stands for to dst, as State returns
// it, field by field: a caller restoring into a slice writes each value
// once, straight to its place.
func (c Scales) Restore(dst *island.State, q *State) {
	dst.X = float64(q.X) * c.pos
	dst.Y = float64(q.Y) * c.pos
	dst.Angle = float64(q.Angle) * c.angle * turn
	dst.VX = float64(q.VX) * c.vel
	dst.VY = float64(q.VY) * c.vel
	dst.AngVel = float64(q.AngVel) * c.angVel * turn
}

// Sub returns s − b field by field: the delta that Add applies.
func (s State) Sub(b State) State {
	return State{s.X - b.X, s.Y - b.Y, s.Angle - b.Angle, s.VX - b.VX, s.VY - b.VY, s.AngVel - b.AngVel}
}

// Add returns s + d field by field.
func (s State) Add(d State) State {
	return State{s.X + d.X, s.Y + d.Y, s.Angle + d.Angle, s.VX + d.VX, s.VY + d.VY, s.AngVel + d.AngVel}
}
