package store

import (
	"testing"

	"github.com/islandsync/islandsync/island"
)

const ms = 1000 // µs

// feed observes authority time t (ms) arriving at local time at (ms).
func feed(c *Clock, at, t int64) { c.Observe(at*ms, 1, island.Time(t*ms)) }

// run advances the clock in 10 ms render ticks from local from to to (ms).
func run(c *Clock, from, to int64) {
	for now := from; now <= to; now += 10 {
		c.Advance(now * ms)
	}
}

func rOf(c *Clock) int64 { r, _ := c.R(); return int64(r) }

// frozenAt1s builds the frozen-at-1-s situation: samples every 50 ms up to 0.9 s
// arriving 50 ms late, then silence; r runs into latest + E = 1.0 s.
func frozenAt1s(t *testing.T) (*Clock, int64) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	now := int64(0)
	for ts := int64(600); ts <= 900; ts += 50 {
		now = ts + 50
		feed(c, now, ts)
		c.Advance(now * ms)
	}
	for c.State() != Frozen && now < 5000 {
		now += 10
		c.Advance(now * ms)
	}
	return c, now
}

func TestClockMonotoneAndRateClamp(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	var prev int64
	anchored := false
	for now := int64(0); now < 3000; now += 10 {
		if now%50 == 0 {
			feed(c, now+30, now) // steady 30 ms latency
		}
		before := rOf(c)
		st := c.Advance((now + 30) * ms)
		r := rOf(c)
		if anchored && r < prev {
			t.Fatalf("r went backwards at %d: %d < %d", now, r, prev)
		}
		if anchored && st == Playing && before != 0 {
			if d := r - before; d > 10*ms*105/100+1 || (d < 10*ms*95/100-1 && d != 0) {
				t.Fatalf("rate outside [0.95, 1.05]: %d µs in 10 ms", d)
			}
		}
		_, anchored = c.R()
		prev = r
	}
	if c.State() != Playing {
		t.Fatalf("steady stream ends %v", c.State())
	}
	// With 30 ms latency and D = 100 ms the picture is about D old.
	if age := c.Stats().SnapshotAge; age < 80*ms || age > 110*ms {
		t.Fatalf("snapshot age %d", age)
	}
	// Steady 50 ms arrivals: G = 50 ms → Dtarget = G + T = 100 ms.
	if d := c.DelayTarget(); d != 100*ms {
		t.Fatalf("Dtarget %d", d)
	}
}

// TestDelayAdaptation: G is the 95th percentile of advancing arrival
// intervals; late frames do not feed it; D moves at most 10 ms per second.
func TestDelayAdaptation(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	now := int64(0)
	for k := int64(0); k < 64; k++ {
		now += 150 // a bursty link: 150 ms between arrivals
		feed(c, now, k*50)
	}
	if d := c.DelayTarget(); d != 200*ms {
		t.Fatalf("G=150 ms: Dtarget %d, want 200 ms", d)
	}
	for k := int64(0); k < 64; k++ { // replays and late frames
		feed(c, now+1, k*50)
	}
	if d := c.DelayTarget(); d != 200*ms {
		t.Fatalf("late frames moved Dtarget to %d", d)
	}
	d0 := c.Delay()
	c.Advance(now * ms)
	c.Advance((now + 1000) * ms)
	if got := c.Delay() - d0; got != 10*ms {
		t.Fatalf("D moved %d µs in 1 s, want 10 ms", got)
	}
	// Large gaps are capped: Dtarget ≤ max(2T, 250 ms).
	for k := int64(64); k < 140; k++ {
		now += 2000
		feed(c, now, k*50)
	}
	if d := c.DelayTarget(); d != 250*ms {
		t.Fatalf("cap: %d", d)
	}
}

func TestClockNewEpochIsNewTimeline(t *testing.T) {
	c, now := frozenAt1s(t)
	gen := c.Generation()
	c.Observe((now+10)*ms, 2, 50*ms)
	if c.State() != Waiting || c.Epoch() != 2 || c.Generation() == gen {
		t.Fatalf("%v epoch %d", c.State(), c.Epoch())
	}
	c.Observe((now+20)*ms, 1, 5000*ms) // the old epoch is ignored
	if c.Latest() != 50*ms {
		t.Fatal("old epoch fed the new timeline")
	}
	c.Observe((now+60)*ms, 2, 100*ms)
	c.Advance((now + 60) * ms)
	if c.State() != Playing || rOf(c) > 100*ms || rOf(c) < 50*ms {
		t.Fatalf("new timeline: %v r=%d", c.State(), rOf(c))
	}
}

func TestClockBacklogReanchors(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	feed(c, 0, 0)
	feed(c, 50, 50)
	c.Advance(50 * ms)
	if c.State() != Playing {
		t.Fatal(c.State())
	}
	// A 2 s backlog arrives at once: catching up at 1.05× would take 40 s.
	for ts := int64(100); ts <= 2100; ts += 50 {
		feed(c, 60, ts)
	}
	c.Advance(2200 * ms)
	if n := c.Stats().Reanchors; n != 1 || rOf(c) < 1900*ms {
		t.Fatalf("reanchors %d r=%d", n, rOf(c))
	}
}

// TestClockLostLeftSample: while frozen, the sample at or before r leaves the
// bounded window; the clock re-synchronises instead of waiting for R.
func TestClockLostLeftSample(t *testing.T) {
	c, now := frozenAt1s(t)
	for k := int64(0); k < SampleWindow; k++ {
		feed(c, now+5, 1500+k*50)
	}
	c.Advance((now + 10) * ms)
	if c.Stats().Reanchors != 1 || c.State() != Playing || rOf(c) < 1500*ms {
		t.Fatalf("%v r=%d reanchors=%d", c.State(), rOf(c), c.Stats().Reanchors)
	}
}

// TestDelayTargetOncePerSecond: the p95 of the arrival intervals is
// recomputed once per second, not at every tick: a burst of long intervals
// moves the target only at the next whole second after the last
// computation.
func TestDelayTargetOncePerSecond(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	now := int64(0)
	for k := int64(0); k < 64; k++ {
		now += 50
		feed(c, now, k*50)
	}
	c.Advance(now * ms) // computes Dtarget = 100 ms
	if c.target != 100*ms {
		t.Fatalf("target %d", c.target)
	}
	computed := now
	for k := int64(64); k < 128; k++ {
		now += 150
		feed(c, now, k*50)
	}
	if c.DelayTarget() != 200*ms {
		t.Fatal("the intervals did not change")
	}
	c.Advance((computed + 999) * ms)
	if c.target != 100*ms {
		t.Fatalf("recomputed within the second: %d", c.target)
	}
	c.Advance((computed + 1000) * ms)
	if c.target != 200*ms {
		t.Fatalf("not recomputed after a second: %d", c.target)
	}
}
