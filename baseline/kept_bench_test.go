package baseline

import (
	"testing"

	"github.com/islandsync/islandsync/island"
)

// BenchmarkKept is an observer's baseline keeping for 900 islands, as on
// the Fiedler scene: per broadcast and island, find the baseline a delta
// names (two broadcasts back), then keep the new frame (one body), in the
// arena the islands share, as a receiver keeps them. Reported per island
// per broadcast.
func BenchmarkKept(b *testing.B) {
	const islands = 900
	kept := make([]Kept, islands)
	var arena Arena
	seq := uint32(0)
	ents := []Entry{{}}
	broadcast := func() {
		seq++
		for i := range kept {
			k := &kept[i]
			if seq > 2 && k.Find(seq-2) == nil {
				b.Fatalf("island %d: no baseline %d", i, seq-2)
			}
			k.KeepFrame(&arena, &FrameInfo{Key: island.Key{Island: uint32(i), Seq: seq}}, ents, seq)
		}
	}
	for range 2 * Window {
		broadcast()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		broadcast()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*islands), "ns/island")
}
