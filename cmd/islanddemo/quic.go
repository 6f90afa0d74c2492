package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/transport"
)

// measuredSource steps the authority for the QUIC server and records the
// server's floor, under the lock the measuring side takes too: the
// server's goroutine steps the world the watcher's goroutine measures.
type measuredSource struct {
	*scenario.Authority
	mu *sync.Mutex
	m  *measure
}

func (s *measuredSource) Step() ([]codec.Message, []*island.Frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctl, frames := s.Authority.Step()
	s.m.sampled(frames)
	return ctl, frames
}

// runQUIC runs one scenario on the real transport: a transport.Server with
// the scenario, a netsim.Relay on 127.0.0.1 applying the impairments to
// every QUIC packet in both directions, and a transport.Watcher — the code
// islandserver and islandwatch run — for opt.Duration seconds of wall time.
// The adversary does not apply: QUIC authenticates every packet, so forged
// or replayed packets never reach the receive path.
func runQUIC(sc scenario.Scenario, opt options) (scenarioReport, series, error) {
	auth, err := scenario.NewAuthority([]scenario.Scenario{sc}, opt.SendHz)
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	cert, pin, err := transport.SelfSigned()
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tlsConf, err := transport.ClientTLS(pin, "", nil)
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	var mu sync.Mutex
	src := &measuredSource{Authority: auth, mu: &mu}
	metrics := transport.NewMetrics(prometheus.NewRegistry())
	srv, err := transport.Listen(src, transport.ServerConfig{Listen: "127.0.0.1:0", TLS: transport.ServerTLS(cert),
		Logger: quiet, StepRate: scenario.StepHz, Wire: opt.Wire, Parity: opt.Parity, Metrics: metrics,
		ObserverKbps: opt.BudgetKbps, FixedRate: opt.FixedRate, MaxDatagram: opt.MaxDatagram})
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	seed := opt.Seed ^ hashName(sc.Name)
	relay, err := netsim.NewRelay("127.0.0.1:0", srv.Addr().String(), opt.Net, opt.Net, seed)
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	defer relay.Close()
	w, err := transport.NewWatcher(transport.WatchConfig{Addr: relay.Addr().String(), TLS: tlsConf,
		Subscribe: area(opt, 0), Logger: quiet})
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	world := auth.Worlds()[0]
	pipe := newPipeline(world, w.Receiver())
	m := newMeasure(world, pipe, nil)
	m.wire = opt.Wire // on wire 3 the server's datagrams are not seen here: no fragment count
	src.m = m

	sctx, stopServer := context.WithCancel(context.Background())
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(sctx) }()
	// The authority steps only once the watcher has joined, as on the
	// simulated link, so that frames sampled while the handshake was still
	// crossing the relay are not counted as lost.
	srv.Pause(true)
	wctx, stopWatch := context.WithCancel(sctx)
	defer stopWatch()
	werrC := make(chan error, 1)
	var moved int64   // watcher time the area last moved, µs
	var copies uint64 // stream copies read before the stream
	go func() {
		werrC <- w.Run(wctx, func(tk *transport.Tick) {
			mu.Lock()
			defer mu.Unlock()
			pipe.apply(tk.Views)
			copies = tk.Copies.Used
			m.rendered(tk.Now)
			if opt.AOI > 0 && tk.Now-moved >= 50_000 { // the camera moves
				moved = tk.Now
				w.SetSubscribe(area(opt, float64(tk.Now)/1e6))
			}
		})
	}()
	for wait := time.Now().Add(10 * time.Second); srv.Observers() == 0 && time.Now().Before(wait); {
		time.Sleep(5 * time.Millisecond)
	}
	srv.Pause(false)
	time.Sleep(time.Duration(opt.Duration * float64(time.Second)))
	bs := srv.Stats()
	stopWatch()
	werr := <-werrC
	stopServer()
	if err := <-srvDone; err != nil {
		return scenarioReport{}, series{}, err
	}
	if werr != nil {
		return scenarioReport{}, series{}, werr
	}
	up, down := relay.Stats()
	mu.Lock()
	defer mu.Unlock()
	netw := networkReport{Lost: down.Lost, Duplicated: down.Duplicated, Corrupted: down.Corrupted}
	netw.silences(down, &up)
	rep := m.report(sc, opt, bs, netw)
	rep.FramesDroppedQueue = uint64(counted(metrics.FramesDropped) + counted(metrics.FramesLate))
	rep.StreamCopies = &copies
	return rep, m.ser, nil
}

// counted reads a counter's value.
func counted(c prometheus.Counter) float64 {
	var m dto.Metric
	if c.Write(&m) != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
