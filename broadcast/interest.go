package broadcast

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// Areas of interest: an observer that subscribes to regions
// (codec.Subscribe.Regions) wants the islands whose bounds meet one of
// them. The broadcaster keeps every island's bounds — the box around its
// members' centres in its newest frame — and at each broadcast, before
// encoding, brings each such observer's islands up to date:
//
//   - an island whose bounds meet a region enters: the Announce of its
//     members, its Lease, Manifest and Physics are queued (its catch-up)
//     before any of its frames — a region observer is not sent the whole
//     world's identities when it joins;
//   - an island in interest whose bounds no longer meet any region grown by
//     Config.InterestMargin is out; once it has stayed out for
//     Config.InterestGrace broadcasts it gets a Forget and the observer's
//     baselines of it are dropped. An island coming back within the grace
//     simply stays. So islands at a boundary do not flicker in and out.
//
// Islands near a region's centre matter most to an observer looking there:
// under a budget, an island's importance to it is multiplied by
// 1 + 7·max(0, 1 − d/Config.FocusRadius), d the distance from the island's
// centre to the nearest region's centre.

// Interest defaults.
const (
	// DefaultInterestMargin is how far, in metres, an island may drift out
	// of every region before it starts to leave.
	DefaultInterestMargin = 5.0
	// DefaultInterestGrace is how many broadcasts an island stays out of
	// every grown region before it is forgotten (1 s at 20 Hz).
	DefaultInterestGrace = 20
	// DefaultFocusRadius is the radius, in metres, around a region's
	// centre within which islands gain importance.
	DefaultFocusRadius = 20.0
	// focusGain is the importance an island at a region's very centre
	// gains, beyond its own: it counts 1 + focusGain times.
	focusGain = 7
)

// box is an island's bounds in world metres.
type box struct{ x0, y0, x1, y1 float64 }

