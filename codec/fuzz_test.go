package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/islandsync/islandsync/island"
)

func addGoldenSeeds(f *testing.F) {
	files := goldenDatagrams(f)
	for _, b := range files {
		f.Add(b)
	}
	for _, b := range encodeAll(f, Config{MaxDatagram: MinMaxDatagram}, coalescedFrames()) {
		f.Add(b)
	}
}

// FuzzDecodeDatagram: any input decodes or fails with a typed error; a
// successful decode re-encodes to the identical bytes (one canonical
// encoding), and every fragment satisfies the header invariants.
func FuzzDecodeDatagram(f *testing.F) {
	addGoldenSeeds(f)
	dec, _ := NewFloatDecoder(Config{MaxDatagram: MaxMaxDatagram})
	f.Fuzz(func(t *testing.T, b []byte) {
		frags, err := dec.Decode(b)
		if err != nil {
			if frags != nil || !isCodecError(err) {
				t.Fatalf("frags=%d err=%v", len(frags), err)
			}
			return
		}
		for _, fr := range frags {
			h := fr.Header
			if h.Index >= h.Count || len(fr.Raw) != MemberSize*int(h.MemberCount) ||
				uint64(h.FirstMember)+uint64(h.MemberCount) > uint64(h.TotalMembers) {
				t.Fatalf("invariant broken: %+v", h)
			}
			for _, m := range members(fr.Raw) {
				if !m.State.Finite() {
					t.Fatal("non-finite state decoded")
				}
			}
		}
		if re := reencode(frags); !bytes.Equal(re, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// FuzzEncodeRoundTrip builds a frame from fuzz bytes, encodes it under a
// fuzzed cap and checks that decoding gives back exactly the frame.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add(uint16(1200), uint16(3), []byte("seed"))
	f.Add(uint16(576), uint16(150), bytes.Repeat([]byte{0x3f, 0xf0, 1, 2}, 40))
	f.Add(uint16(65000), uint16(4096), []byte{0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, capBytes, count uint16, seed []byte) {
		cfg := Config{MaxDatagram: MinMaxDatagram + int(capBytes)%(MaxMaxDatagram-MinMaxDatagram+1)}
		n := 1 + int(count)%DefaultMaxMembers
		fr := island.Frame{Key: island.Key{Seq: uint32(len(seed))}, Members: make([]island.Member, n)}
		for i := range fr.Members {
			var w [8]byte
			for j := range w {
				if len(seed) > 0 {
					w[j] = seed[(i*8+j)%len(seed)]
				}
			}
			v := math.Float64frombits(binary.LittleEndian.Uint64(w[:]) ^ uint64(i))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = float64(i)
			}
			fr.Members[i] = island.Member{ID: island.MemberID{Stable: uint64(i)}, State: island.State{X: v, Y: -v, AngVel: v}}
		}
		enc, err := NewFloatEncoder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Add(&fr); err != nil {
			return // over the fragment cap for a small datagram: refused, nothing written
		}
		dec, _ := NewFloatDecoder(cfg)
		var got []island.Member
		for _, dg := range enc.Datagrams() {
			if len(dg) > cfg.MaxDatagram {
				t.Fatalf("datagram %d > cap %d", len(dg), cfg.MaxDatagram)
			}
			frags, err := dec.Decode(dg)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range frags {
				got = append(got, members(x.Raw)...)
			}
		}
		g := fr
		g.Members = got
		if !sameBits(&g, &fr) {
			t.Fatal("round trip differs")
		}
	})
}
