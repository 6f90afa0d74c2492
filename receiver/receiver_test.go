package receiver

import (
	"errors"
	"testing"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// fixture is a three-member island 7 owned by sender 1.
var (
	ids      = []island.MemberID{{Stable: 10}, {Stable: 11}, {Stable: 12}}
	lease    = codec.Lease{Island: 7, Epoch: 1, Owner: 1}
	manifest = codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: ids}
	welcome  = codec.Welcome{Version: codec.ControlVersion, Timeline: 99, SendPeriod: 50_000, MaxDatagram: 1200}
)

func frame(seq uint32, t island.Time) island.Frame {
	f := island.Frame{Sender: 1, Key: island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1, Seq: seq}, Time: t}
	for i, id := range ids {
		f.Members = append(f.Members, island.Member{ID: id, State: island.State{X: float64(i) + float64(t)/1e6}})
	}
	return f
}

func datagrams(t testing.TB, fs ...island.Frame) [][]byte {
	t.Helper()
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	for i := range fs {
		if err := enc.Add(&fs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var out [][]byte
	for _, d := range enc.Datagrams() {
		out = append(out, append([]byte(nil), d...))
	}
	return out
}

// feed delivers frames first…last of the fixture island, one every 50 ms
// of authority and local time after now, and returns the last local time.
func feed(t testing.TB, rx *Receiver, now int64, first, last uint32) int64 {
	t.Helper()
	for seq := first; seq <= last; seq++ {
		now += 50_000
		for _, d := range datagrams(t, frame(seq, island.Time(seq)*50_000)) {
			rx.Datagram(now, d)
		}
	}
	return now
}

func mustControl(t testing.TB, rx *Receiver, now int64, ms ...codec.Message) {
	t.Helper()
	for _, m := range ms {
		if err := rx.Control(now, m); err != nil {
			t.Fatalf("%v: %v", m.Type(), err)
		}
	}
}

func newReady(t testing.TB) *Receiver {
	rx, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustControl(t, rx, 0, welcome, codec.Announce{IDs: ids}, lease, manifest)
	return rx
}

func TestControlOrderAndDirection(t *testing.T) {
	rx, _ := New(Config{})
	if err := rx.Control(0, lease); !errors.Is(err, ErrNoWelcome) {
		t.Fatalf("lease before welcome: %v", err)
	}
	mustControl(t, rx, 0, welcome)
	if err := rx.Control(0, codec.Subscribe{All: true}); !errors.Is(err, ErrDirection) {
		t.Fatalf("subscribe: %v", err)
	}
	if err := rx.Control(0, codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: []island.MemberID{{Stable: 1}, {Stable: 1}}}); !errors.Is(err, ErrRefused) {
		t.Fatalf("repeated member: %v", err)
	}
	st := rx.Stats()
	if st.Control.NoWelcome != 1 || st.Control.Direction != 1 || st.Control.Refused != 1 || st.Control.Applied[codec.TypeWelcome] != 1 {
		t.Fatalf("control stats %+v", st.Control)
	}
	var names []string
	st.Rejects(func(r string, n uint64) { names = append(names, r) })
	want := []string{"control:no-welcome", "control:wrong-direction", "control:refused"}
	if len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Fatalf("rejects %v", names)
	}
}

// TestFramesNeedControl: a frame that arrives before its island's control
// messages is rejected, and the next one after them commits.
func TestFramesNeedControl(t *testing.T) {
	rx, _ := New(Config{})
	mustControl(t, rx, 0, welcome)
	for _, d := range datagrams(t, frame(1, 0)) {
		rx.Datagram(1000, d)
	}
	if rx.Stats().FramesCommitted != 0 || rx.Stats().Validator.Count(1) != 1 { // NoLease
		t.Fatalf("committed before control: %+v", rx.Stats().Validator)
	}
	mustControl(t, rx, 2000, codec.Announce{IDs: ids}, lease, manifest)
	for _, d := range datagrams(t, frame(2, 50_000)) {
		rx.Datagram(3000, d)
	}
	if rx.Stats().FramesCommitted != 1 {
		t.Fatal("frame after control not committed")
	}
}

