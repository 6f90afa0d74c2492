package receiver

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
)

// physics describes the fixture island as a free chain of three 1 m links
// end to end along x, each pinned to the one before — exactly how frame()
// lays the members out (at x = 0, 1, 2 plus the time in seconds).
var physics = codec.Physics{Island: 7, Topology: 1, Config: 1, Step: 4_167, Iterations: 10, Gravity: [2]float64{0, -9.8}, Damping: 1,
	Bodies: []codec.BodyMass{{Mass: 1, Moment: 0.1}, {Mass: 1, Moment: 0.1}, {Mass: 1, Moment: 0.1}},
	Joints: []codec.JointSpec{
		{Kind: codec.JointPivot, A: 0, B: 1, AnchorA: [2]float64{0.5, 0}, AnchorB: [2]float64{-0.5, 0}},
		{Kind: codec.JointPivot, A: 1, B: 2, AnchorA: [2]float64{0.5, 0}, AnchorB: [2]float64{-0.5, 0}},
	}}

// TestPhysicsControl: a Physics message builds the island's simulation
// only when it describes the island's manifest; it is capped, forgotten
// with the island and dropped with the timeline.
func TestPhysicsControl(t *testing.T) {
	rx, _ := New(Config{MaxSimBodies: 5})
	mustControl(t, rx, 0, welcome, codec.Announce{IDs: ids}, lease)
	if err := rx.Control(0, physics); !errors.Is(err, ErrRefused) {
		t.Fatalf("physics before its manifest: %v", err)
	}
	mustControl(t, rx, 0, manifest)
	other := physics
	other.Topology = 2
	if err := rx.Control(0, other); !errors.Is(err, ErrRefused) {
		t.Fatalf("physics of another topology: %v", err)
	}
	short := physics
	short.Bodies = short.Bodies[:2]
	short.Joints = short.Joints[:1]
	if err := rx.Control(0, short); !errors.Is(err, ErrRefused) {
		t.Fatalf("physics of two members: %v", err)
	}
	mustControl(t, rx, 0, physics, physics) // a catch-up repeats it
	if n := rx.Stats().SimBodies; n != 3 {
		t.Fatalf("%d bodies simulated", n)
	}
	// A second description (a new config) keeps the first alongside: 6
	// bodies, past the cap of 5.
	m2, p2 := manifest, physics
	m2.Config, p2.Config = 2, 2
	mustControl(t, rx, 0, m2)
	if err := rx.Control(0, p2); !errors.Is(err, ErrSimFull) {
		t.Fatalf("over the body cap: %v", err)
	}
	mustControl(t, rx, 0, codec.Forget{Island: 7})
	if n := rx.Stats().SimBodies; n != 0 {
		t.Fatalf("%d bodies simulated after the island was forgotten", n)
	}
	mustControl(t, rx, 0, lease, manifest, physics)
	mustControl(t, rx, 0, codec.Welcome{Version: codec.ControlVersion, Timeline: 100, SendPeriod: 50_000, MaxDatagram: 1200})
	if n := rx.Stats().SimBodies; n != 0 {
		t.Fatalf("%d bodies simulated on a new timeline", n)
	}
	straight, _ := New(Config{StraightExtrapolation: true})
	mustControl(t, straight, 0, welcome, codec.Announce{IDs: ids}, lease, manifest, physics)
	if n := straight.Stats().SimBodies; n != 0 {
		t.Fatalf("straight extrapolation simulated %d bodies", n)
	}
}

