package codec

import (
	"encoding/binary"
	"slices"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Record is one record of a wire-3 datagram, checked whole but with its
// members not yet restored: a key record's members expand on their own
// (ExpandKey); a delta's residuals, read once by the decoder, need the
// baseline they were coded against (ExpandDelta); a run has none.
type Record struct {
	Kind  RecordKind
	Class quant.Class
	Flags island.Flags
	// Island is the island id; a run covers Island … Island+Count−1.
	Island uint32
	// Key records: the frame's sender and stream.
	Sender                           island.SenderID
	Epoch, Topology, Config, Segment uint32
	Lag                              uint32 // delta, run: sequence − baseline sequence (≥ 1)
	Count                            uint32 // run: islands covered (≥ 1), consecutive predicted islands of one batch with one lag and class
	Total                            int    // key, delta: members in the whole frame
	Fragments, Index, First, N       int    // key, delta: this part's place (one part: 1, 0, 0, Total)
	Parity                           int    // parity records: how many the frame carries
	// Joint: the positions and velocities of a keyframe's or delta's
	// members that hang on another by a pivot joint are coded against
	// where the joint puts them (joint.go): ExpandKey and ExpandDelta need
	// the island's Links.
	Joint   bool
	Digest  uint64 // fragments: the whole frame's digest
	members []byte // a delta's changed-member bitmap (none for a one-member whole delta)
	raw     []byte // a fragment: its coded members, as received
	// A batch keyframe's members as Decode read them: stable id,
	// generation and six values each.
	vals []int64
	// A delta's residuals as Decode read them: for each changed member its
	// field mask, then its nonzero residuals in field order.
	res []int64
}

// Decoder parses wire-3 datagrams into records it owns and reuses. Not safe
// for concurrent use.
type Decoder struct {
	cfg  Config
	recs []Record
	ps   parseStorage // the records' residuals, values and bitmaps, back to back
}

// NewDecoder returns a decoder enforcing cfg (zero fields mean defaults).
func NewDecoder(cfg Config) (*Decoder, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &Decoder{cfg: c}, nil
}

// Header is a quantized datagram's number, broadcast sequence and
// authority time.
type Header struct {
	// Packet numbers the datagram among those sent to this observer
	// (serial arithmetic): what the observer confirms it received.
	Packet uint32
	Seq    uint32
	Time   island.Time
	// Sum is the low 32 bits of the hash of the sums (FrameSum) of the
	// whole frames the datagram carries, in record order, the islands a
	// run covers each in turn: what the receiver checks its restoration
	// against before it commits any of them.
	Sum uint32
}

// DatagramVersion returns the version byte of a datagram that starts with
// the islandsync magic, or an error wrapping ErrTruncated or ErrBadMagic.
func DatagramVersion(b []byte) (int, error) {
	if len(b) < 5 {
		return 0, fail(ErrTruncated, len(b), "datagram header")
	}
	if string(b[:4]) != Magic {
		return 0, fail(ErrBadMagic, 0, "magic")
	}
	return int(b[4]), nil
}

// Header parses and checks a wire-3 datagram's header alone: its size
// against the cap, magic, version, length and check field — every check
// Decode makes before the records. The records are not read.
func (d *Decoder) Header(b []byte) (Header, error) {
	var h Header
	if len(b) > d.cfg.MaxDatagram {
		return h, fail(ErrLimit, d.cfg.MaxDatagram, "datagram size")
	}
	if _, err := DatagramVersion(b); err != nil {
		return h, err
	}
	if b[4] != VersionV3 {
		return h, fail(ErrVersion, 4, "version")
	}
	if len(b) < HeaderSize {
		return h, fail(ErrTruncated, len(b), "datagram header")
	}
	if binary.LittleEndian.Uint32(b[checkAt:]) != datagramCheck(b) {
		return h, fail(ErrMalformed, checkAt, "datagram check")
	}
	h.Packet = binary.LittleEndian.Uint32(b[5:])
	h.Seq = binary.LittleEndian.Uint32(b[9:])
	h.Time = island.Time(binary.LittleEndian.Uint64(b[13:]))
	h.Sum = binary.LittleEndian.Uint32(b[sumAt:])
	return h, nil
}

// Decode parses and checks one whole wire-3 datagram. The records are the
// decoder's and stay valid until the next call; their members alias b, and
// their residuals are in the decoder's storage. Any bad record rejects the
// whole datagram (nil, error). Decode is total and
// canonical: every varint is minimal, every reserved bit zero, every count
// checked against the caps and the bytes present before it is used.
func (d *Decoder) Decode(b []byte) (Header, []Record, error) {
	h, err := d.Header(b)
	if err != nil {
		return h, nil, err
	}
	d.recs = d.recs[:0]
	p := d.ps.parser(b, HeaderSize)
	var last uint32
	for p.off < len(b) {
		if RecordKind(b[p.off]&headKind) == KindBatch {
			var err error
			if last, err = d.batch(&p, last, len(d.recs) == 0); err != nil {
				d.recs = d.recs[:0]
				return h, nil, err
			}
			continue
		}
		var r Record
		if err := p.record(&r, &d.cfg, last, len(d.recs) == 0); err != nil {
			d.recs = d.recs[:0]
			return h, nil, err
		}
		last = r.Island
		if r.Kind == KindRun {
			last = r.Island + r.Count - 1
		}
		d.recs = append(d.recs, r)
	}
	if len(d.recs) == 0 {
		return h, nil, fail(ErrMalformed, HeaderSize, "no record")
	}
	return h, d.recs, nil
}

type parser struct {
	b    []byte
	off  int
	res  *[]int64 // where deltas' residuals go
	vals *[]int64 // where keyframes' values go
	bits *[]byte  // where deltas' bitmaps go
	st   *batchState
	rc   *rcDecoder
	ref  struct {
		ok  bool
		lag uint32
	}
}

func (p *parser) uvarint(field string) (uint64, error) {
	v, n := binary.Uvarint(p.b[p.off:])
	switch {
	case n == 0:
		return 0, fail(ErrTruncated, len(p.b), field)
	case n < 0:
		return 0, fail(ErrMalformed, p.off, field)
	case n != uvarintLen(v):
		return 0, fail(ErrMalformed, p.off, field+" (not minimal)")
	}
	p.off += n
	return v, nil
}

// u32 reads a uvarint that must fit 32 bits.
func (p *parser) u32(field string) (uint32, error) {
	at := p.off
	v, err := p.uvarint(field)
	if err != nil {
		return 0, err
	}
	if v > 1<<32-1 {
		return 0, fail(ErrMalformed, at, field)
	}
	return uint32(v), nil
}

// bounded reads a uvarint in [lo, hi].
func (p *parser) bounded(field string, lo, hi uint64, limit bool) (int, error) {
	at := p.off
	v, err := p.uvarint(field)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		if limit && v > hi {
			return 0, fail(ErrLimit, at, field)
		}
		return 0, fail(ErrMalformed, at, field)
	}
	return int(v), nil
}

