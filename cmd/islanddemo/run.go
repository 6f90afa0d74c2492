package main

import (
	"math"
	"slices"
	"sort"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/physics"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
)

// options are the knobs of one demo run.
type options struct {
	Duration  float64 // simulated seconds per scenario
	SendHz    int     // broadcast rate
	Seed      uint64
	Net       netsim.Config
	Adversary bool
	AdvRate   float64 // hostile packets per legitimate datagram
	UDP       bool    // route datagrams through real loopback sockets
}

// transport carries datagrams from the server to the observer through the
// impaired link: in memory, or over UDP sockets with an in-process relay.
type transport interface {
	send(now int64, dg []byte)
	inject(due int64, dg []byte)
	deliver(now int64, out [][]byte) [][]byte
	stats() netsim.LinkStats
	close()
}

type memTransport struct{ l *netsim.Link }

func (m *memTransport) send(now int64, dg []byte)                { m.l.Send(now, dg) }
func (m *memTransport) inject(due int64, dg []byte)              { m.l.Inject(due, dg) }
func (m *memTransport) deliver(now int64, out [][]byte) [][]byte { return m.l.Deliver(now, out) }
func (m *memTransport) stats() netsim.LinkStats                  { return m.l.Stats() }
func (m *memTransport) close()                                   {}

// series is what the plot draws, one point per render tick.
type series struct {
	T, Pipeline, Naive, Floor []float64
	Freezes, Cuts             []float64 // times of freeze and segment-cut ticks
}

