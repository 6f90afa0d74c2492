package receiver

import (
	"errors"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// DecodeStats counts datagrams the decoder refused, by reason.
type DecodeStats struct {
	Truncated, BadMagic, Version, Limit, Malformed, NonFinite, Other uint64
}

func (d *DecodeStats) add(err error) {
	switch codec.Reason(err) {
	case "truncated":
		d.Truncated++
	case "bad-magic":
		d.BadMagic++
	case "unknown-version":
		d.Version++
	case "limit":
		d.Limit++
	case "malformed":
		d.Malformed++
	case "non-finite":
		d.NonFinite++
	default:
		d.Other++
	}
}

// ControlStats counts control messages: applied per type, refused per reason.
type ControlStats struct {
	Applied   [256]uint64 // per codec.MessageType
	NoWelcome uint64      // refused: before the Welcome
	Direction uint64      // refused: an observer → server message
	Refused   uint64      // refused by a stage (cap, tombstone, bad manifest)
}

func (c *ControlStats) count(t codec.MessageType, err error) {
	switch {
	case err == nil:
		c.Applied[t]++
	case errors.Is(err, ErrNoWelcome):
		c.NoWelcome++
	case errors.Is(err, ErrDirection):
		c.Direction++
	default:
		c.Refused++
	}
}

// Stats gathers the counters of every stage of the receive path.
type Stats struct {
	Datagrams       uint64 // datagrams pushed
	BytesReceived   uint64 // bytes of the datagrams pushed, valid or not
	FramesCommitted uint64 // frames validated and stored
	Timelines       uint64 // authority timelines seen (restarts + 1)
	// LateEvents counts Destroy and Forget messages whose authority time
	// playback had already passed when they arrived (or that found the
	// queue of those waiting full): they took effect at once.
	LateEvents uint64
	// PendingEvents is how many Destroy and Forget messages wait for
	// playback to reach their time.
	PendingEvents int
	Reconnects    uint64 // Welcomes of an already known timeline
	// OldestIsland is, at the last Render, how far past its newest frame
	// the island shown longest without one was, µs (0: every island was
	// shown from frames around r). An island the authority's budget left
	// out keeps its own newest frame's time: its age grows until it is sent
	// again, and past the clock's extrapolation cap it is shown Stale.
	OldestIsland int64
	// StaleIslands is how many islands the last Render showed Stale (held,
	// not valid at r: ViewReady is false while a critical one is).
	StaleIslands int
	Decode       DecodeStats
	Control      ControlStats
	Wire         WireStats
	Assembler    assembler.Stats
	Validator    validator.Stats
	Store        store.Stats
	Clock        store.ClockStats
	// SimOverBudget counts continuations past Config.MaxSimWork in their
	// Render, shown along the members' velocities instead.
	SimOverBudget uint64
	// SimBodies is how many bodies the local simulations hold now.
	SimBodies int
	// SimSpaces is how many local simulations have their cp space built
	// now (about half a megabyte each), and SimReleased how many spaces
	// were let go after Config.SimIdle without running.
	SimSpaces   int
	SimReleased uint64
}

// Stats returns the counters of every stage.
func (r *Receiver) Stats() Stats {
	s := r.stats
	s.Assembler = r.asm.Stats()
	s.Validator = r.val.Stats()
	s.Store = r.st.Stats()
	s.Clock = r.Clock()
	s.SimOverBudget, s.SimBodies = r.sim.overBudget, r.sim.bodies
	s.SimSpaces, s.SimReleased = r.sim.built, r.sim.released
	s.PendingEvents = len(r.later)
	return s
}

// Rejects calls fn for every nonzero reject or drop counter, named
// "stage:reason" in kebab case — "codec:truncated",
// "assembler:digest-mismatch", "validator:wrong-sender",
// "store:version-changed", "control:refused" — in a fixed order.
func (s *Stats) Rejects(fn func(reason string, n uint64)) {
	emit := func(name string, n uint64) {
		if n > 0 {
			fn(name, n)
		}
	}
	d := &s.Decode
	emit("codec:truncated", d.Truncated)
	emit("codec:bad-magic", d.BadMagic)
	emit("codec:unknown-version", d.Version)
	emit("codec:limit", d.Limit)
	emit("codec:malformed", d.Malformed)
	emit("codec:non-finite", d.NonFinite)
	emit("codec:other", d.Other)
	for o := assembler.Outcome(0); o < assembler.NumOutcomes; o++ {
		if o.IsReject() || o.IsDrop() {
			emit("assembler:"+o.String(), s.Assembler.Count(o))
		}
	}
	for r := validator.Reason(1); r < validator.NumReasons; r++ {
		emit("validator:"+r.String(), s.Validator.Count(r))
	}
	for c := store.CommitResult(1); c < store.NumCommitResults; c++ {
		emit("store:"+c.String(), s.Store.Count(c))
	}
	emit("wire:no-baseline", s.Wire.NoBaseline)
	emit("wire:no-links", s.Wire.NoLinks)
	emit("wire:refused", s.Wire.Refused)
	emit("wire:sum-mismatch", s.Wire.Digest)
	emit("wire:unverified", s.Wire.Unverified)
	emit("wire:unknown-island", s.Wire.Unknown)
	emit("wire:park-dropped", s.Wire.ParkDropped)
	emit("wire:frame-park-dropped", s.Wire.FramesParkDropped)
	emit("control:no-welcome", s.Control.NoWelcome)
	emit("control:wrong-direction", s.Control.Direction)
	emit("control:refused", s.Control.Refused)
}
