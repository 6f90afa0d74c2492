package physics

import (
	"testing"

	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/island"
)

// chain builds n boxes in a row joined by pivots; the first hangs from the
// static body.
func chain(w *World, n int, x0 float64) ([]island.MemberID, []*Joint) {
	var ids []island.MemberID
	var js []*Joint
	for i := 0; i < n; i++ {
		ids = append(ids, w.AddBody(1, 0.5, 0.1, cp.Vector{X: x0 + float64(i)*0.5, Y: 10}, 0, false))
	}
	js = append(js, w.AddJoint(JointSpec{Kind: Pivot, A: Static, B: ids[0], AnchorA: cp.Vector{X: x0 - 0.25, Y: 10}, AnchorB: cp.Vector{X: -0.25}}))
	for i := 1; i < n; i++ {
		js = append(js, w.AddJoint(JointSpec{Kind: Pivot, A: ids[i-1], B: ids[i], AnchorA: cp.Vector{X: 0.25}, AnchorB: cp.Vector{X: -0.25}}))
	}
	return ids, js
}

func TestIslandsAreJointComponents(t *testing.T) {
	w := NewWorld(60)
	a, ja := chain(w, 4, 0)
	b, _ := chain(w, 3, 10)
	loose := w.AddBody(1, 1, 1, cp.Vector{X: 20}, 0, false)
	isl := w.Islands()
	if len(isl) != 3 {
		t.Fatalf("%d islands", len(isl))
	}
	if isl[0].ID != uint32(a[0].Stable) || len(isl[0].Members) != 4 || len(isl[1].Members) != 3 || isl[2].ID != uint32(loose.Stable) {
		t.Fatalf("islands %+v", isl)
	}
	for i := 1; i < len(isl[0].Members); i++ {
		if !isl[0].Members[i-1].ID.Less(isl[0].Members[i].ID) {
			t.Fatal("members not in stable order")
		}
	}
	_ = b
	first := isl[0]
	topo := first.Topology

	// Break the middle joint: the chain splits; the part holding the
	// smallest id keeps the island id with a new topology.
	w.RemoveJoint(ja[2])
	isl = w.Islands()
	if len(isl) != 4 || w.Island(first.ID).Topology != topo+1 || len(w.Island(first.ID).Members) != 2 {
		t.Fatalf("split: %d islands, topology %d", len(isl), w.Island(first.ID).Topology)
	}
	split := w.Island(uint32(a[2].Stable))
	if split == nil || split.Topology != 1 || !split.Fresh {
		t.Fatal("split-off part is not a fresh island")
	}
	// Merge the two chains: the larger id disappears, the smaller bumps.
	before := w.Island(first.ID).Topology
	w.AddJoint(JointSpec{Kind: Pin, A: a[1], B: b[0], AnchorA: cp.Vector{}, AnchorB: cp.Vector{}})
	if w.Island(uint32(b[0].Stable)) != nil || w.Island(first.ID).Topology != before+1 {
		t.Fatal("merge did not fold the larger island into the smaller one")
	}
	events := w.TakeEvents()
	var gone bool
	for _, e := range events {
		gone = gone || (e.Kind == IslandGone && e.Island == uint32(b[0].Stable))
	}
	if !gone {
		t.Fatalf("no IslandGone event: %v", events)
	}
}

func TestVersionBumps(t *testing.T) {
	w := NewWorld(60)
	ids, _ := chain(w, 3, 0)
	slide := w.AddJoint(JointSpec{Kind: Slide, A: ids[0], B: ids[2], Min: 0.5, Max: 2})
	is := w.Island(uint32(ids[0].Stable))
	cfg, ep, seg, topo := is.Config, is.Epoch, is.Segment, is.Topology
	w.SetSlideRange(slide, 0.5, 1.5)
	if is.Config != cfg+1 || is.Topology != topo {
		t.Fatalf("config change: config %d topology %d", is.Config, is.Topology)
	}
	w.HandOff(is.ID, 9)
	if is.Epoch != ep+1 || is.Owner != 9 {
		t.Fatal("hand-off")
	}
	x := w.Body(ids[1]).B.Position().X
	w.Teleport(is.ID, cp.Vector{X: 100})
	if is.Segment != seg+1 || w.Body(ids[1]).B.Position().X != x+100 {
		t.Fatal("teleport")
	}
	if is.Topology != topo {
		t.Fatal("topology bumped by a non-structural change")
	}
}

