package island

// halfRange is 2^31, the distance at which serial-number order is ambiguous.
const halfRange = 1 << 31

// SeqNewer reports whether sequence a is newer than b under serial-number
// arithmetic (RFC 1982) on uint32: a is newer when a-b, computed modulo 2^32,
// lies in (0, 2^31).
//
// RFC 1982 leaves the exact half-range distance (a-b == 2^31) undefined. Here
// the numerically larger value is the newer one, so for any a != b exactly one
// of SeqNewer(a, b) and SeqNewer(b, a) is true. The relation is not transitive
// over the whole ring; only compare sequences that are close to each other.
func SeqNewer(a, b uint32) bool {
	d := a - b
	if d == halfRange {
		return a > b
	}
	return d != 0 && d < halfRange
}

// SeqCompare returns -1 if a is older than b, 0 if they are equal and +1 if a
// is newer than b, using the same rule as [SeqNewer].
func SeqCompare(a, b uint32) int {
	switch {
	case a == b:
		return 0
	case SeqNewer(a, b):
		return 1
	default:
		return -1
	}
}
