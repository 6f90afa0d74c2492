package baseline

import (
	"math/bits"

	"github.com/islandsync/islandsync/island"
)

// Remembered is how many datagrams back a Sender remembers what each one
// carried: a confirmation of an older one finds nothing and is ignored.
const Remembered = 128

// DefaultMaxIslands caps the islands a Sender tracks.
const DefaultMaxIslands = 4096

// Arrivals is the observer's side of the acknowledgement: which datagrams
// it received and processed, as the newest datagram number and a bitfield
// of the 64 before it. Its report has the same size whatever the number of
// islands. The zero value has seen nothing. Not safe for concurrent use.
type Arrivals struct {
	any    bool
	newest uint32
	prior  uint64 // bit i: datagram newest−1−i arrived
}

// Arrived records datagram n.
func (a *Arrivals) Arrived(n uint32) {
	if !a.any {
		a.any, a.newest, a.prior = true, n, 0
		return
	}
	switch d := n - a.newest; {
	case d == 0:
	case island.SeqNewer(n, a.newest):
		if d > 64 {
			a.prior = 0
		} else {
			a.prior = a.prior<<(d-1)<<1 | 1<<(d-1)
		}
		a.newest = n
	default:
		if back := a.newest - n; back <= 64 {
			a.prior |= 1 << (back - 1)
		}
	}
}

// Report returns the newest datagram received and the bitfield of the 64
// before it (bit i: datagram newest−1−i), or false before the first.
func (a *Arrivals) Report() (newest uint32, prior uint64, ok bool) {
	return a.newest, a.prior, a.any
}

// Track is what a Sender knows of one island at one observer: the newest
// frame the observer confirmed holding, the newest frame sent to it, and
// the frame whose fragments are being confirmed.
type Track struct {
	acked   *Table // newest table the observer holds; nil: none
	last    uint32 // newest frame sequence sent
	barrier uint32 // frames sent before this sequence are not taken as held
	barred  bool
	gone    bool   // forgotten: confirmations of its frames count for nothing
	part    *Table // a fragmented frame partly confirmed
	got     int    // its datagrams confirmed
}

// carried is one frame (or fragment of one) a datagram carried.
type carried struct {
	track *Track
	table *Table
	parts int // datagrams the frame's data went in; 1: whole
}

type sentPacket struct {
	num     uint32
	live    bool // recorded and not yet confirmed
	carried []carried
}

// Sender is the authority's side of the acknowledgement for one observer:
// for each datagram it sent, which frames it carried, and from the
// observer's confirmations of datagrams, each island's newest frame the
// observer holds — the baseline of its next delta. One confirmation costs
// the same whatever the number of islands; what it confirms costs in
// proportion to the frames those datagrams carried, each once.
//
// A frame counts as held once every datagram that carried its data was
// confirmed (parity datagrams count for nothing), unless the observer
// asked for the island whole since (Refused). Not safe for concurrent use.
type Sender struct {
	tracks     map[uint32]*Track
	maxIslands int
	ring       [Remembered]sentPacket
	cur        *sentPacket
	loss       lossMeter
}

// NewSender returns a sender that tracks at most maxIslands islands (0
// means DefaultMaxIslands).
func NewSender(maxIslands int) *Sender {
	if maxIslands <= 0 {
		maxIslands = DefaultMaxIslands
	}
	return &Sender{tracks: map[uint32]*Track{}, maxIslands: maxIslands}
}

// Track returns island id's track, making it when there is room (nil when
// the cap is reached).
func (s *Sender) Track(id uint32) *Track {
	if t := s.tracks[id]; t != nil {
		return t
	}
	if len(s.tracks) >= s.maxIslands {
		return nil
	}
	t := &Track{}
	s.tracks[id] = t
	return t
}

// Forget drops island id's track: a frame of it confirmed later counts for
// nothing.
func (s *Sender) Forget(id uint32) {
	// Ring entries may still point at the track: confirming them finds it
	// gone and changes nothing.
	if t := s.tracks[id]; t != nil {
		t.release()
		t.gone = true
	}
	delete(s.tracks, id)
}

// release ends the track's references to tables.
func (tr *Track) release() {
	setRef(&tr.acked, nil)
	setRef(&tr.part, nil)
}

// Release ends every reference the sender holds to pooled tables (what
// its datagrams carried, what each island's observer holds), for an
// observer that left: its tables go back to their pool. The sender then
// holds nothing, as if new.
func (s *Sender) Release() {
	for i := range s.ring {
		p := &s.ring[i]
		for j := range p.carried {
			p.carried[j].table.drop()
		}
		clear(p.carried)
		p.carried, p.live = p.carried[:0], false
	}
	for id, t := range s.tracks {
		t.release()
		t.gone = true
		delete(s.tracks, id)
	}
	s.cur = nil
	s.loss = lossMeter{}
}

