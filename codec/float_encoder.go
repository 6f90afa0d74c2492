package codec

import (
	"github.com/islandsync/islandsync/island"
)

// FloatEncoder cuts frames into fragments and packs fragments into datagrams of
// at most Config.MaxDatagram bytes. Fragments of several small frames share a
// datagram while they fit (coalescing); a frame too large for one datagram is
// cut in manifest order into as few fragments as fit, with member counts
// differing by at most one.
//
// Usage per broadcast tick:
//
//	enc.Reset()
//	for _, f := range frames { if err := enc.Add(f); err != nil { ... } }
//	for _, dg := range enc.Datagrams() { conn.Write(dg) }
//
// All output lives in buffers the FloatEncoder owns and reuses, so steady-state
// encoding does not allocate. An FloatEncoder is not safe for concurrent use.
type FloatEncoder struct {
	cfg     Config
	perFrag int
	buf     []byte
	ends    []int // end offset of each closed datagram in buf
	views   [][]byte
	cur     int    // start of the open datagram in buf, or -1
	records int    // records in the open datagram
	scratch []byte // the frame's member records, for its digest
}

// NewFloatEncoder returns an encoder with cfg's caps (zero fields mean defaults).
func NewFloatEncoder(cfg Config) (*FloatEncoder, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &FloatEncoder{cfg: c, perFrag: c.MembersPerFragment(), cur: -1}, nil
}

// Config returns the encoder's caps with defaults applied.
func (e *FloatEncoder) Config() Config { return e.cfg }

// Reset discards every datagram produced so far and keeps the buffers.
func (e *FloatEncoder) Reset() {
	e.buf = e.buf[:0]
	e.ends = e.ends[:0]
	e.cur = -1
	e.records = 0
}

// FragmentCount returns how many fragments a frame of n members needs.
func (e *FloatEncoder) FragmentCount(n int) int { return (n + e.perFrag - 1) / e.perFrag }

// Add validates f and appends its fragments. It refuses, without writing
// anything, a frame with no members (ErrEmptyFrame), unknown flag bits
// (ErrMalformed), a non-finite state (ErrNonFinite), more members than
// MaxMembers or more fragments than MaxFragments (ErrLimit).
func (e *FloatEncoder) Add(f *island.Frame) error {
	n := len(f.Members)
	switch {
	case n == 0:
		return fail(ErrEmptyFrame, -1, "members")
	case f.Flags&^island.KnownFlags != 0:
		return fail(ErrMalformed, -1, "flags")
	case n > e.cfg.MaxMembers:
		return fail(ErrLimit, -1, "total members")
	}
	count := e.FragmentCount(n)
	if count > e.cfg.MaxFragments {
		return fail(ErrLimit, -1, "fragment count")
	}
	for i := range f.Members {
		if !f.Members[i].State.Finite() {
			return fail(ErrNonFinite, -1, "member state")
		}
	}
	h := FragmentHeader{
		Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags,
		TotalMembers: uint32(n), Count: uint16(count),
	}
	e.scratch = e.scratch[:0]
	for i := range f.Members {
		e.scratch = AppendMember(e.scratch, &f.Members[i])
	}
	h.Digest = Digest(&h, e.scratch)
	base, extra := n/count, n%count
	first := 0
	for i := 0; i < count; i++ {
		size := base
		if i < extra {
			size++
		}
		h.Index = uint16(i)
		h.FirstMember = uint32(first)
		h.MemberCount = uint16(size)
		e.place(RecordLengthSize + FragmentHeaderSize + MemberSize*size)
		e.buf = AppendFragment(e.buf, &h, f.Members[first:first+size])
		e.records++
		first += size
	}
	return nil
}

// place makes sure the open datagram has room for a record of size bytes,
// closing it and opening a new one if not.
func (e *FloatEncoder) place(size int) {
	if e.cur >= 0 && (len(e.buf)-e.cur+size > e.cfg.MaxDatagram || e.records == MaxRecordsPerDatagram) {
		e.close()
	}
	if e.cur < 0 {
		e.cur = len(e.buf)
		e.buf = AppendDatagramHeader(e.buf, 0)
	}
}

func (e *FloatEncoder) close() {
	e.buf[e.cur+5] = byte(e.records)
	e.ends = append(e.ends, len(e.buf))
	e.cur = -1
	e.records = 0
}

// Datagrams closes the open datagram and returns every datagram produced since
// the last Reset, in order. The slices alias the encoder's buffer: they stay
// valid until the next Add or Reset.
func (e *FloatEncoder) Datagrams() [][]byte {
	if e.cur >= 0 {
		e.close()
	}
	e.views = splitAt(e.views[:0], e.buf, e.ends)
	return e.views
}

// splitAt appends to dst the datagrams of buf that end at ends, each capped
// at its own end so that appending to one never overwrites the next.
func splitAt(dst [][]byte, buf []byte, ends []int) [][]byte {
	start := 0
	for _, end := range ends {
		dst = append(dst, buf[start:end:end])
		start = end
	}
	return dst
}
