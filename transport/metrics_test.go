package transport

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
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

// halfSource sends, at its first step, a Physics for an island it never
// gives a manifest, and every step a frame of that island: the broadcaster
// refuses the one and skips the others.
type halfSource struct{ steps int }

func (s *halfSource) Period() int64 { return 50_000 }

func (s *halfSource) Step() ([]codec.Message, []*island.Frame) {
	s.steps++
	var msgs []codec.Message
	if s.steps == 1 {
		msgs = append(msgs, codec.Lease{Island: 3, Epoch: 1, Owner: 1},
			codec.Physics{Island: 3, Topology: 1, Config: 1, Bodies: []codec.BodyMass{{}}})
	}
	f := &island.Frame{Sender: 1, Key: island.Key{Island: 3, Epoch: 1, Topology: 1, Config: 1, Seq: uint32(s.steps)},
		Time: island.Time(s.steps) * 50_000, Members: []island.Member{{ID: island.MemberID{Stable: 1}}}}
	return msgs, []*island.Frame{f}
}

// TestSkippedCounted: frames of an island whose manifest never came, and
// a control message the broadcaster refused, reach no observer — and are
// counted, not only logged.
func TestSkippedCounted(t *testing.T) {
	m := NewMetrics(prometheusRegistry())
	testServer(t, &halfSource{}, ServerConfig{Metrics: m})
	waitFor(t, "three frames skipped", func() bool {
		return counterValue(t, m.FramesSkipped.WithLabelValues("no-control")) >= 3
	})
	if n := counterValue(t, m.ControlRefused); n != 1 {
		t.Fatalf("%v control messages counted refused, want the Physics without a manifest", n)
	}
	if n := counterValue(t, m.FramesSkipped.WithLabelValues("refused")); n != 0 {
		t.Fatalf("%v frames counted refused by the encoder, want none", n)
	}
}
