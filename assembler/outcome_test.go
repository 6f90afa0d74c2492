package assembler

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

type step struct {
	frag codec.Fragment
	now  int64
	want Outcome
}

var key1 = island.Key{Island: 1, Epoch: 1, Topology: 1, Config: 1, Seq: 10}

func keySeq(seq uint32) island.Key { k := key1; k.Seq = seq; return k }

// TestOutcomes drives one scripted sequence per outcome and checks every
// push's outcome, the counters and that only whole frames come out.
func TestOutcomes(t *testing.T) {
	f40 := testFrame(1, key1, 40, 0) // 3 fragments: 14, 13, 13 members
	fr := fragmentsOf(t, f40)
	if len(fr) != 3 {
		t.Fatalf("setup: %d fragments", len(fr))
	}
	f10 := testFrame(1, key1, 10, 1)
	mutated := cloneFragment(fr[1])
	mutated.Raw[20] ^= 1 // member 0's x
	timeShift := cloneFragment(fr[1])
	timeShift.Header.Time++
	dupIDs := testFrame(1, key1, 40, 0)
	dupIDs.Members[39].ID = dupIDs.Members[0].ID
	badDigest := fragmentsOf(t, f40)
	for i := range badDigest {
		badDigest[i].Header.Digest ^= 1
	}
	malformed := cloneFragment(fr[0])
	malformed.Raw = malformed.Raw[:3*codec.MemberSize]
	seq11 := fragmentsOf(t, testFrame(1, keySeq(11), 40, 2))

	cases := []struct {
		name     string
		cfg      Config
		steps    []step
		complete int // frames expected out
		pending  int // frames held at the end
	}{
		{"buffered then completed", Config{}, []step{{fr[0], 0, Buffered}, {fr[1], 1, Buffered}, {fr[2], 2, Completed}}, 1, 0},
		{"reverse order", Config{}, []step{{fr[2], 0, Buffered}, {fr[1], 1, Buffered}, {fr[0], 2, Completed}}, 1, 0},
		{"identical duplicate", Config{}, []step{{fr[0], 0, Buffered}, {fr[0], 1, Duplicate}, {fr[1], 2, Buffered}, {fr[1], 2, Duplicate}, {fr[2], 3, Completed}}, 1, 0},
		{"conflicting duplicate poisons", Config{}, []step{{fr[0], 0, Buffered}, {fr[1], 1, Buffered}, {mutated, 2, RejectConflictingDuplicate}, {fr[2], 3, RejectPoisoned}}, 0, 1},
		{"header conflict", Config{}, []step{{fr[0], 0, Buffered}, {timeShift, 1, RejectHeaderConflict}, {fr[1], 2, RejectPoisoned}, {fr[2], 3, RejectPoisoned}}, 0, 1},
		{"overlap", Config{}, []step{
			{craft(f10, 0, 2, 0, 6, 10), 0, Buffered},
			{craft(f10, 1, 2, 5, 3, 10), 1, RejectOverlap},
		}, 0, 1},
		{"over-count", Config{}, []step{
			{craft(f10, 0, 3, 0, 7, 10), 0, Buffered},
			{craft(f10, 1, 3, 3, 7, 10), 1, RejectOverCount},
		}, 0, 1},
		{"over-count: members covered, fragments outstanding", Config{}, []step{
			{craft(f10, 0, 3, 0, 10, 10), 0, RejectOverCount},
		}, 0, 1},
		{"over-count: more fragments than members", Config{}, []step{
			{craft(f10, 0, 11, 0, 1, 10), 0, RejectOverCount},
		}, 0, 0},
		{"coverage gap", Config{}, []step{
			{craft(f10, 0, 2, 0, 4, 10), 0, Buffered},
			{craft(f10, 1, 2, 6, 4, 10), 1, RejectCoverageGap},
		}, 0, 1},
		{"duplicate member identity", Config{}, func() []step {
			d := fragmentsOf(t, dupIDs)
			return []step{{d[0], 0, Buffered}, {d[1], 0, Buffered}, {d[2], 0, RejectDuplicateMember}}
		}(), 0, 1},
		{"digest mismatch", Config{}, []step{{badDigest[0], 0, Buffered}, {badDigest[1], 0, Buffered}, {badDigest[2], 0, RejectDigestMismatch}, {badDigest[2], 1, RejectPoisoned}}, 0, 1},
		{"stale replay; an older frame that never completed may", Config{}, []step{
			{seq11[0], 0, Buffered}, {seq11[1], 0, Buffered}, {seq11[2], 0, Completed},
			{seq11[0], 1, RejectStale}, {fr[0], 2, Buffered}, {fr[1], 2, Buffered}, {fr[2], 2, Completed},
			{fr[1], 3, RejectStale},
		}, 2, 0},
		{"an older frame completes after a newer one", Config{}, []step{
			{fr[0], 0, Buffered},
			{seq11[0], 1, Buffered}, {seq11[1], 1, Buffered}, {seq11[2], 1, Completed},
			{fr[1], 2, Buffered}, {fr[2], 2, Completed}, // its first part was kept
		}, 2, 0},
		{"too many members", Config{MaxMembers: 39}, []step{{fr[0], 0, RejectTooLarge}}, 0, 0},
		{"too many fragments", Config{MaxFragments: 2}, []step{{fr[0], 0, RejectTooLarge}}, 0, 0},
		{"frame larger than byte cap", Config{MaxPendingBytes: 2000}, []step{{fr[0], 0, RejectTooLarge}}, 0, 0},
		{"malformed", Config{}, []step{{malformed, 0, RejectMalformed}}, 0, 0},
		{"expired then restarts", Config{TTL: 100}, []step{{fr[0], 0, Buffered}, {fr[1], 99, Buffered}, {fr[2], 100, Buffered}}, 0, 1},
		{"island cap evicts oldest", Config{MaxCandidatesPerIsland: 1}, []step{{fr[0], 0, Buffered}, {seq11[0], 1, Buffered}, {fr[1], 2, Buffered}}, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustNew(t, c.cfg)
			var want [NumOutcomes]uint64
			completed := 0
			for i, s := range c.steps {
				got, frame := a.Push(s.now, &s.frag)
				if got != s.want {
					t.Fatalf("step %d: outcome %v, want %v", i, got, s.want)
				}
				want[got]++
				if (frame != nil) != (got == Completed) {
					t.Fatalf("step %d: outcome %v with frame %v", i, got, frame != nil)
				}
				if frame != nil {
					completed++
					if int(frame.Key.Seq) == 10 && !sameFrame(frame, &f40) {
						t.Fatalf("step %d: completed frame differs from what was sent", i)
					}
				}
			}
			st := a.Stats()
			for o := Buffered; o <= RejectDigestMismatch; o++ {
				if st.Count(o) != want[o] {
					t.Errorf("counter %v = %d, want %d", o, st.Count(o), want[o])
				}
			}
			if completed != c.complete || st.PendingFrames != c.pending {
				t.Errorf("completed %d pending %d, want %d and %d", completed, st.PendingFrames, c.complete, c.pending)
			}
		})
	}
}

