package validator

import (
	"github.com/islandsync/islandsync/island"
)

// Stamp is the authority and topology version a frame was validated
// against. The store commits a frame only if the island's current Stamp is
// still equal (compare-and-commit): a lease, topology or config change between
// validation and commit discards the whole frame. It is comparable.
type Stamp struct {
	Island   uint32
	Epoch    uint32          // lease epoch
	Owner    island.SenderID // lease owner
	Topology uint32          // manifest topology generation
	Config   uint32          // manifest config revision
	Manifest uint64          // manifest digest
}

// Validated is an immutable ValidatedIslandFrame: a frame whose sender,
// epoch, topology, config and member set matched the current lease and
// manifest, with every member resolved to a live local handle, listed in
// manifest order. It exposes no way to change it; Clone or CopyFrom give an
// independent copy.
type Validated struct {
	stamp   Stamp
	key     island.Key
	time    island.Time
	segment uint32
	flags   island.Flags
	members []member // side by side, so that a frame is one array to copy and read
}

// member is one member of a validated frame.
type member struct {
	handle Handle
	id     island.MemberID
	state  island.State
}

// ValidatedIslandFrame is another name for Validated: an island frame that
// passed every check and holds every member, resolved, in manifest order.
type ValidatedIslandFrame = Validated

// Stamp returns the version the frame was validated against.
func (v *Validated) Stamp() Stamp { return v.stamp }

// Key returns the frame's composite key.
func (v *Validated) Key() island.Key { return v.key }

// Time returns the authority time of the frame, microseconds.
func (v *Validated) Time() island.Time { return v.time }

// Segment returns the continuity segment.
func (v *Validated) Segment() uint32 { return v.segment }

// Flags returns the boundary flags.
func (v *Validated) Flags() island.Flags { return v.flags }

// Len returns the number of members.
func (v *Validated) Len() int { return len(v.members) }

// Handle returns member i's local handle (manifest order).
func (v *Validated) Handle(i int) Handle { return v.members[i].handle }

// ID returns member i's stable identity (manifest order).
func (v *Validated) ID(i int) island.MemberID { return v.members[i].id }

// State returns member i's sampled state (manifest order).
func (v *Validated) State(i int) island.State { return v.members[i].state }

// CopyFrom makes v an independent copy of src, reusing v's storage.
func (v *Validated) CopyFrom(src *Validated) {
	v.stamp, v.key, v.time, v.segment, v.flags = src.stamp, src.key, src.time, src.segment, src.flags
	v.members = append(v.members[:0], src.members...)
}

// Clone returns an independent copy of v.
func (v *Validated) Clone() *Validated {
	c := &Validated{}
	c.CopyFrom(v)
	return c
}
