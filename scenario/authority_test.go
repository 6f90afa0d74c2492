package scenario

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// TestAuthorityRestart: the first step announces every body and states
// every island; a restart destroys and forgets them and brings the worlds
// back with fresh ids on the same, still advancing, timeline.
func TestAuthorityRestart(t *testing.T) {
	if _, err := NewAuthority(All, 0); err == nil {
		t.Fatal("0 Hz accepted")
	}
	if _, err := NewAuthority(All, StepHz+1); err == nil {
		t.Fatal("a rate above the step rate accepted")
	}
	a, err := NewAuthority(All, 20)
	if err != nil {
		t.Fatal(err)
	}
	count := func(ms []codec.Message) map[codec.MessageType]int {
		c := map[codec.MessageType]int{}
		for _, m := range ms {
			c[m.Type()]++
		}
		return c
	}
	ctl, frames := a.Step()
	c := count(ctl)
	islands := 0
	for _, w := range a.Worlds() {
		islands += len(w.Islands())
	}
	if c[codec.TypeAnnounce] != 1 || c[codec.TypeLease] != islands || c[codec.TypeManifest] != islands || len(frames) != islands {
		t.Fatalf("first step: %v, %d frames, %d islands", c, len(frames), islands)
	}
	first := ctl[0].(codec.Announce).IDs
	before := a.Time()
	a.Restart()
	ctl, _ = a.Step()
	c = count(ctl)
	if c[codec.TypeForget] != islands || c[codec.TypeDestroy] != 1 || c[codec.TypeAnnounce] != 1 {
		t.Fatalf("restart: %v", c)
	}
	var again []codec.Message
	for _, m := range ctl {
		if m.Type() == codec.TypeAnnounce {
			again = append(again, m)
		}
	}
	ids := again[0].(codec.Announce).IDs
	if len(ids) != len(first) || ids[0] == first[0] {
		t.Fatalf("restart reused identities: %v vs %v", ids[0], first[0])
	}
	if a.Time() <= before {
		t.Fatalf("time went back: %d after %d", a.Time(), before)
	}
}

// TestPhysicsFollowsManifest: over every scenario's run (breaks, config
// changes, hand-offs, teleports), each Manifest is followed by the Physics
// of the same island, topology and config, with a body per member, the
// island's joints, and the world's step, gravity and ground; every one is
// a message observers accept.
func TestPhysicsFollowsManifest(t *testing.T) {
	a, err := NewAuthority(All, 20)
	if err != nil {
		t.Fatal(err)
	}
	lim := codec.ControlLimits{}.WithDefaults()
	seen := 0
	for range 5 * StepHz {
		msgs, _ := a.Step()
		for i, m := range msgs {
			man, ok := m.(codec.Manifest)
			if !ok {
				continue
			}
			if i+1 == len(msgs) {
				t.Fatalf("manifest of island %d is the last message", man.Island)
			}
			p, ok := msgs[i+1].(codec.Physics)
			if !ok || p.Island != man.Island || p.Topology != man.Topology || p.Config != man.Config || len(p.Bodies) != len(man.Members) {
				t.Fatalf("manifest %d/%d/%d followed by %+v", man.Island, man.Topology, man.Config, msgs[i+1])
			}
			if p.Step != 1_000_000/(StepHz*4) || p.Gravity != [2]float64{0, -9.8} || p.Iterations == 0 {
				t.Fatalf("world settings %+v", p)
			}
			for _, w := range a.Worlds() {
				if is := w.Island(p.Island); is != nil && is.Topology == p.Topology && is.Config == p.Config && len(is.Joints) != len(p.Joints) {
					t.Fatalf("island %d: %d joints described, %d in the world", p.Island, len(p.Joints), len(is.Joints))
				}
			}
			if _, _, err := codec.ParseControl(p.Append(nil), &lim); err != nil {
				t.Fatalf("island %d: %v", p.Island, err)
			}
			seen++
		}
	}
	joints, ground := 0, 0
	for _, w := range a.Worlds() {
		for _, is := range w.Islands() {
			joints += len(is.Joints)
		}
		ground += len(w.Ground())
	}
	if seen < len(All) || joints == 0 || ground == 0 {
		t.Fatalf("%d physics messages, %d joints, %d ground segments", seen, joints, ground)
	}
}

