package broadcast

import (
	"maps"
	"slices"

	"github.com/islandsync/islandsync/codec"
)

// Clone returns an independent copy of the broadcaster: what is live, every
// observer with its subscription, restriction, queued control and
// datagrams, what each observer holds and which datagram carried what, the broadcast sequence
// and the counters, so that the copy, driven as the original would be,
// sends the same bytes. Encoders are made afresh (they keep nothing between
// broadcasts but scratch). Datagrams already queued share their bytes with
// the original's, which nobody writes again. It is for starting many runs
// from one state: a fuzz harness, a replay tool.
func (b *Broadcaster) Clone() *Broadcaster {
	c := &Broadcaster{cfg: b.cfg, idents: maps.Clone(b.idents), leases: maps.Clone(b.leases),
		manifests: maps.Clone(b.manifests), physics: maps.Clone(b.physics), classes: maps.Clone(b.classes), weights: maps.Clone(b.weights), bounds: maps.Clone(b.bounds), ticks: b.ticks,
		observers: make(map[ObserverID]*observer, len(b.observers)),
		encoders:  map[int]*codec.FloatEncoder{}, enc2: map[int]*codec.Encoder{},
		stats: b.Stats(), seq: b.seq, cdec: codec.NewControlDecoder(codec.ControlLimits{MaxMembers: b.cfg.Codec.MaxMembers})}
	for id, o := range b.observers {
		p := *o
		p.subs = append([]uint32(nil), o.subs...)
		p.allowed = append([]uint32(nil), o.allowed...)
		p.ctl = append([]byte(nil), o.ctl...)
		// Datagrams in o's storage are copied: o writes it again once
		// they are taken.
		p.out, p.buf, p.isl = make([]queued, len(o.out)), nil, nil
		for i, q := range o.out {
			p.out[i] = queued{d: Datagram{Bytes: slices.Clone(q.d.Bytes), Islands: slices.Clone(q.d.Islands)}}
		}
		p.snd = o.snd.Clone()
		p.hint = nil // it points into o's entries
		p.cands = nil
		p.regions = slices.Clone(o.regions)
		p.physics = o.physics.Clone()
		if o.inside != nil {
			p.inside = make(map[uint32]*interest, len(o.inside))
			for isl, st := range o.inside {
				c := *st
				p.inside[isl] = &c
			}
		}
		p.held = make(map[uint32]*obsIsland, len(o.held))
		for isl, oi := range o.held {
			q := *oi
			q.track = p.snd.Track(isl)
			p.held[isl] = &q
		}
		c.observers[id] = &p
	}
	return c
}
