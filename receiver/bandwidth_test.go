package receiver

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/scenario"
)

// lagLoop is an authority, a wire-3 broadcaster and one receiver with no
// loss, whose feedback reaches the broadcaster lag snapshots late: the
// baseline of each delta is about lag snapshots behind.
type lagLoop struct {
	*loop
	lag     int
	pending [][]byte // feedback per snapshot not yet delivered
	frames  uint64   // frames the authority produced
	// Per snapshot, what went each way and how busy the scene was.
	ctlBytes, upBytes int64
	changed           int // bodies whose rigid-quantized state differs from the previous snapshot
	last              map[island.MemberID]quant.State
	largest           int64 // the largest snapshot's datagram bytes
	// The quantized states of the last lag+1 snapshots (the baseline of
	// each delta is the oldest), and, once set, the residuals the deltas
	// carried, counted for their entropy.
	past  []pastSnap
	spare map[island.MemberID]quant.State // a map past no longer needs
	floor *residualCount
	// packer, once set, counts what a Fiedler-style bit-packer spends on
	// the same snapshots against the same baselines.
	packer *packerCount
	// drop, when set, says which datagrams (numbered in the order sent,
	// from 0) the path loses.
	drop func(n int) bool
	sent int
	// tape, when set, records every step's input to the receiver.
	tape *rxTape
}

// rxTape is what a receiver was handed, step by step: replayed into a
// clone of the receiver as it was when recording began, it does exactly
// the same work again.
type rxTape struct {
	steps []rxStep
}

type rxStep struct {
	now      int64
	ctl      []byte
	dgs      [][]byte
	feedback bool // the step ended a snapshot: its feedback was built
}

type pastSnap struct {
	t island.Time
	q map[island.MemberID]quant.State
}

// residualCount is every delta member's residuals in a run, counted by
// field and value, for their order-0 entropy: what a coder that knew each
// field's distribution of residuals beforehand, and coded the fields of a
// member independently, would spend on them.
type residualCount struct {
	members, changed int
	hist             [6]map[int64]int
}

func newResidualCount() *residualCount {
	c := &residualCount{}
	for k := range c.hist {
		c.hist[k] = map[int64]int{}
	}
	return c
}

func (c *residualCount) add(d [6]int64) {
	c.members++
	if d == [6]int64{} {
		return
	}
	c.changed++
	for k, v := range d {
		c.hist[k][v]++
	}
}

// bits returns the order-0 entropy per member: whether it changed, and
// each field's residual when it did.
func (c *residualCount) bits() float64 {
	h := func(n, of int) float64 {
		if n == 0 || n == of {
			return 0
		}
		p := float64(n) / float64(of)
		return -p * math.Log2(p)
	}
	sum := h(c.changed, c.members) + h(c.members-c.changed, c.members)
	for _, m := range c.hist {
		for _, n := range m {
			sum += float64(n) / float64(c.members) * -math.Log2(float64(n)/float64(c.changed))
		}
	}
	return sum
}

func newLagLoop(b testing.TB, scene string, hz, lag int) *lagLoop {
	return newLagLoopWire(b, scene, hz, lag, 3)
}

// newLagLoopWire is newLagLoop on the given wire format.
func newLagLoopWire(b testing.TB, scene string, hz, lag, wire int) *lagLoop {
	return newLagLoopDatagram(b, scene, hz, lag, wire, 0)
}

// newLagLoopDatagram is newLagLoopWire with the observer's datagram cap
// (0: the default).
func newLagLoopDatagram(b testing.TB, scene string, hz, lag, wire, maxDatagram int) *lagLoop {
	scs, err := scenario.Pick(scene)
	if err != nil {
		b.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, hz)
	if err != nil {
		b.Fatal(err)
	}
	bc, err := broadcast.New(broadcast.Config{SendPeriod: auth.Period(), Wire: wire,
		Class: func(uint32, int) quant.Class { return quant.Rigid }})
	if err != nil {
		b.Fatal(err)
	}
	rx, _ := New(Config{})
	l := &lagLoop{loop: &loop{t: b, auth: auth, bc: bc, rx: rx, lim: codec.ControlLimits{}.WithDefaults()}, lag: lag,
		last: map[island.MemberID]quant.State{}}
	_ = bc.Join(1, maxDatagram)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	return l
}