// TestRenderWholeIslands: after two frames the clock anchors and every
// island comes out whole, from one frame pair.
func TestRenderWholeIslands(t *testing.T) {
	rx := newReady(t)
	now := feed(t, rx, 0, 1, 6)
	views := rx.Render(now)
	if len(views) != 1 {
		t.Fatalf("%d views", len(views))
	}
	v := views[0]
	if v.Island != 7 || len(v.Poses) != 3 || !v.ValidAtR {
		t.Fatalf("view %+v", v)
	}
	for i, p := range v.Poses {
		if p.ID != ids[i] {
			t.Fatalf("pose %d is %v, want %v (manifest order)", i, p.ID, ids[i])
		}
		want := float64(i) + float64(v.SampleTime)/1e6
		if d := p.State.X - want; d > 1e-9 || d < -1e-9 {
			t.Fatalf("pose %d x=%v, want %v at r=%v", i, p.State.X, want, v.SampleTime)
		}
	}
}

// TestTimelines: a Welcome with a new timeline forgets everything and puts
// the clock back to Waiting; the same timeline again (a reconnect) keeps
// the clock and waits for the catch-up.
func TestTimelines(t *testing.T) {
	rx := newReady(t)
	now := feed(t, rx, 0, 1, 6)
	rx.Render(now)
	if rx.Clock().State == store.Waiting {
		t.Fatal("clock did not start")
	}
	mustControl(t, rx, now, welcome) // reconnect
	if len(rx.Islands()) != 0 || rx.Clock().State == store.Waiting || rx.Stats().Reconnects != 1 {
		t.Fatalf("reconnect: islands %v clock %v", rx.Islands(), rx.Clock().State)
	}
	mustControl(t, rx, now, codec.Announce{IDs: ids}, lease, manifest)
	w2 := welcome
	w2.Timeline = 100
	mustControl(t, rx, now, w2) // the authority restarted
	n := 0
	rx.Identities(func(island.MemberID) { n++ })
	if n != 0 || len(rx.Islands()) != 0 || rx.Stats().Timelines != 2 {
		t.Fatalf("restart kept %d identities, %d islands", n, len(rx.Islands()))
	}
	// Frames of the new timeline start again at small authority times.
	mustControl(t, rx, now, codec.Announce{IDs: ids}, lease, manifest)
	now = feed(t, rx, now, 1, 4)
	rx.Render(now)
	if r := rx.Clock().R; r > 1_000_000 {
		t.Fatalf("clock stayed on the old timeline: r=%d", r)
	}
}

// TestSteadyStateAllocs: receiving and rendering frames allocates nothing
// once the receiver is warm — views settled against the island's joints
// included.
func TestSteadyStateAllocs(t *testing.T) {
	rx := newReady(t)
	mustControl(t, rx, 0, physics)
	var dgs [][][]byte
	for seq := uint32(1); seq <= 400; seq++ {
		dgs = append(dgs, datagrams(t, frame(seq, island.Time(seq)*50_000)))
	}
	now, i := int64(0), 0
	var fb []byte
	step := func() {
		now += 50_000
		for _, d := range dgs[i] {
			rx.Datagram(now, d)
		}
		i++
		rx.Render(now)
		fb = rx.Feedback(fb[:0])
	}
	for range 50 {
		step()
	}
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Fatalf("%.1f allocs per frame", a)
	}
}

