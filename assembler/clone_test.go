package assembler

import (
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// TestCloneGoesOnAlike: an assembler cloned in the middle of seeded traffic
// — frames in progress, poisoned ones, evictions under tight caps,
// duplicates, several streams — gives, for every fragment after, the same
// outcome and frame as an assembler that saw the same traffic and was never
// cloned, while the original is fed other fragments in turn (so storage
// shared with it would show), and ends with the same counters.
func TestCloneGoesOnAlike(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		var frags []codec.Fragment
		for i := range 60 {
			k := island.Key{Island: uint32(r.IntN(3)), Epoch: 1, Topology: 1, Config: 1, Seq: uint32(i / 2)}
			fr := fragmentsOf(t, testFrame(island.SenderID(1+r.IntN(2)), k, 1+r.IntN(60), float64(i)))
			for _, f := range fr {
				if r.IntN(5) == 0 {
					continue // lost
				}
				if r.IntN(10) == 0 {
					f = cloneFragment(f)
					f.Raw[r.IntN(len(f.Raw))] ^= 1 // a conflicting copy
				}
				frags = append(frags, f)
			}
		}
		r.Shuffle(len(frags), func(i, j int) { frags[i], frags[j] = frags[j], frags[i] })
		cfg := Config{TTL: 200_000, MaxCandidatesPerIsland: 2, MaxPending: 6, MaxPendingBytes: 64 << 10}
		a, ref := mustNew(t, cfg), mustNew(t, cfg)
		cut := len(frags) / 2
		for i := range cut {
			a.Push(int64(i)*1000, &frags[i])
			ref.Push(int64(i)*1000, &frags[i])
		}
		b := a.Clone()
		// From here the original gets other traffic (the fragments in
		// reverse, one byte changed): the clone must not notice, and must
		// go on as ref, which never was cloned.
		for i := cut; i < len(frags); i++ {
			now := int64(i) * 1000
			junk := cloneFragment(frags[len(frags)-1-i+cut])
			junk.Raw[0] ^= 0x40
			a.Push(now, &junk)
			or, fr := ref.Push(now, &frags[i])
			var kr island.Key
			var dr uint64
			if fr != nil {
				kr, dr = fr.Key, fr.Digest
			}
			ob, fb := b.Push(now, &frags[i])
			if or != ob || (fr == nil) != (fb == nil) || (fb != nil && (fb.Key != kr || fb.Digest != dr)) {
				t.Fatalf("seed %d, fragment %d: never cloned %v, clone %v", seed, i, or, ob)
			}
		}
		if sr, sb := ref.Stats(), b.Stats(); sr != sb {
			t.Fatalf("seed %d: stats differ:\n%+v\n%+v", seed, sr, sb)
		}
	}
}