// snapshot steps the world until one broadcast went out, delivers it, and
// returns how many bodies it carried and how many datagram bytes it took.
func (l *lagLoop) snapshot() (bodies int, n int64) {
	for {
		l.now += 1_000_000 / scenario.StepHz
		msgs, frames := l.auth.Step()
		for _, m := range msgs {
			_ = l.bc.Apply(m)
		}
		if len(frames) > 0 && len(l.pending) >= l.lag {
			// The feedback sent lag snapshots ago arrives just now.
			l.deliver(l.pending[0], func(m codec.Message) { _ = l.bc.Feedback(1, m) })
			l.upBytes += int64(len(l.pending[0]))
			l.pending = l.pending[1:]
		}
		l.bc.Frames(frames)
		l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
		l.deliver(l.ctl, func(m codec.Message) { _ = l.rx.Control(l.now, m) })
		if len(frames) > 0 {
			l.ctlBytes += int64(len(l.ctl))
		}
		var st rxStep
		if l.tape != nil {
			st = rxStep{now: l.now, ctl: bytes.Clone(l.ctl), feedback: len(frames) > 0}
		}
		for _, d := range l.dgs {
			n += int64(len(d.Bytes))
			if l.sent++; l.drop == nil || !l.drop(l.sent-1) {
				l.rx.Datagram(l.now, d.Bytes)
				if l.tape != nil {
					st.dgs = append(st.dgs, bytes.Clone(d.Bytes))
				}
			}
		}
		if l.tape != nil {
			l.tape.steps = append(l.tape.steps, st)
		}
		l.rx.Render(l.now)
		if len(frames) == 0 {
			continue
		}
		p := quant.Rigid.Precision()
		var base *pastSnap
		if len(l.past) > l.lag {
			base = &l.past[len(l.past)-1-l.lag]
		}
		now := pastSnap{t: frames[0].Time, q: l.spare}
		if now.q == nil {
			now.q = make(map[island.MemberID]quant.State, len(l.last))
		}
		clear(now.q)
		for _, f := range frames {
			bodies += len(f.Members)
			for _, m := range f.Members {
				q, _ := quant.Quantize(m.State, p)
				if l.last[m.ID] != q {
					l.changed++
				}
				l.last[m.ID] = q
				now.q[m.ID] = q
				if base == nil || l.floor == nil {
					continue
				}
				b, ok := base.q[m.ID]
				if ok {
					l.floor.add(codec.Residuals(b, q, int64(f.Time-base.t), p))
					l.packer.add(&b, q)
				} else {
					l.packer.add(nil, q)
				}
			}
		}
		if base != nil && l.packer != nil {
			l.packer.end()
		}
		l.past, l.spare = append(l.past, now), nil
		if len(l.past) > l.lag+1 { // the oldest's map holds the next snapshot
			l.spare = l.past[0].q
			l.past = append(l.past[:0], l.past[1:]...)
		}
		l.largest = max(l.largest, n)
		l.frames += uint64(len(frames))
		l.pending = append(l.pending, l.rx.Feedback(nil))
		return bodies, n
	}
}

