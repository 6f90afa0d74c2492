// Command islandwatch connects to an islandserver as one observer, runs the
// whole receive path, and prints one line a second: islands, frames
// committed per second, half-frames shown, freeze time, snapshot age and
// rejects by reason.
//
// Usage:
//
//	go run ./cmd/islandwatch -pin FINGERPRINT                 # the server's self-signed certificate
//	go run ./cmd/islandwatch -addr host:4242 -ca ca.pem        # a certificate signed by ca.pem
//	go run ./cmd/islandwatch -pin … -duration 10s -json        # a JSON summary at exit
//	go run ./cmd/islandwatch -pin … -metrics 127.0.0.1:9091    # Prometheus metrics at /metrics
//	go run ./cmd/islandwatch -pin … -confirm-only              # a stand-in observer for load tests
//
// With -confirm-only it confirms every datagram without restoring it and
// shows nothing: to the server an observer that receives everything, at a
// fraction of a real one's CPU, so that many of them on one machine
// measure the server (scripts/fanout-quic.sh). Its line a second gives
// the datagrams and bytes confirmed instead of frames.
//
// It exits 1 with a one-line message when it cannot connect, 2 on bad
// flags, and 0 otherwise.
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/internal/quantile"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/token"
	"github.com/islandsync/islandsync/transport"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// summary is the -json document printed at exit.
type summary struct {
	Addr             string  `json:"addr"`
	DurationS        float64 `json:"duration_s"`
	Islands          int     `json:"islands"`
	FramesCommitted  uint64  `json:"frames_committed"`
	FragmentsRebuilt uint64  `json:"fragments_rebuilt"` // data fragments rebuilt from parity records
	// Views continued past the newest frame by the local simulation, and
	// continuations left straight for want of budget.
	Simulated     uint64 `json:"simulated_views"`
	SimOverBudget uint64 `json:"sim_over_budget"`
	// Local simulations whose space is built at exit, and spaces let go
	// after a while unused (receiver.Config.SimIdle).
	SimSpaces         int     `json:"sim_spaces"`
	SimReleased       uint64  `json:"sim_released"`
	HalfFramesApplied int     `json:"half_frames_applied"`
	HandOffs          uint64  `json:"hand_offs"` // islands whose authority epoch rose (a hand-off, a failover)
	Datagrams         uint64  `json:"datagrams"`
	FreezeS           float64 `json:"freeze_s"`
	SnapshotAgeP95ms  float64 `json:"snapshot_age_p95_ms"`
	// WaitingS is the time the playout clock spent Waiting (no timeline to
	// play yet: connecting, or after a restart), seconds.
	WaitingS float64 `json:"waiting_s"`
	// StaleIslandSeconds sums, over every whole second, the islands known
	// that showed no newer frame during it; IslandsNotUpdated is that count
	// in the last whole second.
	StaleIslandSeconds uint64            `json:"stale_island_seconds"`
	IslandsNotUpdated  int               `json:"islands_not_updated"`
	Timelines          uint64            `json:"timelines"`
	Reconnects         uint64            `json:"reconnects"`
	Rejects            map[string]uint64 `json:"rejects"`
	// BytesReceived counts the bytes of every datagram received, valid or
	// not.
	BytesReceived uint64 `json:"bytes_received"`
	// ExtrapolationS is the island-seconds shown extrapolated past the
	// newest frame.
	ExtrapolationS float64 `json:"extrapolation_s"`
	// BufferFill is latest frame time − playback time (how much received
	// future is buffered), milliseconds, over the renders while the clock
	// was not Waiting: the median and the least.
	BufferFillP50ms float64 `json:"buffer_fill_p50_ms"`
	BufferFillMinMs float64 `json:"buffer_fill_min_ms"`
	// BufferedFrames is how many validated frames the store held at exit,
	// over every island.
	BufferedFrames int `json:"buffered_frames"`
	// DatagramQueueMax and ControlQueueMax are the most datagrams and
	// control reads seen waiting for the receive loop at a render.
	DatagramQueueMax int `json:"datagram_queue_max"`
	ControlQueueMax  int `json:"control_queue_max"`
}

// observed is what islandwatch gathers render by render besides the
// receiver's own counters.
type observed struct {
	half                    int       // half-frames shown
	ages, fills             []float64 // snapshot ages and buffer fills, ms, of renders not Waiting
	staleSum                uint64
	notUpdated              int
	datagramQueue, ctlQueue int    // the largest seen
	handOffs                uint64 // islands whose lease epoch rose, counted once a second
}