// TestDropCounters checks the counters of frames dropped by expiry and
// by each cap.
func TestDropCounters(t *testing.T) {
	fr := func(isl, seq uint32) []codec.Fragment {
		k := key1
		k.Island, k.Seq = isl, seq
		return fragmentsOf(t, testFrame(1, k, 40, float64(seq)))
	}
	t.Run("expired", func(t *testing.T) {
		a := mustNew(t, Config{TTL: 1000})
		a.Push(0, &fr(1, 1)[0])
		a.Expire(999)
		if a.Stats().Count(Expired) != 0 || a.Stats().PendingFrames != 1 {
			t.Fatal("expired early")
		}
		a.Expire(1000)
		if st := a.Stats(); st.Count(Expired) != 1 || st.PendingFrames != 0 || st.PendingBytes != 0 {
			t.Fatalf("after TTL: %+v", st)
		}
	})
	t.Run("island cap", func(t *testing.T) {
		a := mustNew(t, Config{MaxCandidatesPerIsland: 2})
		for seq := uint32(1); seq <= 5; seq++ {
			a.Push(int64(seq), &fr(1, seq)[0])
		}
		if st := a.Stats(); st.Count(EvictedIslandCap) != 3 || st.PendingFrames != 2 {
			t.Fatalf("%+v", st)
		}
		// The survivors are the two newest: seq 4 and 5 still complete.
		for _, seq := range []uint32{4, 5} {
			f := fr(1, seq)
			a.Push(10, &f[1])
			if o, _ := a.Push(10, &f[2]); o != Completed {
				t.Fatalf("seq %d: %v", seq, o)
			}
		}
	})
	t.Run("pending cap", func(t *testing.T) {
		a := mustNew(t, Config{MaxPending: 4, MaxCandidatesPerIsland: 2})
		for isl := uint32(1); isl <= 6; isl++ {
			a.Push(int64(isl), &fr(isl, 1)[0])
		}
		if st := a.Stats(); st.Count(EvictedPendingCap) != 2 || st.PendingFrames != 4 {
			t.Fatalf("%+v", st)
		}
		if o, _ := a.Push(7, &fr(1, 1)[1]); o != Buffered { // island 1 was evicted: starts over
			t.Fatalf("%v", o)
		}
	})
	t.Run("whole frames take no place", func(t *testing.T) {
		// The pending table is full of frames in progress; frames that come
		// whole in one fragment complete without evicting any of them, and
		// a whole frame whose digest fails is still poisoned.
		a := mustNew(t, Config{MaxPending: 4, MaxCandidatesPerIsland: 2})
		for isl := uint32(1); isl <= 4; isl++ {
			a.Push(int64(isl), &fr(isl, 1)[0])
		}
		for isl := uint32(10); isl < 20; isl++ {
			k := key1
			k.Island, k.Seq = isl, 1
			w := fragmentsOf(t, testFrame(1, k, 3, 1))
			if len(w) != 1 {
				t.Fatalf("%d fragments", len(w))
			}
			if o, f := a.Push(5, &w[0]); o != Completed || f.Fragments != 1 || f.Members.Len() != 3 {
				t.Fatalf("island %d: %v", isl, o)
			}
		}
		if st := a.Stats(); st.Count(EvictedPendingCap) != 0 || st.PendingFrames != 4 {
			t.Fatalf("%+v", st)
		}
		for isl := uint32(1); isl <= 4; isl++ {
			f := fr(isl, 1)
			a.Push(5, &f[1])
			if o, _ := a.Push(5, &f[2]); o != Completed {
				t.Fatalf("island %d: %v", isl, o)
			}
		}
		k := key1
		k.Island, k.Seq = 30, 1
		bad := fragmentsOf(t, testFrame(1, k, 3, 1))[0]
		bad.Header.Digest ^= 1
		if o, _ := a.Push(6, &bad); o != RejectDigestMismatch {
			t.Fatalf("bad digest: %v", o)
		}
		if o, _ := a.Push(6, &bad); o != RejectPoisoned {
			t.Fatalf("bad digest again: %v", o)
		}
		if st := a.Stats(); st.Count(EvictedPendingCap) != 0 || st.Count(Completed) != 14 || st.PendingFrames != 1 {
			t.Fatalf("%+v", st) // the poisoned frame's tombstone is the one place taken
		}
	})
	t.Run("byte cap", func(t *testing.T) {
		one := FrameOverhead + 3*FragmentOverhead + 40*MemberCharge
		a := mustNew(t, Config{MaxPendingBytes: 2 * one})
		for isl := uint32(1); isl <= 4; isl++ {
			a.Push(int64(isl), &fr(isl, 1)[0])
			a.Push(int64(isl), &fr(isl, 1)[1])
			if st := a.Stats(); st.PendingBytes > 2*one {
				t.Fatalf("over cap: %d > %d", st.PendingBytes, 2*one)
			}
		}
		if st := a.Stats(); st.Count(EvictedByteCap) == 0 {
			t.Fatalf("%+v", st)
		}
	})
}