// TestPhysicsRefControl: a PhysicsRef builds the island's simulation from
// a description the connection sent before — even one whose own Physics
// was refused (the server counts on the table, not on the island) — and
// OnControl is handed the Physics it stood for; a digest not held is
// refused and changes nothing, and a Welcome (a new connection) empties
// the table.
func TestPhysicsRefControl(t *testing.T) {
	var handed []codec.Message
	rx, _ := New(Config{OnControl: func(raw []byte) {
		m, _, err := codec.ParseControl(raw, nil)
		if err != nil {
			t.Fatalf("OnControl: %v", err)
		}
		handed = append(handed, m)
	}})
	stream := func(ms ...codec.Message) error {
		var b []byte
		for _, m := range ms {
			b = m.Append(b)
		}
		_, err := rx.ControlBytes(0, b)
		return err
	}
	_ = stream(welcome, codec.Announce{IDs: ids}, lease)
	early := physics
	early.Island = 9 // no manifest: refused, and held all the same
	if err := rx.Control(0, early); !errors.Is(err, ErrRefused) {
		t.Fatalf("physics of an unknown island: %v", err)
	}
	ref := codec.PhysicsRef{Island: 7, Topology: 1, Config: 1, Digest: codec.PhysicsDigest(physics.Append(nil))}
	handed = nil
	if err := stream(manifest, ref); err != nil {
		t.Fatal(err)
	}
	if n := rx.Stats().SimBodies; n != 3 {
		t.Fatalf("%d bodies simulated from a reference", n)
	}
	if len(handed) != 2 {
		t.Fatalf("OnControl got %d messages", len(handed))
	}
	if p, ok := handed[1].(codec.Physics); !ok || p.Island != 7 || len(p.Joints) != 2 {
		t.Fatalf("OnControl got %#v for the reference", handed[1])
	}
	bad := ref
	bad.Digest++
	if err := rx.Control(0, bad); !errors.Is(err, ErrRefused) {
		t.Fatalf("a digest not held: %v", err)
	}
	mustControl(t, rx, 0, welcome)
	mustControl(t, rx, 0, codec.Announce{IDs: ids}, lease, manifest)
	if err := rx.Control(0, ref); !errors.Is(err, ErrRefused) {
		t.Fatalf("a reference after a new Welcome: %v", err)
	}
	if st := rx.Stats().Control; st.Refused != 3 || st.Applied[codec.TypePhysicsRef] != 1 {
		t.Fatalf("%d messages refused (want the early Physics and two references), %d references applied", st.Refused, st.Applied[codec.TypePhysicsRef])
	}
}

// TestSimulatedExtrapolation: past the newest frame, an island with a
// Physics message moves under its gravity with its joints kept (the chain
// falls, its links still end to end), and within budget every
// continuation is simulated; with a budget too small, none is, and each
// is counted.
func TestSimulatedExtrapolation(t *testing.T) {
	run := func(cfg Config) (*Receiver, IslandView) {
		rx, _ := New(cfg)
		mustControl(t, rx, 0, welcome, codec.Announce{IDs: ids}, lease, manifest, physics)
		now := feed(t, rx, 0, 1, 6)
		var v IslandView
		for k := range 6 { // render ticks past the newest frame
			views := rx.Render(now + int64(k+1)*16_667 + 150_000)
			v = views[0]
		}
		return rx, v
	}
	rx, v := run(Config{})
	st := rx.Stats()
	if v.Mode != store.Extrapolate && v.Mode != store.Stale {
		t.Fatalf("mode %v", v.Mode)
	}
	if st.Store.Simulated == 0 || st.SimOverBudget != 0 {
		t.Fatalf("simulated %d, over budget %d", st.Store.Simulated, st.SimOverBudget)
	}
	for i := 1; i < len(v.Poses); i++ {
		a, b := v.Poses[i-1].State, v.Poses[i].State
		ax, ay := a.X+0.5*math.Cos(a.Angle), a.Y+0.5*math.Sin(a.Angle)
		bx, by := b.X-0.5*math.Cos(b.Angle), b.Y-0.5*math.Sin(b.Angle)
		if d := math.Hypot(ax-bx, ay-by); d > 0.01 {
			t.Fatalf("links %d and %d apart by %.3f m", i-1, i, d)
		}
	}
	if v.Poses[0].State.Y >= 0 {
		t.Fatalf("the chain did not fall: y=%v", v.Poses[0].State.Y)
	}
	rx, _ = run(Config{MaxSimWork: 1})
	if st := rx.Stats(); st.Store.Simulated != 0 || st.SimOverBudget == 0 {
		t.Fatalf("budget 1: simulated %d, over budget %d", st.Store.Simulated, st.SimOverBudget)
	}
}

