package main

import (
	"bytes"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
)

// controlKind names a reliable control message from authority to observers.
type controlKind uint8

const (
	ctlAnnounce controlKind = iota // body identities exist
	ctlLease                       // an island's authority
	ctlManifest                    // an island's member list, topology and config
	ctlForget                      // an island is gone
)

type control struct {
	kind     controlKind
	ids      []island.MemberID
	lease    island.Lease
	manifest island.Manifest
	island   uint32
}

// server is the authority: the physics world, its sampler and encoder. It
// produces datagrams (unreliable) and control messages (reliable).
type server struct {
	w       *physics.World
	sampler *physics.Sampler
	script  *script
	enc     *codec.Encoder
	out     [][]byte
	ctl     []control
	extra   []island.Frame // frames produced outside the cadence (Releasing)

	framesSent, datagramsSent, bytesSent uint64
	maxFragments                         int
	floor                                []float64 // joint error of every sampled frame's joints
	floorTick                            float64   // max joint error of the frames sampled this step
}

func newServer(sc scenario, sendHz int) *server {
	w := physics.NewWorld(60)
	s := &server{w: w, sampler: physics.NewSampler(w, sendHz)}
	s.script = sc.build(w)
	s.enc, _ = codec.NewEncoder(codec.Config{})
	var ids []island.MemberID
	for _, is := range w.Islands() {
		for _, b := range is.Members {
			ids = append(ids, b.ID)
		}
	}
	s.ctl = append(s.ctl, control{kind: ctlAnnounce, ids: ids})
	s.drainEvents()
	return s
}

// drainEvents turns world topology events into reliable control messages.
func (s *server) drainEvents() {
	for _, e := range s.w.TakeEvents() {
		switch e.Kind {
		case physics.IslandFormed, physics.IslandChanged:
			is := s.w.Island(e.Island)
			s.ctl = append(s.ctl, control{kind: ctlLease, lease: is.Lease()}, control{kind: ctlManifest, manifest: is.Manifest()})
		case physics.LeaseChanged:
			s.ctl = append(s.ctl, control{kind: ctlLease, lease: s.w.Island(e.Island).Lease()})
		case physics.IslandGone:
			s.ctl = append(s.ctl, control{kind: ctlForget, island: e.Island})
		}
	}
}

// handOff sends a Releasing frame from the current owner, then moves the
// island's authority (epoch bump) to owner.
func (s *server) handOff(islandID uint32, owner island.SenderID) {
	is := s.w.Island(islandID)
	if is == nil {
		return
	}
	f := s.sampler.Releasing(is)
	c := *f
	c.Members = append([]island.Member(nil), f.Members...)
	s.extra = append(s.extra, c)
	s.w.HandOff(islandID, owner)
}

// step advances the world one step, runs the script, and returns the
// datagrams and control messages to send (valid until the next step).
func (s *server) step() ([][]byte, []control) {
	s.ctl = s.ctl[:0]
	s.w.Step()
	if act := s.script.actions[s.w.Steps()]; act != nil {
		act(s.w, s)
	}
	s.drainEvents()
	s.enc.Reset()
	sampled := false
	for i := range s.extra {
		s.send(&s.extra[i])
	}
	s.extra = s.extra[:0]
	for _, f := range s.sampler.Tick() {
		if !sampled {
			s.floorTick, sampled = 0, true // a new sample replaces the floor shown
		}
		s.send(f)
	}
	s.out = s.out[:0]
	for _, dg := range s.enc.Datagrams() {
		s.out = append(s.out, bytes.Clone(dg))
		s.datagramsSent++
		s.bytesSent += uint64(len(dg))
	}
	return s.out, s.ctl
}

func (s *server) send(f *island.Frame) {
	if err := s.enc.Add(f); err != nil {
		return
	}
	s.framesSent++
	s.maxFragments = max(s.maxFragments, s.enc.FragmentCount(len(f.Members)))
	// The server's own joint error on what it sampled, the floor: every
	// frame is sampled from the world at this very step, so the world's
	// bodies hold exactly the sampled poses.
	src := func(id island.MemberID) (float64, float64, float64, bool) {
		b := s.w.Body(id)
		if b == nil {
			return 0, 0, 0, false
		}
		p := b.B.Position()
		return p.X, p.Y, b.B.Angle(), true
	}
	is := s.w.Island(f.Key.Island)
	if is == nil {
		return
	}
	for _, j := range is.Joints {
		if e, ok := physics.JointError(&j.Spec, src); ok {
			s.floor = append(s.floor, e)
			s.floorTick = max(s.floorTick, e)
		}
	}
}
