package receiver

import (
	"runtime"
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// loop is an authority and one observer wired in-process: control and
// feedback delivered at once, datagrams through drop.
type loop struct {
	t    testing.TB
	auth *scenario.Authority
	bc   *broadcast.Broadcaster
	rx   *Receiver
	lim  codec.ControlLimits
	now  int64
	ctl  []byte
	fb   []byte
	dgs  []broadcast.Datagram
	sent uint64 // datagram bytes
}

func newLoop(t testing.TB, names string, wire int) *loop {
	scs, err := scenario.Pick(names)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := broadcast.New(broadcast.Config{SendPeriod: auth.Period(), Wire: wire})
	if err != nil {
		t.Fatal(err)
	}
	rx, _ := New(Config{})
	l := &loop{t: t, auth: auth, bc: bc, rx: rx, lim: codec.ControlLimits{}.WithDefaults()}
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	return l
}

// step runs one simulation step; drop decides the fate of each datagram.
func (l *loop) step(drop func(i int) bool) {
	l.now += 1_000_000 / scenario.StepHz
	msgs, frames := l.auth.Step()
	for _, m := range msgs {
		_ = l.bc.Apply(m)
	}
	l.bc.Frames(frames)
	l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
	l.deliver(l.ctl, func(m codec.Message) { _ = l.rx.Control(l.now, m) })
	for i, d := range l.dgs {
		l.sent += uint64(len(d.Bytes))
		if drop == nil || !drop(i) {
			l.rx.Datagram(l.now, d.Bytes)
		}
	}
	l.rx.Render(l.now)
	l.fb = l.rx.Feedback(l.fb[:0])
	l.deliver(l.fb, func(m codec.Message) {
		if err := l.bc.Feedback(1, m); err != nil {
			l.t.Fatalf("feedback %v: %v", m.Type(), err)
		}
	})
}

func (l *loop) deliver(b []byte, f func(codec.Message)) {
	for len(b) > 0 {
		m, n, err := codec.ParseControl(b, &l.lim)
		if err != nil {
			l.t.Fatal(err)
		}
		f(m)
		b = b[n:]
	}
}

// TestV2Loop: on wire 2 with acknowledgements flowing, every frame commits,
// deltas replace keyframes once baselines are acknowledged, windows advance
// without ever stalling, and the bytes are a fraction of wire 1's.
func TestV2Loop(t *testing.T) {
	v1, v2 := newLoop(t, "chain,ragdolls,bridge", 1), newLoop(t, "chain,ragdolls,bridge", 2)
	for range 360 { // 6 s
		v1.step(nil)
		v2.step(nil)
	}
	s1, s2 := v1.rx.Stats(), v2.rx.Stats()
	b2 := v2.bc.Stats()
	if s2.FramesCommitted < b2.Frames-3 {
		t.Fatalf("committed %d of %d frames", s2.FramesCommitted, b2.Frames)
	}
	if s2.V2.Keyframes*10 > s2.V2.Records {
		t.Fatalf("%d keyframes in %d records: deltas are not used", s2.V2.Keyframes, s2.V2.Records)
	}
	if s2.V2.Windows == 0 || s2.V2.NoBaseline != 0 || s2.V2.Digest != 0 || s2.V2.OldWindow != 0 {
		t.Fatalf("v2 stats %+v", s2.V2)
	}
	t.Logf("wire 1: %d bytes, %d frames; wire 2: %d bytes, %d frames; %+v", v1.sent, s1.FramesCommitted, v2.sent, s2.FramesCommitted, s2.V2)
	if v2.sent*3 > v1.sent {
		t.Fatalf("wire 2 sent %d bytes, wire 1 %d", v2.sent, v1.sent)
	}
}

// TestV2KeyframeOnMissingBaseline: when the observer loses its baselines
// (here: all of them, as if it had restarted its decode state), deltas
// naming them are refused whole, counted, a keyframe is asked for, and the
// next frames of the island commit again.
func TestV2KeyframeOnMissingBaseline(t *testing.T) {
	l := newLoop(t, "teleport", 2)
	for range 60 {
		l.step(nil)
	}
	before := l.rx.Stats().FramesCommitted
	clear(l.rx.v2) // the decode baselines are gone
	for range 30 {
		l.step(nil)
	}
	st := l.rx.Stats()
	if st.V2.NoBaseline == 0 {
		t.Fatal("no delta was refused")
	}
	if st.FramesCommitted < before+5 {
		t.Fatalf("commits did not resume: %d then %d", before, st.FramesCommitted)
	}
}

// TestV2LossKeepsDecoding: datagrams lost at random never stop decoding:
// deltas name only acknowledged baselines.
func TestV2LossKeepsDecoding(t *testing.T) {
	l := newLoop(t, "ragdolls,chain", 2)
	k := 0
	for range 300 {
		l.step(func(int) bool { k++; return k%7 == 0 })
	}
	st := l.rx.Stats()
	if st.V2.NoBaseline != 0 || st.V2.Digest != 0 {
		t.Fatalf("v2 stats under loss %+v", st.V2)
	}
	if st.FramesCommitted == 0 {
		t.Fatal("nothing committed")
	}
}

// TestWelcomeRaisesDatagramCap: an authority that announces larger
// datagrams than the receiver's configured cap gets them decoded.
func TestWelcomeRaisesDatagramCap(t *testing.T) {
	rx, _ := New(Config{})
	w := welcome
	w.MaxDatagram = 1400
	mustControl(t, rx, 0, w)
	if rx.dec.Config().MaxDatagram != 1400 {
		t.Fatalf("cap %d", rx.dec.Config().MaxDatagram)
	}
}

// TestV2SteadyStateAllocs: once warm, the wire-2 receive path — decode,
// expand, reassemble, validate, commit, keep the baseline, render, feed
// back — allocates nothing.
func TestV2SteadyStateAllocs(t *testing.T) {
	l := newLoop(t, "ragdolls,chain", 2)
	for range 400 {
		l.step(nil)
	}
	var mallocs uint64
	var m0, m1 runtime.MemStats
	// As testing.AllocsPerRun does: one P, so no other goroutine's
	// allocations land in the window.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.GC()
	for range 100 {
		l.now += 1_000_000 / scenario.StepHz
		msgs, frames := l.auth.Step()
		for _, m := range msgs {
			_ = l.bc.Apply(m)
		}
		l.bc.Frames(frames)
		l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
		if len(l.ctl) > 0 {
			l.deliver(l.ctl, func(m codec.Message) { _ = l.rx.Control(l.now, m) })
		}
		runtime.ReadMemStats(&m0)
		for _, d := range l.dgs {
			l.rx.Datagram(l.now, d.Bytes)
		}
		l.rx.Render(l.now)
		l.fb = l.rx.Feedback(l.fb[:0])
		runtime.ReadMemStats(&m1)
		mallocs += m1.Mallocs - m0.Mallocs
		l.deliver(l.fb, func(m codec.Message) { _ = l.bc.Feedback(1, m) })
	}
	if mallocs > 0 {
		t.Fatalf("%d allocations in 100 steps of the receive path", mallocs)
	}
}
