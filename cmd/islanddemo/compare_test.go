package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/islandsync/islandsync/internal/quantile"
)

// TestCompareCounts: the comparison sums every run's frames and takes the
// snapshot-age quantiles over every render of every run, not the mean of
// each run's: one run whose few renders met a long outage does not make
// the p95 of twenty runs.
func TestCompareCounts(t *testing.T) {
	var r transportRuns
	calm := make([]float64, 28)
	for i := range calm {
		calm[i] = 100
	}
	outage := append(slices.Clone(calm[:10]), 500, 500) // its own p95: 500 ms
	up, upMs := uint64(2), 310.5
	r.add(&scenarioReport{FramesSent: 100, FramesCommitted: 90, SnapshotAgeP95ms: 500, ages: outage,
		Network: networkReport{Silences: 1, SilentMs: 420.2, UpSilences: &up, UpSilentMs: &upMs}})
	r.add(&scenarioReport{FramesSent: 100, FramesCommitted: 100, SnapshotAgeP95ms: 100, ages: calm, Pipeline: receiverReport{HalfFramesApplied: 1},
		Network: networkReport{Silences: 2, SilentMs: 300}})
	r.finish()
	if r.FramesSent != 200 || r.FramesCommitted != 190 || r.CommittedPct != 95 || r.HalfFrames != 1 {
		t.Fatalf("sums %+v", r)
	}
	if r.Silences != 3 || r.SilentMs != 720.2 || r.UpSilences != 2 || r.UpSilentMs != 310.5 {
		t.Fatalf("silences %d (%v ms), from the observer %d (%v ms); want 3 (720.2), 2 (310.5)", r.Silences, r.SilentMs, r.UpSilences, r.UpSilentMs)
	}
	// 40 renders, 2 of them 500 ms: the 38th of them in order is 100 ms.
	if r.SnapshotAgeP95ms != 100 || r.SnapshotAgeP50ms != 100 {
		t.Fatalf("pooled ages p50 %v p95 %v, want 100 and 100", r.SnapshotAgeP50ms, r.SnapshotAgeP95ms)
	}
	if r.SeedAgeP95Median != 500 { // of 100 and 500, the higher
		t.Fatalf("median of the runs' p95s %v", r.SeedAgeP95Median)
	}
	if !slices.Equal(r.SeedCommittedPct, []float64{90, 100}) || !slices.Equal(r.SeedAgeP95ms, []float64{500, 100}) {
		t.Fatalf("per seed %v %v", r.SeedCommittedPct, r.SeedAgeP95ms)
	}
}

// TestAgeHistogram: the pooled quantiles are the nearest-rank ones of every
// age counted, to the millisecond below; ages outside its range count at
// its ends.
func TestAgeHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h ageHistogram
	var all []float64
	for range 5 {
		v := make([]float64, 1+r.IntN(500))
		for i := range v {
			v[i] = r.Float64() * 900
		}
		h.add(v)
		all = append(all, v...)
	}
	for _, p := range []float64{1, 50, 95, 99, 100} {
		if got, want := h.quantile(p), math.Floor(quantile.Nearest(all, p)); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	var e ageHistogram
	if e.quantile(95) != 0 {
		t.Fatal("an empty histogram's p95 is not 0")
	}
	e.add([]float64{-3, 1e9})
	if e.quantile(1) != 0 || e.quantile(100) != maxAgeMs {
		t.Fatalf("ends: p1 %v, p100 %v", e.quantile(1), e.quantile(100))
	}
}

// TestCompare runs one short scenario over two seeds on both transports:
// each seed ran on each, the JSON carries both sides, their difference and
// the per-seed figures, and the table says what it compares.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("real network test")
	}
	var out, errs bytes.Buffer
	if code := run([]string{"-compare", "2", "-seed", "5", "-scenario", "teleport", "-duration", "0.5", "-json"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var c compareReport
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Seeds, []uint64{5, 6}) || len(c.Scenarios) != 1 || !c.Impairments.Adversary {
		t.Fatalf("report %+v", c)
	}
	s := c.Scenarios[0]
	// The simulated link's runs are the same on any machine; the QUIC ones
	// run half a second of wall time each, in which a loaded machine may
	// step the authority little: only their shape is checked.
	if s.Mem.FramesSent == 0 || s.Mem.FramesCommitted == 0 {
		t.Fatalf("simulated link: %+v", s.Mem)
	}
	for _, side := range []transportRuns{s.Mem, s.QUIC} {
		if side.FramesCommitted > side.FramesSent || len(side.SeedCommittedPct) != 2 || len(side.SeedAgeP95ms) != 2 || side.HalfFrames != 0 {
			t.Fatalf("%s: %+v", s.Name, side)
		}
	}
	if s.Diff.CommittedPoints != round(s.Mem.CommittedPct-s.QUIC.CommittedPct, 1) || s.Diff.AgeP95ms != round(s.QUIC.SnapshotAgeP95ms-s.Mem.SnapshotAgeP95ms, 1) {
		t.Fatalf("difference %+v of %+v and %+v", s.Diff, s.Mem, s.QUIC)
	}
	if got := strings.Count(errs.String(), "done"); got != 2 {
		t.Fatalf("progress: %d seeds reported\n%s", got, errs.String())
	}
	out.Reset()
	if code := run([]string{"-compare", "1", "-scenario", "teleport", "-duration", "0.5"}, &out, &errs); code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	for _, want := range []string{"the simulated link against QUIC", "teleport", "silences:", "per seed", "largest commit deficit"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
