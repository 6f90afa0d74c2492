package assembler

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// datagramsOf encodes f and returns copies of its datagrams.
func datagramsOf(t testing.TB, f island.Frame) [][]byte {
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	if err := enc.Add(&f); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range enc.Datagrams() {
		out = append(out, bytes.Clone(d))
	}
	return out
}

// seqStream pre-encodes n consecutive frames of one stream (150 members,
// 9 datagrams each) so the benchmark loop only decodes and pushes. Sequence
// numbers step by 2^32/n, so replaying the list wraps around and stays newer.
func seqStream(t testing.TB, n int) [][][]byte {
	out := make([][][]byte, n)
	step := uint32((1 << 32) / uint64(n))
	for i := range out {
		out[i] = datagramsOf(t, testFrame(1, keySeq(uint32(i)*step), 150, float64(i)))
	}
	return out
}

// TestSteadyStateDoesNotAllocate: once warmed up, decoding and pushing the
// datagrams of 150-member frames (9 fragments each) allocates nothing.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	frames := seqStream(t, 64)
	dec, _ := codec.NewFloatDecoder(codec.Config{})
	a := mustNew(t, Config{})
	i := 0
	var now int64
	run := func() {
		dgs := frames[i%len(frames)]
		i++
		now += 40_000
		for j := len(dgs) - 1; j >= 0; j-- { // reversed order exercises buffering
			frags, err := dec.Decode(dgs[j])
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := a.Push(now, &frags[0]); o != Buffered && o != Completed {
				t.Fatalf("outcome %v", o)
			}
		}
	}
	// Warm-up grows every buffer, free list and map.
	for range 8 {
		run()
	}
	if n := testing.AllocsPerRun(40, run); n != 0 {
		t.Fatalf("steady state allocates %v per frame", n)
	}
	// 8 warm-up frames, AllocsPerRun's own warm-up run, then 40 measured.
	if got := a.Stats().Count(Completed); got != 49 {
		t.Fatalf("completed %d frames, want 49", got)
	}
}

func benchDatagrams(b *testing.B, order func(r *rand.Rand, dgs [][]byte) [][]byte) {
	frames := seqStream(b, 256)
	dec, _ := codec.NewFloatDecoder(codec.Config{})
	r := rand.New(rand.NewPCG(1, 2))
	schedule := make([][][]byte, len(frames))
	nfrag := 0
	for i, dgs := range frames {
		schedule[i] = order(r, dgs)
		nfrag += len(schedule[i])
	}
	b.ReportAllocs()
	var now int64
	frameN := 0
	pushes := 0
	a := mustNew(b, Config{})
	for b.Loop() {
		dgs := schedule[frameN%len(schedule)]
		frameN++
		now += 40_000
		for _, dg := range dgs {
			frags, err := dec.Decode(dg)
			if err != nil {
				b.Fatal(err)
			}
			a.Push(now, &frags[0])
			pushes++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pushes), "ns/fragment")
	b.ReportMetric(float64(pushes)/b.Elapsed().Seconds(), "fragments/s")
}

// BenchmarkAssemble150 measures decode + push per 150-member frame (9
// fragments of ~1087 bytes); ns/fragment is the figure to hold under 500.
func BenchmarkAssemble150(b *testing.B) {
	b.Run("in-order", func(b *testing.B) {
		benchDatagrams(b, func(_ *rand.Rand, d [][]byte) [][]byte { return d })
	})
	b.Run("reversed", func(b *testing.B) {
		benchDatagrams(b, func(_ *rand.Rand, d [][]byte) [][]byte {
			out := make([][]byte, len(d))
			for i := range d {
				out[len(d)-1-i] = d[i]
			}
			return out
		})
	})
	b.Run("dup10pct", func(b *testing.B) {
		benchDatagrams(b, func(r *rand.Rand, d [][]byte) [][]byte {
			var out [][]byte
			for _, x := range d {
				out = append(out, x)
				if r.IntN(10) == 0 {
					out = append(out, x)
				}
			}
			return out
		})
	})
}

// BenchmarkHostileFlood measures pushes of crafted hostile fragments.
func BenchmarkHostileFlood(b *testing.B) {
	legit := fragmentsOf(b, testFrame(1, key1, 150, 0))
	fl := newFlooder(3, legit)
	a := mustNew(b, Config{})
	var now int64
	b.ReportAllocs()
	for b.Loop() {
		now += 10
		a.Push(now, fl.next())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/fragment")
}
