package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// FragmentHeader is the fixed part of a fragment record: which frame the
// fragment belongs to, where its members sit in that frame, and the digest of
// the whole frame. Every fragment of one frame carries the same header except
// Index, FirstMember and MemberCount.
type FragmentHeader struct {
	Sender       island.SenderID // sending peer
	Key          island.Key      // composite version key of the frame
	Time         island.Time     // authority time of the frame, microseconds
	Segment      uint32          // continuity segment of the frame
	Flags        island.Flags    // boundary flags; unknown bits are malformed
	TotalMembers uint32          // members in the whole frame; at least 1
	Index        uint16          // this fragment's index, < Count
	Count        uint16          // fragments in the whole frame; at least 1
	FirstMember  uint32          // frame position of this fragment's first member
	MemberCount  uint16          // members in this fragment; at least 1
	Digest       uint64          // xxhash64 of all members' records in frame order
	// Quantized marks a fragment of a quantized (version 3) frame, restored
	// to integers: its members are QuantRecords and Digest is the frame's
	// sum (FrameSum, Class included), not the version-1 digest. Neither
	// Quantized nor Class is on the version-1 wire: a version-1 fragment is
	// never Quantized and its Class is 0.
	Quantized bool
	Class     quant.Class // a quantized frame's constraint class
}

// Append appends the FragmentHeaderSize-byte wire form of h to b.
func (h *FragmentHeader) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(h.Sender))
	b = binary.LittleEndian.AppendUint32(b, h.Key.Island)
	b = binary.LittleEndian.AppendUint32(b, h.Key.Epoch)
	b = binary.LittleEndian.AppendUint32(b, h.Key.Topology)
	b = binary.LittleEndian.AppendUint32(b, h.Key.Config)
	b = binary.LittleEndian.AppendUint32(b, h.Key.Seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Time))
	b = binary.LittleEndian.AppendUint32(b, h.Segment)
	b = append(b, byte(h.Flags))
	b = binary.LittleEndian.AppendUint32(b, h.TotalMembers)
	b = binary.LittleEndian.AppendUint16(b, h.Index)
	b = binary.LittleEndian.AppendUint16(b, h.Count)
	b = binary.LittleEndian.AppendUint32(b, h.FirstMember)
	b = binary.LittleEndian.AppendUint16(b, h.MemberCount)
	return binary.LittleEndian.AppendUint64(b, h.Digest)
}

// ParseFragmentHeader reads and checks a fragment header from the start of b
// against the member and fragment caps of cfg (zero fields, or a nil cfg,
// mean the defaults). It returns the header and FragmentHeaderSize, or an
// error wrapping ErrTruncated, ErrMalformed or ErrLimit.
func ParseFragmentHeader(b []byte, cfg *Config) (FragmentHeader, int, error) {
	var h FragmentHeader
	if len(b) < FragmentHeaderSize {
		return h, 0, fail(ErrTruncated, len(b), "fragment header")
	}
	_ = b[FragmentHeaderSize-1]
	h.Sender = island.SenderID(binary.LittleEndian.Uint32(b[0:]))
	h.Key.Island = binary.LittleEndian.Uint32(b[4:])
	h.Key.Epoch = binary.LittleEndian.Uint32(b[8:])
	h.Key.Topology = binary.LittleEndian.Uint32(b[12:])
	h.Key.Config = binary.LittleEndian.Uint32(b[16:])
	h.Key.Seq = binary.LittleEndian.Uint32(b[20:])
	h.Time = island.Time(binary.LittleEndian.Uint64(b[24:]))
	h.Segment = binary.LittleEndian.Uint32(b[32:])
	h.Flags = island.Flags(b[36])
	h.TotalMembers = binary.LittleEndian.Uint32(b[37:])
	h.Index = binary.LittleEndian.Uint16(b[41:])
	h.Count = binary.LittleEndian.Uint16(b[43:])
	h.FirstMember = binary.LittleEndian.Uint32(b[45:])
	h.MemberCount = binary.LittleEndian.Uint16(b[49:])
	h.Digest = binary.LittleEndian.Uint64(b[51:])
	if err := h.check(cfg); err != nil {
		return FragmentHeader{}, 0, err
	}
	return h, FragmentHeaderSize, nil
}

