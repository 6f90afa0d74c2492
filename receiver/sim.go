package receiver

import (
	"fmt"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/localsim"
	"github.com/islandsync/islandsync/validator"
)

// DefaultMaxSimBodies caps the bodies of all local simulations together.
const DefaultMaxSimBodies = 1 << 16

// DefaultMaxSimWork caps the local simulations' work per Render, in body
// steps (a step of an island of n bodies is n): about 8 ms of one core
// for the 240-link chain (about 0.5 µs per body step).
const DefaultMaxSimWork = 16_384

// ErrSimFull: a Physics message would take the local simulations past
// Config.MaxSimBodies. The island is still shown; past its newest frame its
// members move along their own velocities.
var ErrSimFull = fmt.Errorf("%w: local simulation table full", ErrRefused)

// sims continues islands past their newest frame with a local simulation
// of their joints (package localsim), for the store. Each island keeps the
// simulations of its two latest descriptions: frames of the old topology
// are still shown (and continued) until the first frame of the new one
// commits.
type sims struct {
	byID   map[uint32]*[2]*localsim.Island // newest first
	bodies int                             // over every simulation

	target [][2]float64 // Settle's blended joint separations, reused

	budget, spent int    // body steps allowed per Render, and spent in this one
	overBudget    uint64 // continuations left straight for want of budget
}

// afford reports whether steps steps of is fit what is left of this
// Render's budget, and spends them if so.
func (s *sims) afford(is *localsim.Island, steps int) bool {
	cost := steps * is.Bodies()
	if s.spent+cost > s.budget {
		s.overBudget++
		return false
	}
	s.spent += cost
	return true
}

// physics sets up the local simulation of an island from its Physics
// message (its space is built on first use). It replaces one of the same topology and config (a repeated
// catch-up), else it becomes the newest and the older of the two gives way.
func (r *Receiver) physics(m codec.Physics) error {
	if r.cfg.StraightExtrapolation {
		return nil
	}
	man, ok := r.val.Manifest(m.Island)
	if !ok || man.Topology != m.Topology || man.Config != m.Config || len(man.Members) != len(m.Bodies) {
		return fmt.Errorf("%w: physics of island %d does not describe its manifest", ErrRefused, m.Island)
	}
	s := &r.sim
	pair := s.byID[m.Island]
	same := pair != nil && pair[0] != nil && pair[0].Describes(m.Topology, m.Config, len(m.Bodies))
	n := s.bodies + len(m.Bodies)
	switch {
	case same:
		n -= pair[0].Bodies()
	case pair != nil && pair[1] != nil:
		n -= pair[1].Bodies() // the oldest gives way
	}
	if n > r.cfg.MaxSimBodies {
		return ErrSimFull
	}
	is, err := localsim.New(m)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if pair == nil {
		pair = new([2]*localsim.Island)
		s.byID[m.Island] = pair
	}
	if same {
		pair[0] = is
	} else {
		pair[0], pair[1] = is, pair[0]
	}
	s.bodies = n
	return nil
}

// find returns the island's simulation for frames of this topology and
// config with n members, or nil.
func (s *sims) find(id, topology, config uint32, n int) *localsim.Island {
	if pair := s.byID[id]; pair != nil {
		for _, is := range pair {
			if is != nil && is.Describes(topology, config, n) {
				return is
			}
		}
	}
	return nil
}

// forget drops an island's simulations.
func (s *sims) forget(id uint32) {
	if pair := s.byID[id]; pair != nil {
		for _, is := range pair {
			if is != nil {
				s.bodies -= is.Bodies()
			}
		}
		delete(s.byID, id)
	}
}

func (s *sims) reset() {
	clear(s.byID)
	s.bodies = 0
}

// Extrapolate continues f's island with its simulation when that describes
// f's topology and config.
func (s *sims) Extrapolate(f *validator.Validated, dt int64, out []island.State) bool {
	k := f.Key()
	is := s.find(k.Island, k.Topology, k.Config, f.Len())
	if is == nil || !s.afford(is, is.StepsFor(k, f.Time(), dt, 0)) {
		return false
	}
	return is.Continue(k, f.Time(), f.State, dt, 0, out)
}

// Bridge carries f's island across a wide frame pair with its simulation
// when that describes both frames.
func (s *sims) Bridge(a, b *validator.Validated, dt int64, out []island.State) bool {
	ka, kb := a.Key(), b.Key()
	is := s.find(ka.Island, ka.Topology, ka.Config, a.Len())
	if is == nil || !is.Describes(kb.Topology, kb.Config, b.Len()) ||
		!s.afford(is, is.BridgeStepsFor(ka, a.Time(), kb, b.Time(), dt, 0)) {
		return false
	}
	return is.Bridge(ka, a.Time(), a.State, kb, b.Time(), b.State, dt, 0, out)
}

// Settle stands the island's joints at its shown poses as in the frames
// they come from, when its simulation describes them.
func (s *sims) Settle(a, b *validator.Validated, alpha float64, poses []island.State) {
	k := a.Key()
	is := s.find(k.Island, k.Topology, k.Config, a.Len())
	if is == nil {
		return
	}
	sa := is.FrameSeparations(k, a.Time(), a.State)
	if b == nil {
		is.Settle(poses, sa)
		return
	}
	kb := b.Key()
	if !is.Describes(kb.Topology, kb.Config, b.Len()) {
		return
	}
	sb := is.FrameSeparations(kb, b.Time(), b.State)
	s.target = append(s.target[:0], sa...)
	for i := range s.target {
		t, o := &s.target[i], &sb[i]
		t[0] += (o[0] - t[0]) * alpha
		t[1] += (o[1] - t[1]) * alpha
	}
	is.Settle(poses, s.target)
}
