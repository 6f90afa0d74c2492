package baseline

import (
	"errors"
	"math/bits"
	"slices"

	"github.com/islandsync/islandsync/island"
)

// Slots is how many baseline tables a receiver keeps: the window.
const Slots = 32

// Limits.
const (
	// MaxHeld caps packets of a not yet committed window held for decoding.
	MaxHeld = 8
	// DefaultMaxBodies caps the bodies of one table.
	DefaultMaxBodies = 1 << 16
)

// Control commits a new window: generation Gen, whose usable baselines are
// exactly Keep (at least one table both sides hold, the anchor). It travels
// reliably; a receiver applies each generation once and never goes back.
type Control struct {
	Gen  uint32
	Keep []uint32
}

// ErrMissingAnchor: a window control keeps a table the receiver does not hold.
var ErrMissingAnchor = errors.New("baseline: window keeps a table not held")

// Receiver holds an observer's decode baselines: at most Slots immutable
// tables of the current window generation, apart from any display history.
// It is a pure state machine, not safe for concurrent use.
type Receiver struct {
	gen       uint32
	slots     []*Table // in order of arrival
	ids       []uint32 // slots[i].ID, searched without touching the tables
	held      []Packet
	spare     []*Table
	maxBodies int
	stats     ReceiverStats
}

// ReceiverStats counts what the receiver did with packets.
type ReceiverStats struct {
	Decoded, Stored                                  uint64
	OldWindow, FutureHeld, FutureDropped, NoBaseline uint64
	Malformed, Digest, Limit, WindowFull             uint64
}

// NewReceiver returns a receiver in window generation 0 with no baseline.
// maxBodies caps one table (0 means DefaultMaxBodies).
func NewReceiver(maxBodies int) *Receiver {
	if maxBodies <= 0 {
		maxBodies = DefaultMaxBodies
	}
	return &Receiver{maxBodies: maxBodies}
}

// Gen returns the current window generation.
func (r *Receiver) Gen() uint32 { return r.gen }

// Held returns the packet ids of the baselines held, in slot order.
func (r *Receiver) Held() []uint32 {
	return slices.Clone(r.ids)
}

// Full reports whether every slot is taken: new tables can no longer be
// stored (nor acknowledged) until the window advances.
func (r *Receiver) Full() bool { return len(r.slots) >= Slots }

// find returns the held table id, or nil. It searches from the newest
// arrival, the baseline a delta most often names.
func (r *Receiver) find(id uint32) *Table {
	for i := len(r.ids) - 1; i >= 0; i-- {
		if r.ids[i] == id {
			return r.slots[i]
		}
	}
	return nil
}

// keep adds t to the slots.
func (r *Receiver) keep(t *Table) {
	r.slots = append(r.slots, t)
	r.ids = append(r.ids, t.ID)
}

// Decode restores the table p describes. On success it returns the table
// and whether it was stored as a baseline: only a stored table may be
// acknowledged (a full window stores nothing new, and the caller should ask
// the sender to advance). The table is the receiver's and never changes
// after. On any error nothing is stored and the caller acknowledges
// nothing; ErrNoBaseline and ErrDigest call for a keyframe.
func (r *Receiver) Decode(p *Packet) (*Table, bool, error) {
	if p.Window != r.gen && !island.SeqNewer(r.gen, p.Window) {
		if len(r.held) < MaxHeld {
			r.held = append(r.held, clonePacket(p))
			r.stats.FutureHeld++
		} else {
			r.stats.FutureDropped++
		}
		return nil, false, ErrFutureWindow
	}
	var base *Table
	if !p.Keyframe {
		var err error
		if base, err = r.Lookup(p.Window, p.Baseline); err != nil {
			return nil, false, err
		}
	} else if p.Window != r.gen {
		r.stats.OldWindow++
		return nil, false, ErrOldWindow // a keyframe of a window left behind is not worth storing
	}
	if existing := r.find(p.ID); existing != nil {
		return existing, true, nil // a duplicate: the same table again
	}
	t := r.take()
	if err := apply(t, base, p, r.maxBodies); err != nil {
		r.spare = append(r.spare, t)
		if errors.Is(err, ErrLimit) {
			r.stats.Limit++
		} else {
			r.stats.Malformed++
		}
		return nil, false, err
	}
	if t.Digest() != p.Digest {
		r.spare = append(r.spare, t)
		r.stats.Digest++
		return nil, false, ErrDigest
	}
	r.stats.Decoded++
	if r.Full() {
		r.stats.WindowFull++
		return t, false, nil
	}
	r.keep(t)
	r.stats.Stored++
	return t, true, nil
}

