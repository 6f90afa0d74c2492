package assembler

import (
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// flooder crafts hostile fragments: random keys and senders, huge claimed
// totals, conflicting duplicates of legitimate fragments, never-completing
// frames. It reuses its buffers so the flood itself does not allocate.
type flooder struct {
	r     *rand.Rand
	frag  codec.Fragment
	ms    []island.Member
	raw   []byte
	legit []codec.Fragment
}

func newFlooder(seed uint64, legit []codec.Fragment) *flooder {
	return &flooder{r: rand.New(rand.NewPCG(seed, 99)), ms: make([]island.Member, 18), raw: make([]byte, 18*codec.MemberSize), legit: legit}
}

func (f *flooder) next() *codec.Fragment {
	r := f.r
	n := 1 + r.IntN(18)
	h := codec.FragmentHeader{
		Sender:       island.SenderID(r.IntN(5000)),
		Key:          island.Key{Island: r.Uint32() % 64, Epoch: r.Uint32() % 4, Topology: 1, Config: 1, Seq: r.Uint32()},
		Time:         island.Time(r.Int64N(1 << 40)),
		TotalMembers: uint32(n + r.IntN(4096-n+1)),
		Count:        uint16(1 + r.IntN(codec.DefaultMaxFragments)),
		MemberCount:  uint16(n),
		Digest:       r.Uint64(),
	}
	switch r.IntN(6) {
	case 0: // a conflicting duplicate of a legitimate fragment
		l := f.legit[r.IntN(len(f.legit))]
		h = l.Header
		h.Digest ^= 1 << r.IntN(64)
	case 1: // claims the maximum everything
		h.TotalMembers, h.Count = 4096, codec.DefaultMaxFragments
	case 2: // the legitimate sender, a random island and sequence
		h.Sender = 1
	}
	if h.Count > uint16(h.TotalMembers) {
		h.Count = uint16(h.TotalMembers)
	}
	h.Index = uint16(r.IntN(int(h.Count)))
	h.FirstMember = uint32(r.IntN(int(h.TotalMembers) - n + 1))
	h.MemberCount = uint16(n)
	for i := 0; i < n; i++ {
		f.ms[i] = island.Member{ID: island.MemberID{Stable: r.Uint64()}, State: island.State{X: float64(i)}}
	}
	f.raw = f.raw[:0]
	for i := 0; i < n; i++ {
		f.raw = codec.AppendMember(f.raw, &f.ms[i])
	}
	f.frag = codec.Fragment{Header: h, Raw: f.raw}
	return &f.frag
}

// TestHostileFlood pushes over a million crafted fragments with legitimate
// frames interleaved. The byte cap holds after every push, nothing panics,
// and every legitimate frame completes intact.
func TestHostileFlood(t *testing.T) {
	total := 1_000_000
	if testing.Short() || raceEnabled {
		total = 200_000
	}
	const legitEvery = 10 // one legitimate fragment per this many pushes
	cfg := Config{MaxPendingBytes: 2 << 20, MaxPending: 512}
	a := mustNew(t, cfg)
	epoch := uint32(1)
	var legit [][]codec.Fragment
	var want []island.Frame
	makeLegit := func() {
		legit, want = legit[:0], want[:0]
		for seq := uint32(0); seq < 16; seq++ {
			f := testFrame(1, island.Key{Island: 7, Epoch: epoch, Topology: 1, Config: 1, Seq: seq}, 150, float64(seq))
			want = append(want, f)
			legit = append(legit, fragmentsOf(t, f))
		}
	}
	makeLegit()
	fl := newFlooder(7, legit[0])
	completed, legitFrame, legitFrag := 0, 0, 0
	var now int64
	for i := 0; i < total; i++ {
		now += 10 // 10 µs per push: the TTL spans 25,000 pushes
		var f *codec.Fragment
		if i%legitEvery == 0 {
			lf := legit[legitFrame%len(legit)]
			f = &lf[legitFrag]
			legitFrag++
			if legitFrag == len(lf) {
				legitFrag = 0
				legitFrame++
			}
		} else {
			f = fl.next()
		}
		o, out := a.Push(now, f)
		if st := a.Stats(); st.PendingBytes > cfg.MaxPendingBytes || st.PendingFrames > cfg.MaxPending {
			t.Fatalf("push %d: %d bytes, %d frames held", i, st.PendingBytes, st.PendingFrames)
		}
		if out != nil && out.Sender == 1 && out.Key.Island == 7 && out.Key.Epoch == epoch && out.Key.Topology == 1 && out.Key.Config == 1 {
			seq := int(out.Key.Seq)
			if seq >= len(want) || !sameFrame(out, &want[seq]) {
				t.Fatalf("push %d: legitimate-looking frame %v is not one that was sent", i, out.Key)
			}
			completed++
			if seq == len(legit)-1 {
				// The stream's newest was reached; restart it under a new epoch.
				epoch++
				makeLegit()
				fl.legit = legit[0]
			}
		} else if o == Completed && out.Sender == 1 && out.Key.Island == 7 {
			t.Fatalf("push %d: forged frame %v completed for the legitimate island", i, out.Key)
		}
	}
	legitSent := legitFrame
	st := a.Stats()
	t.Logf("%d pushes: %d legitimate frames sent, %d completed; peak %d bytes; outcomes %v", total, legitSent, completed, st.PeakPendingBytes, st.Outcomes)
	// Conflicting duplicates aimed at the legitimate frames can poison them
	// (an unauthenticated forger on the path can always do that); each such
	// poisoning is counted. Every other legitimate frame must complete: only
	// the one in flight at the end may be missing.
	poisoned := int(st.Count(RejectHeaderConflict) + st.Count(RejectConflictingDuplicate))
	if completed < legitSent-poisoned-1 || completed == 0 {
		t.Fatalf("%d of %d legitimate frames completed, %d poisoned", completed, legitSent, poisoned)
	}
	a.Expire(now + cfg.TTL + DefaultTTL)
	if st := a.Stats(); st.PendingBytes != 0 || st.PendingFrames != 0 {
		t.Fatalf("accounting after expiry: %+v", st)
	}
}
