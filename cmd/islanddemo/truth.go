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

// span is the pair of kept steps around an authority time: found once per
// view, then looked up for each of its bodies.
type span struct {
	lo, hi int
	r      island.Time
	ok     bool
}

// around returns the kept steps around r; ok is false outside them.
func (t *truth) around(r island.Time) span {
	newest := (t.next - 1 + truthSteps) % truthSteps
	for k := 0; k < t.n-1; k++ {
		hi := (newest - k + truthSteps) % truthSteps
		lo := (hi - 1 + truthSteps) % truthSteps
		if t.times[lo] <= r && r <= t.times[hi] {
			return span{lo: lo, hi: hi, r: r, ok: true}
		}
	}
	return span{}
}

// at returns where the server had body id at the span's time, blended
// between its two steps (across a teleport, which takes effect at the
// later step's time, the pose on the time's side of it); ok is false for
// a body not in both. sp must be one around found.
func (t *truth) at(id island.MemberID, sp span) (x, y float64, ok bool) {
	a, okA := t.pos[sp.lo][id]
	b, okB := t.pos[sp.hi][id]
	if !okA || !okB {
		return 0, 0, false
	}
	if a[2] != b[2] { // a teleport at the later step's time
		if sp.r < t.times[sp.hi] {
			return a[0], a[1], true
		}
		return b[0], b[1], true
	}
	f := float64(sp.r-t.times[sp.lo]) / float64(t.times[sp.hi]-t.times[sp.lo])
	return a[0] + (b[0]-a[0])*f, a[1] + (b[1]-a[1])*f, true
}

// distance returns how far a displayed pose is from the server's at the
// span's time.
func (t *truth) distance(id island.MemberID, sp span, x, y float64) (float64, bool) {
	tx, ty, ok := t.at(id, sp)
	if !ok {
		return 0, false
	}
	return math.Hypot(x-tx, y-ty), true
}
