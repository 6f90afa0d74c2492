package validator

import (
	"errors"
	"fmt"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/internal/idtable"
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
	// islands holds each island's lease and manifest in one entry: a frame
	// is checked against both with one lookup.
	islands             idtable.Table[islandEntry]
	nLeases, nManifests int // entries with a lease, with a manifest
	counts              [NumReasons]uint64
	out                 Validated
	// outStamp says out.stamp is still its island's current version: set
	// when a validation reads the lease and manifest, cleared by any change
	// to either, so that Stamp — which the store asks right after a
	// validation — need not look them up again.
	outStamp bool
	filled   []uint32 // manifest position → stamp of the Validate call that filled it
	call     uint32
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
	return &Validator{reg: reg, maxIslands: cfg.MaxIslands}
}

// islandEntry is what the validator knows of one island.
type islandEntry struct {
	lease  island.Lease
	leased bool           // lease is set
	man    *manifestEntry // nil: no manifest yet
	// stamp is the version lease and man make, set whenever either changes
	// and both are held: a validation copies it whole. Built afresh per
	// frame, field by field, the copy of it would read stores too fresh to
	// be forwarded, and wait for them.
	stamp Stamp
}

// restamp sets ie.stamp from its lease and manifest, when both are held.
func (ie *islandEntry) restamp(id uint32) {
	if ie.leased && ie.man != nil {
		l, e := &ie.lease, ie.man
		ie.stamp = Stamp{Island: id, Epoch: l.Epoch, Owner: l.Owner, Topology: e.m.Topology, Config: e.m.Config, Manifest: e.digest}
	}
}

// Registry returns the identity registry.
func (v *Validator) Registry() *Registry { return v.reg }

// SetLease records the island's current authority (a reliable hand-off
// announcement). It returns ErrTableFull for a new island beyond the cap.
func (v *Validator) SetLease(l island.Lease) error {
	e := v.islands.Get(l.Island)
	if e == nil || !e.leased {
		if v.nLeases >= v.maxIslands {
			return ErrTableFull
		}
		v.nLeases++
	}
	if e == nil {
		e = &islandEntry{}
		v.islands.Set(l.Island, e)
	}
	e.lease, e.leased = l, true
	e.restamp(l.Island)
	v.outStamp = false
	return nil
}

