package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/islandsync/islandsync/scenario"
)

// -compare N runs every selected scenario over N seeds on both transports,
// the simulated link and QUIC through the impairing relay, with the same
// impairments, and sets the two side by side. One run of a few seconds is
// a small sample: a loss burst that takes out a few hundred milliseconds
// moves a run's commit ratio by several points and its snapshot-age p95 by
// hundreds of milliseconds, on either transport, and QUIC runs are not
// repeatable (their packets go out on the machine's timing). So the
// comparison is made over all N runs of each transport: the share of all
// frames sent that committed, and the snapshot-age quantiles of every
// render of every run taken together. The per-seed figures are kept
// beside them.

// compareReport is what -compare -json prints.
type compareReport struct {
	Seeds       []uint64          `json:"seeds"`
	DurationS   float64           `json:"duration_s"`
	SendHz      int               `json:"send_hz"`
	Impairments impairmentReport  `json:"impairments"` // of the simulated link; QUIC runs have no adversary
	Scenarios   []compareScenario `json:"scenarios"`
}

// compareScenario is one scenario on both transports.
type compareScenario struct {
	Name string         `json:"name"`
	Mem  transportRuns  `json:"mem"`
	QUIC transportRuns  `json:"quic"`
	Diff compareDiffers `json:"difference"`
}

// transportRuns sums one scenario's runs on one transport.
type transportRuns struct {
	FramesSent      uint64 `json:"frames_sent"`      // over every run
	FramesCommitted uint64 `json:"frames_committed"` // over every run
	// CommittedPct is FramesCommitted of FramesSent, per cent.
	CommittedPct float64 `json:"committed_pct"`
	// SnapshotAge quantiles over the renders of every run, ms, to the
	// millisecond below (at most 60 000).
	SnapshotAgeP50ms float64 `json:"snapshot_age_p50_ms"`
	SnapshotAgeP95ms float64 `json:"snapshot_age_p95_ms"`
	// SeedAgeP95Median is the median of the runs' own snapshot-age p95s,
	// ms (of two middle ones, the higher).
	SeedAgeP95Median float64 `json:"seed_snapshot_age_p95_median_ms"`
	HalfFrames       int     `json:"half_frames"` // over every run
	// HeldForControl and HeldForControlMs sum the runs' datagrams held
	// for control on its way, and how long those that committed waited, ms.
	HeldForControl   uint64  `json:"held_for_control"`
	HeldForControlMs float64 `json:"held_for_control_ms"`
	// Silences and SilentMs sum the runs' silences on the link to the
	// observer (stretches of 150 ms or more with nothing delivered) and
	// their length, ms; UpSilences and UpSilentMs those on the link from
	// it (over QUIC; zero on the simulated link, which delivers feedback
	// whatever it loses).
	Silences   uint64  `json:"silences"`
	SilentMs   float64 `json:"silent_ms"`
	UpSilences uint64  `json:"up_silences"`
	UpSilentMs float64 `json:"up_silent_ms"`
	// Per seed, in Seeds' order: each run's commit share (per cent) and
	// snapshot-age p95 (ms).
	SeedCommittedPct []float64 `json:"seed_committed_pct"`
	SeedAgeP95ms     []float64 `json:"seed_snapshot_age_p95_ms"`

	ages ageHistogram
}

// ageHistogram counts snapshot ages in whole milliseconds, so that the
// quantiles over every render of many long runs take bounded memory: ages
// of maxAgeMs or more count as maxAgeMs.
type ageHistogram struct {
	n    uint64
	bins []uint64 // bins[ms]: renders whose age was ms to ms+1 ms
}

// maxAgeMs is the largest age ageHistogram tells apart, ms.
const maxAgeMs = 60_000

// add counts ages, ms.
func (h *ageHistogram) add(ages []float64) {
	if h.bins == nil {
		h.bins = make([]uint64, maxAgeMs+1)
	}
	for _, a := range ages {
		h.bins[int(min(max(a, 0), maxAgeMs))]++
		h.n++
	}
}