func (p *parser) record(r *Record, cfg *Config, last uint32, first bool) error {
	at := p.off
	hb := p.b[p.off]
	p.off++
	r.Kind = RecordKind(hb & headKind)
	r.Class = quant.Class(hb & headClass >> 2)
	if hb&headInitial != 0 {
		r.Flags |= island.FlagInitial
	}
	if hb&headRelease != 0 {
		r.Flags |= island.FlagReleasing
	}
	frag := hb&headFragment != 0
	switch {
	case r.Class > quant.Loose:
		return fail(ErrMalformed, at, "record head")
	case r.Kind == KindBatch:
		return fail(ErrMalformed, at, "batch head")
	case !frag:
		return fail(ErrMalformed, at, "a whole frame outside a batch")
	case hb&headSameRef != 0 && (r.Kind == KindKey || !p.ref.ok):
		return fail(ErrMalformed, at, "record head: no reference to share")
	case r.Kind == KindRun && r.Flags != 0:
		return fail(ErrMalformed, at, "run head")
	case r.Kind == KindRun && frag && hb&headSameRef != 0:
		return fail(ErrMalformed, at, "parity head")
	}
	parity := r.Kind == KindRun && frag
	delta, err := p.u32("island")
	if err != nil {
		return err
	}
	if !first && delta == 0 && !frag { // ascending; only fragments of one frame may repeat an island
		return fail(ErrMalformed, at+1, "island order")
	}
	isl := uint64(last) + uint64(delta)
	if first {
		isl = uint64(delta)
	}
	if isl > 1<<32-1 {
		return fail(ErrMalformed, at+1, "island")
	}
	r.Island = uint32(isl)
	if parity {
		return p.parity(r)
	}
	if r.Kind == KindKey {
		s, err := p.u32("sender")
		if err != nil {
			return err
		}
		r.Sender = island.SenderID(s)
		for _, f := range []*uint32{&r.Epoch, &r.Topology, &r.Config, &r.Segment} {
			if *f, err = p.u32("key"); err != nil {
				return err
			}
		}
	}
	switch {
	case hb&headSameRef != 0:
		r.Lag = p.ref.lag
	case r.Kind != KindKey:
		lag, err := p.bounded("lag", 1, 1<<31, false)
		if err != nil {
			return err
		}
		r.Lag = uint32(lag)
		if p.ref.ok && p.ref.lag == r.Lag {
			return fail(ErrMalformed, at, "record head: a shared reference written out")
		}
	}
	if r.Kind != KindKey {
		p.ref.ok, p.ref.lag = true, r.Lag
	}
	if r.Total, err = p.bounded("total members", 1, uint64(cfg.MaxMembers), true); err != nil {
		return err
	}
	r.Fragments, r.Index, r.First, r.N = 1, 0, 0, r.Total
	if frag {
		if r.Fragments, err = p.bounded("fragment count", 2, uint64(cfg.MaxFragments), true); err != nil {
			return err
		}
		if r.Index, err = p.bounded("fragment index", 0, uint64(r.Fragments-1), false); err != nil {
			return err
		}
		if r.First, err = p.bounded("first member", 0, uint64(r.Total-1), false); err != nil {
			return err
		}
		if r.N, err = p.bounded("member count", 1, uint64(r.Total-r.First), false); err != nil {
			return err
		}
		if len(p.b)-p.off < 8 {
			return fail(ErrTruncated, len(p.b), "digest")
		}
		r.Digest = binary.LittleEndian.Uint64(p.b[p.off:])
		p.off += 8
	}
	// The members: a range-coded stream of the length given, its contexts
	// fresh.
	at = p.off
	l, err := p.u32("fragment length")
	if err != nil {
		return err
	}
	if uint64(l) > uint64(len(p.b)-p.off) {
		return fail(ErrTruncated, len(p.b), "fragment members")
	}
	r.raw = p.b[p.off : p.off+int(l)]
	p.off += int(l)
	st := p.st
	st.reset()
	p.rc.reset(r.raw)
	var ok bool
	if r.Kind == KindKey {
		vs := len(*p.vals)
		if *p.vals, r.Joint, ok = st.decodeKey(p.rc, r.N, *p.vals, true); !ok {
			return fail(ErrMalformed, at, "fragment: key value")
		}
		r.vals = (*p.vals)[vs:len(*p.vals):len(*p.vals)]
		return nil
	}
	bs := len(*p.bits)
	*p.bits = zeroed(*p.bits, (r.N+7)/8)
	r.members = (*p.bits)[bs:len(*p.bits):len(*p.bits)]
	rs := len(*p.res)
	if *p.res, r.Joint, ok = st.decodeDelta(p.rc, r.N, *p.res, r.members); !ok {
		return fail(ErrMalformed, at, "fragment: residual")
	}
	r.res = (*p.res)[rs:len(*p.res):len(*p.res)]
	return nil
}

