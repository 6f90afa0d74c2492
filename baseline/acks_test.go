package baseline

import (
	"testing"
)

func tbl(id uint32) *Table { return &Table{ID: id} }

// TestArrivals: the newest datagram and a bitfield of the 64 before it; a
// jump of more than 64 clears the bitfield; a late one within reach fills
// its bit; one beyond reach changes nothing.
func TestArrivals(t *testing.T) {
	var a Arrivals
	if _, _, ok := a.Report(); ok {
		t.Fatal("a report before any datagram")
	}
	for _, n := range []uint32{10, 11, 12} {
		a.Arrived(n)
	}
	if n, p, _ := a.Report(); n != 12 || p != 0b11 {
		t.Fatalf("10, 11, 12: %d %b", n, p)
	}
	a.Arrived(14) // 13 lost
	if n, p, _ := a.Report(); n != 14 || p != 0b1110 {
		t.Fatalf("then 14: %d %b", n, p)
	}
	a.Arrived(13) // late
	if _, p, _ := a.Report(); p != 0b1111 {
		t.Fatalf("late 13: %b", p)
	}
	a.Arrived(14 + 64) // 14 is exactly 64 back: bit 63
	if n, p, _ := a.Report(); n != 78 || p != 1<<63 {
		t.Fatalf("then 78: %d %b", n, p)
	}
	a.Arrived(13) // 65 back: beyond reach
	if _, p, _ := a.Report(); p != 1<<63 {
		t.Fatalf("13 again: %b", p)
	}
	a.Arrived(78 + 65)
	if n, p, _ := a.Report(); n != 143 || p != 0 {
		t.Fatalf("then 143: %d %b", n, p)
	}
	a.Arrived(1<<32 - 1) // serial arithmetic: far behind 143 as well as far ahead
	b := Arrivals{}
	b.Arrived(1<<32 - 2)
	b.Arrived(1) // wraps: 3 ahead
	if n, p, _ := b.Report(); n != 1 || p != 0b100 {
		t.Fatalf("across the wrap: %d %b", n, p)
	}
}

// TestSenderHeld: a frame counts as held once every datagram that carried
// its data is confirmed; confirmations repeat harmlessly; a keyframe
// request forgets what is held and keeps frames sent before it from
// counting; a confirmation of a datagram the ring no longer remembers
// counts for nothing.
func TestSenderHeld(t *testing.T) {
	s := NewSender(0)
	a, b := s.Track(1), s.Track(2)
	t40, t41, t42 := tbl(40), tbl(41), tbl(42)
	s.Packet(100)
	s.Carried(a, t40, 1)
	s.Carried(b, t40, 2) // b's frame 40 in two datagrams
	s.Packet(101)
	s.Carried(b, t40, 2)
	s.Packet(102)
	s.Carried(a, t41, 1)
	s.Carried(b, t41, 1)
	if _, ok := a.Baseline(42); ok {
		t.Fatal("a baseline before any confirmation")
	}
	s.Received(100, 0)
	if got, ok := a.Baseline(42); !ok || got != t40 {
		t.Fatalf("a after 100: %v %v", got, ok)
	}
	if _, ok := b.Baseline(42); ok {
		t.Fatal("b's frame 40 counts as held with one of its two datagrams confirmed")
	}
	s.Received(102, 0b11) // 101 and 100 again
	if got, _ := a.Baseline(43); got != t41 {
		t.Fatalf("a after 102: %v", got.ID)
	}
	if got, _ := b.Baseline(43); got != t41 {
		t.Fatalf("b after 102: %v", got.ID)
	}
	s.Received(102, 0b11) // the same again: nothing changes
	if got, _ := b.Baseline(43); got != t41 {
		t.Fatalf("b after a repeat: %v", got.ID)
	}

	// Frame 42 of a goes out; the observer asks for a whole before its
	// confirmation arrives: 42 must not count.
	s.Packet(103)
	s.Carried(a, t42, 1)
	a.Refused(43)
	s.Received(103, 0)
	if _, ok := a.Baseline(43); ok {
		t.Fatal("a frame sent before a keyframe request counts as held")
	}
	t43 := tbl(43)
	s.Packet(104)
	s.Carried(a, t43, 1)
	s.Received(104, 0)
	if got, ok := a.Baseline(44); !ok || got != t43 {
		t.Fatalf("the keyframe after the request: %v %v", got, ok)
	}

	// The ring remembers Remembered datagrams.
	s.Packet(105)
	s.Carried(b, tbl(44), 1)
	for n := uint32(106); n < 105+Remembered; n++ {
		s.Packet(n)
	}
	s.Packet(105 + Remembered) // takes 105's slot
	s.Received(105, 0)
	if got, _ := b.Baseline(45); got != t41 {
		t.Fatalf("a forgotten datagram's confirmation moved b to %d", got.ID)
	}
	s.Forget(2)
	if s.Track(2) == b {
		t.Fatal("a forgotten island keeps its track")
	}
	if NewSender(1).Track(1) == nil || func() *Track { x := NewSender(1); x.Track(1); return x.Track(2) }() != nil {
		t.Fatal("the island cap")
	}
}

