package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/transport"
)

// watchMetrics are the observer's Prometheus metrics (-metrics): what its
// receive path holds and did, as the per-second lines and the -json summary
// say it.
type watchMetrics struct {
	bufferFill, snapshotAge         prometheus.Gauge // seconds, at the last render
	datagramQueue, controlQueue     prometheus.Gauge // waiting for the receive loop, at the last render
	bufferedFrames, islands         prometheus.Gauge
	bytes, datagrams, frames        prometheus.Counter
	extrapolation, freeze, waiting  prometheus.Counter // seconds (island-seconds for the first two)
	halfFrames, rebuilt, reconnects prometheus.Counter
	handOffs                        prometheus.Counter
	rejects                         *prometheus.CounterVec
	last                            receiver.Stats    // the counters at the last stats
	lastHalf                        int               // the half-frames at the last stats
	lastHandOffs                    uint64            // the hand-offs at the last stats
	rejectsSeen                     map[string]uint64 // each reason's count at the last stats
}

func newWatchMetrics(reg prometheus.Registerer) *watchMetrics {
	m := &watchMetrics{rejectsSeen: map[string]uint64{}}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "islandsync", Subsystem: "watch", Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "watch", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m.bufferFill = gauge("buffer_fill_seconds", "Received future buffered ahead of playback (latest frame time − r) at the last render.")
	m.snapshotAge = gauge("snapshot_age_seconds", "Estimated server time − playback time at the last render.")
	m.datagramQueue = gauge("datagram_queue", "Datagrams waiting for the receive loop at the last render.")
	m.controlQueue = gauge("control_queue", "Control stream reads waiting for the receive loop at the last render.")
	m.bufferedFrames = gauge("buffered_frames", "Validated frames the store holds over every island.")
	m.islands = gauge("islands", "Islands the observer has a manifest for.")
	m.bytes = counter("datagram_bytes_received_total", "Bytes of the datagrams received, valid or not.")
	m.datagrams = counter("datagrams_received_total", "Datagrams received, valid or not.")
	m.frames = counter("frames_committed_total", "Frames validated and committed.")
	m.extrapolation = counter("extrapolation_island_seconds_total", "Island-seconds shown extrapolated past the newest frame.")
	m.freeze = counter("freeze_island_seconds_total", "Island-seconds held stale, plus seconds the playout clock was frozen.")
	m.waiting = counter("waiting_seconds_total", "Seconds the playout clock spent Waiting for a time base.")
	m.halfFrames = counter("half_frames_total", "Render ticks × islands shown with members from different frames.")
	m.rebuilt = counter("fragments_rebuilt_total", "Data fragments rebuilt from parity records.")
	m.reconnects = counter("reconnects_total", "Welcomes of a timeline already known (the connection was re-established).")
	m.handOffs = counter("hand_offs_total", "Islands whose authority lease epoch rose (a hand-off or a failover), counted once a second.")
	m.rejects = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "islandsync", Subsystem: "watch", Name: "rejects_total",
		Help: "Rejections by stage and reason, as islandwatch prints them."}, []string{"reason"})
	reg.MustRegister(m.rejects)
	return m
}

// tick records one render's gauges.
func (m *watchMetrics) tick(tk *transport.Tick) {
	if m == nil {
		return
	}
	st := tk.Receiver.Clock()
	if st.State != store.Waiting {
		m.bufferFill.Set(float64(st.BufferFill) / 1e6)
		m.snapshotAge.Set(float64(st.SnapshotAge) / 1e6)
	}
	m.datagramQueue.Set(float64(tk.DatagramQueue))
	m.controlQueue.Set(float64(tk.ControlQueue))
}

// stats brings the counters up to st (the receiver's counters now) and
// o (half-frames and hand-offs seen so far).
func (m *watchMetrics) stats(st *receiver.Stats, islands int, o *observed) {
	if m == nil {
		return
	}
	l := &m.last
	m.bufferedFrames.Set(float64(st.Store.BufferedFrames))
	m.islands.Set(float64(islands))
	grow(m.bytes, st.BytesReceived, l.BytesReceived, 1)
	grow(m.datagrams, st.Datagrams, l.Datagrams, 1)
	grow(m.frames, st.FramesCommitted, l.FramesCommitted, 1)
	grow(m.extrapolation, st.Store.ExtrapolationTime, l.Store.ExtrapolationTime, 1e6)
	grow(m.freeze, st.Store.FreezeTime+st.Clock.FrozenTime, l.Store.FreezeTime+l.Clock.FrozenTime, 1e6)
	grow(m.waiting, st.Clock.WaitingTime, l.Clock.WaitingTime, 1e6)
	grow(m.halfFrames, o.half, m.lastHalf, 1)
	grow(m.handOffs, o.handOffs, m.lastHandOffs, 1)
	grow(m.rebuilt, st.Assembler.Count(assembler.Rebuilt), l.Assembler.Count(assembler.Rebuilt), 1)
	grow(m.reconnects, st.Reconnects, l.Reconnects, 1)
	st.Rejects(func(reason string, n uint64) {
		grow(m.rejects.WithLabelValues(reason), n, m.rejectsSeen[reason], 1)
		m.rejectsSeen[reason] = n
	})
	m.last, m.lastHalf, m.lastHandOffs = *st, o.half, o.handOffs
}

// grow adds to c what a source total went up by since last, in units of
// per (1e6: µs to seconds). A total below last started again from zero
// (its source was replaced), so all of it is new: a Prometheus counter
// must never go back, and a panic would take the observer down.
func grow[T int | int64 | uint64](c prometheus.Counter, now, last T, per float64) {
	d := now - last
	if now < last {
		d = now
	}
	c.Add(float64(d) / per)
}
