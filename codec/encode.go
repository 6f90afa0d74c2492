package codec

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/klauspost/reedsolomon"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// ByteBreakdown says where an encoder's bytes went, cumulatively.
type ByteBreakdown struct {
	Datagrams int64 // datagrams produced
	Total     int64 // every byte
	Headers   int64 // datagram headers (29 bytes each)
	Records   int64 // record heads, islands, keys, lags, counts, fragment fields; in batch records, the coded kinds, gaps, classes, flags, lags and counts
	Digests   int64 // fragments' frame digests
	Indices   int64 // changed and nonzero flags, member identities
	Position  int64 // x and y values or residuals
	Angle     int64 // angle values or residuals
	Velocity  int64 // velocity and angular velocity values or residuals
	Parity    int64 // parity records
}

// Add adds o's counts to b.
func (b *ByteBreakdown) Add(o ByteBreakdown) {
	b.Datagrams += o.Datagrams
	b.Total += o.Total
	b.Headers += o.Headers
	b.Records += o.Records
	b.Digests += o.Digests
	b.Indices += o.Indices
	b.Position += o.Position
	b.Angle += o.Angle
	b.Velocity += o.Velocity
	b.Parity += o.Parity
}

// Encoder builds wire-3 datagrams for one observer: one broadcast's frames,
// each as a keyframe, a delta against a baseline the observer holds,
// or part of a run of unchanged islands; several islands share a datagram,
// and a frame too large for one is cut at member boundaries into fragments.
// Output lives in buffers the encoder owns and reuses. Not safe for
// concurrent use.
type Encoder struct {
	cfg     Config
	packet  uint32 // the next datagram's number
	seq     uint32
	time    island.Time
	buf     []byte
	ends    []int
	views   [][]byte
	cur     int
	lastIsl uint32
	// ref is the lag of the last delta or run record in the open datagram,
	// which the next one may share (headSameRef).
	ref struct {
		ok  bool
		lag uint32
	}
	rec   []byte
	raw   []byte
	spans []span
	// parity: parity records per fragmented frame (0: none), and the data
	// shards of the frame being cut
	parity   int
	shards   [][]byte
	shardLen int
	rs       map[rsKey]reedsolomon.Encoder
	bytes    ByteBreakdown
	bat      openBatch
	// the fragments of the frame being cut: streams back to back, their
	// ends, and their symbols' costs
	fragBuf   []byte
	fragEnds  []int
	fragCosts [][numCats]int64
	dres      []resMember // the delta being added: each member's residuals
	// joint: the keyframe or delta being added is joint-predicted, by
	// links; for a delta, dres holds those residuals and dtmp every
	// member's residuals against the baseline's motion, for members whose
	// parent lies before their fragment
	joint bool
	dtmp  []resMember
	links *Links
	// kjp: a joint-predicted keyframe's members' joint predictions
	kjp []jointPred
	// parityCut: with parity on, big frames go in fragments (SetParityCut)
	parityCut bool
	keys      []keyMember // the keyframe being added: each member
	// islands each datagram carries records of, back to back; islEnds
	// holds each closed datagram's end in isl
	isl     []uint32
	islEnds []int
	partsD  []int // per closed datagram: see Parts
	// parts is Parts of the open datagram: 1 until a fragment (the frame's
	// fragment count) or a parity record (0) is placed in it
	parts int
	// sum hashes the sums of the whole frames the open datagram carries,
	// in order
	sum DatagramSum
	// the sum of the frame being added
	fsum uint64
	// cuts remembers how the frames of the current broadcast (Begin's seq
	// and time) were cut into fragments, so that a frame cut for one
	// observer is not coded again for the next (cutsFor: that broadcast)
	cuts     map[cutKey]*cutDone
	cutBytes int        // the streams' bytes cuts holds
	spare    []*cutDone // cuts of past broadcasts, for reuse
	cutsFor  struct {
		seq uint32
		t   island.Time
	}
}

// cutKey names a frame's cut into fragments: the frame (its sum covers
// its key, time and members), what it is coded against, and the room each
// fragment has. Two observers' encodings of one frame share it when they
// share the baseline and the datagram size.
type cutKey struct {
	sum        uint64
	lag        uint32 // a delta's baseline: that many sequences before the frame; 0 for a keyframe
	key, joint bool
	links      *Links
	n, room    int
	parity     int
}

// cutDone is a remembered cut: what cutFor left in the encoder's fragment
// fields (its spans, streams, their ends and costs).
type cutDone struct {
	spans []span
	buf   []byte
	ends  []int
	costs [][numCats]int64
}

