package codec

import (
	"encoding/binary"
	"math"

	"github.com/islandsync/islandsync/island"
)

// Records is a run of member records in wire form, MemberSize bytes each.
// Receivers keep members this way until the last stage that needs values, so
// each member is decoded once, straight into its final place.
type Records []byte

// Len returns the number of whole records.
func (r Records) Len() int { return len(r) / MemberSize }

// ID decodes only the identity of record i.
func (r Records) ID(i int) island.MemberID {
	b := (*[12]byte)(r[i*MemberSize:])
	return island.MemberID{Stable: binary.LittleEndian.Uint64(b[:8]), Generation: binary.LittleEndian.Uint32(b[8:])}
}

// Member decodes record i and reports whether its floats are all finite
// (records that came through a Decoder always are).
func (r Records) Member(i int) (island.Member, bool) {
	st, ok := r.State(i)
	return island.Member{ID: r.ID(i), State: st}, ok
}

// State decodes only the state of record i and reports whether it is all
// finite (records that came through a Decoder always are). It builds the
// state in registers: decoding through a pointer and copying the struct out
// costs Validate a third of its time per member.
func (r Records) State(i int) (island.State, bool) {
	b := (*[MemberSize]byte)(r[i*MemberSize:])
	x, y, a := binary.LittleEndian.Uint64(b[12:]), binary.LittleEndian.Uint64(b[20:]), binary.LittleEndian.Uint64(b[28:])
	vx, vy, av := binary.LittleEndian.Uint64(b[36:]), binary.LittleEndian.Uint64(b[44:]), binary.LittleEndian.Uint64(b[52:])
	return island.State{X: math.Float64frombits(x), Y: math.Float64frombits(y), Angle: math.Float64frombits(a),
			VX: math.Float64frombits(vx), VY: math.Float64frombits(vy), AngVel: math.Float64frombits(av)},
		nonFinite(x)|nonFinite(y)|nonFinite(a)|nonFinite(vx)|nonFinite(vy)|nonFinite(av) == 0
}
