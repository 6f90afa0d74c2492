package assembler

import (
	"bytes"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// testFrame builds a frame with n members whose states depend on seed.
func testFrame(sender island.SenderID, key island.Key, n int, seed float64) island.Frame {
	f := island.Frame{Sender: sender, Key: key, Time: island.Time(key.Seq) * 50_000, Members: make([]island.Member, n)}
	for i := range f.Members {
		fi := float64(i)
		f.Members[i] = island.Member{
			ID:    island.MemberID{Stable: uint64(i + 1)},
			State: island.State{X: fi + seed, Y: -fi, Angle: seed / 8, VX: 1, VY: fi / 2, AngVel: seed},
		}
	}
	return f
}

// fragmentsOf encodes f and returns its fragments as independent copies.
func fragmentsOf(t testing.TB, f island.Frame) []codec.Fragment {
	t.Helper()
	enc, err := codec.NewFloatEncoder(codec.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Add(&f); err != nil {
		t.Fatal(err)
	}
	dec, _ := codec.NewFloatDecoder(codec.Config{})
	var out []codec.Fragment
	for _, dg := range enc.Datagrams() {
		frags, err := dec.Decode(dg)
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range frags {
			out = append(out, cloneFragment(fr))
		}
	}
	return out
}

func cloneFragment(f codec.Fragment) codec.Fragment {
	f.Raw = bytes.Clone(f.Raw)
	return f
}

// craft builds a fragment by hand: members of f from first, count n,
// claiming total members and fragCount fragments, with f's digest.
func craft(f island.Frame, index, fragCount uint16, first, n int, total uint32) codec.Fragment {
	ms := append([]island.Member(nil), f.Members[first:first+n]...)
	var raw []byte
	for i := range ms {
		raw = codec.AppendMember(raw, &ms[i])
	}
	return codec.Fragment{
		Header: codec.FragmentHeader{
			Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags,
			TotalMembers: total, Index: index, Count: fragCount, FirstMember: uint32(first),
			MemberCount: uint16(n), Digest: digestOf(&f),
		},
		Raw: raw,
	}
}

func mustNew(t testing.TB, cfg Config) *Assembler {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sameFrame reports whether an emitted frame is exactly want: the same
// header fields and, byte for byte, the member records the sender encoded.
func sameFrame(out *Frame, want *island.Frame) bool {
	if out.Sender != want.Sender || out.Key != want.Key || out.Time != want.Time ||
		out.Segment != want.Segment || out.Flags != want.Flags || out.Digest != digestOf(want) {
		return false
	}
	var enc []byte
	for i := range want.Members {
		enc = codec.AppendMember(enc, &want.Members[i])
	}
	if !bytes.Equal(out.Members, enc) {
		return false
	}
	var dec island.Frame
	return out.Decode(&dec) && dec.Equal(want)
}

// digestOf is the digest the encoder puts in f's fragment headers.
func digestOf(f *island.Frame) uint64 {
	enc, _ := codec.NewFloatEncoder(codec.Config{MaxDatagram: codec.MaxMaxDatagram, MaxMembers: codec.MaxMaxMembers, MaxFragments: codec.MaxMaxFragments})
	if err := enc.Add(f); err != nil {
		panic(err)
	}
	dec, _ := codec.NewFloatDecoder(codec.Config{MaxDatagram: codec.MaxMaxDatagram, MaxMembers: codec.MaxMaxMembers, MaxFragments: codec.MaxMaxFragments})
	frags, err := dec.Decode(enc.Datagrams()[0])
	if err != nil {
		panic(err)
	}
	return frags[0].Header.Digest
}