// Bounds of the cuts remembered: at most maxCuts frames and maxCutBytes of
// fragment streams for one broadcast (past either, further frames are cut
// for each observer), and of past broadcasts' storage kept for reuse, the
// entries whose streams took at most maxSpareBytes.
const (
	maxCuts       = 256
	maxCutBytes   = 4 << 20
	maxSpareBytes = 64 << 10
)

// openBatch is the batch record being coded into the open datagram.
type openBatch struct {
	open  bool
	first uint32 // its first island
	st    batchState
	rc    rcEncoder
	// members coded so far (MaxBatchMembers caps them)
	members int
}

// Bytes returns where the encoder's bytes went since it was made.
func (e *Encoder) Bytes() ByteBreakdown { return e.bytes }

// ParityBytes is Bytes().Parity without copying the breakdown: the bytes of
// the parity records encoded since NewEncoder.
func (e *Encoder) ParityBytes() int64 { return e.bytes.Parity }

// NewEncoder returns an encoder with cfg's caps.
func NewEncoder(cfg Config) (*Encoder, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &Encoder{cfg: c, cur: -1, parityCut: true}, nil
}

// SetParityCut says whether, with parity on, a frame that would fill
// 1/ParityCut of a datagram or more is cut into fragments so that parity
// protects it (on, the default), or goes whole in a batch like any frame
// that fits (off: for a sender whose byte budget pays for parity only
// from what the frames leave, where cutting a frame for parity would take
// more datagrams from a path already short of room).
func (e *Encoder) SetParityCut(on bool) { e.parityCut = on }

// Begin discards previous output and starts the datagrams of one broadcast
// to one observer: every frame added until the next Begin has sequence seq
// and authority time t, and the datagrams are numbered packet, packet+1, …
// (serial arithmetic; Next tells where they ended).
func (e *Encoder) Begin(packet, seq uint32, t island.Time) {
	e.packet, e.seq, e.time = packet, seq, t
	if seq != e.cutsFor.seq || t != e.cutsFor.t {
		for _, done := range e.cuts {
			if cap(done.buf) <= maxSpareBytes {
				e.spare = append(e.spare, done)
			}
		}
		clear(e.cuts)
		e.cutBytes, e.cutsFor.seq, e.cutsFor.t = 0, seq, t
	}
	e.buf, e.ends, e.cur = e.buf[:0], e.ends[:0], -1
	e.isl, e.islEnds, e.partsD = e.isl[:0], e.islEnds[:0], e.partsD[:0]
	e.bat.open = false
}

// Next returns the number the next datagram would have: Begin's packet plus
// the datagrams produced since.
func (e *Encoder) Next() uint32 { return e.packet }

// Parts tells what datagram i of the last Datagrams call carries: 0 a
// parity record (no data of a frame), 1 whole records, k ≥ 2 one fragment
// of a frame cut into k.
func (e *Encoder) Parts(i int) int { return e.partsD[i] }

func (e *Encoder) open() {
	if e.cur >= 0 {
		return
	}
	e.cur = len(e.buf)
	e.parts = 1
	e.bytes.Datagrams++
	e.bytes.Headers += HeaderSize
	e.bytes.Total += HeaderSize
	e.buf = append(e.buf, Magic...)
	e.buf = append(e.buf, VersionV3)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, e.packet)
	e.packet++
	e.buf = binary.LittleEndian.AppendUint32(e.buf, e.seq)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(e.time))
	e.buf = append(e.buf, 0, 0, 0, 0, 0, 0, 0, 0) // the sum and the check, written at close
	e.lastIsl = 0
	e.ref.ok = false
	e.sum.Reset()
}

func (e *Encoder) close() {
	e.finishBatch()
	if e.cur >= 0 {
		dg := e.buf[e.cur:]
		binary.LittleEndian.PutUint32(dg[sumAt:], e.sum.Sum32())
		binary.LittleEndian.PutUint32(dg[checkAt:], datagramCheck(dg))
		e.ends = append(e.ends, len(e.buf))
		e.islEnds = append(e.islEnds, len(e.isl))
		e.partsD = append(e.partsD, e.parts)
		e.cur = -1
	}
}

func (e *Encoder) room() int {
	if e.cur < 0 {
		return e.cfg.MaxDatagram - HeaderSize
	}
	return e.cfg.MaxDatagram - (len(e.buf) - e.cur)
}

