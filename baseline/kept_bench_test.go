package baseline

import "testing"

// BenchmarkKept is an observer's baseline keeping for 900 islands, as on
// the Fiedler scene: per broadcast and island, find the baseline a delta
// names (two broadcasts back), then keep the new frame's table, recycled
// from those the window let go. Reported per island per broadcast.
func BenchmarkKept(b *testing.B) {
	const islands = 900
	kept := make([]Kept, islands)
	seq := uint32(0)
	broadcast := func() {
		seq++
		for i := range kept {
			k := &kept[i]
			if seq > 2 && k.Find(seq-2) == nil {
				b.Fatalf("island %d: no baseline %d", i, seq-2)
			}
			t := k.NewTable()
			t.ID = seq
			t.Entries = append(t.Entries[:0], Entry{})
			k.Keep(t, seq)
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
