package codec

import (
	"encoding/binary"

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

// Member decodes record i. It does not check finiteness; records that came
// through Decoder or ParseFragment are known to be finite.
func (r Records) Member(i int) island.Member {
	var m island.Member
	parseMemberInto(&m, r[i*MemberSize:(i+1)*MemberSize])
	return m
}

// MemberFinite decodes record i into m and reports whether its floats are
// all finite.
func (r Records) MemberFinite(i int, m *island.Member) bool {
	return parseMemberInto(m, r[i*MemberSize:(i+1)*MemberSize])
}

// Decode decodes every record into dst, which must have length r.Len(), and
// reports false if any float is NaN or ±Inf (dst is then partly written).
func (r Records) Decode(dst []island.Member) bool {
	return DecodeMembers(dst, r)
}

// AppendTo decodes every record and appends the members to dst.
func (r Records) AppendTo(dst []island.Member) []island.Member {
	for i := 0; i+MemberSize <= len(r); i += MemberSize {
		var m island.Member
		parseMemberInto(&m, r[i:i+MemberSize])
		dst = append(dst, m)
	}
	return dst
}
