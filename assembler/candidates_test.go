package assembler

import (
	"testing"

	"github.com/islandsync/islandsync/island"
)

// TestCandidateCapAcrossSenders: 40 senders each starting a frame of the
// same island leave at most the cap of candidates for it, not 40; and a
// sender that floods the island with invented sequence numbers evicts its
// own frames before the in-progress frame of another sender.
func TestCandidateCapAcrossSenders(t *testing.T) {
	a, _ := New(Config{})
	key := island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1}
	for s := island.SenderID(1); s <= 40; s++ {
		k := key
		k.Seq = uint32(s)
		fr := fragmentsOf(t, testFrame(s, k, 40, float64(s)))
		a.Push(0, &fr[0]) // first of three fragments: stays incomplete
	}
	if st := a.Stats(); st.PendingFrames != DefaultMaxCandidatesPerIsland || st.Count(EvictedIslandCap) != 40-DefaultMaxCandidatesPerIsland {
		t.Fatalf("40 senders left %d candidates (evicted %d), want %d", st.PendingFrames, st.Count(EvictedIslandCap), DefaultMaxCandidatesPerIsland)
	}

	b, _ := New(Config{})
	k := key
	k.Seq = 1
	legit := fragmentsOf(t, testFrame(1, k, 40, 0))
	b.Push(0, &legit[0])
	b.Push(0, &legit[1])
	for seq := uint32(100); seq < 140; seq++ { // the flooder, sender 9
		fk := key
		fk.Seq = seq
		fr := fragmentsOf(t, testFrame(9, fk, 40, 1))
		b.Push(0, &fr[0])
	}
	if o, f := b.Push(0, &legit[2]); o != Completed || f == nil || f.Sender != 1 {
		t.Fatalf("the legitimate frame did not survive the flood: %v", o)
	}
}

// TestLateFrames: a frame older than the newest completed one of its
// stream still completes if it never did; one that did, or one 64 or more
// behind, is stale.
func TestLateFrames(t *testing.T) {
	a, _ := New(Config{})
	push := func(seq uint32) Outcome {
		var o Outcome
		for _, f := range fragmentsOf(t, testFrame(1, keySeq(seq), 5, float64(seq))) {
			o, _ = a.Push(0, &f)
		}
		return o
	}
	for _, c := range []struct {
		seq  uint32
		want Outcome
	}{{100, Completed}, {98, Completed}, {98, RejectStale}, {100, RejectStale}, {99, Completed},
		{200, Completed}, {137, Completed}, {136, RejectStale}, {201, Completed}} {
		if got := push(c.seq); got != c.want {
			t.Fatalf("seq %d: %v, want %v", c.seq, got, c.want)
		}
	}
}
