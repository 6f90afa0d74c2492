package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/transport"
)

// nodeMetrics are a node's Prometheus metrics (NodeConfig.Registry).
type nodeMetrics struct {
	held    prometheus.Gauge
	changes *prometheus.CounterVec
	gaps    prometheus.Histogram
}

func newNodeMetrics(reg prometheus.Registerer, role Role) *nodeMetrics {
	if reg == nil {
		return nil
	}
	m := &nodeMetrics{}
	switch role {
	case Authority:
		m.held = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "islandsync", Subsystem: "cluster",
			Name: "shards_held", Help: "Shards this authority holds now."})
		m.changes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "cluster",
			Name: "shard_changes_total", Help: "Shards this authority gained or lost."}, []string{"change"})
		reg.MustRegister(m.held, m.changes)
	case Front:
		m.gaps = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Subsystem: "cluster",
			Name: "handoff_gap_seconds", Help: "For each island handed to another holder or epoch: from the old lease's last frame relayed to the new one's first.",
			Buckets: []float64{0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}})
		reg.MustRegister(m.gaps)
	}
	return m
}

func (m *nodeMetrics) change(gain bool, held int) {
	if m == nil || m.held == nil {
		return
	}
	m.held.Set(float64(held))
	if gain {
		m.changes.WithLabelValues("gained").Inc()
	} else {
		m.changes.WithLabelValues("lost").Inc()
	}
}

func (m *nodeMetrics) handOff(_ uint32, gap float64) {
	if m != nil && m.gaps != nil {
		m.gaps.Observe(gap)
	}
}

// registerReaped exposes how many other holders' expired leases the
// member revoked before etcd did.
func registerReaped(reg prometheus.Registerer, m *Member) {
	if reg == nil {
		return
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "cluster",
		Name: "leases_reaped_total", Help: "Expired leases of other shard holders this authority revoked before etcd's own check did."},
		func() float64 { return float64(m.Reaped()) }))
}

// registerRelay exposes a relay's counters, read when scraped.
func registerRelay(reg prometheus.Registerer, r *Relay) {
	if reg == nil {
		return
	}
	counter := func(name, help string, v func(RelayStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "cluster", Name: name, Help: help},
			func() float64 { return float64(v(r.Stats())) })
	}
	fenced := func(what string, v func(RelayStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "cluster", Name: "fenced_total",
			Help: "Leases, island messages and frames from authorities that the fence refused.", ConstLabels: prometheus.Labels{"what": what}},
			func() float64 { return float64(v(r.Stats())) })
	}
	reg.MustRegister(
		counter("relayed_frames_total", "Frames the front relayed from authorities.", func(s RelayStats) uint64 { return s.Frames }),
		counter("relayed_control_total", "Control messages the front relayed from authorities.", func(s RelayStats) uint64 { return s.Control }),
		counter("superseded_frames_total", "Frames from authorities that a newer frame of their island replaced before the front relayed them.", func(s RelayStats) uint64 { return s.Superseded }),
		counter("late_frames_total", "Frames from authorities older than one already relayed (reordered on the uplink).", func(s RelayStats) uint64 { return s.Late }),
		counter("finals_total", "Hand-overs whose old holder's last relayed frame went again on the control stream, ahead of the new lease.", func(s RelayStats) uint64 { return s.Finals }),
		counter("islands_forgotten_total", "Islands forgotten because their shard moved and nobody restated them.", func(s RelayStats) uint64 { return s.Forgotten }),
		fenced("lease", func(s RelayStats) uint64 { return s.FencedLeases }),
		fenced("control", func(s RelayStats) uint64 { return s.FencedControl }),
		fenced("frame", func(s RelayStats) uint64 { return s.FencedFrames }),
	)
}

// registerUplinks exposes a front's uplink port's counters, read when
// scraped.
func registerUplinks(reg prometheus.Registerer, ln *transport.UplinkListener) {
	if reg == nil {
		return
	}
	for _, c := range []struct {
		result string
		v      func(transport.UplinkStats) uint64
	}{
		{"accepted", func(s transport.UplinkStats) uint64 { return s.Accepted }},
		{"refused", func(s transport.UplinkStats) uint64 { return s.Refused }},
		{"full", func(s transport.UplinkStats) uint64 { return s.Full }},
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "cluster", Name: "uplinks_total",
			Help:        "Uplinks authorities dialled to this front: accepted, refused in the handshake (certificate of no registered authority, or too many handshakes), or closed at once (too many open).",
			ConstLabels: prometheus.Labels{"result": c.result}},
			func() float64 { return float64(c.v(ln.Stats())) }))
	}
}
