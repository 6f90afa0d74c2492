package codec

import "fmt"

// Wire constants of format version 1. See docs/wire-format.md.
const (
	// Version is the only format version this package writes and reads.
	Version = 1
	// Magic is the first four bytes of every datagram: "ISYN".
	Magic = "ISYN"

	// DatagramHeaderSize is magic (4) + version (1) + record count (1).
	DatagramHeaderSize = 6
	// RecordLengthSize is the uint16 length prefix before each fragment record.
	RecordLengthSize = 2
	// FragmentHeaderSize is the fixed part of a fragment record.
	FragmentHeaderSize = 59
	// MemberSize is one member record: stable id (8), generation (4) and six
	// float64 state fields (48).
	MemberSize = 60

	// MaxRecordsPerDatagram is the largest record count the uint8 count field holds.
	MaxRecordsPerDatagram = 255
	// maxRecordLength is the largest value of the uint16 record length.
	maxRecordLength = 0xFFFF
	// MaxMembersPerFragment is the most members one record can carry: the
	// uint16 record length must cover the header and every member.
	MaxMembersPerFragment = (maxRecordLength - FragmentHeaderSize) / MemberSize
)

// Limits and defaults. Each one bounds what a peer can make us do.
const (
	// DefaultMaxDatagram is the default datagram size cap in bytes: under the
	// IPv6 minimum MTU with room for IP and UDP headers, so frames are never
	// IP-fragmented on ordinary paths.
	DefaultMaxDatagram = 1200
	// MinMaxDatagram is the smallest allowed datagram cap (the IPv4 minimum
	// reassembly size); smaller caps would leave room for too few members.
	MinMaxDatagram = 576
	// MaxMaxDatagram is the largest allowed cap: the largest UDP payload over IPv4.
	MaxMaxDatagram = 65507
	// DefaultMaxMembers caps the members of one frame. It bounds the memory a
	// claimed total can reserve in a receiver.
	DefaultMaxMembers = 4096
	// MaxMaxMembers is the largest member cap a Config may ask for.
	MaxMaxMembers = 1 << 20
	// DefaultMaxFragments caps the fragments of one frame: 4096 members at the
	// minimum datagram cap need 512.
	DefaultMaxFragments = 512
	// MaxMaxFragments is the largest value the uint16 fragment count holds.
	MaxMaxFragments = 0xFFFF
)

// Config sets the caps shared by the encoder and the decoder. The zero value
// means every default. The sender and receiver should use the same member and
// fragment caps; a receiver's MaxDatagram may be larger than a sender's.
type Config struct {
	// MaxDatagram is the largest datagram in bytes. Zero means
	// DefaultMaxDatagram; otherwise it must lie in [MinMaxDatagram, MaxMaxDatagram].
	MaxDatagram int
	// MaxMembers is the largest member count of one frame. Zero means
	// DefaultMaxMembers; otherwise it must lie in [1, MaxMaxMembers].
	MaxMembers int
	// MaxFragments is the largest fragment count of one frame. Zero means
	// DefaultMaxFragments; otherwise it must lie in [1, MaxMaxFragments].
	MaxFragments int
}

// WithDefaults returns c with every zero field replaced by its default, or an
// error if a field is out of range.
func (c Config) WithDefaults() (Config, error) {
	if c.MaxDatagram == 0 {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.MaxMembers == 0 {
		c.MaxMembers = DefaultMaxMembers
	}
	if c.MaxFragments == 0 {
		c.MaxFragments = DefaultMaxFragments
	}
	if c.MaxDatagram < MinMaxDatagram || c.MaxDatagram > MaxMaxDatagram {
		return c, fmt.Errorf("codec: MaxDatagram %d outside [%d, %d]", c.MaxDatagram, MinMaxDatagram, MaxMaxDatagram)
	}
	if c.MaxMembers < 1 || c.MaxMembers > MaxMaxMembers {
		return c, fmt.Errorf("codec: MaxMembers %d outside [1, %d]", c.MaxMembers, MaxMaxMembers)
	}
	if c.MaxFragments < 1 || c.MaxFragments > MaxMaxFragments {
		return c, fmt.Errorf("codec: MaxFragments %d outside [1, %d]", c.MaxFragments, MaxMaxFragments)
	}
	return c, nil
}

// MembersPerFragment returns how many members fit in one fragment record when
// that record travels alone in a datagram of c.MaxDatagram bytes.
func (c Config) MembersPerFragment() int {
	n := (c.MaxDatagram - DatagramHeaderSize - RecordLengthSize - FragmentHeaderSize) / MemberSize
	return min(n, MaxMembersPerFragment)
}

// maxMembers and maxFragments read a cap, zero (or a nil Config) meaning
// the default, so parsers need no defaults-applied copy.
func (c *Config) maxMembers() int {
	if c == nil || c.MaxMembers <= 0 {
		return DefaultMaxMembers
	}
	return c.MaxMembers
}

func (c *Config) maxFragments() int {
	if c == nil || c.MaxFragments <= 0 {
		return DefaultMaxFragments
	}
	return c.MaxFragments
}