// BenchmarkBandwidth measures the default wire's bits per body per
// snapshot at rigid precision with velocities carried, every byte counted,
// decoded and checked: down in datagrams (bits/body), down on the control
// stream (ctl-bits/body) and up in feedback (up-bits/body). Scenes: the
// Fiedler scene (900 boxes in stacks of three and a pusher sweeping through
// them without pause, sleeping on — about a third of the bodies change
// between snapshots; the benchmark fails if fewer than 25 % do), the calm
// boxes scene (the pusher dips every 2 s), the 240-link chain and the
// ragdolls; at 20 and 60 Hz, with acknowledgements arriving 1, 2 and 6
// snapshots late (the baseline that far behind). It reports where the
// datagram bits go, the share of bodies that changed (changed-%) and the
// largest snapshot against the mean (max/mean), and fails if the receiver
// did not restore and commit every frame or ever lacked a baseline.
func BenchmarkBandwidth(b *testing.B) {
	for _, scene := range []string{"fiedler", "boxes", "chain", "ragdolls"} {
		for _, hz := range []int{20, 60} {
			for _, lag := range []int{1, 2, 6} {
				name := fmt.Sprintf("scene=%s/hz=%d/lag=%dms", scene, hz, (lag*1000+hz/2)/hz)
				b.Run(name, func(b *testing.B) {
					l := newLagLoop(b, scene, hz, lag)
					warm := 5 * hz // 5 s: things settle, baselines flow
					if scene == "fiedler" {
						warm = 15 * hz // the pusher has scattered a good part of the field
					}
					for range warm {
						l.snapshot()
					}
					e0 := encoderBytes(l.bc)
					committed := l.rx.Stats().FramesCommitted
					sent := l.frames
					l.ctlBytes, l.upBytes, l.changed, l.largest = 0, 0, 0, 0
					l.floor = newResidualCount()
					l.packer = &packerCount{}
					var bodies, snaps int
					var bytes int64
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						n, by := l.snapshot()
						bodies += n
						bytes += by
						snaps++
					}
					b.StopTimer()
					st := l.rx.Stats()
					if got, want := st.FramesCommitted-committed, l.frames-sent; got != want {
						b.Fatalf("committed %d of %d frames", got, want)
					}
					if st.Wire.NoBaseline != 0 || st.Wire.Digest != 0 {
						b.Fatalf("v2 stats %+v", st.Wire)
					}
					share := 100 * float64(l.changed) / float64(bodies)
					if scene == "fiedler" && share < 25 {
						b.Fatalf("only %.1f %% of the bodies changed per snapshot: the scene is not busy", share)
					}
					e := encoderBytes(l.bc)
					per := func(v int64) float64 { return float64(8*v) / float64(bodies) }
					b.ReportMetric(per(bytes), "bits/body")
					b.ReportMetric(per(l.ctlBytes), "ctl-bits/body")
					b.ReportMetric(per(l.upBytes), "up-bits/body")
					b.ReportMetric(share, "changed-%")
					b.ReportMetric(float64(l.largest)*float64(snaps)/float64(bytes), "max/mean")
					b.ReportMetric(per(e.Headers-e0.Headers+e.Records-e0.Records+e.Digests-e0.Digests), "hdr-bits/body")
					b.ReportMetric(per(e.Indices-e0.Indices), "index-bits/body")
					b.ReportMetric(per(e.Position-e0.Position), "pos-bits/body")
					b.ReportMetric(per(e.Angle-e0.Angle), "angle-bits/body")
					b.ReportMetric(per(e.Velocity-e0.Velocity), "vel-bits/body")
					b.ReportMetric(per(e.Parity-e0.Parity), "parity-bits/body")
					// The members' residuals as their order-0 entropy, beside
					// what the coder spent on them (index, position, angle and
					// velocity bits): how far modelling alone could go.
					b.ReportMetric(l.floor.bits(), "order0-bits/body")
					// The reference: a Fiedler-style bit-packer on the same
					// snapshots, without velocities (as in the articles) and
					// with them.
					pk, pkv := l.packer.perBody()
					b.ReportMetric(pk, "packer-bits/body")
					b.ReportMetric(pkv, "packer-vel-bits/body")
				})
			}
		}
	}
}

