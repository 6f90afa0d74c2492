package baseline

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Record is one body's replicated motion record: a quantized state, the
// authority time it was observed at, and its continuity segment. A body
// left out of a packet keeps its record, observation time included: no new
// observation was sent.
type Record struct {
	Q       quant.State
	Time    island.Time // when this motion was observed, authority µs
	Segment uint32      // continuity segment the motion belongs to
}

// Entry is one body of a table.
type Entry struct {
	ID island.MemberID
	Record
}

// Table is the full record table a packet restores: every body's newest
// record, ascending by identity. A table that became a baseline is never
// changed again.
type Table struct {
	ID      uint32 // the packet id that restored it
	Entries []Entry
	// Frame describes the island frame the table holds, when it is one (wire
	// v2): a delta against the table inherits these. Digest ignores them.
	Frame FrameInfo
}

// FrameInfo is what an island frame's table carries besides its members.
type FrameInfo struct {
	Sender  island.SenderID
	Key     island.Key
	Time    island.Time
	Segment uint32
	Class   quant.Class
}

// Get returns a body's record.
func (t *Table) Get(id island.MemberID) (Record, bool) {
	i, ok := slices.BinarySearchFunc(t.Entries, id, cmpID)
	if !ok {
		return Record{}, false
	}
	return t.Entries[i].Record, true
}

func cmpID(e Entry, id island.MemberID) int {
	switch {
	case e.ID == id:
		return 0
	case e.ID.Less(id):
		return -1
	}
	return 1
}

// Digest returns xxhash64 of the table's canonical encoding: for each entry
// in order, u64 stable id, u32 generation, the six quantized fields as i64,
// i64 time and u32 segment, all little-endian. Sender and receiver compare
// it to prove a delta restored exactly what was sampled.
func (t *Table) Digest() uint64 {
	var d xxhash.Digest
	d.Reset()
	var b [8 + 4 + 6*8 + 8 + 4]byte
	for _, e := range t.Entries {
		o := binary.LittleEndian.AppendUint64(b[:0], e.ID.Stable)
		o = binary.LittleEndian.AppendUint32(o, e.ID.Generation)
		for _, v := range [...]int64{e.Q.X, e.Q.Y, e.Q.Angle, e.Q.VX, e.Q.VY, e.Q.AngVel} {
			o = binary.LittleEndian.AppendUint64(o, uint64(v))
		}
		o = binary.LittleEndian.AppendUint64(o, uint64(e.Time))
		o = binary.LittleEndian.AppendUint32(o, e.Segment)
		_, _ = d.Write(o)
	}
	return d.Sum64()
}
