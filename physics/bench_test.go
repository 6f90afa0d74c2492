package physics

import (
	"fmt"
	"testing"

	"github.com/islandsync/islandsync/codec"
)

// benchWorld builds n bodies: chains of at most 150 links hanging from
// static pivots, swinging.
func benchWorld(n int) *World {
	w := NewWorld(60)
	for made := 0; made < n; {
		k := min(150, n-made)
		ids, _ := chain(w, k, float64(made))
		for i, id := range ids {
			w.Body(id).B.SetVelocity(0, float64(i%7)-3)
		}
		made += k
	}
	for range 30 {
		w.Step()
	}
	return w
}

// BenchmarkServer measures, per world size, one broadcast (sample + encode
// of every island) and one simulation step of the same world, so the
// broadcast cost can be read as a fraction of a step from one run.
func BenchmarkServer(b *testing.B) {
	for _, n := range []int{150, 1000} {
		w := benchWorld(n)
		s := NewSampler(w, 20)
		enc, _ := codec.NewFloatEncoder(codec.Config{})
		b.Run(fmt.Sprintf("bodies=%d/broadcast", n), func(b *testing.B) {
			b.ReportAllocs()
			dgs, bytes := 0, 0
			for b.Loop() {
				enc.Reset()
				for _, is := range w.Islands() {
					if err := enc.Add(s.Capture(is)); err != nil {
						b.Fatal(err)
					}
				}
				dgs, bytes = 0, 0
				for _, d := range enc.Datagrams() {
					dgs++
					bytes += len(d)
				}
			}
			b.ReportMetric(float64(dgs), "datagrams")
			b.ReportMetric(float64(bytes)/float64(n), "wire-bytes/body")
		})
		b.Run(fmt.Sprintf("bodies=%d/step", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.Step()
			}
		})
	}
}