// quantile returns the nearest-rank p-th percentile, to the millisecond
// below; 0 when nothing was counted.
func (h *ageHistogram) quantile(p float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	var seen uint64
	for ms, c := range h.bins {
		if seen += c; seen >= max(rank, 1) {
			return float64(ms)
		}
	}
	return maxAgeMs
}

// compareDiffers is how far QUIC is behind the simulated link: positive
// when QUIC commits less or shows older snapshots.
type compareDiffers struct {
	CommittedPoints float64 `json:"committed_points"` // mem − quic, percentage points
	AgeP95ms        float64 `json:"snapshot_age_p95_ms"`
	AgeP50ms        float64 `json:"snapshot_age_p50_ms"`
}

// add counts one run.
func (t *transportRuns) add(s *scenarioReport) {
	t.FramesSent += s.FramesSent
	t.FramesCommitted += s.FramesCommitted
	t.HalfFrames += s.Pipeline.HalfFramesApplied
	t.HeldForControl += s.HeldForControl
	t.HeldForControlMs = round(t.HeldForControlMs+s.HeldForControlMs, 1)
	t.Silences += s.Network.Silences
	t.SilentMs = round(t.SilentMs+s.Network.SilentMs, 1)
	if s.Network.UpSilences != nil {
		t.UpSilences += *s.Network.UpSilences
		t.UpSilentMs = round(t.UpSilentMs+*s.Network.UpSilentMs, 1)
	}
	t.SeedCommittedPct = append(t.SeedCommittedPct, pct(s.FramesCommitted, s.FramesSent))
	t.SeedAgeP95ms = append(t.SeedAgeP95ms, s.SnapshotAgeP95ms)
	t.ages.add(s.ages)
}

// finish computes the pooled figures.
func (t *transportRuns) finish() {
	t.CommittedPct = pct(t.FramesCommitted, t.FramesSent)
	t.SnapshotAgeP50ms = t.ages.quantile(50)
	t.SnapshotAgeP95ms = t.ages.quantile(95)
	s := slices.Sorted(slices.Values(t.SeedAgeP95ms))
	if len(s) > 0 {
		t.SeedAgeP95Median = s[len(s)/2]
	}
}

// pct is n of of, per cent, to 0.1; 0 when of is 0.
func pct(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return round(100*float64(n)/float64(of), 1)
}

// runCompare runs the selected scenarios over seeds base.Seed …
// base.Seed+n−1, first on the simulated link then over QUIC for each seed,
// reporting each finished seed to progress.
func runCompare(selected []scenario.Scenario, base options, n int, progress io.Writer) (*compareReport, error) {
	out := &compareReport{DurationS: base.Duration, SendHz: base.SendHz}
	byName := map[string]*compareScenario{}
	for _, sc := range selected {
		out.Scenarios = append(out.Scenarios, compareScenario{Name: sc.Name})
	}
	for i := range out.Scenarios {
		byName[out.Scenarios[i].Name] = &out.Scenarios[i]
	}
	for k := range n {
		seed := base.Seed + uint64(k)
		out.Seeds = append(out.Seeds, seed)
		for _, quic := range []bool{false, true} {
			o := base
			o.Seed, o.QUIC = seed, quic
			if quic {
				o.Adversary = false // as a -transport quic run: forged packets never reach the receiver
			}
			rep, _, err := simulate(selected, o)
			if err != nil {
				return nil, fmt.Errorf("seed %d: %w", seed, err)
			}
			if !quic {
				out.Impairments = rep.Impairments
			}
			for i := range rep.Scenarios {
				s := &rep.Scenarios[i]
				c := byName[s.Name]
				if quic {
					c.QUIC.add(s)
				} else {
					c.Mem.add(s)
				}
			}
		}
		fmt.Fprintf(progress, "islanddemo: seed %d done (%d of %d)\n", seed, k+1, n)
	}
	for i := range out.Scenarios {
		c := &out.Scenarios[i]
		c.Mem.finish()
		c.QUIC.finish()
		c.Diff = compareDiffers{CommittedPoints: round(c.Mem.CommittedPct-c.QUIC.CommittedPct, 1),
			AgeP95ms: round(c.QUIC.SnapshotAgeP95ms-c.Mem.SnapshotAgeP95ms, 1),
			AgeP50ms: round(c.QUIC.SnapshotAgeP50ms-c.Mem.SnapshotAgeP50ms, 1)}
	}
	return out, nil
}

