package receiver

import (
	"maps"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// Clone returns an independent copy of the receiver — identities, leases,
// manifests, frames in reassembly, parity kept for rebuilding, decode
// baselines, frame histories, the playout clock, pending
// datagram confirmations and keyframe requests, datagrams held for control,
// and every counter — so that the
// copy, pushed the same input as the original, goes on exactly as it would.
// One exception: a local simulation's continuation in progress is not
// copied (cp spaces cannot be); the copy's simulations are rebuilt from
// their Physics descriptions and seed afresh from the frame they continue,
// which cp may step to slightly different contacts. Views the original
// handed out are not valid in the copy. Clone is for starting many runs
// from one warm state: a fuzz harness, a replay or what-if tool.
func (r *Receiver) Clone() *Receiver {
	c := *r
	c.dec, _ = codec.NewFloatDecoder(r.dec.Config())
	c.dec2, _ = codec.NewDecoder(r.dec.Config())
	c.cdec = codec.NewControlDecoder(r.cfg.Control)
	c.descs, c.resolved = r.descs.Clone(), nil
	c.asm = r.asm.Clone()
	c.reg = r.reg.Clone()
	c.val = r.val.Clone(c.reg)
	c.sim = r.sim.clone()
	c.st = r.st.Clone(c.val, &c.sim)
	c.clock = r.clock.Clone()
	c.known = append([]uint32(nil), r.known...)
	c.later = make([]timedEvent, len(r.later))
	for i, e := range r.later {
		c.later[i] = e
		c.later[i].ids = append([]island.MemberID(nil), e.ids...)
	}
	c.spawnAt, c.spawnOf = maps.Clone(r.spawnAt), maps.Clone(r.spawnOf)
	c.decor = make(map[uint32]bool, len(r.decor))
	for id := range r.decor {
		c.decor[id] = true
	}
	c.views = nil
	c.arena = baseline.Arena{MaxTables: r.arena.MaxTables} // the copies' tables are their own
	c.bases = make([]*islandBases, len(r.bases))
	for i, s := range r.bases {
		if s != nil {
			t := *s
			t.kept = s.kept.Clone()
			c.bases[i] = &t
		}
	}
	c.keyReq = append([]uint32(nil), r.keyReq...)
	c.lot = r.lot.clone()
	c.ents, c.raw, c.ids, c.states = nil, nil, nil, nil
	c.whole, c.wents, c.wsum = nil, nil, codec.DatagramSum{}
	c.runBases, c.recBases = nil, nil
	return &c
}

// clone copies the simulations' descriptions; see Receiver.Clone.
func (s *sims) clone() sims {
	c := sims{byID: make(map[uint32]*simPair, len(s.byID)), bodies: s.bodies,
		budget: s.budget, spent: s.spent, overBudget: s.overBudget,
		now: s.now, idle: s.idle, nextSweep: s.nextSweep, released: s.released} // copies build no space yet
	for id, pair := range s.byID {
		p := &simPair{ran: pair.ran}
		for i, is := range pair.is {
			if is != nil {
				p.is[i] = is.Copy()
			}
		}
		c.byID[id] = p
	}
	return c
}
