package validator

import "maps"

// Clone returns an independent copy of the registry: the same slots (so
// every Handle names the same identity in both), free list, live
// identities and tombstones.
func (r *Registry) Clone() *Registry {
	return &Registry{maxBodies: r.maxBodies, maxTombs: r.maxTombs, slots: append([]slot(nil), r.slots...),
		free: append([]uint32(nil), r.free...), live: maps.Clone(r.live), tombs: maps.Clone(r.tombs),
		tombOrder: append([]uint64(nil), r.tombOrder...)}
}

// Clone returns an independent copy of the validator — leases, manifests
// and counters — checking identities against reg (a Clone of the
// original's registry, so that cached handles stay right).
func (v *Validator) Clone(reg *Registry) *Validator {
	c := &Validator{reg: reg, maxIslands: v.maxIslands,
		nLeases: v.nLeases, nManifests: v.nManifests, counts: v.counts}
	for id, e0 := range v.islands.All() {
		ie := *e0
		if e := ie.man; e != nil {
			m := e.m
			m.Members = append(m.Members[:0:0], e.m.Members...)
			ie.man = &manifestEntry{m: m, digest: e.digest, index: maps.Clone(e.index), handles: append([]Handle(nil), e.handles...)}
		}
		c.islands.Set(id, &ie)
	}
	return c
}
