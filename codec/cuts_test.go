package codec

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// TestCutsShared: one encoder serving several observers in a broadcast
// cuts a big frame into fragments once for all who code it alike, and
// every observer's datagrams are byte for byte what an encoder of its own
// makes — whatever baseline, parity and order the observers have, and on
// the next broadcast, whose frame has the same members at another time.
func TestCutsShared(t *testing.T) {
	const isl, n = 40, 300
	class := quant.Chain
	cur := testFrame3(isl, n, 10, class, 1)
	baseA := frameTable(ptr(testFrame3(isl, n, 9, class, 0.9)), 450_000)
	baseB := frameTable(ptr(testFrame3(isl, n, 8, class, 0.8)), 400_000)
	type observer struct {
		base   *baseline.Table // nil: a keyframe
		parity int
	}
	obs := []observer{{nil, 0}, {baseA, 0}, {baseB, 0}, {nil, 2}, {baseA, 2}, {baseB, 0}, {nil, 0}, {baseA, 0}}
	add := func(e *Encoder, o observer, seq uint32, at island.Time) [][]byte {
		t.Helper()
		if err := e.SetParity(o.parity); err != nil {
			t.Fatal(err)
		}
		e.Begin(100, seq, at)
		var err error
		if f := cur; o.base == nil {
			err = e.AddKey(&f)
		} else {
			err = e.AddDelta(&f, &Ref{Base: o.base})
		}
		if err != nil {
			t.Fatal(err)
		}
		return cloneAll(e.Datagrams())
	}
	shared := newWireWorld(t, Config{MaxDatagram: 1200}).enc
	for round, at := range []island.Time{500_000, 550_000} {
		for i, o := range obs {
			got := add(shared, o, 10, at)
			alone := add(newWireWorld(t, Config{MaxDatagram: 1200}).enc, o, 10, at)
			if len(got) < 2 {
				t.Fatalf("round %d, observer %d: %d datagrams, want fragments", round, i, len(got))
			}
			if len(got) != len(alone) {
				t.Fatalf("round %d, observer %d: %d datagrams shared, %d alone", round, i, len(got), len(alone))
			}
			for k := range got {
				if !bytes.Equal(got[k], alone[k]) {
					t.Fatalf("round %d, observer %d (%s): datagram %d differs from an encoder of its own", round, i, observerName(o.base, o.parity), k)
				}
			}
		}
	}
}

func ptr(f Frame) *Frame { return &f }

func observerName(base *baseline.Table, parity int) string {
	if base == nil {
		return fmt.Sprintf("keyframe, parity %d", parity)
	}
	return fmt.Sprintf("delta on %d, parity %d", base.ID, parity)
}

// BenchmarkCutsShared: one broadcast of a 300-member chain keyframe to 8
// observers on one encoder, with and without parity: the frame is cut into
// fragments once, and each observer's datagrams are framed from the cut.
func BenchmarkCutsShared(b *testing.B) {
	f := testFrame3(40, 300, 4, quant.Chain, 2)
	for _, m := range []int{0, 2} {
		b.Run(fmt.Sprintf("parity=%d", m), func(b *testing.B) {
			enc := newWireWorld(b, Config{}).enc
			if err := enc.SetParity(m); err != nil {
				b.Fatal(err)
			}
			seq := uint32(4)
			b.ReportAllocs()
			for b.Loop() {
				seq++
				for range 8 {
					enc.Begin(4, seq, island.Time(seq)*50_000)
					g := f
					g.Key.Seq = seq
					if err := enc.AddKey(&g); err != nil {
						b.Fatal(err)
					}
					_ = enc.Datagrams()
				}
			}
		})
	}
}

// TestCutsBounded: the cuts one broadcast remembers stay within maxCuts
// frames and maxCutBytes of streams, however many big frames it carries,
// and a new broadcast lets them go.
func TestCutsBounded(t *testing.T) {
	enc := newWireWorld(t, Config{MaxDatagram: 576}).enc
	enc.Begin(1, 7, 350_000)
	for i := range maxCuts + 40 {
		f := testFrame3(uint32(100+i), 60, 7, quant.Chain, float64(i))
		if err := enc.AddKey(&f); err != nil {
			t.Fatal(err)
		}
	}
	if len(enc.cuts) != maxCuts || enc.cutBytes > maxCutBytes {
		t.Fatalf("%d cuts of %d bytes remembered, want %d of at most %d", len(enc.cuts), enc.cutBytes, maxCuts, maxCutBytes)
	}
	enc.Begin(1, 8, 400_000)
	if len(enc.cuts) != 0 || enc.cutBytes != 0 || len(enc.spare) > maxCuts {
		t.Fatalf("after the next Begin: %d cuts, %d bytes, %d spare", len(enc.cuts), enc.cutBytes, len(enc.spare))
	}
}
