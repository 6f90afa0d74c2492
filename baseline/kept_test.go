package baseline

import (
	"math/bits"
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// TestKeepFrame: KeepFrame keeps a copy of the members it is given, of one
// body or of many, under the frame's sequence; the caller's slice is its
// own again at once; and once the window has let tables go, keeping a
// frame of the same size allocates nothing — whether the tables are the
// island's own or, for one member, an arena's.
func TestKeepFrame(t *testing.T) {
	for _, c := range []struct {
		n     int
		arena *Arena
	}{{1, nil}, {3, nil}, {1, &Arena{}}, {3, &Arena{}}} {
		n := c.n
		var k Kept
		ents := make([]Entry, n)
		keep := func(seq uint32) {
			for i := range ents {
				ents[i] = Entry{ID: island.MemberID{Stable: uint64(i + 1)}, Record: Record{Q: quant.State{X: int64(seq)}}}
			}
			f := FrameInfo{Key: island.Key{Island: 7, Seq: seq}, Time: island.Time(seq) * 50_000, Class: quant.Rigid}
			if !k.KeepFrame(c.arena, &f, ents, seq) {
				t.Fatalf("%d members: frame %d not kept", n, seq)
			}
			ents[0].Q.X = -1 // the caller's slice again: the kept copy must not see this
		}
		for seq := uint32(1); seq <= 3*Window; seq++ {
			keep(seq)
		}
		for _, seq := range []uint32{3 * Window, 2*Window + 1} {
			tb := k.Find(seq)
			if tb == nil || tb.ID != seq || tb.Frame.Key.Seq != seq || tb.Frame.Time != island.Time(seq)*50_000 || len(tb.Entries) != n {
				t.Fatalf("%d members: Find(%d) = %+v", n, seq, tb)
			}
			for i, e := range tb.Entries {
				if e.ID.Stable != uint64(i+1) || e.Q.X != int64(seq) {
					t.Fatalf("%d members: frame %d member %d = %+v, want stable %d at x %d", n, seq, i, e, i+1, seq)
				}
			}
		}
		if c.arena != nil && n == 1 && (k.inArena == 0 || c.arena.Live() != bits.OnesCount64(k.inArena)) {
			t.Fatalf("one member: %d tables in the arena, %d live there", bits.OnesCount64(k.inArena), c.arena.Live())
		}
		if k.Find(Window) != nil {
			t.Fatalf("%d members: frame %d outlived the window", n, Window)
		}
		seq := uint32(3 * Window)
		if a := testing.AllocsPerRun(100, func() { seq++; keep(seq) }); a != 0 {
			t.Fatalf("%d members: KeepFrame allocates %.1f times once warm", n, a)
		}
	}
}
