package receiver

import (
	"slices"
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// authStep is one recorded step of the authority: its control messages and
// frames, copied out of the authority's storage.
type authStep struct {
	msgs   []codec.Message
	frames []*island.Frame
}

// recordSteps runs the loop's authority n steps (driving the loop as
// step does) and records what each step produced.
func recordSteps(t testing.TB, l *loop, n int) []authStep {
	lim := codec.ControlLimits{}.WithDefaults()
	out := make([]authStep, n)
	for i := range out {
		msgs, frames := l.auth.Step()
		for _, m := range msgs {
			c, _, err := codec.ParseControl(m.Append(nil), &lim) // a copy that owns its slices
			if err != nil {
				t.Fatal(err)
			}
			out[i].msgs = append(out[i].msgs, c)
		}
		for _, f := range frames {
			g := *f
			g.Members = slices.Clone(f.Members)
			out[i].frames = append(out[i].frames, &g)
		}
	}
	return out
}

// replayStep drives bc with one recorded step and takes observer obs's
// output into l.ctl and l.dgs.
func (l *loop) replayStep(s authStep, obs broadcast.ObserverID) {
	l.now += 1_000_000 / 60
	for _, m := range s.msgs {
		_ = l.bc.Apply(m)
	}
	l.bc.Frames(s.frames)
	l.ctl, l.dgs = l.bc.Take(obs, l.ctl[:0], l.dgs[:0])
}

// TestBroadcasterCloneGoesOnAlike: a broadcaster and receiver cloned in
// the middle of a wire-3 run (datagrams confirmed, the window moving)
// send and commit exactly what a pair that was never cloned does, while
// the originals are driven apart — keyframes asked for every island.
//
// The same holds for an observer under a budget that subscribed to a
// region: its bucket, priorities and interest are cloned too.
func TestBroadcasterCloneGoesOnAlike(t *testing.T) {
	t.Run("all", func(t *testing.T) { cloneGoesOnAlike(t, broadcast.Config{}, nil) })
	t.Run("budget and region", func(t *testing.T) {
		cloneGoesOnAlike(t, broadcast.Config{ObserverKbps: 256}, []codec.Region{{X0: -5, Y0: -60, X1: 5, Y1: 60}})
	})
}

func cloneGoesOnAlike(t *testing.T, cfg broadcast.Config, regions []codec.Region) {
	steps := func() (*loop, []authStep) {
		l := newLoopConfig(t, "bridge,chain,config", cfg)
		if regions != nil {
			_ = l.bc.Subscribe(1, codec.Subscribe{Regions: regions})
		}
		return l, recordSteps(t, l, 120)
	}
	orig, rec := steps()
	ref, _ := steps()
	drive := func(l *loop, s authStep) {
		l.replayStep(s, 1)
		l.control()
		l.receive(nil)
		l.feedBack()
	}
	for _, s := range rec[:60] {
		drive(orig, s)
		drive(ref, s)
	}
	clone := &loop{t: t, auth: orig.auth, bc: orig.bc.Clone(), rx: orig.rx.Clone(), lim: orig.lim, now: orig.now}
	ask := codec.Keyframes{Islands: slices.Clone(orig.rx.Islands())}.Append(nil)
	for i, s := range rec[60:] {
		drive(orig, s)
		if _, err := orig.bc.FeedbackBytes(1, ask); err != nil {
			t.Fatal(err)
		}
		drive(ref, s)
		refCtl, refDgs := slices.Clone(ref.ctl), slices.Clone(ref.dgs)
		drive(clone, s)
		if !slices.Equal(clone.ctl, refCtl) || len(clone.dgs) != len(refDgs) {
			t.Fatalf("step %d: the clone sent %d control bytes, %d datagrams; the never-cloned %d, %d",
				i, len(clone.ctl), len(clone.dgs), len(refCtl), len(refDgs))
		}
		for j := range refDgs {
			if !slices.Equal(clone.dgs[j].Bytes, refDgs[j].Bytes) {
				t.Fatalf("step %d: datagram %d differs", i, j)
			}
		}
	}
	if got, want := clone.rx.Stats().FramesCommitted, ref.rx.Stats().FramesCommitted; got != want || want == 0 {
		t.Fatalf("the clone committed %d frames, the never-cloned %d", got, want)
	}
	if cfg.ObserverKbps > 0 && ref.bc.Stats().Deferred == 0 {
		t.Fatal("the budget never left a frame out: nothing of the scheduler was cloned")
	}
}
