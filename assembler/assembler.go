package assembler

import (
	"bytes"

	"github.com/bits-and-blooms/bitset"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// frameID names one frame: fragments of the same key from different senders
// are different frames and are never mixed.
type frameID struct {
	sender island.SenderID
	key    island.Key
}

// islandID scopes the per-island candidate cap: every sender's frames of
// one island together, so that many senders cannot multiply the cap.
type islandID struct {
	island uint32
}

// streamID scopes sequence order: one sender's stream.
type streamID struct {
	sender island.SenderID
	stream island.Stream
}

// fragSlot records where fragment i of a pending frame sits.
type fragSlot struct {
	start uint32 // index of its first member in arrival order (pending.ms)
	first uint32 // frame position of its first member
	n     uint16 // members; 0 means the fragment has not arrived
}

// pending is one incomplete (or poisoned) frame.
type pending struct {
	id       frameID
	hdr      codec.FragmentHeader // frame-level fields from the first fragment
	created  int64                // caller time of the first fragment, µs
	link     links[pending]       // creation order, oldest at Assembler.order.head
	isl      *islandState
	poisoned bool
	reason   Outcome // why it was poisoned
	bytes    int     // accounted bytes

	covered  bitset.BitSet // member positions received
	frags    []fragSlot    // indexed by fragment index
	fragSeen int
	received int    // members received
	raw      []byte // member wire bytes in arrival order
}

// islandState lists one island's pending frames (all senders), oldest first.
type islandState struct {
	id    islandID
	cands []*pending
}

// streamState remembers the last completed sequence of one stream.
type streamState struct {
	id      streamID
	lastSeq uint32
	done    uint64             // bit i: frame lastSeq−i completed (bit 0 always, once any did)
	link    links[streamState] // LRU order, least recently completed at head
}

// Assembler reassembles fragments into whole frames. It is a pure state
// machine: it starts no goroutines, reads no clock and does no I/O; the caller
// passes the current time with every call. It is not safe for concurrent use;
// use one per receive loop.
type Assembler struct {
	cfg Config

	frames  map[frameID]*pending
	islands map[islandID]*islandState
	streams map[streamID]*streamState

	order        list[pending, *pending]         // pending frames by first fragment
	streamOrder  list[streamState, *streamState] // streams by last completion
	pendingBytes int

	freeFrames  []*pending
	freeIslands []*islandState
	freeStreams []*streamState

	// Frames that carry parity (parity.go): entries beside frames, under
	// the same TTL and caps.
	parity       map[parityKey]*parityFrame
	parityOrder  list[parityFrame, *parityFrame] // by first record, oldest at head
	parityFree   []*parityFrame
	parityDone   [parityDoneRing]parityKey // the last frames finished, in a ring
	parityDoneAt int
	parityOn     bool // a parity record arrived: data fragments are kept
	pdec         codec.ParityDecoder
	sdec         *codec.Decoder // parses rebuilt fragments
	rebuilt      []codec.Record

	out      Frame
	outRaw   []byte
	dedup    dedupSet
	counts   [NumOutcomes]uint64
	peak     int
	forgot   uint64
	lastNow  int64
	haveTime bool
}

// New returns an assembler with cfg's caps (zero fields mean defaults).
func New(cfg Config) (*Assembler, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sdec, err := codec.NewDecoder(codec.Config{MaxDatagram: c.MaxDatagram, MaxMembers: c.MaxMembers, MaxFragments: c.MaxFragments})
	if err != nil {
		return nil, err
	}
	return &Assembler{
		cfg:     c,
		frames:  make(map[frameID]*pending, c.MaxPending),
		islands: make(map[islandID]*islandState),
		streams: make(map[streamID]*streamState),
		parity:  make(map[parityKey]*parityFrame),
		sdec:    sdec,
	}, nil
}

// Config returns the assembler's configuration with defaults applied.
func (a *Assembler) Config() Config { return a.cfg }

// Push offers one decoded fragment at caller time now (microseconds; must not
// go backwards — an earlier now is treated as the latest seen). It first
// expires frames whose TTL has passed, then stores the fragment.
//
// When the fragment completes its frame, Push returns Completed and the whole
// frame, members in frame order, after checking coverage, member identities
// and the digest. The frame and its Members are owned by the assembler and
// stay valid until the next call to Push or Expire; copy what you keep.
// For every other outcome the frame is nil: nothing of an incomplete or
// rejected frame ever reaches the caller.
//
// The fragment's slices are copied; the caller may reuse them after Push.
func (a *Assembler) Push(now int64, f *codec.Fragment) (Outcome, *Frame) {
	now = a.clock(now)
	a.expire(now)
	o, fr := a.push(now, f)
	a.counts[o]++
	return o, fr
}

func (a *Assembler) clock(now int64) int64 {
	if a.haveTime && now < a.lastNow {
		return a.lastNow
	}
	a.lastNow, a.haveTime = now, true
	return now
}

func (a *Assembler) push(now int64, f *codec.Fragment) (Outcome, *Frame) {
	h := &f.Header
	n := int(h.MemberCount)
	if n == 0 || h.Count == 0 || h.Index >= h.Count || len(f.Raw) != n*codec.MemberSize ||
		uint64(h.FirstMember)+uint64(n) > uint64(h.TotalMembers) {
		return RejectMalformed, nil
	}
	id := frameID{sender: h.Sender, key: h.Key}
	p := a.frames[id]
	if p == nil {
		// Only a new frame can be stale: one its stream already completed
		// (a duplicate or a replay), or one more than 63 frames behind the
		// newest completed. A late frame that never completed may still —
		// what the playout makes of it is the store's call.
		sid := streamID{sender: h.Sender, stream: h.Key.Stream()}
		if s, ok := a.streams[sid]; ok && s.behind(h.Key.Seq) {
			return RejectStale, nil
		}
		if uint64(h.TotalMembers) > uint64(a.cfg.MaxMembers) || int(h.Count) > a.cfg.MaxFragments {
			return RejectTooLarge, nil
		}
		if uint32(h.Count) > h.TotalMembers {
			return RejectOverCount, nil
		}
		fixed := FrameOverhead + FragmentOverhead*int(h.Count)
		if fixed+MemberCharge*int(h.TotalMembers) > a.cfg.MaxPendingBytes {
			return RejectTooLarge, nil
		}
		if h.Count == 1 && n == int(h.TotalMembers) {
			// The whole frame in one fragment: it completes now or is
			// rejected now, and holds no place among the pending frames.
			if o, fr, ok := a.whole(id, h, f.Raw); ok {
				return o, fr
			}
		}
		p = a.admit(now, id, h, fixed)
	}
	if p.poisoned {
		return RejectPoisoned, nil
	}
	if !sameFrameHeader(&p.hdr, h) {
		return a.poison(p, RejectHeaderConflict), nil
	}
	if slot := p.frags[h.Index]; slot.n != 0 {
		if slot.first == h.FirstMember && int(slot.n) == n &&
			bytes.Equal(p.raw[int(slot.start)*codec.MemberSize:(int(slot.start)+n)*codec.MemberSize], f.Raw) {
			return Duplicate, nil
		}
		return a.poison(p, RejectConflictingDuplicate), nil
	}
	if p.received+n > int(p.hdr.TotalMembers) {
		return a.poison(p, RejectOverCount), nil
	}
	first := uint(h.FirstMember)
	if p.covered.OnesBetween(first, first+uint(n)) != 0 {
		return a.poison(p, RejectOverlap), nil
	}
	charge := MemberCharge * n
	if !a.makeRoom(p, charge) {
		// Unreachable while admission checks that the whole frame fits the
		// byte cap; kept so a future change cannot overrun the cap.
		return a.poison(p, RejectTooLarge), nil
	}
	p.covered.SetRange(first, first+uint(n))
	p.frags[h.Index] = fragSlot{start: uint32(p.received), first: h.FirstMember, n: uint16(n)}
	p.fragSeen++
	p.received += n
	p.raw = append(p.raw, f.Raw...)
	p.bytes += charge
	a.pendingBytes += charge
	a.peak = max(a.peak, a.pendingBytes)

	total := int(p.hdr.TotalMembers)
	switch {
	case p.received == total && p.fragSeen == int(p.hdr.Count):
		return a.complete(p)
	case p.received == total:
		// Every member is covered yet fragments are outstanding: each of
		// them would have to overlap, so the frame can never complete.
		return a.poison(p, RejectOverCount), nil
	case p.fragSeen == int(p.hdr.Count):
		return a.poison(p, RejectCoverageGap), nil
	}
	return Buffered, nil
}

// sameFrameHeader compares the fields every fragment of a frame must share.
// Sender and key are equal by construction (they select the frame).
func sameFrameHeader(a, b *codec.FragmentHeader) bool {
	return a.Time == b.Time && a.Segment == b.Segment && a.Flags == b.Flags &&
		a.TotalMembers == b.TotalMembers && a.Count == b.Count && a.Digest == b.Digest &&
		a.Quantized == b.Quantized && a.Class == b.Class
}

// digest returns the digest a frame with header h and members body (in
// frame order) must carry: a quantized frame's sum over its integer
// records, or version 1's digest over its float records.
func digest(h *codec.FragmentHeader, body []byte) uint64 {
	if h.Quantized {
		return codec.QuantSum(h, codec.QuantRecords(body))
	}
	return codec.Digest(h, codec.Records(body))
}

// admit creates a pending frame for the first fragment of id, evicting to
// respect the per-island and global frame caps.
func (a *Assembler) admit(now int64, id frameID, h *codec.FragmentHeader, fixed int) *pending {
	iid := islandID{island: id.key.Island}
	if isl := a.islands[iid]; isl != nil && len(isl.cands) >= a.cfg.MaxCandidatesPerIsland {
		a.drop(isl.cands[victim(isl.cands)], EvictedIslandCap)
	}
	for len(a.frames)+len(a.parity) >= a.cfg.MaxPending {
		a.evictOldest(nil, EvictedPendingCap)
	}
	isl := a.islands[iid]
	if isl == nil {
		isl = a.newIsland(iid)
	}
	p := a.newPending()
	p.id = id
	p.hdr = *h
	p.created = now
	p.isl = isl
	p.bytes = fixed
	if cap(p.frags) >= int(h.Count) {
		p.frags = p.frags[:h.Count]
		clear(p.frags)
	} else {
		// Room for a few fragments more than this frame needs, so that a
		// recycled pending seldom grows again when a larger frame (a
		// keyframe among deltas) takes it.
		p.frags = make([]fragSlot, h.Count, max(int(h.Count), minFragSlots))
	}
	isl.cands = append(isl.cands, p)
	a.frames[id] = p
	a.order.pushBack(p)
	a.pendingBytes += fixed
	// The fixed part may push us over the byte cap: evict older frames.
	a.makeRoom(p, 0)
	return p
}

// minFragSlots is the fewest fragment slots a pending frame is given.
const minFragSlots = 8

// victim picks the candidate to evict when an island is at its cap: a
// candidate of the sender holding the most, so that one sender flooding an
// island with invented sequence numbers evicts its own frames first; among
// those, the one with the fewest members received (a frame that is getting
// somewhere outlives one that is not), then the oldest.
func victim(cands []*pending) int {
	best, most := 0, 0
	for i, c := range cands {
		n := 0
		for _, d := range cands {
			if d.id.sender == c.id.sender {
				n++
			}
		}
		if n > most || (n == most && c.received < cands[best].received) {
			best, most = i, n
		}
	}
	return best
}

// makeRoom evicts the oldest other entries (frames in reassembly, frames
// that carry parity) until charge more bytes fit. It reports false if even
// p alone cannot hold them.
func (a *Assembler) makeRoom(p *pending, charge int) bool {
	for a.pendingBytes+charge > a.cfg.MaxPendingBytes {
		if !a.evictOldest(p, EvictedByteCap) {
			return false
		}
	}
	return true
}

// poison marks p rejected: its buffers are released and later fragments of
// the same frame are refused until its TTL runs out.
func (a *Assembler) poison(p *pending, why Outcome) Outcome {
	p.poisoned = true
	p.reason = why
	a.pendingBytes -= p.bytes - FrameOverhead
	p.bytes = FrameOverhead
	p.releaseBuffers()
	return why
}

// whole completes a frame that came in one fragment, without admitting
// it, when its digest and members check out. Otherwise it reports false and
// the caller takes the frame through admission, which rejects it and keeps
// its tombstone, exactly as for a frame of many fragments.
func (a *Assembler) whole(id frameID, h *codec.FragmentHeader, raw []byte) (Outcome, *Frame, bool) {
	if digest(h, raw) != h.Digest || a.dedup.hasDuplicate(codec.Records(raw)) {
		return 0, nil, false
	}
	a.outRaw = append(a.outRaw[:0], raw...)
	a.out = newFrame(id, h, 1, a.outRaw)
	a.completed(id)
	return Completed, &a.out, true
}

// complete assembles p in frame order, verifies it and returns it.
func (a *Assembler) complete(p *pending) (Outcome, *Frame) {
	total := int(p.hdr.TotalMembers)
	a.outRaw = grow(a.outRaw[:0], total*codec.MemberSize)
	body := a.outRaw
	for _, s := range p.frags {
		start, first, n := int(s.start), int(s.first), int(s.n)
		copy(body[first*codec.MemberSize:], p.raw[start*codec.MemberSize:(start+n)*codec.MemberSize])
	}
	// The digest covers the frame-level header fields, then the members.
	if digest(&p.hdr, body) != p.hdr.Digest {
		return a.poison(p, RejectDigestMismatch), nil
	}
	if a.dedup.hasDuplicate(codec.Records(body)) {
		return a.poison(p, RejectDuplicateMember), nil
	}
	a.out = newFrame(p.id, &p.hdr, int(p.hdr.Count), body)
	a.completed(p.id)
	a.drop(p, Completed)
	return Completed, &a.out
}

// behind reports whether a new frame of sequence seq is stale: already
// completed, or more than 63 frames behind the newest completed.
func (s *streamState) behind(seq uint32) bool {
	if island.SeqNewer(seq, s.lastSeq) {
		return false
	}
	back := s.lastSeq - seq
	return back >= 64 || s.done&(1<<back) != 0
}

// mark records that frame seq of the stream completed.
func (s *streamState) mark(seq uint32) {
	if !island.SeqNewer(seq, s.lastSeq) && s.done != 0 {
		s.done |= 1 << (s.lastSeq - seq) // a late frame; behind already checked the range
		return
	}
	if d := seq - s.lastSeq; s.done == 0 || d >= 64 {
		s.done = 1
	} else {
		s.done = s.done<<d | 1
	}
	s.lastSeq = seq
}

// completed records p's sequence as completed in its stream and drops the
// incomplete frames of that stream older than it.
func (a *Assembler) completed(id frameID) {
	sid := streamID{sender: id.sender, stream: id.key.Stream()}
	s := a.streams[sid]
	if s == nil {
		if len(a.streams) >= a.cfg.MaxStreams {
			a.forgetStream(a.streamOrder.head)
		}
		s = a.newStream(sid)
	} else {
		a.streamOrder.remove(s)
	}
	s.mark(id.key.Seq)
	a.streamOrder.pushBack(s)
}

// drop removes p from every index and recycles it. why is counted unless it
// is Completed (counted by Push) or a reject (counted when it happened).
func (a *Assembler) drop(p *pending, why Outcome) {
	if why.IsDrop() {
		a.counts[why]++
	}
	delete(a.frames, p.id)
	isl := p.isl
	for i, c := range isl.cands {
		if c == p {
			isl.cands = append(isl.cands[:i], isl.cands[i+1:]...)
			break
		}
	}
	if len(isl.cands) == 0 {
		delete(a.islands, isl.id)
		if len(a.freeIslands) < maxFree {
			a.freeIslands = append(a.freeIslands, isl)
		}
	}
	a.order.remove(p)
	a.pendingBytes -= p.bytes
	p.isl = nil
	if len(a.freeFrames) < maxFree {
		p.releaseBuffers()
		a.freeFrames = append(a.freeFrames, p)
	}
}

// Expire drops every incomplete frame whose TTL has run out at now: a frame
// first seen at t is held while now − t < TTL and dropped once now − t ≥ TTL.
// Completed frames returned earlier become invalid.
func (a *Assembler) Expire(now int64) {
	a.expire(a.clock(now))
}

func (a *Assembler) expire(now int64) {
	for a.parityOrder.head != nil && now-a.parityOrder.head.created >= a.cfg.TTL {
		a.dropParity(a.parityOrder.head)
	}
	for a.order.head != nil && now-a.order.head.created >= a.cfg.TTL {
		p := a.order.head
		if p.poisoned {
			// Its reject was already counted; the tombstone just ends.
			a.drop(p, p.reason)
			continue
		}
		a.drop(p, Expired)
	}
}

// Reset drops every incomplete frame and forgets every stream's sequence
// state: the sender's numbering starts again (a new authority timeline), so
// no sequence seen before says anything about the frames that follow.
// Without it, a restarted sender's frames, numbered from zero again, would
// be refused as stale until its sequences passed the old ones. Dropped
// frames are counted under Reset; other counters and the caller time are
// kept. Storage is recycled, as for expiry.
func (a *Assembler) Reset() {
	a.resetParity()
	for a.order.head != nil {
		p := a.order.head
		if p.poisoned {
			a.drop(p, p.reason)
			continue
		}
		a.drop(p, DroppedReset)
	}
	for a.streamOrder.head != nil {
		s := a.streamOrder.head
		a.streamOrder.remove(s)
		delete(a.streams, s.id)
		if len(a.freeStreams) < maxFree {
			a.freeStreams = append(a.freeStreams, s)
		}
	}
}

// NextDeadline returns the caller time at which the oldest incomplete frame
// (or kept parity frame) expires, and false when nothing is pending. Call
// Expire (or Push) at or after it.
func (a *Assembler) NextDeadline() (int64, bool) {
	p, pf := a.order.head, a.parityOrder.head
	switch {
	case p == nil && pf == nil:
		return 0, false
	case pf == nil || (p != nil && p.created <= pf.created):
		return p.created + a.cfg.TTL, true
	}
	return pf.created + a.cfg.TTL, true
}

// Stats is a snapshot of the assembler's counters and occupancy.
type Stats struct {
	Outcomes         [NumOutcomes]uint64 // per outcome; index with an Outcome
	PendingFrames    int                 // incomplete and poisoned frames held
	ParityFrames     int                 // frames whose records are kept for a parity rebuild
	PendingBytes     int                 // accounted bytes held (see MemberCharge)
	PeakPendingBytes int                 // highest PendingBytes ever reached
	Streams          int                 // streams whose last sequence is remembered
	StreamsForgotten uint64              // streams evicted from memory by MaxStreams
}

// Count returns the counter of one outcome.
func (s Stats) Count(o Outcome) uint64 { return s.Outcomes[o] }

// Stats returns the current counters.
func (a *Assembler) Stats() Stats {
	return Stats{
		Outcomes: a.counts, PendingFrames: len(a.frames), ParityFrames: len(a.parity), PendingBytes: a.pendingBytes,
		PeakPendingBytes: a.peak, Streams: len(a.streams), StreamsForgotten: a.forgot,
	}
}
