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
}

// FrameInfo is what an island frame's table carries besides its members.
type FrameInfo struct {
	Sender  island.SenderID
	Key     island.Key
	Time    island.Time
	Segment uint32
	Class   quant.Class
}
