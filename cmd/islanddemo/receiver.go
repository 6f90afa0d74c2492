package main

import (
	"errors"
	"slices"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// pipeline is the real receive path: codec → assembler → validator → store
// → playout clock → replica.
type pipeline struct {
	dec   *codec.Decoder
	asm   *assembler.Assembler
	reg   *validator.Registry
	val   *validator.Validator
	st    *store.Store
	clock *store.Clock
	rep   *physics.Replica
	known []uint32 // islands with a manifest, ascending
	ids   []island.MemberID

	decodeErrs map[string]uint64
	committed  uint64
	commits    map[string]uint64
	cuts       bool // a view showed a segment cut this tick
	stale      bool // a view was stale this tick
}

func newPipeline(w *physics.World, sendPeriod int64) *pipeline {
	dec, _ := codec.NewDecoder(codec.Config{})
	asm, _ := assembler.New(assembler.Config{})
	reg := validator.NewRegistry(0, 0)
	val := validator.New(reg)
	return &pipeline{dec: dec, asm: asm, reg: reg, val: val, st: store.New(store.Config{}, val),
		clock: store.NewClock(store.ClockConfig{SendPeriod: sendPeriod}), rep: physics.NewReplica(w),
		decodeErrs: map[string]uint64{}, commits: map[string]uint64{}}
}

func (p *pipeline) control(now int64, c control) {
	switch c.kind {
	case ctlAnnounce:
		for _, id := range c.ids {
			_, _ = p.reg.Announce(id)
		}
	case ctlLease:
		if old, ok := p.val.Lease(c.lease.Island); ok && old != c.lease {
			p.st.LeaseChanged(c.lease.Island, now)
		}
		p.val.SetLease(c.lease)
	case ctlManifest:
		_ = p.val.SetManifest(c.manifest)
		if i, found := slices.BinarySearch(p.known, c.manifest.Island); !found {
			p.known = slices.Insert(p.known, i, c.manifest.Island)
		}
	case ctlForget:
		p.val.Forget(c.island)
		p.st.Forget(c.island)
		if i, found := slices.BinarySearch(p.known, c.island); found {
			p.known = slices.Delete(p.known, i, i+1)
		}
	}
}

func (p *pipeline) receive(now int64, dg []byte) {
	frags, err := p.dec.Decode(dg)
	if err != nil {
		p.decodeErrs[codecReason(err)]++
		return
	}
	for i := range frags {
		o, f := p.asm.Push(now, &frags[i])
		if o != assembler.Completed {
			continue
		}
		r, vf := p.val.Validate(f)
		if r != validator.OK {
			continue
		}
		c := p.st.Commit(now, vf)
		p.commits[c.String()]++
		if c == store.Committed {
			p.committed++
			// The clock's epoch is the authority timeline (a server
			// restart would bump it), not an island's ownership epoch: a
			// hand-off of one island must not restart every island's playout.
			p.clock.Observe(now, serverTimeline, vf.Time())
		}
	}
}

func codecReason(err error) string {
	for _, s := range []error{codec.ErrTruncated, codec.ErrBadMagic, codec.ErrVersion, codec.ErrLimit, codec.ErrMalformed, codec.ErrNonFinite} {
		if errors.Is(err, s) {
			return s.Error()[len("codec: "):]
		}
	}
	return "other"
}

// render advances the clock and poses every island's members from one view.
func (p *pipeline) render(now int64) {
	p.asm.Expire(now)
	p.clock.Advance(now)
	p.cuts, p.stale = false, false
	r, ok := p.clock.R()
	if !ok {
		return
	}
	gen := p.clock.Generation()
	for _, id := range p.known {
		v := p.st.Evaluate(id, r, now, gen)
		if v == nil || v.Mode == store.Empty {
			continue
		}
		p.cuts = p.cuts || v.Mode == store.SegmentCut
		p.stale = p.stale || v.Mode == store.Stale
		// One read-out per island: every member from the same frame pair.
		p.ids = p.ids[:0]
		for _, h := range v.Handles {
			mid, _ := p.reg.Identity(h)
			p.ids = append(p.ids, mid)
		}
		p.rep.ApplyIsland(p.ids, v.Poses, physics.Source{From: v.Left, To: v.Right})
	}
}

// serverTimeline names the demo authority's single simulation clock.
const serverTimeline = 1

// naive writes each fragment's members into its bodies as soon as the
// fragment arrives: no assembly, no validation, no playout clock.
type naive struct {
	dec *codec.Decoder
	rep *physics.Replica
}

func newNaive(w *physics.World) *naive {
	dec, _ := codec.NewDecoder(codec.Config{})
	return &naive{dec: dec, rep: physics.NewReplica(w)}
}

func (n *naive) receive(dg []byte) {
	frags, err := n.dec.Decode(dg)
	if err != nil {
		return
	}
	for _, f := range frags {
		src := physics.Source{From: f.Header.Key, To: f.Header.Key}
		for i := 0; i < int(f.Header.MemberCount); i++ {
			m := f.Member(i)
			n.rep.Set(m.ID, m.State, src)
		}
	}
}
