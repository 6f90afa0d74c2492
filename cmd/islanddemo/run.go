package main

import (
	"math"
	"slices"
	"sort"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
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
func runScenario(sc scenario, opt options) (scenarioReport, series, error) {
	srv := newServer(sc, opt.SendHz)
	initial := slices.Clone(srv.ctl)
	seed := opt.Seed ^ hashName(sc.name)
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
	period := srv.sampler.Period()
	pipe := newPipeline(srv.w, period)
	nv := newNaive(srv.w)

	type pendingCtl struct {
		due int64
		c   control
	}
	var ctlQueue []pendingCtl
	for _, c := range initial {
		ctlQueue = append(ctlQueue, pendingCtl{0, c})
	}
	const stepUS = 1_000_000 / 60
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
			dgs, ctl := srv.step()
			for _, c := range ctl {
				ctlQueue = append(ctlQueue, pendingCtl{now + opt.Net.Delay, c})
			}
			for _, dg := range dgs {
				tr.send(now, dg)
				if adv != nil {
					for _, h := range adv.Observe(dg) {
						tr.inject(now+opt.Net.Delay+int64(len(h)%17)*1000, h)
					}
				}
			}
		}
		// Reliable control first: it was sent no later than any datagram
		// that depends on it could have been.
		for len(ctlQueue) > 0 && ctlQueue[0].due <= now {
			pipe.control(now, ctlQueue[0].c)
			ctlQueue = ctlQueue[1:]
		}
		out = tr.deliver(now, out[:0])
		for _, dg := range out {
			pipe.receive(now, dg)
			nv.receive(dg)
		}
		if now >= nextRender {
			nextRender += stepUS
			pipe.render(now)
			islands := srv.w.Islands()
			var ph, nh int
			var pm, nm float64
			pipeErrs, ph, pm = pipe.rep.Measure(islands, pipeErrs)
			naiveErrs, nh, nm = nv.rep.Measure(islands, naiveErrs)
			pipeHalf += ph
			naiveHalf += nh
			if st := pipe.clock.Stats(); st.State != store.Waiting {
				ages = append(ages, float64(st.SnapshotAge)/1000)
			}
			t := float64(now) / 1e6
			ser.T = append(ser.T, t)
			ser.Pipeline = append(ser.Pipeline, pm)
			ser.Naive = append(ser.Naive, nm)
			ser.Floor = append(ser.Floor, srv.floorTick)
			if pipe.stale || pipe.clock.State() == store.Frozen {
				ser.Freezes = append(ser.Freezes, t)
			}
			if pipe.cuts {
				ser.Cuts = append(ser.Cuts, t)
			}
		}
	}
	rep := scenarioReport{
		Name:               sc.name,
		About:              sc.about,
		FramesSent:         srv.framesSent,
		DatagramsSent:      srv.datagramsSent,
		BytesSent:          srv.bytesSent,
		BandwidthKBps:      round(float64(srv.bytesSent)/opt.Duration/1000, 1),
		MaxFragmentsFrame:  srv.maxFragments,
		FramesCommitted:    pipe.committed,
		Rejects:            rejects(pipe),
		Pipeline:           receiverReport{HalfFramesApplied: pipeHalf, MaxJointError: round(maxOf(pipeErrs), 4), P99JointError: round(pct(pipeErrs, 99), 4)},
		Naive:              receiverReport{HalfFramesApplied: naiveHalf, MaxJointError: round(maxOf(naiveErrs), 4), P99JointError: round(pct(naiveErrs, 99), 4)},
		ServerFloor:        floorReport{MaxJointError: round(maxOf(srv.floor), 4), P99JointError: round(pct(srv.floor, 99), 4)},
		FreezeSeconds:      round(float64(pipe.st.Stats().FreezeTime+pipe.clock.Stats().FrozenTime)/1e6, 3),
		ExtrapolateSeconds: round(float64(pipe.st.Stats().ExtrapolationTime)/1e6, 3),
		SnapshotAgeP50ms:   round(pct(ages, 50), 1),
		SnapshotAgeP95ms:   round(pct(ages, 95), 1),
		CorrectionMaxM:     round(pipe.st.Stats().CorrectionMax, 4),
		HandoffLatencyMs:   round(float64(pipe.st.Stats().HandoffLatencyMax)/1000, 1),
	}
	ls := tr.stats()
	rep.Network = networkReport{Lost: ls.Lost, Duplicated: ls.Duplicated, Corrupted: ls.Corrupted}
	if adv != nil {
		a := adv.Stats()
		rep.Network.Injected = a.Total()
	}
	return rep, ser, nil
}

// rejects gathers every nonzero reject counter of the pipeline, by stage.
func rejects(p *pipeline) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range p.decodeErrs {
		out["codec:"+k] = v
	}
	as := p.asm.Stats()
	for o := assembler.Outcome(0); o < assembler.NumOutcomes; o++ {
		if (o.IsReject() || o.IsDrop()) && as.Count(o) > 0 {
			out["assembler:"+o.String()] = as.Count(o)
		}
	}
	vs := p.val.Stats()
	for r := validator.Reason(1); r < validator.NumReasons; r++ {
		if vs.Count(r) > 0 {
			out["validator:"+r.String()] = vs.Count(r)
		}
	}
	for k, v := range p.commits {
		if k != "committed" {
			out["store:"+k] = v
		}
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
