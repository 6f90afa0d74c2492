package main

import (
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/store"
)

// pipeline is the real receive path — receiver.Receiver — showing its views
// on a replica of the server's bodies so that joints can be measured.
type pipeline struct {
	rx      *receiver.Receiver
	rep     *physics.Replica
	ids     []island.MemberID
	poses   []island.State
	lim     codec.ControlLimits
	cuts    bool // a view showed a segment cut this tick
	stale   bool // a view was stale this tick
	ctlErrs uint64
}

func newPipeline(w *physics.World, rx *receiver.Receiver) *pipeline {
	return &pipeline{rx: rx, rep: physics.NewReplica(w), lim: codec.ControlLimits{}.WithDefaults()}
}

// control applies a run of control messages, as read from the stream.
func (p *pipeline) control(now int64, b []byte) {
	for len(b) > 0 {
		m, n, err := codec.ParseControl(b, &p.lim)
		if err != nil {
			p.ctlErrs++
			return
		}
		_ = p.rx.Control(now, m) // refusals are counted in the receiver's stats
		b = b[n:]
	}
}

// render poses every island's members from one view.
func (p *pipeline) render(now int64) { p.apply(p.rx.Render(now)) }

// apply shows one render tick's views on the replica.
func (p *pipeline) apply(views []receiver.IslandView) {
	p.cuts, p.stale = false, false
	for _, v := range views {
		p.cuts = p.cuts || v.Mode == store.SegmentCut
		p.stale = p.stale || v.Mode == store.Stale
		p.ids, p.poses = p.ids[:0], p.poses[:0]
		for _, ps := range v.Poses {
			p.ids = append(p.ids, ps.ID)
			p.poses = append(p.poses, ps.State)
		}
		p.rep.ApplyIsland(p.ids, p.poses, physics.Source{From: v.Left, To: v.Right})
	}
}

// naive writes each fragment's members into its bodies as soon as the
// fragment arrives: no assembly, no validation, no playout clock.
type naive struct {
	dec *codec.Decoder
	rep *physics.Replica
}

func newNaive(w *physics.World) *naive {
	dec, _ := codec.NewDecoder(codec.Config{})
	return &naive{dec: dec, rep: physics.NewReplica(w)}
}

func (n *naive) receive(dg []byte) {
	frags, err := n.dec.Decode(dg)
	if err != nil {
		return
	}
	for _, f := range frags {
		src := physics.Source{From: f.Header.Key, To: f.Header.Key}
		for i := 0; i < int(f.Header.MemberCount); i++ {
			m, _ := f.Raw.Member(i) // the decoder checked every float
			n.rep.Set(m.ID, m.State, src)
		}
	}
}
