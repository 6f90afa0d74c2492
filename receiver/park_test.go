package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/validator"
)

// lateControl runs scenes on wire 3 with the control stream one step behind
// the datagrams, as over QUIC when the stream waits for a lost packet and
// the datagrams do not: each step's datagrams arrive, then the control
// messages of that step, then a render. It returns the frames the authority
// sent and the receiver's stats.
func lateControl(t *testing.T, scenes string, steps int, cfg Config) (sent uint64, st Stats) {
	t.Helper()
	return lateControlConfig(t, scenes, steps, cfg, broadcast.Config{Wire: 3})
}

// lateControlConfig is lateControl with the broadcaster's configuration.
func lateControlConfig(t *testing.T, scenes string, steps int, cfg Config, bcfg broadcast.Config) (sent uint64, st Stats) {
	t.Helper()
	l := newLoopConfig(t, scenes, bcfg)
	l.rx, _ = New(cfg)
	for range steps {
		l.now += 1_000_000 / scenario.StepHz
		msgs, frames := l.auth.Step()
		for _, m := range msgs {
			_ = l.bc.Apply(m)
		}
		l.bc.Frames(frames)
		sent += uint64(len(frames))
		l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
		for _, d := range l.dgs {
			l.rx.Datagram(l.now, d.Bytes)
		}
		l.now += 1000
		l.control()
		l.now += 1000
		l.rx.Render(l.now)
		l.fb = l.rx.Feedback(l.fb[:0])
		l.feedBack()
	}
	return sent, l.rx.Stats()
}

// TestHeldUntilControl: frames whose datagrams overtake the control
// messages they need — the first frames before their island's Lease,
// Manifest and Physics, a hand-off's first frames before the new Lease —
// are held and commit once control arrives: every frame sent commits, and
// the time they waited is counted.
// Without the hold (MaxParked < 0) they are refused and lost.
func TestHeldUntilControl(t *testing.T) {
	const scenes, steps = "ragdolls,handoff,chain", 360 // 6 s, past the hand-off at 2.5 s
	sent, st := lateControl(t, scenes, steps, Config{})
	if st.FramesCommitted != sent || st.Wire.Parked == 0 || st.Wire.Unparked != st.Wire.Parked || st.Wire.ParkDropped != 0 {
		t.Fatalf("with the hold: %d of %d frames committed; wire %+v", st.FramesCommitted, sent, st.Wire)
	}
	// Each held datagram arrived 2 ms before the render that received it
	// again, its control in between.
	if st.Wire.ParkedWait != 2000*st.Wire.Unparked {
		t.Fatalf("held %d datagrams for %d µs in all, want 2000 µs each", st.Wire.Unparked, st.Wire.ParkedWait)
	}
	sentOff, off := lateControl(t, scenes, steps, Config{MaxParked: -1})
	if sentOff != sent || off.FramesCommitted >= sent || off.Wire.Parked != 0 {
		t.Fatalf("without the hold: %d of %d frames committed; wire %+v", off.FramesCommitted, sent, off.Wire)
	}
	t.Logf("control a step late: %d of %d frames committed with the hold (%d datagrams held), %d without",
		st.FramesCommitted, sent, st.Wire.Parked, off.FramesCommitted)
}

// TestHeldUntilControlReassembled: on 576-byte datagrams every frame of
// the hand-off's chain is cut into several; those that arrive before the
// control they need — the first frames, and the first under the new
// epoch, before the new Lease — are held once reassembled and commit when
// it comes: every frame sent commits. Without the hold they are lost.
func TestHeldUntilControlReassembled(t *testing.T) {
	const scenes, steps = "handoff", 240 // 4 s, past the hand-off at 2.5 s
	bcfg := broadcast.Config{Wire: 3, Codec: smallDatagrams}
	sent, st := lateControlConfig(t, scenes, steps, Config{}, bcfg)
	if st.FramesCommitted != sent || st.Wire.FramesParked == 0 || st.Wire.FramesUnparked != st.Wire.FramesParked || st.Wire.FramesParkDropped != 0 {
		t.Fatalf("with the hold: %d of %d frames committed; wire %+v", st.FramesCommitted, sent, st.Wire)
	}
	if st.Validator.Count(validator.FutureEpoch) == 0 {
		t.Fatal("no frame came before its epoch's Lease: the hand-off was not exercised")
	}
	sentOff, off := lateControlConfig(t, scenes, steps, Config{MaxParked: -1}, bcfg)
	if sentOff != sent || off.FramesCommitted >= sent || off.Wire.FramesParked != 0 {
		t.Fatalf("without the hold: %d of %d frames committed; wire %+v", off.FramesCommitted, sent, off.Wire)
	}
	t.Logf("control a step late, frames in fragments: %d of %d frames committed with the hold (%d frames held), %d without",
		st.FramesCommitted, sent, st.Wire.FramesParked, off.FramesCommitted)
}