// printCompare writes the comparison as a table.
func printCompare(w io.Writer, r *compareReport) {
	im := r.Impairments
	fmt.Fprintf(w, "islandsync demo — the simulated link against QUIC on 127.0.0.1, seeds %d–%d, %.1f s per scenario and seed, %d Hz broadcast\n",
		r.Seeds[0], r.Seeds[len(r.Seeds)-1], r.DurationS, r.SendHz)
	fmt.Fprintf(w, "network: loss %.0f%%, burst-in %.1f%% (%s), duplicate %.0f%%, delay %.0f ms + jitter %.0f ms, corrupt %.1f%%; adversary on the simulated link %v\n",
		im.Loss*100, im.BurstIn*100, im.burstMoves(), im.Duplicate*100, im.DelayMs, im.JitterMs, im.Corrupt*100, im.Adversary)
	fmt.Fprintln(w, "committed: frames committed of frames sent over every run; snapshot age: every render of every run")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-10s %22s %8s %24s %8s %26s %12s\n", "scenario", "committed % mem / quic", "points", "age p95 ms mem / quic", "ms", "median seed p95 mem / quic", "half-frames")
	for _, c := range r.Scenarios {
		fmt.Fprintf(w, "%-10s %10.1f / %-9.1f %8.1f %11.0f / %-10.0f %8.0f %12.0f / %-11.0f %12d\n", c.Name, c.Mem.CommittedPct, c.QUIC.CommittedPct, c.Diff.CommittedPoints,
			c.Mem.SnapshotAgeP95ms, c.QUIC.SnapshotAgeP95ms, c.Diff.AgeP95ms, c.Mem.SeedAgeP95Median, c.QUIC.SeedAgeP95Median, c.Mem.HalfFrames+c.QUIC.HalfFrames)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "held for control: datagrams whose frames waited for a control message on its way, and their wait in all (mem / quic)")
	for _, c := range r.Scenarios {
		fmt.Fprintf(w, "%-10s %6d / %-6d %8.0f / %.0f ms\n", c.Name, c.Mem.HeldForControl, c.QUIC.HeldForControl, c.Mem.HeldForControlMs, c.QUIC.HeldForControlMs)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "silences: stretches of 150 ms or more in which a link delivered nothing (a loss burst, a sender that sent nothing), count and total")
	fmt.Fprintf(w, "%-10s %22s %22s\n", "", "to the observer, mem / quic", "from it, quic")
	for _, c := range r.Scenarios {
		fmt.Fprintf(w, "%-10s %5d / %-5d %5.1f / %-5.1f s %7d %7.1f s\n", c.Name, c.Mem.Silences, c.QUIC.Silences, c.Mem.SilentMs/1000, c.QUIC.SilentMs/1000, c.QUIC.UpSilences, c.QUIC.UpSilentMs/1000)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "per seed: points QUIC commits fewer; snapshot age p95 mem/quic, ms")
	for _, c := range r.Scenarios {
		fmt.Fprintf(w, "%-10s", c.Name)
		for k := range r.Seeds {
			fmt.Fprintf(w, " %+5.1f %3.0f/%-3.0f", c.Mem.SeedCommittedPct[k]-c.QUIC.SeedCommittedPct[k], c.Mem.SeedAgeP95ms[k], c.QUIC.SeedAgeP95ms[k])
		}
		fmt.Fprintln(w)
	}
	worst := slices.MaxFunc(r.Scenarios, func(a, b compareScenario) int {
		return cmp.Compare(a.Diff.CommittedPoints, b.Diff.CommittedPoints)
	})
	fmt.Fprintf(w, "\nQUIC's largest commit deficit: %s, %.1f points\n", worst.Name, worst.Diff.CommittedPoints)
}
