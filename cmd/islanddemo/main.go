// Command islanddemo runs the islandsync demo: a Chipmunk2D authority
// broadcasts constraint islands over a simulated lossy network to two
// observers — the real pipeline (codec → assembler → validator → store →
// playout) and a naive receiver that applies each fragment on arrival — and
// reports, per scenario, whether jointed structures stayed whole.
//
// Usage:
//
//	go run ./cmd/islanddemo                      # all scenarios, table
//	go run ./cmd/islanddemo -json                # the same numbers as JSON
//	go run ./cmd/islanddemo -plot error.png      # joint error over time
//	go run ./cmd/islanddemo -scenario chain,handoff -loss 0.2 -seed 7
//	go run ./cmd/islanddemo -transport quic      # the real server and watcher over QUIC
//	go run ./cmd/islanddemo -compare 10          # both transports, seeds 1–10, side by side
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/scenario"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad flag or argument: one line on stderr, exit 2.
type usageError struct{ error }

// run runs the demo and returns the exit code: 0, 1 on a failure while
// running, 2 on bad flags.
func run(args []string, stdout, stderr io.Writer) int {
	err := demo(args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "islanddemo:", err)
		return 2
	case errors.Is(err, errFlagParse):
		return 2 // the flag package has said why
	}
	fmt.Fprintln(stderr, "islanddemo:", err)
	return 1
}

var errFlagParse = errors.New("flag parse")

