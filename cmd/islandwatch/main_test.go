package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/token"
	"github.com/islandsync/islandsync/transport"
)

func TestFlags(t *testing.T) {
	bad := [][]string{
		{"-addr", "nohost"}, {"-duration", "-1s"}, {"-pin", "abc"}, {"-aoi", "1,2,3"}, {"-aoi", "5,0,1,1"}, {"-aoi", "0,0,NaN,1"}, {"-aoi", "0,0,1,1;x"}, {"-pin", strings.Repeat("a", 64), "-ca", "x.pem"},
		{"-ca", "/nonexistent.pem"}, {"-dial-timeout", "0s"}, {"-metrics", "nohost"}, {"-bogus"}, {"extra"}, {"-token", "!!"}, {"-token", "@/nonexistent"}, {"-token", "AAAA"},
	}
	for _, args := range bad {
		var out, errs bytes.Buffer
		if code := run(context.Background(), args, &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs.String())
		}
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errs); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
}

// TestCannotConnect: nothing listens there, so the watcher says so and
// exits 1.
func TestCannotConnect(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"-addr", "127.0.0.1:9", "-pin", strings.Repeat("ab", 32), "-dial-timeout", "300ms"}, &out, &errs)
	if code != 1 || !strings.Contains(errs.String(), "cannot connect") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

// TestFreshness: an island counts as not updated in a second when its view
// showed no newer frame during it — missing, held on the same frame, or
// not shown at all because the clock is waiting.
func TestFreshness(t *testing.T) {
	k := func(seq uint32) island.Key { return island.Key{Island: 1, Seq: seq} }
	view := func(id uint32, seq uint32) receiver.IslandView {
		return receiver.IslandView{Island: id, Mode: store.Interpolate, Right: k(seq)}
	}
	var f freshness
	f.see([]receiver.IslandView{view(1, 1), {Island: 2, Mode: store.Empty}})
	if n := f.second([]uint32{1, 2}); n != 1 {
		t.Fatalf("first second: %d not updated, want 1 (island 2 is missing)", n)
	}
	f.see([]receiver.IslandView{view(1, 2), view(2, 2)})
	if n := f.second([]uint32{1, 2}); n != 0 {
		t.Fatalf("both moved on: %d not updated", n)
	}
	f.see([]receiver.IslandView{view(1, 2), view(2, 3)})
	if n := f.second([]uint32{1, 2}); n != 1 {
		t.Fatalf("island 1 held on frame 2: %d not updated, want 1", n)
	}
	// The clock waits: no views at all.
	if n := f.second([]uint32{1, 2}); n != 2 {
		t.Fatalf("a second with no views: %d not updated, want 2", n)
	}
}