func encoderBytes(bc *broadcast.Broadcaster) codec.ByteBreakdown { return bc.Stats().Wire }

// BenchmarkFiedlerCost is the CPU side of the Fiedler scene (900 boxes in
// stacks, a pusher sweeping through them; about a third of the bodies
// change per snapshot) at 20 Hz with acknowledgements 2 snapshots (100 ms)
// late, beside one cp step of the same scene in the same run: the
// authority's encode (Frames and Take) and the reading of feedback per
// observer per snapshot, and one observer's receive (every datagram
// decoded, restored, validated and committed, its feedback built) per
// snapshot, without and with a render. With 1, 8 and 64 observers, all
// subscribed to everything; observer 1's receiver is real, and its
// feedback goes to every observer (each is sent the same datagrams, so
// the same confirmations hold for each). Reported as ns and as a share of
// the step.
//
// The scene's cost changes as the pusher scatters the field, so every
// iteration measures the same window of a fresh scene: its snapshots from
// 15 s to 25 s of play (the steps and snapshots between them), the 15 s
// before untimed.
func BenchmarkFiedlerCost(b *testing.B) {
	const warm, window = 15 * 20, 10 * 20 // snapshots
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("observers=%d", n), func(b *testing.B) {
			var step, enc, fb, rcv, render time.Duration
			var steps, snaps int
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c := newFiedlerCost(b, n)
				for range warm {
					c.snapshot(false)
				}
				b.StartTimer()
				for range window {
					c.snapshot(true)
				}
				step, enc, fb, rcv, render = step+c.step, enc+c.enc, fb+c.fb, rcv+c.rcv, render+c.render
				steps, snaps = steps+c.steps, snaps+c.snaps
			}
			per := func(d time.Duration, k int) float64 { return float64(d.Nanoseconds()) / float64(k) }
			stepNs := per(step, steps)
			encObs := per(enc+fb, snaps*n)
			b.ReportMetric(stepNs, "step-ns")
			b.ReportMetric(encObs, "encode+feedback-ns/observer")
			b.ReportMetric(100*encObs/stepNs, "encode-%step")
			b.ReportMetric(per(enc+fb, snaps), "authority-ns/broadcast")
			b.ReportMetric(per(rcv, snaps), "receive-ns")
			b.ReportMetric(100*per(rcv, snaps)/stepNs, "receive-%step")
			b.ReportMetric(100*per(rcv+render, snaps)/stepNs, "receive+render-%step")
		})
	}
}

// fiedlerCost is BenchmarkFiedlerCost's scene and observers, and what its
// timed snapshots took.
type fiedlerCost struct {
	*lagLoop
	n                          int
	pending                    [][]byte
	out1, other                broadcast.Out // each observer's datagrams, drained as they are sent
	step, enc, fb, rcv, render time.Duration
	steps, snaps               int
}

func newFiedlerCost(b *testing.B, n int) *fiedlerCost {
	l := newLagLoop(b, "fiedler", 20, 2)
	for id := broadcast.ObserverID(2); id <= broadcast.ObserverID(n); id++ {
		_ = l.bc.Join(id, 0)
		_ = l.bc.Subscribe(id, codec.Subscribe{All: true})
	}
	return &fiedlerCost{lagLoop: l, n: n}
}