// parseStorage is where a parser keeps what it decodes of range-coded
// members: residuals, keyframe values and bitmaps, and the coder's state.
type parseStorage struct {
	res, vals []int64
	bits      []byte
	st        batchState
	rc        rcDecoder
}

func (ps *parseStorage) parser(b []byte, off int) parser {
	ps.res, ps.vals, ps.bits = ps.res[:0], ps.vals[:0], ps.bits[:0]
	return parser{b: b, off: off, res: &ps.res, vals: &ps.vals, bits: &ps.bits, st: &ps.st, rc: &ps.rc}
}

// parity reads the rest of a parity record: data fragments, parity
// records, this one's index, the shard length and the shard.
func (p *parser) parity(r *Record) error {
	r.Kind = KindParity
	var err error
	if r.Fragments, err = p.bounded("data fragments", 2, MaxParityFragments, true); err != nil {
		return err
	}
	if r.Parity, err = p.bounded("parity records", 1, MaxParity, true); err != nil {
		return err
	}
	if r.Index, err = p.bounded("parity index", 0, uint64(r.Parity-1), false); err != nil {
		return err
	}
	at := p.off
	l, err := p.u32("shard length")
	if err != nil {
		return err
	}
	n := int(l)
	switch {
	case n == 0:
		return fail(ErrMalformed, at, "shard length")
	case uint64(l) > uint64(len(p.b)-p.off):
		return fail(ErrTruncated, len(p.b), "shard")
	}
	r.members = p.b[p.off : p.off+n]
	p.off += n
	return nil
}

