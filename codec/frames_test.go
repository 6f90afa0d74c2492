package codec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/islandsync/islandsync/island"
)

// Golden frames use only exactly representable values built with single
// operations, so no platform (with or without fused multiply-add) can round
// them differently.

func smallFrame() island.Frame {
	return island.Frame{
		Sender:  1,
		Key:     island.Key{Island: 7, Epoch: 1, Topology: 3, Config: 2, Seq: 100},
		Time:    1_500_000,
		Segment: 0,
		Flags:   island.FlagInitial,
		Members: []island.Member{
			{ID: island.MemberID{Stable: 10, Generation: 0}, State: island.State{X: 1, Y: 2, Angle: 0.5, VX: -1, VY: 0, AngVel: 0.25}},
			{ID: island.MemberID{Stable: 11, Generation: 1}, State: island.State{X: 1.5, Y: 2, Angle: -0.5, VX: 0, VY: -9.8125, AngVel: 0}},
			{ID: island.MemberID{Stable: 12, Generation: 0}, State: island.State{X: 2, Y: 2.25, Angle: 0, VX: 0.125, VY: 0, AngVel: -3}},
		},
	}
}

func chainFrame(n int) island.Frame {
	f := island.Frame{
		Sender:  2,
		Key:     island.Key{Island: 42, Epoch: 3, Topology: 9, Config: 4, Seq: 0x00010000},
		Time:    12_345_678,
		Members: make([]island.Member, n),
	}
	for i := range f.Members {
		fi := float64(i)
		f.Members[i] = island.Member{
			ID: island.MemberID{Stable: 1000 + uint64(i), Generation: uint32(i % 3)},
			State: island.State{
				X: fi / 4, Y: -fi / 8, Angle: fi / 64,
				VX: 1.5, VY: -fi / 16, AngVel: fi / 32,
			},
		}
	}
	return f
}

func coalescedFrames() []island.Frame {
	fs := make([]island.Frame, 5)
	for k := range fs {
		n := 2 + k%3
		f := island.Frame{
			Sender:  3,
			Key:     island.Key{Island: 100 + uint32(k), Epoch: 1, Topology: 1, Config: 1, Seq: 55},
			Time:    2_000_000,
			Segment: uint32(k),
			Members: make([]island.Member, n),
		}
		for i := range f.Members {
			f.Members[i] = island.Member{
				ID:    island.MemberID{Stable: uint64(500 + 10*k + i)},
				State: island.State{X: float64(k), Y: float64(i), Angle: float64(k) / 2, VX: float64(i) / 4},
			}
		}
		fs[k] = f
	}
	return fs
}

func edgeFrame() island.Frame {
	negZero := math.Copysign(0, -1)
	return island.Frame{
		Sender:  0xFFFFFFFF,
		Key:     island.Key{Island: 0xFFFFFFFF, Epoch: 0xFFFFFFFF, Topology: 0xFFFFFFFF, Config: 0xFFFFFFFF, Seq: 0xFFFFFFFF},
		Time:    -1,
		Segment: 0xFFFFFFFF,
		Flags:   island.FlagInitial | island.FlagReleasing,
		Members: []island.Member{
			{ID: island.MemberID{Stable: math.MaxUint64, Generation: math.MaxUint32},
				State: island.State{X: negZero, Y: math.SmallestNonzeroFloat64, Angle: -math.SmallestNonzeroFloat64,
					VX: math.MaxFloat64, VY: -math.MaxFloat64, AngVel: math.Float64frombits(0x000FFFFFFFFFFFFF)}},
			{ID: island.MemberID{Stable: 0, Generation: 0},
				State: island.State{X: 1e300, Y: -1e-300, Angle: math.Pi, VX: 0x1p-1022, VY: negZero, AngVel: 0}},
		},
	}
}

// randomFrame builds a frame of n members with random but finite bit patterns.
func randomFrame(r *rand.Rand, n int) island.Frame {
	f := island.Frame{
		Sender:  island.SenderID(r.Uint32()),
		Key:     island.Key{Island: r.Uint32(), Epoch: r.Uint32(), Topology: r.Uint32(), Config: r.Uint32(), Seq: r.Uint32()},
		Time:    island.Time(r.Int64()),
		Segment: r.Uint32(),
		Flags:   island.Flags(r.IntN(4)),
		Members: make([]island.Member, n),
	}
	for i := range f.Members {
		f.Members[i] = island.Member{
			ID: island.MemberID{Stable: r.Uint64(), Generation: r.Uint32()},
			State: island.State{X: randFloat(r), Y: randFloat(r), Angle: randFloat(r),
				VX: randFloat(r), VY: randFloat(r), AngVel: randFloat(r)},
		}
	}
	return f
}

func randFloat(r *rand.Rand) float64 {
	for {
		v := math.Float64frombits(r.Uint64())
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v
		}
	}
}

// describe renders decoded fragments as the human-readable golden companion.
func describe(name string, dg []byte, frags []Fragment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %d bytes, %d record(s), format version %d\n", name, len(dg), len(frags), Version)
	for i, f := range frags {
		h := f.Header
		fmt.Fprintf(&b, "record %d: sender=%v key=%v time=%dus segment=%d flags=%#02x\n", i, h.Sender, h.Key, h.Time, h.Segment, uint8(h.Flags))
		fmt.Fprintf(&b, "  fragment %d of %d, members %d..%d of %d, digest=%#016x\n",
			h.Index, h.Count, h.FirstMember, uint64(h.FirstMember)+uint64(h.MemberCount)-1, h.TotalMembers, h.Digest)
		for j, m := range members(f.Raw) {
			s := m.State
			fmt.Fprintf(&b, "  member %d id=%v", int(h.FirstMember)+j, m.ID)
			for _, v := range [...]struct {
				n string
				f float64
			}{{"x", s.X}, {"y", s.Y}, {"angle", s.Angle}, {"vx", s.VX}, {"vy", s.VY}, {"angvel", s.AngVel}} {
				fmt.Fprintf(&b, " %s=%s", v.n, strconv.FormatFloat(v.f, 'g', -1, 64))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func chainFrameSlice(n int) []island.Frame { return []island.Frame{chainFrame(n)} }

// digestOf computes f's digest the long way: header prefix and records in
// one buffer, hashed whole.
func digestOf(f *island.Frame) uint64 {
	h := FragmentHeader{Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags, TotalMembers: uint32(len(f.Members))}
	b := h.Append(nil)[:digestPrefixSize]
	for i := range f.Members {
		b = AppendMember(b, &f.Members[i])
	}
	return xxhash.Sum64(b)
}

// members decodes every record of r.
func members(r Records) []island.Member {
	var out []island.Member
	for i := range r.Len() {
		m, _ := r.Member(i)
		out = append(out, m)
	}
	return out
}
