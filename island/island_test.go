package island

import (
	"errors"
	"math"
	"testing"
)

func TestKeyIsMapKeyAndFormats(t *testing.T) {
	k := Key{Island: 7, Epoch: 2, Topology: 3, Config: 4, Seq: 0xFFFFFFFF}
	m := map[Key]int{k: 1}
	k2 := k
	if m[k2] != 1 {
		t.Fatal("equal keys must hit the same map entry")
	}
	k2.Seq = 0
	if _, ok := m[k2]; ok {
		t.Fatal("different seq must be a different key")
	}
	want := "i7/e2/t3/c4#4294967295"
	if got := k.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := string(k.AppendTo(nil)); got != want {
		t.Errorf("AppendTo = %q, want %q", got, want)
	}
	if got := k.Stream(); got != (Stream{7, 2, 3, 4}) {
		t.Errorf("Stream() = %v", got)
	}
	if got := k.Stream().String(); got != "i7/e2/t3/c4" {
		t.Errorf("Stream().String() = %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = k.AppendTo(make([]byte, 0, 64)[:0]) }); n > 1 {
		t.Errorf("AppendTo allocates %v times", n)
	}
}

func TestStateFinite(t *testing.T) {
	bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	for field := 0; field < 6; field++ {
		for _, v := range bad {
			var s State
			p := [...]*float64{&s.X, &s.Y, &s.Angle, &s.VX, &s.VY, &s.AngVel}
			*p[field] = v
			if s.Finite() || !errors.Is(s.Validate(), ErrNonFinite) {
				t.Errorf("field %d = %v accepted", field, v)
			}
		}
	}
	ok := State{X: math.Copysign(0, -1), Y: math.SmallestNonzeroFloat64, Angle: math.MaxFloat64, VX: -math.MaxFloat64}
	if !ok.Finite() || ok.Validate() != nil {
		t.Error("finite extremes rejected")
	}
}

func TestFrameValidate(t *testing.T) {
	mk := func(n int) Frame {
		f := Frame{Members: make([]Member, n)}
		for i := range f.Members {
			f.Members[i].ID = MemberID{Stable: uint64(i + 1)}
		}
		return f
	}
	f := mk(0)
	if !errors.Is(f.Validate(), ErrEmptyFrame) {
		t.Error("empty frame accepted")
	}
	for _, n := range []int{2, 64, 65, 300} {
		f = mk(n)
		if err := f.Validate(); err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
		f.Members[n-1].ID = f.Members[0].ID
		if !errors.Is(f.Validate(), ErrDuplicateMember) {
			t.Errorf("n=%d: duplicate accepted", n)
		}
	}
	f = mk(3)
	f.Members[1].State.VY = math.NaN()
	if !errors.Is(f.Validate(), ErrNonFinite) {
		t.Error("NaN accepted")
	}
	f = mk(3)
	f.Flags = 1 << 5
	if !errors.Is(f.Validate(), ErrUnknownFlags) {
		t.Error("unknown flags accepted")
	}
}

func TestManifestDigest(t *testing.T) {
	m := Manifest{Island: 1, Topology: 2, Config: 3, Members: []MemberID{{1, 0}, {2, 0}, {3, 1}}}
	d := m.Digest()
	same := Manifest{Island: 1, Topology: 2, Config: 3, Members: []MemberID{{1, 0}, {2, 0}, {3, 1}}}
	if same.Digest() != d {
		t.Fatal("digest not deterministic")
	}
	variants := []Manifest{
		{Island: 9, Topology: 2, Config: 3, Members: m.Members},
		{Island: 1, Topology: 9, Config: 3, Members: m.Members},
		{Island: 1, Topology: 2, Config: 9, Members: m.Members},
		{Island: 1, Topology: 2, Config: 3, Members: []MemberID{{2, 0}, {1, 0}, {3, 1}}},
		{Island: 1, Topology: 2, Config: 3, Members: []MemberID{{1, 0}, {2, 0}, {3, 2}}},
		{Island: 1, Topology: 2, Config: 3, Members: []MemberID{{1, 0}, {2, 0}}},
	}
	for i, v := range variants {
		if v.Digest() == d {
			t.Errorf("variant %d has the same digest", i)
		}
	}
	// Pinned value: the digest is part of the cross-platform contract.
	const want = uint64(0xd857e789d7b16619)
	if got := d; got != want {
		t.Errorf("Digest = %#x, want %#x", got, want)
	}
	if m.Index(MemberID{3, 1}) != 2 || m.Index(MemberID{3, 0}) != -1 {
		t.Error("Index wrong")
	}
	if n := testing.AllocsPerRun(100, func() { _ = m.Digest() }); n != 0 {
		t.Errorf("Digest allocates %v", n)
	}
}
