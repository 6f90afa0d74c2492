package assembler

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// FuzzAssembler drives the assembler with operation sequences, two bytes per
// operation:
//
//	op&7 == 0..3  push fragment (arg & 15) of frame (op>>3 & 7), as sent
//	op&7 == 4     push that fragment with one member byte flipped (arg picks it)
//	op&7 == 5     push that fragment with a header field altered
//	op&7 == 6     advance time by arg × 1000 µs
//	op&7 == 7     expire
//
// After every step: no panic, bytes held ≤ cap, frames held ≤ cap, and every
// emitted frame equals one that was really sent, bit for bit.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 2})
	f.Add([]byte{0, 2, 0, 1, 0, 0, 8, 0, 8, 1, 8, 2})
	f.Add([]byte{0, 0, 4, 1, 0, 1, 0, 2, 6, 255, 7, 0})
	f.Add([]byte{5, 0, 0, 0, 0, 1, 0, 2, 16, 0, 16, 1})

	var sent []island.Frame
	var frags [][]codec.Fragment
	for k := 0; k < 8; k++ {
		key := island.Key{Island: uint32(k % 3), Epoch: 1, Topology: 1, Config: 1, Seq: 0xFFFFFFFE + uint32(k)}
		fr := testFrame(island.SenderID(k%2), key, 1+k*37, float64(k))
		sent = append(sent, fr)
		frags = append(frags, fragmentsOf(f, fr))
	}
	cfg := Config{TTL: 20_000, MaxPendingBytes: 64 << 10, MaxPending: 6, MaxCandidatesPerIsland: 2}
	f.Fuzz(func(t *testing.T, ops []byte) {
		a := mustNew(t, cfg)
		var now int64
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			k := int(op>>3) & 7
			fr := frags[k]
			frag := fr[int(arg&15)%len(fr)]
			var o Outcome
			var out *Frame
			switch op & 7 {
			case 0, 1, 2, 3:
				o, out = a.Push(now, &frag)
			case 4:
				c := cloneFragment(frag)
				c.Raw[int(arg)%len(c.Raw)] ^= 0x10
				o, out = a.Push(now, &c)
			case 5:
				c := cloneFragment(frag)
				switch arg % 4 {
				case 0:
					c.Header.Time++
				case 1:
					c.Header.Segment++
				case 2:
					c.Header.Digest++
				case 3:
					c.Header.Flags ^= island.FlagInitial
				}
				o, out = a.Push(now, &c)
			case 6:
				now += int64(arg) * 1000
				continue
			case 7:
				a.Expire(now)
				continue
			}
			st := a.Stats()
			if st.PendingBytes > cfg.MaxPendingBytes || st.PendingFrames > cfg.MaxPending || st.PendingBytes < 0 {
				t.Fatalf("op %d: held %d bytes in %d frames", i, st.PendingBytes, st.PendingFrames)
			}
			if (out != nil) != (o == Completed) {
				t.Fatalf("op %d: outcome %v, frame %v", i, o, out != nil)
			}
			if out != nil {
				ok := false
				for j := range sent {
					if sameFrame(out, &sent[j]) {
						ok = true
					}
				}
				if !ok {
					t.Fatalf("op %d: emitted frame %v was never sent", i, out.Key)
				}
			}
		}
		a.Expire(now + cfg.TTL)
		if st := a.Stats(); st.PendingBytes != 0 || st.PendingFrames != 0 {
			t.Fatalf("after expiry: %+v", st)
		}
	})
}
