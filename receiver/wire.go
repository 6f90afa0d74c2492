package receiver

import (
	"errors"
	"slices"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// islandBases is one island's decode baselines (wire 3): the frames it
// committed within the window of broadcasts both ends keep to.
type islandBases struct {
	kept baseline.Kept
	// links are the joint-prediction links of the island's two latest
	// Physics descriptions, newest first (nil: none, or no member hangs
	// on another): a joint-predicted keyframe or delta is restored with
	// the pair whose topology and config are its (baseline's).
	links [2]*codec.Links
}

// setLinks keeps the links of Physics m for its island, when m describes
// the island's current manifest: they replace those of the same topology
// and config, else they become the newest and the older pair gives way.
func (r *Receiver) setLinks(m *codec.Physics) {
	man, ok := r.val.Manifest(m.Island)
	if !ok || man.Topology != m.Topology || man.Config != m.Config || len(man.Members) != len(m.Bodies) {
		return
	}
	s := r.islandOf(m.Island)
	if s == nil {
		return
	}
	l := codec.NewLinks(m)
	if l0 := s.links[0]; l0 == nil || l0.Topology != m.Topology || l0.Config != m.Config {
		s.links[1] = s.links[0]
	}
	s.links[0] = l
}

// linksFor returns the island's links for frames of topology and config,
// or nil.
func (s *islandBases) linksFor(topology, config uint32) *codec.Links {
	for _, l := range s.links {
		if l != nil && l.Topology == topology && l.Config == config {
			return l
		}
	}
	return nil
}

// WireStats counts what the wire-3 path did.
type WireStats struct {
	Records    uint64 // records expanded (a run counts each island)
	Keyframes  uint64 // key records
	Stored     uint64 // frames kept as baselines
	NoBaseline uint64 // records naming a baseline not held (a keyframe is asked for)
	NoLinks    uint64 // joint-predicted keyframes and deltas of an island whose Physics (for the frame's, or its baseline's, topology and config) is not held (a keyframe is asked for)
	Digest     uint64 // datagrams whose whole frames, as restored, did not match the datagram's sum (keyframes asked for)
	Unverified uint64 // datagrams with a whole frame that could not be restored: none of their whole frames commits
	Refused    uint64 // frames restored whole but refused by validation, or fragments refused by reassembly (a keyframe is asked for)
	Unknown    uint64 // records of islands without a manifest
	// The datagram hold (park.go): datagrams held because a whole frame
	// waited for control, those of them confirmed when received again, and
	// those let go — held past ParkFor, pushed out by MaxParked, or
	// failing for another reason when received again.
	Parked, Unparked, ParkDropped uint64
	// The same for frames reassembled from several datagrams: held, then
	// committed when validated again, or let go.
	FramesParked, FramesUnparked, FramesParkDropped uint64
	// ParkedWait is how long the datagrams confirmed and the frames
	// committed when received again had been held, summed, µs of the
	// caller's clock: the time frames waited for control that was on its
	// way.
	ParkedWait uint64
}

// islandOf returns island id's baselines, nil when it has no manifest.
func (r *Receiver) islandOf(id uint32) *islandBases {
	i, known := slices.BinarySearch(r.known, id)
	if !known {
		return nil
	}
	return r.basesAt(i)
}

// basesAt returns the baselines of island known[i], made when first asked.
func (r *Receiver) basesAt(i int) *islandBases {
	s := r.bases[i]
	if s == nil {
		s = &islandBases{}
		r.bases[i] = s
	}
	return s
}

// requestKey queues a keyframe request for an island.
func (r *Receiver) requestKey(id uint32) {
	if i, found := slices.BinarySearch(r.keyReq, id); !found && len(r.keyReq) < codec.DefaultMaxControlIslands {
		r.keyReq = slices.Insert(r.keyReq, i, id)
	}
}

// quantDatagram expands every record of a wire-3 datagram to its members and
// commits them: the whole frames together, once the datagram's sum proves
// each was restored from the very baseline and bytes the authority coded
// it from; a fragment through reassembly first, as in version 1, checked
// by its frame digest. A validated frame becomes a baseline of its island.
// Once every record was handled, the sum held and no frame was refused, the
// datagram is confirmed (Feedback's Received): every frame it carried is
// then held. A datagram whose whole frames cannot all be restored (a
// baseline not held) or do not match its sum commits none of them and is
// not confirmed. It reports whether the datagram was confirmed; when a
// whole frame failed only for want of control, it sets waitCtl (park.go).
func (r *Receiver) quantDatagram(now int64, b []byte) bool {
	h, recs, err := r.dec2.Decode(b)
	if err != nil {
		r.stats.Decode.add(err)
		return false
	}
	if !r.seenSeq || island.SeqNewer(h.Seq, r.newestSeq) {
		r.seenSeq, r.newestSeq = true, h.Seq
		r.pruneSome()
	}
	r.whole, r.wents, r.wholeBad, r.dgRefused = r.whole[:0], r.wents[:0], false, false
	r.wsum.Reset()
	// The baselines of the datagram's deltas are looked up before any is
	// restored, as a run's are (restoreRun says why).
	r.recBases = r.recBases[:0]
	for i := range recs {
		var f found
		if rec := &recs[i]; rec.Kind == codec.KindDelta {
			if f.s = r.islandOf(rec.Island); f.s != nil {
				f.t = f.s.kept.Find(h.Seq - rec.Lag)
			}
		}
		r.recBases = append(r.recBases, f)
	}
	for i := range recs {
		rec := &recs[i]
		switch rec.Kind {
		case codec.KindRun:
			r.restoreRun(h, rec, rec.Island, rec.Count)
		case codec.KindDelta:
			r.restoreDelta(now, h, rec, r.recBases[i])
			if rec.Fragments > 1 {
				r.rebuilt(now, h, r.asm.ParityData(now, h.Seq, rec))
			}
		case codec.KindKey:
			r.restoreKey(now, h, rec)
			if rec.Fragments > 1 {
				r.rebuilt(now, h, r.asm.ParityData(now, h.Seq, rec))
			}
		case codec.KindParity:
			r.rebuilt(now, h, r.asm.ParityRecord(now, h.Seq, rec))
		}
	}
	switch {
	case r.wholeBad:
		// Some whole frame could not be restored (and asked for its
		// keyframe): the sum cannot be checked, so none commits.
		r.stats.Wire.Unverified++
		return false
	case r.wsum.Sum32() != h.Sum:
		r.stats.Wire.Digest++
		for i := range r.whole {
			r.requestKey(r.whole[i].info.Key.Island)
		}
		r.waitCtl = false // not the authority's frames as restored: holding them would not help
		return false
	}
	for i := range r.whole {
		w := &r.whole[i]
		ents := r.wents[w.off : w.off+w.n]
		reason := r.commitRestored(now, &w.info, w.flags, ents)
		if waitsForControl(reason) {
			r.waitCtl = true
		}
		r.baselineOrRefuse(reason == validator.OK, w.s, &w.info, ents)
	}
	if r.dgRefused {
		return false
	}
	r.arrivals.Arrived(h.Packet)
	r.arrivalsNew = true
	return true
}

// rebuilt takes on the fragments the assembler rebuilt from parity, as if
// they had arrived in the datagram of header h (every datagram of a frame
// carries its seq and time).
func (r *Receiver) rebuilt(now int64, h codec.Header, recs []codec.Record) {
	for i := range recs {
		switch recs[i].Kind {
		case codec.KindKey:
			r.restoreKey(now, h, &recs[i])
		case codec.KindDelta:
			r.restoreDelta(now, h, &recs[i], found{})
		}
	}
}

// refuse counts a frame refused by validation or reassembly: its datagram
// is then not confirmed at all. The island is asked for whole besides, but
// a datagram that had a frame refused may not be the authority's — on a
// path where datagrams can be forged, one that borrowed the number of a
// datagram that was lost — and confirming it would have the authority take
// that lost datagram's frames for held.
func (r *Receiver) refuse() {
	r.stats.Wire.Refused++
	r.dgRefused = true
}

// wholeFrame is a whole frame of the datagram being received, restored and
// waiting for the datagram's sum: its members are wents[off : off+n].
type wholeFrame struct {
	s      *islandBases
	info   baseline.FrameInfo
	flags  island.Flags
	off, n int
}

// stageWhole keeps a restored whole frame for the datagram's commit and
// adds its sum to the datagram's: the frame is frame with sequence seq and
// time t, its members ents.
func (r *Receiver) stageWhole(s *islandBases, frame *baseline.FrameInfo, seq uint32, t island.Time, flags island.Flags, ents []baseline.Entry) {
	off := len(r.wents)
	r.wents = append(r.wents, ents...)
	r.stageAt(s, frame, seq, t, flags, off)
}

// stageAt is stageWhole for a frame whose members are restored in place
// already: wents[off:]. The frame's fields are copied whole from frame, and
// its sequence and time set after, in place: a FrameInfo built aside with
// them and then copied whole would be read in wider loads than those two
// fresh stores, which waits for them to reach the cache.
func (r *Receiver) stageAt(s *islandBases, frame *baseline.FrameInfo, seq uint32, t island.Time, flags island.Flags, off int) {
	ents := r.wents[off:]
	r.whole = append(r.whole, wholeFrame{})
	w := &r.whole[len(r.whole)-1]
	w.s, w.info, w.flags, w.off, w.n = s, *frame, flags, off, len(ents)
	w.info.Key.Seq, w.info.Time = seq, t
	i := &w.info
	r.wsum.Add(codec.FrameSum(i.Sender, i.Key, i.Time, i.Segment, flags, i.Class, ents))
}

// pruneSome lets go of expired baselines of the next eighth of the known
// islands, once per new broadcast: every island is visited within
// baseline.Slack broadcasts, whether or not it is sent, at a cost spread
// evenly over broadcasts.
func (r *Receiver) pruneSome() {
	n := (len(r.known) + baseline.Slack - 1) / baseline.Slack
	for range n {
		if r.pruneAt >= len(r.known) {
			r.pruneAt = 0
		}
		if s := r.bases[r.pruneAt]; s != nil {
			s.kept.Prune(r.newestSeq)
		}
		r.pruneAt++
	}
}

// restoreKey expands a key record (or fragment) and pushes it.
func (r *Receiver) restoreKey(now int64, h codec.Header, rec *codec.Record) {
	r.stats.Wire.Records++
	r.stats.Wire.Keyframes++
	var links *codec.Links
	s := r.islandOf(rec.Island)
	if rec.Joint && s != nil {
		links = s.linksFor(rec.Topology, rec.Config)
	}
	ents, err := rec.ExpandKey(r.ents, links, h.Time)
	r.ents = ents
	if err != nil { // joint-predicted, and the island's links not held
		r.countExpand(err)
		r.requestKey(rec.Island)
		if rec.Fragments == 1 {
			r.wholeBad = true
			r.waitCtl = r.waitCtl || errors.Is(err, codec.ErrNoLinks)
		}
		return
	}
	info := baseline.FrameInfo{Sender: rec.Sender, Key: island.Key{Island: rec.Island, Epoch: rec.Epoch,
		Topology: rec.Topology, Config: rec.Config, Seq: h.Seq}, Time: h.Time, Segment: rec.Segment, Class: rec.Class}
	r.takeRestored(now, s, rec, &info, h.Seq, h.Time, r.ents)
}

// countExpand counts a record that did not expand: joint-predicted
// without the island's links, or malformed against its baseline.
func (r *Receiver) countExpand(err error) {
	if errors.Is(err, codec.ErrNoLinks) {
		r.stats.Wire.NoLinks++
		return
	}
	r.stats.Decode.add(err)
}

// base looks up island id's state and the baseline a record names,
// counting and asking for a keyframe when it is not held.
func (r *Receiver) base(h codec.Header, rec *codec.Record, id uint32) (*islandBases, *baseline.Table) {
	s := r.islandOf(id)
	if s == nil {
		r.stats.Wire.Unknown++
		return nil, nil
	}
	return r.baseIn(s, h, rec, id)
}

// baseIn is base for an island whose baselines s are at hand.
func (r *Receiver) baseIn(s *islandBases, h codec.Header, rec *codec.Record, id uint32) (*islandBases, *baseline.Table) {
	if t := s.kept.Find(h.Seq - rec.Lag); t != nil {
		return s, t
	}
	r.stats.Wire.NoBaseline++
	r.requestKey(id)
	return nil, nil
}

// restoreRun restores the n islands from first on that a run
// covers. Only islands with a manifest are visited — a run may name up to
// 2³² − 1 islands, and walking them all would let one datagram hold the
// receiver for minutes; the others are counted as unknown at once.
//
// A run covers most islands of a broadcast, and each island's baselines
// are cold in the cache by the time the next broadcast comes. Their
// tables are therefore looked up for the whole run first, in a loop that
// does nothing else, so that the processor fetches many islands' tables
// at once rather than waiting for each in turn; the islands are restored
// after.
func (r *Receiver) restoreRun(h codec.Header, rec *codec.Record, first, n uint32) {
	end := uint64(first) + uint64(n)
	lo, _ := slices.BinarySearch(r.known, first)
	hi := lo
	seq := h.Seq - rec.Lag
	r.runBases = r.runBases[:0]
	for ; hi < len(r.known) && uint64(r.known[hi]) < end; hi++ {
		t := r.basesAt(hi).kept.Find(seq)
		if t != nil && t.Frame.Class != rec.Class {
			t = nil // not this run's baseline: restorePredicted refuses it
		}
		r.runBases = append(r.runBases, t)
	}
	for i := lo; i < hi; i++ {
		r.restorePredicted(h, rec, i, r.runBases[i-lo])
	}
	visited := uint64(hi - lo)
	r.stats.Wire.Records += uint64(n) - visited
	r.stats.Wire.Unknown += uint64(n) - visited
	if visited < uint64(n) {
		r.wholeBad = true // islands this receiver cannot restore: the sum cannot be checked
	}
}

// restorePredicted restores island known[i] as its prediction from base,
// the baseline rec names, looked up by restoreRun (nil: not held, or not
// of rec's class).
func (r *Receiver) restorePredicted(h codec.Header, rec *codec.Record, i int, base *baseline.Table) {
	r.stats.Wire.Records++
	id := r.known[i]
	s := r.bases[i]
	if base == nil {
		if _, held := r.baseIn(s, h, rec, id); held != nil { // held, of another class: a run's class bits must be its baselines'
			r.stats.Decode.add(codec.ErrMalformed)
			r.requestKey(id)
		}
		r.wholeBad = true
		return
	}
	off := len(r.wents)
	r.wents = codec.Predict(r.wents, base, h.Time) // restored where the datagram's whole frames wait
	r.stageAt(s, &base.Frame, h.Seq, h.Time, 0, off)
}

// found is an island's baselines and the baseline a record names, looked
// up ahead of the record's restore (restoreRun says why); t nil: not
// looked up, or not held.
type found struct {
	s *islandBases
	t *baseline.Table
}

// restoreDelta restores a delta record, from the baseline f found for it
// ahead when it did.
func (r *Receiver) restoreDelta(now int64, h codec.Header, rec *codec.Record, f found) {
	r.stats.Wire.Records++
	s, base := f.s, f.t
	if base == nil {
		s, base = r.base(h, rec, rec.Island)
	}
	if base == nil {
		if rec.Fragments == 1 {
			r.wholeBad = true
		}
		return
	}
	var links *codec.Links
	if rec.Joint {
		links = s.linksFor(base.Frame.Key.Topology, base.Frame.Key.Config)
	}
	ents, err := rec.ExpandDelta(r.ents, base, links, h.Time)
	r.ents = ents
	if err != nil {
		r.countExpand(err)
		r.requestKey(rec.Island)
		if rec.Fragments == 1 {
			r.wholeBad = true
			r.waitCtl = r.waitCtl || errors.Is(err, codec.ErrNoLinks)
		}
		return
	}
	r.takeRestored(now, s, rec, &base.Frame, h.Seq, h.Time, ents)
}

// takeRestored takes restored members on. A whole record needs no assembly: it
// waits, with its datagram's other whole frames, for the datagram's sum
// (quantDatagram), and its members then go to the validator as they are. A
// fragment goes to the assembler as restored integers, carrying the frame's
// sum as its digest (pushFragment). s is the island's state, nil when the
// island is not known (the validator then refuses the frame). The frame is
// frame (its baseline's, or the key record's) with sequence seq and time t.
func (r *Receiver) takeRestored(now int64, s *islandBases, rec *codec.Record, frame *baseline.FrameInfo, seq uint32, t island.Time, ents []baseline.Entry) {
	r.ents = ents
	if rec.Fragments == 1 {
		r.stageWhole(s, frame, seq, t, rec.Flags, ents)
		return
	}
	info := *frame
	info.Key.Seq, info.Time = seq, t
	r.pushFragment(now, s, rec, info, ents)
}

// baselineOrRefuse keeps a frame that passed validation as a baseline of
// its island, and asks for a keyframe of one that did not: either way, the
// confirmation of its datagram tells the authority the truth.
func (r *Receiver) baselineOrRefuse(validated bool, s *islandBases, info *baseline.FrameInfo, ents []baseline.Entry) {
	if validated && s != nil {
		r.keepBaseline(s, info, ents)
		return
	}
	r.refuse()
	r.requestKey(info.Key.Island)
}

// pushFragment pushes one fragment of a frame cut into several, as restored
// integers, to the assembler; the frame it completes is validated and
// committed, and kept as a baseline from the very integers its sum was
// checked over. takeRestored's path for fragments, apart so that the whole-record
// path, taken for every island of every broadcast, stays small.
func (r *Receiver) pushFragment(now int64, s *islandBases, rec *codec.Record, info baseline.FrameInfo, ents []baseline.Entry) {
	hdr := codec.FragmentHeader{Sender: info.Sender, Key: info.Key, Time: info.Time, Segment: info.Segment,
		Flags: rec.Flags, TotalMembers: uint32(rec.Total), Index: uint16(rec.Index), Count: uint16(rec.Fragments),
		FirstMember: uint32(rec.First), MemberCount: uint16(rec.N), Digest: rec.Digest,
		Quantized: true, Class: info.Class}
	r.raw = codec.AppendQuantRecords(r.raw[:0], ents)
	o, f := r.asm.Push(now, &codec.Fragment{Header: hdr, Raw: codec.Records(r.raw)})
	switch o {
	case assembler.Completed:
	case assembler.Buffered, assembler.Duplicate, assembler.RejectStale: // stale: completed before, or long gone
		return
	default: // the frame cannot complete from this part: say so, lest its datagram be taken for it
		r.refuse()
		r.requestKey(info.Key.Island)
		return
	}
	reason, vf := r.val.Validate(f)
	ok := r.commit(now, reason, vf)
	r.ents = f.Entries(r.ents[:0])
	if waitsForControl(reason) {
		r.holdFrame(now, &info, rec.Flags, r.ents)
	}
	r.baselineOrRefuse(ok, s, &info, r.ents)
}

// commitRestored validates and commits a whole frame of restored members,
// described by info and flags, and returns the validator's reason
// (commitStates).
func (r *Receiver) commitRestored(now int64, info *baseline.FrameInfo, flags island.Flags, ents []baseline.Entry) validator.Reason {
	sc := info.Class.Precision().Scales()
	n := len(ents)
	r.ids, r.states = slices.Grow(r.ids[:0], n)[:n], slices.Grow(r.states[:0], n)[:n]
	for i := range ents {
		r.ids[i] = ents[i].ID
		sc.Restore(&r.states[i], &ents[i].Q) // in place: a state built aside and copied in would stall on its own stores
	}
	return r.commitStates(now, validator.Header{Sender: info.Sender, Key: info.Key, Time: info.Time, Segment: info.Segment,
		Flags: flags}, r.ids, r.states)
}

// commitStates validates and commits a whole frame of members, with the
// frame-level fields of h, and returns the validator's reason (OK: it
// passed validation; the store may still have refused it for its history —
// a duplicate, a late frame — and it is a valid baseline all the same).
func (r *Receiver) commitStates(now int64, h validator.Header, ids []island.MemberID, states []island.State) validator.Reason {
	reason, vf := r.val.ValidateStates(h, ids, states)
	r.commit(now, reason, vf)
	return reason
}

// keepBaseline keeps a validated frame — its quantized members, the very
// integers its sum or digest was checked over — as a baseline of its
// island, and lets go of those the window no longer keeps. The members are
// copied into a table the island recycled, whose storage fits them once
// warm: steady state allocates nothing.
func (r *Receiver) keepBaseline(s *islandBases, info *baseline.FrameInfo, ents []baseline.Entry) {
	if s.kept.KeepFrame(&r.arena, info, ents, r.newestSeq) {
		r.stats.Wire.Stored++
	}
}

// push runs one fragment through assembly, validation and commit.
func (r *Receiver) push(now int64, frag *codec.Fragment) {
	if o, f := r.asm.Push(now, frag); o == assembler.Completed {
		reason, vf := r.val.Validate(f)
		r.commit(now, reason, vf)
	}
}

// commit commits a frame the validator passed and reports whether it
// passed (whether or not the store took it for its history).
func (r *Receiver) commit(now int64, reason validator.Reason, vf *validator.Validated) bool {
	if reason != validator.OK {
		return false
	}
	if res := r.st.Commit(now, vf); res != store.Committed {
		return true
	}
	r.stats.FramesCommitted++
	if r.cfg.OnCommit != nil {
		r.cfg.OnCommit(vf)
	}
	// The playout clock follows the authority's timeline, never an island's
	// ownership epoch: a hand-off of one island must not restart every
	// island's playout.
	r.clock.Observe(now, r.timelines, vf.Time())
	return true
}

// Feedback appends to b the control messages the receiver has for the
// authority now, encoded: Keyframes (islands that need one, once), then
// Received (the datagrams that arrived, when any arrived since the last
// call) — in that order, so that the authority never takes a frame this
// receiver refused for held. In steady state that is one 17-byte message,
// whatever the number of islands. Send it on the control stream every
// 50–100 ms.
func (r *Receiver) Feedback(b []byte) []byte {
	if len(r.keyReq) > 0 {
		b = codec.Keyframes{Islands: r.keyReq}.Append(b)
		r.keyReq = r.keyReq[:0]
	}
	if newest, prior, ok := r.arrivals.Report(); ok && r.arrivalsNew {
		b = codec.Received{Newest: newest, Prior: prior}.Append(b)
		r.arrivalsNew = false
	}
	return b
}
