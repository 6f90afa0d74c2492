package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// BenchmarkReceive is the receive path's cost per frame and per body:
// decode, reassemble, validate and commit every datagram of one 150-body
// frame (9 datagrams), then render the island. Encoding the next frame is
// outside the timer.
func BenchmarkReceive(b *testing.B) {
	const n = 150
	ids := make([]island.MemberID, n)
	for i := range ids {
		ids[i] = island.MemberID{Stable: uint64(i + 1)}
	}
	rx, _ := New(Config{})
	for _, m := range []codec.Message{welcome, codec.Announce{IDs: ids}, lease,
		codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: ids}} {
		if err := rx.Control(0, m); err != nil {
			b.Fatal(err)
		}
	}
	enc, _ := codec.NewEncoder(codec.Config{})
	f := island.Frame{Sender: 1, Key: island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1}, Members: make([]island.Member, n)}
	for i := range f.Members {
		f.Members[i] = island.Member{ID: ids[i], State: island.State{X: float64(i), Y: 1, VX: 1}}
	}
	var dgs [][]byte
	now := int64(0)
	next := func() {
		f.Key.Seq++
		f.Time += 50_000
		for i := range f.Members {
			f.Members[i].State.X += 0.05
		}
		enc.Reset()
		_ = enc.Add(&f)
		dgs = append(dgs[:0], enc.Datagrams()...)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		next()
		now += 50_000
		b.StartTimer()
		for _, d := range dgs {
			rx.Datagram(now, d)
		}
		rx.Render(now)
	}
	if rx.Stats().FramesCommitted == 0 {
		b.Fatal("nothing committed")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/body")
}
