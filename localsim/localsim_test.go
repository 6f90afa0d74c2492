package localsim_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/localsim"
	"github.com/islandsync/islandsync/physics"
	"github.com/islandsync/islandsync/scenario"
)

// world is one scenario's authority after a number of steps: its world,
// and per island its Physics message and the members' states now.
type world struct {
	w      *physics.World
	phys   map[uint32]codec.Physics
	states map[uint32][]island.State
}

// authority runs scenario name alone at 20 Hz.
func authority(t testing.TB, name string) *scenario.Authority {
	t.Helper()
	var sc []scenario.Scenario
	for _, s := range scenario.All {
		if s.Name == name {
			sc = append(sc, s)
		}
	}
	a, err := scenario.NewAuthority(sc, 20)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func runScenario(t testing.TB, name string, steps int) *world {
	t.Helper()
	a := authority(t, name)
	out := &world{phys: map[uint32]codec.Physics{}, states: map[uint32][]island.State{}}
	for range steps {
		msgs, _ := a.Step()
		for _, m := range msgs {
			if p, ok := m.(codec.Physics); ok {
				out.phys[p.Island] = p
			}
		}
	}
	out.w = a.Worlds()[0]
	for _, is := range out.w.Islands() {
		var f island.Frame
		out.w.Sample(is, &f)
		for _, m := range f.Members {
			out.states[is.ID] = append(out.states[is.ID], m.State)
		}
	}
	return out
}

// jointError is the largest joint error of island is shown at poses.
func jointError(is *physics.Island, poses []island.State) float64 {
	at := map[island.MemberID]island.State{}
	for i, b := range is.Members {
		at[b.ID] = poses[i]
	}
	worst := 0.0
	for _, j := range is.Joints {
		e, ok := physics.JointError(&j.Spec, func(id island.MemberID) (float64, float64, float64, bool) {
			s, ok := at[id]
			return s.X, s.Y, s.Angle, ok
		})
		if ok {
			worst = max(worst, e)
		}
	}
	return worst
}

// TestSettle: poses of every scenario's islands knocked off their joints
// (up to 5 cm and 0.1 rad per body) come back to the joints of the
// server's frame: exactly for a tree of joints, at least halfway for a
// loop.
func TestSettle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sc := range scenario.All {
		t.Run(sc.Name, func(t *testing.T) {
			w := runScenario(t, sc.Name, 30)
			for _, is := range w.w.Islands() {
				p, ok := w.phys[is.ID]
				if !ok || len(is.Joints) == 0 {
					continue
				}
				sim, err := localsim.New(p)
				if err != nil {
					t.Fatal(err)
				}
				poses := append([]island.State(nil), w.states[is.ID]...)
				before := jointError(is, poses)
				target := sim.Separations(func(i int) island.State { return w.states[is.ID][i] }, nil)
				for i := range poses {
					poses[i].X += (rng.Float64() - 0.5) * 0.1
					poses[i].Y += (rng.Float64() - 0.5) * 0.1
					poses[i].Angle += (rng.Float64() - 0.5) * 0.2
				}
				knocked := jointError(is, poses)
				knockedPoses := append([]island.State(nil), poses...)
				sim.Settle(poses, target)
				after := jointError(is, poses)
				moved := worstDistance(poses, knockedPoses)
				t.Logf("island %d (%d bodies, %d joints): %.4f, knocked %.4f, settled %.4f, moved %.4f m", is.ID, len(is.Members), len(is.Joints), before, knocked, after, moved)
				// Every joint stands again as in the server's frame, to a tenth
				// of a millimetre; a loop (a bridge held at both
				// ends) that the knocks left unable to close comes at least
				// halfway back. No body moves further than the knocks could
				// call for.
				loop := sc.Name == "bridge" || sc.Name == "break"
				got := sim.Separations(func(i int) island.State { return poses[i] }, nil)
				for k := range got {
					if d := math.Hypot(got[k][0]-target[k][0], got[k][1]-target[k][1]); !loop && d > 1e-4 {
						t.Errorf("island %d joint %d stands %.6f m from the server's frame", is.ID, k, d)
					}
				}
				if loop && after > before+(knocked-before)/2 {
					t.Errorf("island %d: joint error %.4f after settling (%.4f knocked, %.4f on the server)", is.ID, after, knocked, before)
				}
				if moved > 0.5 {
					t.Errorf("island %d: settling moved a body %.3f m", is.ID, moved)
				}
			}
		})
	}
}

