package store

import (
	"slices"

	"github.com/islandsync/islandsync/island"
)

// ClockState is the playout clock's state.
type ClockState uint8

const (
	// Waiting: no playback time is anchored (start-up, after a timeout, a lost
	// left sample, a backlog or a new epoch). Nothing is valid to show.
	Waiting ClockState = iota
	// Playing: r advances at a rate within [0.95, 1.05] of real time.
	Playing
	// Frozen: r hit latest + E and stopped; the shown poses freeze with it.
	Frozen
)

func (s ClockState) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Playing:
		return "playing"
	case Frozen:
		return "frozen"
	}
	return "unknown"
}

// ClockConfig sets the playout clock's constants. All times are microseconds;
// zero fields mean the documented defaults.
type ClockConfig struct {
	// SendPeriod is the authority's broadcast period T. Zero means 50 ms.
	SendPeriod int64
	// ExtrapolationCap is E: r never runs past latest + E. Zero means 100 ms.
	ExtrapolationCap int64
	// WaitTimeout is R: longest freeze before re-synchronising, and the
	// largest backlog |target − r| tolerated. Zero means 500 ms.
	WaitTimeout int64
	// MaxDelay caps the adaptive delay target. Zero means max(2T, 250 ms).
	MaxDelay int64
}

func (c ClockConfig) withDefaults() ClockConfig {
	if c.SendPeriod <= 0 {
		c.SendPeriod = 50_000
	}
	if c.ExtrapolationCap <= 0 {
		c.ExtrapolationCap = 100_000
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 500_000
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = max(2*c.SendPeriod, 250_000)
	}
	return c
}

// Window sizes of the clock's bounded histories.
const (
	// IntervalWindow is how many arrival intervals feed the delay percentile.
	IntervalWindow = 64
	// SampleWindow is how many distinct authority times the clock remembers.
	SampleWindow = 64
)

// Clock is one observer's shared playout clock: monotonic playback with
// buffer recovery.
// It turns arrivals of validated frames into one playback time r in
// authority microseconds that every island is evaluated at. It never reads a
// clock: Observe and Advance take the caller's local time now (µs). It is not
// safe for concurrent use.
type Clock struct {
	cfg   ClockConfig
	state ClockState
	r     int64 // playback time, authority µs; meaningful once anchored
	anch  bool  // r has been anchored at least once in this epoch
	gen   uint32
	delay int64 // D, µs

	epoch     uint32
	haveEpoch bool
	samples   []int64 // distinct authority times of this epoch, ascending, ≤ SampleWindow
	latest    int64
	lastArr   int64 // local time of the last advancing arrival
	haveArr   bool
	intervals [IntervalWindow]int64
	nInt      int
	iInt      int
	offsets   [IntervalWindow]int64 // arrival − authority time of advancing arrivals
	nOff      int
	iOff      int
	lastNow   int64
	haveNow   bool
	frozeAt   int64
	scratch   []int64
	target    int64 // Dtarget as last computed
	targetAt  int64 // local time it was computed
	haveTgt   bool

	frozenTime, waitingTime int64
	reanchors               uint64
}

// NewClock returns a clock in state Waiting.
func NewClock(cfg ClockConfig) *Clock {
	c := cfg.withDefaults()
	return &Clock{cfg: c, delay: 2 * c.SendPeriod, samples: make([]int64, 0, SampleWindow)}
}

// State, R, Generation and Delay report the clock.
func (c *Clock) State() ClockState { return c.state }

// R returns the playback time in authority microseconds, and false while no
// time is anchored.
func (c *Clock) R() (island.Time, bool) { return island.Time(c.r), c.anch }

// Generation returns the local playback generation; it bumps on every
// (re-)anchor and on a new epoch, so results computed for an older
// generation can be discarded.
func (c *Clock) Generation() uint32 { return c.gen }

// Delay returns the current interpolation delay D, µs.
func (c *Clock) Delay() int64 { return c.delay }

// Epoch returns the server epoch of the current timeline.
func (c *Clock) Epoch() uint32 { return c.epoch }

