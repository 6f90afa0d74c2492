package validator

import (
	"errors"
	"fmt"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/island"
)

// manifestEntry is the current manifest of one island with what Validate
// needs precomputed.
type manifestEntry struct {
	m       island.Manifest
	digest  uint64
	index   map[island.MemberID]int // identity → manifest position
	handles []Handle                // cached resolutions; re-checked with Registry.Valid
}

// Validator checks assembled frames against the current authority lease and
// topology manifest of their island, and resolves every member to a local
// handle. It is a pure state machine, not safe for concurrent use; the game
// thread owns it.
type Validator struct {
	reg        *Registry
	maxIslands int
	leases     map[uint32]island.Lease
	manifests  map[uint32]*manifestEntry
	counts     [NumReasons]uint64
	out        Validated
	filled     []uint32 // manifest position → stamp of the Validate call that filled it
	call       uint32
}

// DefaultMaxIslands caps the islands a Validator holds a lease or manifest
// for: it bounds what a control stream can make a receiver remember.
const DefaultMaxIslands = 4096

// Config sets a Validator's caps. The zero value means every default.
type Config struct {
	// MaxIslands caps the islands with a lease and, separately, the islands
	// with a manifest. Zero means DefaultMaxIslands. A lease or manifest for
	// a new island beyond it is refused with ErrTableFull; replacing the
	// lease or manifest of a known island always works.
	MaxIslands int
}

// ErrTableFull reports a lease or manifest refused because the island cap is reached.
var ErrTableFull = errors.New("validator: island table full")

// New returns a validator that resolves identities through reg.
func New(reg *Registry, cfg Config) *Validator {
	if cfg.MaxIslands <= 0 {
		cfg.MaxIslands = DefaultMaxIslands
	}
	return &Validator{reg: reg, maxIslands: cfg.MaxIslands, leases: make(map[uint32]island.Lease),
		manifests: make(map[uint32]*manifestEntry)}
}

// Registry returns the identity registry.
func (v *Validator) Registry() *Registry { return v.reg }

// SetLease records the island's current authority (a reliable hand-off
// announcement). It returns ErrTableFull for a new island beyond the cap.
func (v *Validator) SetLease(l island.Lease) error {
	if _, ok := v.leases[l.Island]; !ok && len(v.leases) >= v.maxIslands {
		return ErrTableFull
	}
	v.leases[l.Island] = l
	return nil
}

// Lease returns the island's current lease.
func (v *Validator) Lease(islandID uint32) (island.Lease, bool) {
	l, ok := v.leases[islandID]
	return l, ok
}

// ErrBadManifest reports a manifest with no or repeated members.
var ErrBadManifest = errors.New("validator: bad manifest")

// SetManifest records the island's current topology manifest (a reliable
// announcement). The member list is copied. It returns an error wrapping
// ErrBadManifest for an empty list or a repeated member, and ErrTableFull
// for a new island beyond the cap.
func (v *Validator) SetManifest(m island.Manifest) error {
	if len(m.Members) == 0 {
		return fmt.Errorf("%w: no members", ErrBadManifest)
	}
	if _, ok := v.manifests[m.Island]; !ok && len(v.manifests) >= v.maxIslands {
		return ErrTableFull
	}
	e := &manifestEntry{m: m, index: make(map[island.MemberID]int, len(m.Members)), handles: make([]Handle, len(m.Members))}
	e.m.Members = append([]island.MemberID(nil), m.Members...)
	for i, id := range e.m.Members {
		if _, dup := e.index[id]; dup {
			return fmt.Errorf("%w: %v repeated", ErrBadManifest, id)
		}
		e.index[id] = i
	}
	e.digest = e.m.Digest()
	v.manifests[m.Island] = e
	return nil
}

// Manifest returns the island's current manifest; its member list is the
// validator's and must not be changed.
func (v *Validator) Manifest(islandID uint32) (island.Manifest, bool) {
	if e, ok := v.manifests[islandID]; ok {
		return e.m, true
	}
	return island.Manifest{}, false
}