// Lookup returns the held table id for a record coded in window w:
// ErrFutureWindow for a window whose control has not arrived (the record is
// dropped, never guessed), ErrOldWindow for a retired window whose table
// was released, ErrNoBaseline when the table is not held. A record of the
// previous window that names the anchor the advance kept still decodes: the
// anchor is the same table in both windows, and table ids are never reused
// within a window's lifetime, so no released table can be named by mistake.
// Errors are counted.
func (r *Receiver) Lookup(w, id uint32) (*Table, error) {
	if w != r.gen && !island.SeqNewer(r.gen, w) {
		r.stats.FutureDropped++
		return nil, ErrFutureWindow
	}
	if t := r.find(id); t != nil {
		return t, nil
	}
	if w != r.gen {
		r.stats.OldWindow++
		return nil, ErrOldWindow
	}
	r.stats.NoBaseline++
	return nil, ErrNoBaseline
}

// Store keeps t as a baseline restored from a record of window w and
// reports whether it did: not when w is not the current window, the window
// is full, or the table is already held. Only stored tables may be
// acknowledged. The receiver owns t from now on.
func (r *Receiver) Store(w uint32, t *Table) bool {
	if w != r.gen || r.find(t.ID) != nil {
		return false
	}
	if r.Full() {
		r.stats.WindowFull++
		return false
	}
	r.keep(t)
	r.stats.Stored++
	return true
}

// NewTable returns an empty table, recycled from those the receiver
// released when it can, so that steady-state decoding does not allocate.
func (r *Receiver) NewTable() *Table {
	t := r.take()
	t.Entries = t.Entries[:0]
	return t
}

// Recycle gives back a table NewTable returned that was not stored.
func (r *Receiver) Recycle(t *Table) {
	if len(r.spare) < 2*Slots {
		r.spare = append(r.spare, t)
	}
}

func (r *Receiver) take() *Table {
	if n := len(r.spare); n > 0 {
		t := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return t
	}
	return &Table{}
}

func clonePacket(p *Packet) Packet {
	c := *p
	c.Changes = slices.Clone(p.Changes)
	return c
}

// Commit applies a window control. A generation not newer than the current
// one is a duplicate or a stale resend and changes nothing. A newer one must
// keep only tables the receiver holds (else ErrMissingAnchor, and nothing
// changes); the receiver then switches generation, releases every other
// table, and returns the held packets of the new generation, in arrival
// order, for the caller to Decode now. Packets held for other generations
// are dropped.
func (r *Receiver) Commit(c Control) ([]Packet, error) {
	if c.Gen == r.gen || island.SeqNewer(r.gen, c.Gen) {
		return nil, nil
	}
	if len(c.Keep) == 0 {
		return nil, ErrMissingAnchor
	}
	for _, id := range c.Keep {
		if r.find(id) == nil {
			return nil, ErrMissingAnchor
		}
	}
	kept := r.slots[:0]
	for _, t := range r.slots {
		if slices.Contains(c.Keep, t.ID) {
			kept = append(kept, t)
		} else {
			r.spare = append(r.spare, t)
		}
	}
	clear(r.slots[len(kept):])
	r.slots = kept
	r.ids = r.ids[:0]
	for _, t := range kept {
		r.ids = append(r.ids, t.ID)
	}
	r.gen = c.Gen
	var ready []Packet
	for _, p := range r.held {
		if p.Window == r.gen {
			ready = append(ready, p)
		}
	}
	r.held = r.held[:0]
	return ready, nil
}

// Anchor suggests the table to keep when the window must advance: the
// newest stored one (the last slot filled).
func (r *Receiver) Anchor() (uint32, bool) {
	if len(r.slots) == 0 {
		return 0, false
	}
	return r.slots[len(r.slots)-1].ID, true
}

// Stats returns the counters.
func (r *Receiver) Stats() ReceiverStats { return r.stats }

// Sender tracks, for one observer, which tables the observer acknowledged in
// the current window, and picks the baseline for the next packet: the newest
// acknowledged table, or none (a keyframe). It never references a table the
// observer did not acknowledge. Not safe for concurrent use.
type Sender struct {
	gen       uint32
	sent      []*Table  // tables recently sent, newest last (bounded)
	acked     []*Table  // acknowledged in the current window, ≤ Slots
	advancing bool      // a window advance to generation gen+1 is not yet confirmed
	keep      [1]uint32 // the anchor that advance keeps
}

