package transport

import (
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
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
	// HandshakesFailed counts handshakes that ended without a connection,
	// by result: "failed" (a bad pin, a client that gave up, a TLS error)
	// or "refused" (over the cap of handshakes in progress).
	HandshakesFailed *prometheus.CounterVec
	// JoinsRefused counts connections closed before they joined, by
	// reason: "full", "admission-full", "no-stream", "no-subscribe",
	// "datagram-too-small".
	JoinsRefused *prometheus.CounterVec
	// TokensRefused counts connect tokens refused, by reason: "missing",
	// "malformed", "version", "signature", "expired".
	TokensRefused *prometheus.CounterVec
	// Closes counts connections the server closed, by code name (CodeName).
	Closes *prometheus.CounterVec
	// QueueAge is, at every broadcast, how long the oldest control byte or
	// datagram queued for each observer has waited, in seconds.
	QueueAge prometheus.Histogram
	// QueueAgeMax is the largest such age over all observers at the last
	// broadcast, in seconds.
	QueueAgeMax prometheus.Gauge
	// DatagramWait is how long each datagram sent waited, from being
	// queued for its observer to being handed to QUIC, in seconds.
	DatagramWait prometheus.Histogram
	// FramesLate counts frames of datagrams dropped from an observer's
	// queue because they had waited over two broadcast periods.
	FramesLate prometheus.Counter
	// StreamCopies counts stream copy datagrams queued: control bytes sent
	// again as datagrams to observers whose paths lose datagrams.
	StreamCopies prometheus.Counter
	// Budget is, at every broadcast, each observer's byte budget for it in
	// bytes per second (0: unlimited).
	Budget prometheus.Histogram
	// BudgetUsed counts datagram bytes sent under budgets (all of them when
	// no budget is set).
	BudgetUsed prometheus.Counter
	// FramesDeferred counts frames an observer's budget left out.
	FramesDeferred prometheus.Counter
	// FramesSkipped counts frames the broadcaster sent to no observer, by
	// reason: "no-control" (no lease or manifest applied for the island
	// yet) or "refused" (it could not be coded: a state non-finite or out
	// of its precision's range, a frame over a cap). ControlRefused counts control
	// messages from the source the broadcaster refused (a full table, a
	// Physics that does not describe the island's manifest): they reach
	// no observer.
	FramesSkipped  *prometheus.CounterVec
	ControlRefused prometheus.Counter
	// OldestIslandAge is, at every broadcast, per observer, how long ago the
	// island it wants that has gone longest without a frame got one, in
	// seconds; OldestIslandAgeMax the largest over observers at the last
	// broadcast.
	OldestIslandAge    prometheus.Histogram
	OldestIslandAgeMax prometheus.Gauge
	// DatagramLoss is, at every broadcast, per observer, the share of its
	// datagrams its confirmations show lost (baseline.Sender.Loss);
	// ParityBroadcasts counts the broadcasts to observers that carried
	// parity on their fragmented frames (none go to a clean path).
	DatagramLoss     prometheus.Histogram
	ParityBroadcasts prometheus.Counter
	// Steps counts the authority's steps; Broadcasts the steps that
	// sampled at least one frame. A server that keeps up takes its step
	// rate (60 a second) and the broadcast rate; with
	// process_cpu_seconds_total they give its CPU per step and broadcast.
	Steps, Broadcasts prometheus.Counter
	// PaceGaveUp counts the times an observer's datagram sender stopped
	// waiting for quic-go to send what it had been handed because nothing
	// had gone on the wire for two late bounds (four broadcast periods):
	// a path that carried nothing for that long, or a datagram quic-go
	// dropped unsent. Each costs that observer's frames the wait.
	PaceGaveUp prometheus.Counter

	oldest float64 // the largest OldestIslandAge of the broadcast being flushed
}

