package island

import (
	"errors"
	"fmt"
	"math"
)

// ErrNonFinite reports a body state holding NaN or ±Inf.
var ErrNonFinite = errors.New("island: non-finite state")

// MemberID is the stable identity of one body: an id the authority never
// reuses for a different object without bumping Generation. It is comparable.
// The zero MemberID (id 0, generation 0) is a valid identity.
type MemberID struct {
	Stable     uint64 // stable object id announced by the authority
	Generation uint32 // bumps each time Stable is reused for a new object
}

// String formats the identity as "<stable>.g<generation>".
func (m MemberID) String() string { return fmt.Sprintf("%d.g%d", m.Stable, m.Generation) }

// Less orders identities by Stable, then Generation. Manifests use this order.
func (m MemberID) Less(o MemberID) bool {
	if m.Stable != o.Stable {
		return m.Stable < o.Stable
	}
	return m.Generation < o.Generation
}

// State is the kinematic state of one rigid body at one authority time. The
// zero State is a body at rest at the origin.
type State struct {
	X, Y   float64 // position, metres
	Angle  float64 // rotation, radians (any value; not normalised)
	VX, VY float64 // linear velocity, metres per second
	AngVel float64 // angular velocity, radians per second
}

// Finite reports whether every field of s is a finite number.
func (s State) Finite() bool {
	return nonFinite(s.X)|nonFinite(s.Y)|nonFinite(s.Angle)|nonFinite(s.VX)|nonFinite(s.VY)|nonFinite(s.AngVel) == 0
}

// nonFinite returns 1 for NaN and ±Inf, else 0, without branching: adding
// one to an all-ones exponent field carries into the sign bit.
func nonFinite(v float64) uint64 {
	return ((math.Float64bits(v) & 0x7FF0000000000000) + 1<<52) >> 63
}

// Validate returns an error wrapping [ErrNonFinite] if any field is NaN or ±Inf.
func (s State) Validate() error {
	if !s.Finite() {
		return ErrNonFinite
	}
	return nil
}

// Member is one body of an island frame: its identity and its sampled state.
type Member struct {
	ID    MemberID
	State State
}
