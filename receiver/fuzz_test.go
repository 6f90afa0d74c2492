package receiver

import (
	"bytes"
	"math"
	"testing"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
)

// FuzzReceiveWire drives a hostile wire-3 datagram into a warm receiver — one
// holding the baselines, manifests and leases of 30 snapshots of the
// ragdolls and the chain, its oldest baselines already let go — between two
// snapshots of the same run. The warm receiver is built once and cloned
// for every input (Receiver.Clone), so an input costs its own datagram
// and the snapshots after it, not the warm-up. A
// datagram that starts as one of wire 3 gets its check recomputed, so that
// mutated records reach the parser, the expansion against baselines and the
// commit, not just the check. Nothing may panic, and every island shown
// afterwards has exactly its manifest's members, all finite.
func FuzzReceiveWire(f *testing.F) {
	rec := recordWarm(f, "ragdolls,chain", 30, 4, 3)
	warm, _ := New(Config{})
	rec.play(warm, 0, rec.warm, false)
	if st := warm.Stats(); st.Wire.Stored <= baseline.Window {
		f.Fatalf("the warm-up keeps too few baselines for the window to move: %+v", st.Wire)
	}
	for i := rec.warm; i < len(rec.now); i++ {
		for _, d := range rec.dgs[i] {
			f.Add(d)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rx := warm.Clone() // the warm state, snapshotted: each input starts from it
		dg := data
		if len(dg) >= codec.HeaderSize && bytes.HasPrefix(dg, []byte(codec.Magic)) && dg[4] == codec.VersionV3 {
			dg = resign(bytes.Clone(dg))
		}
		rx.Datagram(rec.now[rec.warm], dg)
		rec.play(rx, rec.warm, len(rec.now), false)
		for _, v := range rx.Render(rec.now[len(rec.now)-1]) {
			man, ok := rx.val.Manifest(v.Island)
			if len(v.Poses) == 0 {
				continue
			}
			if !ok || len(v.Poses) != len(man.Members) {
				t.Fatalf("island %d shows %d members, its manifest has %d", v.Island, len(v.Poses), len(man.Members))
			}
			for i, p := range v.Poses {
				s := p.State
				for _, x := range [...]float64{s.X, s.Y, s.Angle, s.VX, s.VY, s.AngVel} {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("island %d member %d: %+v", v.Island, i, s)
					}
				}
				if p.ID != man.Members[i] {
					t.Fatalf("island %d member %d is %v, the manifest says %v", v.Island, i, p.ID, man.Members[i])
				}
			}
		}
	})
}

// FuzzFeedback plays a hostile observer: its feedback — any control
// messages the fuzzer makes, applied as the server applies them — reaches the
// broadcaster between snapshots, while an honest observer of the same
// islands (a bridge, the 240-link chain and a rope) follows along. Nothing may panic, every datagram the hostile
// observer is sent must still decode, and the honest observer must commit
// every frame sent to it with no baseline missing and no digest failing:
// one observer's feedback moves only its own stream.
func FuzzFeedback(f *testing.F) {
	seed := func(ms ...codec.Message) []byte {
		var b []byte
		for _, m := range ms {
			b = m.Append(b)
		}
		return b
	}
	f.Add(seed(codec.Received{Newest: 3, Prior: 0xffffffff_ffffffff}))
	f.Add(seed(codec.Keyframes{Islands: []uint32{1, 2, 3}}, codec.Subscribe{Islands: []uint32{2}}))
	f.Add(seed(codec.Keyframes{}, codec.Received{Newest: 1 << 31}, codec.Received{Newest: 40, Prior: 1 << 63}))
	// The warm state — 30 steps with both observers joined — is built
	// once, with the authority's next 12 steps (4 broadcasts) recorded; every input starts
	// from a clone of the broadcaster and the honest receiver and replays
	// those steps, so it costs no physics and no warm-up.
	warm := newLoop(f, "bridge,chain,config", 3)
	const evil = 2
	if err := warm.bc.Join(evil, 0); err != nil {
		f.Fatal(err)
	}
	_ = warm.bc.Subscribe(evil, codec.Subscribe{All: true})
	for range 30 {
		warm.step(nil)
		_, _ = warm.bc.Take(evil, nil, nil)
	}
	steps := recordSteps(f, warm, 12)
	f.Fuzz(func(t *testing.T, data []byte) {
		l := &loop{t: t, bc: warm.bc.Clone(), rx: warm.rx.Clone(), lim: warm.lim, now: warm.now}
		dec, _ := codec.NewDecoder(codec.Config{MaxDatagram: codec.MaxMaxDatagram})
		var ctl []byte
		var dgs []broadcast.Datagram
		before, frames := l.rx.Stats(), l.bc.Stats().Frames
		for i, s := range steps {
			l.replayStep(s, 1)
			l.control()
			for _, d := range l.dgs { // no render: commits are what is checked
				l.rx.Datagram(l.now, d.Bytes)
			}
			l.fb = l.rx.Feedback(l.fb[:0])
			l.feedBack()
			if i%4 == 0 {
				_, _ = l.bc.FeedbackBytes(evil, data) // as the server applies a stream
			}
			ctl, dgs = l.bc.Take(evil, ctl[:0], dgs[:0])
			for _, d := range dgs {
				if _, _, err := dec.Decode(d.Bytes); err != nil {
					t.Fatalf("the hostile observer was sent a datagram that does not decode: %v", err)
				}
			}
		}
		after := l.rx.Stats()
		sent, got := l.bc.Stats().Frames-frames, after.FramesCommitted-before.FramesCommitted
		if got != sent || after.Wire.NoBaseline != before.Wire.NoBaseline || after.Wire.Digest != before.Wire.Digest {
			t.Fatalf("the honest observer committed %d of %d frames; v2 %+v → %+v", got, sent, before.Wire, after.Wire)
		}
	})
}
