package codec

import (
	"encoding/binary"
	"math"

	"github.com/islandsync/islandsync/island"
)

// Identity lists (Announce, Destroy, Manifest, Spawn) are coded as runs:
// identities with consecutive stable ids and one generation — what an
// authority that numbers the bodies of a chain or a stack in turn produces
// — cost one run of idRunSize bytes, not 12 bytes each. A list has
// exactly one coding: each run is as long as it can be, so a run that could
// have gone on from the run before it is malformed.

// idRunSize is one run on the wire: u64 stable id of its first identity,
// u32 generation, u16 how many identities follow the first (stable ids one
// on each, the same generation).
const idRunSize = 14

// maxRunMore is the most identities one run holds after its first.
const maxRunMore = math.MaxUint16

// runEnd reports how far the run starting at ids[i] goes: the index after
// its last identity.
func runEnd(ids []island.MemberID, i int) int {
	j := i + 1
	for j < len(ids) && j-i <= maxRunMore && ids[j].Generation == ids[i].Generation &&
		ids[j-1].Stable != math.MaxUint64 && ids[j].Stable == ids[j-1].Stable+1 {
		j++
	}
	return j
}

// idRunsSize is the bytes appendIDs writes for ids.
func idRunsSize(ids []island.MemberID) int {
	n := 0
	for i := 0; i < len(ids); i = runEnd(ids, i) {
		n += idRunSize
	}
	return n
}

// appendIDs writes ids as runs.
func appendIDs(b []byte, ids []island.MemberID) []byte {
	for i := 0; i < len(ids); {
		j := runEnd(ids, i)
		b = binary.LittleEndian.AppendUint64(b, ids[i].Stable)
		b = binary.LittleEndian.AppendUint32(b, ids[i].Generation)
		b = binary.LittleEndian.AppendUint16(b, uint16(j-i-1))
		i = j
	}
	return b
}

// idCount reads the u32 count of an identity list: 1 … max.
func (p *ctlParser) idCount(max int, field string) (int, error) {
	if err := p.need(4, field); err != nil {
		return 0, err
	}
	at := p.off
	n := p.u32()
	switch {
	case n == 0:
		return 0, fail(ErrMalformed, at, field)
	case uint64(n) > uint64(max):
		return 0, fail(ErrLimit, at, field)
	}
	return int(n), nil
}

// ids reads runs until n identities (n ≤ a cap the caller checked) are
// read. A run that goes past n identities or past the largest stable id,
// or that could have been part of the run before it, is malformed.
func (p *ctlParser) ids(n int, field string) ([]island.MemberID, error) {
	ids := make([]island.MemberID, 0, min(n, 1+len(p.b)/idRunSize*(maxRunMore+1)))
	var prevMore uint16
	for len(ids) < n {
		if err := p.need(idRunSize, field); err != nil {
			return nil, err
		}
		at := p.off
		first, gen, more := p.u64(), p.u32(), p.u16()
		if int(more) >= n-len(ids) || first > math.MaxUint64-uint64(more) {
			return nil, fail(ErrMalformed, at, field)
		}
		if k := len(ids); k > 0 && prevMore < maxRunMore && ids[k-1].Generation == gen &&
			ids[k-1].Stable != math.MaxUint64 && ids[k-1].Stable+1 == first {
			return nil, fail(ErrMalformed, at, field)
		}
		for s := range uint64(more) + 1 {
			ids = append(ids, island.MemberID{Stable: first + s, Generation: gen})
		}
		prevMore = more
	}
	return ids, nil
}
