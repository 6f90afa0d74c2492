package assembler

import (
	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Frame is a completed frame as the assembler emits it: the frame-level
// header fields and every member record in frame order, still in wire form,
// exactly the records the sender's digest covers. Members are decoded by
// whoever needs the values (usually the validator, straight into its own
// output), so no member is decoded twice. Read them with ID and State, which
// serve both kinds of frame; Members are version 1's float records, or, in a
// Quantized frame, quantized records (codec.QuantRecords: read them with
// Quant or Entries).
//
// A Frame is owned by the Assembler: it stays valid until the next call to
// Push or Expire. Copy what you keep (Clone, or Decode into your own storage).
type Frame struct {
	Sender    island.SenderID
	Key       island.Key
	Time      island.Time  // authority time, microseconds
	Segment   uint32       // continuity segment
	Flags     island.Flags // boundary flags
	Digest    uint64       // the verified frame digest (a quantized frame's sum)
	Fragments int          // how many fragments carried the frame
	Members   codec.Records
	// Quantized: Members are quantized records, restored to floats under
	// Class's precision.
	Quantized bool
	Class     quant.Class
	scales    quant.Scales
}

// newFrame is the frame of header h with members body in frame order.
func newFrame(id frameID, h *codec.FragmentHeader, fragments int, body []byte) Frame {
	f := Frame{Sender: id.sender, Key: id.key, Time: h.Time, Segment: h.Segment, Flags: h.Flags,
		Digest: h.Digest, Fragments: fragments, Members: codec.Records(body), Quantized: h.Quantized, Class: h.Class}
	if f.Quantized {
		f.scales = h.Class.Precision().Scales()
	}
	return f
}

// Len returns the number of members.
func (f *Frame) Len() int { return f.Members.Len() }

// ID returns the identity of member i.
func (f *Frame) ID(i int) island.MemberID { return f.Members.ID(i) }

// State returns the state of member i and reports whether it is all finite:
// a quantized member restored under the frame's class, which always is.
func (f *Frame) State(i int) (island.State, bool) {
	if f.Quantized {
		return f.scales.State(f.Quant(i)), true
	}
	return f.Members.State(i)
}

// Quant returns the quantized state of member i of a Quantized frame.
func (f *Frame) Quant(i int) quant.State { return codec.QuantRecords(f.Members).Quant(i) }

// Entries appends the members of a Quantized frame to dst as baseline
// entries: identity and quantized state, with the frame's Time and Segment.
func (f *Frame) Entries(dst []baseline.Entry) []baseline.Entry {
	n := len(dst)
	dst = codec.QuantRecords(f.Members).AppendEntries(dst)
	for i := n; i < len(dst); i++ {
		dst[i].Time, dst[i].Segment = f.Time, f.Segment
	}
	return dst
}

// Decode writes the frame into dst, reusing dst.Members' storage. It reports
// false if a member float is not finite, which only hand-built fragments can
// carry (codec.FloatDecoder refuses them).
func (f *Frame) Decode(dst *island.Frame) bool {
	n := f.Len()
	if cap(dst.Members) < n {
		dst.Members = make([]island.Member, n)
	}
	ms := dst.Members[:n]
	*dst = island.Frame{Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags, Members: ms}
	ok := true
	for i := range ms {
		var finite bool
		ms[i].ID = f.ID(i)
		ms[i].State, finite = f.State(i)
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