// check validates the header's fields against each other and the limits.
// Comparisons stay in the unsigned domain so that 32-bit targets cannot
// overflow int.
func (h *FragmentHeader) check(cfg *Config) error {
	switch {
	case h.Flags&^island.KnownFlags != 0:
		return fail(ErrMalformed, 36, "flags")
	case h.TotalMembers == 0:
		return fail(ErrMalformed, 37, "total members")
	case uint64(h.TotalMembers) > uint64(cfg.maxMembers()):
		return fail(ErrLimit, 37, "total members")
	case h.Count == 0:
		return fail(ErrMalformed, 43, "fragment count")
	case uint64(h.Count) > uint64(cfg.maxFragments()):
		return fail(ErrLimit, 43, "fragment count")
	case h.Index >= h.Count:
		return fail(ErrMalformed, 41, "fragment index")
	case h.MemberCount == 0:
		return fail(ErrMalformed, 49, "member count")
	case uint64(h.FirstMember)+uint64(h.MemberCount) > uint64(h.TotalMembers):
		return fail(ErrMalformed, 45, "member range")
	}
	return nil
}

// Fragment is one decoded fragment record. Its members stay in wire form in
// Raw (already checked: MemberCount records, every float finite); read them
// with Raw.ID and Raw.Member. Raw aliases the decoded datagram. A fragment of
// a quantized frame (Header.Quantized) holds QuantRecords in Raw instead.
type Fragment struct {
	Header FragmentHeader
	Raw    Records // MemberCount member records of MemberSize bytes each
}

// AppendFragment appends a whole fragment record (length prefix, header and
// members) to b. h.MemberCount must equal len(members).
func AppendFragment(b []byte, h *FragmentHeader, members []island.Member) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(FragmentHeaderSize+MemberSize*len(members)))
	b = h.Append(b)
	for i := range members {
		b = AppendMember(b, &members[i])
	}
	return b
}

// ParseFragment reads one length-prefixed fragment record from the start of
// b. The returned Fragment's Raw aliases b. It checks the header against
// cfg's caps (zero fields, or a nil cfg, mean the defaults), the record
// length against the member count, and that every member float is finite.
func ParseFragment(b []byte, cfg *Config) (Fragment, int, error) {
	if len(b) < RecordLengthSize {
		return Fragment{}, 0, fail(ErrTruncated, len(b), "record length")
	}
	length := binary.LittleEndian.Uint16(b)
	if int(length) > len(b)-RecordLengthSize {
		return Fragment{}, 0, fail(ErrTruncated, len(b), "record body")
	}
	if length < FragmentHeaderSize {
		return Fragment{}, 0, fail(ErrMalformed, 0, "record length")
	}
	body := b[RecordLengthSize : RecordLengthSize+int(length)]
	h, _, err := ParseFragmentHeader(body, cfg)
	if err != nil {
		return Fragment{}, 0, shift(err, RecordLengthSize)
	}
	if int(length) != FragmentHeaderSize+MemberSize*int(h.MemberCount) {
		return Fragment{}, 0, fail(ErrMalformed, 0, "record length")
	}
	raw := body[FragmentHeaderSize:]
	if i := firstNonFinite(raw); i >= 0 {
		return Fragment{}, 0, fail(ErrNonFinite, RecordLengthSize+FragmentHeaderSize+i, "member state")
	}
	return Fragment{Header: h, Raw: Records(raw)}, RecordLengthSize + int(length), nil
}

// shift moves the offset of a codec error by delta, for errors found inside a
// sub-slice.
func shift(err error, delta int) error {
	if e, ok := err.(*Error); ok && e.Offset >= 0 {
		e.Offset += delta
	}
	return err
}
