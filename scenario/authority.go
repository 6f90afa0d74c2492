package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/physics"
)

// StepHz is the simulation rate of every scenario world.
const StepHz = 60

// IDSpan is the stable-id range each scenario world of one Authority gets:
// world k of generation g starts at 1 + (g·len(scenarios) + k)·IDSpan.
const IDSpan = 10_000

// stage is one scenario's world, sampler and script.
type stage struct {
	k       int // the scenario's position: its shard
	w       *physics.World
	sampler *physics.Sampler
	script  *script
	extra   []island.Frame // frames produced outside the cadence (Releasing)
	// announced: the stage's islands were spawned on the control stream.
	announced bool
	origin    int64 // the timeline step the scenario's script counts from
	next      int   // the script's actions run so far, in step order
}

// handOff sends a Releasing frame from the island's current owner, then
// moves its authority (epoch bump) to owner.
func (st *stage) handOff(islandID uint32, owner island.SenderID) {
	is := st.w.Island(islandID)
	if is == nil {
		return
	}
	f := st.sampler.Releasing(is)
	c := *f
	c.Members = append([]island.Member(nil), f.Members...)
	st.extra = append(st.extra, c)
	st.w.HandOff(islandID, owner)
}

// Authority runs scenarios side by side, each in its own world stepped in
// lockstep on one authority timeline, and turns what happens into control
// messages (identities, leases, manifests, forgets) and sampled frames.
// It is the demo's and islandserver's physics source. Not safe for
// concurrent use.
type Authority struct {
	scenarios []Scenario
	sendHz    int
	gen       uint64 // how many times the worlds were rebuilt
	stages    []*stage
	ctl       []codec.Message
	frames    []*island.Frame
	step      int64 // the timeline's steps so far: the authority time is step / StepHz (Time)
}

// NewAuthority builds the scenarios' worlds; the first Step returns the
// Announce of every body and the Lease, Manifest and Physics of every
// island.
// sendHz must lie in [1, StepHz].
func NewAuthority(scs []Scenario, sendHz int) (*Authority, error) {
	if sendHz < 1 || sendHz > StepHz {
		return nil, fmt.Errorf("scenario: send rate %d Hz outside [1, %d]", sendHz, StepHz)
	}
	if len(scs) == 0 {
		return nil, fmt.Errorf("scenario: no scenario")
	}
	a := &Authority{scenarios: scs, sendHz: sendHz}
	a.build()
	return a, nil
}

func (a *Authority) build() {
	a.stages = a.stages[:0]
	var ids []island.MemberID
	for k := range a.scenarios {
		ids = a.buildStage(k, 0, ids)
	}
	a.announce(ids)
}

// buildStage builds scenario k's world at the current time, its islands
// at epoch (0: 1), appends it to the stages and its members' ids to ids.
func (a *Authority) buildStage(k int, epoch uint32, ids []island.MemberID) []island.MemberID {
	st, ids := a.newStage(k, epoch, a.step, a.step, ids)
	st.pastActions()
	a.stages = append(a.stages, st)
	return ids
}

// newStage builds scenario k's world at timeline step step, its islands at
// epoch (0: 1), its script counting from timeline step origin, and appends
// its members' ids to ids. None of the script's actions has run yet: the
// caller runs those already due (pastActions) once the world's time is
// set. It reads only what the authority was made with and its generation.
func (a *Authority) newStage(k int, epoch uint32, step, origin int64, ids []island.MemberID) (*stage, []island.MemberID) {
	w := physics.NewWorld(StepHz)
	w.StepBase = step
	w.DefaultEpoch = epoch
	w.SetIDBase(1 + (a.gen*uint64(len(a.scenarios))+uint64(k))*IDSpan)
	st := &stage{k: k, w: w, sampler: physics.NewSampler(w, a.sendHz), origin: origin}
	st.script = a.scenarios[k].build(w)
	for _, is := range w.Islands() {
		for _, b := range is.Members {
			ids = append(ids, b.ID)
		}
	}
	return st, ids
}

// announce queues the Announce of ids, then the Lease, Manifest, Physics
// and Spawn of every island of the stages built last.
func (a *Authority) announce(ids []island.MemberID) {
	a.ctl = append(a.ctl, codec.Announce{Time: a.Time(), IDs: ids})
	for _, st := range a.stages {
		if !st.announced {
			a.spawn(st)
		}
	}
}

// spawn queues a stage's topology (Lease, Manifest, Physics of every
// island) and the Spawn of each island: it comes into existence now, in
// this state, on the reliable stream after its Lease and Manifest.
func (a *Authority) spawn(st *stage) {
	st.announced = true
	a.drain(st)
	for _, is := range st.w.Islands() {
		var f island.Frame
		st.w.Sample(is, &f)
		a.ctl = append(a.ctl, codec.Spawn{Island: is.ID, Time: f.Time, Segment: f.Segment, Members: f.Members})
	}
}