// follow runs scenario name for warm steps, samples its first island, runs
// ahead steps more and returns the island's description, the sampled
// frame, and the server's states ahead steps later.
func follow(t testing.TB, name string, warm, ahead int) (codec.Physics, island.Frame, []island.State) {
	t.Helper()
	a := authority(t, name)
	phys := map[uint32]codec.Physics{}
	step := func() {
		msgs, _ := a.Step()
		for _, m := range msgs {
			if p, ok := m.(codec.Physics); ok {
				phys[p.Island] = p
			}
		}
	}
	for range warm {
		step()
	}
	w := a.Worlds()[0]
	is := w.Islands()[0]
	var f island.Frame
	w.Sample(is, &f)
	f.Members = append([]island.Member(nil), f.Members...)
	for range ahead {
		step()
	}
	var later island.Frame
	w.Sample(w.Island(is.ID), &later)
	var truth []island.State
	for _, m := range later.Members {
		truth = append(truth, m.State)
	}
	return phys[is.ID], f, truth
}

func worstDistance(a, b []island.State) float64 {
	worst := 0.0
	for i := range a {
		dx, dy := a[i].X-b[i].X, a[i].Y-b[i].Y
		worst = max(worst, dx*dx+dy*dy)
	}
	return math.Sqrt(worst)
}

// TestContinueTracksServer: 100 ms past a frame of every scenario, early,
// mid-way and late (swinging chains, a sagging bridge, ragdolls falling
// and at rest on the ground), the local simulation is never further (by
// more than a millimetre) from where the server has the bodies than moving
// each along its own velocity, and over all of them at least five times
// closer; bodies at rest stay at rest (the ground holds them).
func TestContinueTracksServer(t *testing.T) {
	var simSum, lineSum float64
	for _, sc := range scenario.All {
		for _, warm := range []int{30, 90, 200} {
			p, f, truth := follow(t, sc.Name, warm, 6) // 6 steps at 60 Hz: 100 ms
			sim, err := localsim.New(p)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]island.State, len(truth))
			dt := int64(6 * 1_000_000 / scenario.StepHz)
			if !sim.Continue(f.Key, f.Time, func(i int) island.State { return f.Members[i].State }, dt, 0, out) {
				t.Fatal("continue refused")
			}
			straight := make([]island.State, len(truth))
			for i, m := range f.Members {
				st, sec := m.State, float64(dt)/1e6
				st.X, st.Y = st.X+st.VX*sec, st.Y+st.VY*sec
				straight[i] = st
			}
			simErr, lineErr := worstDistance(out, truth), worstDistance(straight, truth)
			t.Logf("%-9s step %3d: local simulation %.4f m, straight lines %.4f m", sc.Name, warm, simErr, lineErr)
			simSum += simErr
			lineSum += lineErr
			if simErr > lineErr+0.001 {
				t.Errorf("%s step %d: local simulation %.4f m off, straight lines %.4f m", sc.Name, warm, simErr, lineErr)
			}
		}
	}
	t.Logf("all: local simulation %.3f m, straight lines %.3f m", simSum, lineSum)
	if simSum > 0.2*lineSum {
		t.Errorf("local simulation %.3f m off over all, straight lines %.3f m", simSum, lineSum)
	}
}

// TestContinueResumes: carrying on a continuation tick by tick gives what
// one call for the whole interval gives, and a step that is not whole
// blends the two steps around it.
func TestContinueResumes(t *testing.T) {
	p, f, _ := follow(t, "handoff", 30, 0)
	state := func(i int) island.State { return f.Members[i].State }
	n := len(f.Members)
	a, _ := localsim.New(p)
	b, _ := localsim.New(p)
	ticked, whole := make([]island.State, n), make([]island.State, n)
	for dt := int64(4_000); dt <= 100_000; dt += 16_000 { // render ticks off the step grid
		if !a.Continue(f.Key, f.Time, state, dt, 0, ticked) {
			t.Fatal("continue refused")
		}
	}
	if !b.Continue(f.Key, f.Time, state, 100_000, 0, whole) {
		t.Fatal("continue refused")
	}
	if d := worstDistance(ticked, whole); d > 1e-12 {
		t.Fatalf("tick by tick differs from one call by %g m", d)
	}
	// Asking for an earlier time starts again from the frame; only the
	// solver's warm start (impulses kept from the last steps) differs from
	// a fresh simulation's.
	early := make([]island.State, n)
	fresh, _ := localsim.New(p)
	want := make([]island.State, n)
	a.Continue(f.Key, f.Time, state, 20_000, 0, early)
	fresh.Continue(f.Key, f.Time, state, 20_000, 0, want)
	if d := worstDistance(early, want); d > 0.005 {
		t.Fatalf("going back differs from a fresh start by %g m", d)
	}
	if a.Continue(f.Key, f.Time, state, 0, 0, early) || a.Continue(f.Key, f.Time, state, 10, 0, early[:1]) {
		t.Fatal("continued with dt 0 or the wrong member count")
	}
}

