package codec

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/island"
)

// TestRoundTripProperty encodes random batches of frames under random caps and
// checks that decoding every datagram and regrouping fragments by frame gives
// back exactly the frames that went in, and that no datagram exceeds the cap.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(20261130, 1))
	caps := []int{MinMaxDatagram, 577, 900, DefaultMaxDatagram, 1500, 9000, MaxMaxDatagram}
	for iter := 0; iter < 300; iter++ {
		cfg := Config{MaxDatagram: caps[r.IntN(len(caps))]}
		if r.IntN(4) == 0 {
			cfg.MaxDatagram = MinMaxDatagram + r.IntN(MaxMaxDatagram-MinMaxDatagram+1)
		}
		frames := make([]island.Frame, 1+r.IntN(6))
		for i := range frames {
			n := 1 + r.IntN(8)
			if r.IntN(3) == 0 {
				n = 1 + r.IntN(1200)
			}
			frames[i] = randomFrame(r, n)
			frames[i].Key.Island = uint32(i) // distinct frames per batch
		}
		dgs := encodeAll(t, cfg, frames)
		dec, err := NewFloatDecoder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := make([][]island.Member, len(frames))
		for _, dg := range dgs {
			if len(dg) > cfg.MaxDatagram {
				t.Fatalf("datagram of %d bytes over cap %d", len(dg), cfg.MaxDatagram)
			}
			frags, err := dec.Decode(dg)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			for _, fr := range frags {
				k := fr.Header.Key.Island
				f := &frames[k]
				h := fr.Header
				if h.Sender != f.Sender || h.Key != f.Key || h.Time != f.Time || h.Segment != f.Segment || h.Flags != f.Flags ||
					int(h.TotalMembers) != len(f.Members) || int(h.FirstMember) != len(got[k]) || h.Digest != digestOf(f) {
					t.Fatalf("header mismatch: %+v", h)
				}
				got[k] = append(got[k], members(fr.Raw)...)
			}
		}
		for i := range frames {
			g := frames[i]
			g.Members = got[i]
			if !sameBits(&g, &frames[i]) {
				t.Fatalf("iter %d frame %d: round trip differs", iter, i)
			}
		}
	}
}

// sameBits compares members bit for bit, so -0 and +0 differ.
func sameBits(a, b *island.Frame) bool {
	if len(a.Members) != len(b.Members) {
		return false
	}
	for i := range a.Members {
		x, y := a.Members[i], b.Members[i]
		if x.ID != y.ID {
			return false
		}
		xs := [...]float64{x.State.X, x.State.Y, x.State.Angle, x.State.VX, x.State.VY, x.State.AngVel}
		ys := [...]float64{y.State.X, y.State.Y, y.State.Angle, y.State.VX, y.State.VY, y.State.AngVel}
		for j := range xs {
			if math.Float64bits(xs[j]) != math.Float64bits(ys[j]) {
				return false
			}
		}
	}
	return true
}

func TestFragmentSizesAreBalanced(t *testing.T) {
	enc, _ := NewFloatEncoder(Config{})
	if got := enc.FragmentCount(150); got != 9 {
		t.Fatalf("150 members need %d fragments, want 9", got)
	}
	f := chainFrame(150)
	_ = enc.Add(&f)
	dec, _ := NewFloatDecoder(Config{})
	lo, hi := 1<<30, 0
	for _, dg := range enc.Datagrams() {
		frags, _ := dec.Decode(dg)
		n := int(frags[0].Header.MemberCount)
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Errorf("fragment sizes range %d..%d", lo, hi)
	}
}

