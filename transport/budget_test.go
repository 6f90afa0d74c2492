package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// BenchmarkBudgetStepQUIC serves the Fiedler scene over QUIC on 127.0.0.1
// to one watcher, its cap 1 Mbit/s for 8 s of warm-up and 3 s, 128 kbit/s
// for 3 s, then 1 Mbit/s again, and reports the datagram bytes handed to QUIC in each
// phase's last two seconds (kB/s), and the longest a datagram waited
// from being queued to being handed to quic-go (the upper bound of the
// histogram bucket it fell in, ms). Wall-clock: a measurement, not a test.
func BenchmarkBudgetStepQUIC(b *testing.B) {
	for range b.N {
		scs, _ := scenario.Pick("fiedler")
		auth, err := scenario.NewAuthority(scs, 20)
		if err != nil {
			b.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		srv, ct := testServer(b, auth, ServerConfig{Metrics: m, ObserverKbps: 1000})
		w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx, nil) }()
		sent := func() float64 {
			var d dto.Metric
			_ = m.BytesSent.Write(&d)
			return d.GetCounter().GetValue()
		}
		time.Sleep(8 * time.Second) // the pusher reaches the stacks: the scene is busy
		var rates []float64
		for _, kbps := range []int{1000, 128, 1000} {
			if err := srv.SetObserverKbps(kbps); err != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Second) // the budget settles
			before := sent()
			time.Sleep(2 * time.Second)
			rates = append(rates, (sent()-before)/2/1000)
		}
		cancel()
		<-done
		var d dto.Metric
		_ = m.DatagramWait.(prometheus.Metric).Write(&d)
		worst := 0.0
		prev := uint64(0)
		for _, bk := range d.GetHistogram().GetBucket() {
			if bk.GetCumulativeCount() > prev {
				worst = bk.GetUpperBound()
			}
			prev = bk.GetCumulativeCount()
		}
		if prev < d.GetHistogram().GetSampleCount() {
			worst = 1e9 // over the last bucket
		}
		for i, name := range []string{"1M", "128k", "1M-again"} {
			b.ReportMetric(rates[i], fmt.Sprintf("kB/s-%s", name))
		}
		b.ReportMetric(worst*1000, "max-wait-ms")
	}
}