// TestRefusedExits: a server that requires connect tokens refuses a
// watcher without one; islandwatch says so in one line and exits 1 rather
// than retrying (or exiting 0 with an empty summary).
func TestRefusedExits(t *testing.T) {
	pub, _, _ := token.GenerateKey(nil)
	cert, pin, err := transport.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	srv, err := transport.Listen(auth, transport.ServerConfig{Listen: "127.0.0.1:0", TLS: transport.ServerTLS(cert),
		TokenKeys: []ed25519.PublicKey{pub}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"-addr", srv.Addr().String(), "-pin", pin, "-json"}, &out, &errs)
	if code != 1 || !strings.Contains(errs.String(), "refused this observer: token (code 7)") || strings.Count(errs.String(), "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

// localRun runs the ragdolls on an authority and a broadcaster into one
// receiver, without a network, for n snapshots, losing the datagrams lose
// picks, and hands each render to see as a transport.Tick would be handed
// to islandwatch (queue depths made up: i mod 3 datagrams, 1 control read).
// It returns the receiver and the datagram bytes delivered.
func localRun(t *testing.T, n int, lose func(i int) bool, see func(tk *transport.Tick)) (*receiver.Receiver, uint64) {
	t.Helper()
	scs, _ := scenario.Pick("ragdolls")
	auth, _ := scenario.NewAuthority(scs, 20)
	bc, err := broadcast.New(broadcast.Config{SendPeriod: auth.Period()})
	if err != nil {
		t.Fatal(err)
	}
	rx, _ := receiver.New(receiver.Config{})
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	var now int64
	var bytes uint64
	var ctl []byte
	var dgs []broadcast.Datagram
	for i := 0; i < n; {
		now += 1_000_000 / scenario.StepHz
		msgs, frames := auth.Step()
		for _, m := range msgs {
			_ = bc.Apply(m)
		}
		bc.Frames(frames)
		ctl, dgs = bc.Take(1, ctl[:0], dgs[:0])
		if _, err := rx.ControlBytes(now, ctl); err != nil {
			t.Fatal(err)
		}
		for _, d := range dgs {
			if !lose(i) {
				bytes += uint64(len(d.Bytes))
				rx.Datagram(now, d.Bytes)
			}
		}
		tk := transport.Tick{Now: now, Views: rx.Render(now), Receiver: rx, DatagramQueue: i % 3, ControlQueue: 1}
		see(&tk)
		if len(frames) > 0 {
			if _, err := bc.FeedbackBytes(1, rx.Feedback(nil)); err != nil {
				t.Fatal(err)
			}
			i++
		}
	}
	return rx, bytes
}

// TestSummaryAndMetrics: the -json summary and the -metrics collectors
// carry the receive path's diagnostics — bytes received, extrapolation,
// freeze, buffer fill, frames buffered, queue depths — as counted, from a
// run that loses every datagram of 10 snapshots in 40 (so islands run past
// their newest frame and freeze).
func TestSummaryAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newWatchMetrics(reg)
	var obs observed
	renders := 0
	rx, bytes := localRun(t, 240, func(i int) bool { return i%40 >= 30 }, func(tk *transport.Tick) {
		obs.see(tk)
		m.tick(tk)
		if renders++; renders%60 == 0 {
			st := tk.Receiver.Stats()
			m.stats(&st, len(tk.Receiver.Islands()), &obs)
		}
	})
	st := rx.Stats()
	obs.handOffs = 3 // this run has one authority: the count is the caller's
	m.stats(&st, len(rx.Islands()), &obs)
	s := summarize("local", time.Second, rx, &obs)
	if s.BytesReceived != bytes || bytes == 0 {
		t.Errorf("bytes_received %d, %d delivered", s.BytesReceived, bytes)
	}
	if s.ExtrapolationS <= 0 || s.FreezeS <= 0 {
		t.Errorf("extrapolation_s %v, freeze_s %v: the losses ran islands past their frames", s.ExtrapolationS, s.FreezeS)
	}
	if s.BufferFillP50ms <= 0 || s.BufferFillMinMs > s.BufferFillP50ms {
		t.Errorf("buffer fill p50 %v ms, min %v ms", s.BufferFillP50ms, s.BufferFillMinMs)
	}
	if s.BufferedFrames == 0 || s.DatagramQueueMax != 2 || s.ControlQueueMax != 1 {
		t.Errorf("buffered_frames %d, datagram_queue_max %d, control_queue_max %d", s.BufferedFrames, s.DatagramQueueMax, s.ControlQueueMax)
	}
	for name, want := range map[string]float64{
		"datagram_bytes_received_total":      float64(bytes),
		"datagrams_received_total":           float64(st.Datagrams),
		"frames_committed_total":             float64(st.FramesCommitted),
		"extrapolation_island_seconds_total": s.ExtrapolationS,
		"freeze_island_seconds_total":        s.FreezeS,
		"buffered_frames":                    float64(s.BufferedFrames),
		"islands":                            float64(s.Islands),
		"control_queue":                      1,
		"hand_offs_total":                    3,
	} {
		if got := metricValue(t, reg, "islandsync_watch_"+name); math.Abs(got-want) > 1e-9*max(1, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// The last renders lost their frames: r ran up to latest + E, so the
	// buffer is 100 ms short — as the clock says.
	if got, want := metricValue(t, reg, "islandsync_watch_buffer_fill_seconds"), float64(rx.Clock().BufferFill)/1e6; got != want || want >= 0 {
		t.Errorf("buffer_fill_seconds = %v, the clock says %v", got, want)
	}
	if s.BufferFillMinMs != -100 {
		t.Errorf("buffer_fill_min_ms %v, want -100 (frozen at latest + E)", s.BufferFillMinMs)
	}
}

// TestMetricsSurviveAReset: totals that start again from zero (a source
// replaced) are counted from zero again, never as a decrease — a
// Prometheus counter panics on one, and islandwatch would die with it.
func TestMetricsSurviveAReset(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newWatchMetrics(reg)
	var obs observed
	var st receiver.Stats
	st.Clock.WaitingTime, st.Datagrams = 3_000_000, 10
	m.stats(&st, 0, &obs)
	st.Clock.WaitingTime, st.Datagrams = 500_000, 4 // both started again
	m.stats(&st, 0, &obs)
	if got := metricValue(t, reg, "islandsync_watch_waiting_seconds_total"); got != 3.5 {
		t.Errorf("waiting_seconds_total = %v, want 3.5", got)
	}
	if got := metricValue(t, reg, "islandsync_watch_datagrams_received_total"); got != 14 {
		t.Errorf("datagrams_received_total = %v, want 14", got)
	}
}

// metricValue gathers reg and returns the value of the unlabelled metric
// name (a counter or a gauge).
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) != 1 {
			continue
		}
		mt := mf.GetMetric()[0]
		if c := mt.GetCounter(); c != nil {
			return c.GetValue()
		}
		return mt.GetGauge().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}