// place appends one record whose bytes after the island field are body, for
// island isl, opening a datagram when the current one lacks room. A delta
// or run record's body starts with its lag (refLen bytes of it); it is left
// out when the previous such record in the datagram has the same one.
func (e *Encoder) place(head byte, isl uint32, body []byte, lag uint32, refLen int) {
	size := 1 + uvarintLen(uint64(isl-e.lastIsl)) + len(body)
	if e.cur >= 0 && (isl <= e.lastIsl || size > e.room()) {
		e.close()
	}
	e.open()
	if refLen > 0 {
		if e.ref.ok && e.ref.lag == lag {
			head |= headSameRef
			body = body[refLen:]
		}
		e.ref.ok, e.ref.lag = true, lag
	}
	n0 := len(e.buf)
	e.buf = append(e.buf, head)
	e.buf = appendU(e.buf, uint64(isl-e.lastIsl))
	e.buf = append(e.buf, body...)
	e.lastIsl = isl
	e.noteIslands(isl, isl)
	e.bytes.Total += int64(len(e.buf) - n0)
	e.bytes.Records += int64(len(e.buf) - n0) // the caller moves what was not a header elsewhere
}

// noteIslands records that the open datagram carries islands lo … hi.
func (e *Encoder) noteIslands(lo, hi uint32) {
	for v := lo; ; v++ {
		e.isl = append(e.isl, v)
		if v == hi {
			return
		}
	}
}

// Islands returns the islands datagram i of the last Datagrams call carries
// records of, ascending and distinct. It aliases the encoder's memory until the next Begin.
func (e *Encoder) Islands(i int) []uint32 {
	start := 0
	if i > 0 {
		start = e.islEnds[i-1]
	}
	return e.isl[start:e.islEnds[i]:e.islEnds[i]]
}

// Size returns about how many bytes the datagrams of this broadcast take
// so far: every datagram and record already written, and the open batch
// record with its head and its stream as far as the range coder has
// written it, held back and about two bytes for finishing it. The
// difference around an AddKey or AddDelta is what that frame cost, to
// within a few bytes, which is how a sender learns the size of the frames
// it schedules under a byte budget.
func (e *Encoder) Size() int {
	n := len(e.buf)
	if e.bat.open {
		b := &e.bat
		stream := len(b.rc.out) + b.rc.pending + 2 // and about what finishing the coder adds
		n += 1 + uvarintLen(uint64(b.first-e.lastIsl)) + uvarintLen(uint64(b.st.count)) + uvarintLen(uint64(stream)) + stream
	}
	return n
}

// Datagrams closes the open datagram and returns every datagram of this
// broadcast. The slices alias the encoder's buffer until the next Begin.
func (e *Encoder) Datagrams() [][]byte {
	e.close()
	e.views = splitAt(e.views[:0], e.buf, e.ends)
	return e.views
}

// appendKeyFields appends what a key record has before its member count:
// sender, epoch, topology, config and segment.
func appendKeyFields(dst []byte, sender island.SenderID, key island.Key, segment uint32) []byte {
	for _, v := range [...]uint32{uint32(sender), key.Epoch, key.Topology, key.Config, segment} {
		dst = appendU(dst, uint64(v))
	}
	return dst
}

// appendPart appends a fragment record's place in its frame and the
// frame's 64-bit digest.
func appendPart(dst []byte, fragments, index, first, n int, digest uint64) []byte {
	for _, v := range [...]int{fragments, index, first, n} {
		dst = appendU(dst, uint64(v))
	}
	return binary.LittleEndian.AppendUint64(dst, digest)
}

func head(kind RecordKind, class quant.Class, flags island.Flags) byte {
	h := byte(kind) | byte(class)<<2
	if flags&island.FlagInitial != 0 {
		h |= headInitial
	}
	if flags&island.FlagReleasing != 0 {
		h |= headRelease
	}
	return h
}

// AddKey adds f as a keyframe.
func (e *Encoder) AddKey(f *Frame) error {
	if err := e.check(f); err != nil {
		return err
	}
	e.fsum = e.sumOf(f)
	keys := e.keys[:0]
	for i := range f.Members {
		m := &f.Members[i]
		keys = append(keys, keyMember{stable: m.ID.Stable, gen: m.ID.Generation,
			v: [6]int64{m.Q.X, m.Q.Y, m.Q.Angle, m.Q.VX, m.Q.VY, m.Q.AngVel}})
	}
	e.keys = keys
	e.joint, e.links = false, nil
	if linksFit(f) {
		e.jointKey(f, f.Links)
	}
	it := batchIsland{island: f.Key.Island, kind: batchKey, class: f.Class, flags: f.Flags, n: len(f.Members),
		key: [5]uint32{uint32(f.Sender), f.Key.Epoch, f.Key.Topology, f.Key.Config, f.Segment}}
	if e.batchAdd(&it) {
		return nil
	}
	// Too large for a datagram: fragments.
	pre := appendKeyFields(e.rec[:0], f.Sender, f.Key, f.Segment)
	e.rec = pre
	return e.emit(head(KindKey, f.Class, f.Flags), f, 0, 0)
}

