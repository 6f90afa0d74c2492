package main

import (
	"math"
	"slices"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/internal/quantile"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/physics"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
)

// options are the knobs of one demo run.
type options struct {
	Duration  float64 // simulated seconds per scenario (wall-clock with QUIC)
	SendHz    int     // broadcast rate
	Seed      uint64
	Net       netsim.Config
	Adversary bool
	AdvRate   float64 // hostile packets per legitimate datagram
	QUIC      bool    // the real server and watcher over QUIC through a relay
	Wire      int     // datagram format: 3 or 1
	Parity    int     // broadcast.Config.Parity: 0 the default, negative none
	// BudgetKbps caps each observer's datagram bytes (broadcast.Config.ObserverKbps); 0 none
	BudgetKbps int
	FixedRate  bool // over QUIC: no budget from the path (transport.ServerConfig.FixedRate)
	// AOI, when positive, is the width in metres of the observer's area of
	// interest, moving along the floor (area); 0: every island.
	AOI float64
	// MaxDatagram caps the observer's datagrams, bytes; 0: the default
	// (over QUIC: the path's).
	MaxDatagram int
}

// areaSpeed is how fast the demo observer's area of interest moves, m/s.
const areaSpeed = 4.0

// area is the demo observer's area of interest at authority time t
// (seconds): opt.AOI metres wide, from the floor to 40 m up, its left edge
// starting at x = −5 m and moving right at areaSpeed.
func area(opt options, t float64) codec.Subscribe {
	if opt.AOI <= 0 {
		return codec.Subscribe{All: true}
	}
	x := -5 + areaSpeed*t
	return codec.Subscribe{Regions: []codec.Region{{X0: x, Y0: -10, X1: x + opt.AOI, Y1: 40}}}
}

// series is what the plot draws, one point per render tick.
type series struct {
	T, Pipeline, Naive, Floor []float64
	Freezes, Cuts             []float64 // times of freeze and segment-cut ticks
}

// measure gathers one scenario's figures: the server's floor on what it
// sampled, and what the receivers showed at each render tick.
type measure struct {
	world               *physics.World
	pipe                *pipeline
	straight            *pipeline // the same receive path without local simulation; nil over QUIC
	nv                  *naive    // nil when there is no naive receiver (QUIC)
	perFragment         int
	wire                int
	dec2                *codec.Decoder // reads the fragment counts of wire-3 datagrams sent
	poses               map[island.MemberID][3]float64
	floor               []float64 // joint error of every sampled frame's joints
	floorTick           float64   // max joint error of the frames sampled at the last broadcast
	framesSent          uint64
	maxFragments        int
	ser                 series
	pipeErrs, naiveErrs []float64
	straightErrs        []float64
	ages                []float64
	pipeHalf, naiveHalf int
}

func newMeasure(w *physics.World, pipe *pipeline, nv *naive) *measure {
	c, _ := codec.Config{}.WithDefaults()
	dec2, _ := codec.NewDecoder(codec.Config{MaxDatagram: codec.MaxMaxDatagram})
	return &measure{world: w, pipe: pipe, nv: nv, perFragment: c.MembersPerFragment(), dec2: dec2,
		poses: map[island.MemberID][3]float64{}}
}

// sampled records the server's joint error on frames it just sampled.
func (m *measure) sampled(frames []*island.Frame) {
	if len(frames) > 0 {
		m.floorTick = 0 // a new sample replaces the floor shown
	}
	for _, f := range frames {
		m.framesSent++
		if m.wire == 1 {
			m.maxFragments = max(m.maxFragments, (len(f.Members)+m.perFragment-1)/m.perFragment)
		}
		for _, e := range m.jointErrors(f) {
			m.floor = append(m.floor, e)
			m.floorTick = max(m.floorTick, e)
		}
	}
}

// jointErrors returns the server's own joint errors on frame f as the
// observer decodes it: the sampled floats on wire 1, the quantized states
// restored on wire 3, so that quantization error shows in the floor. Every
// frame is sampled at this very step, so the world's joints are the frame's.
func (m *measure) jointErrors(f *island.Frame) []float64 {
	is := m.world.Island(f.Key.Island)
	if is == nil {
		return nil
	}
	p := broadcast.DefaultClass(f.Key.Island, len(f.Members)).Precision()
	clear(m.poses)
	for _, mb := range f.Members {
		s := mb.State
		if m.wire == 3 {
			q, err := quant.Quantize(s, p)
			if err != nil {
				return nil
			}
			s = q.State(p)
		}
		m.poses[mb.ID] = [3]float64{s.X, s.Y, s.Angle}
	}
	src := func(id island.MemberID) (float64, float64, float64, bool) {
		ps, ok := m.poses[id]
		return ps[0], ps[1], ps[2], ok
	}
	var out []float64
	for _, j := range is.Joints {
		if e, ok := physics.JointError(&j.Spec, src); ok {
			out = append(out, e)
		}
	}
	return out
}