// TestShardAuthority: a shard authority steps only the scenarios it
// gained, at the epoch it gained them, from the states it was given; ShardOf
// maps their islands back to them.
func TestShardAuthority(t *testing.T) {
	scs, err := Pick("bridge,ragdolls")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewShardAuthority(scs, 20, 5_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, frames := a.Step(); len(msgs) != 0 || len(frames) != 0 {
		t.Fatalf("an authority holding nothing sent %d messages and %d frames", len(msgs), len(frames))
	}
	moved := func(id island.MemberID) (island.State, island.Time, bool) {
		return island.State{X: float64(id.Stable), Y: 42}, a.Time(), true
	}
	if err := a.Gain(1, 77, moved); err != nil {
		t.Fatal(err)
	}
	if err := a.Gain(2, 1, nil); err == nil {
		t.Fatal("a shard past the scenarios gained")
	}
	msgs, _ := a.Step()
	spawns := 0
	for _, m := range msgs {
		switch m := m.(type) {
		case codec.Lease:
			if m.Epoch != 77 || ShardOf(m.Island, 2) != 1 {
				t.Fatalf("lease %+v: want epoch 77 in shard 1", m)
			}
		case codec.Spawn:
			spawns++
			if m.Time < 5_000_000 || m.Members[0].State.Y != 42 {
				t.Fatalf("spawn at %d with %+v: want the world's time and the given state", m.Time, m.Members[0].State)
			}
		}
	}
	if spawns == 0 || !slices.Equal(a.Shards(), []int{1}) {
		t.Fatalf("%d spawns; shards %v", spawns, a.Shards())
	}
	a.Lose(1)
	if _, frames := a.Step(); len(frames) != 0 || len(a.Shards()) != 0 {
		t.Fatal("a lost shard still steps")
	}
}

// TestControlWithoutStep: a gained shard's announcement can be taken at
// once (Control), at the time the authority stands at, without a step;
// the next Step does not send it again, and it samples the shard's first
// frames as ever.
func TestControlWithoutStep(t *testing.T) {
	scs, err := Pick("ragdolls")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := NewShardAuthority(scs, 20, 5_000_000)
	a.Step()
	at := a.Time()
	if err := a.Gain(0, 3, nil); err != nil {
		t.Fatal(err)
	}
	msgs := a.Control()
	spawns := 0
	for _, m := range msgs {
		if sp, ok := m.(codec.Spawn); ok {
			spawns++
			if sp.Time != at {
				t.Fatalf("spawn at %d, want the authority's time %d", sp.Time, at)
			}
		}
	}
	if spawns == 0 || a.Time() != at || len(a.Control()) != 0 {
		t.Fatalf("%d spawns; time %d, was %d; control taken twice", spawns, a.Time(), at)
	}
	msgs, frames := a.Step()
	if slices.ContainsFunc(msgs, func(m codec.Message) bool { _, ok := m.(codec.Spawn); return ok }) || len(frames) == 0 {
		t.Fatalf("the step after: %d messages (a spawn again?), %d frames", len(msgs), len(frames))
	}
}

// TestShardAuthoritiesShareOneGrid: shard authorities started at different
// instants of one timeline, and shards gained at different steps, sample
// their frames at the same authority times — multiples of the broadcast
// period — so that a shard handed from one to another goes on one period
// after the other's last frame.
func TestShardAuthoritiesShareOneGrid(t *testing.T) {
	scs, err := Pick("chain")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		now  island.Time
		want int64 // first step
	}{{0, 0}, {1, 3}, {16_666, 3}, {16_667, 3}, {50_000, 3}, {50_001, 6}, {-1, 0}, {-50_000, -3}, {-50_001, -3}} {
		if got := gridStep(c.now, 3); got != c.want {
			t.Errorf("gridStep(%d, 3) = %d, want %d", c.now, got, c.want)
		}
	}
	period := int64(1_000_000 / 20)
	times := func(start island.Time, gainAfter int) []island.Time {
		a, err := NewShardAuthority(scs, 20, start)
		if err != nil {
			t.Fatal(err)
		}
		if a.Time() < start || int64(a.Time())%period != 0 {
			t.Fatalf("started at %d, its time is %d", start, a.Time())
		}
		for range gainAfter {
			a.Step()
		}
		if err := a.Gain(0, 1, nil); err != nil {
			t.Fatal(err)
		}
		var out []island.Time
		for range 12 {
			_, frames := a.Step()
			for _, f := range frames {
				if f.Flags&island.FlagInitial == 0 && !slices.Contains(out, f.Time) {
					out = append(out, f.Time)
				}
			}
		}
		return out
	}
	for _, c := range []struct {
		start     island.Time
		gainAfter int
	}{{1_234_567, 0}, {1_234_567, 1}, {2_000_001, 2}, {7_777_777, 4}} {
		got := times(c.start, c.gainAfter)
		if len(got) < 3 {
			t.Fatalf("start %d, gained after %d steps: frames at %v", c.start, c.gainAfter, got)
		}
		for _, ft := range got {
			if int64(ft)%period != 0 {
				t.Errorf("start %d, gained after %d steps: a frame at %d µs, off the %d µs grid", c.start, c.gainAfter, ft, period)
			}
		}
	}
}