// Reset forgets every lease and manifest; counters are kept.
func (v *Validator) Reset() {
	clear(v.leases)
	clear(v.manifests)
}

// Forget removes an island's lease and manifest (the island dissolved).
func (v *Validator) Forget(islandID uint32) {
	delete(v.leases, islandID)
	delete(v.manifests, islandID)
}

// Stamp returns the island's current version, and false if its lease or
// manifest is unknown.
func (v *Validator) Stamp(islandID uint32) (Stamp, bool) {
	l, ok := v.leases[islandID]
	e, ok2 := v.manifests[islandID]
	if !ok || !ok2 {
		return Stamp{}, false
	}
	return Stamp{Island: islandID, Epoch: l.Epoch, Owner: l.Owner, Topology: e.m.Topology, Config: e.m.Config, Manifest: e.digest}, true
}

// Validate checks f against the island's current lease and manifest, then
// resolves every member. On success it returns OK and the validated frame,
// members in manifest order; the frame is the validator's and stays valid
// until the next Validate (the store copies it on commit). On any failure
// it returns the reason and nil: all or nothing.
func (v *Validator) Validate(f *assembler.Frame) (Reason, *Validated) {
	r := v.validate(f)
	v.counts[r]++
	if r != OK {
		return r, nil
	}
	return OK, &v.out
}

func (v *Validator) validate(f *assembler.Frame) Reason {
	k := f.Key
	l, ok := v.leases[k.Island]
	if !ok {
		return NoLease
	}
	switch {
	case k.Epoch != l.Epoch && island.SeqNewer(l.Epoch, k.Epoch):
		return StaleEpoch
	case k.Epoch != l.Epoch:
		return FutureEpoch
	case f.Sender != l.Owner:
		return WrongSender
	}
	e, ok := v.manifests[k.Island]
	if !ok {
		return NoManifest
	}
	switch {
	case k.Topology != e.m.Topology && island.SeqNewer(e.m.Topology, k.Topology):
		return StaleTopology
	case k.Topology != e.m.Topology:
		return FutureTopology
	case k.Config != e.m.Config && island.SeqNewer(e.m.Config, k.Config):
		return StaleConfig
	case k.Config != e.m.Config:
		return FutureConfig
	}
	n := len(e.m.Members)
	if f.Len() != n {
		return MemberCountMismatch
	}
	out := &v.out
	out.handles = resize(out.handles, n)
	out.ids = resize(out.ids, n)
	out.states = resize(out.states, n)
	v.filled = resize(v.filled, n)
	v.call++
	if v.call == 0 {
		clear(v.filled)
		v.call = 1
	}
	for i := 0; i < n; i++ {
		id := f.Members.ID(i)
		pos := i
		if e.m.Members[i] != id { // frames are normally in manifest order
			p, ok := e.index[id]
			if !ok {
				return UnexpectedMember
			}
			pos = p
		}
		if v.filled[pos] == v.call {
			return DuplicateMember
		}
		v.filled[pos] = v.call
		h := e.handles[pos]
		if !v.reg.Valid(h) {
			var err error
			h, err = v.reg.Resolve(id)
			switch {
			case errors.Is(err, ErrTombstoned):
				return Tombstoned
			case err != nil:
				return UnknownIdentity
			}
			e.handles[pos] = h
		}
		m, finite := f.Members.Member(i)
		if !finite {
			return NonFinite
		}
		out.handles[pos], out.ids[pos], out.states[pos] = h, id, m.State
	}
	out.stamp = Stamp{Island: k.Island, Epoch: l.Epoch, Owner: l.Owner, Topology: e.m.Topology, Config: e.m.Config, Manifest: e.digest}
	out.key, out.time, out.segment, out.flags = k, f.Time, f.Segment, f.Flags
	return OK
}

// Stats are the validator's counters.
type Stats struct {
	Reasons [NumReasons]uint64 // per reason, OK included; index with a Reason
}

// Count returns one reason's counter.
func (s Stats) Count(r Reason) uint64 { return s.Reasons[r] }

// Stats returns the counters.
func (v *Validator) Stats() Stats { return Stats{Reasons: v.counts} }

func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
