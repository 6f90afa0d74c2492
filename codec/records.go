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

// Member decodes record i and reports whether its floats are all finite
// (records that came through a Decoder always are).
func (r Records) Member(i int) (island.Member, bool) {
	var m island.Member
	ok := parseMemberInto(&m, r[i*MemberSize:(i+1)*MemberSize])
	return m, ok
}
