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
	if len(b) < MemberSize {
		return island.Member{}, 0, fail(ErrTruncated, len(b), "member")
	}
	m, ok := Records(b[:MemberSize]).Member(0)
	if !ok {
		return island.Member{}, 0, fail(ErrNonFinite, 12, "member state")
	}
	return m, MemberSize, nil
}

// firstNonFinite returns the offset within raw of the first member float
// that is NaN or ±Inf, or -1. raw holds whole member records. The common,
// all-finite case runs without branches per float.
func firstNonFinite(raw []byte) int {
	for off := 0; off+MemberSize <= len(raw); off += MemberSize {
		r := (*[MemberSize]byte)(raw[off : off+MemberSize])
		bad := nonFinite(binary.LittleEndian.Uint64(r[12:20])) | nonFinite(binary.LittleEndian.Uint64(r[20:28])) |
			nonFinite(binary.LittleEndian.Uint64(r[28:36])) | nonFinite(binary.LittleEndian.Uint64(r[36:44])) |
			nonFinite(binary.LittleEndian.Uint64(r[44:52])) | nonFinite(binary.LittleEndian.Uint64(r[52:60]))
		if bad != 0 {
			for f := 12; f < MemberSize; f += 8 {
				if nonFinite(binary.LittleEndian.Uint64(r[f:])) != 0 {
					return off + f
				}
			}
		}
	}
	return -1
}

// nonFinite returns 1 if the IEEE-754 binary64 bit pattern u is NaN or ±Inf
// (exponent all ones), else 0, without branching: adding one to the
// exponent field carries into the sign bit only when the field is all ones.
func nonFinite(u uint64) uint64 { return ((u & 0x7FF0000000000000) + 1<<52) >> 63 }

// digestPrefixSize is how many leading bytes of the fragment header the
// frame digest covers: sender, key, time, segment, flags and total members —
// every frame-level field except the fragment count.
const digestPrefixSize = 41

// Digest returns the frame digest every fragment header carries: xxhash64
// (seed 0) of the first 41 bytes of h's wire form (sender, key, time,
// segment, flags, total members) followed by the frame's member records in
// frame order. A receiver that reassembled members checks it against
// h.Digest. It does not allocate.
func Digest(h *FragmentHeader, members Records) uint64 {
	var pre [FragmentHeaderSize]byte
	h.Append(pre[:0])
	var d xxhash.Digest
	d.Reset()
	_, _ = d.Write(pre[:digestPrefixSize])
	_, _ = d.Write(members)
	return d.Sum64()
}
