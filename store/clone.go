package store

import "github.com/islandsync/islandsync/validator"

// Clone returns an independent copy of the store — every island's frames
// and playout state, and the counters — that re-checks versions with auth
// and continues islands with ext (the copies of the original's, for a
// receiver that is copied whole). The view handed out last is not valid in
// the copy.
func (s *Store) Clone(auth Authority, ext Extrapolator) *Store {
	c := &Store{cfg: s.cfg, ext: ext, auth: auth, stats: s.stats}
	for id, h := range s.islands.All() {
		g := *h
		g.frames = make([]*validator.Validated, len(h.frames), max(len(h.frames), s.cfg.History))
		for i, f := range h.frames {
			g.frames[i] = f.Clone()
		}
		g.prev = make([]*validator.Validated, len(h.prev))
		for i, f := range h.prev {
			g.prev[i] = f.Clone()
		}
		g.spare = nil
		g.shown = append(h.shown[:0:0], h.shown...)
		g.shownBy = append(h.shownBy[:0:0], h.shownBy...)
		g.offsets = append(h.offsets[:0:0], h.offsets...)
		g.last.Handles = append(h.last.Handles[:0:0], h.last.Handles...)
		g.last.Poses = append(h.last.Poses[:0:0], h.last.Poses...)
		c.islands.Set(id, &g)
	}
	return c
}

// Clone returns an independent copy of the clock.
func (c *Clock) Clone() *Clock {
	d := *c
	d.samples = append(make([]int64, 0, SampleWindow), c.samples...)
	d.scratch = nil
	return &d
}
