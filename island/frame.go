package island

import (
	"errors"
	"fmt"
)

// Time is authority simulation time in microseconds. Zero is the start of the
// authority's clock; negative values are allowed but unusual.
type Time int64

// Microsecond and Second are Time units.
const (
	Microsecond Time = 1
	Millisecond Time = 1000
	Second      Time = 1_000_000
)

// Seconds returns t in seconds as a float64.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Flags mark boundary frames. Unknown bits are rejected on the wire.
type Flags uint8

const (
	// FlagInitial marks the first frame of an island for an observer (the
	// island appeared or the observer joined): it is applied at once, never
	// smoothed, and bypasses send throttling.
	FlagInitial Flags = 1 << 0
	// FlagReleasing marks the last frame an owner sends before releasing the
	// island: applied at once and never throttled.
	FlagReleasing Flags = 1 << 1

	// KnownFlags is the set of flags defined by wire format version 1.
	KnownFlags = FlagInitial | FlagReleasing
)

// Frame errors.
var (
	ErrEmptyFrame      = errors.New("island: frame has no members")
	ErrDuplicateMember = errors.New("island: duplicate member identity")
	ErrUnknownFlags    = errors.New("island: unknown flag bits")
)

// Frame is one whole island sampled at one authority time. Members are in
// manifest order (ascending [MemberID.Less] on the authority). A Frame does not
// own validation state: it is what the authority sampled, or what a receiver
// claims it received.
type Frame struct {
	Sender  SenderID // peer that produced the frame
	Key     Key      // composite version key
	Time    Time     // authority time of the sample, microseconds
	Segment uint32   // continuity segment; bumps on teleport, respawn, forced correction
	Flags   Flags    // boundary flags; zero for an ordinary frame
	Members []Member // every member of the island, in manifest order
}

// Validate checks that f has at least one member, no duplicate identity, only
// known flags and finite states. It allocates a set only for frames with more
// than 64 members.
func (f *Frame) Validate() error {
	if len(f.Members) == 0 {
		return ErrEmptyFrame
	}
	if f.Flags&^KnownFlags != 0 {
		return ErrUnknownFlags
	}
	for i := range f.Members {
		if err := f.Members[i].State.Validate(); err != nil {
			return fmt.Errorf("member %d (%v): %w", i, f.Members[i].ID, err)
		}
	}
	if dup, ok := firstDuplicate(f.Members); ok {
		return fmt.Errorf("%w: %v", ErrDuplicateMember, dup)
	}
	return nil
}

func firstDuplicate(ms []Member) (MemberID, bool) {
	if len(ms) <= 64 {
		for i := 1; i < len(ms); i++ {
			for j := 0; j < i; j++ {
				if ms[i].ID == ms[j].ID {
					return ms[i].ID, true
				}
			}
		}
		return MemberID{}, false
	}
	seen := make(map[MemberID]struct{}, len(ms))
	for _, m := range ms {
		if _, ok := seen[m.ID]; ok {
			return m.ID, true
		}
		seen[m.ID] = struct{}{}
	}
	return MemberID{}, false
}

// Equal reports whether f and g carry the same sender, key, time, segment,
// flags and members bit for bit (NaN-free states compare with ==, so -0 and +0
// are treated as equal; use the codec for byte identity).
func (f *Frame) Equal(g *Frame) bool {
	if f.Sender != g.Sender || f.Key != g.Key || f.Time != g.Time ||
		f.Segment != g.Segment || f.Flags != g.Flags || len(f.Members) != len(g.Members) {
		return false
	}
	for i := range f.Members {
		if f.Members[i] != g.Members[i] {
			return false
		}
	}
	return true
}