// AddDelta adds f coded against ref (same stream, same members, same segment
// and class; the caller checks, and sends a keyframe otherwise).
func (e *Encoder) AddDelta(f *Frame, ref *Ref) error {
	if err := e.check(f); err != nil {
		return err
	}
	e.fsum = e.sumOf(f)
	lag := f.Key.Seq - ref.Base.ID
	bf := &ref.Base.Frame
	if lag == 0 || len(ref.Base.Entries) != len(f.Members) || bf.Class != f.Class || bf.Segment != f.Segment ||
		bf.Sender != f.Sender || bf.Key.Stream() != f.Key.Stream() {
		return fail(ErrMalformed, -1, "delta baseline")
	}
	ps, as := shifts(f.Class.Precision())
	dt := int64(e.time - bf.Time)
	unchanged := true
	dres := slices.Grow(e.dres[:0], len(f.Members))[:len(f.Members)]
	e.dres = dres
	for i := range f.Members {
		m := &f.Members[i]
		b := &ref.Base.Entries[i]
		if b.ID != m.ID {
			return fail(ErrMalformed, -1, "delta members")
		}
		r := &dres[i]
		r.d = residuals(&b.Q, &m.Q, dt, ps, as)
		r.mask = 0
		for k, v := range r.d {
			if v != 0 {
				r.mask |= 1 << k
			}
		}
		if r.mask != 0 {
			unchanged = false
		}
	}
	it := batchIsland{island: f.Key.Island, kind: batchDelta, class: f.Class, flags: f.Flags, lag: lag, n: len(f.Members)}
	if unchanged && f.Flags == 0 {
		it.kind = batchPredicted
	}
	e.joint, e.links = false, nil
	if !unchanged && linksFit(f) {
		e.jointResiduals(f, f.Links)
	}
	if e.batchAdd(&it) {
		return nil
	}
	// Too large for a datagram: fragments.
	pre := e.rec[:0]
	pre = appendU(pre, uint64(lag))
	e.rec = pre
	return e.emit(head(KindDelta, f.Class, f.Flags), f, lag, len(pre))
}

// linksFit reports whether f may be joint-predicted: it has links for its
// island, topology, config and member count, more than one member, and a
// precision joint prediction works in.
func linksFit(f *Frame) bool {
	l := f.Links
	return l != nil && len(f.Members) > 1 && l.Members() == len(f.Members) && l.Island == f.Key.Island &&
		l.Topology == f.Key.Topology && l.Config == f.Key.Config && jointOK(f.Class.Precision())
}

// jointKey makes the keyframe being added (its members in e.keys)
// joint-predicted when that comes out cheaper: e.kjp gets, for each member
// hanging on an earlier member or the world by links l, the x, y, vx and
// vy its joint puts it at (from its own angle and angular velocity and its
// parent's values), which its values are then coded against.
func (e *Encoder) jointKey(f *Frame, l *Links) {
	p := f.Class.Precision()
	e.kjp = slices.Grow(e.kjp[:0], len(f.Members))[:len(f.Members)]
	plain, joint := 0, 0
	for i := range f.Members {
		cur := &f.Members[i].Q
		jp := &e.kjp[i]
		jp.ok = false
		var d [6]int64 // what the member codes without links: its values less the member before's
		for k, v := range e.keys[i].v {
			d[k] = v
			if i > 0 {
				d[k] -= e.keys[i-1].v[k]
			}
		}
		plain += valuesCost(d)
		if lk := &l.links[i]; lk.parent != linkNone {
			var par *quant.State
			if lk.parent >= 0 {
				par = &f.Members[lk.parent].Q
			}
			pred := *cur
			if predictJoint(&pred, par, lk, p) {
				jp.ok, jp.v = true, [4]int64{pred.X, pred.Y, pred.VX, pred.VY}
				d[0], d[1], d[3], d[4] = cur.X-pred.X, cur.Y-pred.Y, cur.VX-pred.VX, cur.VY-pred.VY
			}
		}
		joint += valuesCost(d)
	}
	if joint < plain {
		e.joint, e.links = true, l
	}
}

// jointPred is a keyframe member's joint prediction: x, y, vx, vy.
type jointPred struct {
	ok bool
	v  [4]int64
}