// sent records how many fragments the frames of a wire-3 datagram needed
// (wire 1 derives it from the frame sizes).
func (m *measure) sent(dg []byte) {
	if m.wire != 3 {
		return
	}
	if _, recs, err := m.dec2.Decode(dg); err == nil {
		for _, r := range recs {
			m.maxFragments = max(m.maxFragments, r.Fragments)
		}
	}
}

// rendered measures the replicas after a render tick at local time now.
func (m *measure) rendered(now int64) {
	islands := m.world.Islands()
	var ph int
	var pm, nm float64
	m.pipeErrs, ph, pm = m.pipe.rep.Measure(islands, m.pipeErrs)
	m.pipeHalf += ph
	if m.straight != nil {
		m.straightErrs, _, _ = m.straight.rep.Measure(islands, m.straightErrs)
	}
	if m.nv != nil {
		var nh int
		m.naiveErrs, nh, nm = m.nv.rep.Measure(islands, m.naiveErrs)
		m.naiveHalf += nh
	}
	if st := m.pipe.rx.Clock(); st.State != store.Waiting {
		m.ages = append(m.ages, float64(st.SnapshotAge)/1000)
	}
	t := float64(now) / 1e6
	m.ser.T = append(m.ser.T, t)
	m.ser.Pipeline = append(m.ser.Pipeline, pm)
	m.ser.Naive = append(m.ser.Naive, nm)
	m.ser.Floor = append(m.ser.Floor, m.floorTick)
	if m.pipe.stale || m.pipe.rx.Clock().State == store.Frozen {
		m.ser.Freezes = append(m.ser.Freezes, t)
	}
	if m.pipe.cuts {
		m.ser.Cuts = append(m.ser.Cuts, t)
	}
}

// report builds the scenario's report.
func (m *measure) report(sc scenario.Scenario, opt options, bs broadcast.Stats, netw networkReport) scenarioReport {
	rs := m.pipe.rx.Stats()
	rep := scenarioReport{
		Name:               sc.Name,
		About:              sc.About,
		FramesSent:         m.framesSent,
		FramesDeferred:     bs.Deferred,
		DatagramsSent:      bs.Datagrams,
		BytesSent:          bs.Bytes,
		BandwidthKBps:      round(float64(bs.Bytes)/opt.Duration/1000, 1),
		MaxFragmentsFrame:  m.maxFragments,
		FramesCommitted:    rs.FramesCommitted,
		FragmentsRebuilt:   rs.Assembler.Count(assembler.Rebuilt),
		Rejects:            rejects(&rs, m.pipe.ctlErrs),
		Pipeline:           pipelineReport(m.pipeHalf, m.pipeErrs, m.pipe.posErrs),
		ServerFloor:        floorReport{MaxJointError: round(maxOf(m.floor), 4), P99JointError: round(quantile.Nearest(m.floor, 99), 4)},
		FreezeSeconds:      round(float64(rs.Store.FreezeTime+rs.Clock.FrozenTime)/1e6, 3),
		ExtrapolateSeconds: round(float64(rs.Store.ExtrapolationTime)/1e6, 3),
		SnapshotAgeP50ms:   round(quantile.Nearest(m.ages, 50), 1),
		SnapshotAgeP95ms:   round(quantile.Nearest(m.ages, 95), 1),
		CorrectionMaxM:     round(rs.Store.CorrectionMax, 4),
		HandoffLatencyMs:   round(float64(rs.Store.HandoffLatencyMax)/1000, 1),
		HeldForControl:     rs.Wire.Parked,
		HeldForControlMs:   round(float64(rs.Wire.ParkedWait)/1000, 1),
		Network:            netw,
		ages:               m.ages,
	}
	if m.straight != nil {
		st := pipelineReport(0, m.straightErrs, m.straight.posErrs)
		rep.Straight = &st
	}
	if m.nv != nil {
		rep.Naive = &receiverReport{HalfFramesApplied: m.naiveHalf, MaxJointError: round(maxOf(m.naiveErrs), 4), P99JointError: round(quantile.Nearest(m.naiveErrs, 99), 4)}
	}
	rep.Verdict = verdict(rep.FramesCommitted, rep.Pipeline.HalfFramesApplied)
	return rep
}