// Shard returns a parity record's shard (it aliases the datagram).
func (r *Record) Shard() []byte { return r.members }

// ExpandKey decodes a key record's members into dst (reused), with the
// record's Segment and the datagram time t in every record. links are the
// island's for the record's topology and config (nil when none; only a
// joint-predicted keyframe reads them, and reports ErrNoLinks when they do
// not describe its island, topology, config and member count).
func (r *Record) ExpandKey(dst []baseline.Entry, links *Links, t island.Time) ([]baseline.Entry, error) {
	dst = dst[:0]
	if r.Joint {
		if links == nil || links.Members() != r.Total || links.Island != r.Island || links.Topology != r.Topology || links.Config != r.Config {
			return dst, fail(ErrNoLinks, -1, "joint-predicted keyframe")
		}
		if !jointOK(r.Class.Precision()) {
			return dst, fail(ErrMalformed, -1, "joint-predicted keyframe at this precision")
		}
	}
	p := r.Class.Precision()
	for i, v := 0, r.vals; len(v) >= 8; i, v = i+1, v[8:] {
		var e baseline.Entry
		e.ID = island.MemberID{Stable: uint64(v[0]), Generation: uint32(v[1])}
		e.Q = quant.State{X: v[2], Y: v[3], Angle: v[4], VX: v[5], VY: v[6], AngVel: v[7]}
		e.Time, e.Segment = t, r.Segment
		if r.Joint {
			r.resolveKey(&e.Q, dst, i, links, p)
		}
		dst = append(dst, e)
	}
	return dst, nil
}

// resolveKey turns member i's values as coded in a joint-predicted
// keyframe into its values, given the members before it in dst: its x, y,
// vx and vy against its joint prediction when it hangs on the world or on
// a member of this record, every other value against the member before
// it (the record's first member: as such).
func (r *Record) resolveKey(q *quant.State, dst []baseline.Entry, i int, links *Links, p quant.Precision) {
	var prev quant.State
	if i > 0 {
		prev = dst[i-1].Q
	}
	q.Angle += prev.Angle
	q.AngVel += prev.AngVel
	lk := &links.links[r.First+i]
	if lk.parent == linkWorld || lk.parent >= int32(r.First) {
		var par *quant.State
		if lk.parent >= 0 {
			par = &dst[int(lk.parent)-r.First].Q
		}
		pred := *q
		if predictJoint(&pred, par, lk, p) {
			q.X += pred.X
			q.Y += pred.Y
			q.VX += pred.VX
			q.VY += pred.VY
			return
		}
	}
	q.X += prev.X
	q.Y += prev.Y
	q.VX += prev.VX
	q.VY += prev.VY
}

