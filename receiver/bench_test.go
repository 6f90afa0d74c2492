package receiver

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/scenario"
)

// BenchmarkReceive is the receive path's cost per frame and per body:
// decode, reassemble, validate and commit every datagram of one 150-body
// frame (9 datagrams), then render the island. Encoding the next frame is
// outside the timer.
func BenchmarkReceive(b *testing.B) {
	const n = 150
	ids := make([]island.MemberID, n)
	for i := range ids {
		ids[i] = island.MemberID{Stable: uint64(i + 1)}
	}
	rx, _ := New(Config{})
	for _, m := range []codec.Message{welcome, codec.Announce{IDs: ids}, lease,
		codec.Manifest{Island: 7, Topology: 1, Config: 1, Members: ids}} {
		if err := rx.Control(0, m); err != nil {
			b.Fatal(err)
		}
	}
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	f := island.Frame{Sender: 1, Key: island.Key{Island: 7, Epoch: 1, Topology: 1, Config: 1}, Members: make([]island.Member, n)}
	for i := range f.Members {
		f.Members[i] = island.Member{ID: ids[i], State: island.State{X: float64(i), Y: 1, VX: 1}}
	}
	var dgs [][]byte
	now := int64(0)
	next := func() {
		f.Key.Seq++
		f.Time += 50_000
		for i := range f.Members {
			f.Members[i].State.X += 0.05
		}
		enc.Reset()
		_ = enc.Add(&f)
		dgs = append(dgs[:0], enc.Datagrams()...)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		next()
		now += 50_000
		b.StartTimer()
		for _, d := range dgs {
			rx.Datagram(now, d)
		}
		rx.Render(now)
	}
	if rx.Stats().FramesCommitted == 0 {
		b.Fatal("nothing committed")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/body")
}

// BenchmarkPathsWire times wire 3's two halves on the 240-link chain at
// 20 Hz with acknowledgements one snapshot late: encode (one observer's
// keyframes and deltas) and receive (decode, expand, reassemble, validate,
// commit, keep the baseline, render), each per body, timed around those
// calls alone (ns/op includes the physics).
func BenchmarkPathsWire(b *testing.B) {
	l := newLagLoop(b, "chain", 20, 1)
	for range 100 {
		l.snapshot()
	}
	var enc, rcv time.Duration
	bodies := 0
	b.ReportAllocs()
	for b.Loop() {
		stepped := false
		for !stepped {
			l.now += 1_000_000 / scenario.StepHz
			msgs, fr := l.auth.Step()
			for _, m := range msgs {
				_ = l.bc.Apply(m)
			}
			if len(fr) == 0 {
				continue
			}
			stepped = true
			t0 := time.Now()
			l.bc.Frames(fr)
			l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
			enc += time.Since(t0)
			l.deliver(l.ctl, func(m codec.Message) { _ = l.rx.Control(l.now, m) })
			t0 = time.Now()
			for _, d := range l.dgs {
				l.rx.Datagram(l.now, d.Bytes)
			}
			l.rx.Render(l.now)
			rcv += time.Since(t0)
			l.fb = l.rx.Feedback(l.fb[:0])
			l.deliver(l.fb, func(m codec.Message) { _ = l.bc.Feedback(1, m) })
			for _, f := range fr {
				bodies += len(f.Members)
			}
		}
	}
	b.ReportMetric(float64(enc.Nanoseconds())/float64(bodies), "encode-ns/body")
	b.ReportMetric(float64(rcv.Nanoseconds())/float64(bodies), "receive-ns/body")
}

// recording is what one observer received over a run: per step, the
// control bytes, the datagrams and the local time. The steps before warm
// are the warm-up: joining, the first keyframes and manifests.
type recording struct {
	now  []int64
	ctl  [][]byte
	dgs  [][][]byte
	warm int
	body int // bodies in the frames sent after the warm-up
}

// record runs scene on the wire given (acknowledgements one snapshot late)
// and keeps what the observer received: 100 snapshots of warm-up, then
// snaps more.
func record(b testing.TB, scene string, snaps, wire int) *recording {
	return recordWarm(b, scene, 100, snaps, wire)
}

// recordWarm is record with warm snapshots of warm-up.
func recordWarm(b testing.TB, scene string, warm, snaps, wire int) *recording {
	return recordDatagram(b, scene, warm, snaps, wire, 0)
}

// recordDatagram is recordWarm with the observer's datagram cap (0: the
// default).
func recordDatagram(b testing.TB, scene string, warm, snaps, wire, maxDatagram int) *recording {
	l := newLagLoopDatagram(b, scene, 20, 1, wire, maxDatagram)
	rec := &recording{}
	for i := range snaps + warm {
		if i == warm {
			rec.warm = len(rec.now)
		}
		l.ctl = l.ctl[:0]
		for {
			l.now += 1_000_000 / scenario.StepHz
			msgs, fr := l.auth.Step()
			for _, m := range msgs {
				_ = l.bc.Apply(m)
			}
			l.bc.Frames(fr)
			var dgs []broadcast.Datagram
			var ctl []byte
			ctl, dgs = l.bc.Take(1, nil, nil)
			l.deliver(ctl, func(m codec.Message) { _ = l.rx.Control(l.now, m) })
			for _, d := range dgs {
				l.rx.Datagram(l.now, d.Bytes)
			}
			l.rx.Render(l.now)
			rec.now = append(rec.now, l.now)
			rec.ctl = append(rec.ctl, ctl)
			var raw [][]byte
			for _, d := range dgs {
				raw = append(raw, d.Bytes)
			}
			rec.dgs = append(rec.dgs, raw)
			if len(fr) > 0 {
				if i >= warm {
					for _, f := range fr {
						rec.body += len(f.Members)
					}
				}
				l.deliver(l.rx.Feedback(nil), func(m codec.Message) { _ = l.bc.Feedback(1, m) })
				break
			}
		}
	}
	return rec
}

// play feeds steps [from, to) of the recording into rx: control, then
// datagrams, then a render when asked for and the step carried datagrams.
func (rec *recording) play(rx *Receiver, from, to int, render bool) {
	for i := from; i < to; i++ {
		now := rec.now[i]
		if _, err := rx.ControlBytes(now, rec.ctl[i]); err != nil {
			panic(err) // the recording is the authority's own output
		}
		for _, d := range rec.dgs[i] {
			rx.Datagram(now, d)
		}
		if render && len(rec.dgs[i]) > 0 {
			rx.Render(now) // once per frame, as BenchmarkReceive does
		}
	}
}

// BenchmarkReceiveWire replays 300 snapshots of the 240-link chain on wire 3
// (mostly deltas, keyframes every 2 s, two parity records per frame) into a
// fresh receiver: decode, expand, reassemble, validate, commit, keep
// baselines, render. The figure to compare with BenchmarkReceive (wire 1,
// one synthetic frame) and BenchmarkReplay/scene=chain/wire=1 is ns/body.
func BenchmarkReceiveWire(b *testing.B) {
	replay(b, record(b, "chain", 300, 2))
}

// BenchmarkReplay replays the same 300 snapshots of each scene recorded on
// each wire format: the like-for-like receive cost per body — with a
// render per frame, and without (decode, reassemble, validate, commit
// alone). The chain has every body moving; the boxes are many small islands,
// most at rest, whose topology changes as stacks touch and part; the Fiedler
// scene is 900 boxes in stacks that a pusher sweeps through without pause
// (about a third of its bodies change per snapshot).
func BenchmarkReplay(b *testing.B) {
	for _, scene := range []string{"chain", "ragdolls", "boxes", "fiedler"} {
		for _, wire := range []int{1, 3} {
			rec := record(b, scene, 300, wire)
			for _, render := range []bool{true, false} {
				b.Run(fmt.Sprintf("scene=%s/wire=%d/render=%v", scene, wire, render), func(b *testing.B) {
					replayRender(b, rec, render)
				})
			}
		}
	}
}

// replay feeds a recording into a fresh receiver per iteration, rendering
// once per frame, and reports ns per body received.
func replay(b *testing.B, rec *recording) { replayRender(b, rec, true) }

// replayRender is replay, rendering once per frame or never. Each
// iteration takes a fresh receiver through the warm-up untimed, then times
// the rest: the steady state the bodies are counted over.
func replayRender(b *testing.B, rec *recording, render bool) {
	bodies := 0
	var committed uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		rx, _ := New(Config{})
		rec.play(rx, 0, rec.warm, render)
		before := rx.Stats().FramesCommitted
		b.StartTimer()
		rec.play(rx, rec.warm, len(rec.now), render)
		bodies += rec.body
		committed = rx.Stats().FramesCommitted - before
	}
	if committed == 0 {
		b.Fatal("nothing committed after the warm-up")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(bodies), "ns/body")
}

// BenchmarkFeedback is the authority reading one observer's feedback in the
// boxes scene (Held for each of its few hundred islands, Ack, now and then
// Keyframes), message by message with codec.ParseControl and
// Broadcaster.Feedback, and as stream bytes with Broadcaster.FeedbackBytes.
func BenchmarkFeedback(b *testing.B) {
	l := newLoop(b, "boxes", 3)
	for range 200 {
		l.step(nil)
	}
	fb := slices.Clone(l.fb)
	b.Run("read=ParseControl", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(fb)))
		for b.Loop() {
			for p := fb; len(p) > 0; {
				m, n, err := codec.ParseControl(p, &l.lim)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.bc.Feedback(1, m); err != nil {
					b.Fatal(err)
				}
				p = p[n:]
			}
		}
	})
	b.Run("read=FeedbackBytes", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(fb)))
		for b.Loop() {
			if n, err := l.bc.FeedbackBytes(1, fb); err != nil || n != len(fb) {
				b.Fatal(n, err)
			}
		}
	})
}