// runScenario simulates one scenario on the in-memory link and returns its
// report: simulated time, so the same seed gives the same report.
func runScenario(sc scenario.Scenario, opt options) (scenarioReport, series, error) {
	auth, err := scenario.NewAuthority([]scenario.Scenario{sc}, opt.SendHz)
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	world := auth.Worlds()[0]
	bc, err := broadcast.New(broadcast.Config{Timeline: opt.Seed, SendPeriod: auth.Period(), Wire: opt.Wire, Parity: opt.Parity, ObserverKbps: opt.BudgetKbps})
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	const observer = 1
	_ = bc.Join(observer, opt.MaxDatagram)
	_ = bc.Subscribe(observer, area(opt, 0))

	seed := opt.Seed ^ hashName(sc.Name)
	link := netsim.NewLink(opt.Net, seed)
	var adv *netsim.Adversary
	if opt.Adversary {
		adv = netsim.NewAdversary(seed+1, opt.AdvRate)
	}
	rx, err := receiver.New(receiver.Config{})
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	pipe := newPipeline(world, rx)
	nv := newNaive(world)
	m := newMeasure(world, pipe, nv)
	m.wire = opt.Wire
	// The same receive path without local simulation, fed the same bytes,
	// for comparison; its feedback is not sent (it holds what rx holds).
	rxStraight, err := receiver.New(receiver.Config{StraightExtrapolation: true})
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	tr := newTruth(world)
	m.straight = newPipeline(world, rxStraight)
	pipe.truth, m.straight.truth = tr, tr

	// The control stream is reliable and ordered: every run of bytes
	// arrives after the one-way delay, in order.
	type pendingCtl struct {
		due int64
		b   []byte
	}
	var ctlQueue, fbQueue []pendingCtl
	var ctlBuf, fbBuf []byte
	nextFeedback := int64(0)
	var dgs []broadcast.Datagram

	const stepUS = 1_000_000 / scenario.StepHz
	const tickUS = 1000 // the loop's resolution
	renderPhase := int64(7_000)
	end := int64(opt.Duration * 1e6)
	var out [][]byte
	nextStep, nextRender := int64(stepUS), renderPhase
	for now := int64(0); now <= end; now += tickUS {
		if now >= nextStep {
			nextStep += stepUS
			ctl, frames := auth.Step()
			tr.record()
			for _, msg := range ctl {
				_ = bc.Apply(msg)
				nv.physics(msg)
			}
			bc.Frames(frames)
			ctlBuf, dgs = bc.Take(observer, ctlBuf[:0], dgs[:0])
			if len(ctlBuf) > 0 {
				ctlQueue = append(ctlQueue, pendingCtl{now + opt.Net.Delay, slices.Clone(ctlBuf)})
			}
			m.sampled(frames)
			for _, dg := range dgs {
				m.sent(dg.Bytes)
				link.Send(now, dg.Bytes)
				if adv != nil {
					for _, h := range adv.Observe(dg.Bytes) {
						link.Inject(now+opt.Net.Delay+int64(len(h)%17)*1000, h)
					}
				}
			}
		}
		// Reliable control first: it was sent no later than any datagram
		// that depends on it could have been.
		for len(ctlQueue) > 0 && ctlQueue[0].due <= now {
			pipe.control(now, ctlQueue[0].b)
			m.straight.control(now, ctlQueue[0].b)
			ctlQueue = ctlQueue[1:]
		}
		// The observer's feedback (keyframe requests, confirmations of
		// datagrams) travels back on the reliable stream.
		if now >= nextFeedback {
			nextFeedback = now + 50_000
			fbBuf = fbBuf[:0]
			if opt.AOI > 0 { // the camera moved: its area goes with the feedback
				fbBuf = area(opt, float64(now)/1e6).Append(fbBuf)
			}
			if fbBuf = rx.Feedback(fbBuf); len(fbBuf) > 0 {
				fbQueue = append(fbQueue, pendingCtl{now + opt.Net.Delay, slices.Clone(fbBuf)})
			}
		}
		for len(fbQueue) > 0 && fbQueue[0].due <= now {
			_, _ = bc.FeedbackBytes(observer, fbQueue[0].b) // the receiver's own output
			fbQueue = fbQueue[1:]
		}
		out = link.Deliver(now, out[:0])
		for _, dg := range out {
			rx.Datagram(now, dg)
			rxStraight.Datagram(now, dg)
			nv.receive(dg)
		}
		if now >= nextRender {
			nextRender += stepUS
			pipe.render(now)
			m.straight.render(now)
			m.rendered(now)
		}
	}
	ls := link.Stats()
	netw := networkReport{Lost: ls.Lost, Duplicated: ls.Duplicated, Corrupted: ls.Corrupted}
	netw.silences(ls, nil)
	if adv != nil {
		a := adv.Stats()
		netw.Injected = a.Total()
	}
	return m.report(sc, opt, bc.Stats(), netw), m.ser, nil
}

// verdict is "pass" when the pipeline committed frames and showed no
// half-frame, "fail" when it showed one, "n/a" when nothing was committed.
func verdict(committed uint64, halfFrames int) string {
	switch {
	case committed == 0:
		return "n/a"
	case halfFrames > 0:
		return "fail"
	}
	return "pass"
}

// rejects gathers every nonzero reject counter of the pipeline, by stage.
func rejects(s *receiver.Stats, ctlErrs uint64) map[string]uint64 {
	out := map[string]uint64{}
	s.Rejects(func(reason string, n uint64) { out[reason] = n })
	if ctlErrs > 0 {
		out["control:unparsable"] = ctlErrs
	}
	return out
}

func hashName(s string) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func round(v float64, digits int) float64 {
	f := math.Pow10(digits)
	return math.Round(v*f) / f
}
