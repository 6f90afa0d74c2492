package assembler

import "github.com/islandsync/islandsync/codec"

// Clone returns an independent copy of the assembler: its frames in
// progress (with their order, candidates and tombstones), the records of
// frames kept for a parity rebuild, its streams' sequence state and its
// counters, so that the copy goes on exactly as the
// original would. Free lists and scratch are not copied. Frames returned
// by the original's last Push are not valid in the copy. It is for starting
// many runs from one state — a fuzz harness, a replay tool.
func (a *Assembler) Clone() *Assembler {
	c := &Assembler{
		cfg:          a.cfg,
		frames:       make(map[frameID]*pending, len(a.frames)),
		islands:      make(map[islandID]*islandState, len(a.islands)),
		streams:      make(map[streamID]*streamState, len(a.streams)),
		parity:       make(map[parityKey]*parityFrame, len(a.parity)),
		parityDone:   a.parityDone,
		parityDoneAt: a.parityDoneAt,
		parityOn:     a.parityOn,
		pendingBytes: a.pendingBytes,
		counts:       a.counts,
		peak:         a.peak,
		forgot:       a.forgot,
		lastNow:      a.lastNow,
		haveTime:     a.haveTime,
	}
	c.sdec, _ = codec.NewDecoder(codec.Config{MaxDatagram: a.cfg.MaxDatagram, MaxMembers: a.cfg.MaxMembers,
		MaxFragments: a.cfg.MaxFragments}) // the configuration a's was made with
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
	for pf := a.parityOrder.head; pf != nil; pf = pf.link.next {
		q := &parityFrame{key: pf.key, created: pf.created, k: pf.k, m: pf.m, have: pf.have, bytes: pf.bytes,
			shards: make([][]byte, len(pf.shards)), bufs: make([][]byte, len(pf.bufs))}
		for i, b := range pf.bufs {
			q.bufs[i] = append(make([]byte, 0, cap(b)), b...)
		}
		for i, sh := range pf.shards {
			switch {
			case sh == nil:
			case i < len(pf.bufs) && len(sh) > 0 && cap(pf.bufs[i]) > 0 && &sh[0] == &pf.bufs[i][:1][0]:
				q.shards[i] = q.bufs[i][:len(sh)] // it stands in its buffer, as in a
			default:
				q.shards[i] = append([]byte(nil), sh...)
			}
		}
		c.parity[q.key] = q
		c.parityOrder.pushBack(q)
	}
	for s := a.streamOrder.head; s != nil; s = s.link.next {
		t := &streamState{id: s.id, lastSeq: s.lastSeq, done: s.done}
		c.streams[t.id] = t
		c.streamOrder.pushBack(t)
	}
	return c
}