// Lease returns the island's current lease.
func (v *Validator) Lease(islandID uint32) (island.Lease, bool) {
	if e := v.islands.Get(islandID); e != nil {
		return e.lease, e.leased
	}
	return island.Lease{}, false
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
	ie := v.islands.Get(m.Island)
	if (ie == nil || ie.man == nil) && v.nManifests >= v.maxIslands {
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
	if ie == nil {
		ie = &islandEntry{}
		v.islands.Set(m.Island, ie)
	}
	if ie.man == nil {
		v.nManifests++
	}
	ie.man = e
	ie.restamp(m.Island)
	v.outStamp = false
	return nil
}

// Manifest returns the island's current manifest; its member list is the
// validator's and must not be changed.
func (v *Validator) Manifest(islandID uint32) (island.Manifest, bool) {
	if ie := v.islands.Get(islandID); ie != nil && ie.man != nil {
		return ie.man.m, true
	}
	return island.Manifest{}, false
}

// Reset forgets every lease and manifest; counters are kept.
func (v *Validator) Reset() {
	v.islands.Clear()
	v.nLeases, v.nManifests = 0, 0
	v.outStamp = false
}

// Forget removes an island's lease and manifest (the island dissolved).
func (v *Validator) Forget(islandID uint32) {
	e := v.islands.Get(islandID)
	if e == nil {
		return
	}
	if e.leased {
		v.nLeases--
	}
	if e.man != nil {
		v.nManifests--
	}
	v.islands.Delete(islandID)
	v.outStamp = false
}

// Stamp returns the island's current version, and false if its lease or
// manifest is unknown.
func (v *Validator) Stamp(islandID uint32) (Stamp, bool) {
	if v.outStamp && v.out.stamp.Island == islandID {
		return v.out.stamp, true
	}
	ie := v.islands.Get(islandID)
	if ie == nil || !ie.leased || ie.man == nil {
		return Stamp{}, false
	}
	return ie.stamp, true
}

// Validate checks f against the island's current lease and manifest, then
// resolves every member. On success it returns OK and the validated frame,
// members in manifest order; the frame is the validator's and stays valid
// until the next Validate (the store copies it on commit). On any failure
// it returns the reason and nil: all or nothing.
func (v *Validator) Validate(f *assembler.Frame) (Reason, *Validated) {
	return v.count(v.validate(f))
}

// Header is what a frame carries besides its members.
type Header struct {
	Sender  island.SenderID
	Key     island.Key
	Time    island.Time // authority time, microseconds
	Segment uint32      // continuity segment
	Flags   island.Flags
}

// ValidateStates is Validate for a frame the caller holds decoded rather
// than as member records — a frame restored from quantized integers, say:
// member i of the frame is ids[i] in state states[i]. The checks, reasons
// and result are those of Validate; ids and states are read, not kept.
// Differing lengths are a MemberCountMismatch.
func (v *Validator) ValidateStates(h Header, ids []island.MemberID, states []island.State) (Reason, *Validated) {
	return v.count(v.validateStates(&h, ids, states))
}

func (v *Validator) count(r Reason) (Reason, *Validated) {
	v.counts[r]++
	if r != OK {
		return r, nil
	}
	return OK, &v.out
}

func (v *Validator) validate(f *assembler.Frame) Reason {
	e, r := v.begin(f.Sender, &f.Key, f.Len())
	if r != OK {
		return r
	}
	out := &v.out
	out.time, out.segment, out.flags = f.Time, f.Segment, f.Flags
	for i := range len(e.m.Members) {
		id := f.ID(i)
		pos, hd, r := v.quick(e, i, id)
		if r != OK {
			if pos, hd, r = v.place(e, i, id); r != OK {
				return r
			}
		}
		st, finite := f.State(i)
		if !finite {
			return NonFinite
		}
		out.members[pos] = member{handle: hd, id: id, state: st}
	}
	return OK
}

func (v *Validator) validateStates(h *Header, ids []island.MemberID, states []island.State) Reason {
	if len(ids) != len(states) {
		return MemberCountMismatch
	}
	e, r := v.begin(h.Sender, &h.Key, len(ids))
	if r != OK {
		return r
	}
	out := &v.out
	out.time, out.segment, out.flags = h.Time, h.Segment, h.Flags
	for i, id := range ids {
		pos, hd, r := v.quick(e, i, id)
		if r != OK {
			if pos, hd, r = v.place(e, i, id); r != OK {
				return r
			}
		}
		st := &states[i]
		// x − x is 0 for every finite x and NaN for NaN and ±Inf.
		if d := (st.X - st.X) + (st.Y - st.Y) + (st.Angle - st.Angle) + (st.VX - st.VX) + (st.VY - st.VY) +
			(st.AngVel - st.AngVel); d != 0 {
			return NonFinite
		}
		// Field by field: the caller has just written st, and a copy of
		// it whole would read those fresh stores in wider loads than they
		// were written in, which waits for them to reach the cache.
		m := &out.members[pos]
		m.handle, m.id = hd, id
		m.state.X, m.state.Y, m.state.Angle = st.X, st.Y, st.Angle
		m.state.VX, m.state.VY, m.state.AngVel = st.VX, st.VY, st.AngVel
	}
	return OK
}

// begin checks a frame of n members against its island's lease and
// manifest and readies the output for its members; the stamp and key of the
// output are set, its time, segment, flags and members are the caller's.
func (v *Validator) begin(sender island.SenderID, k *island.Key, n int) (*manifestEntry, Reason) {
	ie := v.islands.Get(k.Island)
	if ie == nil || !ie.leased {
		return nil, NoLease
	}
	l := &ie.lease
	switch {
	case k.Epoch != l.Epoch && island.SeqNewer(l.Epoch, k.Epoch):
		return nil, StaleEpoch
	case k.Epoch != l.Epoch:
		return nil, FutureEpoch
	case sender != l.Owner:
		return nil, WrongSender
	}
	e := ie.man
	if e == nil {
		return nil, NoManifest
	}
	switch {
	case k.Topology != e.m.Topology && island.SeqNewer(e.m.Topology, k.Topology):
		return nil, StaleTopology
	case k.Topology != e.m.Topology:
		return nil, FutureTopology
	case k.Config != e.m.Config && island.SeqNewer(e.m.Config, k.Config):
		return nil, StaleConfig
	case k.Config != e.m.Config:
		return nil, FutureConfig
	}
	if n != len(e.m.Members) {
		return nil, MemberCountMismatch
	}
	out := &v.out
	out.members = resize(out.members, n)
	v.filled = resize(v.filled, n)
	v.call++
	if v.call == 0 {
		clear(v.filled)
		v.call = 1
	}
	out.stamp = ie.stamp
	v.outStamp = true
	out.key = *k
	return e, OK
}

// quick places member i in the common case — where the manifest has it,
// not placed yet, its cached handle live — and otherwise reports
// UnexpectedMember for place to sort out.
func (v *Validator) quick(e *manifestEntry, i int, id island.MemberID) (int, Handle, Reason) {
	h := e.handles[i]
	if e.m.Members[i] != id || v.filled[i] == v.call || !v.reg.Valid(h) {
		return 0, Handle{}, UnexpectedMember
	}
	v.filled[i] = v.call
	return i, h, OK
}

// place finds member i's manifest position from its identity id (frames are
// normally in manifest order), refuses a stranger or a repeat, and resolves
// the identity to a live handle.
func (v *Validator) place(e *manifestEntry, i int, id island.MemberID) (int, Handle, Reason) {
	pos := i
	if e.m.Members[i] != id {
		p, ok := e.index[id]
		if !ok {
			return 0, Handle{}, UnexpectedMember
		}
		pos = p
	}
	if v.filled[pos] == v.call {
		return 0, Handle{}, DuplicateMember
	}
	v.filled[pos] = v.call
	h := e.handles[pos]
	if !v.reg.Valid(h) {
		var err error
		h, err = v.reg.Resolve(id)
		switch {
		case errors.Is(err, ErrTombstoned):
			return 0, Handle{}, Tombstoned
		case err != nil:
			return 0, Handle{}, UnknownIdentity
		}
		e.handles[pos] = h
	}
	return pos, h, OK
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
