package transport

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/scenario"
)

// TestStepsAndBroadcastsCounted: the server counts every authority step and
// every step that sampled frames, so that an operator sees its rate and,
// with the process's CPU, its cost per step: at 20 Hz of 60 each island
// samples every third step, so at least every third step broadcasts.
func TestStepsAndBroadcastsCounted(t *testing.T) {
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	m := NewMetrics(prometheusRegistry())
	srv, _ := testServer(t, auth, ServerConfig{Metrics: m})
	waitFor(t, "five broadcasts", func() bool { return counterValue(t, m.Broadcasts) >= 5 })
	srv.Pause(true) // the loop steps no more once it has taken this
	steps, bcs := counterValue(t, m.Steps), counterValue(t, m.Broadcasts)
	if bcs < 5 || steps < bcs || steps > 3*bcs+2 {
		t.Fatalf("%v steps and %v broadcasts, want a broadcast at least every third step", steps, bcs)
	}
}

// TestLossAndParityMetrics: every broadcast to an observer adds its loss
// estimate to observer_datagram_loss_ratio, and only those that carried
// parity count in observer_parity_broadcasts_total.
func TestLossAndParityMetrics(t *testing.T) {
	m := NewMetrics(prometheusRegistry())
	for _, b := range []broadcast.ObserverBudget{{Parity: 2, Loss: 0.08}, {Parity: 0, Loss: 0}, {Parity: 0, Loss: 0.0002}} {
		m.budget(b, 50*time.Millisecond)
	}
	if n := counterValue(t, m.ParityBroadcasts); n != 1 {
		t.Fatalf("%v broadcasts with parity counted, want 1", n)
	}
	var h dto.Metric
	if err := m.DatagramLoss.Write(&h); err != nil {
		t.Fatal(err)
	}
	if c, sum := h.GetHistogram().GetSampleCount(), h.GetHistogram().GetSampleSum(); c != 3 || sum < 0.0801 || sum > 0.0803 {
		t.Fatalf("loss histogram: %d samples summing to %v, want 3 summing to 0.0802", c, sum)
	}
}
