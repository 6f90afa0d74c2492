package baseline

import (
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Record is one body's replicated motion record: a quantized state, the
// authority time it was observed at, and its continuity segment.
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

// Table is one island frame in quantized form: every body's record, in
// manifest order (ascending identity). A table that became a baseline is
// never changed again.
type Table struct {
	ID      uint32 // the frame's sequence: the broadcast that carried it
	Entries []Entry
	// Frame describes the island frame: a delta against the table inherits
	// these.
	Frame FrameInfo

	pool *Pool // the pool it goes back to; nil: not counted
	refs int32 // references counted while pooled

	// one is the storage of a table of one member, beside its header:
	// most islands of a busy world are a body each, and a receiver reading
	// or writing hundreds of tables per broadcast, each cold in the cache,
	// then misses once per table rather than once for the header and again
	// for the members.
	one [1]Entry
}

// fill makes t the table of frame f, its sequence f.Key.Seq, with a copy
// of members ents, in the storage t had. Members that fit inline are
// written without reading what t held: a table let go broadcasts ago is
// cold in the cache, and writes to it need not wait for it.
func (t *Table) fill(f *FrameInfo, ents []Entry) {
	t.ID, t.Frame = f.Key.Seq, *f
	if len(ents) <= len(t.one) {
		t.Entries = t.one[:len(ents)]
		copy(t.Entries, ents)
		return
	}
	t.Entries = append(t.Entries[:0], ents...)
}

// newTable returns an empty table whose members are stored inline while
// they are one.
func newTable() *Table {
	t := &Table{}
	t.Entries = t.one[:0]
	return t
}

// FrameInfo is what an island frame's table carries besides its members.
type FrameInfo struct {
	Sender  island.SenderID
	Key     island.Key
	Time    island.Time
	Segment uint32
	Class   quant.Class
}