// keyPred returns the joint prediction member j of the keyframe being
// added is coded against in a record whose first member is first, or nil:
// none when the keyframe is not joint-predicted, the member hangs on
// nothing, or it hangs on a member before first.
func (e *Encoder) keyPred(first, j int) *[4]int64 {
	if !e.joint || !e.kjp[j].ok {
		return nil
	}
	if p := e.links.links[j].parent; p >= 0 && int(p) < first {
		return nil
	}
	return &e.kjp[j].v
}

// valuesCost is resCost's estimate for one member's six coded values.
func valuesCost(d [6]int64) int {
	n := 0
	for _, v := range d {
		n++
		if v != 0 {
			u := uint64(v)
			if v < 0 {
				u = -u
			}
			n += 2 * bits.Len64(u)
		}
	}
	return n
}

// jointResiduals turns the delta being added (its residuals against the
// baseline's motion in e.dres) into a joint-predicted one: each member
// that hangs on an earlier member or the world by links l is coded, for
// its position and velocity, against where the joint puts it given its
// own angle and angular velocity and its parent's state in f. The
// residuals against the baseline's motion stay in e.dtmp for fragments
// that begin after a member's parent.
func (e *Encoder) jointResiduals(f *Frame, l *Links) {
	p := f.Class.Precision()
	e.dtmp = append(e.dtmp[:0], e.dres...)
	e.joint, e.links = true, l
	for i := range f.Members {
		lk := &l.links[i]
		if lk.parent == linkNone {
			continue
		}
		cur := &f.Members[i].Q
		var par *quant.State
		if lk.parent >= 0 {
			par = &f.Members[lk.parent].Q
		}
		pred := *cur
		if !predictJoint(&pred, par, lk, p) {
			continue
		}
		r := &e.dres[i]
		r.d[0], r.d[1], r.d[3], r.d[4] = cur.X-pred.X, cur.Y-pred.Y, cur.VX-pred.VX, cur.VY-pred.VY
		r.mask = 0
		for k, v := range r.d {
			if v != 0 {
				r.mask |= 1 << k
			}
		}
	}
	// Bodies at rest are predicted exactly by their baseline's motion and
	// only to the rounding of their anchors by their joints: an island
	// mostly at rest keeps the baseline's motion.
	if resCost(e.dres) >= resCost(e.dtmp) {
		copy(e.dres, e.dtmp)
		e.joint = false
	}
}

// resCost estimates the bits of a delta's residuals: a bit per member and
// per field flag, and each nonzero residual's sign and Elias-gamma length.
// The encoder only uses it to choose between two predictions.
func resCost(ms []resMember) int {
	n := 0
	for i := range ms {
		n++
		if ms[i].mask != 0 {
			n += valuesCost(ms[i].d)
		}
	}
	return n
}

func (e *Encoder) check(f *Frame) error {
	n := len(f.Members)
	switch {
	case n == 0:
		return fail(ErrEmptyFrame, -1, "members")
	case n > e.cfg.MaxMembers:
		return fail(ErrLimit, -1, "total members")
	case f.Flags&^island.KnownFlags != 0:
		return fail(ErrMalformed, -1, "flags")
	case f.Class > quant.Loose:
		return fail(ErrMalformed, -1, "class")
	case f.Key.Seq != e.seq:
		return fail(ErrMalformed, -1, "sequence")
	}
	return nil
}

