package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/transport"
)

// nodeMetrics are a node's Prometheus metrics (NodeConfig.Registry).
type nodeMetrics struct {
	held    prometheus.Gauge
	changes *prometheus.CounterVec
	gaps    prometheus.Histogram
	etcd    *prometheus.HistogramVec
	gain    prometheus.Histogram
}

// latencyBuckets are the bounds, in seconds, of the histograms of the
// steps a change of hands takes: etcd's answers and a gain's build.
var latencyBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2}

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
		m.etcd = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "islandsync", Subsystem: "cluster",
			Name: "etcd_call_seconds", Help: "This authority's etcd transactions for shards and its leave, from request to answer: call claim, release or leave (a drain's leave carries its releases).",
			Buckets: latencyBuckets}, []string{"call"})
		m.gain = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Subsystem: "cluster",
			Name: "gain_seconds", Help: "For each shard this authority gained: from etcd's answer to its claim to its islands announced (its world built and caught up).",
			Buckets: latencyBuckets})
		reg.MustRegister(m.held, m.changes, m.etcd, m.gain)
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

// etcdCall records one etcd transaction's time.
func (m *nodeMetrics) etcdCall(call string, took time.Duration) {
	if m != nil && m.etcd != nil {
		m.etcd.WithLabelValues(call).Observe(took.Seconds())
	}
}

// gained records how long a gained shard took to be taken up.
func (m *nodeMetrics) gained(took time.Duration) {
	if m != nil && m.gain != nil {
		m.gain.Observe(took.Seconds())
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