// maxSent bounds the tables a Sender remembers having sent: an
// acknowledgement of an older one finds nothing and is ignored.
const maxSent = 2 * Slots

// NewSender returns a sender in window generation 0 with nothing acknowledged.
// Its tables are sized for a full window up front, so that acknowledging
// and advancing never allocate.
func NewSender() *Sender {
	return &Sender{sent: make([]*Table, 0, maxSent), acked: make([]*Table, 0, Slots)}
}

// Gen returns the window generation packets are coded in.
func (s *Sender) Gen() uint32 { return s.gen }

// Sent records the table packet t.ID restores, so that an acknowledgement
// of it can make it a baseline.
func (s *Sender) Sent(t *Table) {
	if len(s.sent) == maxSent {
		s.sent = slices.Delete(s.sent, 0, 1)
	}
	s.sent = append(s.sent, t)
}

// Ack records that the observer stored packet id as a baseline in window
// gen. Acknowledgements of another window, of tables not remembered, or
// beyond the window's slots are ignored; while an advance is pending, new
// acknowledgements wait for it.
func (s *Sender) Ack(gen, id uint32) {
	if gen != s.gen || s.advancing || len(s.acked) >= Slots {
		return
	}
	for _, t := range s.acked {
		if t.ID == id {
			return
		}
	}
	for _, t := range s.sent {
		if t.ID == id {
			// Keep acked in sequence order, newest last, whatever order
			// acknowledgements arrive in.
			i := len(s.acked)
			for i > 0 && island.SeqNewer(s.acked[i-1].ID, id) {
				i--
			}
			s.acked = slices.Insert(s.acked, i, t)
			return
		}
	}
}

// AckHeld records the acknowledgements one report of held baselines
// carries: newest, and newest−1−i for every bit i of prior — exactly as
// Ack of newest and then of each of those, newest first, would. Only the
// tables not yet acknowledged cost a search, so a report that repeats what
// the sender knows (most of them) is cheap.
func (s *Sender) AckHeld(gen, newest, prior uint32) {
	if gen != s.gen || s.advancing || len(s.acked) >= Slots {
		return
	}
	want := uint64(prior)<<1 | 1 // bit d: table newest−d
	for _, t := range s.acked {
		if d := newest - t.ID; d <= 32 {
			want &^= 1 << d
		}
	}
	for ; want != 0; want &= want - 1 {
		s.Ack(gen, newest-uint32(bits.TrailingZeros64(want)))
	}
}

// Acked returns how many tables the observer acknowledged in the current
// window, and the newest of them.
func (s *Sender) Acked() (int, uint32) {
	if len(s.acked) == 0 {
		return 0, 0
	}
	return len(s.acked), s.acked[len(s.acked)-1].ID
}

// Advancing returns the generation of an advance sent but not yet confirmed.
func (s *Sender) Advancing() (uint32, bool) {
	if !s.advancing {
		return 0, false
	}
	return s.gen + 1, true
}

// Baseline returns the table to code the next packet against — the newest
// acknowledged one (during an advance, the anchor) — or false: send a
// keyframe.
func (s *Sender) Baseline() (*Table, bool) {
	if len(s.acked) == 0 {
		return nil, false
	}
	return s.acked[len(s.acked)-1], true
}

// KeyframeRequested forgets every acknowledgement: the observer lacks a
// table it was sent deltas against, so nothing is referenced until a new
// table is acknowledged.
func (s *Sender) KeyframeRequested() {
	s.acked = s.acked[:0]
}

// Advance starts a window advance that keeps only the table keep (it must
// be acknowledged) and returns the control to send reliably. Until
// Confirmed, packets stay in the old generation and reference only keep.
// The control's Keep is the sender's: it must not be changed.
func (s *Sender) Advance(keep uint32) (Control, bool) {
	if s.advancing {
		return Control{Gen: s.gen + 1, Keep: s.keep[:]}, true
	}
	var anchor *Table
	for _, t := range s.acked {
		if t.ID == keep {
			anchor = t
		}
	}
	if anchor == nil {
		return Control{}, false
	}
	s.acked = append(s.acked[:0], anchor)
	s.advancing, s.keep[0] = true, keep
	return Control{Gen: s.gen + 1, Keep: s.keep[:]}, true
}

// Confirmed records that the observer committed window gen: packets are
// coded in it from now on, against the anchor it kept.
func (s *Sender) Confirmed(gen uint32) {
	if !s.advancing || gen != s.gen+1 {
		return
	}
	s.gen = gen
	s.advancing = false
}
