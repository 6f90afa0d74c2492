package assembler

import (
	"fmt"

	"github.com/islandsync/islandsync/codec"
)

// Defaults. Each cap bounds what a hostile peer can make the assembler hold.
const (
	// DefaultTTL is how long an incomplete frame is held, in microseconds:
	// several broadcast periods at 20–30 Hz, short enough that a lost
	// fragment frees its frame quickly.
	DefaultTTL = 250_000
	// DefaultMaxCandidatesPerIsland caps incomplete frames per island,
	// over all senders together: however many senders and sequence numbers
	// a peer invents, one island never holds more than this many frames in
	// flight. At the cap, the sender holding the most candidates loses its
	// oldest. Eight covers a TTL's worth of frames at 30 Hz, so reordering
	// alone does not evict frames that would still complete.
	DefaultMaxCandidatesPerIsland = 8
	// DefaultMaxPending caps incomplete frames overall (all senders, all
	// islands), including rejected frames kept as poisoned tombstones.
	DefaultMaxPending = 1024
	// DefaultMaxPendingBytes caps the accounted bytes of all incomplete
	// frames: 8 MiB holds sixteen 4096-member frames in flight.
	DefaultMaxPendingBytes = 8 << 20
	// DefaultMaxStreams caps how many streams' last completed sequence the
	// assembler remembers for staleness checks; the least recently
	// completed stream is forgotten first.
	DefaultMaxStreams = 4096
)

// Accounting model: what one pending frame is charged, independent of the
// platform's struct sizes (no unsafe). Charges are conservative.
const (
	// FrameOverhead is charged once per pending frame (its record, map
	// entries, list links, bitsets' headers).
	FrameOverhead = 256
	// FragmentOverhead is charged per declared fragment of a pending frame
	// (its slot in the fragment table).
	FragmentOverhead = 16
	// MemberCharge is charged per received member: its wire bytes.
	MemberCharge = codec.MemberSize
)

// Config sets the assembler's caps. The zero value means every default.
type Config struct {
	// TTL is how long an incomplete frame is held after its first fragment,
	// in microseconds of the caller's clock. Zero means DefaultTTL.
	TTL int64
	// MaxCandidatesPerIsland caps incomplete frames per island, all senders together.
	// Zero means DefaultMaxCandidatesPerIsland.
	MaxCandidatesPerIsland int
	// MaxPending caps incomplete frames overall. Zero means DefaultMaxPending.
	MaxPending int
	// MaxPendingBytes caps the accounted bytes of incomplete frames (see
	// FrameOverhead, FragmentOverhead, MemberCharge). Zero means
	// DefaultMaxPendingBytes.
	MaxPendingBytes int
	// MaxStreams caps the remembered streams. Zero means DefaultMaxStreams.
	MaxStreams int
	// MaxMembers caps the members of one frame. Zero means
	// codec.DefaultMaxMembers.
	MaxMembers int
	// MaxFragments caps the fragments of one frame. Zero means
	// codec.DefaultMaxFragments.
	MaxFragments int
	// MaxDatagram is the largest datagram the caller takes, in bytes: each
	// record of a frame that carries parity is kept in a buffer of that
	// size, charged to MaxPendingBytes. Zero means codec.DefaultMaxDatagram.
	MaxDatagram int
}

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	def(&c.MaxCandidatesPerIsland, DefaultMaxCandidatesPerIsland)
	def(&c.MaxPending, DefaultMaxPending)
	def(&c.MaxPendingBytes, DefaultMaxPendingBytes)
	def(&c.MaxStreams, DefaultMaxStreams)
	def(&c.MaxMembers, codec.DefaultMaxMembers)
	def(&c.MaxFragments, codec.DefaultMaxFragments)
	def(&c.MaxDatagram, codec.DefaultMaxDatagram)
	switch {
	case c.TTL < 0:
		return c, fmt.Errorf("assembler: TTL %d < 0", c.TTL)
	case c.MaxCandidatesPerIsland < 1, c.MaxPending < 1, c.MaxStreams < 1:
		return c, fmt.Errorf("assembler: caps must be positive: %+v", c)
	case c.MaxMembers < 1 || c.MaxMembers > codec.MaxMaxMembers:
		return c, fmt.Errorf("assembler: MaxMembers %d outside [1, %d]", c.MaxMembers, codec.MaxMaxMembers)
	case c.MaxFragments < 1 || c.MaxFragments > codec.MaxMaxFragments:
		return c, fmt.Errorf("assembler: MaxFragments %d outside [1, %d]", c.MaxFragments, codec.MaxMaxFragments)
	case c.MaxDatagram < codec.MinMaxDatagram || c.MaxDatagram > codec.MaxMaxDatagram:
		return c, fmt.Errorf("assembler: MaxDatagram %d outside [%d, %d]", c.MaxDatagram, codec.MinMaxDatagram, codec.MaxMaxDatagram)
	case c.MaxPendingBytes < FrameOverhead+FragmentOverhead+MemberCharge:
		return c, fmt.Errorf("assembler: MaxPendingBytes %d cannot hold one fragment", c.MaxPendingBytes)
	case c.MaxPending < c.MaxCandidatesPerIsland:
		return c, fmt.Errorf("assembler: MaxPending %d < MaxCandidatesPerIsland %d", c.MaxPending, c.MaxCandidatesPerIsland)
	}
	return c, nil
}
