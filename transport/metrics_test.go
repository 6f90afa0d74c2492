package transport

import (
	"testing"

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
