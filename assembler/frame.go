package assembler

import (
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// Frame is a completed frame as the assembler emits it: the frame-level
// header fields and every member record in frame order, still in wire form,
// exactly the bytes the sender encoded. Members are decoded by whoever needs
// the values (usually the validator, straight into its own output), so no
// member is decoded twice.
//
// A Frame is owned by the Assembler: it stays valid until the next call to
// Push or Expire. Copy what you keep (Clone, or Decode into your own storage).
type Frame struct {
	Sender    island.SenderID
	Key       island.Key
	Time      island.Time  // authority time, microseconds
	Segment   uint32       // continuity segment
	Flags     island.Flags // boundary flags
	Digest    uint64       // the verified frame digest
	Fragments int          // how many fragments carried the frame
	Members   codec.Records
}

// Len returns the number of members.
func (f *Frame) Len() int { return f.Members.Len() }

// Decode writes the frame into dst, reusing dst.Members' storage. It reports
// false if a member float is not finite, which only hand-built fragments can
// carry (codec.Decoder refuses them).
func (f *Frame) Decode(dst *island.Frame) bool {
	n := f.Members.Len()
	if cap(dst.Members) < n {
		dst.Members = make([]island.Member, n)
	}
	ms := dst.Members[:n]
	*dst = island.Frame{Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags, Members: ms}
	ok := true
	for i := range ms {
		var finite bool
		ms[i], finite = f.Members.Member(i)
		ok = ok && finite
	}
	return ok
}

// Clone returns a copy of f that does not alias the assembler.
func (f *Frame) Clone() Frame {
	g := *f
	g.Members = append(codec.Records(nil), f.Members...)
	return g
}