// ExpandDelta decodes a delta record's members [First, First+N) against
// base (the frame it names: the same members in the same order) into dst,
// reused: each member is the baseline's motion carried to time t, plus its
// residuals — or, in a joint-predicted record, for a member hanging on
// another, its position and velocity where the joint puts them, plus its
// residuals. links are the island's links for the baseline's topology and
// config (nil when none; only a joint-predicted record reads them). It
// reports ErrMalformed when base does not hold Total members, and
// ErrNoLinks when the record is joint-predicted and links do not describe
// the baseline's island, topology, config and member count.
func (r *Record) ExpandDelta(dst []baseline.Entry, base *baseline.Table, links *Links, t island.Time) ([]baseline.Entry, error) {
	if len(base.Entries) != r.Total {
		return dst[:0], fail(ErrMalformed, -1, "delta member count")
	}
	if r.Class != base.Frame.Class {
		return dst[:0], fail(ErrMalformed, -1, "delta class differs from its baseline's")
	}
	if r.Joint {
		k := base.Frame.Key
		if links == nil || links.Members() != r.Total || links.Island != k.Island || links.Topology != k.Topology || links.Config != k.Config {
			return dst[:0], fail(ErrNoLinks, -1, "joint-predicted delta")
		}
		if !jointOK(base.Frame.Class.Precision()) {
			return dst[:0], fail(ErrMalformed, -1, "joint-predicted delta at this precision")
		}
		return r.expandJoint(dst, base, links, t), nil
	}
	ps, as := shifts(base.Frame.Class.Precision())
	dt := int64(t - base.Frame.Time)
	one := [1]byte{1}
	bm := one[:] // a whole one-member delta has no bitmap: its member is coded
	if r.Total != 1 || r.Fragments != 1 {
		bm = r.members[:(r.N+7)/8]
	}
	res, k := r.res, 0
	src := base.Entries[r.First : r.First+r.N]
	dst = slices.Grow(dst[:0], r.N)[:r.N]
	for i := range src {
		b, e := &src[i], &dst[i]
		e.ID, e.Q, e.Time, e.Segment = b.ID, b.Q, t, b.Segment
		q := &e.Q
		predictInto(q, dt, ps, as)
		if bm[i>>3]&(1<<(i&7)) == 0 {
			predictVel(q, &b.Q, dt, ps, as)
			continue
		}
		mask := res[k]
		k++
		if mask&1 != 0 {
			q.X += res[k]
			k++
		}
		if mask&2 != 0 {
			q.Y += res[k]
			k++
		}
		if mask&4 != 0 {
			q.Angle += res[k]
			k++
		}
		predictVel(q, &b.Q, dt, ps, as) // from the positions just restored
		if mask&8 != 0 {
			q.VX += res[k]
			k++
		}
		if mask&16 != 0 {
			q.VY += res[k]
			k++
		}
		if mask&32 != 0 {
			q.AngVel += res[k]
			k++
		}
	}
	return dst, nil
}

// expandJoint is ExpandDelta for a joint-predicted record whose links
// were checked.
func (r *Record) expandJoint(dst []baseline.Entry, base *baseline.Table, links *Links, t island.Time) []baseline.Entry {
	p := base.Frame.Class.Precision()
	ps, as := shifts(p)
	dt := int64(t - base.Frame.Time)
	bm := r.members[:(r.N+7)/8]
	res, k := r.res, 0
	src := base.Entries[r.First : r.First+r.N]
	dst = slices.Grow(dst[:0], r.N)[:r.N]
	for i := range src {
		b, e := &src[i], &dst[i]
		e.ID, e.Q, e.Time, e.Segment = b.ID, b.Q, t, b.Segment
		var d [6]int64
		if bm[i>>3]&(1<<(i&7)) != 0 {
			mask := res[k]
			k++
			for f := range d {
				if mask&(1<<f) != 0 {
					d[f] = res[k]
					k++
				}
			}
		}
		q := &e.Q
		predictInto(q, dt, ps, as)
		q.X += d[0]
		q.Y += d[1]
		q.Angle += d[2]
		predictVel(q, &b.Q, dt, ps, as)
		q.VX += d[3]
		q.VY += d[4]
		q.AngVel += d[5]
		lk := &links.links[r.First+i]
		var par *quant.State
		switch {
		case lk.parent == linkWorld:
		case lk.parent >= int32(r.First): // restored before it, in this record
			par = &dst[int(lk.parent)-r.First].Q
		default: // no parent, or one in an earlier fragment
			continue
		}
		if predictJoint(q, par, lk, p) {
			q.X += d[0]
			q.Y += d[1]
			q.VX += d[3]
			q.VY += d[4]
		}
	}
	return dst
}

// Predict appends to dst the members of base carried to time t by the
// baseline's motion: what a run record restores for an island. (Pass
// dst[:0] to reuse its storage for them alone.)
func Predict(dst []baseline.Entry, base *baseline.Table, t island.Time) []baseline.Entry {
	ps, as := shifts(base.Frame.Class.Precision())
	dt := int64(t - base.Frame.Time)
	off, n := len(dst), len(base.Entries)
	dst = slices.Grow(dst, n)[:off+n]
	for i := range base.Entries {
		b, e := &base.Entries[i], &dst[off+i]
		*e = *b
		e.Time = t
		if b.Q.VX|b.Q.VY|b.Q.AngVel != 0 { // a body at rest stays exactly as it is
			predictInto(&e.Q, dt, ps, as)
			predictVel(&e.Q, &b.Q, dt, ps, as)
		}
	}
	return dst
}