// Latest returns the newest authority time observed in this epoch.
func (c *Clock) Latest() island.Time { return island.Time(c.latest) }

// Observe records that a validated frame of authority time t arrived at
// local time now. epoch is the server's timeline epoch — it changes when the
// authority's simulation clock restarts — not an island's ownership epoch: a
// hand-off of one island keeps the shared timeline. A newer epoch starts a new timeline; an
// older epoch is ignored. A time already seen is a duplicate and changes
// nothing. Only frames that advance the newest time feed the delay estimate.
func (c *Clock) Observe(now int64, epoch uint32, t island.Time) {
	if !c.haveEpoch || (epoch != c.epoch && island.SeqNewer(epoch, c.epoch)) {
		c.newTimeline(epoch)
	} else if epoch != c.epoch {
		return
	}
	ts := int64(t)
	if n := len(c.samples); n > 0 && c.samples[n-1] == ts {
		return // the newest time again: every island of a broadcast shares it
	}
	i, found := slices.BinarySearch(c.samples, ts)
	if found {
		return
	}
	if len(c.samples) == SampleWindow {
		if i == 0 {
			return // older than everything kept
		}
		copy(c.samples, c.samples[1:i])
		c.samples[i-1] = ts
	} else {
		c.samples = slices.Insert(c.samples, i, ts)
	}
	if ts <= c.latest && len(c.samples) > 1 {
		return // late: fills history, does not feed G
	}
	if c.haveArr {
		c.intervals[c.iInt] = now - c.lastArr
		c.iInt = (c.iInt + 1) % IntervalWindow
		c.nInt = min(c.nInt+1, IntervalWindow)
	}
	c.offsets[c.iOff] = now - ts
	c.iOff = (c.iOff + 1) % IntervalWindow
	c.nOff = min(c.nOff+1, IntervalWindow)
	c.latest, c.lastArr, c.haveArr = ts, now, true
}

func (c *Clock) newTimeline(epoch uint32) {
	c.epoch, c.haveEpoch = epoch, true
	c.samples = c.samples[:0]
	c.nInt, c.iInt, c.nOff, c.iOff = 0, 0, 0, 0
	c.haveArr, c.anch, c.latest = false, false, 0
	c.state = Waiting
	c.haveTgt = false
	c.gen++
}

// serverEstimate returns the estimated current authority time at local time
// now: now minus the smallest recent (arrival − authority time) offset.
func (c *Clock) serverEstimate(now int64) int64 {
	if c.nOff == 0 {
		return c.latest
	}
	off := c.offsets[0]
	for _, o := range c.offsets[1:c.nOff] {
		off = min(off, o)
	}
	return now - off
}

// DelayTarget returns Dtarget = clamp(G + T, 2T, max(2T, MaxDelay)) where G
// is the 95th percentile of the recent arrival intervals (T when none).
func (c *Clock) DelayTarget() int64 {
	t := c.cfg.SendPeriod
	g := t
	if c.nInt > 0 {
		c.scratch = append(c.scratch[:0], c.intervals[:c.nInt]...)
		slices.Sort(c.scratch)
		g = c.scratch[percentileIndex(c.nInt, 95)]
	}
	return clamp(g+t, 2*t, max(2*t, c.cfg.MaxDelay))
}

// percentileIndex returns the nearest-rank index of the p-th percentile of n
// sorted values.
func percentileIndex(n, p int) int {
	k := (p*n + 99) / 100 // ceil(p·n/100)
	return max(k-1, 0)
}

