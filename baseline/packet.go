package baseline

import (
	"errors"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// ChangeKind says what a packet does to one body.
type ChangeKind uint8

const (
	// Full: a complete record (a new body, a new generation, a new segment,
	// or any body in a keyframe). Q holds values.
	Full ChangeKind = iota
	// Delta: a new observation coded against the baseline's record of the
	// same body and segment. Q holds integer deltas for the fields in Mask;
	// the others equal the baseline's.
	Delta
	// Remove: the body leaves the table.
	Remove
)

// Field bits of Change.Mask.
const (
	FieldX uint8 = 1 << iota
	FieldY
	FieldAngle
	FieldVX
	FieldVY
	FieldAngVel
	AllFields = FieldX | FieldY | FieldAngle | FieldVX | FieldVY | FieldAngVel
)

// Change is one body's entry in a packet.
type Change struct {
	ID      island.MemberID
	Kind    ChangeKind
	Mask    uint8       // Delta: the fields whose deltas Q carries
	Q       quant.State // Full: values; Delta: deltas of the Mask fields
	Time    island.Time // observation time of the new record (Full, Delta)
	Segment uint32      // segment of the new record (Full, Delta)
}

// Packet is one delta-coded (or key) record table.
type Packet struct {
	ID       uint32 // packet id; wraps, compared with serial arithmetic
	Window   uint32 // window generation the packet was coded in
	Keyframe bool   // true: no baseline; Changes are the whole table (Full only)
	Baseline uint32 // packet id of the baseline table (ignored for keyframes)
	// Changes, strictly ascending by identity. Bodies of the baseline left
	// out keep their records.
	Changes []Change
	Digest  uint64 // Table.Digest of the table the packet restores
}

// Decode errors. Every one rejects the whole packet: no partial table is
// ever produced, stored or acknowledged.
var (
	// ErrOldWindow: the packet was coded in a window generation already left
	// and names a table released with it (one naming the kept anchor still
	// decodes).
	ErrOldWindow = errors.New("baseline: packet of a retired window")
	// ErrFutureWindow: the packet belongs to a window whose control has not
	// arrived; it is held (bounded) or dropped, never guessed.
	ErrFutureWindow = errors.New("baseline: packet of a window not yet committed")
	// ErrNoBaseline: the baseline table is not held; request a keyframe.
	ErrNoBaseline = errors.New("baseline: baseline not held")
	// ErrMalformed: changes out of order or repeated, a delta for a body
	// the baseline lacks or in another segment, a keyframe with deltas.
	ErrMalformed = errors.New("baseline: malformed changes")
	// ErrDigest: the restored table is not the one the sender sampled.
	ErrDigest = errors.New("baseline: digest mismatch")
	// ErrLimit: the restored table would hold more bodies than allowed.
	ErrLimit = errors.New("baseline: table over its body cap")
)

// apply restores the table p describes on top of base (nil for a
// keyframe) into dst, reusing dst's storage. It checks everything but the
// digest and the window.
func apply(dst *Table, base *Table, p *Packet, maxBodies int) error {
	dst.ID = p.ID
	dst.Entries = dst.Entries[:0]
	var old []Entry
	if base != nil {
		old = base.Entries
	}
	i := 0
	for k := range p.Changes {
		c := &p.Changes[k]
		if k > 0 && !p.Changes[k-1].ID.Less(c.ID) {
			return ErrMalformed
		}
		for i < len(old) && old[i].ID.Less(c.ID) {
			dst.Entries = append(dst.Entries, old[i])
			i++
		}
		var prev *Entry
		if i < len(old) && old[i].ID == c.ID {
			prev = &old[i]
			i++
		}
		switch c.Kind {
		case Full:
			dst.Entries = append(dst.Entries, Entry{ID: c.ID, Record: Record{Q: c.Q, Time: c.Time, Segment: c.Segment}})
		case Delta:
			if p.Keyframe || prev == nil || prev.Segment != c.Segment || c.Mask&^AllFields != 0 {
				return ErrMalformed
			}
			q := prev.Q
			d := c.Q
			if c.Mask&FieldX != 0 {
				q.X += d.X
			}
			if c.Mask&FieldY != 0 {
				q.Y += d.Y
			}
			if c.Mask&FieldAngle != 0 {
				q.Angle += d.Angle
			}
			if c.Mask&FieldVX != 0 {
				q.VX += d.VX
			}
			if c.Mask&FieldVY != 0 {
				q.VY += d.VY
			}
			if c.Mask&FieldAngVel != 0 {
				q.AngVel += d.AngVel
			}
			dst.Entries = append(dst.Entries, Entry{ID: c.ID, Record: Record{Q: q, Time: c.Time, Segment: c.Segment}})
		case Remove:
			if p.Keyframe || prev == nil {
				return ErrMalformed
			}
		default:
			return ErrMalformed
		}
		if len(dst.Entries) > maxBodies {
			return ErrLimit
		}
	}
	dst.Entries = append(dst.Entries, old[i:]...)
	if len(dst.Entries) > maxBodies {
		return ErrLimit
	}
	return nil
}

// Diff returns the changes that turn base (nil: none, a keyframe) into
// next, appended to dst: a Full record for a body base lacks, whose
// generation or segment changed; a Delta carrying only the changed fields
// for a new observation of a known body; a Remove for a body next lacks.
// A body whose record is identical is left out (it costs nothing).
func Diff(dst []Change, base, next *Table) []Change {
	var old []Entry
	if base != nil {
		old = base.Entries
	}
	i := 0
	for _, e := range next.Entries {
		for i < len(old) && old[i].ID.Less(e.ID) {
			dst = append(dst, Change{ID: old[i].ID, Kind: Remove})
			i++
		}
		if i < len(old) && old[i].ID == e.ID {
			b := old[i]
			i++
			if b.Record == e.Record {
				continue
			}
			if b.Segment == e.Segment {
				c := Change{ID: e.ID, Kind: Delta, Time: e.Time, Segment: e.Segment, Q: e.Q.Sub(b.Q)}
				c.Mask = mask(c.Q) // fields without a change are zero and left out
				dst = append(dst, c)
				continue
			}
		}
		dst = append(dst, Change{ID: e.ID, Kind: Full, Q: e.Q, Time: e.Time, Segment: e.Segment})
	}
	for ; i < len(old); i++ {
		dst = append(dst, Change{ID: old[i].ID, Kind: Remove})
	}
	return dst
}

func mask(d quant.State) uint8 {
	var m uint8
	for k, v := range [...]int64{d.X, d.Y, d.Angle, d.VX, d.VY, d.AngVel} {
		if v != 0 {
			m |= 1 << k
		}
	}
	return m
}
