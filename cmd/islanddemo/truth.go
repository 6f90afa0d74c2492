package main

import (
	"math"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
)

// truthSteps is how many server steps truth keeps: 3 s at 60 Hz, past
// any playout delay the demo runs with.
const truthSteps = 180

// truth keeps where the server had every body at each recent step, so that
// a displayed pose can be compared with the server's at the view's
// playback time.
type truth struct {
	w     *physics.World
	times []island.Time                    // ring, by step
	pos   []map[island.MemberID][3]float64 // ring, by step: x, y, continuity segment
	next  int
	n     int
}

func newTruth(w *physics.World) *truth {
	t := &truth{w: w, times: make([]island.Time, truthSteps), pos: make([]map[island.MemberID][3]float64, truthSteps)}
	for i := range t.pos {
		t.pos[i] = map[island.MemberID][3]float64{}
	}
	return t
}

// record keeps the world's body positions now.
func (t *truth) record() {
	m := t.pos[t.next]
	clear(m)
	for _, is := range t.w.Islands() {
		for _, b := range is.Members {
			p := b.B.Position()
			m[b.ID] = [3]float64{p.X, p.Y, float64(is.Segment)}
		}
	}
	t.times[t.next] = t.w.Time()
	t.next = (t.next + 1) % truthSteps
	t.n = min(t.n+1, truthSteps)
}

// at returns where the server had body id at authority time r, blended
// between the two steps around r (across a teleport, which takes effect
// at the later step's time, the pose on r's side of it); ok is false outside the kept steps or
// for a body not in both.
func (t *truth) at(id island.MemberID, r island.Time) (x, y float64, ok bool) {
	if t.n == 0 {
		return 0, 0, false
	}
	newest := (t.next - 1 + truthSteps) % truthSteps
	for k := 0; k < t.n-1; k++ {
		hi := (newest - k + truthSteps) % truthSteps
		lo := (hi - 1 + truthSteps) % truthSteps
		if t.times[lo] <= r && r <= t.times[hi] {
			a, okA := t.pos[lo][id]
			b, okB := t.pos[hi][id]
			if !okA || !okB {
				return 0, 0, false
			}
			if a[2] != b[2] { // a teleport at the later step's time
				if r < t.times[hi] {
					return a[0], a[1], true
				}
				return b[0], b[1], true
			}
			f := float64(r-t.times[lo]) / float64(t.times[hi]-t.times[lo])
			return a[0] + (b[0]-a[0])*f, a[1] + (b[1]-a[1])*f, true
		}
	}
	return 0, 0, false
}

// distance returns how far a displayed pose is from the server's at r.
func (t *truth) distance(id island.MemberID, r island.Time, x, y float64) (float64, bool) {
	tx, ty, ok := t.at(id, r)
	if !ok {
		return 0, false
	}
	return math.Hypot(x-tx, y-ty), true
}
