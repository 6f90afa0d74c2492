package validator

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// wireFrame builds an assembled frame (members in wire form) from a frame.
func wireFrame(f island.Frame) *assembler.Frame {
	var raw []byte
	for i := range f.Members {
		raw = codec.AppendMember(raw, &f.Members[i])
	}
	return &assembler.Frame{Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags, Members: raw}
}

type fixture struct {
	v     *Validator
	man   island.Manifest
	frame island.Frame
}

// newFixture: island 7 owned by sender 3 at epoch 2, topology 5, config 1,
// n members 100.g0 … announced.
func newFixture(t testing.TB, n int) *fixture {
	reg := NewRegistry(0, 0)
	v := New(reg, Config{})
	man := island.Manifest{Island: 7, Topology: 5, Config: 1}
	f := island.Frame{Sender: 3, Key: island.Key{Island: 7, Epoch: 2, Topology: 5, Config: 1, Seq: 9}, Time: 1_000_000}
	for i := 0; i < n; i++ {
		id := island.MemberID{Stable: 100 + uint64(i)}
		man.Members = append(man.Members, id)
		if _, err := reg.Announce(id); err != nil {
			t.Fatal(err)
		}
		f.Members = append(f.Members, island.Member{ID: id, State: island.State{X: float64(i), Angle: 0.5}})
	}
	v.SetLease(island.Lease{Island: 7, Epoch: 2, Owner: 3})
	if err := v.SetManifest(man); err != nil {
		t.Fatal(err)
	}
	return &fixture{v: v, man: man, frame: f}
}

func TestValidateReasons(t *testing.T) {
	mod := func(f func(fx *fixture, fr *island.Frame)) func(*fixture) *assembler.Frame {
		return func(fx *fixture) *assembler.Frame {
			fr := fx.frame
			fr.Members = append([]island.Member(nil), fx.frame.Members...)
			f(fx, &fr)
			return wireFrame(fr)
		}
	}
	cases := []struct {
		name string
		make func(*fixture) *assembler.Frame
		want Reason
	}{
		{"ok", mod(func(*fixture, *island.Frame) {}), OK},
		{"ok out of manifest order", mod(func(_ *fixture, f *island.Frame) { f.Members[0], f.Members[3] = f.Members[3], f.Members[0] }), OK},
		{"no lease", mod(func(_ *fixture, f *island.Frame) { f.Key.Island = 8 }), NoLease},
		{"stale epoch", mod(func(_ *fixture, f *island.Frame) { f.Key.Epoch = 1 }), StaleEpoch},
		{"future epoch", mod(func(_ *fixture, f *island.Frame) { f.Key.Epoch = 3 }), FutureEpoch},
		{"wrong sender", mod(func(_ *fixture, f *island.Frame) { f.Sender = 4 }), WrongSender},
		{"no manifest", func(fx *fixture) *assembler.Frame {
			fx.v.SetLease(island.Lease{Island: 8, Epoch: 2, Owner: 3})
			fr := fx.frame
			fr.Key.Island = 8
			return wireFrame(fr)
		}, NoManifest},
		{"stale topology", mod(func(_ *fixture, f *island.Frame) { f.Key.Topology = 4 }), StaleTopology},
		{"future topology", mod(func(_ *fixture, f *island.Frame) { f.Key.Topology = 6 }), FutureTopology},
		{"stale config", mod(func(_ *fixture, f *island.Frame) { f.Key.Config = 0 }), StaleConfig},
		{"future config", mod(func(_ *fixture, f *island.Frame) { f.Key.Config = 2 }), FutureConfig},
		{"missing member", mod(func(_ *fixture, f *island.Frame) { f.Members = f.Members[:len(f.Members)-1] }), MemberCountMismatch},
		{"extra member", mod(func(_ *fixture, f *island.Frame) { f.Members = append(f.Members, f.Members[0]) }), MemberCountMismatch},
		{"unexpected member", mod(func(_ *fixture, f *island.Frame) { f.Members[2].ID.Stable = 999 }), UnexpectedMember},
		{"duplicate member", mod(func(_ *fixture, f *island.Frame) { f.Members[2].ID = f.Members[1].ID }), DuplicateMember},
		{"unknown identity", func(fx *fixture) *assembler.Frame {
			m := fx.man
			m.Members = append([]island.MemberID(nil), m.Members...)
			m.Members[4] = island.MemberID{Stable: 555}
			_ = fx.v.SetManifest(m)
			fr := fx.frame
			fr.Members = append([]island.Member(nil), fx.frame.Members...)
			fr.Members[4].ID = island.MemberID{Stable: 555}
			return wireFrame(fr)
		}, UnknownIdentity},
		{"tombstoned", func(fx *fixture) *assembler.Frame {
			fx.v.Registry().Destroy(fx.man.Members[5])
			return wireFrame(fx.frame)
		}, Tombstoned},
		{"non-finite", mod(func(_ *fixture, f *island.Frame) { f.Members[6].State.VY = math.Inf(1) }), NonFinite},
	}
	for _, c := range cases {
		for _, states := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/states=%v", c.name, states), func(t *testing.T) {
				fx := newFixture(t, 8)
				f := c.make(fx)
				var r Reason
				var vf *Validated
				if states {
					r, vf = validateStates(fx.v, f)
				} else {
					r, vf = fx.v.Validate(f)
				}
				checkValidated(t, fx, r, vf, c.want)
			})
		}
	}
	for r := Reason(0); r < NumReasons; r++ {
		if r.String() == "" || r.String() == "unknown" {
			t.Errorf("reason %d unnamed", r)
		}
	}
	fx := newFixture(t, 8)
	if r, vf := fx.v.ValidateStates(Header{Sender: 3, Key: fx.frame.Key}, fx.man.Members, make([]island.State, 7)); r != MemberCountMismatch || vf != nil {
		t.Fatalf("ids and states of different lengths: %v", r)
	}
}