// TestBridge: a bridge starts on the first frame's continuation and lands
// exactly on the second frame.
func TestBridge(t *testing.T) {
	p, f, truth := follow(t, "chain", 90, 9) // frames 150 ms apart
	sim, _ := localsim.New(p)
	stateA := func(i int) island.State { return f.Members[i].State }
	stateB := func(i int) island.State { return truth[i] }
	span := int64(9 * 1_000_000 / scenario.StepHz)
	n := len(truth)
	out, cont := make([]island.State, n), make([]island.State, n)
	if !sim.Bridge(f.Key, f.Time, stateA, island.Key{Seq: f.Key.Seq + 3}, f.Time+island.Time(span), stateB, span-1, 0, out) {
		t.Fatal("bridge refused")
	}
	if d := worstDistance(out, truth); d > 1e-3 {
		t.Errorf("a microsecond before the second frame the bridge is %g m off it", d)
	}
	sim.Bridge(f.Key, f.Time, stateA, island.Key{Seq: f.Key.Seq + 3}, f.Time+island.Time(span), stateB, 1, 0, out)
	other, _ := localsim.New(p)
	other.Continue(f.Key, f.Time, stateA, 1, 0, cont)
	if d := worstDistance(out, cont); d > 1e-3 {
		t.Errorf("a microsecond after the first frame the bridge is %g m off its continuation", d)
	}
	if sim.Bridge(f.Key, f.Time, stateA, f.Key, f.Time+island.Time(span), stateB, span, 0, out) {
		t.Error("bridged at the second frame's own time (no blend is needed there)")
	}
}

// TestBridgeReadsItsTrace: every render tick across a pair is the first
// frame's continuation at that time, moved by its share of the gap at the
// second frame — read from the continuation traced with the gap, so that
// after the pair's first tick the bridge costs no steps. A pair whose
// continuation is too long to keep (80 solver steps) still costs
// Continue's steps per tick.
func TestBridgeReadsItsTrace(t *testing.T) {
	p, f, truth := follow(t, "chain", 90, 9) // frames 150 ms apart
	stateA := func(i int) island.State { return f.Members[i].State }
	stateB := func(i int) island.State { return truth[i] }
	kb := island.Key{Seq: f.Key.Seq + 3}
	span := int64(9 * 1_000_000 / scenario.StepHz)
	n := len(truth)
	continued := func(dt int64) []island.State { // a fresh simulation's continuation
		sim, _ := localsim.New(p)
		out := make([]island.State, n)
		if !sim.Continue(f.Key, f.Time, stateA, dt, 0, out) {
			t.Fatal("continue refused")
		}
		return out
	}
	atB := continued(span)
	sim, _ := localsim.New(p)
	out := make([]island.State, n)
	for dt := int64(4_000); dt < span; dt += 16_000 { // render ticks off the step grid
		if !sim.Bridge(f.Key, f.Time, stateA, kb, f.Time+island.Time(span), stateB, dt, 0, out) {
			t.Fatal("bridge refused")
		}
		want, share := continued(dt), float64(dt)/float64(span)
		for i := range want {
			want[i].X += (truth[i].X - atB[i].X) * share
			want[i].Y += (truth[i].Y - atB[i].Y) * share
		}
		if d := worstDistance(out, want); d > 1e-9 {
			t.Fatalf("at %d µs the bridge is %g m off the continuation moved by its share of the gap", dt, d)
		}
		if c := sim.BridgeStepsFor(f.Key, f.Time, kb, f.Time+island.Time(span), dt+16_000, 0); c != 0 {
			t.Fatalf("the next tick of a traced bridge costs %d steps (%d bodies)", c, n)
		}
	}
	long := int64(20 * 1_000_000 / scenario.StepHz) // 80 solver steps
	if !sim.Bridge(f.Key, f.Time, stateA, kb, f.Time+island.Time(long), stateB, 4_000, 0, out) {
		t.Fatal("bridge refused")
	}
	if c := sim.BridgeStepsFor(f.Key, f.Time, kb, f.Time+island.Time(long), 20_000, 0); c == 0 {
		t.Fatal("a bridge too long to trace costs no steps")
	}
}