// NewShardAuthority is an Authority that steps no scenario until it is
// given one: a cluster authority holds the shards — scenario worlds, one
// id range of IDSpan each — that it has claimed (Gain) and stops stepping
// those it lost (Lose). now is the world's authority time, µs: it starts
// at the first step at or after now that is a multiple of the steps
// between broadcasts, so that every shard authority of a timeline samples
// at the same instants.
func NewShardAuthority(scs []Scenario, sendHz int, now island.Time) (*Authority, error) {
	if sendHz < 1 || sendHz > StepHz {
		return nil, fmt.Errorf("scenario: send rate %d Hz outside [1, %d]", sendHz, StepHz)
	}
	if len(scs) == 0 {
		return nil, fmt.Errorf("scenario: no scenario")
	}
	a := &Authority{scenarios: scs, sendHz: sendHz}
	a.step = gridStep(now, a.every())
	return a, nil
}

// gridStep is the first step of the timeline at or after authority time
// now (µs) that is a multiple of every: where a shard authority starts, so
// that every authority of a timeline steps on one grid and samples its
// frames at the same instants — an island handed from one to another then
// goes on one broadcast period after the last frame of the other, not at
// a phase of its own.
func gridStep(now island.Time, every int64) int64 {
	n := int64(now) * StepHz
	s := n / 1_000_000 // toward zero: the ceiling for now < 0
	if n > 0 && n%1_000_000 != 0 {
		s++
	}
	if r := s % every; r != 0 {
		if r < 0 {
			r += every
		}
		s += every - r
	}
	return s
}

// timeOf is the authority time of timeline step s, µs.
func timeOf(s int64) island.Time { return island.Time(s * 1_000_000 / StepHz) }

// every is the steps between broadcasts, as physics.NewSampler counts them.
func (a *Authority) every() int64 { return max(int64(StepHz/a.sendHz), 1) }

// Continue gives the state a body of a gained shard continues from and the
// authority time (µs) it was observed at; false when there is none.
type Continue func(island.MemberID) (island.State, island.Time, bool)

// MaxCatchUp is the most steps Gain runs to bring a continued world from
// the time of its newest state to now (0.2 s, four broadcast periods at 20
// Hz). A state older than that says its authority stopped sending that
// long ago — it crashed — so observers last saw the bodies there too, and
// the world continues from it as it is.
const MaxCatchUp = StepHz / 5

// Gain builds scenario k's world now, its islands at epoch, and queues
// its catch-up (Announce of its bodies, then each island's Lease,
// Manifest, Physics and Spawn) for the next Step. With last, every body
// it names continues from that state (physics.World.Restore): the newest
// state the world's previous authority sent. When the newest of those
// states was observed at most MaxCatchUp steps before now — the previous
// authority handed the shard on and stepped it meanwhile — the world
// first runs those steps, so that its first frame shows the bodies where
// the previous authority's last frames have them, not where they were.
// A scenario already stepped is left alone. Gain is Prepare at the
// authority's step, then Adopt.
func (a *Authority) Gain(k int, epoch uint32, last Continue) error {
	for _, st := range a.stages {
		if st.k == k {
			return nil
		}
	}
	p, err := a.Prepare(k, epoch, last, a.step)
	if err != nil {
		return err
	}
	return a.Adopt(p)
}

// A Prepared is a shard's world that Prepare built and caught up, off the
// authority's own goroutine, for Adopt to take up.
type Prepared struct {
	k    int
	st   *stage
	ids  []island.MemberID
	step int64 // the timeline step the world has reached
}

// Step returns the timeline step the prepared world has reached: Adopt
// takes it up at that step or later.
func (p *Prepared) Step() int64 { return p.step }

// Prepare does the work of Gain — builds scenario k's world, its islands
// at epoch, continues it from last and runs its catch-up — up to timeline
// step at (Steps, Time · StepHz / 1e6), without touching the authority,
// so that it can run on another goroutine while the authority steps: a
// gain then costs the authority's loop only Adopt. It reads only what
// NewShardAuthority was given; it must not run beside Restart. Nothing is
// queued until Adopt.
func (a *Authority) Prepare(k int, epoch uint32, last Continue, at int64) (*Prepared, error) {
	if k < 0 || k >= len(a.scenarios) {
		return nil, fmt.Errorf("scenario: shard %d outside [0, %d)", k, len(a.scenarios))
	}
	st, ids := a.newStage(k, epoch, at, 0, nil)
	if last == nil {
		st.pastActions()
	} else {
		n := stateAge(ids, last, timeOf(at))
		st.w.StepBase = at - n // no step run yet: it ends its catch-up at step at
		st.pastActions()       // those due by the state's time; the catch-up runs the rest at their steps
		st.w.Restore(func(id island.MemberID) (island.State, bool) {
			s, _, ok := last(id)
			return s, ok
		})
		for range n {
			st.step()
		}
	}
	return &Prepared{k: k, st: st, ids: ids, step: at}, nil
}