// batch reads a batch record: head, first island (after last, unless it is
// the datagram's first record), island count, stream length and stream;
// then each island from the stream, handed back as a record of its own —
// a keyframe, a delta, or a run (consecutive predicted islands with one
// lag and class share one). It returns the record's last island.
func (d *Decoder) batch(p *parser, last uint32, first bool) (uint32, error) {
	at := p.off
	if p.b[p.off] != byte(KindBatch) {
		return 0, fail(ErrMalformed, at, "batch head")
	}
	p.off++
	delta, err := p.u32("island")
	if err != nil {
		return 0, err
	}
	if !first && delta == 0 {
		return 0, fail(ErrMalformed, at+1, "island order")
	}
	isl := uint64(last) + uint64(delta)
	if isl > 1<<32-1 {
		return 0, fail(ErrMalformed, at+1, "island")
	}
	n, err := p.bounded("batch islands", 1, MaxBatchIslands, true)
	if err != nil {
		return 0, err
	}
	at = p.off
	l, err := p.u32("batch length")
	if err != nil {
		return 0, err
	}
	if uint64(l) > uint64(len(p.b)-p.off) {
		return 0, fail(ErrTruncated, len(p.b), "batch")
	}
	d.ps.rc.reset(p.b[p.off : p.off+int(l)])
	p.off += int(l)
	st := &d.ps.st
	st.reset()
	members := 0
	start := len(d.recs)
	for range n {
		var it batchIsland
		if field, ok := st.decodeHead(&d.ps.rc, &it, uint32(isl), d.cfg.MaxMembers); !ok {
			return 0, fail(ErrMalformed, at, "batch: "+field)
		}
		if members += it.n; members > MaxBatchMembers {
			return 0, fail(ErrLimit, at, "batch members")
		}
		if it.kind == batchPredicted { // most islands: a run goes on, or starts
			if k := len(d.recs) - 1; k >= start {
				if q := &d.recs[k]; q.Kind == KindRun && q.Lag == it.lag && q.Class == it.class && q.Island+q.Count == it.island {
					q.Count++
					continue
				}
			}
			d.recs = append(d.recs, Record{Kind: KindRun, Class: it.class, Flags: it.flags, Island: it.island, Lag: it.lag, Count: 1})
			continue
		}
		r := Record{Class: it.class, Flags: it.flags, Island: it.island, Lag: it.lag,
			Total: it.n, Fragments: 1, N: it.n}
		switch it.kind {
		case batchDelta:
			r.Kind = KindDelta
			rs := len(d.ps.res)
			if it.n > 1 {
				bs := len(d.ps.bits)
				d.ps.bits = zeroed(d.ps.bits, (it.n+7)/8)
				r.members = d.ps.bits[bs:len(d.ps.bits):len(d.ps.bits)]
			}
			var ok bool
			if d.ps.res, r.Joint, ok = st.decodeDelta(&d.ps.rc, it.n, d.ps.res, r.members); !ok {
				return 0, fail(ErrMalformed, at, "batch: residual")
			}
			r.res = d.ps.res[rs:len(d.ps.res):len(d.ps.res)]
		case batchKey:
			r.Kind = KindKey
			r.Sender = island.SenderID(it.key[0])
			r.Epoch, r.Topology, r.Config, r.Segment = it.key[1], it.key[2], it.key[3], it.key[4]
			vs := len(d.ps.vals)
			var ok bool
			if d.ps.vals, r.Joint, ok = st.decodeKey(&d.ps.rc, it.n, d.ps.vals, it.n > 1); !ok {
				return 0, fail(ErrMalformed, at, "batch: key value")
			}
			r.vals = d.ps.vals[vs:len(d.ps.vals):len(d.ps.vals)]
		}
		d.recs = append(d.recs, r)
	}
	return st.last, nil
}

// zeroed appends n zero bytes to b, growing it only when it lacks room (an
// append of make(…)… may allocate the zeros first where the compiler does
// not fuse the two, as under the race detector).
func zeroed(b []byte, n int) []byte {
	at := len(b)
	b = slices.Grow(b, n)[:at+n]
	clear(b[at:])
	return b
}