// BenchmarkContinue: what the local simulation costs per extrapolated
// island per render tick (60 Hz ticks, each carrying on the last one's
// continuation: the steady state past the newest frame), beside what one
// authority step of the same island costs the server, for the 240-link
// chain and a 6-body ragdoll.
func BenchmarkContinue(b *testing.B) {
	for _, name := range []string{"chain", "ragdolls"} {
		p, f, _ := follow(b, name, 90, 0)
		state := func(i int) island.State { return f.Members[i].State }
		out := make([]island.State, len(f.Members))
		b.Run("scene="+name+"/local-tick", func(b *testing.B) {
			sim, err := localsim.New(p)
			if err != nil {
				b.Fatal(err)
			}
			const tick = 1_000_000 / 60
			dt, ticks := int64(0), 0
			b.ReportAllocs()
			for b.Loop() {
				if dt += tick; dt > 100_000 { // the extrapolation cap: a new frame
					dt = tick
					f.Key.Seq++
				}
				sim.Continue(f.Key, f.Time, state, dt, 0, out)
				ticks++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ticks)/float64(len(out)), "ns/body")
		})
		b.Run("scene="+name+"/server-step", func(b *testing.B) {
			a := authority(b, name)
			for range 90 {
				a.Step()
			}
			w := a.Worlds()[0]
			bodies := 0
			for _, is := range w.Islands() {
				bodies += len(is.Members)
			}
			b.ReportAllocs()
			for b.Loop() {
				w.Step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bodies), "ns/body")
		})
	}
}