// NewMetrics creates the metrics and registers them with reg, together
// with the Go runtime's and the process's own collectors.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counters := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "islandsync", Name: name, Help: help}, []string{label})
	}
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
		Rejects: counters("rejects_total", "Connections closed or input refused, by reason.", "reason"),
		HandshakesFailed: counters("handshakes_failed_total",
			"Handshakes that ended without a connection: failed (bad pin, TLS error, gave up) or refused (too many in progress).", "result"),
		JoinsRefused:  counters("joins_refused_total", "Connections closed before they joined, by reason.", "reason"),
		TokensRefused: counters("tokens_refused_total", "Connect tokens refused, by reason.", "reason"),
		Closes:        counters("closes_total", "Connections the server closed, by application error code.", "code"),
		QueueAge: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Name: "observer_queue_age_seconds",
			Help:    "At every broadcast, per observer: how long the oldest queued control byte or datagram has waited.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}),
		QueueAgeMax: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "islandsync", Name: "observer_queue_age_max_seconds",
			Help: "The largest observer queue age at the last broadcast."}),
		DatagramWait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Name: "datagram_queue_wait_seconds",
			Help:    "How long each datagram sent waited from being queued for its observer to being handed to QUIC.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}}),
		FramesLate: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "frames_dropped_late_total",
			Help: "Frames of datagrams dropped from an observer's queue after waiting over two broadcast periods."}),
		StreamCopies: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "stream_copies_total",
			Help: "Stream copy datagrams queued: control bytes sent again as datagrams to observers whose paths lose datagrams."}),
		Budget: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Name: "observer_budget_bytes_per_second",
			Help:    "At every broadcast, per observer: its byte budget (0: unlimited).",
			Buckets: prometheus.ExponentialBuckets(4000, 2, 12)}),
		BudgetUsed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "observer_budget_bytes_used_total",
			Help: "Datagram bytes encoded for observers, summed over them."}),
		FramesDeferred: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "frames_deferred_total",
			Help: "Frames an observer's byte budget left out, summed over observers."}),
		FramesSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "islandsync", Name: "frames_skipped_total",
			Help: "Frames the broadcaster sent to no observer, by reason: no-control (no lease or manifest applied yet) or refused (the encoder refused it)."}, []string{"reason"}),
		ControlRefused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "control_refused_total",
			Help: "Control messages from the source that the broadcaster refused: they reach no observer."}),
		OldestIslandAge: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Name: "observer_oldest_island_age_seconds",
			Help:    "At every broadcast, per observer: the age of the island it wants that went longest without a frame.",
			Buckets: []float64{0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10}}),
		OldestIslandAgeMax: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "islandsync", Name: "observer_oldest_island_age_max_seconds",
			Help: "The largest observer_oldest_island_age_seconds at the last broadcast."}),
		DatagramLoss: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "islandsync", Name: "observer_datagram_loss_ratio",
			Help:    "At every broadcast, per observer: the share of its datagrams its confirmations show lost, over about the last 64.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5}}),
		ParityBroadcasts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "observer_parity_broadcasts_total",
			Help: "Broadcasts to an observer whose fragmented frames carried parity records (none go to a path that lost nothing lately)."}),
		Steps: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "steps_total",
			Help: "Authority steps taken (60 a second when the server keeps up)."}),
		Broadcasts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "broadcasts_total",
			Help: "Authority steps that sampled at least one frame: broadcasts."}),
		PaceGaveUp: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Name: "pace_gave_up_total",
			Help: "Times a datagram sender stopped waiting for QUIC to send what it held, after nothing went on the wire for four broadcast periods."}),
	}
	reg.MustRegister(m.Observers, m.DatagramsSent, m.BytesSent, m.FramesDropped, m.DatagramsSlow, m.Rejects,
		m.HandshakesFailed, m.JoinsRefused, m.TokensRefused, m.Closes, m.QueueAge, m.QueueAgeMax,
		m.DatagramWait, m.FramesLate, m.StreamCopies, m.Budget, m.BudgetUsed, m.FramesDeferred, m.FramesSkipped, m.ControlRefused, m.OldestIslandAge, m.OldestIslandAgeMax,
		m.DatagramLoss, m.ParityBroadcasts, m.Steps, m.Broadcasts, m.PaceGaveUp,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// stepped records one authority step, a broadcast when it sampled frames.
func (m *Metrics) stepped(broadcast bool) {
	if m == nil {
		return
	}
	m.Steps.Inc()
	if broadcast {
		m.Broadcasts.Inc()
	}
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

func (m *Metrics) handshakeFailed(result string) {
	if m != nil {
		m.HandshakesFailed.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) joinRefused(reason string) {
	if m != nil {
		m.JoinsRefused.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) tokenRefused(reason string) {
	if m != nil {
		m.TokensRefused.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) closed(code quic.ApplicationErrorCode) {
	if m != nil {
		m.Closes.WithLabelValues(CodeName(code)).Inc()
	}
}

// skipped records the frames a broadcast sent to no observer.
func (m *Metrics) skipped(unknown, refused uint64) {
	if m == nil {
		return
	}
	if unknown > 0 {
		m.FramesSkipped.WithLabelValues("no-control").Add(float64(unknown))
	}
	if refused > 0 {
		m.FramesSkipped.WithLabelValues("refused").Add(float64(refused))
	}
}

func (m *Metrics) controlRefused() {
	if m != nil {
		m.ControlRefused.Inc()
	}
}

func (m *Metrics) droppedLate(frames int) {
	if m != nil {
		m.FramesLate.Add(float64(frames))
	}
}

func (m *Metrics) streamCopies(n int) {
	if m != nil && n > 0 {
		m.StreamCopies.Add(float64(n))
	}
}

func (m *Metrics) paceGaveUp() {
	if m != nil {
		m.PaceGaveUp.Inc()
	}
}

func (m *Metrics) waited(d time.Duration) {
	if m != nil {
		m.DatagramWait.Observe(d.Seconds())
	}
}

// budget records what one broadcast to one observer did under its budget.
func (m *Metrics) budget(b broadcast.ObserverBudget, period time.Duration) {
	if m == nil || period <= 0 {
		return
	}
	m.Budget.Observe(float64(b.Budget) / period.Seconds())
	m.BudgetUsed.Add(float64(b.Sent))
	m.FramesDeferred.Add(float64(b.Deferred))
	age := float64(b.OldestAge) * period.Seconds()
	m.OldestIslandAge.Observe(age)
	m.oldest = max(m.oldest, age)
	m.DatagramLoss.Observe(b.Loss)
	if b.Parity > 0 {
		m.ParityBroadcasts.Inc()
	}
}

// queueAges records one broadcast's observer queue ages, in seconds.
func (m *Metrics) queueAges(ages []float64) {
	if m == nil {
		return
	}
	worst := 0.0
	for _, a := range ages {
		m.QueueAge.Observe(a)
		worst = max(worst, a)
	}
	m.QueueAgeMax.Set(worst)
	m.OldestIslandAgeMax.Set(m.oldest)
	m.oldest = 0
}

// ServeMetrics serves g's metrics at /metrics on addr (host:port; port 0
// picks one) until close is called, and returns the address it listens on.
func ServeMetrics(addr string, g prometheus.Gatherer) (net.Addr, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return ln.Addr(), hs.Close, nil
}
