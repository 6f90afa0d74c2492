package main

import (
	"github.com/islandsync/islandsync/baseline"
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
	truth   *truth    // where the server had the bodies; nil: no position errors
	posErrs []float64 // every shown body's distance from the server's pose at the view's time
	cuts    bool      // a view showed a segment cut this tick
	stale   bool      // a view was stale this tick
	ctlErrs uint64
}

func newPipeline(w *physics.World, rx *receiver.Receiver) *pipeline {
	return &pipeline{rx: rx, rep: physics.NewReplica(w)}
}

// control applies a run of control messages, as read from the stream.
func (p *pipeline) control(now int64, b []byte) {
	// Refusals are counted in the receiver's stats; bytes that do not parse
	// end the run.
	if _, err := p.rx.ControlBytes(now, b); err != nil {
		p.ctlErrs++
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
		var sp span
		if p.truth != nil && len(v.Poses) > 0 {
			sp = p.truth.around(v.R)
		}
		for _, ps := range v.Poses {
			p.ids = append(p.ids, ps.ID)
			p.poses = append(p.poses, ps.State)
			if !sp.ok {
				continue
			}
			if d, ok := p.truth.distance(ps.ID, sp, ps.State.X, ps.State.Y); ok {
				p.posErrs = append(p.posErrs, d)
			}
		}
		p.rep.ApplyIsland(p.ids, p.poses, physics.Source{From: v.Left, To: v.Right})
	}
}

// naive writes each fragment's members into its bodies as soon as the
// fragment arrives: no assembly, no validation, no playout clock. On wire 3
// it applies each delta to whatever it last showed of the island, as a
// receiver that ignores baselines would.
type naive struct {
	dec  *codec.FloatDecoder
	dec2 *codec.Decoder
	rep  *physics.Replica
	last map[uint32]*baseline.Table // per island, what it last applied
	ents []baseline.Entry
	// links are each island's newest joint-prediction links, taken
	// straight from the authority's Physics, whatever frame they meet
	links map[uint32]*codec.Links
}

// linksOf returns the island's newest links taken for those of topology
// and config, whatever theirs — the naive receiver checks nothing — or nil.
func (n *naive) linksOf(id uint32, members int, topology, config uint32) *codec.Links {
	links := n.links[id]
	if links == nil || links.Members() != members {
		return nil
	}
	l := *links
	l.Topology, l.Config = topology, config
	return &l
}

// physics keeps the links of an authority Physics message.
func (n *naive) physics(m codec.Message) {
	if p, ok := m.(codec.Physics); ok {
		n.links[p.Island] = codec.NewLinks(&p)
	}
}

func newNaive(w *physics.World) *naive {
	dec, _ := codec.NewFloatDecoder(codec.Config{})
	dec2, _ := codec.NewDecoder(codec.Config{})
	return &naive{dec: dec, dec2: dec2, rep: physics.NewReplica(w), last: map[uint32]*baseline.Table{}, links: map[uint32]*codec.Links{}}
}

func (n *naive) receive(dg []byte) {
	if v, err := codec.DatagramVersion(dg); err == nil && v == codec.VersionV3 {
		n.receiveWire(dg)
		return
	}
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

func (n *naive) receiveWire(dg []byte) {
	h, recs, err := n.dec2.Decode(dg)
	if err != nil {
		return
	}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case codec.KindKey:
			n.ents, _ = r.ExpandKey(n.ents, n.linksOf(r.Island, r.Total, r.Topology, r.Config), h.Time)
			info := baseline.FrameInfo{Sender: r.Sender, Key: island.Key{Island: r.Island, Epoch: r.Epoch, Topology: r.Topology, Config: r.Config, Seq: h.Seq}, Time: h.Time, Segment: r.Segment, Class: r.Class}
			n.apply(r.Island, info, r.First, r.Total, n.ents)
		case codec.KindDelta:
			base := n.last[r.Island]
			if base == nil || len(base.Entries) != r.Total {
				continue
			}
			ents, err := r.ExpandDelta(n.ents, base, n.linksOf(r.Island, r.Total, base.Frame.Key.Topology, base.Frame.Key.Config), h.Time)
			n.ents = ents
			if err == nil {
				n.apply(r.Island, base.Frame, r.First, r.Total, ents)
			}
		case codec.KindRun:
			for k := uint32(0); k < r.Count; k++ {
				n.predicted(r.Island+k, h)
			}
		}
	}
}

func (n *naive) predicted(id uint32, h codec.Header) {
	if base := n.last[id]; base != nil {
		n.ents = codec.Predict(n.ents[:0], base, h.Time)
		n.apply(id, base.Frame, 0, len(base.Entries), n.ents)
	}
}

// apply shows members [first, first+len(ents)) of an island at once and
// remembers them as the island's last state.
func (n *naive) apply(id uint32, info baseline.FrameInfo, first, total int, ents []baseline.Entry) {
	t := n.last[id]
	if t == nil || len(t.Entries) != total {
		t = &baseline.Table{Entries: make([]baseline.Entry, total)}
		n.last[id] = t
	}
	t.Frame = info
	p := info.Class.Precision()
	src := physics.Source{From: info.Key, To: info.Key}
	for i, e := range ents {
		if first+i < total {
			t.Entries[first+i] = e
			n.rep.Set(e.ID, e.Q.State(p), src)
		}
	}
}