func TestSamplerCadenceAndInitial(t *testing.T) {
	w := NewWorld(60)
	chain(w, 3, 0)
	s := NewSampler(w, 20)
	if s.Period() != 50_000 {
		t.Fatal(s.Period())
	}
	fr := s.Tick() // step 0: cadence, and the island is fresh
	if len(fr) != 1 || fr[0].Flags&island.FlagInitial == 0 || fr[0].Key.Seq != 1 {
		t.Fatalf("first tick %+v", fr)
	}
	sent := 0
	for i := 0; i < 60; i++ {
		w.Step()
		sent += len(s.Tick())
	}
	if sent != 20 {
		t.Fatalf("%d frames in one second at 20 Hz", sent)
	}
	// A topology change is sent at once, off cadence, with Initial.
	w.Step()
	w.AddBody(1, 1, 1, cp.Vector{X: 50}, 0, false)
	fr = s.Tick()
	if len(fr) != 1 || fr[0].Flags&island.FlagInitial == 0 {
		t.Fatalf("fresh island not sent off cadence: %d", len(fr))
	}
	// Members of one frame are sampled at one time.
	w.Step()
	f := s.Capture(w.Islands()[0])
	if f.Time != w.Time() || len(f.Members) != 3 {
		t.Fatal("sample time")
	}
}

func TestJointError(t *testing.T) {
	w := NewWorld(60)
	ids, js := chain(w, 2, 0)
	pose := func(id island.MemberID) (float64, float64, float64, bool) {
		p := w.Body(id).B.Position()
		return p.X, p.Y, w.Body(id).B.Angle(), true
	}
	for _, j := range js {
		if e, ok := JointError(&j.Spec, pose); !ok || e > 1e-9 {
			t.Fatalf("fresh joint error %v", e)
		}
	}
	// Shift one body: the pivot between them opens by exactly that much.
	b := w.Body(ids[1]).B
	b.SetPosition(b.Position().Add(cp.Vector{Y: 0.3}))
	if e, _ := JointError(&js[1].Spec, pose); e < 0.3-1e-9 || e > 0.3+1e-9 {
		t.Fatalf("error %v, want 0.3", e)
	}
}

func TestReplicaCountsHalfFrames(t *testing.T) {
	w := NewWorld(60)
	ids, _ := chain(w, 4, 0)
	r := NewReplica(w)
	frameA := Source{From: island.Key{Seq: 1}, To: island.Key{Seq: 1}}
	frameB := Source{From: island.Key{Seq: 2}, To: island.Key{Seq: 2}}
	st := func(id island.MemberID) island.State {
		p := w.Body(id).B.Position()
		return island.State{X: p.X, Y: p.Y, Angle: w.Body(id).B.Angle()}
	}
	var poses []island.State
	for _, id := range ids {
		poses = append(poses, st(id))
	}
	r.ApplyIsland(ids, poses, frameA)
	errs, half, worst := r.Measure(w.Islands(), nil)
	if half != 0 || worst > 1e-9 || len(errs) != 4 {
		t.Fatalf("whole island: half %d worst %v n %d", half, worst, len(errs))
	}
	// One member from another frame, displaced: a half-frame, and its
	// joints open.
	moved := poses[2]
	moved.Y += 0.2
	r.Set(ids[2], moved, frameB)
	_, half, worst = r.Measure(w.Islands(), nil)
	if half != 1 || worst < 0.2-1e-9 {
		t.Fatalf("half-frame: half %d worst %v", half, worst)
	}
}
