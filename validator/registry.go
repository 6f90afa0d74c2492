package validator

import (
	"errors"
	"fmt"

	"github.com/islandsync/islandsync/island"
)

// Handle is a generation-safe reference to a local body slot: the slot index
// and the slot's generation when the handle was issued. When a slot is
// reused its generation bumps, so an old handle never resolves to the new
// occupant. The zero Handle is invalid (generations start at 1).
type Handle struct {
	Slot uint32 // index into the engine's body table
	Gen  uint32 // slot generation; 0 never names a live slot
}

// String formats the handle as "#slot.gen".
func (h Handle) String() string { return fmt.Sprintf("#%d.%d", h.Slot, h.Gen) }

// Registry errors.
var (
	ErrTombstoned      = errors.New("validator: identity generation was destroyed")
	ErrOlderGeneration = errors.New("validator: older generation than the live one")
	ErrRegistryFull    = errors.New("validator: registry full")
	ErrUnknown         = errors.New("validator: identity not announced")
)

// DefaultMaxBodies caps live identities in a Registry.
const DefaultMaxBodies = 1 << 16

// DefaultMaxTombstones caps remembered destroyed identities; the oldest
// tombstone is forgotten first (a record of a forgotten identity is still
// refused as unknown, since only an announcement creates a body).
const DefaultMaxTombstones = 1 << 16

type slot struct {
	gen  uint32
	id   island.MemberID
	live bool
}

type tomb struct {
	gen uint32 // highest destroyed generation of the stable id
}

// Registry maps stable identities, announced reliably by the authority, to
// local generation-safe handles. It is not safe for concurrent use.
type Registry struct {
	maxBodies, maxTombs int
	slots               []slot
	free                []uint32
	live                map[uint64]uint32 // stable id → slot of its live generation
	tombs               map[uint64]tomb
	tombOrder           []uint64 // FIFO of stable ids with tombstones
}

// NewRegistry returns an empty registry. Zero caps mean the defaults.
func NewRegistry(maxBodies, maxTombstones int) *Registry {
	if maxBodies <= 0 {
		maxBodies = DefaultMaxBodies
	}
	if maxTombstones <= 0 {
		maxTombstones = DefaultMaxTombstones
	}
	return &Registry{maxBodies: maxBodies, maxTombs: maxTombstones,
		live: make(map[uint64]uint32), tombs: make(map[uint64]tomb)}
}

// Announce records a reliable spawn announcement of id and returns its
// handle. Announcing the live generation again returns the same handle. A
// newer generation of a live stable id destroys the old generation first
// (leaving a tombstone) and gets a fresh slot: it inherits nothing. An older
// or destroyed generation is refused.
func (r *Registry) Announce(id island.MemberID) (Handle, error) {
	if t, ok := r.tombs[id.Stable]; ok && id.Generation <= t.gen {
		return Handle{}, ErrTombstoned
	}
	if s, ok := r.live[id.Stable]; ok {
		cur := r.slots[s].id.Generation
		switch {
		case id.Generation == cur:
			return Handle{Slot: s, Gen: r.slots[s].gen}, nil
		case id.Generation < cur:
			return Handle{}, ErrOlderGeneration
		}
		r.destroySlot(s)
	}
	var s uint32
	if n := len(r.free); n > 0 {
		s = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		if len(r.slots) >= r.maxBodies {
			return Handle{}, ErrRegistryFull
		}
		s = uint32(len(r.slots))
		r.slots = append(r.slots, slot{})
	}
	sl := &r.slots[s]
	sl.gen++
	if sl.gen == 0 { // a slot reused 2^32 times: skip the invalid zero
		sl.gen = 1
	}
	sl.id, sl.live = id, true
	r.live[id.Stable] = s
	return Handle{Slot: s, Gen: sl.gen}, nil
}

// Destroy records a reliable destroy announcement: the live generation of
// id.Stable, if it is id.Generation, is removed and tombstoned, so late
// records or announcements of it never revive the object. Destroying an
// unknown identity still leaves a tombstone.
func (r *Registry) Destroy(id island.MemberID) {
	if s, ok := r.live[id.Stable]; ok && r.slots[s].id.Generation <= id.Generation {
		r.destroySlot(s)
	}
	r.tombstone(id)
}

func (r *Registry) destroySlot(s uint32) {
	sl := &r.slots[s]
	delete(r.live, sl.id.Stable)
	r.tombstone(sl.id)
	sl.live = false
	sl.gen++ // every handle to the old occupant is now stale
	if sl.gen == 0 {
		sl.gen = 1
	}
	r.free = append(r.free, s)
}

func (r *Registry) tombstone(id island.MemberID) {
	t, ok := r.tombs[id.Stable]
	if ok && t.gen >= id.Generation {
		return
	}
	if !ok {
		for len(r.tombs) >= r.maxTombs && len(r.tombOrder) > 0 {
			old := r.tombOrder[0]
			r.tombOrder = r.tombOrder[1:]
			delete(r.tombs, old)
		}
		r.tombOrder = append(r.tombOrder, id.Stable)
	}
	r.tombs[id.Stable] = tomb{gen: id.Generation}
}

// Resolve returns the handle of id's live generation, or ErrTombstoned,
// ErrOlderGeneration or ErrUnknown. It never guesses.
func (r *Registry) Resolve(id island.MemberID) (Handle, error) {
	if s, ok := r.live[id.Stable]; ok {
		sl := &r.slots[s]
		switch {
		case sl.id.Generation == id.Generation:
			return Handle{Slot: s, Gen: sl.gen}, nil
		case id.Generation < sl.id.Generation:
			return Handle{}, ErrTombstoned
		}
		return Handle{}, ErrUnknown // a newer generation not announced yet
	}
	if t, ok := r.tombs[id.Stable]; ok && id.Generation <= t.gen {
		return Handle{}, ErrTombstoned
	}
	return Handle{}, ErrUnknown
}

// Valid reports whether h still names a live body.
func (r *Registry) Valid(h Handle) bool {
	return h.Gen != 0 && int(h.Slot) < len(r.slots) && r.slots[h.Slot].live && r.slots[h.Slot].gen == h.Gen
}

// Identity returns the identity a valid handle names.
func (r *Registry) Identity(h Handle) (island.MemberID, bool) {
	if !r.Valid(h) {
		return island.MemberID{}, false
	}
	return r.slots[h.Slot].id, true
}

// Reset forgets every identity and tombstone (a new authority timeline).
// Handles issued before stay invalid: slot generations keep counting.
func (r *Registry) Reset() {
	for _, s := range r.live {
		sl := &r.slots[s]
		sl.live = false
		sl.gen++
		if sl.gen == 0 {
			sl.gen = 1
		}
		r.free = append(r.free, s)
	}
	clear(r.live)
	clear(r.tombs)
	r.tombOrder = r.tombOrder[:0]
}

// Live calls fn for every live identity, in no particular order.
func (r *Registry) Live(fn func(island.MemberID)) {
	for _, s := range r.live {
		fn(r.slots[s].id)
	}
}