// TestUsable: a confirmed frame is usable within Window − Slack broadcasts,
// or whatever its age while it is the newest frame sent.
func TestUsable(t *testing.T) {
	for _, c := range []struct {
		s, c, last uint32
		want       bool
	}{
		{42, 43, 43, true},
		{42, 42 + Window - Slack - 1, 60, true},
		{42, 42 + Window - Slack, 60, false},
		{42, 42 + 1000, 42, true}, // the anchor
		{42, 41, 42, true},        // the anchor, c oddly behind
		{50, 49, 60, false},       // a frame newer than the broadcast: no
		{1<<32 - 2, 3, 5, true},   // across the wrap
		{1<<32 - 30, 3, 5, false}, // too old across the wrap
	} {
		if got := Usable(c.s, c.c, c.last); got != c.want {
			t.Errorf("Usable(%d, %d, %d) = %v", c.s, c.c, c.last, got)
		}
	}
}

// TestKept: the window keeps the frames of the last Window broadcasts and
// the newest whatever its age, ignores a duplicate, recycles what it lets
// go, keeps an anchor a newer frame superseded for Slack broadcasts more,
// and never holds more than MaxKept tables.
func TestKept(t *testing.T) {
	var k Kept
	for id := uint32(1); id <= 40; id++ {
		tb := k.NewTable()
		tb.ID = id
		if !k.Keep(tb, id) {
			t.Fatalf("keep %d", id)
		}
	}
	if k.Len() != Window || k.Find(8) != nil || k.Find(9) == nil || k.Newest().ID != 40 {
		t.Fatalf("after 40: %d tables, newest %d", k.Len(), k.Newest().ID)
	}
	if k.Keep(&Table{ID: 40}, 40) {
		t.Fatal("a duplicate was kept")
	}
	k.Prune(40 + 100)
	if k.Len() != 1 || k.Newest().ID != 40 {
		t.Fatalf("long after: %d tables", k.Len())
	}
	late := &Table{ID: 5}
	if k.Keep(late, 140) || k.Len() != 1 {
		t.Fatal("a frame long out of the window was kept")
	}
	if k.NewTable() == nil || k.nSpare > maxSpare {
		t.Fatal("spare")
	}
	// An anchor the authority may have coded against just before a newer
	// frame: kept while that frame is less than Slack broadcasts old.
	var a Kept
	a.Keep(&Table{ID: 1}, 1)
	a.Keep(&Table{ID: 40}, 40)
	if a.Find(1) == nil {
		t.Fatal("the anchor 1 was let go the moment 40 superseded it")
	}
	a.Prune(40 + Slack - 1)
	if a.Find(1) == nil {
		t.Fatal("the anchor 1 was let go within Slack of 40")
	}
	a.Prune(40 + Slack)
	if a.Find(1) != nil || a.Len() != 1 {
		t.Fatalf("the anchor 1 outlived Slack: %d tables", a.Len())
	}
	c := k.Clone()
	c.Newest().ID = 999
	if k.Newest().ID != 40 {
		t.Fatal("the clone shares tables")
	}
}
