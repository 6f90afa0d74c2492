package codec

import (
	"testing"

	"github.com/islandsync/islandsync/island"
)

// TestEncodeDecodeDoNotAllocate: once the encoder's and decoder's buffers have
// grown, encoding a 150-member frame and decoding its datagrams allocate nothing.
func TestEncodeDecodeDoNotAllocate(t *testing.T) {
	frames := append([]island.Frame{chainFrame(150)}, coalescedFrames()...)
	enc, _ := NewFloatEncoder(Config{})
	dec, _ := NewFloatDecoder(Config{})
	run := func() {
		enc.Reset()
		for i := range frames {
			if err := enc.Add(&frames[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, dg := range enc.Datagrams() {
			if _, err := dec.Decode(dg); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("steady-state encode+decode allocates %v times per run", n)
	}
	encOnly := func() {
		enc.Reset()
		_ = enc.Add(&frames[0])
		_ = enc.Datagrams()
	}
	if n := testing.AllocsPerRun(100, encOnly); n != 0 {
		t.Fatalf("encode allocates %v", n)
	}
	dgs := encodeAll(t, Config{}, frames[:1])
	decOnly := func() {
		for _, dg := range dgs {
			_, _ = dec.Decode(dg)
		}
	}
	if n := testing.AllocsPerRun(100, decOnly); n != 0 {
		t.Fatalf("decode allocates %v", n)
	}
}
