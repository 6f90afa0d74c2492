package physics

import (
	"github.com/jakecoffman/cp/v2"

	"github.com/islandsync/islandsync/island"
)

// Source names where a displayed pose came from: the frame pair an observer
// interpolated (From, To), or one frame (From == To). Two bodies of one joint
// showing different sources are a half-frame. It is comparable.
type Source struct{ From, To island.Key }

// Replica is an observer's copy of the scene: one kinematic cp body per
// authority body, posed from what the observer decided to show, with the
// source of every pose. It measures the displayed joint error. Not safe for
// concurrent use.
type Replica struct {
	space  *cp.Space
	bodies map[island.MemberID]*cp.Body
	source map[island.MemberID]Source
	shown  map[island.MemberID]bool
}

// NewReplica builds kinematic twins of every body of w (the scene
// description an observer receives reliably).
func NewReplica(w *World) *Replica {
	cpConstruct.Lock()
	defer cpConstruct.Unlock()
	r := &Replica{space: cp.NewSpace(), bodies: map[island.MemberID]*cp.Body{},
		source: map[island.MemberID]Source{}, shown: map[island.MemberID]bool{}}
	for _, b := range w.order {
		kb := cp.NewKinematicBody()
		r.space.AddBody(kb)
		r.bodies[b.ID] = kb
	}
	return r
}

// Set poses one body from src. Unknown bodies are ignored.
func (r *Replica) Set(id island.MemberID, st island.State, src Source) {
	b := r.bodies[id]
	if b == nil {
		return
	}
	b.SetPosition(cp.Vector{X: st.X, Y: st.Y})
	b.SetAngle(st.Angle)
	b.SetVelocity(st.VX, st.VY)
	b.SetAngularVelocity(st.AngVel)
	r.source[id] = src
	r.shown[id] = true
}

// ApplyIsland poses every member of one island at once from one source: the
// whole island moves in one call.
func (r *Replica) ApplyIsland(ids []island.MemberID, poses []island.State, src Source) {
	for i, id := range ids {
		r.Set(id, poses[i], src)
	}
}

// pose returns a shown body's displayed position and angle.
func (r *Replica) pose(id island.MemberID) (x, y, angle float64, ok bool) {
	b := r.bodies[id]
	if b == nil || !r.shown[id] {
		return 0, 0, 0, false
	}
	p := b.Position()
	return p.X, p.Y, b.Angle(), true
}

// Measure appends the displayed error of every shown joint of the islands
// to errs, and returns it with the number of islands whose joints join
// bodies from different sources (half-frames) and the largest error.
func (r *Replica) Measure(islands []*Island, errs []float64) ([]float64, int, float64) {
	half, worst := 0, 0.0
	for _, is := range islands {
		mixed := false
		for _, j := range is.Joints {
			e, ok := JointError(&j.Spec, r.pose)
			if !ok {
				continue
			}
			errs = append(errs, e)
			worst = max(worst, e)
			if j.Spec.A != Static && j.Spec.B != Static && r.source[j.Spec.A] != r.source[j.Spec.B] {
				mixed = true
			}
		}
		if mixed {
			half++
		}
	}
	return errs, half, worst
}
