package codec

import (
	"fmt"
	"testing"

	"github.com/islandsync/islandsync/quant"
)

func BenchmarkEncodeChain150(b *testing.B) {
	f := chainFrame(150)
	enc, _ := NewFloatEncoder(Config{})
	var bytesOut int
	b.ReportAllocs()
	for b.Loop() {
		enc.Reset()
		if err := enc.Add(&f); err != nil {
			b.Fatal(err)
		}
		bytesOut = 0
		for _, dg := range enc.Datagrams() {
			bytesOut += len(dg)
		}
	}
	b.SetBytes(int64(bytesOut))
	b.ReportMetric(float64(bytesOut)/150, "wire-bytes/member")
	b.ReportMetric(float64(len(enc.Datagrams())), "datagrams/frame")
}

func BenchmarkDecodeChain150(b *testing.B) {
	dgs := encodeAll(b, Config{}, chainFrameSlice(150))
	dec, _ := NewFloatDecoder(Config{})
	total := 0
	for _, dg := range dgs {
		total += len(dg)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, dg := range dgs {
			if _, err := dec.Decode(dg); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(dgs)), "ns/datagram")
}

// BenchmarkAppendQuantRecords: 160 quantized members laid out as the
// records a fragmented frame is reassembled from, per member.
func BenchmarkAppendQuantRecords(b *testing.B) {
	f := testFrame3(40, 160, 2, quant.Chain, 1.3)
	var raw []byte
	b.ReportAllocs()
	for b.Loop() {
		raw = AppendQuantRecords(raw[:0], f.Members)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*160), "ns/member")
}

// BenchmarkFrameSum: the sums a receiver checks for one datagram of 300
// whole frames (a Fiedler-scene datagram carries about that many one-body
// islands): each frame's sum, then the datagram's over them; per frame.
// members=40 is a frame of a 40-body island, streamed.
func BenchmarkFrameSum(b *testing.B) {
	for _, n := range []int{1, 40} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			f := testFrame3(40, n, 2, quant.Rigid, 1.3)
			const frames = 300
			var sum DatagramSum
			var out uint32
			b.ReportAllocs()
			for b.Loop() {
				sum.Reset()
				for k := range frames {
					key := f.Key
					key.Island += uint32(k)
					sum.Add(FrameSum(f.Sender, key, 1234, f.Segment, f.Flags, f.Class, f.Members))
				}
				out += sum.Sum32()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
			_ = out
		})
	}
}
