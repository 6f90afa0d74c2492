package physics

import (
	"github.com/islandsync/islandsync/island"
)

// Sampler decides which islands to broadcast at each simulation step and
// captures them. Ordinary frames go out at a fixed cadence, independent of
// the step rate; Initial frames (a new island, topology, config or owner) go
// out at once, bypassing the cadence.
type Sampler struct {
	w      *World
	every  int64 // steps between broadcasts
	frames map[uint32]*island.Frame
	out    []*island.Frame
}

// NewSampler broadcasts every island sendHz times per second of simulation.
func NewSampler(w *World, sendHz int) *Sampler {
	every := int64(w.StepHz / max(sendHz, 1)) // a rate of 0 or below sends once per second of steps
	if every < 1 {
		every = 1
	}
	return &Sampler{w: w, every: every, frames: map[uint32]*island.Frame{}}
}

// Period returns the broadcast period in microseconds.
func (s *Sampler) Period() int64 { return s.every * 1_000_000 / int64(s.w.StepHz) }

// Tick returns the frames to send after the current step: every island on a
// cadence step, fresh islands on any step. Cadence steps are those of the
// timeline (World.StepBase counts) that are a multiple of the steps between
// broadcasts. The frames are the sampler's and stay valid until the next
// Tick.
func (s *Sampler) Tick() []*island.Frame {
	s.out = s.out[:0]
	cadence := (s.w.StepBase+s.w.Steps())%s.every == 0
	for _, is := range s.w.Islands() {
		if !cadence && !is.Fresh {
			continue
		}
		s.out = append(s.out, s.Capture(is))
	}
	return s.out
}

// Capture samples one island now under its next sequence number; a fresh
// island's frame carries FlagInitial.
func (s *Sampler) Capture(is *Island) *island.Frame {
	f := s.frames[is.ID]
	if f == nil {
		f = &island.Frame{}
		s.frames[is.ID] = f
	}
	is.Seq++
	s.w.Sample(is, f)
	if is.Fresh {
		f.Flags |= island.FlagInitial
		is.Fresh = false
	}
	return f
}

// Releasing samples an island one last time under its current owner with
// FlagReleasing, to send before a hand-off.
func (s *Sampler) Releasing(is *Island) *island.Frame {
	f := s.Capture(is)
	f.Flags |= island.FlagReleasing
	return f
}