// TestMissingAndCut: an island announced without frames comes out missing
// and the view is not ready; a Cut control message ends the old segment at
// its time, so past it the island is missing too rather than extrapolated.
func TestMissingAndCut(t *testing.T) {
	rx := newReady(t)
	other := []island.MemberID{{Stable: 20}}
	mustControl(t, rx, 0, codec.Announce{IDs: other}, codec.Lease{Island: 20, Epoch: 1, Owner: 1},
		codec.Manifest{Island: 20, Topology: 1, Config: 1, Members: other})
	now := feed(t, rx, 0, 1, 6)
	views := rx.Render(now)
	if len(views) != 2 || views[1].Island != 20 || views[1].Mode != store.Empty || len(views[1].Poses) != 0 {
		t.Fatalf("views %+v", views)
	}
	if rx.ViewReady() {
		t.Fatal("a view with a missing island is ready")
	}
	if views[0].Mode != store.Interpolate || !views[0].ValidAtR {
		t.Fatalf("island 7: %v", views[0].Mode)
	}
	// The cut lands just ahead of r: island 7 goes missing once r passes it.
	r := views[0].R
	mustControl(t, rx, now, codec.Cut{Island: 7, Segment: 1, Time: r + 1})
	for i := 0; i < 20; i++ {
		now += 16_000
		views = rx.Render(now)
	}
	if views[0].Mode != store.Empty {
		t.Fatalf("past the cut island 7 is %v", views[0].Mode)
	}
}

// TestControlBytes: a run of messages applies in order as Control applies
// them — a refused one counted, the next applied; it stops at bytes that
// are no whole message and says how much it applied; and applying a
// message from bytes allocates nothing.
func TestControlBytes(t *testing.T) {
	rx, _ := New(Config{})
	var b []byte
	for _, m := range []codec.Message{welcome, codec.Announce{IDs: ids}, codec.Subscribe{All: true}, lease, manifest} {
		b = m.Append(b)
	}
	whole := len(b)
	win := codec.Forget{Island: 99}.Append(nil) // an island never announced: nothing to forget
	n, err := rx.ControlBytes(0, append(b, win[:6]...))
	if n != whole || !errors.Is(err, codec.ErrTruncated) {
		t.Fatalf("truncated tail: applied %d of %d, %v", n, whole, err)
	}
	st := rx.Stats().Control
	if st.Direction != 1 || st.Applied[codec.TypeWelcome] != 1 || st.Applied[codec.TypeAnnounce] != 1 ||
		st.Applied[codec.TypeLease] != 1 || st.Applied[codec.TypeManifest] != 1 {
		t.Fatalf("control stats %+v", st)
	}
	if n, err := rx.ControlBytes(0, []byte{1, 0, 0, 0, 0x7f}); n != 0 || !errors.Is(err, codec.ErrUnknownType) {
		t.Fatalf("unknown type: applied %d, %v", n, err)
	}
	apply := func() {
		if n, err := rx.ControlBytes(0, win); n != len(win) || err != nil {
			t.Fatalf("forget: applied %d, %v", n, err)
		}
	}
	apply()
	if a := testing.AllocsPerRun(100, apply); a != 0 {
		t.Fatalf("%v allocations per message", a)
	}
	if got := rx.Stats().Control.Applied[codec.TypeForget]; got != 102 {
		t.Fatalf("%d forgets applied", got)
	}
}

