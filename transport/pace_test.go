package transport

import (
	"errors"
	"testing"
	"time"
)

// TestPaceMeterAfterEarlySend hands bytes the way quic-go takes them —
// sent, in part or whole, before the call that hands them returns, with
// the pacer looking meanwhile — and checks that once all of them are on
// the wire the pacer sees nothing held. Counted after the hand-over
// instead, the bytes the pacer saw sent early are floored away and then
// counted as held for good: each control burst of a hand-over held the
// observer's datagrams until the give-up, four broadcast periods later.
func TestPaceMeterAfterEarlySend(t *testing.T) {
	var p peer
	var m paceMeter
	now := time.Unix(1000, 0)
	var sent uint64
	look := func() int64 {
		now = now.Add(time.Millisecond)
		held, gaveUp := m.observe(now, sent, p.handed.Load(), 200*time.Millisecond)
		if gaveUp {
			t.Fatal("gave up on a path that sends everything")
		}
		return held
	}
	look()
	for _, n := range []int{1200, 700, writeChunk, 3, writeChunk} {
		err := p.hand(n, func() error {
			if held := look(); held != int64(n) {
				t.Errorf("%d bytes handed, none sent: %d held", n, held)
			}
			sent += uint64(n / 3) // a packet or two before the call returns
			look()
			sent += uint64(n - n/3)
			look()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if held := look(); held != 0 {
			t.Errorf("after %d bytes handed and sent: %d still held", n, held)
		}
	}

	// Bytes quic-go refused are not held.
	if err := p.hand(900, func() error { return errors.New("refused") }); err == nil {
		t.Fatal("hand hid give's error")
	}
	if held := look(); held != 0 {
		t.Errorf("900 bytes refused: %d held", held)
	}
}

// TestPaceMeterGivesUp checks the way out for bytes quic-go was handed and
// never sent (a datagram it dropped): after nothing went on the wire for
// the give-up bound the pacer lets go, once, and counts it.
func TestPaceMeterGivesUp(t *testing.T) {
	var m paceMeter
	t0 := time.Unix(1000, 0)
	const bound = 200 * time.Millisecond
	m.observe(t0, 5000, 0, bound)
	if held, _ := m.observe(t0.Add(time.Millisecond), 5000, 4000, bound); held != 4000 {
		t.Fatalf("4000 bytes handed, none sent: %d held", held)
	}
	if held, gaveUp := m.observe(t0.Add(bound), 5000, 4000, bound); held != 4000 || gaveUp {
		t.Fatalf("at the bound: %d held, gave up %v; want 4000, false", held, gaveUp)
	}
	if held, gaveUp := m.observe(t0.Add(bound+time.Millisecond), 5000, 4000, bound); held != 0 || !gaveUp {
		t.Fatalf("past the bound: %d held, gave up %v; want 0, true", held, gaveUp)
	}
	if _, gaveUp := m.observe(t0.Add(bound+2*time.Millisecond), 5000, 4000, bound); gaveUp {
		t.Fatal("gave up twice for the same bytes")
	}
	// Bytes moving again: the estimate follows them from zero.
	if held, _ := m.observe(t0.Add(bound+3*time.Millisecond), 5100, 5000, bound); held != 900 {
		t.Fatalf("1000 more handed, 100 sent: %d held, want 900", held)
	}
}
