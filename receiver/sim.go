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

// DefaultSimIdle is how long a local simulation's space is kept without
// running before it is let go (Config.SimIdle): µs of the caller's clock.
// Building a space again allocates its buffers anew, and it happens when
// frames stop — when an observer can least afford a collection: in a soak
// of 16 watchers in one process, letting spaces go after 2 s made the
// watchers of a stopped front wait longer for frames (over 250 ms in 8 of
// 15 runs against 6) and a drain slower (over 250 ms in 4 of 15 against
// 2). So the default only returns the memory of islands that have run
// from frames alone for a long while.
const DefaultSimIdle = 30_000_000

// sims continues islands past their newest frame with a local simulation
// of their joints (package localsim), for the store. Each island keeps the
// simulations of its two latest descriptions: frames of the old topology
// are still shown (and continued) until the first frame of the new one
// commits. A simulation's cp space — about half a megabyte, whatever the
// island's size — is built when it first runs and let go once it has not
// run for idle µs (swept at most once per idle/2), so that a receiver
// holds spaces only for the islands it extrapolated or bridged within
// that time (30 s by default), not for every island that ever lost a
// frame.
type sims struct {
	byID   map[uint32]*simPair
	bodies int // over every simulation

	target [][2]float64 // Settle's blended joint separations, reused

	budget, spent int    // body steps allowed per Render, and spent in this one
	overBudget    uint64 // continuations left straight for want of budget

	now       int64  // the Render's clock, µs
	idle      int64  // µs a space is kept without running; negative: for ever
	nextSweep int64  // when sweep next looks for idle spaces
	built     int    // spaces built now
	released  uint64 // spaces let go for idleness
}

// simPair is one island's simulations, newest first, and when each last
// ran (the caller's µs).
type simPair struct {
	is  [2]*localsim.Island
	ran [2]int64
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
// message (its space is built on first use). The very description the
// newest simulation has (a repeated catch-up: a reconnect, another front)
// changes nothing; another one of the same topology and config replaces
// it; else it becomes the newest and the older of the two gives way.
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
	same := pair != nil && pair.is[0] != nil && pair.is[0].Describes(m.Topology, m.Config, len(m.Bodies))
	if same && pair.is[0].Same(&m) {
		return nil // a catch-up repeating it: keep the simulation, and its space if built
	}
	n := s.bodies + len(m.Bodies)
	switch {
	case same:
		n -= pair.is[0].Bodies()
	case pair != nil && pair.is[1] != nil:
		n -= pair.is[1].Bodies() // the oldest gives way
	}
	if n > r.cfg.MaxSimBodies {
		return ErrSimFull
	}
	is, err := localsim.New(m)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if pair == nil {
		pair = new(simPair)
		s.byID[m.Island] = pair
	}
	if same {
		s.drop(pair.is[0])
		pair.is[0], pair.ran[0] = is, s.now
	} else {
		s.drop(pair.is[1])
		pair.is[0], pair.is[1] = is, pair.is[0]
		pair.ran[0], pair.ran[1] = s.now, pair.ran[0]
	}
	s.bodies = n
	return nil
}

// drop accounts for a simulation that goes (nil: none).
func (s *sims) drop(is *localsim.Island) {
	if is != nil && is.Built() {
		s.built--
	}
}

// ran notes that the i-th simulation of pair ran now, and counts its
// space if this run built it.
func (s *sims) ran(pair *simPair, i int, wasBuilt bool) {
	pair.ran[i] = s.now
	if !wasBuilt && pair.is[i].Built() {
		s.built++
	}
}

// sweep lets go of the spaces that have not run for s.idle µs, once per
// half of that at most.
func (s *sims) sweep(now int64) {
	if s.idle < 0 || now < s.nextSweep {
		return
	}
	s.nextSweep = now + max(s.idle/2, 1)
	for _, pair := range s.byID {
		for i, is := range pair.is {
			if is != nil && is.Built() && now-pair.ran[i] >= s.idle {
				is.Release()
				s.built--
				s.released++
			}
		}
	}
}

// find returns the island's simulation for frames of this topology and
// config with n members, its pair and its place in the pair, or nil.
func (s *sims) find(id, topology, config uint32, n int) (*localsim.Island, *simPair, int) {
	if pair := s.byID[id]; pair != nil {
		for i, is := range pair.is {
			if is != nil && is.Describes(topology, config, n) {
				return is, pair, i
			}
		}
	}
	return nil, nil, 0
}

// forget drops an island's simulations.
func (s *sims) forget(id uint32) {
	if pair := s.byID[id]; pair != nil {
		for _, is := range pair.is {
			if is != nil {
				s.bodies -= is.Bodies()
				s.drop(is)
			}
		}
		delete(s.byID, id)
	}
}

func (s *sims) reset() {
	clear(s.byID)
	s.bodies, s.built = 0, 0
}

// Extrapolate continues f's island with its simulation when that describes
// f's topology and config.
func (s *sims) Extrapolate(f *validator.Validated, dt int64, out []island.State) bool {
	k := f.Key()
	is, pair, i := s.find(k.Island, k.Topology, k.Config, f.Len())
	if is == nil || !s.afford(is, is.StepsFor(k, f.Time(), dt, 0)) {
		return false
	}
	built := is.Built()
	ok := is.Continue(k, f.Time(), f.State, dt, 0, out)
	s.ran(pair, i, built)
	return ok
}

// Bridge carries f's island across a wide frame pair with its simulation
// when that describes both frames.
func (s *sims) Bridge(a, b *validator.Validated, dt int64, out []island.State) bool {
	ka, kb := a.Key(), b.Key()
	is, pair, i := s.find(ka.Island, ka.Topology, ka.Config, a.Len())
	if is == nil || !is.Describes(kb.Topology, kb.Config, b.Len()) ||
		!s.afford(is, is.BridgeStepsFor(ka, a.Time(), kb, b.Time(), dt, 0)) {
		return false
	}
	built := is.Built()
	ok := is.Bridge(ka, a.Time(), a.State, kb, b.Time(), b.State, dt, 0, out)
	s.ran(pair, i, built)
	return ok
}

// Settle stands the island's joints at its shown poses as in the frames
// they come from, when its simulation describes them.
func (s *sims) Settle(a, b *validator.Validated, alpha float64, poses []island.State) {
	k := a.Key()
	is, _, _ := s.find(k.Island, k.Topology, k.Config, a.Len())
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