// emit cuts the frame whose frame-level fields are in e.rec (and whose
// members are in e.dres or e.keys, by kind) into fragment records at member
// boundaries, each in a datagram of its own with the whole frame's 64-bit
// digest and its members range-coded (contexts fresh in each fragment); then
// its parity records. The cut is greedy; with parity, it is then evened out
// so that the parity shards, as long as the longest fragment, stay short.
func (e *Encoder) emit(h byte, f *Frame, lag uint32, refLen int) error {
	n := len(f.Members)
	e.rec = appendU(e.rec, uint64(n))
	pre := len(e.rec)
	e.finishBatch()
	max := e.cfg.MaxDatagram - HeaderSize - 1 - uvarintLen(uint64(f.Key.Island))
	if e.parity > 0 {
		max -= parityOverhead // room for a parity record beside its shard
	}
	// less the part fields at their largest, the digest and the length
	room := max - pre - 4*uvarintLen(uint64(n)) - 8 - uvarintLen(uint64(e.cfg.MaxDatagram))
	key := RecordKind(h&headKind) == KindKey
	ck := cutKey{sum: e.fsum, lag: lag, key: key, joint: e.joint, links: e.links, n: n, room: room, parity: e.parity}
	if done := e.cuts[ck]; done != nil {
		e.spans = append(e.spans[:0], done.spans...)
		e.fragBuf = append(e.fragBuf[:0], done.buf...)
		e.fragEnds = append(e.fragEnds[:0], done.ends...)
		e.fragCosts = append(e.fragCosts[:0], done.costs...)
	} else if err := e.cutFor(key, n, room); err != nil {
		return err
	} else if len(e.cuts) < maxCuts && e.cutBytes+len(e.fragBuf) <= maxCutBytes {
		if e.cuts == nil {
			e.cuts = make(map[cutKey]*cutDone)
		}
		var done *cutDone
		if k := len(e.spare); k > 0 {
			done, e.spare = e.spare[k-1], e.spare[:k-1]
		} else {
			done = new(cutDone)
		}
		done.spans = append(done.spans[:0], e.spans...)
		done.buf = append(done.buf[:0], e.fragBuf...)
		done.ends = append(done.ends[:0], e.fragEnds...)
		done.costs = append(done.costs[:0], e.fragCosts...)
		e.cuts[ck] = done
		e.cutBytes += len(done.buf)
	}
	count := len(e.spans)
	withParity := e.parity > 0 && count <= MaxParityFragments
	d := e.sumOf(f)
	e.shardLen = 0
	start := 0
	for i, sp := range e.spans {
		stream := e.fragBuf[start:e.fragEnds[i]]
		start = e.fragEnds[i]
		body := appendPart(e.rec[:pre], count, i, sp.first, sp.n, d)
		body = append(appendU(body, uint64(len(stream))), stream...)
		e.rec = body
		if withParity {
			e.keepShard(i, h|headFragment, f.Key.Island, body)
		}
		e.place(h|headFragment, f.Key.Island, body, lag, refLen)
		e.parts = count
		e.bytes.Records -= int64(len(stream)) + 8 // the length stays framing
		e.bytes.Digests += 8
		e.shareCosts(len(stream), &e.fragCosts[i])
		e.close() // fragments of a big frame each fill their own datagram
	}
	if withParity {
		return e.emitParity(head(KindRun, f.Class, 0)|headFragment, f.Key.Island, count)
	}
	return nil
}

// cutFor cuts the frame being added (key: a keyframe) of n members into
// fragment streams of at most room bytes each, as emit sends them: at
// least two, at most MaxFragments, and — with parity — each no longer
// than it must be for their count (parity shards are as long as the
// longest fragment).
func (e *Encoder) cutFor(key bool, n, room int) error {
	if !e.cut(key, n, room) {
		return fail(ErrLimit, -1, "member too large for a datagram")
	}
	count := len(e.spans)
	if count == 1 { // the batch's framing did not fit, a fragment's did, or parity asked for parts: two
		if n < 2 {
			return fail(ErrLimit, -1, "member too large for a datagram")
		}
		// Each part's contexts start afresh, so a half costs more than
		// half: widen the cap until two parts hold the frame. A cap one
		// byte under the whole stream always leaves the last member out.
		whole := e.fragEnds[0]
		ok := false
		for room = whole/2 + 1; ; room += whole/16 + 1 {
			room = min(room, whole-1)
			if ok = e.cut(key, n, room); ok && len(e.spans) == 2 || room == whole-1 {
				break
			}
		}
		if count = len(e.spans); !ok || count < 2 {
			return fail(ErrLimit, -1, "frame not cut in two")
		}
	}
	if count > e.cfg.MaxFragments {
		return fail(ErrLimit, -1, "fragment count")
	}
	withParity := e.parity > 0 && count <= MaxParityFragments
	if withParity {
		// Parity shards are as long as the longest fragment: find the
		// smallest cap that still cuts the frame into count fragments.
		lo, hi, last := (e.fragEnds[count-1]+count-1)/count, room, room
		for range 6 {
			if hi-lo <= 8 {
				break
			}
			mid := (lo + hi) / 2
			if last = mid; e.cut(key, n, mid) && len(e.spans) == count {
				hi = mid
			} else {
				lo = mid
			}
		}
		if last != hi { // the cut in hand is not the one chosen
			e.cut(key, n, hi)
		}
	}
	return nil
}

