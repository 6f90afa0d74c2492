package assembler

import (
	"testing"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// quantFrame is a quantized frame of n members and its header fields: what
// a wire-3 receiver restores and hands to reassembly.
func quantFrame(n int) (codec.FragmentHeader, []baseline.Entry) {
	ents := make([]baseline.Entry, n)
	for i := range ents {
		ents[i] = baseline.Entry{ID: island.MemberID{Stable: uint64(100 + i), Generation: uint32(i % 3)},
			Record: baseline.Record{Q: quant.State{X: int64(i) * 513, Y: -int64(i) * 7, Angle: int64(i) - 40,
				VX: 1 << 40, VY: -(1 << 50), AngVel: int64(i) * int64(i)}}}
	}
	h := codec.FragmentHeader{Sender: 2, Key: island.Key{Island: 9, Epoch: 3, Topology: 4, Config: 5, Seq: 77},
		Time: 3_850_000, Segment: 6, Flags: island.FlagInitial, TotalMembers: uint32(n), Quantized: true, Class: quant.Chain}
	h.Digest = codec.FrameSum(h.Sender, h.Key, h.Time, h.Segment, h.Flags, h.Class, ents)
	return h, ents
}

// quantParts cuts the frame into fragments at the given member positions.
func quantParts(h codec.FragmentHeader, ents []baseline.Entry, cuts ...int) []codec.Fragment {
	bounds := append(append([]int{0}, cuts...), len(ents))
	var out []codec.Fragment
	for i := range len(bounds) - 1 {
		g := h
		g.Index, g.Count = uint16(i), uint16(len(bounds)-1)
		g.FirstMember, g.MemberCount = uint32(bounds[i]), uint16(bounds[i+1]-bounds[i])
		out = append(out, codec.Fragment{Header: g, Raw: codec.Records(codec.AppendQuantRecords(nil, ents[bounds[i]:bounds[i+1]]))})
	}
	return out
}

// TestQuantizedFrame: a quantized frame reassembles from its restored
// integers in any order, checked by its frame sum, and reads back as the
// very integers — and as the floats its class restores them to.
func TestQuantizedFrame(t *testing.T) {
	h, ents := quantFrame(40)
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}} {
		a := mustNew(t, Config{})
		parts := quantParts(h, ents, 13, 31)
		var f *Frame
		for j, i := range order {
			o, got := a.Push(int64(j), &parts[i])
			if want := map[bool]Outcome{true: Completed, false: Buffered}[j == len(order)-1]; o != want {
				t.Fatalf("order %v, part %d: %v, want %v", order, i, o, want)
			}
			f = got
		}
		if !f.Quantized || f.Class != quant.Chain || f.Digest != h.Digest || f.Fragments != 3 || f.Time != h.Time {
			t.Fatalf("frame %+v", f)
		}
		got := f.Entries(nil)
		sc := quant.Chain.Precision().Scales()
		for i := range ents {
			if got[i].ID != ents[i].ID || got[i].Q != ents[i].Q || got[i].Time != h.Time || got[i].Segment != h.Segment {
				t.Fatalf("member %d: %+v, want %+v", i, got[i], ents[i])
			}
			if st, ok := f.State(i); !ok || st != sc.State(ents[i].Q) || f.ID(i) != ents[i].ID {
				t.Fatalf("member %d restores to %+v", i, st)
			}
		}
		var dec island.Frame
		if !f.Decode(&dec) || dec.Members[5].State != sc.State(ents[5].Q) {
			t.Fatalf("Decode: %+v", dec.Members[5])
		}
	}
}

// TestQuantizedFrameRefused: the frame sum covers every integer and the
// class, a frame's parts must agree on its class and on being quantized, and
// a version-1 digest does not pass for a quantized frame.
func TestQuantizedFrameRefused(t *testing.T) {
	h, ents := quantFrame(40)
	cases := []struct {
		name string
		edit func(parts []codec.Fragment)
		want Outcome
	}{
		{"one integer changed", func(p []codec.Fragment) { p[1].Raw[20]++ }, RejectDigestMismatch},
		{"the class of every part changed", func(p []codec.Fragment) {
			for i := range p {
				p[i].Header.Class = quant.Rigid
			}
		}, RejectDigestMismatch},
		{"one part of another class", func(p []codec.Fragment) { p[1].Header.Class = quant.Loose }, RejectHeaderConflict},
		{"one part not quantized", func(p []codec.Fragment) { p[1].Header.Quantized = false }, RejectHeaderConflict},
		{"the floats' digest", func(p []codec.Fragment) {
			sc := quant.Chain.Precision().Scales()
			var raw []byte
			for _, e := range ents {
				raw = codec.AppendMember(raw, &island.Member{ID: e.ID, State: sc.State(e.Q)})
			}
			d := codec.Digest(&h, raw)
			for i := range p {
				p[i].Header.Digest = d
			}
		}, RejectDigestMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := mustNew(t, Config{})
			parts := quantParts(h, ents, 20)
			c.edit(parts)
			if o, _ := a.Push(0, &parts[0]); o != Buffered {
				t.Fatalf("first part: %v", o)
			}
			if o, f := a.Push(1, &parts[1]); o != c.want || f != nil {
				t.Fatalf("second part: %v, want %v", o, c.want)
			}
		})
	}
	// A quantized frame in one fragment completes at once, and a wrong sum
	// refuses it there too.
	a := mustNew(t, Config{})
	one := quantParts(h, ents)
	if o, f := a.Push(0, &one[0]); o != Completed || f.Entries(nil)[39].Q != ents[39].Q {
		t.Fatalf("whole: %v", o)
	}
	h.Key.Seq++
	one = quantParts(h, ents)
	if o, _ := a.Push(0, &one[0]); o != RejectDigestMismatch {
		t.Fatalf("whole with the sum of another seq: %v", o)
	}
}