// validateStates validates f through ValidateStates, its members decoded.
func validateStates(v *Validator, f *assembler.Frame) (Reason, *Validated) {
	ids := make([]island.MemberID, f.Len())
	sts := make([]island.State, f.Len())
	for i := range ids {
		m, _ := f.Members.Member(i)
		ids[i], sts[i] = m.ID, m.State
	}
	return v.ValidateStates(Header{Sender: f.Sender, Key: f.Key, Time: f.Time, Segment: f.Segment, Flags: f.Flags}, ids, sts)
}

// checkValidated checks one validation's outcome against want: the reason,
// its counter, and for OK a frame in manifest order with every member
// resolved once to a live handle and the fixture's states.
func checkValidated(t *testing.T, fx *fixture, r Reason, vf *Validated, want Reason) {
	t.Helper()
	if r != want {
		t.Fatalf("reason %v, want %v", r, want)
	}
	if (vf != nil) != (r == OK) {
		t.Fatalf("frame returned with %v", r)
	}
	if fx.v.Stats().Count(r) != 1 {
		t.Fatalf("counter %v = %d", r, fx.v.Stats().Count(r))
	}
	if vf == nil {
		return
	}
	// Manifest order, every member resolved once to a live handle.
	seen := map[Handle]bool{}
	for i := 0; i < vf.Len(); i++ {
		if vf.ID(i) != fx.man.Members[i] {
			t.Fatalf("member %d is %v, manifest says %v", i, vf.ID(i), fx.man.Members[i])
		}
		h := vf.Handle(i)
		if !fx.v.Registry().Valid(h) || seen[h] {
			t.Fatalf("member %d handle %v", i, h)
		}
		seen[h] = true
		if vf.State(i).X != float64(i) {
			t.Fatalf("member %d state %v", i, vf.State(i))
		}
	}
	if st, _ := fx.v.Stamp(7); vf.Stamp() != st {
		t.Fatal("stamp differs from the current one")
	}
	if vf.Time() != fx.frame.Time || vf.Key() != fx.frame.Key {
		t.Fatalf("time %d key %v", vf.Time(), vf.Key())
	}
}