// cut codes the frame's members into fragment streams of at most room
// bytes each, greedily: e.spans gets each fragment's members, e.fragBuf
// their streams back to back (e.fragEnds their ends), e.fragCosts their
// symbols' costs. It reports false when one member alone exceeds room.
func (e *Encoder) cut(key bool, n, room int) bool {
	st, rc := &e.bat.st, &e.bat.rc
	e.spans, e.fragBuf, e.fragEnds, e.fragCosts = e.spans[:0], e.fragBuf[:0], e.fragEnds[:0], e.fragCosts[:0]
	for first := 0; first < n; {
		st.reset()
		st.deltaPrev, st.keyHas = 1, false
		rc.reset(rc.out)
		st.encodeJoint(rc, e.joint)
		k := 0
		for first+k < n {
			mark := rc.mark()
			pos := st.batchPos
			if key {
				st.encodeKeyMember(rc, &e.keys[first+k], e.keyPred(first, first+k))
			} else {
				st.encodeDeltaMember(rc, e.fragRes(first, first+k), true)
			}
			if rc.bound() > room {
				rc.rollback(mark)
				st.batchPos = pos
				break
			}
			k++
		}
		if k == 0 {
			return false
		}
		e.fragBuf = append(e.fragBuf, rc.finish()...)
		e.fragEnds = append(e.fragEnds, len(e.fragBuf))
		e.fragCosts = append(e.fragCosts, rc.costs)
		e.spans = append(e.spans, span{first, k})
		first += k
	}
	return true
}

// fragRes returns member j's residuals in a delta fragment that begins
// at member first: the joint-predicted ones, unless the member hangs on a
// member before first, which the fragment's receiver may not hold.
func (e *Encoder) fragRes(first, j int) *resMember {
	if e.joint {
		if p := e.links.links[j].parent; p >= 0 && int(p) < first {
			return &e.dtmp[j]
		}
	}
	return &e.dres[j]
}

// span is one fragment's member range.
type span struct{ first, n int }

// FrameDigest computes f's sum for the current broadcast (Begin's time)
// and records it in f, so that encoding f for many observers hashes it
// once.
func (e *Encoder) FrameDigest(f *Frame) {
	f.Sum, f.Digested = e.frameSum(f), true
}

// sum returns f's sum: FrameDigest's, or computed now.
func (e *Encoder) sumOf(f *Frame) uint64 {
	if f.Digested {
		return f.Sum
	}
	return e.frameSum(f)
}

func (e *Encoder) frameSum(f *Frame) uint64 {
	return FrameSum(f.Sender, f.Key, e.time, f.Segment, f.Flags, f.Class, f.Members)
}

// batchAdd codes island it (its members in e.dres or e.keys) into the open
// batch record, opening a datagram and a batch when none is, and a new
// datagram when the open one lacks room. It reports false, having coded
// nothing, when the island does not fit even an empty datagram: its frame
// is then cut into fragments.
func (e *Encoder) batchAdd(it *batchIsland) bool {
	b := &e.bat
	for {
		// A batch codes each island after the one before it: an island at
		// or below it (the same island again, as at a hand-off) goes in
		// the next datagram, whose records start afresh.
		if b.open && (b.st.count == MaxBatchIslands || b.members+it.n > MaxBatchMembers ||
			b.st.count > 0 && it.island <= b.st.last) {
			e.close()
		}
		if !b.open {
			if e.cur >= 0 && it.island <= e.lastIsl {
				e.close()
			}
			e.open()
			b.open, b.first, b.members = true, it.island, 0
			b.st.reset()
			b.rc.reset(b.rc.out)
		}
		// Far from the datagram's end the island cannot overflow it: code
		// it without logging what it changes — unless, with parity on, it
		// may turn out big enough to go in fragments instead.
		reserve := 1 + uvarintLen(uint64(b.first-e.lastIsl)) + uvarintLen(uint64(b.st.count+1)) + uvarintLen(uint64(e.cfg.MaxDatagram))
		worst := e.worstBytes(it)
		mayCut := e.parityCut && e.parity > 0 && it.n > 1 && it.kind != batchPredicted && worst >= e.cfg.MaxDatagram/ParityCut
		safe := reserve+b.rc.bound()+worst <= e.room() && !mayCut
		var mark rcMark
		if safe {
			b.rc.log = false
		} else {
			mark = b.rc.mark()
		}
		pos := b.st.batchPos
		before := b.rc.bound()
		b.st.encodeHead(&b.rc, it)
		switch it.kind {
		case batchDelta:
			b.st.encodeDelta(&b.rc, e.dres, e.joint)
		case batchKey:
			b.st.encodeKey(&b.rc, e.keys, e.joint, e.kjp)
		}
		if mayCut && b.rc.bound()-before >= e.cfg.MaxDatagram/ParityCut {
			// Big enough for parity to pay: fragments, which parity
			// records protect, rather than a batch, which none does.
			b.rc.rollback(mark)
			b.st.batchPos = pos
			return false
		}
		if safe || reserve+b.rc.bound() <= e.room() {
			b.members += it.n
			e.sum.Add(e.fsum)
			e.isl = append(e.isl, it.island)
			return true
		}
		b.rc.rollback(mark)
		b.st.batchPos = pos
		if b.st.count == 0 && len(e.buf)-e.cur == HeaderSize {
			b.open = false // nothing else in an empty datagram, and still too large
			return false
		}
		e.close()
	}
}