// TestHoldIsBounded: a held datagram goes once it was held ParkFor, and
// the oldest goes when MaxParked are held; neither commits when its control
// comes later.
func TestHoldIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wait    int64 // µs between the datagrams and their control
		dropped uint64
	}{
		{"expired", Config{ParkFor: 100_000}, 200_000, 3},
		{"capped", Config{MaxParked: 2}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop(t, "ragdolls", 3)
			l.rx, _ = New(tc.cfg)
			var held [][]byte
			var ctl []byte
			for len(held) < 3 { // three broadcasts' datagrams, their control held back
				l.broadcast()
				ctl = append(ctl, l.ctl...)
				for _, d := range l.dgs {
					held = append(held, append([]byte(nil), d.Bytes...))
				}
			}
			for _, d := range held {
				l.rx.Datagram(l.now, d)
			}
			l.now += tc.wait
			l.ctl = ctl
			l.control()
			l.rx.Render(l.now)
			st := l.rx.Stats()
			if st.Wire.Parked != 3 || st.Wire.ParkDropped != tc.dropped || st.Wire.Unparked != 3-tc.dropped {
				t.Fatalf("wire %+v", st.Wire)
			}
			var dropped uint64
			st.Rejects(func(r string, n uint64) {
				if r == "wire:park-dropped" {
					dropped = n
				}
			})
			if dropped != tc.dropped {
				t.Fatalf("wire:park-dropped %d, want %d", dropped, tc.dropped)
			}
		})
	}
}

// TestFrameHoldIsBounded: a reassembled frame held for its control goes
// once it was held ParkFor, and the oldest go when MaxParked are held;
// neither commits when its control comes later.
func TestFrameHoldIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		wait int64 // µs between the datagrams and their control
		kept uint64
	}{
		{"expired", Config{ParkFor: 100_000}, 200_000, 0},
		{"capped", Config{MaxParked: 1}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoopConfig(t, "chain", broadcast.Config{Wire: 3, Codec: smallDatagrams})
			l.rx, _ = New(tc.cfg)
			var held [][]byte
			var leases []byte
			for broadcasts := 0; broadcasts < 4; { // four frames' datagrams, their Lease held back
				l.broadcast()
				rest := l.ctl
				for len(rest) > 0 {
					m, n, err := codec.ParseControl(rest, &l.lim)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := m.(codec.Lease); ok {
						leases = append(leases, rest[:n]...)
					} else if _, err := l.rx.ControlBytes(l.now, rest[:n]); err != nil {
						t.Fatal(err)
					}
					rest = rest[n:]
				}
				for _, d := range l.dgs {
					held = append(held, append([]byte(nil), d.Bytes...))
				}
				if len(l.dgs) > 0 {
					broadcasts++
				}
			}
			for _, d := range held {
				l.rx.Datagram(l.now, d)
			}
			l.now += tc.wait
			l.ctl = leases
			l.control()
			l.rx.Render(l.now)
			st := l.rx.Stats()
			w := st.Wire
			if w.FramesParked < 2 || w.FramesUnparked != tc.kept || w.FramesParkDropped != w.FramesParked-tc.kept ||
				st.FramesCommitted != tc.kept+w.Unparked {
				t.Fatalf("%d committed; wire %+v", st.FramesCommitted, w)
			}
			var dropped uint64
			st.Rejects(func(r string, n uint64) {
				if r == "wire:frame-park-dropped" {
					dropped = n
				}
			})
			if dropped != w.FramesParkDropped {
				t.Fatalf("wire:frame-park-dropped %d, want %d", dropped, w.FramesParkDropped)
			}
		})
	}
}

// TestHoldKeepsNoOtherFailure: a datagram whose frames fail for another
// reason than control — here, deltas against baselines the receiver never
// got, its control all delivered — is not held.
func TestHoldKeepsNoOtherFailure(t *testing.T) {
	l := newLoop(t, "ragdolls", 3)
	var ctl []byte // every control message so far
	// 60 steps for deltas to flow, then on to the next step that broadcasts
	for i := 0; i < 60 || len(l.dgs) == 0; i++ {
		l.broadcast()
		ctl = append(ctl, l.ctl...)
		l.control()
		if i < 60 || len(l.dgs) == 0 {
			l.receive(nil)
			l.feedBack()
		}
	}
	fresh, _ := New(Config{})
	if n, err := fresh.ControlBytes(l.now, ctl); err != nil || n != len(ctl) {
		t.Fatal(err)
	}
	for _, d := range l.dgs {
		fresh.Datagram(l.now, d.Bytes)
	}
	if st := fresh.Stats(); st.Wire.NoBaseline == 0 || st.Wire.Parked != 0 || st.FramesCommitted != 0 {
		t.Fatalf("wire %+v, %d committed", st.Wire, st.FramesCommitted)
	}
}

// TestCloneKeepsHeldDatagrams: a clone holds copies of the held
// datagrams: bytes written over in the original's storage (as when it
// reuses it for the next datagram it holds) leave the clone's alone.
func TestCloneKeepsHeldDatagrams(t *testing.T) {
	l := newLoop(t, "ragdolls", 3)
	l.broadcast()
	for _, d := range l.dgs {
		l.rx.Datagram(l.now, d.Bytes)
	}
	c := l.rx.Clone()
	if len(l.rx.lot.held) != 1 {
		t.Fatalf("%d datagrams held", len(l.rx.lot.held))
	}
	b := l.rx.lot.held[0].b
	b[len(b)-1] ^= 0xff // the original's copy no longer checks
	for i, rx := range []*Receiver{l.rx, c} {
		if n, err := rx.ControlBytes(l.now, l.ctl); err != nil || n != len(l.ctl) {
			t.Fatal(err)
		}
		rx.Render(l.now)
		want := [2]uint64{0, 24}[i] // frames committed: the clone's copy is intact
		if st := rx.Stats(); st.FramesCommitted != want || len(rx.lot.held) != 0 {
			t.Fatalf("receiver %d: %d committed, want %d; wire %+v", i, st.FramesCommitted, want, st.Wire)
		}
	}
}
