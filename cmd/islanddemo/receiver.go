package main

import (
	"errors"
	"slices"

	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// tag names the source of a displayed pose: the frame pair (pipeline) or the
// single frame (naive) it came from. Two bodies of one joint showing
// different tags are a half-frame.
type tag struct{ a, b island.Key }

// replica is an observer's copy of the scene: one kinematic cp body per
// server body, posed from what the receiver decided to show.
type replica struct {
	space  *cp.Space
	bodies map[island.MemberID]*cp.Body
	tags   map[island.MemberID]tag
	shown  map[island.MemberID]bool
}

func newReplica(w *physics.World) *replica {
	r := &replica{space: cp.NewSpace(), bodies: map[island.MemberID]*cp.Body{}, tags: map[island.MemberID]tag{}, shown: map[island.MemberID]bool{}}
	for _, is := range w.Islands() {
		for _, b := range is.Members {
			kb := cp.NewKinematicBody()
			r.space.AddBody(kb)
			r.bodies[b.ID] = kb
		}
	}
	return r
}

// set poses one body.
func (r *replica) set(id island.MemberID, st island.State, t tag) {
	b := r.bodies[id]
	if b == nil {
		return
	}
	b.SetPosition(cp.Vector{X: st.X, Y: st.Y})
	b.SetAngle(st.Angle)
	b.SetVelocity(st.VX, st.VY)
	b.SetAngularVelocity(st.AngVel)
	r.tags[id] = t
	r.shown[id] = true
}

func (r *replica) pose(id island.MemberID) (float64, float64, float64, bool) {
	b := r.bodies[id]
	if b == nil || !r.shown[id] {
		return 0, 0, 0, false
	}
	p := b.Position()
	return p.X, p.Y, b.Angle(), true
}

// measure returns, over the given joints, each displayed joint's error, and
// the number of islands whose displayed joints mix source frames.
func (r *replica) measure(islands []*physics.Island, errs []float64) ([]float64, int, float64) {
	half := 0
	tickMax := 0.0
	for _, is := range islands {
		mixed := false
		for _, j := range is.Joints {
			e, ok := physics.JointError(&j.Spec, r.pose)
			if !ok {
				continue
			}
			errs = append(errs, e)
			tickMax = max(tickMax, e)
			if j.Spec.A != physics.Static && j.Spec.B != physics.Static && r.tags[j.Spec.A] != r.tags[j.Spec.B] {
				mixed = true
			}
		}
		if mixed {
			half++
		}
	}
	return errs, half, tickMax
}

// pipeline is the real receive path: codec → assembler → validator → store
// → playout clock → replica.
type pipeline struct {
	dec   *codec.Decoder
	asm   *assembler.Assembler
	reg   *validator.Registry
	val   *validator.Validator
	st    *store.Store
	clock *store.Clock
	rep   *replica
	known []uint32 // islands with a manifest, ascending

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
		clock: store.NewClock(store.ClockConfig{SendPeriod: sendPeriod}), rep: newReplica(w),
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
			p.clock.Observe(now, vf.Key().Epoch, vf.Time())
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
		t := tag{v.Left, v.Right}
		for i, h := range v.Handles {
			if mid, ok := p.reg.Identity(h); ok {
				p.rep.set(mid, v.Poses[i], t)
			}
		}
	}
}

// naive writes each fragment's members into its bodies as soon as the
// fragment arrives: no assembly, no validation, no playout clock.
type naive struct {
	dec *codec.Decoder
	rep *replica
}

func newNaive(w *physics.World) *naive {
	dec, _ := codec.NewDecoder(codec.Config{})
	return &naive{dec: dec, rep: newReplica(w)}
}

func (n *naive) receive(dg []byte) {
	frags, err := n.dec.Decode(dg)
	if err != nil {
		return
	}
	for _, f := range frags {
		t := tag{f.Header.Key, f.Header.Key}
		for i := 0; i < int(f.Header.MemberCount); i++ {
			m := f.Member(i)
			n.rep.set(m.ID, m.State, t)
		}
	}
}