func TestRegistryGenerations(t *testing.T) {
	reg := NewRegistry(4, 0)
	a0 := island.MemberID{Stable: 1, Generation: 0}
	h0, err := reg.Announce(a0)
	if err != nil || h0.Gen == 0 {
		t.Fatal(h0, err)
	}
	if h, _ := reg.Announce(a0); h != h0 {
		t.Fatal("re-announcing the live generation must be idempotent")
	}
	// A new generation replaces the old one in a fresh slot generation:
	// the old handle goes stale and never resolves again.
	a1 := island.MemberID{Stable: 1, Generation: 1}
	h1, err := reg.Announce(a1)
	if err != nil || h1 == h0 || reg.Valid(h0) || !reg.Valid(h1) {
		t.Fatalf("new generation: %v %v valid(old)=%v", h1, err, reg.Valid(h0))
	}
	if _, err := reg.Resolve(a0); !errors.Is(err, ErrTombstoned) {
		t.Fatalf("old generation resolves: %v", err)
	}
	if _, err := reg.Announce(a0); !errors.Is(err, ErrTombstoned) {
		t.Fatalf("late announcement of a destroyed generation revived it: %v", err)
	}
	// Destroy leaves a tombstone; the slot is reused with a bumped generation.
	reg.Destroy(a1)
	if reg.Valid(h1) {
		t.Fatal("destroyed handle still valid")
	}
	if _, err := reg.Resolve(a1); !errors.Is(err, ErrTombstoned) {
		t.Fatal(err)
	}
	b := island.MemberID{Stable: 2}
	hb, _ := reg.Announce(b)
	if hb.Slot == h1.Slot && hb.Gen == h1.Gen {
		t.Fatal("reused slot kept its generation")
	}
	if id, ok := reg.Identity(hb); !ok || id != b {
		t.Fatal("identity of handle")
	}
	if _, err := reg.Resolve(island.MemberID{Stable: 3}); !errors.Is(err, ErrUnknown) {
		t.Fatal("unannounced identity resolved")
	}
	// A newer generation that was not announced is unknown, not the old one.
	if _, err := reg.Resolve(island.MemberID{Stable: 2, Generation: 1}); !errors.Is(err, ErrUnknown) {
		t.Fatal(err)
	}
	for i := uint64(10); i < 13; i++ {
		_, _ = reg.Announce(island.MemberID{Stable: i})
	}
	if _, err := reg.Announce(island.MemberID{Stable: 99}); !errors.Is(err, ErrRegistryFull) {
		t.Fatalf("cap: %v", err)
	}
	if (Handle{}).Gen != 0 || reg.Valid(Handle{}) {
		t.Fatal("zero handle valid")
	}
}

// TestNewGenerationNeverInherits: after a member is destroyed and its id
// reused with a new generation, frames naming the old generation are refused
// and the new generation resolves to a different handle.
func TestNewGenerationNeverInherits(t *testing.T) {
	fx := newFixture(t, 4)
	r, vf := fx.v.Validate(wireFrame(fx.frame))
	if r != OK {
		t.Fatal(r)
	}
	oldHandle := vf.Handle(2)
	old := fx.man.Members[2]
	renewed := island.MemberID{Stable: old.Stable, Generation: old.Generation + 1}
	if _, err := fx.v.Registry().Announce(renewed); err != nil {
		t.Fatal(err)
	}
	if r, _ := fx.v.Validate(wireFrame(fx.frame)); r != Tombstoned {
		t.Fatalf("frame with the old generation: %v", r)
	}
	m := fx.man
	m.Topology++
	m.Members = append([]island.MemberID(nil), m.Members...)
	m.Members[2] = renewed
	_ = fx.v.SetManifest(m)
	f := fx.frame
	f.Key.Topology = m.Topology
	f.Members = append([]island.Member(nil), fx.frame.Members...)
	f.Members[2].ID = renewed
	r, vf = fx.v.Validate(wireFrame(f))
	if r != OK || vf.Handle(2) == oldHandle || fx.v.Registry().Valid(oldHandle) {
		t.Fatalf("%v: new %v old %v", r, vf.Handle(2), oldHandle)
	}
}

// TestValidatedIsAllOrNothing: a bad last member yields no frame, and the
// previous validated frame's copy is unaffected.
func TestValidatedIsAllOrNothing(t *testing.T) {
	fx := newFixture(t, 50)
	_, vf := fx.v.Validate(wireFrame(fx.frame))
	kept := vf.Clone()
	bad := fx.frame
	bad.Members = append([]island.Member(nil), fx.frame.Members...)
	bad.Members[49].ID.Stable = 12345
	if r, out := fx.v.Validate(wireFrame(bad)); r != UnexpectedMember || out != nil {
		t.Fatalf("%v %v", r, out != nil)
	}
	if kept.Len() != 50 || kept.ID(49) != fx.man.Members[49] {
		t.Fatal("clone changed")
	}
}