// ErrPreparedAhead: Adopt was given a world prepared at a step the
// authority has not reached; it cannot step back. Gain builds it anew.
var ErrPreparedAhead = errors.New("scenario: world prepared ahead of the authority")

// Adopt takes up a world Prepare built: it steps on from the step it was
// prepared at to the authority's — at most MaxCatchUp steps, its time
// moving on without steps past that, as Skip does — joins the worlds
// stepped, and its catch-up messages are queued for the next Step, as
// Gain queues them. A world prepared at step s and adopted at s+d runs
// the same steps from the same state as Gain at s+d would (while the
// catch-up stays within MaxCatchUp), so the two end alike. A scenario
// already stepped is left alone; a world prepared ahead of the authority
// is refused (ErrPreparedAhead).
func (a *Authority) Adopt(p *Prepared) error {
	for _, st := range a.stages {
		if st.k == p.k {
			return nil
		}
	}
	if p.step > a.step {
		return fmt.Errorf("%w: shard %d at step %d, the authority at %d", ErrPreparedAhead, p.k, p.step, a.step)
	}
	behind := a.step - p.step
	if behind > MaxCatchUp {
		p.st.w.StepBase += behind - MaxCatchUp
		behind = MaxCatchUp
	}
	for range behind {
		p.st.step()
	}
	// What the catch-up steps (Prepare's and these) sampled off the cadence
	// — a hand-off's Releasing frame — the previous holder sent at its
	// moment, or its moment is past.
	p.st.extra = p.st.extra[:0]
	p.step = a.step
	a.stages = append(a.stages, p.st)
	a.announce(p.ids)
	return nil
}

// stateAge returns how many steps before now the newest state last gives
// of ids was observed; 0 when that is more than MaxCatchUp.
func stateAge(ids []island.MemberID, last Continue, now island.Time) int64 {
	newest, any := island.Time(0), false
	for _, id := range ids {
		if _, t, ok := last(id); ok && (!any || t > newest) {
			newest, any = t, true
		}
	}
	if !any || newest >= now {
		return 0
	}
	n := (int64(now-newest)*StepHz + 500_000) / 1_000_000
	if n > MaxCatchUp {
		return 0
	}
	return n
}

// Lose stops stepping scenario k at once. No message goes out: whoever
// holds it next restates its islands under a higher epoch.
func (a *Authority) Lose(k int) {
	a.stages = slices.DeleteFunc(a.stages, func(st *stage) bool { return st.k == k })
}

// Shards returns the scenarios stepped, by position.
func (a *Authority) Shards() []int {
	out := make([]int, len(a.stages))
	for i, st := range a.stages {
		out[i] = st.k
	}
	return out
}

// Restart ends every world — a Destroy of every body and a Forget of every
// island — and builds the scenarios again with fresh identities and island
// ids, continuing the same timeline. The messages come with the next Step.
func (a *Authority) Restart() {
	var ids []island.MemberID
	for _, st := range a.stages {
		for _, is := range st.w.Islands() {
			a.ctl = append(a.ctl, codec.Forget{Island: is.ID, Time: a.Time()})
			for _, b := range is.Members {
				ids = append(ids, b.ID)
			}
		}
	}
	if len(ids) > 0 {
		a.ctl = append(a.ctl, codec.Destroy{Time: a.Time(), IDs: ids})
	}
	a.gen++
	a.build()
}

// drain turns one world's topology events into control messages.
func (a *Authority) drain(st *stage) {
	for _, e := range st.w.TakeEvents() {
		switch e.Kind {
		case physics.IslandFormed, physics.IslandChanged:
			is := st.w.Island(e.Island)
			a.ctl = append(a.ctl, codec.Lease(is.Lease()), codec.Manifest(is.Manifest()), physicsOf(st.w, is))
		case physics.LeaseChanged:
			a.ctl = append(a.ctl, codec.Lease(st.w.Island(e.Island).Lease()))
		case physics.IslandGone:
			a.ctl = append(a.ctl, codec.Forget{Island: e.Island, Time: st.w.Time()})
		case physics.SegmentCut:
			a.ctl = append(a.ctl, codec.Cut{Island: e.Island, Segment: e.Segment, Time: e.Time})
		}
	}
}

