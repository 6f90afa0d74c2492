package receiver

import (
	"bytes"
	"fmt"
	"github.com/islandsync/islandsync/baseline"
	"reflect"
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
)

// TestCloneGoesOnAlike: a receiver cloned in the middle of a lossy wire-3
// run — fragments in reassembly, parity kept for rebuilding, baselines and
// windows, histories, the playout clock mid-play — renders, counts and
// feeds back exactly as a receiver that saw the same input and was never
// cloned, while the original runs a snapshot ahead of it, losing nothing (so
// storage shared with it would show). Local simulation is off: a clone rebuilds its
// simulations, which cp may step to other contacts.
func TestCloneGoesOnAlike(t *testing.T) {
	// The smallest datagrams, so that the chain's keyframes are cut too.
	rec := recordDatagram(t, "ragdolls,chain", 20, 40, 3, codec.MinMaxDatagram)
	cfg := Config{StraightExtrapolation: true}
	a, _ := New(cfg)
	ref, _ := New(cfg)
	// Cut inside the biggest broadcast (the chain's periodic keyframe cut
	// into fragments with parity), delivered up to its first fragment; one
	// in five datagrams is lost throughout, but not that one.
	dec, _ := codec.NewDecoder(codec.Config{})
	cut, half := 0, 0
	for i := 11; i < len(rec.now)-10; i++ {
		if cut != 0 && len(rec.dgs[i]) <= len(rec.dgs[cut]) {
			continue
		}
		for j, d := range rec.dgs[i] {
			if fragmented(t, dec, d) && (i+j)%5 != 4 {
				cut, half = i, j+1
				break
			}
		}
	}
	deliver := func(rx *Receiver, i, from, to int) {
		for j, d := range rec.dgs[i][from:to] {
			if (from+j+i)%5 != 4 {
				rx.Datagram(rec.now[i], d)
			}
		}
	}
	for _, rx := range []*Receiver{a, ref} {
		for i := range cut + 1 {
			if _, err := rx.ControlBytes(rec.now[i], rec.ctl[i]); err != nil {
				t.Fatal(err)
			}
			if i < cut {
				deliver(rx, i, 0, len(rec.dgs[i]))
				rx.Render(rec.now[i])
			} else {
				deliver(rx, i, 0, half)
			}
		}
	}
	if st := a.Stats(); st.Assembler.PendingFrames == 0 && st.Assembler.ParityFrames == 0 {
		t.Fatalf("setup: nothing in reassembly or parity at the cut: %+v", st.Assembler)
	}
	b := a.Clone()
	for i := cut; i < len(rec.now); i++ {
		// The original runs one snapshot ahead, losing nothing.
		if i == cut {
			for _, d := range rec.dgs[i][half:] {
				a.Datagram(rec.now[i], d)
			}
		}
		if i+1 < len(rec.now) {
			if _, err := a.ControlBytes(rec.now[i+1], rec.ctl[i+1]); err != nil {
				t.Fatal(err)
			}
			for _, d := range rec.dgs[i+1] {
				a.Datagram(rec.now[i+1], d)
			}
			a.Render(rec.now[i+1])
			_ = a.Feedback(nil)
		}
		var views [2]string
		for k, rx := range []*Receiver{ref, b} {
			from := 0
			if i == cut {
				from = half
			} else if _, err := rx.ControlBytes(rec.now[i], rec.ctl[i]); err != nil {
				t.Fatal(err)
			}
			deliver(rx, i, from, len(rec.dgs[i]))
			views[k] = fmt.Sprintf("%+v", rx.Render(rec.now[i]))
		}
		if views[0] != views[1] {
			t.Fatalf("snapshot %d: the clone shows\n%.400s\nthe never-cloned receiver\n%.400s", i, views[1], views[0])
		}
		if fb, fr := b.Feedback(nil), ref.Feedback(nil); !bytes.Equal(fb, fr) {
			t.Fatalf("snapshot %d: feedback differs", i)
		}
	}
	if sb, sr := b.Stats(), ref.Stats(); !reflect.DeepEqual(sb, sr) {
		t.Fatalf("stats differ:\n%+v\n%+v", sb, sr)
	}
	if st := b.Stats(); st.FramesCommitted == 0 || st.Assembler.Count(assembler.Rebuilt) == 0 {
		t.Fatalf("the run proves little: %d committed, %d rebuilt from parity", st.FramesCommitted, st.Assembler.Count(assembler.Rebuilt))
	}
}

// TestClonesRunConcurrently: a copy shares no scratch with its original,
// so the two may receive on goroutines of their own — the race detector
// finds scratch both write — and both end alike. Storage written only
// once the copy has run long (the baseline arena's slots) does not show
// here: TestCloneKeepsItsOwnBaselines checks that. Local simulation is
// off, as in TestCloneGoesOnAlike.
func TestClonesRunConcurrently(t *testing.T) {
	rec := recordWarm(t, "boxes", 10, 20, 3)
	a, _ := New(Config{StraightExtrapolation: true})
	rec.play(a, 0, rec.warm, true)
	b := a.Clone()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.play(b, rec.warm, len(rec.now), true)
	}()
	rec.play(a, rec.warm, len(rec.now), true)
	<-done
	if sa, sb := a.Stats(), b.Stats(); sa.FramesCommitted != sb.FramesCommitted || sa.FramesCommitted == 0 {
		t.Fatalf("committed %d and %d frames, want the same, some", sa.FramesCommitted, sb.FramesCommitted)
	}
}

// TestCloneKeepsItsOwnBaselines: a copy keeps its baselines apart from its
// original's — in the arena of one-body tables too — so that the two,
// receiving step by step side by side, never hold the same table: were
// one to write a table the other still restores from, the other would
// restore from a frame that is not the one its sum was checked over.
func TestCloneKeepsItsOwnBaselines(t *testing.T) {
	// Longer than the arena's ring of broadcasts, so that the copy is made
	// with its every slot used and some free again.
	rec := recordWarm(t, "fiedler", 60, 60, 3)
	a, _ := New(Config{StraightExtrapolation: true})
	rec.play(a, 0, rec.warm, true)
	b := a.Clone()
	for i := rec.warm; i < len(rec.now); i++ {
		rec.play(a, i, i+1, true)
		rec.play(b, i, i+1, true)
	}
	if sa, sb := a.Stats(), b.Stats(); sa.FramesCommitted != sb.FramesCommitted || sa.Wire != sb.Wire {
		t.Fatalf("the original committed %d frames (wire %+v), its copy %d (wire %+v)", sa.FramesCommitted, sa.Wire, sb.FramesCommitted, sb.Wire)
	}
	shared, held := 0, 0
	for i := range a.bases {
		ka, kb := &a.bases[i].kept, &b.bases[i].kept
		for s := a.newestSeq - 2*baseline.Window; s != a.newestSeq+1; s++ {
			ta, tb := ka.Find(s), kb.Find(s)
			if ta != nil {
				held++
			}
			if ta != nil && ta == tb {
				shared++
			}
		}
	}
	if shared > 0 || held == 0 {
		t.Fatalf("the original and its copy share %d of the %d tables the original holds", shared, held)
	}
}
