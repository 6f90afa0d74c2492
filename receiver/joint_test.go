package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// jointRecords counts the delta records of datagrams and those of them
// that are joint-predicted.
func jointRecords(t *testing.T, dgs [][]byte) (deltas, joint int) {
	dec, _ := codec.NewDecoder(codec.Config{})
	for _, dg := range dgs {
		_, recs, err := dec.Decode(dg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == codec.KindDelta {
				deltas++
				if r.Joint {
					joint++
				}
			}
		}
	}
	return deltas, joint
}

// TestJointPredictedChain: the broadcaster codes the chain's deltas
// against its joints (from the island's Physics), the receiver restores
// them with the links of the Physics it was sent, and every frame commits
// — at well under the bytes of the same run coded against the baselines'
// motion alone, which an observer that never got the Physics needs.
func TestJointPredictedChain(t *testing.T) {
	l, plain := newLoop(t, "chain", 3), newLoop(t, "chain", 3)
	var deltas, joint int
	for range 180 { // 3 s
		l.send()
		var dgs [][]byte
		for _, d := range l.dgs {
			dgs = append(dgs, d.Bytes)
		}
		d, j := jointRecords(t, dgs)
		deltas, joint = deltas+d, joint+j
		l.receive(nil)
		l.feedBack()
		// The same run, its broadcaster never given the Physics.
		plain.now += 1_000_000 / scenario.StepHz
		msgs, frames := plain.auth.Step()
		for _, m := range msgs {
			if _, ok := m.(codec.Physics); !ok {
				_ = plain.bc.Apply(m)
			}
		}
		plain.bc.Frames(frames)
		plain.ctl, plain.dgs = plain.bc.Take(1, plain.ctl[:0], plain.dgs[:0])
		plain.control()
		plain.receive(nil)
		plain.feedBack()
	}
	st, bs := l.rx.Stats(), l.bc.Stats()
	if st.FramesCommitted < bs.Frames-3 || st.Wire.NoLinks != 0 || st.Wire.Digest != 0 {
		t.Fatalf("committed %d of %d frames; wire %+v", st.FramesCommitted, bs.Frames, st.Wire)
	}
	if deltas == 0 || joint != deltas {
		t.Fatalf("%d of %d deltas joint-predicted", joint, deltas)
	}
	if ps := plain.rx.Stats(); ps.FramesCommitted != st.FramesCommitted {
		t.Fatalf("without links: committed %d frames, with them %d", ps.FramesCommitted, st.FramesCommitted)
	}
	if l.sent*10 > plain.sent*7 {
		t.Fatalf("%d datagram bytes with joint prediction, %d without: it saved too little", l.sent, plain.sent)
	}
	t.Logf("%d frames, %d deltas, all joint-predicted: %d datagram bytes, %d without links", bs.Frames, deltas, l.sent, plain.sent)
}

// TestJointNeedsLinks: an observer that lost the island's Physics (here:
// never applied) cannot restore a joint-predicted keyframe or delta. It
// counts each (Wire.NoLinks), commits none of them — never a frame
// restored without its joints — and asks for keyframes, which come
// without joint prediction and commit.
func TestJointNeedsLinks(t *testing.T) {
	l := newLoop(t, "chain", 3)
	for range 120 {
		l.broadcast()
		var kept []byte
		l.deliver(l.ctl, func(m codec.Message) {
			switch m.(type) {
			case codec.Physics, codec.PhysicsRef:
				return
			}
			kept = m.Append(kept)
		})
		if n, err := l.rx.ControlBytes(l.now, kept); err != nil || n != len(kept) {
			t.Fatalf("control: %d of %d bytes: %v", n, len(kept), err)
		}
		l.receive(nil)
		l.feedBack()
	}
	st := l.rx.Stats()
	if st.Wire.NoLinks == 0 || st.Wire.Digest != 0 {
		t.Fatalf("wire %+v", st.Wire)
	}
	// The keyframes it asked for come without joint prediction and
	// commit; nothing else does.
	if st.FramesCommitted < 2 || st.FramesCommitted > st.Wire.Keyframes {
		t.Fatalf("committed %d frames, %d keyframes, %d records without links", st.FramesCommitted, st.Wire.Keyframes, st.Wire.NoLinks)
	}
}