func demo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("islanddemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		names      = fs.String("scenario", "all", "comma-separated scenarios: "+scenario.Names()+", or all")
		duration   = fs.Float64("duration", 6, "simulated seconds per scenario (wall-clock seconds with -transport quic)")
		seed       = fs.Uint64("seed", 1, "seed for the network and the adversary; the same seed gives the same report")
		sendHz     = fs.Int("hz", 20, fmt.Sprintf("broadcast rate, frames per second per island, 1–%d", scenario.StepHz))
		loss       = fs.Float64("loss", 0.05, "independent datagram loss probability, 0–1")
		burst      = fs.Float64("burst", 0.01, "probability per datagram of entering a loss burst (Gilbert–Elliott, mean burst 4), 0–1")
		burstSlot  = fs.Float64("burst-slot", 100, "ms: a loss burst's state also moves once per this long without a datagram, so a burst ends in time when the sender goes quiet; 0: per datagram only")
		burstClock = fs.Float64("burst-clock", 0, "ms: a loss burst's state moves once per this long, whatever is sent (-burst and its exit are then per tick, -burst-slot unused), so a burst lasts as long for every sender; 0: per datagram")
		dup        = fs.Float64("dup", 0.05, "datagram duplication probability, 0–1")
		delay      = fs.Float64("delay", 40, "base one-way delay, ms, ≥ 0")
		jitter     = fs.Float64("jitter", 60, "extra delay drawn from [0, jitter] ms, ≥ 0; reorders datagrams")
		corrupt    = fs.Float64("corrupt", 0.01, "probability a datagram has one byte flipped, 0–1")
		adversary  = fs.Bool("adversary", true, "inject old-epoch, spoofed, stale-topology and conflicting packets (in-memory transport)")
		jsonOut    = fs.Bool("json", false, "print the report as JSON")
		plotFile   = fs.String("plot", "", "write joint error over time to this .png or .svg file")
		wire       = fs.Int("wire", 3, "datagram format: 3 (quantized keyframes and deltas against confirmed baselines) or 1 (float frames)")
		parity     = fs.Int("parity", broadcast.DefaultParity, fmt.Sprintf("Reed–Solomon parity records per frame cut into 2–%d datagrams, none to an observer whose path lost nothing lately (wire 3 only), 0 (none) to %d", codec.MaxParityFragments, codec.MaxParity))
		compare    = fs.Int("compare", 0, "run every selected scenario over this many seeds (from -seed) on both transports, the simulated link and QUIC, with the same impairments, and print them side by side: commits over every run, snapshot age over every render; 0: off")
		matrix     = fs.Bool("matrix", false, "run the impairment matrix (loss × duplication × jitter × 2 seeds, every scenario) and print one table; with -json, one object per cell")
		budget     = fs.Int("budget", 0, "kbit/s each observer may be sent at most (wire 3); 0: no cap (over QUIC the path's own budget still holds)")
		fixedRate  = fs.Bool("fixed-rate", false, "over QUIC: send every frame whatever the path carries (no budget from the congestion window)")
		aoi        = fs.Float64("aoi", 0, "width in metres of the observer's area of interest, moving along the floor at 4 m/s from x = −5 m (try -scenario bigworld); 0: every island")
		datagram   = fs.Int("datagram", 0, fmt.Sprintf("the observer's datagram cap, bytes (%d … %d); 0: the default (over QUIC: the path's). -datagram %d cuts the chain's frames into several datagrams", codec.MinMaxDatagram, codec.MaxMaxDatagram, codec.MinMaxDatagram))
		trans      = fs.String("transport", "mem", "mem: a simulated link; quic: the real islandserver and islandwatch code over QUIC on 127.0.0.1 through an impairing UDP relay")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errFlagParse
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"loss", *loss}, {"burst", *burst}, {"dup", *dup}, {"corrupt", *corrupt}} {
		if !(p.v >= 0 && p.v <= 1) {
			return usageError{fmt.Errorf("-%s %v: a probability, in [0, 1]", p.name, p.v)}
		}
	}
	switch {
	case !(*delay >= 0) || math.IsInf(*delay, 0):
		return usageError{fmt.Errorf("-delay %v: milliseconds, ≥ 0", *delay)}
	case !(*burstSlot >= 0) || *burstSlot > 3_600_000:
		return usageError{fmt.Errorf("-burst-slot %v: milliseconds, in [0, 3600000]", *burstSlot)}
	case !(*burstClock >= 0) || *burstClock > 3_600_000:
		return usageError{fmt.Errorf("-burst-clock %v: milliseconds, in [0, 3600000]", *burstClock)}
	case !(*jitter >= 0) || math.IsInf(*jitter, 0):
		return usageError{fmt.Errorf("-jitter %v: milliseconds, ≥ 0", *jitter)}
	case !(*duration > 0) || *duration > 3600:
		return usageError{fmt.Errorf("-duration %v: seconds, in (0, 3600]", *duration)}
	case *sendHz < 1 || *sendHz > scenario.StepHz:
		return usageError{fmt.Errorf("-hz %d: in [1, %d], the simulation step rate", *sendHz, scenario.StepHz)}
	case *wire != 1 && *wire != 3:
		return usageError{fmt.Errorf("-wire %d: 3 or 1 (2 is retired)", *wire)}
	case *parity < 0 || *parity > codec.MaxParity:
		return usageError{fmt.Errorf("-parity %d: in [0, %d]", *parity, codec.MaxParity)}
	case *budget < 0 || *budget > 1<<30:
		return usageError{fmt.Errorf("-budget %d: kbit/s, ≥ 0", *budget)}
	case !(*aoi >= 0) || *aoi > 1e6:
		return usageError{fmt.Errorf("-aoi %v: metres, ≥ 0", *aoi)}
	case *datagram != 0 && (*datagram < codec.MinMaxDatagram || *datagram > codec.MaxMaxDatagram):
		return usageError{fmt.Errorf("-datagram %d: bytes, %d … %d, or 0", *datagram, codec.MinMaxDatagram, codec.MaxMaxDatagram)}
	case *trans != "mem" && *trans != "quic":
		return usageError{fmt.Errorf("-transport %q: mem or quic", *trans)}
	case *compare < 0 || *compare > 1000:
		return usageError{fmt.Errorf("-compare %d: seeds, 0 … 1000", *compare)}
	case *compare > 0 && (*matrix || *plotFile != "" || *trans != "mem"):
		return usageError{errors.New("-compare runs both transports and plots nothing: drop -matrix, -plot and -transport")}
	}
	if ext := strings.ToLower(filepath.Ext(*plotFile)); *plotFile != "" && ext != ".png" && ext != ".svg" {
		return usageError{fmt.Errorf("-plot %q: the file must end in .png or .svg", *plotFile)}
	}
	selected, err := scenario.Pick(*names)
	if err != nil {
		return usageError{err}
	}
	opt := options{
		Duration: *duration, SendHz: *sendHz, Seed: *seed, Adversary: *adversary, AdvRate: 0.05, QUIC: *trans == "quic", Wire: *wire, Parity: parityConfig(*parity),
		BudgetKbps: *budget, FixedRate: *fixedRate, AOI: *aoi, MaxDatagram: *datagram,
		Net: netsim.Config{Loss: *loss, BurstIn: *burst, Duplicate: *dup, Delay: int64(*delay * 1000),
			Jitter: int64(*jitter * 1000), Corrupt: *corrupt, BurstSlot: burstSlotUs(*burstSlot),
			BurstClock: burstClockUs(*burstClock)},
	}
	if *matrix {
		if opt.QUIC {
			return usageError{errors.New("-matrix runs on the simulated link: drop -transport quic")}
		}
		m, err := runMatrix(selected, opt)
		if err != nil {
			return err
		}
		if *jsonOut {
			return writeJSON(stdout, m)
		}
		printMatrix(stdout, m)
		if *plotFile != "" {
			if err := drawMatrix(*plotFile, m); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "plot written to %s\n", *plotFile)
		}
		return nil
	}
	if *compare > 0 {
		c, err := runCompare(selected, opt, *compare, stderr)
		if err != nil {
			return err
		}
		if *jsonOut {
			return writeJSON(stdout, c)
		}
		printCompare(stdout, c)
		return nil
	}
	if opt.QUIC {
		opt.Adversary = false // QUIC authenticates every packet: forged ones never reach the receiver
	}
	rep, sers, err := simulate(selected, opt)
	if err != nil {
		return err
	}
	if *jsonOut {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printTable(stdout, rep)
	}
	if *plotFile != "" {
		if err := drawPlot(*plotFile, rep, sers); err != nil {
			return err
		}
		if !*jsonOut {
			fmt.Fprintf(stdout, "plot written to %s\n", *plotFile)
		}
	}
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// simulate runs the selected scenarios with opt.
func simulate(selected []scenario.Scenario, opt options) (*report, []series, error) {
	transport := "in-memory link"
	if opt.QUIC {
		transport = "QUIC on 127.0.0.1 via impairing UDP relay"
	}
	rep := &report{Seed: opt.Seed, DurationS: opt.Duration, SendHz: opt.SendHz, Transport: transport,
		Impairments: impairmentReport{Loss: opt.Net.Loss, BurstIn: opt.Net.BurstIn, BurstSlotMs: burstSlotMs(opt.Net.BurstSlot),
			BurstClockMs: float64(opt.Net.BurstClock) / 1000, Duplicate: opt.Net.Duplicate,
			DelayMs: float64(opt.Net.Delay) / 1000, JitterMs: float64(opt.Net.Jitter) / 1000, Corrupt: opt.Net.Corrupt, Adversary: opt.Adversary}}
	var sers []series
	for _, sc := range selected {
		run := runScenario
		if opt.QUIC {
			run = runQUIC
		}
		r, s, err := run(sc, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
		rep.Scenarios = append(rep.Scenarios, r)
		sers = append(sers, s)
	}
	return rep, sers, nil
}

// parityConfig turns a -parity flag (0: none) into broadcast.Config.Parity
// (0: the default, negative: none).
func parityConfig(flag int) int {
	if flag == 0 {
		return -1
	}
	return flag
}

// burstSlotUs turns -burst-slot (ms; 0: per datagram only) into
// netsim.Config.BurstSlot (µs; negative: per datagram only).
func burstSlotUs(ms float64) int64 {
	if ms == 0 {
		return -1
	}
	return max(int64(ms*1000), 1)
}

// burstClockUs turns -burst-clock (ms; 0: per datagram) into
// netsim.Config.BurstClock (µs; 0: per datagram).
func burstClockUs(ms float64) int64 {
	if ms == 0 {
		return 0
	}
	return max(int64(ms*1000), 1)
}

// burstSlotMs is the report's burst slot: ms, 0 for per datagram only.
func burstSlotMs(us int64) float64 {
	switch {
	case us < 0:
		return 0
	case us == 0:
		return netsim.DefaultBurstSlot / 1000
	}
	return float64(us) / 1000
}