// Advance moves the clock to local time now (one render tick) and returns
// its state.
func (c *Clock) Advance(now int64) ClockState {
	dt := int64(0)
	if c.haveNow {
		dt = max(now-c.lastNow, 0)
	}
	c.lastNow, c.haveNow = now, true
	switch c.state {
	case Frozen:
		c.frozenTime += dt
	case Waiting:
		c.waitingTime += dt
	}
	// Dtarget (the p95 of the arrival intervals) is recomputed once per
	// second, not every tick; D follows it by at most 0.01 s per second.
	if !c.haveTgt || now-c.targetAt >= 1_000_000 {
		c.target, c.targetAt, c.haveTgt = c.DelayTarget(), now, true
	}
	step := dt / 100
	c.delay = clamp(c.target, c.delay-step, c.delay+step)
	target := min(c.serverEstimate(now)-c.delay, c.latest-c.cfg.SendPeriod)

	switch c.state {
	case Waiting:
		c.tryAnchor(target)
	case Playing:
		if abs(target-c.r) > c.cfg.WaitTimeout {
			c.state = Waiting // backlog: re-anchor explicitly
			c.reanchors++
			c.tryAnchor(target)
			return c.state
		}
		rate := clampf(1+2*float64(target-c.r)/1e6, 0.95, 1.05)
		next := c.r + int64(rate*float64(dt)+0.5)
		limit := c.latest + c.cfg.ExtrapolationCap
		if next >= limit {
			next = limit
			c.state, c.frozeAt = Frozen, now
		}
		c.r = max(c.r, next)
	case Frozen:
		resume := max(2*c.cfg.SendPeriod, 100_000)
		switch {
		case c.latest-c.r >= resume && c.covered(c.r):
			c.state = Playing // at the same r
		case now-c.frozeAt >= c.cfg.WaitTimeout || !c.hasLeft(c.r):
			c.state = Waiting
			c.reanchors++
			c.tryAnchor(target)
		}
	}
	return c.state
}

// tryAnchor applies the re-anchor rule: with at least two samples,
// rNew = clamp(target, max(earliest, rOld), secondLatest), allowed only when
// secondLatest ≥ rOld so r never moves backwards. The first anchor of an
// epoch picks rNew in [earliest, secondLatest].
func (c *Clock) tryAnchor(target int64) {
	if len(c.samples) < 2 {
		return
	}
	earliest, second := c.samples[0], c.samples[len(c.samples)-2]
	var r int64
	if c.anch {
		var ok bool
		r, ok = Reanchor(target, earliest, c.r, second)
		if !ok {
			return
		}
	} else {
		r = clamp(target, earliest, second)
	}
	c.r, c.anch, c.state = r, true, Playing
	c.gen++
}

// Reanchor is the re-synchronisation rule as a pure function (µs):
// rNew = clamp(target, max(earliest, rOld), secondLatest), valid only when
// secondLatest ≥ rOld.
func Reanchor(target, earliest, rOld, secondLatest int64) (int64, bool) {
	if secondLatest < rOld {
		return rOld, false
	}
	return clamp(target, max(earliest, rOld), secondLatest), true
}

// covered reports whether two samples bracket t (t0 ≤ t ≤ t1).
func (c *Clock) covered(t int64) bool {
	return len(c.samples) >= 2 && c.samples[0] <= t && c.samples[len(c.samples)-1] >= t
}

// hasLeft reports whether a sample at or before t is still held.
func (c *Clock) hasLeft(t int64) bool { return len(c.samples) > 0 && c.samples[0] <= t }

// ClockStats are the clock's diagnostics.
type ClockStats struct {
	State       ClockState
	R           int64  // playback time, authority µs
	Delay       int64  // current D, µs
	Generation  uint32 // playback generation
	FrozenTime  int64  // total local µs spent Frozen
	WaitingTime int64  // total local µs spent Waiting
	Reanchors   uint64 // timeouts, lost left samples and backlogs that forced a re-anchor
	BufferFill  int64  // latest − r, µs: how much received future is buffered
	SnapshotAge int64  // estimated server time − r at the last Advance, µs: how old what is shown is
}

// Stats returns the clock's diagnostics.
func (c *Clock) Stats() ClockStats {
	return ClockStats{State: c.state, R: c.r, Delay: c.delay, Generation: c.gen, FrozenTime: c.frozenTime,
		WaitingTime: c.waitingTime, Reanchors: c.reanchors, BufferFill: c.latest - c.r,
		SnapshotAge: c.serverEstimate(c.lastNow) - c.r}
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

func clampf(v, lo, hi float64) float64 { return max(lo, min(v, hi)) }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