// TestGainCatchesUp: a shard gained from states observed some steps ago
// runs those steps before its first frame, so it shows the bodies about
// where an authority that kept stepping has them now — not where they were
// when observed — and at that authority's time.
func TestGainCatchesUp(t *testing.T) {
	scs, err := Pick("chain")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewShardAuthority(scs, 20, 3_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Gain(0, 1, nil); err != nil {
		t.Fatal(err)
	}
	// states of the cadence frames: what a standby would have committed
	sampled := func() (map[island.MemberID]island.State, island.Time) {
		for {
			_, frames := a.Step()
			for _, f := range frames {
				if f.Flags&island.FlagInitial == 0 {
					out := map[island.MemberID]island.State{}
					for _, m := range f.Members {
						out[m.ID] = m.State
					}
					return out, f.Time
				}
			}
		}
	}
	for range 30 { // the chain swings
		sampled()
	}
	then, at := sampled()
	var now map[island.MemberID]island.State
	var nowAt island.Time
	for range 2 { // the standby is two periods (six steps) behind
		now, nowAt = sampled()
	}
	b, err := NewShardAuthority(scs, 20, nowAt)
	if err != nil {
		t.Fatal(err)
	}
	if b.Time() != nowAt {
		t.Fatalf("b starts at %d, a is at %d", b.Time(), nowAt)
	}
	cont := func(id island.MemberID) (island.State, island.Time, bool) {
		s, ok := then[id]
		return s, at, ok
	}
	if err := b.Gain(0, 2, cont); err != nil {
		t.Fatal(err)
	}
	msgs, _ := b.Step()
	var off, moved float64 // the largest distance from a's bodies now, with and without the catch-up
	spawns := 0
	for _, m := range msgs {
		sp, ok := m.(codec.Spawn)
		if !ok {
			continue
		}
		spawns++
		if sp.Time != nowAt {
			t.Fatalf("spawned at %d, a is at %d", sp.Time, nowAt)
		}
		for _, mb := range sp.Members {
			w, ok := now[mb.ID]
			if !ok {
				continue
			}
			off = max(off, math.Hypot(mb.State.X-w.X, mb.State.Y-w.Y))
			moved = max(moved, math.Hypot(then[mb.ID].X-w.X, then[mb.ID].Y-w.Y))
		}
	}
	t.Logf("six steps behind: bodies %.4f m off with the catch-up, %.4f m without", off, moved)
	if spawns == 0 || moved < 0.01 {
		t.Fatalf("%d spawns; the chain moved %.4f m in six steps: nothing to catch up", spawns, moved)
	}
	if off > moved/4 {
		t.Fatalf("the gained chain is %.4f m off where a has it; without catching up %.4f m", off, moved)
	}

	// States older than MaxCatchUp steps: their authority stopped (a
	// crash), observers last saw the bodies there, and the world goes on
	// from them as they are.
	c, err := NewShardAuthority(scs, 20, at+island.Time((MaxCatchUp+3)*1_000_000/StepHz))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Gain(0, 3, cont); err != nil {
		t.Fatal(err)
	}
	msgs, _ = c.Step()
	for _, m := range msgs {
		if sp, ok := m.(codec.Spawn); ok {
			for _, mb := range sp.Members {
				if w, ok := then[mb.ID]; ok && mb.State != w {
					t.Fatalf("after a crash, body %v spawned at %+v, last seen at %+v", mb.ID, mb.State, w)
				}
			}
		}
	}
}

// TestSkip: an authority behind the clock moves its time on without
// stepping its worlds — the bodies hold still — and samples on the same
// grid after.
func TestSkip(t *testing.T) {
	scs, err := Pick("chain")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewShardAuthority(scs, 20, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Gain(0, 1, nil); err != nil {
		t.Fatal(err)
	}
	for range 9 {
		a.Step()
	}
	if got := a.Behind(a.Time() + 100_000); got != 6 {
		t.Fatalf("100 ms behind: %d steps, want 6", got)
	}
	if got := a.Behind(a.Time() - 100_000); got != 0 {
		t.Fatalf("ahead: %d steps behind", got)
	}
	before := a.Worlds()[0].Steps()
	t0 := a.Time()
	a.Skip(5)
	if a.Time() != t0+83_333 || a.Worlds()[0].Time() != a.Time() || a.Worlds()[0].Steps() != before {
		t.Fatalf("skipped 5 steps: time %d → %d, world at %d after %d steps (%d before)", t0, a.Time(), a.Worlds()[0].Time(), a.Worlds()[0].Steps(), before)
	}
	for range 6 {
		_, frames := a.Step()
		for _, f := range frames {
			if f.Flags&island.FlagInitial == 0 && int64(f.Time)%50_000 != 0 {
				t.Fatalf("a frame at %d after the skip, off the 50 ms grid", f.Time)
			}
		}
	}
}

// TestPrepareAdopt: a shard's world prepared off the authority's loop at
// one step and adopted two steps later goes on exactly as one gained at
// the later step: the same Spawns, then the same frames. Preparing queues
// nothing; a world prepared ahead of the authority is refused.
func TestPrepareAdopt(t *testing.T) {
	scs, err := Pick("bridge,chain")
	if err != nil {
		t.Fatal(err)
	}
	// The previous holder's states of the chain, two steps before the
	// preparation: Prepare runs a catch-up of its own, Adopt two more.
	src, _ := NewShardAuthority(scs, 20, 3_000_000)
	_ = src.Gain(1, 1, nil)
	var then map[island.MemberID]island.State
	var at island.Time
	for range 40 {
		_, frames := src.Step()
		for _, f := range frames {
			then, at = map[island.MemberID]island.State{}, f.Time
			for _, m := range f.Members {
				then[m.ID] = m.State
			}
		}
	}
	cont := func(id island.MemberID) (island.State, island.Time, bool) {
		s, ok := then[id]
		return s, at, ok
	}
	now := at + 2*1_000_000/StepHz
	gained, _ := NewShardAuthority(scs, 20, now)
	adopted, _ := NewShardAuthority(scs, 20, now)
	for _, a := range []*Authority{gained, adopted} {
		if err := a.Gain(0, 1, nil); err != nil { // a shard each already steps
			t.Fatal(err)
		}
		a.Step()
	}
	p, err := adopted.Prepare(1, 2, cont, adopted.step)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adopted.Prepare(len(scs), 2, cont, adopted.step); err == nil {
		t.Fatal("Prepare of a shard outside the scenarios")
	}
	for range 2 {
		gained.Step()
		msgs, _ := adopted.Step()
		for _, m := range msgs {
			if _, ok := m.(codec.Spawn); ok {
				t.Fatal("Prepare queued the world's catch-up before Adopt")
			}
		}
	}
	if err := gained.Gain(1, 2, cont); err != nil {
		t.Fatal(err)
	}
	if err := adopted.Adopt(p); err != nil {
		t.Fatal(err)
	}
	if p.Step() != adopted.step {
		t.Fatalf("adopted at step %d, the authority is at %d", p.Step(), adopted.step)
	}
	spawns := 0
	for i := range 10 {
		gm, gf := gained.Step()
		am, af := adopted.Step()
		if !reflect.DeepEqual(gm, am) {
			t.Fatalf("step %d: control differs:\ngained  %+v\nadopted %+v", i, gm, am)
		}
		if len(gf) != len(af) {
			t.Fatalf("step %d: %d frames gained, %d adopted", i, len(gf), len(af))
		}
		for j := range gf {
			if !reflect.DeepEqual(*gf[j], *af[j]) {
				t.Fatalf("step %d: frame %d differs:\ngained  %+v\nadopted %+v", i, j, *gf[j], *af[j])
			}
		}
		for _, m := range am {
			if _, ok := m.(codec.Spawn); ok {
				spawns++
			}
		}
	}
	if spawns == 0 {
		t.Fatal("the adopted world was never announced")
	}

	ahead, err := adopted.Prepare(1, 3, cont, adopted.step+1)
	if err != nil {
		t.Fatal(err)
	}
	adopted.Lose(1)
	if err := adopted.Adopt(ahead); !errors.Is(err, ErrPreparedAhead) {
		t.Fatalf("a world prepared ahead: %v, want ErrPreparedAhead", err)
	}
}

// TestGainAfterScriptedEvents: a shard's scenario runs on the timeline's
// clock, whoever holds it. A holder that gains the bridge after its
// scripted break (at 2 s of the timeline) starts from the broken bridge —
// the same islands with the same members as the previous holder's — and
// the break does not happen again 2 s after the gain; one that gains the
// chain after its scripted hand-off sends no Releasing frame for it.
func TestGainAfterScriptedEvents(t *testing.T) {
	for _, c := range []struct {
		name    string
		islands int
	}{{"break", 2}, {"handoff", 1}} {
		t.Run(c.name, func(t *testing.T) { gainAfterScript(t, c.name, c.islands) })
	}
}

// gainAfterScript is TestGainAfterScriptedEvents on scenario name, which
// has n islands once its script has run.
func gainAfterScript(t *testing.T, name string, n int) {
	scs, err := Pick(name)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := NewShardAuthority(scs, 20, 0)
	_ = a.Gain(0, 1, nil)
	for range 160 { // past the break at step 120 and the hand-off at 150
		a.Step()
	}
	islands := func(x *Authority) map[uint32][]island.MemberID {
		out := map[uint32][]island.MemberID{}
		for _, w := range x.Worlds() {
			for _, is := range w.Islands() {
				for _, m := range is.Members {
					out[is.ID] = append(out[is.ID], m.ID)
				}
				slices.SortFunc(out[is.ID], func(p, q island.MemberID) int { return int(p.Stable) - int(q.Stable) })
			}
		}
		return out
	}
	before := islands(a)
	if len(before) != n {
		t.Fatalf("%d islands after the script ran, want %d", len(before), n)
	}
	states := worldStates(a)
	b, _ := NewShardAuthority(scs, 20, a.Time())
	if err := b.Gain(0, 2, func(id island.MemberID) (island.State, island.Time, bool) {
		s, ok := states[id]
		return s, a.Time(), ok
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // past 2 s after the gain: the script would have broken the bridge again by now
		if got := islands(b); !reflect.DeepEqual(got, before) {
			t.Fatalf("%d steps after the gain the new holder has islands %v, the old one had %v", i, got, before)
		}
		_, frames := b.Step()
		for _, f := range frames {
			if f.Flags&island.FlagReleasing != 0 {
				t.Fatalf("step %d: a Releasing frame of island %d", i, f.Key.Island)
			}
		}
	}
}

// TestCatchUpThroughScript: a gain whose catch-up runs through a scripted
// event (the hand-off at step 150, caught up from step 148 to 153, the
// broadcast grid's step at or after 152) runs it at its step: the island's
// lease names the new owner when the world is announced, and the Releasing
// frame the previous holder already sent at that step is not sent again.
func TestCatchUpThroughScript(t *testing.T) {
	scs, err := Pick("handoff")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := NewShardAuthority(scs, 20, 0)
	_ = a.Gain(0, 1, nil)
	for range 148 {
		a.Step()
	}
	states, at := worldStates(a), a.Time()
	b, _ := NewShardAuthority(scs, 20, at+4*1_000_000/StepHz)
	if err := b.Gain(0, 2, func(id island.MemberID) (island.State, island.Time, bool) {
		s, ok := states[id]
		return s, at, ok
	}); err != nil {
		t.Fatal(err)
	}
	msgs, frames := b.Step()
	owners := 0
	for _, m := range msgs {
		if l, ok := m.(codec.Lease); ok && l.Owner == 2 {
			owners++
		}
	}
	if owners == 0 {
		t.Fatalf("no lease names the hand-off's owner after a catch-up through it: %+v", msgs)
	}
	for _, f := range frames {
		if f.Flags&island.FlagReleasing != 0 {
			t.Fatalf("a Releasing frame of island %d after the catch-up", f.Key.Island)
		}
	}
}

// worldStates samples every body of x's worlds now: what a standby of x
// would hold.
func worldStates(x *Authority) map[island.MemberID]island.State {
	out := map[island.MemberID]island.State{}
	for _, w := range x.Worlds() {
		for _, is := range w.Islands() {
			var f island.Frame
			w.Sample(is, &f)
			for _, m := range f.Members {
				out[m.ID] = m.State
			}
		}
	}
	return out
}
