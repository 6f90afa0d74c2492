package transport

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the server's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	Observers     prometheus.Gauge
	DatagramsSent prometheus.Counter
	BytesSent     prometheus.Counter
	FramesDropped prometheus.Counter // frames dropped for slow observers
	DatagramsSlow prometheus.Counter // datagrams dropped for slow observers
	Rejects       *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Observers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "islandsync", Name: "observers",
			Help: "Observers connected."}),
		DatagramsSent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "datagrams_sent_total",
			Help: "Frame datagrams handed to QUIC, over all observers."}),
		BytesSent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "datagram_bytes_sent_total",
			Help: "Frame datagram payload bytes handed to QUIC, over all observers."}),
		FramesDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "frames_dropped_slow_observer_total",
			Help: "Queued frames dropped because an observer fell behind (a newer frame of the island replaced it, or the queue was full)."}),
		DatagramsSlow: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "datagrams_dropped_slow_observer_total",
			Help: "Queued datagrams dropped because an observer fell behind."}),
		Rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "islandsync", Name: "rejects_total",
			Help: "Connections closed or input refused, by reason."}, []string{"reason"}),
	}
	reg.MustRegister(m.Observers, m.DatagramsSent, m.BytesSent, m.FramesDropped, m.DatagramsSlow, m.Rejects)
	return m
}

func (m *Metrics) observers(n int) {
	if m != nil {
		m.Observers.Set(float64(n))
	}
}

func (m *Metrics) sent(bytes int) {
	if m != nil {
		m.DatagramsSent.Inc()
		m.BytesSent.Add(float64(bytes))
	}
}

func (m *Metrics) droppedSlow(frames, datagrams int) {
	if m != nil && (frames > 0 || datagrams > 0) {
		m.FramesDropped.Add(float64(frames))
		m.DatagramsSlow.Add(float64(datagrams))
	}
}

func (m *Metrics) reject(reason string) {
	if m != nil {
		m.Rejects.WithLabelValues(reason).Inc()
	}
}
