package main

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/scenario"
)

// The impairment matrix: every combination of these, every scenario.
var (
	matrixLoss   = []float64{0, 0.05, 0.10, 0.25}
	matrixDup    = []float64{0, 0.10, 0.25}
	matrixJitter = []float64{0, 60, 200} // ms
	matrixSeeds  = []uint64{1, 2}
)

// matrixCorrupt is the corruption rate of every cell.
const matrixCorrupt = 0.02

// cellReport is one cell of the matrix: its impairments and, per scenario,
// the same fields as the demo's -json report.
type cellReport struct {
	Seed        uint64           `json:"seed"`
	Impairments impairmentReport `json:"impairments"`
	Scenarios   []scenarioReport `json:"scenarios"`
}

// matrixReport is what -matrix -json prints.
type matrixReport struct {
	DurationS float64      `json:"duration_s"`
	SendHz    int          `json:"send_hz"`
	Cells     []cellReport `json:"cells"`
}

// runMatrix runs every cell with the base options' duration and rate, on
// every core, and returns the cells in grid order.
func runMatrix(selected []scenario.Scenario, base options) (*matrixReport, error) {
	var cells []options
	for _, loss := range matrixLoss {
		for _, dup := range matrixDup {
			for _, jit := range matrixJitter {
				for _, seed := range matrixSeeds {
					o := base
					o.Seed, o.Adversary, o.QUIC = seed, true, false
					o.Net = netsim.Config{Loss: loss, Duplicate: dup, Delay: 40_000, Jitter: int64(jit * 1000), Corrupt: matrixCorrupt}
					cells = append(cells, o)
				}
			}
		}
	}
	out := &matrixReport{DurationS: base.Duration, SendHz: base.SendHz, Cells: make([]cellReport, len(cells))}
	errs := make([]error, len(cells))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rep, _, err := simulate(selected, cells[i])
				if err != nil {
					errs[i] = err
					continue
				}
				out.Cells[i] = cellReport{Seed: cells[i].Seed, Impairments: rep.Impairments, Scenarios: rep.Scenarios}
			}
		}()
	}
	for i := range cells {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commitRatio is frames committed over frames sent.
func commitRatio(s *scenarioReport) float64 {
	if s.FramesSent == 0 {
		return 0
	}
	return float64(s.FramesCommitted) / float64(s.FramesSent)
}

// ratio is a pipeline joint error over the server floor's (0 when the floor
// is 0).
func ratio(pipe, floor float64) float64 {
	if floor <= 0 {
		return 0
	}
	return pipe / floor
}

// printMatrix writes one row per cell: half-frames over every scenario, the
// commit ratio of the scenario whose frames need the most fragments, the
// worst displayed joint error p99 and max as multiples of the server floor
// (with the scenario), and the freeze time; then the summary.
func printMatrix(w io.Writer, m *matrixReport) {
	fmt.Fprintf(w, "islandsync impairment matrix — %d cells × %d scenarios, %.1f s each, %d Hz, delay 40 ms, corrupt %.0f%%, adversary on\n\n",
		len(m.Cells), len(m.Cells[0].Scenarios), m.DurationS, m.SendHz, matrixCorrupt*100)
	fmt.Fprintf(w, "%5s %5s %6s %4s | %5s | %-18s | %-22s | %-22s | %7s\n",
		"loss", "dup", "jitter", "seed", "half", "big-frame commit", "p99 err / floor", "max err / floor", "freeze")
	worstHalf := 0
	var worstP99, worstMax float64
	var worstP99s, worstMaxs string
	byLoss := map[float64][2]float64{} // commit ratio of the biggest frames: sum, count
	for _, c := range m.Cells {
		half, freeze := 0, 0.0
		var p99, mx float64
		var p99s, mxs string
		big := &c.Scenarios[0]
		for i := range c.Scenarios {
			s := &c.Scenarios[i]
			half += s.Pipeline.HalfFramesApplied
			freeze += s.FreezeSeconds
			if s.MaxFragmentsFrame > big.MaxFragmentsFrame {
				big = s
			}
			if r := ratio(s.Pipeline.P99JointError, s.ServerFloor.P99JointError); r > p99 {
				p99, p99s = r, s.Name
			}
			if r := ratio(s.Pipeline.MaxJointError, s.ServerFloor.MaxJointError); r > mx {
				mx, mxs = r, s.Name
			}
		}
		cr := commitRatio(big)
		im := c.Impairments
		fmt.Fprintf(w, "%4.0f%% %4.0f%% %4.0fms %4d | %5d | %-8s %6.1f%%   | %6.2f× %-14s | %6.2f× %-14s | %6.2fs\n",
			im.Loss*100, im.Duplicate*100, im.JitterMs, c.Seed, half, big.Name, cr*100, p99, p99s, mx, mxs, freeze)
		worstHalf = max(worstHalf, half)
		if p99 > worstP99 {
			worstP99, worstP99s = p99, fmt.Sprintf("%s at loss %.0f%% dup %.0f%% jitter %.0f ms", p99s, im.Loss*100, im.Duplicate*100, im.JitterMs)
		}
		if mx > worstMax {
			worstMax, worstMaxs = mx, fmt.Sprintf("%s at loss %.0f%% dup %.0f%% jitter %.0f ms", mxs, im.Loss*100, im.Duplicate*100, im.JitterMs)
		}
		a := byLoss[im.Loss]
		byLoss[im.Loss] = [2]float64{a[0] + cr, a[1] + 1}
	}
	fmt.Fprintf(w, "\nhalf-frames, worst cell: %d\n", worstHalf)
	fmt.Fprintf(w, "displayed joint error p99, worst: %.2f× the server floor (%s)\n", worstP99, worstP99s)
	fmt.Fprintf(w, "displayed joint error max, worst: %.2f× the server floor (%s)\n", worstMax, worstMaxs)
	printComparison(w, m)
	fmt.Fprintf(w, "commit ratio of the biggest frames, mean by loss:")
	for _, l := range matrixLoss {
		a := byLoss[l]
		fmt.Fprintf(w, "  %.0f%%: %.1f%%", l*100, 100*a[0]/max(a[1], 1))
	}
	fmt.Fprintln(w)
	// Every scenario's commit ratio by loss, averaged over the other axes.
	fmt.Fprintf(w, "\ncommit ratio by scenario and loss (mean over duplication, jitter and seeds):\n%-10s", "")
	for _, l := range matrixLoss {
		fmt.Fprintf(w, " %7.0f%%", l*100)
	}
	fmt.Fprintln(w)
	for k := range m.Cells[0].Scenarios {
		fmt.Fprintf(w, "%-10s", m.Cells[0].Scenarios[k].Name)
		for _, l := range matrixLoss {
			sum, n := 0.0, 0.0
			for _, c := range m.Cells {
				if c.Impairments.Loss == l {
					sum += commitRatio(&c.Scenarios[k])
					n++
				}
			}
			fmt.Fprintf(w, " %7.1f%%", 100*sum/max(n, 1))
		}
		fmt.Fprintln(w)
	}
}

// printComparison sets the pipeline beside the same receive path without
// local simulation: worst joint error ratios, and how far shown bodies
// are from where the server had them (worst p99 and max, and the mean of
// the scenarios' p99 over every cell).
func printComparison(w io.Writer, m *matrixReport) {
	type agg struct{ p99, mx, worstP99, worstMax, sumP99 float64 }
	var pipe, straight agg
	n := 0.0
	add := func(a *agg, r *receiverReport, floor floorReport) {
		a.p99 = max(a.p99, ratio(r.P99JointError, floor.P99JointError))
		a.mx = max(a.mx, ratio(r.MaxJointError, floor.MaxJointError))
		a.worstP99 = max(a.worstP99, r.P99PositionError)
		a.worstMax = max(a.worstMax, r.MaxPositionError)
		a.sumP99 += r.P99PositionError
	}
	for _, c := range m.Cells {
		for i := range c.Scenarios {
			s := &c.Scenarios[i]
			if s.Straight == nil {
				continue
			}
			add(&pipe, &s.Pipeline, s.ServerFloor)
			add(&straight, s.Straight, s.ServerFloor)
			n++
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "without local simulation (straight extrapolation, plain blends): joint error p99 worst %.2f×, max worst %.2f× the floor\n",
		straight.p99, straight.mx)
	fmt.Fprintf(w, "shown position vs the server's at the shown time, m:    p99 mean %.3f, p99 worst %.3f, max %.3f\n",
		pipe.sumP99/n, pipe.worstP99, pipe.worstMax)
	fmt.Fprintf(w, "                          without local simulation, m:  p99 mean %.3f, p99 worst %.3f, max %.3f\n",
		straight.sumP99/n, straight.worstP99, straight.worstMax)
}