// see records one render.
func (o *observed) see(tk *transport.Tick) {
	o.half += tk.HalfFrames
	if st := tk.Receiver.Clock(); st.State != store.Waiting {
		o.ages = append(o.ages, float64(st.SnapshotAge)/1000)
		o.fills = append(o.fills, float64(st.BufferFill)/1000)
	}
	o.datagramQueue = max(o.datagramQueue, tk.DatagramQueue)
	o.ctlQueue = max(o.ctlQueue, tk.ControlQueue)
}

// summarize builds the -json document from the receiver's counters and
// what was observed.
func summarize(addr string, dur time.Duration, rx *receiver.Receiver, o *observed) summary {
	st := rx.Stats()
	s := summary{Addr: addr, DurationS: dur.Seconds(), Islands: len(rx.Islands()),
		FramesCommitted: st.FramesCommitted, FragmentsRebuilt: st.Assembler.Count(assembler.Rebuilt), HalfFramesApplied: o.half,
		Datagrams: st.Datagrams, Simulated: st.Store.Simulated, SimOverBudget: st.SimOverBudget,
		SimSpaces: st.SimSpaces, SimReleased: st.SimReleased,
		FreezeS:          float64(st.Store.FreezeTime+st.Clock.FrozenTime) / 1e6,
		SnapshotAgeP95ms: quantile.Nearest(o.ages, 95), Timelines: st.Timelines, Reconnects: st.Reconnects,
		WaitingS: float64(st.Clock.WaitingTime) / 1e6, StaleIslandSeconds: o.staleSum, IslandsNotUpdated: o.notUpdated,
		Rejects: map[string]uint64{}, BytesReceived: st.BytesReceived, ExtrapolationS: float64(st.Store.ExtrapolationTime) / 1e6,
		BufferFillP50ms: quantile.Nearest(o.fills, 50), BufferedFrames: st.Store.BufferedFrames,
		DatagramQueueMax: o.datagramQueue, ControlQueueMax: o.ctlQueue, HandOffs: o.handOffs}
	if len(o.fills) > 0 {
		s.BufferFillMinMs = slices.Min(o.fills)
	}
	st.Rejects(func(r string, n uint64) { s.Rejects[r] = n })
	return s
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("islandwatch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr       = fs.String("addr", "127.0.0.1:4242", "islandserver UDP address")
		pin        = fs.String("pin", "", "SHA-256 fingerprint of the server's certificate (as islandserver prints it)")
		caFile     = fs.String("ca", "", "PEM file of roots to verify the server's certificate (instead of -pin; default: the system's)")
		serverName = fs.String("server-name", "", "name to verify the certificate for (default: the host of -addr)")
		duration   = fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
		jsonOut    = fs.Bool("json", false, "print a JSON summary at exit instead of the per-second lines")
		reconnect  = fs.Bool("reconnect", true, "dial again after a lost connection")
		dialWait   = fs.Duration("dial-timeout", 5*time.Second, "give up connecting after this long")
		tokenText  = fs.String("token", "", "connect token to present (as islandtoken mint prints it), or @FILE to read it from a file")
		aoi        = fs.String("aoi", "", "subscribe to the islands in these areas, world metres: x0,y0,x1,y1[;x0,y0,x1,y1…] (at most 16); empty: every island")
		metricsAt  = fs.String("metrics", "", "serve this observer's Prometheus metrics on this address at /metrics (e.g. 127.0.0.1:9091)")
		confirm    = fs.Bool("confirm-only", false, "confirm every datagram without restoring it and show nothing: a stand-in observer for measuring a server under many observers")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "islandwatch: "+format+"\n", a...)
		return 2
	}
	addrs := strings.Split(*addr, ",")
	host, _, err := net.SplitHostPort(addrs[0])
	for _, a := range addrs[1:] {
		if err == nil {
			_, _, err = net.SplitHostPort(a)
		}
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case err != nil:
		return fail("-addr %q: %v", *addr, err)
	case *duration < 0:
		return fail("-duration %v is negative", *duration)
	case *dialWait <= 0:
		return fail("-dial-timeout %v: must be positive", *dialWait)
	case *pin != "" && *caFile != "":
		return fail("-pin and -ca exclude each other")
	}
	sub := codec.Subscribe{All: true}
	if *aoi != "" {
		rs, err := parseRegions(*aoi)
		if err != nil {
			return fail("-aoi %q: %v", *aoi, err)
		}
		sub = codec.Subscribe{Regions: rs}
	}
	if *metricsAt != "" {
		if _, err := net.ResolveTCPAddr("tcp", *metricsAt); err != nil {
			return fail("-metrics %q: %v", *metricsAt, err)
		}
	}
	var roots *x509.CertPool
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return fail("-ca: %v", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fail("-ca %s: no PEM certificate in it", *caFile)
		}
	}
	if *serverName == "" {
		*serverName = host
	}
	tlsConf, err := transport.ClientTLS(*pin, *serverName, roots)
	if err != nil {
		return fail("-pin: %v", err)
	}
	var tok []byte
	if *tokenText != "" {
		text := *tokenText
		if name, ok := strings.CutPrefix(text, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return fail("-token: %v", err)
			}
			text = strings.TrimSpace(string(b))
		}
		if tok, err = token.Decode(text); err != nil {
			return fail("-token: %v", err)
		}
		if _, err := token.Parse(tok); err != nil {
			return fail("-token: %v", err)
		}
	}
	w, err := transport.NewWatcher(transport.WatchConfig{Addr: addrs[0], Fallback: addrs[1:], TLS: tlsConf, Subscribe: sub,
		Reconnect: *reconnect, DialTimeout: *dialWait, Token: tok, ConfirmOnly: *confirm, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fail("%v", err)
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	var metrics *watchMetrics
	if *metricsAt != "" {
		reg := prometheus.NewRegistry()
		metrics = newWatchMetrics(reg)
		at, closeMetrics, err := transport.ServeMetrics(*metricsAt, reg)
		if err != nil {
			fmt.Fprintf(stderr, "islandwatch: metrics: %v\n", err)
			return 1
		}
		defer closeMetrics()
		fmt.Fprintf(stderr, "islandwatch: metrics on http://%s/metrics\n", at)
	}
	start := time.Now()
	var (
		obs        observed
		ages       []float64 // this second's
		lastSecond int64     = 1_000_000
		last       receiver.Stats
		fresh      = freshness{}
		epochs     = map[uint32]uint32{} // island → lease epoch at the last second
	)
	err = w.Run(ctx, func(tk *transport.Tick) {
		n := len(obs.ages)
		obs.see(tk)
		ages = append(ages, obs.ages[n:]...)
		metrics.tick(tk)
		fresh.see(tk.Views)
		if tk.Now < lastSecond {
			return
		}
		lastSecond += 1_000_000
		st := tk.Receiver.Stats()
		oldest := int64(0) // how far past its newest frame the stalest island is shown
		for i := range tk.Views {
			oldest = max(oldest, tk.Views[i].Extrapolated)
		}
		obs.notUpdated = fresh.second(tk.Receiver.Islands())
		obs.staleSum += uint64(obs.notUpdated)
		// Authority hand-offs: islands whose lease epoch rose this second.
		lo, hi, moved := uint32(0), uint32(0), 0
		for _, id := range tk.Receiver.Islands() {
			l, ok := tk.Receiver.Lease(id)
			if !ok {
				continue
			}
			if e, seen := epochs[id]; seen && l.Epoch != e {
				moved++
			}
			epochs[id] = l.Epoch
			if lo == 0 || l.Epoch < lo {
				lo = l.Epoch
			}
			hi = max(hi, l.Epoch)
		}
		if len(epochs) > 4*len(tk.Receiver.Islands())+1024 {
			clear(epochs) // islands come and go: keep the map to about what is live
		}
		obs.handOffs += uint64(moved)
		metrics.stats(&st, len(tk.Receiver.Islands()), &obs)
		if !*jsonOut && *confirm {
			fmt.Fprintf(stdout, "%5.0fs  islands %3d  confirmed %4d datagrams/s  %5.1f kB/s  on %s  rejects %s\n",
				time.Since(start).Seconds(), len(tk.Receiver.Islands()), st.Datagrams-last.Datagrams,
				float64(st.BytesReceived-last.BytesReceived)/1000, tk.Addr, rejectLine(&st))
		} else if !*jsonOut {
			fmt.Fprintf(stdout, "%5.0fs  islands %3d  not updated %3d  committed %4d/s  rebuilt %3d/s  simulated %4d/s  half-frames %d  waiting %.2fs  freeze %.2fs  age p95 %s  oldest island +%3.0f ms  epochs %d–%d  hand-offs %d  on %s  rejects %s\n",
				time.Since(start).Seconds(), len(tk.Receiver.Islands()), obs.notUpdated, st.FramesCommitted-last.FramesCommitted,
				st.Assembler.Count(assembler.Rebuilt)-last.Assembler.Count(assembler.Rebuilt), st.Store.Simulated-last.Store.Simulated, obs.half,
				float64(st.Clock.WaitingTime-last.Clock.WaitingTime)/1e6,
				float64(st.Store.FreezeTime+st.Clock.FrozenTime-last.Store.FreezeTime-last.Clock.FrozenTime)/1e6,
				ageText(ages), float64(oldest)/1000, lo, hi, moved, tk.Addr, rejectLine(&st))
		}
		ages = ages[:0]
		last = st
	})
	var refused *transport.CloseError
	switch {
	case errors.As(err, &refused) && refused.Refused():
		fmt.Fprintf(stderr, "islandwatch: the server refused this observer: %s (code %d): %s\n", transport.CodeName(refused.Code), refused.Code, refused.Reason)
		return 1
	case errors.Is(err, transport.ErrPinMismatch):
		fmt.Fprintf(stderr, "islandwatch: %v (a server restarted without its state directory has a new fingerprint)\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "islandwatch: %v\n", err)
		if errors.Is(err, transport.ErrConnect) {
			fmt.Fprintf(stderr, "islandwatch: is islandserver running on %s, and is -pin its printed fingerprint?\n", *addr)
		}
		return 1
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(summarize(*addr, time.Since(start), w.Receiver(), &obs))
	}
	return 0
}

// ageText prints a second's snapshot age p95, or "-" when the clock was
// Waiting all second (nothing shown, so no age: not 0 ms).
func ageText(ages []float64) string {
	if len(ages) == 0 {
		return "   - ms"
	}
	return fmt.Sprintf("%4.0f ms", quantile.Nearest(ages, 95))
}

// freshness tells which islands showed a newer frame during a second: the
// newest frame key each island's view showed, against the one a second ago.
type freshness struct {
	cur, prev map[uint32]island.Key
}

// see records one render's views.
func (f *freshness) see(views []receiver.IslandView) {
	if f.cur == nil {
		f.cur, f.prev = map[uint32]island.Key{}, map[uint32]island.Key{}
	}
	for i := range views {
		if views[i].Mode != store.Empty {
			f.cur[views[i].Island] = views[i].Right
		}
	}
}

// second ends a second: it returns how many of the known islands showed
// no newer frame during it (missing ones and, while the clock waits, all
// of them), and starts the next.
func (f *freshness) second(known []uint32) int {
	if f.cur == nil {
		f.cur, f.prev = map[uint32]island.Key{}, map[uint32]island.Key{}
	}
	n := 0
	for _, id := range known {
		k, ok := f.cur[id]
		if old, had := f.prev[id]; !ok || (had && old == k) {
			n++
		}
	}
	clear(f.prev)
	for _, id := range known {
		if k, ok := f.cur[id]; ok {
			f.prev[id] = k
		}
	}
	clear(f.cur)
	for id, k := range f.prev {
		f.cur[id] = k
	}
	return n
}

func rejectLine(st *receiver.Stats) string {
	var parts []string
	st.Rejects(func(r string, n uint64) { parts = append(parts, fmt.Sprintf("%s %d", r, n)) })
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// parseRegions reads areas of interest: boxes x0,y0,x1,y1 in metres,
// separated by semicolons.
func parseRegions(text string) ([]codec.Region, error) {
	var rs []codec.Region
	for _, part := range strings.Split(text, ";") {
		f := strings.Split(part, ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("%q: want x0,y0,x1,y1", part)
		}
		var v [4]float64
		for i, s := range f {
			x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, fmt.Errorf("%q: not a finite number", s)
			}
			v[i] = x
		}
		if v[0] > v[2] || v[1] > v[3] {
			return nil, fmt.Errorf("%q: want x0 ≤ x1 and y0 ≤ y1", part)
		}
		rs = append(rs, codec.Region{X0: v[0], Y0: v[1], X1: v[2], Y1: v[3]})
	}
	if len(rs) > codec.MaxRegions {
		return nil, fmt.Errorf("%d areas, at most %d", len(rs), codec.MaxRegions)
	}
	return rs, nil
}
