package assembler

// Clone returns an independent copy of the assembler: its frames in
// progress (with their order, candidates and tombstones), its streams'
// sequence state and its counters, so that the copy goes on exactly as the
// original would. Free lists and scratch are not copied. Frames returned
// by the original's last Push are not valid in the copy. It is for starting
// many runs from one state — a fuzz harness, a replay tool.
func (a *Assembler) Clone() *Assembler {
	c := &Assembler{
		cfg:          a.cfg,
		frames:       make(map[frameID]*pending, len(a.frames)),
		islands:      make(map[islandID]*islandState, len(a.islands)),
		streams:      make(map[streamID]*streamState, len(a.streams)),
		pendingBytes: a.pendingBytes,
		counts:       a.counts,
		peak:         a.peak,
		forgot:       a.forgot,
		lastNow:      a.lastNow,
		haveTime:     a.haveTime,
	}
	copies := make(map[*pending]*pending, len(a.frames))
	for p := a.order.head; p != nil; p = p.link.next {
		q := &pending{id: p.id, hdr: p.hdr, created: p.created, poisoned: p.poisoned, reason: p.reason, bytes: p.bytes,
			frags: append([]fragSlot(nil), p.frags...), fragSeen: p.fragSeen, received: p.received,
			raw: append([]byte(nil), p.raw...)}
		p.covered.CopyFull(&q.covered)
		copies[p] = q
		c.frames[q.id] = q
		c.order.pushBack(q)
	}
	for id, s := range a.islands {
		t := &islandState{id: id, cands: make([]*pending, len(s.cands), max(len(s.cands), a.cfg.MaxCandidatesPerIsland))}
		for i, p := range s.cands {
			t.cands[i] = copies[p]
			copies[p].isl = t
		}
		c.islands[id] = t
	}
	for s := a.streamOrder.head; s != nil; s = s.link.next {
		t := &streamState{id: s.id, lastSeq: s.lastSeq, done: s.done}
		c.streams[t.id] = t
		c.streamOrder.pushBack(t)
	}
	return c
}
