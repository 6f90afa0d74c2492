package store

import (
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/island"
)

// receivePath pre-builds wire frames of a 1000-member island and runs
// validate + commit + evaluate for each, as the game thread does.
func receivePath(tb testing.TB, n int) (func(), *world) {
	w := newWorld(tb, n, Config{})
	var frames []*assembler.Frame
	for k := 0; k < 64; k++ {
		frames = append(frames, wire(w.frame(island.Time(k*50_000), 0, func(i int) island.State {
			return island.State{X: float64(i + k), Y: 1, Angle: 0.1 * float64(k), VX: 1}
		})))
	}
	k := 0
	base := island.Time(0)
	return func() {
		f := frames[k%len(frames)]
		if k%len(frames) == 0 && k > 0 {
			base += 64 * 50_000
		}
		k++
		f.Time += base
		_, vf := w.v.Validate(f)
		f.Time -= base
		if vf == nil {
			tb.Fatal("validate failed")
		}
		w.s.Commit(int64(k), vf)
		w.s.Evaluate(7, vf.Time()-25_000, int64(k)*1000, 0)
	}, w
}

func TestReceivePathDoesNotAllocate(t *testing.T) {
	step, _ := receivePath(t, 1000)
	for range 16 {
		step()
	}
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("validate+commit+evaluate allocates %v per frame", n)
	}
}

// BenchmarkValidateCommitEvaluate1000: validate + commit + evaluate for a
// 1,000-member island, per frame; ns/member is the figure of merit.
func BenchmarkValidateCommitEvaluate1000(b *testing.B) {
	step, _ := receivePath(b, 1000)
	for range 16 {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/member")
}

// BenchmarkCommitInOrder: validate + commit of a one-body island whose
// history is full, its frames in order — a receiver's work per island of a
// broadcast — per frame.
func BenchmarkCommitInOrder(b *testing.B) {
	w := newWorld(b, 1, Config{})
	const n = 64
	frames := make([]*assembler.Frame, n)
	for k := range frames {
		frames[k] = wire(w.frame(island.Time(k*50_000), 0, func(int) island.State { return island.State{X: float64(k)} }))
	}
	k := 0
	step := func() {
		f := frames[k%n]
		f.Time = island.Time(k * 50_000)
		f.Key.Seq = uint32(k + 1)
		k++
		_, vf := w.v.Validate(f)
		if vf == nil {
			b.Fatal("validate failed")
		}
		if r := w.s.Commit(int64(k), vf); r != Committed {
			b.Fatalf("commit: %v", r)
		}
	}
	for range 2 * n {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