// BenchmarkIslandMemory: the heap one island's local simulation holds,
// built from its Physics and then continued 10 steps, for a 6-body
// ragdoll, the 40-body bridge and the 240-link chain: 32 simulations per
// iteration, the live heap measured after collections, reported in bytes
// per island ("heap-B/island"; "built-B/island" after New, which keeps
// only the description — the cp space is built by the first
// continuation). cp gives every space that has stepped a contact-buffer ring and
// tree-node pools of a fixed size, so a small island costs about what a
// large one does.
func BenchmarkIslandMemory(b *testing.B) {
	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, name := range []string{"ragdolls", "bridge", "chain"} {
		p, f, _ := follow(b, name, 60, 0)
		state := func(i int) island.State { return f.Members[i].State }
		out := make([]island.State, len(f.Members))
		b.Run("scene="+name, func(b *testing.B) {
			const n = 32
			var built, stepped float64
			for b.Loop() {
				b.StopTimer()
				h0 := live()
				sims := make([]*localsim.Island, n)
				b.StartTimer()
				for i := range sims {
					var err error
					if sims[i], err = localsim.New(p); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				h1 := live()
				b.StartTimer()
				for _, sim := range sims {
					sim.Continue(f.Key, f.Time, state, 10*1_000_000/scenario.StepHz, 0, out)
				}
				b.StopTimer()
				h2 := live()
				runtime.KeepAlive(sims)
				built += float64(int64(h1-h0)) / n
				stepped += float64(int64(h2-h0)) / n
				b.StartTimer()
			}
			b.ReportMetric(built/float64(b.N), "built-B/island")
			b.ReportMetric(stepped/float64(b.N), "heap-B/island")
		})
	}
}

// BenchmarkBridge: what crossing one lost frame costs an observer — a
// 100 ms frame pair of the 240-link chain or a 6-body ragdoll, bridged at
// each 60 Hz render tick between the two frames (6 ticks), then the next
// pair — per pair and per body.
func BenchmarkBridge(b *testing.B) {
	for _, name := range []string{"chain", "ragdolls"} {
		p, f, truth := follow(b, name, 90, 6)
		stateA := func(i int) island.State { return f.Members[i].State }
		stateB := func(i int) island.State { return truth[i] }
		span := int64(6 * 1_000_000 / scenario.StepHz)
		out := make([]island.State, len(truth))
		b.Run("scene="+name, func(b *testing.B) {
			sim, err := localsim.New(p)
			if err != nil {
				b.Fatal(err)
			}
			kb := island.Key{Seq: f.Key.Seq + 2}
			b.ReportAllocs()
			for b.Loop() {
				f.Key.Seq++ // a new pair
				kb.Seq++
				for dt := int64(1_000_000 / 60); dt < span; dt += 1_000_000 / 60 {
					sim.Bridge(f.Key, f.Time, stateA, kb, f.Time+island.Time(span), stateB, dt, 0, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(out)), "ns/body")
		})
	}
}

// BenchmarkSettle: settling one view of the 240-link chain blended across
// a 100 ms frame pair (the joints stretched by the blend), per body.
func BenchmarkSettle(b *testing.B) {
	p, f, truth := follow(b, "chain", 90, 6)
	sim, _ := localsim.New(p)
	n := len(truth)
	sa := sim.Separations(func(i int) island.State { return f.Members[i].State }, nil)
	sb := sim.Separations(func(i int) island.State { return truth[i] }, nil)
	target := make([][2]float64, len(sa))
	blend := make([]island.State, n)
	for i := range n {
		a, c := f.Members[i].State, truth[i]
		blend[i] = island.State{X: (a.X + c.X) / 2, Y: (a.Y + c.Y) / 2, Angle: (a.Angle + c.Angle) / 2}
	}
	for k := range sa {
		target[k] = [2]float64{(sa[k][0] + sb[k][0]) / 2, (sa[k][1] + sb[k][1]) / 2}
	}
	poses := make([]island.State, n)
	b.ReportAllocs()
	for b.Loop() {
		copy(poses, blend)
		sim.Settle(poses, target)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/body")
}

// TestBounds: a description the codec accepts but the solver's arithmetic
// would not survive is refused; a frame too far out or too fast is not
// continued (the caller goes straight), and the next sane one is.
func TestBounds(t *testing.T) {
	p, f, _ := follow(t, "chain", 30, 0)
	for _, c := range []struct {
		name string
		mod  func(*codec.Physics)
	}{
		{"tiny mass", func(p *codec.Physics) { p.Bodies[0].Mass = 1e-12 }},
		{"huge moment", func(p *codec.Physics) { p.Bodies[3].Moment = 1e30 }},
		{"huge gravity", func(p *codec.Physics) { p.Gravity[1] = -1e9 }},
		{"far anchor", func(p *codec.Physics) { p.Joints[2].AnchorA[0] = 1e7 }},
		{"far ground", func(p *codec.Physics) {
			p.Static = append(p.Static, codec.Segment{A: [2]float64{0, 0}, B: [2]float64{1e8, 0}})
		}},
	} {
		q := p
		q.Bodies = append([]codec.BodyMass(nil), p.Bodies...)
		q.Joints = append([]codec.JointSpec(nil), p.Joints...)
		c.mod(&q)
		if _, err := localsim.New(q); err != localsim.ErrBadPhysics {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	sim, err := localsim.New(p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]island.State, len(f.Members))
	far := func(i int) island.State { s := f.Members[i].State; s.X += 1e6; return s }
	if sim.Continue(f.Key, f.Time, far, 50_000, 0, out) {
		t.Fatal("continued a frame a thousand kilometres out")
	}
	fast := func(i int) island.State { s := f.Members[i].State; s.VY = 1e6; return s }
	if sim.Continue(f.Key, f.Time, fast, 50_000, 0, out) {
		t.Fatal("continued a frame moving at 1000 km/s")
	}
	if !sim.Continue(f.Key, f.Time, func(i int) island.State { return f.Members[i].State }, 50_000, 0, out) {
		t.Fatal("a sane frame after them was not continued")
	}
}

// TestFrameSeparations: the separations of the last two frames asked for
// are kept, the one asked for longest ago gives way — so a pair whose
// first frame was just found keeps it while the second is worked out.
func TestFrameSeparations(t *testing.T) {
	p, f, later := follow(t, "chain", 30, 6)
	sim, _ := localsim.New(p)
	st := func(ss []island.State) func(int) island.State { return func(i int) island.State { return ss[i] } }
	var s1, s2, s3 []island.State
	for _, m := range f.Members {
		s1 = append(s1, m.State)
	}
	s2, s3 = later, make([]island.State, len(later))
	for i := range s3 {
		s3[i] = later[i]
		s3[i].Angle += 0.3
	}
	k1, k2, k3 := island.Key{Seq: 1}, island.Key{Seq: 2}, island.Key{Seq: 3}
	sim.FrameSeparations(k1, 1, st(s1))
	sim.FrameSeparations(k2, 2, st(s2))
	a := sim.FrameSeparations(k1, 1, st(s1)) // found: now the newest used
	want := append([][2]float64(nil), a...)
	sim.FrameSeparations(k3, 3, st(s3)) // takes frame 2's place, not frame 1's
	for i := range want {
		if a[i] != want[i] {
			t.Fatalf("joint %d: frame 1's separations overwritten", i)
		}
	}
	fresh := sim.Separations(st(s3), nil)
	got := sim.FrameSeparations(k3, 3, st(s3))
	for i := range fresh {
		if got[i] != fresh[i] {
			t.Fatalf("joint %d: frame 3's separations wrong", i)
		}
	}
}

// TestRelease: a released island lets go of its space and buffers, and its
// next continuation or bridge builds afresh and runs exactly as a fresh
// simulation's first one; a released island left alone builds nothing.
func TestRelease(t *testing.T) {
	p, f, truth := follow(t, "chain", 90, 9)
	stateA := func(i int) island.State { return f.Members[i].State }
	stateB := func(i int) island.State { return truth[i] }
	kb := island.Key{Seq: f.Key.Seq + 3}
	span := int64(9 * 1_000_000 / scenario.StepHz)
	n := len(truth)
	sim, _ := localsim.New(p)
	if sim.Built() {
		t.Fatal("built before any continuation")
	}
	out, want := make([]island.State, n), make([]island.State, n)
	if !sim.Bridge(f.Key, f.Time, stateA, kb, f.Time+island.Time(span), stateB, 20_000, 0, out) || !sim.Built() {
		t.Fatal("bridge refused or built nothing")
	}
	sim.Release()
	if sim.Built() {
		t.Fatal("still built after Release")
	}
	if c := sim.BridgeStepsFor(f.Key, f.Time, kb, f.Time+island.Time(span), 36_000, 0); c == 0 {
		t.Fatal("a released bridge costs no steps: it would read a trace it let go")
	}
	for _, dt := range []int64{36_000, 52_000} {
		fresh, _ := localsim.New(p)
		fresh.Bridge(f.Key, f.Time, stateA, kb, f.Time+island.Time(span), stateB, dt, 0, want)
		if !sim.Bridge(f.Key, f.Time, stateA, kb, f.Time+island.Time(span), stateB, dt, 0, out) {
			t.Fatal("bridge refused after Release")
		}
		if d := worstDistance(out, want); d != 0 {
			t.Fatalf("at %d µs the rebuilt bridge is %g m off a fresh one's", dt, d)
		}
		sim.Release()
	}
	fresh, _ := localsim.New(p)
	fresh.Continue(f.Key, f.Time, stateA, 100_000, 0, want)
	if !sim.Continue(f.Key, f.Time, stateA, 100_000, 0, out) {
		t.Fatal("continue refused after Release")
	}
	if d := worstDistance(out, want); d != 0 {
		t.Fatalf("the rebuilt continuation is %g m off a fresh one's", d)
	}
}

// TestNewKeepsACopy: an island keeps its own copy of the description, so
// a caller reusing the Physics' slices changes neither what it builds nor
// what Same compares.
func TestNewKeepsACopy(t *testing.T) {
	p, f, _ := follow(t, "chain", 30, 0)
	p.Bodies = slices.Clone(p.Bodies)
	sim, _ := localsim.New(p)
	same := p
	same.Bodies = slices.Clone(p.Bodies)
	p.Bodies[0].Mass *= 2 // the caller's slice, reused
	if !sim.Same(&same) || sim.Same(&p) {
		t.Fatal("the island follows its caller's slice")
	}
	state := func(i int) island.State { return f.Members[i].State }
	out, want := make([]island.State, len(f.Members)), make([]island.State, len(f.Members))
	fresh, _ := localsim.New(same)
	sim.Continue(f.Key, f.Time, state, 50_000, 0, out)
	fresh.Continue(f.Key, f.Time, state, 50_000, 0, want)
	if d := worstDistance(out, want); d != 0 {
		t.Fatalf("built from the caller's changed slice: %g m off", d)
	}
}