// TestPhysicsTablesAgree: a broadcaster's table of the descriptions an
// observer holds and the observer's own stay the same through a seeded
// stream of islands, some built alike, many more distinct ones than the
// table keeps, one in eight large enough that the byte cap binds before
// the count cap — and an observer rejoining: every PhysicsRef the observer
// is sent resolves.
func TestPhysicsTablesAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	bc, _ := broadcast.New(broadcast.Config{})
	rx, _ := New(Config{MaxSimBodies: 1 << 20})
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	deliver := func() {
		ctl, _ := bc.Take(1, nil, nil)
		if _, err := rx.ControlBytes(0, ctl); err != nil {
			t.Fatal(err)
		}
	}
	var stable uint64
	for isl := uint32(1); isl <= 1500; isl++ {
		n := 1 + rng.IntN(3)
		members := make([]island.MemberID, n)
		for i := range members {
			stable++
			members[i] = island.MemberID{Stable: stable}
		}
		p := codec.Physics{Island: isl, Topology: 1, Config: 1, Step: 4_167, Iterations: 10, Damping: 1}
		kind := rng.IntN(600) // 600 kinds of crate, some much more common than others
		if rng.IntN(2) == 0 {
			kind = rng.IntN(20)
		}
		for range n {
			p.Bodies = append(p.Bodies, codec.BodyMass{Mass: 1 + float64(kind), Moment: 1, Width: 1, Height: 1})
		}
		if rng.IntN(8) == 0 { // a floor of 500–1000 pieces: 24–48 kB, so the table passes 1 MiB long before 256
			for i := range 500 + rng.IntN(500) {
				p.Static = append(p.Static, codec.Segment{A: [2]float64{float64(i), 0}, B: [2]float64{float64(i + 1), 0}})
			}
		}
		for _, m := range []codec.Message{codec.Announce{IDs: members}, codec.Lease{Island: isl, Epoch: 1, Owner: 1},
			codec.Manifest{Island: isl, Topology: 1, Config: 1, Members: members}, p} {
			if err := bc.Apply(m); err != nil {
				t.Fatal(err)
			}
		}
		if isl%100 == 0 {
			deliver()
		}
		if isl == 1000 { // the observer comes back on a new connection
			deliver()
			bc.Leave(1)
			_ = bc.Join(1, 0)
			_ = bc.Subscribe(1, codec.Subscribe{All: true})
		}
	}
	deliver()
	st := rx.Stats().Control
	if st.Refused != 0 || st.Applied[codec.TypePhysicsRef] < 100 || st.Applied[codec.TypePhysics] < 600 {
		t.Fatalf("%d refused; %d references and %d descriptions applied", st.Refused, st.Applied[codec.TypePhysicsRef], st.Applied[codec.TypePhysics])
	}
}

// TestJoinSharesDescriptions: an observer joining a world of islands built
// alike is sent each description once and a 25-byte PhysicsRef for every
// other island: the ragdolls' join (24 ragdolls) and the Fiedler scene's
// (900 crates) cost under half of their control bytes with every Physics
// whole, and the observer simulates every island all the same.
func TestJoinSharesDescriptions(t *testing.T) {
	for _, name := range []string{"ragdolls", "fiedler"} {
		scs, _ := scenario.Pick(name)
		a, _ := scenario.NewAuthority(scs, 20)
		bc, _ := broadcast.New(broadcast.Config{})
		msgs, _ := a.Step()
		whole := map[uint32]int{} // island → its Physics' size
		for _, m := range msgs {
			if err := bc.Apply(m); err != nil {
				t.Fatal(err)
			}
			if p, ok := m.(codec.Physics); ok {
				whole[p.Island] = p.Size()
			}
		}
		_ = bc.Join(1, 0)
		_ = bc.Subscribe(1, codec.Subscribe{All: true})
		ctl, _ := bc.Take(1, nil, nil)
		rx, _ := New(Config{MaxSimBodies: 1 << 16})
		if _, err := rx.ControlBytes(0, ctl); err != nil {
			t.Fatal(err)
		}
		st := rx.Stats()
		refs := int(st.Control.Applied[codec.TypePhysicsRef])
		saved := 0
		for b := ctl; len(b) > 0; {
			m, n, _ := codec.ParseControl(b, nil)
			if r, ok := m.(codec.PhysicsRef); ok {
				saved += whole[r.Island] - r.Size()
			}
			b = b[n:]
		}
		t.Logf("%s: join %d B of control, %d with every Physics whole; %d of %d islands by reference", name, len(ctl), len(ctl)+saved, refs, len(whole))
		if st.Control.Refused != 0 || refs+int(st.Control.Applied[codec.TypePhysics]) != len(whole) || refs < len(whole)/2 {
			t.Fatalf("%s: %d refused, %d references, %d islands", name, st.Control.Refused, refs, len(whole))
		}
		if 2*len(ctl) > len(ctl)+saved {
			t.Fatalf("%s: join %d B, %d without references", name, len(ctl), len(ctl)+saved)
		}
		if st.SimBodies == 0 {
			t.Fatalf("%s: no island simulated", name)
		}
	}
}

