package receiver

import (
	"errors"
	"math"
	"testing"

	"github.com/islandsync/islandsync/codec"
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