// ParityCut: with parity on (SetParity), a frame of several members whose
// coded size is at least 1/ParityCut of the datagram cap is cut into
// fragments even when it would fit a batch — a frame in a batch has no
// parity, and one lost datagram would lose it; in two fragments and its
// parity records, any two of them complete it.
const ParityCut = 4

// finishBatch ends the open batch record and writes it into the open
// datagram: head, first island, island count, stream length, stream.
func (e *Encoder) finishBatch() {
	b := &e.bat
	if !b.open {
		return
	}
	b.open = false
	if b.st.count == 0 {
		return
	}
	out := b.rc.finish()
	n0 := len(e.buf)
	e.buf = append(e.buf, byte(KindBatch))
	e.buf = appendU(e.buf, uint64(b.first-e.lastIsl))
	e.buf = appendU(e.buf, uint64(b.st.count))
	e.buf = appendU(e.buf, uint64(len(out)))
	e.buf = append(e.buf, out...)
	e.lastIsl = b.st.last
	e.bytes.Total += int64(len(e.buf) - n0)
	e.bytes.Records += int64(len(e.buf) - n0 - len(out))
	e.costOut(len(out))
}

// costOut shares a finished stream's n bytes among ByteBreakdown' categories in
// proportion to what its symbols cost, and starts the costs over.
func (e *Encoder) costOut(n int) {
	e.shareCosts(n, &e.bat.rc.costs)
}

// shareCosts shares a stream's n bytes among ByteBreakdown' categories in
// proportion to the costs c of its symbols, and zeroes c.
func (e *Encoder) shareCosts(n int, c *[numCats]int64) {
	var sum int64
	for _, v := range c {
		sum += v
	}
	if sum > 0 {
		share := func(i int) int64 { return int64(n) * c[i] / sum }
		idx, pos, ang, vel := share(catIndex), share(catPosition), share(catAngle), share(catVelocity)
		e.bytes.Indices += idx
		e.bytes.Position += pos
		e.bytes.Angle += ang
		e.bytes.Velocity += vel
		e.bytes.Records += int64(n) - idx - pos - ang - vel
	} else {
		e.bytes.Records += int64(n)
	}
	*c = [numCats]int64{}
}

// worstBytes bounds what coding island it (its members in e.dres or
// e.keys) can add to the open batch's stream: every context bit at the
// largest cost a context can have (15/4096: under 8.1 bits), every direct
// bit one bit, and a few bytes for the coder's renormalisation.
func (e *Encoder) worstBytes(it *batchIsland) int {
	var a, d int // context bits, direct bits
	mag := func(v uint64) {
		k := bits.Len64(v) - 1
		a += k + 1 + min(k, magMant)
		d += k
	}
	signed := func(v int64) {
		u := uint64(v)
		if v < 0 {
			u = -u
		}
		a++
		mag(u)
	}
	a += 9 // gap, kind, class, flags and the "same as before" bits
	mag(uint64(it.island-e.bat.st.last) | 1)
	mag(uint64(it.lag) | 1)
	mag(uint64(it.n) | 1)
	switch it.kind {
	case batchDelta:
		a++ // joint-predicted or not
		for i := range e.dres {
			a += 7
			for _, v := range e.dres[i].d {
				if v != 0 {
					signed(v)
				}
			}
		}
	case batchKey:
		a++ // joint-predicted or not
		for _, v := range it.key {
			a++
			mag(uint64(v) + 1)
		}
		prev := e.bat.st.prevStable
		for i := range e.keys {
			k := &e.keys[i]
			a += 8
			signed(int64(k.stable-prev) | 1)
			prev = k.stable
			mag(uint64(k.gen) + 1)
			jp := e.keyPred(0, i)
			for f, v := range k.v {
				switch j := jointField[f]; {
				case jp != nil && j >= 0:
					v -= jp[j]
				case i > 0:
					v -= e.keys[i-1].v[f]
				}
				if v != 0 {
					signed(v)
				}
			}
		}
	}
	return (a*81/10+d)/8 + 8
}