// runScenario simulates one scenario and returns its report.
func runScenario(sc scenario.Scenario, opt options) (scenarioReport, series, error) {
	auth, err := scenario.NewAuthority([]scenario.Scenario{sc}, opt.SendHz)
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	world := auth.Worlds()[0]
	bc, err := broadcast.New(broadcast.Config{Timeline: opt.Seed, SendPeriod: auth.Period()})
	if err != nil {
		return scenarioReport{}, series{}, err
	}
	const observer = 1
	_ = bc.Join(observer, 0)
	_ = bc.Subscribe(observer, codec.Subscribe{All: true})

	seed := opt.Seed ^ hashName(sc.Name)
	var tr transport = &memTransport{l: netsim.NewLink(opt.Net, seed)}
	if opt.UDP {
		u, err := newUDPTransport(netsim.NewLink(opt.Net, seed))
		if err != nil {
			return scenarioReport{}, series{}, err
		}
		tr = u
	}
	defer tr.close()
	var adv *netsim.Adversary
	if opt.Adversary {
		adv = netsim.NewAdversary(seed+1, opt.AdvRate)
	}
	pipe := newPipeline(world)
	nv := newNaive(world)
	perFragment := codec.Config{}
	perFragment, _ = perFragment.WithDefaults()

	// The control stream is reliable and ordered: every run of bytes
	// arrives after the one-way delay, in order.
	type pendingCtl struct {
		due int64
		b   []byte
	}
	var ctlQueue []pendingCtl
	var floor []float64 // joint error of every sampled frame's joints
	floorTick := 0.0    // max joint error of the frames sampled at the last broadcast
	var ctlBuf []byte
	var dgs []broadcast.Datagram
	var framesSent uint64
	maxFragments := 0

	const stepUS = 1_000_000 / scenario.StepHz
	const tickUS = 1000 // the loop's resolution
	renderPhase := int64(7_000)
	end := int64(opt.Duration * 1e6)
	var ser series
	var pipeErrs, naiveErrs, ages []float64
	var pipeHalf, naiveHalf int
	var out [][]byte
	nextStep, nextRender := int64(stepUS), renderPhase
	for now := int64(0); now <= end; now += tickUS {
		if now >= nextStep {
			nextStep += stepUS
			ctl, frames := auth.Step()
			for _, m := range ctl {
				_ = bc.Apply(m)
			}
			bc.Frames(frames)
			ctlBuf, dgs = bc.Take(observer, ctlBuf[:0], dgs[:0])
			if len(ctlBuf) > 0 {
				ctlQueue = append(ctlQueue, pendingCtl{now + opt.Net.Delay, slices.Clone(ctlBuf)})
			}
			if len(frames) > 0 {
				floorTick = 0 // a new sample replaces the floor shown
			}
			for _, f := range frames {
				framesSent++
				maxFragments = max(maxFragments, (len(f.Members)+perFragment.MembersPerFragment()-1)/perFragment.MembersPerFragment())
				for _, e := range jointErrors(world, f.Key.Island) {
					floor = append(floor, e)
					floorTick = max(floorTick, e)
				}
			}
			for _, dg := range dgs {
				tr.send(now, dg.Bytes)
				if adv != nil {
					for _, h := range adv.Observe(dg.Bytes) {
						tr.inject(now+opt.Net.Delay+int64(len(h)%17)*1000, h)
					}
				}
			}
		}
		// Reliable control first: it was sent no later than any datagram
		// that depends on it could have been.
		for len(ctlQueue) > 0 && ctlQueue[0].due <= now {
			pipe.control(now, ctlQueue[0].b)
			ctlQueue = ctlQueue[1:]
		}
		out = tr.deliver(now, out[:0])
		for _, dg := range out {
			pipe.rx.Datagram(now, dg)
			nv.receive(dg)
		}
		if now >= nextRender {
			nextRender += stepUS
			pipe.render(now)
			islands := world.Islands()
			var ph, nh int
			var pm, nm float64
			pipeErrs, ph, pm = pipe.rep.Measure(islands, pipeErrs)
			naiveErrs, nh, nm = nv.rep.Measure(islands, naiveErrs)
			pipeHalf += ph
			naiveHalf += nh
			if st := pipe.rx.Clock(); st.State != store.Waiting {
				ages = append(ages, float64(st.SnapshotAge)/1000)
			}
			t := float64(now) / 1e6
			ser.T = append(ser.T, t)
			ser.Pipeline = append(ser.Pipeline, pm)
			ser.Naive = append(ser.Naive, nm)
			ser.Floor = append(ser.Floor, floorTick)
			if pipe.stale || pipe.rx.Clock().State == store.Frozen {
				ser.Freezes = append(ser.Freezes, t)
			}
			if pipe.cuts {
				ser.Cuts = append(ser.Cuts, t)
			}
		}
	}
	bs := bc.Stats()
	rs := pipe.rx.Stats()
	rep := scenarioReport{
		Name:               sc.Name,
		About:              sc.About,
		FramesSent:         framesSent,
		DatagramsSent:      bs.Datagrams,
		BytesSent:          bs.Bytes,
		BandwidthKBps:      round(float64(bs.Bytes)/opt.Duration/1000, 1),
		MaxFragmentsFrame:  maxFragments,
		FramesCommitted:    rs.FramesCommitted,
		Rejects:            rejects(&rs, pipe.ctlErrs),
		Pipeline:           receiverReport{HalfFramesApplied: pipeHalf, MaxJointError: round(maxOf(pipeErrs), 4), P99JointError: round(pct(pipeErrs, 99), 4)},
		Naive:              receiverReport{HalfFramesApplied: naiveHalf, MaxJointError: round(maxOf(naiveErrs), 4), P99JointError: round(pct(naiveErrs, 99), 4)},
		ServerFloor:        floorReport{MaxJointError: round(maxOf(floor), 4), P99JointError: round(pct(floor, 99), 4)},
		FreezeSeconds:      round(float64(rs.Store.FreezeTime+rs.Clock.FrozenTime)/1e6, 3),
		ExtrapolateSeconds: round(float64(rs.Store.ExtrapolationTime)/1e6, 3),
		SnapshotAgeP50ms:   round(pct(ages, 50), 1),
		SnapshotAgeP95ms:   round(pct(ages, 95), 1),
		CorrectionMaxM:     round(rs.Store.CorrectionMax, 4),
		HandoffLatencyMs:   round(float64(rs.Store.HandoffLatencyMax)/1000, 1),
	}
	rep.Verdict = verdict(rep.FramesCommitted, rep.Pipeline.HalfFramesApplied)
	ls := tr.stats()
	rep.Network = networkReport{Lost: ls.Lost, Duplicated: ls.Duplicated, Corrupted: ls.Corrupted}
	if adv != nil {
		a := adv.Stats()
		rep.Network.Injected = a.Total()
	}
	return rep, ser, nil
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

// jointErrors returns the server's own joint errors of an island as it was
// just sampled: every frame is sampled at this very step, so the world's
// bodies hold exactly the sampled poses.
func jointErrors(w *physics.World, islandID uint32) []float64 {
	is := w.Island(islandID)
	if is == nil {
		return nil
	}
	src := func(id island.MemberID) (float64, float64, float64, bool) {
		b := w.Body(id)
		if b == nil {
			return 0, 0, 0, false
		}
		p := b.B.Position()
		return p.X, p.Y, b.B.Angle(), true
	}
	var out []float64
	for _, j := range is.Joints {
		if e, ok := physics.JointError(&j.Spec, src); ok {
			out = append(out, e)
		}
	}
	return out
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

// pct returns the p-th percentile (nearest rank) of v; 0 for none.
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	k := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(k, len(s)-1))]
}

func round(v float64, digits int) float64 {
	f := math.Pow10(digits)
	return math.Round(v*f) / f
}