func (b box) centre() (x, y float64) { return (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2 }

// boundsOf returns the box around f's members' centres; false when a
// position is not finite.
func boundsOf(f *island.Frame) (box, bool) {
	bx := box{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for i := range f.Members {
		s := &f.Members[i].State
		if math.IsNaN(s.X) || math.IsNaN(s.Y) || math.IsInf(s.X, 0) || math.IsInf(s.Y, 0) {
			return box{}, false
		}
		bx.x0, bx.x1 = min(bx.x0, s.X), max(bx.x1, s.X)
		bx.y0, bx.y1 = min(bx.y0, s.Y), max(bx.y1, s.Y)
	}
	return bx, len(f.Members) > 0
}

// meets reports whether bx meets one of rs grown by m metres.
func meets(rs []codec.Region, bx box, m float64) bool {
	for _, r := range rs {
		if r.Grow(m).Meets(bx.x0, bx.y0, bx.x1, bx.y1) {
			return true
		}
	}
	return false
}

// interest is one island in a region observer's interest.
type interest struct {
	out   bool   // out of every grown region since outAt
	outAt uint32 // broadcast sequence it went out
}

// subscribeRegions puts o in region mode with regions rs. Islands it had
// stay in its interest until they have been out of every region for the
// grace.
func (b *Broadcaster) subscribeRegions(o *observer, rs []codec.Region) {
	if o.regions == nil {
		o.inside = map[uint32]*interest{}
		for _, isl := range b.liveIslands() {
			if o.wants(isl) {
				o.inside[isl] = &interest{}
			}
		}
	}
	if o.restricted {
		for _, isl := range b.sortedLive() {
			if _, in := o.inside[isl]; in {
				if _, ok := slices.BinarySearch(o.allowed, isl); !ok {
					b.leave(o, isl)
				}
			}
		}
	}
	o.regions = slices.Clone(rs)
	o.all, o.subs = false, nil
	o.subKey = fmt.Sprintf("R%d", o.id) // nobody shares a wire-1 encoding with it
}

// interests keeps island bounds and brings every region observer's
// interest up to date, in ascending observer order, before frames are
// encoded. Without region observers it does nothing.
func (b *Broadcaster) interests(frames []*island.Frame) {
	if len(frames) == 0 {
		return // not a broadcast: a step between two
	}
	b.ticks++
	ids := b.regionIDs[:0]
	for id, o := range b.observers {
		if o.regions != nil {
			ids = append(ids, id)
		}
	}
	b.regionIDs = ids
	if len(ids) == 0 {
		return
	}
	b.noteBounds(frames)
	slices.Sort(ids)
	for _, id := range ids {
		b.updateInterest(b.observers[id])
	}
}

// noteBounds records the bounds of a broadcast's frames.
func (b *Broadcaster) noteBounds(frames []*island.Frame) {
	for _, f := range frames {
		if !b.live(f.Key.Island) {
			continue
		}
		if bx, ok := boundsOf(f); ok {
			b.bounds[f.Key.Island] = bx
		}
	}
}

// updateInterest brings a region observer's islands up to date with their
// bounds: catch-ups for those entering, Forgets for those out past the grace.
func (b *Broadcaster) updateInterest(o *observer) {
	margin, grace := b.cfg.InterestMargin, uint32(b.cfg.InterestGrace)
	b.entering = b.entering[:0]
	for _, isl := range b.sortedLive() {
		st := o.inside[isl]
		bx, ok := b.bounds[isl]
		if !ok {
			continue // no frame yet: where it is is not known
		}
		switch {
		case st == nil:
			if !meets(o.regions, bx, 0) {
				continue
			}
			if o.restricted {
				if _, ok := slices.BinarySearch(o.allowed, isl); !ok {
					continue
				}
			}
			b.entering = append(b.entering, entrant{d2: dist2(o, bx), isl: isl})
		case meets(o.regions, bx, margin):
			st.out = false
		case !st.out:
			st.out, st.outAt = true, b.ticks
			if grace == 0 {
				b.leave(o, isl)
			}
		case b.ticks-st.outAt >= grace:
			b.leave(o, isl)
		}
	}
	b.admit(o)
}

// entrant is an island entering a region observer's interest, with the
// squared distance from its centre to the nearest region's centre.
type entrant struct {
	d2  float64
	isl uint32
}

// catchUpShare is the percentage of an observer's budget per broadcast
// that catch-ups of islands entering its interest may take.
const catchUpShare = 50

// admit lets the islands entering o's interest (b.entering, ascending) in,
// each with its catch-up, up to Config.MaxIslands in interest. Without a
// budget all enter at once. Under one, the islands nearest a region's
// centre enter first, and once this broadcast's catch-ups have taken
// catchUpShare % of the budget (or what is left of it) the rest wait for
// the next broadcasts: a camera sweeping into a crowded area does not
// spend the whole budget on identities and physics while the islands
// already in view go stale. While the budget has anything left, at least
// one island enters, however large its catch-up; the debt it leaves is
// paid back, as a large frame's is, before the next one enters.
func (b *Broadcaster) admit(o *observer) {
	allow := math.MaxInt
	if budget := b.budgetOf(o); budget > 0 {
		// What this broadcast's refill will leave once the control
		// already queued is paid: nothing while a debt is paid back.
		left := min(o.bucket.credit+budget, budget) - o.ctlOwed
		allow = min(budget*catchUpShare/100, left)
		slices.SortFunc(b.entering, func(x, y entrant) int {
			if c := cmp.Compare(x.d2, y.d2); c != 0 {
				return c
			}
			return cmp.Compare(x.isl, y.isl)
		})
	}
	spent := 0
	for _, e := range b.entering {
		if spent >= allow || len(o.inside) >= b.cfg.MaxIslands {
			break
		}
		n := len(o.ctl)
		o.inside[e.isl] = &interest{}
		b.catchUp(o, e.isl)
		spent += len(o.ctl) - n
	}
}

// leave takes island isl out of o's interest: a Forget, and o's baselines
// of it dropped.
func (b *Broadcaster) leave(o *observer, isl uint32) {
	queue(b, o, codec.Forget{Island: isl})
	o.forgetIsland(isl)
	delete(o.inside, isl)
}

// catchUp queues what a region observer needs of island isl before its
// frames: its members' identities, lease, manifest and physics.
func (b *Broadcaster) catchUp(o *observer, isl uint32) {
	queue(b, o, codec.Announce{IDs: b.manifests[isl].Members})
	queue(b, o, codec.Lease(b.leases[isl]))
	queue(b, o, codec.Manifest(b.manifests[isl]))
	b.queuePhysics(o, isl)
}

// sortedLive returns the live islands ascending, recomputed only when a
// lease or manifest changed.
func (b *Broadcaster) sortedLive() []uint32 {
	if b.sortedGen != b.liveGen || b.sorted == nil {
		b.sorted, b.sortedGen = b.liveIslands(), b.liveGen
	}
	return b.sorted
}

// focus is how much more an island with bounds bx matters to region
// observer o: 1 far from every region's centre, up to 1 + focusGain at one.
func (b *Broadcaster) focus(o *observer, bx box) float64 {
	if o.regions == nil || b.cfg.FocusRadius <= 0 {
		return 1
	}
	return 1 + focusGain*max(0, 1-math.Sqrt(dist2(o, bx))/b.cfg.FocusRadius)
}

// dist2 is the squared distance, in square metres, from the centre of
// bounds bx to the nearest centre of o's regions.
func dist2(o *observer, bx box) float64 {
	cx, cy := bx.centre()
	d2 := math.Inf(1)
	for _, r := range o.regions {
		x, y := r.Centre()
		d2 = min(d2, (cx-x)*(cx-x)+(cy-y)*(cy-y))
	}
	return d2
}