// Step advances every world one step and runs the scripts. It returns the
// control messages to send first, in order, then the frames sampled at this
// step (Releasing frames, then the cadence's). Both stay valid until the
// next Step.
func (a *Authority) Step() ([]codec.Message, []*island.Frame) {
	ctl := a.ctl
	a.ctl = nil
	a.frames = a.frames[:0]
	for _, st := range a.stages {
		st.step()
		a.drain(st)
		for i := range st.extra {
			a.frames = append(a.frames, &st.extra[i])
		}
		st.extra = st.extra[:0:0]
		a.frames = append(a.frames, st.sampler.Tick()...)
	}
	a.step++
	ctl = append(ctl, a.ctl...)
	a.ctl = nil
	return ctl, a.frames
}

// Control returns the control messages queued since the last Step (a
// Gain's announcement of its shard, say) without stepping, and clears
// them: a caller that would not keep them waiting for the next step sends
// them now.
func (a *Authority) Control() []codec.Message {
	ctl := a.ctl
	a.ctl = nil
	return ctl
}

// Behind returns how many whole steps the authority's time is behind
// authority time now (µs); 0 when it is not.
func (a *Authority) Behind(now island.Time) int64 {
	n := (int64(now) - int64(a.Time())) * StepHz / 1_000_000
	return max(n, 0)
}

// Due reports whether the clock has reached the time of the authority's
// next step, authority time now (µs): a caller that paces the steps by a
// clock of its own steps only then, so that no frame is sampled at a time
// the clock has not reached.
func (a *Authority) Due(now island.Time) bool { return timeOf(a.step+1) <= now }

// Skip moves the authority's time n steps on without stepping its worlds,
// for an authority whose steps fell behind the timeline's clock: its
// bodies hold still for those steps (the simulation runs slower than the
// clock), and its frames stay at the timeline's instants, comparable with
// every other authority's. Its sampling stays on the timeline's grid. n ≤
// 0 does nothing.
func (a *Authority) Skip(n int64) {
	if n <= 0 {
		return
	}
	a.step += n
	for _, st := range a.stages {
		st.w.StepBase += n
	}
}

// step advances the stage's world one step and runs its script.
func (st *stage) step() {
	st.w.Step()
	age := st.age()
	st.fire(age)
	if st.script.every != nil {
		st.script.every(age)
	}
}

// age is how many timeline steps the stage's scenario has run: its script's
// clock.
func (st *stage) age() int64 { return st.w.StepBase + st.w.Steps() - st.origin }

// fire runs, in order, the script's actions due at or before age that have
// not run: one a step as the world steps, several after a Skip, and every
// action already past when the world is built (pastActions).
func (st *stage) fire(age int64) {
	order := st.script.order()
	for st.next < len(order) && order[st.next] <= age {
		st.script.actions[order[st.next]](st.w, st)
		st.next++
	}
}

// pastActions brings a world just built up to its scenario's age: a world
// built for a shard another authority held steps on a scenario that ran
// before it, so the actions due by now have happened there (a joint broken,
// a rope loosened, an island handed on) and happen here at once, before
// the states it continues from are restored. A frame an action sampled on
// the way (a hand-off's Releasing frame) is not sent: its moment is past.
func (st *stage) pastActions() {
	st.fire(st.age())
	st.extra = st.extra[:0]
}

// ScenarioOf returns the name of the scenario island id belongs to, or ""
// when no world has it.
func (a *Authority) ScenarioOf(id uint32) string {
	for _, st := range a.stages {
		if st.w.Island(id) != nil {
			return a.scenarios[st.k].Name
		}
	}
	return ""
}

// Time returns the authority time of the last step, µs.
func (a *Authority) Time() island.Time { return timeOf(a.step) }

// Steps returns the timeline's steps so far: Time is Steps / StepHz.
func (a *Authority) Steps() int64 { return a.step }

// Period returns the broadcast period, µs.
func (a *Authority) Period() int64 {
	return a.every() * 1_000_000 / StepHz
}

// Worlds returns the scenario worlds, in scenario order.
func (a *Authority) Worlds() []*physics.World {
	out := make([]*physics.World, len(a.stages))
	for i, st := range a.stages {
		out[i] = st.w
	}
	return out
}

// Names lists the scenario names, comma separated.
func Names() string {
	var n []string
	for _, s := range All {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

// Pick returns the scenarios named in a comma-separated list, or All for
// "all" or "".
func Pick(names string) ([]Scenario, error) {
	if names == "all" || names == "" {
		return All, nil
	}
	var out []Scenario
	for _, n := range strings.Split(names, ",") {
		found := false
		for _, s := range append(All[:len(All):len(All)], Extra...) {
			if s.Name == strings.TrimSpace(n) {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", n, Names())
		}
	}
	return out, nil
}

// ShardOf returns the shard — the scenario's position — of island id on
// an Authority of n scenarios: world k of generation g holds the ids from
// 1 + (g·n + k)·IDSpan on. Island ids are their lowest member's stable id.
func ShardOf(id uint32, n int) int {
	if id == 0 || n <= 0 {
		return 0
	}
	return int((uint64(id)-1)/IDSpan) % n
}
