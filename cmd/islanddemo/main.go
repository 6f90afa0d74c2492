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
//	go run ./cmd/islanddemo -udp                 # through real loopback sockets
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/scenario"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "islanddemo:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("islanddemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		names     = fs.String("scenario", "all", "comma-separated scenarios: "+scenario.Names()+", or all")
		duration  = fs.Float64("duration", 6, "simulated seconds per scenario")
		seed      = fs.Uint64("seed", 1, "seed for the network and the adversary; the same seed gives the same report")
		sendHz    = fs.Int("hz", 20, "broadcast rate, frames per second per island")
		loss      = fs.Float64("loss", 0.05, "independent datagram loss probability")
		burst     = fs.Float64("burst", 0.01, "probability per datagram of entering a loss burst (Gilbert–Elliott, mean burst 4)")
		dup       = fs.Float64("dup", 0.05, "datagram duplication probability")
		delay     = fs.Float64("delay", 40, "base one-way delay, ms")
		jitter    = fs.Float64("jitter", 60, "extra delay drawn from [0, jitter] ms; reorders datagrams")
		corrupt   = fs.Float64("corrupt", 0.01, "probability a datagram has one byte flipped")
		adversary = fs.Bool("adversary", true, "inject old-epoch, spoofed, stale-topology and conflicting packets")
		jsonOut   = fs.Bool("json", false, "print the report as JSON")
		plotFile  = fs.String("plot", "", "write joint error over time to this .png or .svg file")
		udp       = fs.Bool("udp", false, "send datagrams over real UDP sockets on 127.0.0.1 through an impairing relay")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	selected, err := scenario.Pick(*names)
	if err != nil {
		return err
	}
	opt := options{
		Duration: *duration, SendHz: *sendHz, Seed: *seed, Adversary: *adversary, AdvRate: 0.05, UDP: *udp,
		Net: netsim.Config{Loss: *loss, BurstIn: *burst, Duplicate: *dup, Delay: int64(*delay * 1000),
			Jitter: int64(*jitter * 1000), Corrupt: *corrupt},
	}
	rep, sers, err := simulate(selected, opt)
	if err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
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

// simulate runs the selected scenarios with opt.
func simulate(selected []scenario.Scenario, opt options) (*report, []series, error) {
	transport := "in-memory link"
	if opt.UDP {
		transport = "UDP on 127.0.0.1 via impairing relay"
	}
	rep := &report{Seed: opt.Seed, DurationS: opt.Duration, SendHz: opt.SendHz, Transport: transport,
		Impairments: impairmentReport{Loss: opt.Net.Loss, BurstIn: opt.Net.BurstIn, Duplicate: opt.Net.Duplicate,
			DelayMs: float64(opt.Net.Delay) / 1000, JitterMs: float64(opt.Net.Jitter) / 1000, Corrupt: opt.Net.Corrupt, Adversary: opt.Adversary}}
	var sers []series
	for _, sc := range selected {
		r, s, err := runScenario(sc, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
		rep.Scenarios = append(rep.Scenarios, r)
		sers = append(sers, s)
	}
	return rep, sers, nil
}
