package codec

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them, so callers branch with errors.Is.
var (
	// ErrTruncated: the input ends before a field or a declared length.
	ErrTruncated = errors.New("codec: truncated")
	// ErrBadMagic: the datagram does not start with the islandsync magic.
	ErrBadMagic = errors.New("codec: bad magic")
	// ErrVersion: the datagram's format version is not one this package reads.
	ErrVersion = errors.New("codec: unknown version")
	// ErrLimit: a size, count or index exceeds a configured limit.
	ErrLimit = errors.New("codec: limit exceeded")
	// ErrMalformed: the fields are present but inconsistent or non-canonical
	// (zero counts, index out of range, length mismatch, unknown flag bits,
	// trailing bytes).
	ErrMalformed = errors.New("codec: malformed")
	// ErrNoLinks: a joint-predicted delta met a receiver without the
	// island's links (its Physics) for the baseline's topology and config.
	ErrNoLinks = errors.New("codec: joint-predicted delta without the island's links")
	// ErrNonFinite: a state float is NaN or ±Inf.
	ErrNonFinite = errors.New("codec: non-finite float")
	// ErrUnknownType: a control message's type byte names no message of
	// this protocol version.
	ErrUnknownType = errors.New("codec: unknown message type")
	// ErrEmptyFrame: the encoder was given a frame without members.
	ErrEmptyFrame = errors.New("codec: empty frame")
)

// Error describes where decoding or encoding failed. It wraps one of the
// sentinels above.
type Error struct {
	Offset int    // byte offset in the input where the bad field starts; -1 when encoding
	Field  string // name of the field, as in docs/wire-format.md
	Err    error  // one of the package sentinels
}

func (e *Error) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("%v: %s", e.Err, e.Field)
	}
	return fmt.Sprintf("%v: %s at offset %d", e.Err, e.Field, e.Offset)
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func fail(err error, off int, field string) error {
	return &Error{Offset: off, Field: field, Err: err}
}

// sentinels lists every sentinel with its short reason name.
var sentinels = [...]struct {
	err  error
	name string
}{
	{ErrTruncated, "truncated"}, {ErrBadMagic, "bad-magic"}, {ErrVersion, "unknown-version"},
	{ErrLimit, "limit"}, {ErrMalformed, "malformed"}, {ErrNonFinite, "non-finite"},
	{ErrUnknownType, "unknown-type"}, {ErrEmptyFrame, "empty-frame"}, {ErrNoLinks, "no-links"},
}

// Reason returns the short, kebab-case name of the sentinel err wraps
// ("truncated", "bad-magic", …), for counters and logs, or "" when err wraps
// none of this package's sentinels.
func Reason(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return ""
}