// Packet starts recording datagram n: the frames Carried reports next went
// in it. The ring slot it takes forgets the datagram Remembered before.
func (s *Sender) Packet(n uint32) {
	p := &s.ring[n%Remembered]
	for i := range p.carried {
		p.carried[i].table.drop()
	}
	clear(p.carried)
	p.num, p.live, p.carried = n, true, p.carried[:0]
	s.cur = p
	s.loss.packet(n)
}

// Carried records that the current datagram carried frame t of the island
// tracked by tr (as one of parts datagrams, 1 when whole), and that t is
// the newest frame of the island sent to this observer.
func (s *Sender) Carried(tr *Track, t *Table, parts int) {
	if s.cur == nil || tr == nil {
		return
	}
	t.hold()
	s.cur.carried = append(s.cur.carried, carried{track: tr, table: t, parts: parts})
	tr.last = t.ID
}

// Received applies one confirmation: datagram newest and, for each set bit
// i of prior, datagram newest−1−i arrived and was processed. Datagrams
// confirmed before, or not remembered, change nothing.
func (s *Sender) Received(newest uint32, prior uint64) {
	s.confirm(newest)
	for ; prior != 0; prior &= prior - 1 {
		s.confirm(newest - 1 - uint32(bits.TrailingZeros64(prior)))
	}
	s.loss.judge(newest, &s.ring)
}

func (s *Sender) confirm(n uint32) {
	p := &s.ring[n%Remembered]
	if !p.live || p.num != n {
		return
	}
	p.live = false
	for i := range p.carried {
		c := &p.carried[i]
		c.track.held(c.table, c.parts)
		c.table.drop()
	}
	clear(p.carried)
	p.carried = p.carried[:0]
}

// held records that one datagram carrying (part of) frame t was confirmed.
func (tr *Track) held(t *Table, parts int) {
	if tr.gone || tr.barred && island.SeqNewer(tr.barrier, t.ID) {
		return
	}
	if parts > 1 {
		if tr.part != t {
			setRef(&tr.part, t)
			tr.got = 0
		}
		if tr.got++; tr.got < parts {
			return
		}
		setRef(&tr.part, nil)
	}
	if tr.acked == nil || island.SeqNewer(t.ID, tr.acked.ID) {
		setRef(&tr.acked, t)
	}
}

// Baseline returns the table to code island tr's frame of broadcast c
// against: the newest frame the observer holds, if the window still keeps
// it at the observer (see Usable); else false, and the frame goes whole.
func (tr *Track) Baseline(c uint32) (*Table, bool) {
	if tr == nil || tr.acked == nil || !Usable(tr.acked.ID, c, tr.last) {
		return nil, false
	}
	return tr.acked, true
}

// Refused records that the observer asked for the island whole (it lacked
// a baseline, or a frame failed): nothing it holds is referenced any more,
// and frames sent before broadcast next are never taken as held.
func (tr *Track) Refused(next uint32) {
	tr.release()
	tr.barrier, tr.barred = next, true
}

// Clone returns an independent copy of the sender. Tables from no pool are
// shared (a table that was sent is never changed again); pooled ones are
// copied, once each, out of any pool, so that the copy and the original
// count nothing in common and may be driven apart.
func (s *Sender) Clone() *Sender {
	c := &Sender{tracks: make(map[uint32]*Track, len(s.tracks)), maxIslands: s.maxIslands, loss: s.loss}
	copies := map[*Table]*Table{}
	own := func(t *Table) *Table {
		if t == nil || t.pool == nil {
			return t
		}
		if u := copies[t]; u != nil {
			return u
		}
		u := &Table{ID: t.ID, Frame: t.Frame, Entries: append([]Entry(nil), t.Entries...)}
		copies[t] = u
		return u
	}
	m := make(map[*Track]*Track, len(s.tracks))
	for id, t := range s.tracks {
		nt := *t
		nt.acked, nt.part = own(t.acked), own(t.part)
		c.tracks[id] = &nt
		m[t] = &nt
	}
	for i := range s.ring {
		p := &s.ring[i]
		q := &c.ring[i]
		q.num, q.live = p.num, p.live
		for _, e := range p.carried {
			if nt := m[e.track]; nt != nil {
				e.track, e.table = nt, own(e.table)
				q.carried = append(q.carried, e)
			}
		}
		if s.cur == p {
			c.cur = q
		}
	}
	return c
}