func TestEncoderRefuses(t *testing.T) {
	enc, _ := NewFloatEncoder(Config{MaxMembers: 100, MaxFragments: 3})
	cases := []struct {
		name string
		f    island.Frame
		want error
	}{
		{"empty", island.Frame{}, ErrEmptyFrame},
		{"nan", func() island.Frame { f := smallFrame(); f.Members[1].State.Angle = math.NaN(); return f }(), ErrNonFinite},
		{"inf", func() island.Frame { f := smallFrame(); f.Members[2].State.VX = math.Inf(-1); return f }(), ErrNonFinite},
		{"flags", func() island.Frame { f := smallFrame(); f.Flags = 0x80; return f }(), ErrMalformed},
		{"members", chainFrame(101), ErrLimit},
		{"fragments", chainFrame(100), ErrLimit}, // 100 members need 6 fragments at 1200 bytes
	}
	for _, c := range cases {
		enc.Reset()
		if err := enc.Add(&c.f); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if n := len(enc.Datagrams()); n != 0 {
			t.Errorf("%s: refused frame left %d datagrams", c.name, n)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{{MaxDatagram: 575}, {MaxDatagram: 65508}, {MaxMembers: -1}, {MaxMembers: MaxMaxMembers + 1},
		{MaxFragments: -1}, {MaxFragments: 0x10000}}
	for _, c := range bad {
		if _, err := NewFloatEncoder(c); err == nil {
			t.Errorf("NewFloatEncoder(%+v) accepted", c)
		}
		if _, err := NewFloatDecoder(c); err == nil {
			t.Errorf("NewFloatDecoder(%+v) accepted", c)
		}
	}
	c, err := Config{}.WithDefaults()
	if err != nil || c.MaxDatagram != 1200 || c.MaxMembers != 4096 || c.MaxFragments != 512 {
		t.Errorf("defaults = %+v, %v", c, err)
	}
	if got := c.MembersPerFragment(); got != 18 {
		t.Errorf("MembersPerFragment = %d, want 18", got)
	}
}

// TestMaxMembersAtMinimumCap: the default member cap fits the default
// fragment cap even at the smallest datagram size.
func TestMaxMembersAtMinimumCap(t *testing.T) {
	f := chainFrame(DefaultMaxMembers)
	dgs := encodeAll(t, Config{MaxDatagram: MinMaxDatagram}, []island.Frame{f})
	if len(dgs) != DefaultMaxFragments {
		t.Fatalf("%d datagrams, want %d", len(dgs), DefaultMaxFragments)
	}
}

// TestRecordsDecode: Records.ID, State and Member decode what AppendMember
// wrote, bit for bit — negative zero, subnormals and extremes included —
// and report a NaN or an infinity in any field as not finite.
func TestRecordsDecode(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 5e-324, -math.MaxFloat64, math.MaxFloat64, 1.5, -2.25e9}
	var raw Records
	var want []island.Member
	for k := range 12 {
		m := island.Member{ID: island.MemberID{Stable: uint64(k) << 40, Generation: uint32(k) * 7}}
		f := [6]*float64{&m.State.X, &m.State.Y, &m.State.Angle, &m.State.VX, &m.State.VY, &m.State.AngVel}
		for j, p := range f {
			*p = vals[(k+j)%len(vals)]
		}
		raw = AppendMember(raw, &m)
		want = append(want, m)
	}
	for i, w := range want {
		m, ok := raw.Member(i)
		st, ok2 := raw.State(i)
		if !ok || !ok2 || raw.ID(i) != w.ID || m.ID != w.ID || st != m.State ||
			math.Float64bits(m.State.Y) != math.Float64bits(w.State.Y) || math.Float64bits(m.State.X) != math.Float64bits(w.State.X) {
			t.Fatalf("record %d: %+v %v, %+v %v; want %+v", i, m, ok, st, ok2, w)
		}
	}
	for field := range 6 {
		for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			m := want[0]
			f := [6]*float64{&m.State.X, &m.State.Y, &m.State.Angle, &m.State.VX, &m.State.VY, &m.State.AngVel}
			*f[field] = bad
			r := Records(AppendMember(nil, &m))
			if _, ok := r.State(0); ok {
				t.Fatalf("field %d = %v decodes as finite", field, bad)
			}
			if _, ok := r.Member(0); ok {
				t.Fatalf("field %d = %v: Member says finite", field, bad)
			}
		}
	}
}