func TestValidateDoesNotAllocate(t *testing.T) {
	fx := newFixture(t, 1000)
	w := wireFrame(fx.frame)
	fx.v.Validate(w)
	if n := testing.AllocsPerRun(50, func() { fx.v.Validate(w) }); n != 0 {
		t.Fatalf("Validate allocates %v", n)
	}
	h := Header{Sender: 3, Key: fx.frame.Key}
	ids, sts := fx.man.Members, make([]island.State, 1000)
	if n := testing.AllocsPerRun(50, func() { fx.v.ValidateStates(h, ids, sts) }); n != 0 {
		t.Fatalf("ValidateStates allocates %v", n)
	}
	if r, _ := fx.v.ValidateStates(h, ids, sts); r != OK {
		t.Fatal(r)
	}
}

// TestIslandCaps: leases and manifests of new islands beyond the cap are
// refused; known islands can always be updated.
func TestIslandCaps(t *testing.T) {
	v := New(NewRegistry(0, 0), Config{MaxIslands: 2})
	man := func(id uint32) island.Manifest {
		return island.Manifest{Island: id, Topology: 1, Config: 1, Members: []island.MemberID{{Stable: uint64(id)}}}
	}
	for id := uint32(1); id <= 2; id++ {
		if err := v.SetLease(island.Lease{Island: id, Epoch: 1}); err != nil {
			t.Fatal(err)
		}
		if err := v.SetManifest(man(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.SetLease(island.Lease{Island: 3, Epoch: 1}); !errors.Is(err, ErrTableFull) {
		t.Fatalf("third lease: %v", err)
	}
	if err := v.SetManifest(man(3)); !errors.Is(err, ErrTableFull) {
		t.Fatalf("third manifest: %v", err)
	}
	if err := v.SetLease(island.Lease{Island: 2, Epoch: 5}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if l, _ := v.Lease(2); l.Epoch != 5 {
		t.Fatalf("lease not updated: %+v", l)
	}
	v.Forget(1)
	if err := v.SetManifest(man(3)); err != nil {
		t.Fatalf("after forget: %v", err)
	}
	if m, ok := v.Manifest(3); !ok || m.Island != 3 {
		t.Fatal("manifest not kept")
	}
	// Island 3 has a manifest and no lease: the lease Forget freed is its.
	if err := v.SetLease(island.Lease{Island: 3, Epoch: 1}); err != nil {
		t.Fatalf("lease after forget: %v", err)
	}
	if err := v.SetLease(island.Lease{Island: 4, Epoch: 1}); !errors.Is(err, ErrTableFull) {
		t.Fatalf("a lease beyond the cap after forget: %v", err)
	}
	v.Reset()
	for id := uint32(5); id <= 6; id++ {
		if err := v.SetLease(island.Lease{Island: id, Epoch: 1}); err != nil {
			t.Fatalf("lease after reset: %v", err)
		}
	}
}

// TestStampFollowsChanges: Stamp answers the island's current version right
// after a validation (the store's compare-and-commit asks it then) and after
// every change of lease or manifest that follows, never the version the last
// validation read.
func TestStampFollowsChanges(t *testing.T) {
	fx := newFixture(t, 3)
	check := func(what string, want Stamp, wantOK bool) {
		t.Helper()
		if got, ok := fx.v.Stamp(7); got != want || ok != wantOK {
			t.Errorf("%s: Stamp = %+v %v, want %+v %v", what, got, ok, want, wantOK)
		}
	}
	validate := func() Stamp {
		t.Helper()
		r, vf := fx.v.Validate(wireFrame(fx.frame))
		if r != OK {
			t.Fatalf("validate: %v", r)
		}
		return vf.Stamp()
	}
	st := validate()
	check("after a validation", st, true)
	fx.v.SetLease(island.Lease{Island: 7, Epoch: 3, Owner: 3})
	st.Epoch = 3
	check("after a new lease", st, true)
	fx.frame.Key.Epoch = 3
	st = validate()
	man := fx.man
	man.Topology = 6
	if err := fx.v.SetManifest(man); err != nil {
		t.Fatal(err)
	}
	st.Topology, st.Manifest = 6, man.Digest()
	check("after a new manifest", st, true)
	fx.frame.Key.Topology = 6
	validate()
	fx.v.Forget(7)
	check("after Forget", Stamp{}, false)
	fx.v.SetLease(island.Lease{Island: 7, Epoch: 3, Owner: 3})
	_ = fx.v.SetManifest(man)
	validate()
	fx.v.Reset()
	check("after Reset", Stamp{}, false)
}