// TestSimIdle: an island's simulation builds its space when the island
// runs past its newest frame, lets it go once the island has been shown
// from frames alone for Config.SimIdle, and builds it again at the next
// gap; a negative SimIdle keeps it.
func TestSimIdle(t *testing.T) {
	run := func(idle int64) (spaces []int, released uint64) {
		rx, _ := New(Config{SimIdle: idle})
		mustControl(t, rx, 0, welcome, codec.Announce{IDs: ids}, lease, manifest, physics)
		seq, now := uint32(1), int64(0)
		// gap feeds frames steadily for the time given, rendering at 60 Hz,
		// then stops them for 300 ms, and notes the spaces built.
		gap := func(steady int64) {
			for end := now + steady; now < end; seq++ {
				now = feed(t, rx, now, seq, seq)
				for k := range 3 {
					rx.Render(now + int64(k)*16_667)
				}
			}
			spaces = append(spaces, rx.Stats().SimSpaces)
			for range 18 {
				now += 16_667
				rx.Render(now)
			}
			spaces = append(spaces, rx.Stats().SimSpaces)
		}
		gap(1_000_000)
		gap(3_000_000)
		gap(1_000_000)
		return spaces, rx.Stats().SimReleased
	}
	// After the first steady second no frame was lost: nothing built. Each
	// gap builds the space; three steady seconds let it go, one does not.
	spaces, released := run(2_000_000)
	if want := []int{0, 1, 0, 1, 1, 1}; !slices.Equal(spaces, want) || released != 1 {
		t.Fatalf("2 s: spaces %v (want %v), released %d (want 1)", spaces, want, released)
	}
	spaces, released = run(0) // the default, 30 s, outlasts every gap here
	if want := []int{0, 1, 1, 1, 1, 1}; !slices.Equal(spaces, want) || released != 0 {
		t.Fatalf("default: spaces %v (want %v), released %d (want 0)", spaces, want, released)
	}
	spaces, released = run(-1)
	if want := []int{0, 1, 1, 1, 1, 1}; !slices.Equal(spaces, want) || released != 0 {
		t.Fatalf("kept: spaces %v (want %v), released %d (want 0)", spaces, want, released)
	}
}

// TestPhysicsRepeated: a catch-up repeating an island's Physics (a
// reconnect, another front) keeps its simulation and the space it built;
// another description under the same topology and config replaces it.
func TestPhysicsRepeated(t *testing.T) {
	rx, _ := New(Config{})
	mustControl(t, rx, 0, welcome, codec.Announce{IDs: ids}, lease, manifest, physics)
	now := feed(t, rx, 0, 1, 6)
	for k := range 6 { // past the newest frame: the space is built
		rx.Render(now + int64(k+1)*16_667 + 150_000)
	}
	if n := rx.Stats().SimSpaces; n != 1 {
		t.Fatalf("%d spaces built past the newest frame", n)
	}
	again := physics
	again.Bodies = slices.Clone(physics.Bodies) // equal, not the same slice
	mustControl(t, rx, now, again)
	if n := rx.Stats().SimSpaces; n != 1 {
		t.Fatalf("the same Physics again left %d spaces", n)
	}
	other := again
	other.Damping = 0.9
	mustControl(t, rx, now, other)
	if st := rx.Stats(); st.SimSpaces != 0 || st.SimBodies != 3 {
		t.Fatalf("another description: %d spaces, %d bodies", st.SimSpaces, st.SimBodies)
	}
}