// TestSendersNeverMix: the same key from two senders is two frames.
func TestSendersNeverMix(t *testing.T) {
	fa := testFrame(1, key1, 40, 0)
	fb := testFrame(2, key1, 40, 5)
	ra, rb := fragmentsOf(t, fa), fragmentsOf(t, fb)
	a := mustNew(t, Config{})
	got := map[island.SenderID]Frame{}
	for i := range ra {
		for _, f := range []*codec.Fragment{&ra[i], &rb[i]} {
			if o, fr := a.Push(int64(i), f); o == Completed {
				got[fr.Sender] = fr.Clone()
			} else if o != Buffered {
				t.Fatalf("outcome %v", o)
			}
		}
	}
	if g := got[1]; !sameFrame(&g, &fa) {
		t.Error("sender 1 frame differs")
	}
	if g := got[2]; !sameFrame(&g, &fb) {
		t.Error("sender 2 frame differs")
	}
	// A fragment of sender 1 relabelled as sender 2 is a header conflict for
	// sender 2's pending frame, never a piece of sender 1's.
	a = mustNew(t, Config{})
	a.Push(0, &ra[0])
	x := cloneFragment(rb[0])
	a.Push(0, &x)
	y := cloneFragment(ra[1])
	y.Header.Sender = 2
	if o, _ := a.Push(0, &y); o != RejectConflictingDuplicate && o != RejectHeaderConflict {
		t.Fatalf("relabelled fragment: %v", o)
	}
	if o, _ := a.Push(0, &ra[1]); o != Buffered {
		t.Fatalf("sender 1 disturbed: %v", o)
	}
}

func TestOutcomeNames(t *testing.T) {
	seen := map[string]bool{}
	for o := Outcome(0); o < NumOutcomes; o++ {
		s := o.String()
		if s == "" || s == "unknown" || seen[s] {
			t.Errorf("outcome %d has name %q", o, s)
		}
		seen[s] = true
		if o.IsReject() && o.IsDrop() {
			t.Errorf("%v is both reject and drop", o)
		}
	}
	if NumOutcomes.String() != "unknown" {
		t.Error("out of range name")
	}
}
