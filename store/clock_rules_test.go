package store

import (
	"math"
	"testing"
)

// steady feeds authority times every 50 ms from ts0 (ms) up to ts1, each
// arriving lat ms after its authority time, with 10 ms render ticks in
// between, and returns the last local time (ms).
func steady(c *Clock, now, ts0, ts1, lat int64) int64 {
	for ts := ts0; ts <= ts1; ts += 50 {
		for ; now+10 <= ts+lat; now += 10 {
			c.Advance(now * ms)
		}
		feed(c, ts+lat, ts)
		now = ts + lat
		c.Advance(now * ms)
	}
	return now
}

// TestClockTargetBoundedByLatest: the playback target is never later than
// latest − T, whatever the server estimate says. Frames arrive at once
// (offset 0, so the estimate runs with local time); when they stop, the
// estimate keeps running but the target stays at latest − T, so r falls
// below its estimate-led pace and advances at the slowest rate, 0.95.
func TestClockTargetBoundedByLatest(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms, ExtrapolationCap: 400 * ms})
	now := steady(c, 0, 0, 3000, 0) // the last frame: 3.0 s, at 3.0 s
	if c.State() != Playing {
		t.Fatalf("setup: %v", c.State())
	}
	// r sits near now − D = 2.9 s; the bound, 2.95 s, is not yet reached.
	run(c, now+10, now+100)
	r0 := rOf(c)
	run(c, now+110, now+300)
	got, dt := float64(rOf(c)-r0), float64(200*ms)
	if got > 0.951*dt || got < 0.949*dt {
		t.Fatalf("r advanced %.0f µs in 200 ms without new data, want 0.95 of it", got)
	}
}

// TestClockRateGain: r closes a gap to its target at rate 1 + 2·(target −
// r) (in seconds), so a 20 ms jump of the target decays as e^(−2t): to 37 %
// after 0.5 s, not faster nor slower. (Measured against the lead r keeps
// over its target with 10 ms ticks before the jump.)
func TestClockRateGain(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	now := steady(c, 0, 0, 3000, 100) // 100 ms late: target = now − 100 − D
	gap := func(lat int64) float64 { return float64(now*ms-lat*ms-c.Delay()-rOf(c)) / 1000 }
	lead := gap(100)
	// The link gets 20 ms faster: the estimate, and the target, jump 20 ms.
	now = steady(c, now, 3050, 3050, 80)
	g0 := gap(80) - lead
	now = steady(c, now, 3100, 3550, 80)
	g1 := gap(80) - lead
	if g0 < 15 || g0 > 25 {
		t.Fatalf("setup: gap %.1f ms after the jump, want about 20", g0)
	}
	want := g0 * math.Exp(-2*0.5)
	if g1 < 0.9*want || g1 > 1.1*want {
		t.Fatalf("gap %.2f ms → %.2f ms in 0.5 s, want %.2f (gain 2)", g0, g1, want)
	}
}

// TestClockFirstAnchorUpperBound: the first anchor of a timeline is no
// later than the second-latest sample, even when the target is: with
// samples at 1.0 s and 1.2 s arriving at once, the target is 1.1 s but r
// starts at 1.0 s, so that a frame is there to interpolate towards.
func TestClockFirstAnchorUpperBound(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms})
	feed(c, 1000, 1000)
	c.Advance(1000 * ms)
	feed(c, 1200, 1200)
	c.Advance(1200 * ms)
	if c.State() != Playing || rOf(c) != 1000*ms {
		t.Fatalf("first anchor: %v at r %d, want Playing at 1.0 s", c.State(), rOf(c))
	}
}

// TestDelayPercentileWindow: the delay target follows the 95th percentile
// (nearest rank) of the last 64 arrival intervals: 4 long ones among 64 set
// it, 3 do not, and long ones older than the last 64 are forgotten.
func TestDelayPercentileWindow(t *testing.T) {
	arrive := func(c *Clock, now, ts *int64, gap int64) {
		*now += gap
		*ts += 50
		feed(c, *now, *ts)
	}
	for _, c := range []struct {
		long, after int
		want        int64
	}{
		{4, 60, 250}, // 4 of the last 64 intervals are 200 ms: p95 = 200, D = 200 + 50
		{3, 61, 100}, // 3 of 64: p95 = 50, D = max(50 + 50, 2T)
		{4, 64, 100}, // the 4 long ones fell out of the window
		{4, 40, 250}, // still in the window of 64 (not of 32)
	} {
		k := NewClock(ClockConfig{SendPeriod: 50 * ms, MaxDelay: 400 * ms})
		now, ts := int64(0), int64(0)
		feed(k, now, ts)
		for range 70 {
			arrive(k, &now, &ts, 50)
		}
		for range c.long {
			arrive(k, &now, &ts, 200)
		}
		for range c.after {
			arrive(k, &now, &ts, 50)
		}
		if d := k.DelayTarget(); d != c.want*ms {
			t.Errorf("%d long intervals then %d short: Dtarget %d µs, want %d ms", c.long, c.after, d, c.want)
		}
	}
}

// TestLateFramesDoNotFeedDelay: a frame older than the newest (late, or a
// replay) fills history but neither counts as an arrival interval nor
// moves latest back. Each on-time frame comes 310 ms after the one before,
// with a late one 300 ms in: the intervals are 310 ms (D = 360 ms), not 300
// and 10.
func TestLateFramesDoNotFeedDelay(t *testing.T) {
	c := NewClock(ClockConfig{SendPeriod: 50 * ms, MaxDelay: 500 * ms})
	now, ts := int64(0), int64(10_000)
	feed(c, now, ts)
	for range 64 {
		feed(c, now+300, ts-5000) // late
		if int64(c.Latest()) != ts*ms {
			t.Fatalf("a late frame moved latest to %d", c.Latest())
		}
		now += 310
		ts += 50
		feed(c, now, ts)
	}
	if d := c.DelayTarget(); d != 360*ms {
		t.Fatalf("Dtarget %d µs, want 360 ms", d)
	}
}
