package store

import (
	"math"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

// Mode is how an island's poses at r were obtained. The whole island always
// has one mode.
type Mode uint8

const (
	// Empty: no frame is held, or the held ones are of a segment that a cut
	// has ended: the island is missing at r — hide it or show a placeholder.
	Empty Mode = iota
	// HoldOldest: r is before the oldest frame; its poses are held (not valid at r).
	HoldOldest
	// Interpolate: one frame pair brackets r; every member uses it with one alpha.
	Interpolate
	// Extrapolate: r is past the newest frame by at most ExtrapolationCap;
	// every member is projected from that frame by the same time.
	Extrapolate
	// Stale: r is past the newest frame by more than the cap; the whole
	// island is held at newest + cap (frozen, not valid at r).
	Stale
	// SegmentCut: the bracketing frames are in different continuity
	// segments; the right frame's state is shown, never an interpolation.
	SegmentCut
	// Pending: the island does not exist yet at r — its first frame is an
	// Initial one (a new island: spawned, split off, merged, handed over)
	// later than r, and nothing came before it. Not shown, and not missing
	// either: it appears when playback reaches that frame.
	Pending
)

func (m Mode) String() string {
	return [...]string{"empty", "hold-oldest", "interpolate", "extrapolate", "stale", "segment-cut", "pending", "unknown"}[min(m, Pending+1)]
}

// View is one island evaluated at one playback time: the poses of every
// member, in manifest order, and how they were obtained. It is owned by the
// Store and valid until the next Evaluate; the engine applies it as one
// read-out: every member applied exactly once.
type View struct {
	Island       uint32
	Mode         Mode
	R            island.Time // the playback time asked for, authority µs
	SampleTime   island.Time // the time the poses stand for: R when ValidAtR, else the held time
	Segment      uint32      // continuity segment of the poses
	ValidAtR     bool        // false for Empty, HoldOldest and Stale
	Left, Right  island.Key  // frames used; equal for single-frame modes
	Alpha        float64     // weight of Right when interpolating, else 0
	Extrapolated int64       // µs projected past the newest frame (Extrapolate, Stale)
	Smoothing    bool        // a recovery offset is decaying (shared by the whole island)
	Generation   uint32      // clock generation the caller passed in (echoed)
	Handles      []validator.Handle
	Poses        []island.State
}

// Evaluate computes the island's poses at playback time r (authority µs) and
// local time now (µs, for recovery smoothing). gen is the clock generation,
// echoed in the view. It returns nil if the island has no history.
func (s *Store) Evaluate(islandID uint32, r island.Time, now int64, gen uint32) *View {
	h := s.islands.Get(islandID)
	if h == nil {
		return nil
	}
	v := &s.view
	*v = View{Island: islandID, R: r, Generation: gen, Handles: v.Handles[:0], Poses: v.Poses[:0]}
	// The version a newer one replaced goes on until playback reaches the
	// newer one's first frame; then it goes, with what was shown of it.
	fr := h.frames
	h.onPrev = false
	if len(h.prev) > 0 {
		if len(h.frames) == 0 || r < h.frames[0].Time() {
			fr, h.onPrev = h.prev, true
		} else {
			h.dropPrev()
		}
	}
	if len(fr) == 0 {
		v.Mode = Empty
		h.mode = Empty
		return v
	}
	if !h.onPrev && r < fr[0].Time() && fr[0].Flags()&island.FlagInitial != 0 && !h.evaluated {
		v.Mode = Pending // an island that does not exist yet at r
		return v
	}
	// One frame pair for the whole island.
	j := 0
	for j < len(fr) && fr[j].Time() < r {
		j++
	}
	var left, right *validator.Validated
	switch {
	case j == len(fr):
		left = fr[j-1]
	case fr[j].Time() == r:
		left, right = fr[j], fr[j]
	case j == 0:
		right = fr[0]
	default:
		left, right = fr[j-1], fr[j]
	}
	// A cut ends the older segment at its authority time: past it, without
	// a frame of the new segment, there is nothing valid to show.
	if h.haveCut && r >= h.cutAt && fr[len(fr)-1].Segment() != h.cutSeg &&
		island.SeqNewer(h.cutSeg, fr[len(fr)-1].Segment()) {
		v.Mode = Empty
		h.mode = Empty
		h.smoothing = false
		return v
	}
	n := fr[0].Len() // every frame of a history shares one manifest
	v.Poses = resizeStates(v.Poses, n)
	src := left
	// Between the old segment's last frame and a known cut, the old segment
	// still holds: it continues until the cut's time.
	beforeCut := left != nil && right != nil && left.Segment() != right.Segment() && h.haveCut &&
		h.cutSeg == right.Segment() && r < h.cutAt
	switch {
	case left == nil: // r before the oldest frame
		v.Mode, src = HoldOldest, right
		v.SampleTime = right.Time()
		copyStates(v.Poses, right)
	case right == nil || beforeCut: // past the newest frame (of its segment)
		dt := int64(r - left.Time())
		v.Extrapolated = dt
		limit := s.cfg.ExtrapolationCap
		if dt <= limit {
			v.Mode, v.ValidAtR, v.SampleTime = Extrapolate, true, r
		} else {
			dt = limit
			v.Mode, v.SampleTime = Stale, left.Time()+island.Time(dt)
		}
		if s.ext != nil && s.ext.Extrapolate(left, dt, v.Poses) {
			s.stats.Simulated++
		} else {
			sec := float64(dt) / 1e6
			for i := range v.Poses {
				v.Poses[i] = extrapolate(left.State(i), sec)
			}
		}
	case left == right:
		v.Mode, v.ValidAtR, v.SampleTime = Interpolate, true, r
		copyStates(v.Poses, left)
	case left.Segment() != right.Segment():
		v.Mode, v.ValidAtR, v.SampleTime, src = SegmentCut, true, r, right
		copyStates(v.Poses, right)
	default:
		v.Mode, v.ValidAtR, v.SampleTime = Interpolate, true, r
		v.Alpha = float64(r-left.Time()) / float64(right.Time()-left.Time())
		if span := int64(right.Time() - left.Time()); span > s.cfg.BridgeGap && s.ext != nil &&
			s.ext.Bridge(left, right, int64(r-left.Time()), v.Poses) {
			s.stats.Bridged++
		} else {
			for i := range v.Poses {
				v.Poses[i] = interpolate(left.State(i), right.State(i), v.Alpha)
			}
		}
	}
	if left != nil {
		v.Left = left.Key()
	} else {
		v.Left = right.Key()
	}
	if right != nil {
		v.Right = right.Key()
	} else {
		v.Right = left.Key()
	}
	v.Segment = src.Segment()
	for i := 0; i < n; i++ {
		v.Handles = append(v.Handles, src.Handle(i))
	}
	s.account(h, v, now)
	s.recover(h, v, left, right, now)
	if s.ext != nil {
		// The joints stand as in the frames the poses come from: the pair
		// an interpolation blends, else the one frame shown or continued.
		if v.Mode == Interpolate && left != right {
			s.ext.Settle(left, right, v.Alpha, v.Poses)
		} else {
			s.ext.Settle(src, nil, 0, v.Poses)
		}
	}
	h.shown = append(h.shown[:0], v.Poses...)
	h.shownBy = append(h.shownBy[:0], v.Handles...)
	h.mode = v.Mode
	h.shownSeg = v.Segment
	h.held = false
	if !h.haveR || r > h.lastR {
		h.lastR, h.haveR = r, true
	}
	switch {
	case v.Mode != Stale:
		h.stale = false
	case !h.stale:
		h.stale, h.staleSince = true, now
	case now-h.staleSince >= s.cfg.StaleCleanup:
		s.stats.StaleCleanups++
		h.invalidate()
		h.stale = false
	}
	h.last = *v
	h.last.Handles, h.last.Poses = nil, nil
	return v
}

// Hold returns the island's last view again, poses unchanged, without
// looking at its frames: what an engine shows while the playout clock is
// Frozen, so that r and the shown poses freeze together whatever arrives.
// The next Evaluate after a hold goes through the island's shared recovery
// correction, never a jump. An island with nothing shown yet is evaluated
// at r as usual. It returns nil if the island has no history.
func (s *Store) Hold(islandID uint32, r island.Time, now int64, gen uint32) *View {
	h := s.islands.Get(islandID)
	cut := h != nil && h.haveCut && r >= h.cutAt && h.cutSeg != h.shownSeg && island.SeqNewer(h.cutSeg, h.shownSeg)
	if h == nil || !h.evaluated || len(h.active()) == 0 || len(h.shown) == 0 || h.last.Mode == Empty || cut {
		return s.Evaluate(islandID, r, now, gen) // a cut ends the held segment too
	}
	v := &s.view
	// The members of the poses shown, not of the newest frame: a version
	// committed since may list other members, or the same in another order.
	handles, poses := append(v.Handles[:0], h.shownBy...), append(v.Poses[:0], h.shown...)
	*v = h.last
	v.Poses, v.Handles = poses, handles
	s.account(h, v, now)
	h.held = true
	return v
}

// account adds the time since the last evaluation to the mode's diagnostics.
func (s *Store) account(h *history, v *View, now int64) {
	if h.evaluated {
		dt := max(now-h.lastEval, 0)
		switch v.Mode {
		case Extrapolate:
			s.stats.ExtrapolationTime += dt
		case Stale:
			s.stats.FreezeTime += dt
		}
	}
	h.lastEval = now
}

// recover applies recovery smoothing: when the island leaves extrapolation or a freeze for
// interpolation, every member's offset between the pose last shown and the
// new pose decays over one duration that starts now for the whole island.
// Boundary frames, segment cuts and large jumps apply at once for every
// member: the island is never part snapped, part smoothed.
func (s *Store) recover(h *history, v *View, left, right *validator.Validated, now int64) {
	leaving := h.evaluated && (h.mode == Extrapolate || h.mode == Stale || h.held) && v.Mode == Interpolate
	h.evaluated = true
	if v.Mode == SegmentCut || v.Mode == HoldOldest || v.Mode == Empty {
		h.smoothing = false
		return
	}
	if leaving && len(h.shown) == len(v.Poses) {
		boundary := (left != nil && left.Flags()&(island.FlagInitial|island.FlagReleasing) != 0) ||
			(right != nil && right.Flags()&(island.FlagInitial|island.FlagReleasing) != 0)
		h.offsets = resizeStates(h.offsets, len(v.Poses))
		worst := 0.0
		for i := range v.Poses {
			o := island.State{
				X:     h.shown[i].X - v.Poses[i].X,
				Y:     h.shown[i].Y - v.Poses[i].Y,
				Angle: shortestArc(h.shown[i].Angle - v.Poses[i].Angle),
			}
			h.offsets[i] = o
			worst = max(worst, math.Hypot(o.X, o.Y))
		}
		s.stats.CorrectionLast = worst
		s.stats.CorrectionMax = max(s.stats.CorrectionMax, worst)
		// A new continuity segment is never blended across, however short
		// the distance: a teleport of 0.5 m is as discontinuous as one of 50.
		if boundary || worst > s.cfg.SnapDistance || v.Segment != h.shownSeg {
			s.stats.Snaps++
			h.smoothing = false
		} else {
			s.stats.Recoveries++
			h.smoothing, h.smoothFrom = true, now
		}
	}
	if !h.smoothing {
		return
	}
	k := 1 - float64(now-h.smoothFrom)/float64(s.cfg.SmoothDuration)
	if k <= 0 {
		h.smoothing = false
		return
	}
	v.Smoothing = true
	for i := range v.Poses {
		v.Poses[i].X += h.offsets[i].X * k
		v.Poses[i].Y += h.offsets[i].Y * k
		v.Poses[i].Angle += h.offsets[i].Angle * k
	}
}

func copyStates(dst []island.State, f *validator.Validated) {
	for i := range dst {
		dst[i] = f.State(i)
	}
}

func resizeStates(s []island.State, n int) []island.State {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]island.State, n)
}

// interpolate blends a toward b by alpha; the angle takes the shortest arc.
func interpolate(a, b island.State, alpha float64) island.State {
	return island.State{
		X:      a.X + (b.X-a.X)*alpha,
		Y:      a.Y + (b.Y-a.Y)*alpha,
		Angle:  a.Angle + shortestArc(b.Angle-a.Angle)*alpha,
		VX:     a.VX + (b.VX-a.VX)*alpha,
		VY:     a.VY + (b.VY-a.VY)*alpha,
		AngVel: a.AngVel + (b.AngVel-a.AngVel)*alpha,
	}
}

// extrapolate projects a forward by dt seconds with its velocities.
func extrapolate(a island.State, dt float64) island.State {
	a.X += a.VX * dt
	a.Y += a.VY * dt
	a.Angle += a.AngVel * dt
	return a
}

// shortestArc wraps an angle difference into [−π, π).
func shortestArc(d float64) float64 {
	if d >= -math.Pi && d < math.Pi {
		return d // the common case: no wrap, no division
	}
	d = math.Mod(d+math.Pi, 2*math.Pi)
	if d < 0 {
		d += 2 * math.Pi
	}
	return d - math.Pi
}