// snapshot steps the world until one broadcast went out and was received,
// timing each part when timed.
func (c *fiedlerCost) snapshot(timed bool) {
	l := c.lagLoop
	for {
		l.now += 1_000_000 / scenario.StepHz
		t0 := time.Now()
		msgs, frames := l.auth.Step()
		if timed {
			c.step += time.Since(t0)
			c.steps++
		}
		for _, m := range msgs {
			_ = l.bc.Apply(m)
		}
		if len(frames) == 0 {
			continue
		}
		t0 = time.Now()
		if len(c.pending) >= l.lag {
			for id := broadcast.ObserverID(1); id <= broadcast.ObserverID(c.n); id++ {
				_, _ = l.bc.FeedbackBytes(id, c.pending[0])
			}
			c.pending = c.pending[1:]
		}
		t1 := time.Now()
		l.bc.Frames(frames)
		l.bc.Drain(1, &c.out1)
		for id := broadcast.ObserverID(2); id <= broadcast.ObserverID(c.n); id++ {
			l.bc.Drain(id, &c.other)
		}
		t2 := time.Now()
		l.deliver(c.out1.Control, func(m codec.Message) { _ = l.rx.Control(l.now, m) })
		t3 := time.Now()
		for _, d := range c.out1.Datagrams {
			l.rx.Datagram(l.now, d.Bytes)
		}
		out := l.rx.Feedback(nil)
		t4 := time.Now()
		l.rx.Render(l.now)
		t5 := time.Now()
		c.pending = append(c.pending, out)
		if timed {
			c.fb += t1.Sub(t0)
			c.enc += t2.Sub(t1)
			c.rcv += t4.Sub(t3)
			c.render += t5.Sub(t4)
			c.snaps++
		}
		return
	}
}

// BenchmarkFiedlerDecode is the decoder alone on the Fiedler scene (900
// boxes in stacks, a pusher sweeping through them; about a third of the
// bodies change per snapshot) at 20 Hz with acknowledgements 100 ms late:
// 40 consecutive snapshots' datagrams, recorded after 15 s of play, parsed
// with codec.Decoder again and again (nothing restored), in ns per
// snapshot.
func BenchmarkFiedlerDecode(b *testing.B) {
	l := newLagLoop(b, "fiedler", 20, 2)
	for range 15 * 20 {
		l.snapshot()
	}
	const snaps = 40
	var dgs [][]byte
	for range snaps {
		l.snapshot()
		for _, d := range l.dgs {
			dgs = append(dgs, append([]byte(nil), d.Bytes...))
		}
	}
	dec, _ := codec.NewDecoder(codec.Config{})
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, d := range dgs {
			if _, _, err := dec.Decode(d); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*snaps), "ns/snapshot")
}

