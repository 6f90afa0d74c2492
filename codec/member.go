package codec

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/islandsync/islandsync/island"
)

// AppendMember appends the 60-byte wire form of m to b: stable id (uint64),
// generation (uint32), then X, Y, Angle, VX, VY, AngVel as IEEE-754 binary64
// bit patterns, all little-endian. It does not check finiteness.
func AppendMember(b []byte, m *island.Member) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID.Stable)
	b = binary.LittleEndian.AppendUint32(b, m.ID.Generation)
	s := &m.State
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.X))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Y))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Angle))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.VX))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.VY))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.AngVel))
}

// ParseMember reads one member record from the start of b. It returns the
// member and MemberSize, or ErrTruncated, or ErrNonFinite if a state field is
// NaN or ±Inf.
func ParseMember(b []byte) (island.Member, int, error) {
	var m island.Member
	if len(b) < MemberSize {
		return m, 0, fail(ErrTruncated, len(b), "member")
	}
	if !parseMemberInto(&m, b[:MemberSize]) {
		return island.Member{}, 0, fail(ErrNonFinite, 12, "member state")
	}
	return m, MemberSize, nil
}

// parseMemberInto decodes exactly MemberSize bytes into m and reports whether
// every float is finite.
func parseMemberInto(m *island.Member, b []byte) bool {
	_ = b[MemberSize-1]
	m.ID.Stable = binary.LittleEndian.Uint64(b[0:])
	m.ID.Generation = binary.LittleEndian.Uint32(b[8:])
	x := binary.LittleEndian.Uint64(b[12:])
	y := binary.LittleEndian.Uint64(b[20:])
	a := binary.LittleEndian.Uint64(b[28:])
	vx := binary.LittleEndian.Uint64(b[36:])
	vy := binary.LittleEndian.Uint64(b[44:])
	av := binary.LittleEndian.Uint64(b[52:])
	m.State = island.State{
		X: math.Float64frombits(x), Y: math.Float64frombits(y), Angle: math.Float64frombits(a),
		VX: math.Float64frombits(vx), VY: math.Float64frombits(vy), AngVel: math.Float64frombits(av),
	}
	return finiteBits(x) && finiteBits(y) && finiteBits(a) && finiteBits(vx) && finiteBits(vy) && finiteBits(av)
}

// finiteBits reports whether an IEEE-754 binary64 bit pattern is finite: its
// exponent is not all ones (which would be ±Inf or NaN).
func finiteBits(u uint64) bool { return u&0x7FF0000000000000 != 0x7FF0000000000000 }

// MembersDigest returns the frame digest of members: xxhash64 over the
// concatenation of their wire records in order. scratch is reused to hold the
// records and returned grown, so steady-state calls do not allocate.
func MembersDigest(members []island.Member, scratch []byte) (uint64, []byte) {
	scratch = scratch[:0]
	for i := range members {
		scratch = AppendMember(scratch, &members[i])
	}
	return xxhash.Sum64(scratch), scratch
}