// TestMemberCapIsOne: the member cap set for frames is the cap of
// manifests and of reassembly too — a receiver built for 8192-member frames
// takes a 5,000-member Manifest, from Control and from ControlBytes alike,
// and reassembles and commits a 5,000-member frame.
func TestMemberCapIsOne(t *testing.T) {
	rx, err := New(Config{Codec: codec.Config{MaxMembers: 8192}})
	if err != nil {
		t.Fatal(err)
	}
	members := make([]island.MemberID, 5000)
	for i := range members {
		members[i] = island.MemberID{Stable: uint64(1000 + i)}
	}
	b := welcome.Append(nil)
	b = codec.Announce{IDs: members}.Append(b)
	b = codec.Lease{Island: 3, Epoch: 1, Owner: 1}.Append(b)
	b = codec.Manifest{Island: 3, Topology: 1, Config: 1, Members: members}.Append(b)
	if n, err := rx.ControlBytes(0, b); err != nil || n != len(b) {
		t.Fatalf("applied %d of %d bytes: %v", n, len(b), err)
	}
	if _, ok := rx.val.Manifest(3); !ok {
		t.Fatal("the 5,000-member manifest was not applied")
	}
	enc, _ := codec.NewEncoder(codec.Config{MaxMembers: 8192})
	f := codec.Frame{Sender: 1, Key: island.Key{Island: 3, Epoch: 1, Topology: 1, Config: 1, Seq: 1}}
	for i, id := range members {
		f.Members = append(f.Members, baseline.Entry{ID: id, Record: baseline.Record{Q: quant.State{X: int64(i * 97 % 1013)}}})
	}
	enc.Begin(1, 1, 50_000)
	if err := enc.AddKey(&f); err != nil {
		t.Fatal(err)
	}
	dgs := enc.Datagrams()
	for _, d := range dgs {
		rx.Datagram(1, d)
	}
	if st := rx.Stats(); len(dgs) < 2 || st.FramesCommitted != 1 {
		t.Fatalf("%d datagrams: %d frames committed; rejects %v", len(dgs), st.FramesCommitted, st.Assembler.Outcomes)
	}
}

// TestClockTotalsSurviveWelcome: the clock's totals count from the
// receiver's start. Time spent waiting before the first Welcome stays
// counted when the Welcome's send period brings a new clock (an observer's
// metrics are counters: they must never go back).
func TestClockTotalsSurviveWelcome(t *testing.T) {
	rx, _ := New(Config{})
	rx.Render(0)
	rx.Render(200_000) // 200 ms waiting before any Welcome
	before := rx.Stats().Clock
	if before.WaitingTime <= 0 {
		t.Fatalf("waited %d µs before the Welcome", before.WaitingTime)
	}
	if err := rx.Control(200_000, welcome); err != nil {
		t.Fatal(err)
	}
	if got := rx.Stats().Clock.WaitingTime; got != before.WaitingTime {
		t.Fatalf("waiting time %d µs after the Welcome, %d before", got, before.WaitingTime)
	}
	rx.Render(300_000) // the new clock's first reading
	rx.Render(400_000)
	if got := rx.Clock().WaitingTime; got < before.WaitingTime+100_000 {
		t.Fatalf("waiting time %d µs 200 ms later, %d before the Welcome", got, before.WaitingTime)
	}
}

// TestFinal: a Final — the last state of an island under its lease, sent
// on the reliable stream ahead of the lease that hands it on — commits as
// a plain frame of the lease and manifest held, once; one of an island
// that is not live is refused, and nothing commits.
func TestFinal(t *testing.T) {
	var commits []island.Key
	var flags []island.Flags
	rx, err := New(Config{OnCommit: func(f *validator.Validated) {
		commits, flags = append(commits, f.Key()), append(flags, f.Flags())
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := frame(3, 150_000)
	final := codec.Final{Island: 7, Time: f.Time, Members: f.Members}
	if err := rx.Control(0, welcome); err != nil {
		t.Fatal(err)
	}
	if err := rx.Control(0, final); !errors.Is(err, ErrRefused) || len(commits) != 0 {
		t.Fatalf("a Final before the island's lease and manifest: err %v, %d commits", err, len(commits))
	}
	for _, m := range []codec.Message{lease, codec.Announce{IDs: ids}, manifest} {
		if err := rx.Control(0, m); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := rx.Control(0, final); err != nil {
			t.Fatal(err)
		}
	}
	want := island.Key{Island: 7, Epoch: lease.Epoch, Topology: manifest.Topology, Config: manifest.Config}
	if len(commits) != 1 || commits[0] != want || flags[0] != 0 {
		t.Fatalf("two Finals committed %v with flags %v, want once %v with none", commits, flags, want)
	}
}