// BenchmarkFiedlerEncode is the encoder alone on the Fiedler scene (as
// BenchmarkFiedlerDecode): 40 consecutive snapshots of its 901 islands,
// recorded after 15 s of play, quantized at rigid precision, each island
// coded with codec.Encoder as a delta against its frame two snapshots
// (100 ms) before — the frames and baselines the broadcaster would pick,
// each frame hashed beforehand (once per frame whatever the observers, as
// the broadcaster does), with nothing else of its work — in ns per
// snapshot.
func BenchmarkFiedlerEncode(b *testing.B) {
	l := newLagLoop(b, "fiedler", 20, 2)
	for range 15 * 20 {
		l.snapshot()
	}
	const snaps, lag = 40, 2
	p := quant.Rigid.Precision()
	var frames [][]codec.Frame // per snapshot, in island order
	var times []island.Time
	for s := range snaps + lag {
		var fs []*island.Frame
		for len(fs) == 0 {
			l.now += 1_000_000 / scenario.StepHz
			msgs, f := l.auth.Step()
			for _, m := range msgs {
				_ = l.bc.Apply(m)
			}
			fs = f
		}
		var cf []codec.Frame
		for i := range fs {
			f := fs[i]
			ents := make([]baseline.Entry, len(f.Members))
			for j, m := range f.Members {
				q, err := quant.Quantize(m.State, p)
				if err != nil {
					b.Fatal(err)
				}
				ents[j] = baseline.Entry{ID: m.ID, Record: baseline.Record{Q: q, Time: f.Time, Segment: f.Segment}}
			}
			k := f.Key
			k.Seq = uint32(s + 1)
			cf = append(cf, codec.Frame{Sender: f.Sender, Key: k, Segment: f.Segment, Flags: f.Flags, Class: quant.Rigid, Members: ents})
		}
		slices.SortFunc(cf, func(x, y codec.Frame) int { return cmp.Compare(x.Key.Island, y.Key.Island) })
		frames = append(frames, cf)
		times = append(times, fs[0].Time)
	}
	// Each frame's baseline: the same island's frame lag snapshots before.
	bases := make([][]*baseline.Table, snaps)
	for s := range snaps {
		old := map[uint32]*codec.Frame{}
		for i := range frames[s] {
			old[frames[s][i].Key.Island] = &frames[s][i]
		}
		for i := range frames[s+lag] {
			f := &frames[s+lag][i]
			var t *baseline.Table
			if o := old[f.Key.Island]; o != nil && o.Key.Stream() == f.Key.Stream() && len(o.Members) == len(f.Members) {
				t = &baseline.Table{ID: o.Key.Seq, Entries: o.Members, Frame: baseline.FrameInfo{Sender: o.Sender,
					Key: o.Key, Time: times[s], Segment: o.Segment, Class: o.Class}}
			}
			bases[s] = append(bases[s], t)
		}
	}
	enc, _ := codec.NewEncoder(codec.Config{})
	for s := range snaps { // hashed once per frame, as the broadcaster does for all its observers
		fs := frames[s+lag]
		enc.Begin(0, fs[0].Key.Seq, times[s+lag])
		for i := range fs {
			enc.FrameDigest(&fs[i])
		}
	}
	bytes, n := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for s := range snaps {
			fs := frames[s+lag]
			enc.Begin(uint32(s), fs[0].Key.Seq, times[s+lag])
			for i := range fs {
				var err error
				if t := bases[s][i]; t != nil {
					err = enc.AddDelta(&fs[i], &codec.Ref{Base: t})
				} else {
					err = enc.AddKey(&fs[i])
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, d := range enc.Datagrams() {
				bytes += len(d)
			}
		}
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*snaps), "ns/snapshot")
	b.ReportMetric(float64(8*bytes)/float64(n*snaps*len(frames[0])), "bits/island")
}

// BenchmarkFiedlerReceive is one observer's receive alone on the Fiedler
// scene (as BenchmarkFiedlerDecode: 900 boxes, about a third changing per
// snapshot, 20 Hz, acknowledgements 100 ms late): 40 consecutive
// snapshots' control and datagrams, recorded after 15 s of play, handed
// to a copy of the receiver as it was before them, each snapshot's
// feedback built — decoding, restoring, validating, committing and
// keeping baselines, with no render — in ns per snapshot. The copy starts
// with empty free lists, so it allocates where the receiver it was copied
// from, warm, would not (TestFiedlerAllocs counts that one).
func BenchmarkFiedlerReceive(b *testing.B) {
	l := newLagLoop(b, "fiedler", 20, 2)
	for range 15 * 20 {
		l.snapshot()
	}
	const snaps = 40
	start := l.rx.Clone()
	l.tape = &rxTape{}
	for range snaps {
		l.snapshot()
	}
	want := l.rx.Stats().FramesCommitted - start.Stats().FramesCommitted
	var fb []byte
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		b.StopTimer()
		rx := start.Clone()
		runtime.GC() // the copy's garbage is not the receive's
		b.StartTimer()
		for _, st := range l.tape.steps {
			l.deliver(st.ctl, func(m codec.Message) { _ = rx.Control(st.now, m) })
			for _, d := range st.dgs {
				rx.Datagram(st.now, d)
			}
			if st.feedback {
				fb = rx.Feedback(fb[:0])
			}
		}
		b.StopTimer()
		if got := rx.Stats().FramesCommitted - start.Stats().FramesCommitted; got != want {
			b.Fatalf("replay committed %d frames, the run %d", got, want)
		}
		b.StartTimer()
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*snaps), "ns/snapshot")
}
