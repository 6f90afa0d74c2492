package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/validator"
)

// fence is a Fence whose holdings the test sets.
type fence map[uint32]Holding

func (f fence) Admit(shard uint32, holder string, epoch uint32) bool {
	h, ok := f[shard]
	return ok && h.Holder == holder && epoch >= h.Epoch
}

// Handing: the test's fence records no hand-off.
func (f fence) Handing(uint32, string, uint32) bool { return false }

// handingFence is a fence whose hand-off records the test sets too.
type handingFence struct {
	fence
	handing map[uint32]Holding
}

func (f handingFence) Handing(shard uint32, holder string, epoch uint32) bool {
	h, ok := f.handing[shard]
	return ok && h.Holder == holder && epoch >= h.Epoch
}

// link is one in-process connection: a broadcaster to one receiver, no
// loss, feedback at every step.
type link struct {
	t   testing.TB
	bc  *broadcast.Broadcaster
	rx  *receiver.Receiver
	ctl []byte
	fb  []byte
	dgs []broadcast.Datagram
	// overtaken: each step's datagrams arrive before its control, as they
	// may when the control stream waits for a lost packet.
	overtaken bool
	// lose: the datagrams of the next carry are lost.
	lose bool
	// views, when set, sees every Render's views.
	views func([]receiver.IslandView)
}

func newLink(t testing.TB, timeline uint64, period int64, rcfg receiver.Config) *link {
	bc, err := broadcast.New(broadcast.Config{Timeline: timeline, SendPeriod: period})
	if err != nil {
		t.Fatal(err)
	}
	rx, err := receiver.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	return &link{t: t, bc: bc, rx: rx}
}

// carry sends one step's messages and frames across.
func (l *link) carry(now int64, msgs []codec.Message, frames []*island.Frame) {
	for _, m := range msgs {
		_ = l.bc.Apply(m)
	}
	l.bc.Frames(frames)
	l.ctl, l.dgs = l.bc.Take(1, l.ctl[:0], l.dgs[:0])
	if l.overtaken {
		l.datagrams(now)
	}
	if n, err := l.rx.ControlBytes(now, l.ctl); err != nil || n != len(l.ctl) {
		l.t.Fatalf("control: %d of %d bytes: %v", n, len(l.ctl), err)
	}
	if !l.overtaken {
		l.datagrams(now)
	}
	if v := l.rx.Render(now); l.views != nil {
		l.views(v)
	}
	l.fb = l.rx.Feedback(l.fb[:0])
	if _, err := l.bc.FeedbackBytes(1, l.fb); err != nil {
		l.t.Fatal(err)
	}
}

// datagrams hands the receiver the step's datagrams.
func (l *link) datagrams(now int64) {
	if l.lose {
		l.lose = false
		return
	}
	for _, d := range l.dgs {
		l.rx.Datagram(now, d.Bytes)
	}
}

// TestRelayFailover runs two shards (the chain and the ragdolls) on
// authority a, through a relay, to an observer; then a "crashes", b takes
// both shards under a higher epoch, and a partitioned a keeps sending for
// a while. The observer must go on with b's islands: a's late leases and
// frames refused, no frame of the old epoch committed after the new one's
// first, and every island b steps known to the observer.
func TestRelayFailover(t *testing.T) {
	scs, err := scenario.Pick("chain,ragdolls")
	if err != nil {
		t.Fatal(err)
	}
	const timeline = 0x5eed
	fn := fence{} // the front's view of etcd lags: a's claims are not in it yet
	a, _ := scenario.NewShardAuthority(scs, 20, 0)
	_ = a.Gain(0, 100, nil)
	_ = a.Gain(1, 100, nil)
	relay, err := NewRelay(RelayConfig{Period: a.Period(), ShardOf: func(id uint32) uint32 { return uint32(scenario.ShardOf(id, len(scs))) }, Fence: fn})
	if err != nil {
		t.Fatal(err)
	}
	newest := map[uint32]uint32{} // island → newest epoch the observer committed
	var backwards int
	obs := newLink(t, timeline, a.Period(), receiver.Config{OnCommit: func(f *validator.Validated) {
		k := f.Key()
		if k.Epoch < newest[k.Island] {
			backwards++
		}
		newest[k.Island] = max(newest[k.Island], k.Epoch)
	}})
	upA := newLink(t, 1, a.Period(), relay.Upstream("a").Hooks(receiver.Config{}))
	var now int64
	var upB *link
	var b *scenario.Authority
	run := func(n int, withA, withB bool) {
		for range n {
			now += 1_000_000 / scenario.StepHz
			if withA {
				msgs, frames := a.Step()
				upA.carry(now, msgs, frames)
			}
			if withB {
				msgs, frames := b.Step()
				upB.carry(now, msgs, frames)
			}
			msgs, frames := relay.Step()
			obs.carry(now, msgs, frames)
		}
	}
	run(20, true, false)
	if n := obs.rx.Stats().FramesCommitted; n != 0 {
		t.Fatalf("%d frames forwarded before the fence admitted their lease", n)
	}
	fn[0], fn[1] = Holding{Holder: "a", Epoch: 100}, Holding{Holder: "a", Epoch: 100}
	run(100, true, false)
	before := obs.rx.Stats().FramesCommitted
	if before < 100 {
		t.Fatalf("only %d frames reached the observer through the relay", before)
	}
	for id, e := range newest {
		if e != 100 {
			t.Fatalf("island %d at epoch %d before the failover", id, e)
		}
	}
	for _, w := range a.Worlds() {
		for _, is := range w.Islands() {
			if newest[is.ID] != 100 {
				t.Fatalf("island %d, whose lease waited for the fence, never reached the observer", is.ID)
			}
		}
	}

	// a's lease runs out: b claims both shards under epoch 200, starting
	// on the world's clock where a stopped.
	fn[0], fn[1] = Holding{Holder: "b", Epoch: 200}, Holding{Holder: "b", Epoch: 200}
	b, _ = scenario.NewShardAuthority(scs, 20, a.Time())
	_ = b.Gain(0, 200, nil)
	_ = b.Gain(1, 200, nil)
	upB = newLink(t, 2, b.Period(), relay.Upstream("b").Hooks(receiver.Config{}))
	run(15, true, true) // a, partitioned, goes on sending for half a second
	// and its connection to the front starts again: its catch-up restates
	// every lease at the old epoch.
	upA.bc.Leave(1)
	_ = upA.bc.Join(1, 0)
	_ = upA.bc.Subscribe(1, codec.Subscribe{All: true})
	run(15, true, true)
	st := relay.Stats()
	if st.FencedFrames == 0 {
		t.Fatalf("a partitioned authority's frames were not refused: %+v", st)
	}
	run(240, false, true)
	st = relay.Stats()
	if st.FencedLeases == 0 || len(relay.parked) != 0 {
		t.Fatalf("a partitioned authority's restated leases were not refused (%d still waiting): %+v", len(relay.parked), st)
	}
	if backwards != 0 {
		t.Fatalf("%d frames of an older epoch committed after a newer one", backwards)
	}
	live := map[uint32]bool{}
	for _, w := range b.Worlds() {
		for _, is := range w.Islands() {
			live[is.ID] = true
			if newest[is.ID] != 200 {
				t.Errorf("island %d: newest committed epoch %d, want b's 200", is.ID, newest[is.ID])
			}
			if l, ok := obs.rx.Lease(is.ID); !ok || l.Epoch != 200 {
				t.Errorf("island %d: observer's lease %+v", is.ID, l)
			}
		}
	}
	for _, id := range obs.rx.Islands() {
		if !live[id] {
			t.Errorf("island %d of the crashed authority is still known to the observer", id)
		}
	}
	t.Logf("relay: %+v; observer committed %d frames before, %d after", st, before, obs.rx.Stats().FramesCommitted-before)
}

// oneShard is a relay test's setup: authority a holding shard 0 (scene)
// at epoch 100, a relay whose every island is of shard 0, judged by fn,
// an observer behind it (obsCfg) and a's upstream into it.
type oneShard struct {
	a       *scenario.Authority
	relay   *Relay
	obs, up *link
	scs     []scenario.Scenario
	now     int64
}

func newOneShard(t *testing.T, scene string, fn Fence, handOff func(uint32, float64), obsCfg receiver.Config) *oneShard {
	t.Helper()
	scs, err := scenario.Pick(scene)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := scenario.NewShardAuthority(scs, 20, 0)
	_ = a.Gain(0, 100, nil)
	relay, err := NewRelay(RelayConfig{Period: a.Period(), ShardOf: func(uint32) uint32 { return 0 }, Fence: fn, HandOff: handOff})
	if err != nil {
		t.Fatal(err)
	}
	return &oneShard{a: a, relay: relay, scs: scs, obs: newLink(t, 0x5eed, a.Period(), obsCfg),
		up: newLink(t, 1, a.Period(), relay.Upstream("a").Hooks(receiver.Config{}))}
}

// tick advances one Step: now moves on, and the relay's output of this
// Step goes to the observer after feed has carried the upstreams' output.
func (o *oneShard) tick(feed func(now int64)) {
	o.now += 1_000_000 / scenario.StepHz
	feed(o.now)
	msgs, frames := o.relay.Step()
	o.obs.carry(o.now, msgs, frames)
}

// untilHandedOut steps a and the relay, half a second at least, until a
// Step that handed out a's frames.
func (o *oneShard) untilHandedOut() {
	for out := 0; o.now < 500_000 || out == 0; {
		o.now += 1_000_000 / scenario.StepHz
		msgs, frames := o.a.Step()
		o.up.carry(o.now, msgs, frames)
		msgs, fs := o.relay.Step()
		out = len(fs)
		o.obs.carry(o.now, msgs, fs)
	}
}

// TestRelayForgetsOverlapped: the bridge of "break" splits in two under
// authority a; b takes the shard with a world whose topology differs —
// "bridge", the same planks under the same ids, never broken — and states
// one whole bridge. The half a split off is nobody's now, and b's manifest
// claims its planks: the relay forgets it as it forwards b's manifest, not
// ForgetAfter later, so that no observer places one plank from two islands.
// (The broken-off half's id, 21, is its lowest plank's.)
func TestRelayForgetsOverlapped(t *testing.T) {
	fn := fence{0: {Holder: "a", Epoch: 100}}
	r := newOneShard(t, "break", fn, nil, receiver.Config{})
	a, relay, obs, upA := r.a, r.relay, r.obs, r.up
	step := func(src *scenario.Authority, up *link) {
		r.tick(func(now int64) {
			msgs, frames := src.Step()
			up.carry(now, msgs, frames)
		})
	}
	for range 3 * scenario.StepHz { // the bridge breaks at 2 s
		step(a, upA)
	}
	if n := len(obs.rx.Islands()); n != 2 {
		t.Fatalf("the observer knows %d islands after the break, want its 2 halves", n)
	}
	fn[0] = Holding{Holder: "b", Epoch: 200}
	b, _ := scenario.NewShardAuthority(wholeBridge(t), 20, a.Time())
	_ = b.Gain(0, 200, nil)
	upB := newLink(t, 2, b.Period(), relay.Upstream("b").Hooks(receiver.Config{}))
	for range 3 {
		step(b, upB)
	}
	if _, ok := relay.islands[21]; ok || relay.Stats().Forgotten != 1 {
		t.Fatalf("three steps after b's manifests the relay still keeps the broken-off half: %+v", relay.Stats())
	}
	// The observer ends the half at its last frame's time, once its
	// playout gets there: well before ForgetAfter (2 s).
	for range scenario.StepHz / 2 {
		step(b, upB)
	}
	var want []uint32
	for _, w := range b.Worlds() {
		for _, is := range w.Islands() {
			want = append(want, is.ID)
		}
	}
	if got := obs.rx.Islands(); !slices.Equal(got, want) {
		t.Fatalf("half a second after b's manifests the observer knows islands %v, want b's %v", got, want)
	}
	if st := relay.Stats(); st.Forgotten != 1 {
		t.Fatalf("relay forgot %d islands, want the broken-off half", st.Forgotten)
	}
}

// wholeBridge is the scenario list of a holder whose shard 0 is the
// bridge of "break" never broken: a new holder whose topology differs from
// the old one's. (A holder of "break" itself continues the scenario on the
// timeline's clock, the bridge already broken.)
func wholeBridge(t *testing.T) []scenario.Scenario {
	t.Helper()
	scs, err := scenario.Pick("bridge")
	if err != nil {
		t.Fatal(err)
	}
	return scs
}

// TestRelayForgetsOverlappedInHandOff: as TestRelayForgetsOverlapped, but
// a hands the shard on and keeps stepping it (make before break), and b's
// time runs a broadcast period behind a's, as two authorities' step clocks
// may: b's first frame is older than a's last frames of the broken-off
// half. The relay ends the half no later than b's first frame, so that at
// no playback time does the observer place a plank from two islands.
func TestRelayForgetsOverlappedInHandOff(t *testing.T) {
	fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
	r := newOneShard(t, "break", fn, nil, receiver.Config{})
	twice, renders := 0, 0
	r.obs.views = func(views []receiver.IslandView) {
		renders++
		placed := map[island.MemberID]uint32{}
		for _, v := range views {
			for _, p := range v.Poses {
				if other, ok := placed[p.ID]; ok && other != v.Island {
					twice++
					t.Logf("render %d: member %d placed by islands %d and %d", renders, p.ID, other, v.Island)
				}
				placed[p.ID] = v.Island
			}
		}
	}
	var b *scenario.Authority // and its uplink, once it holds the shard
	var upB *link
	step := func() {
		r.tick(func(now int64) {
			msgs, frames := r.a.Step()
			r.up.carry(now, msgs, frames)
			if b != nil {
				msgs, frames = b.Step()
				upB.carry(now, msgs, frames)
			}
		})
	}
	for range 3 * scenario.StepHz { // the bridge breaks at 2 s
		step()
	}
	if n := len(r.obs.rx.Islands()); n != 2 {
		t.Fatalf("the observer knows %d islands after the break, want its 2 halves", n)
	}
	fn.handing[0] = Holding{Holder: "a", Epoch: 100}
	fn.fence[0] = Holding{Holder: "b", Epoch: 200}
	b, _ = scenario.NewShardAuthority(wholeBridge(t), 20, r.a.Time()-3*1_000_000/scenario.StepHz)
	_ = b.Gain(0, 200, nil)
	upB = newLink(t, 2, b.Period(), r.relay.Upstream("b").Hooks(receiver.Config{}))
	for range scenario.StepHz {
		step()
	}
	if st := r.relay.Stats(); st.Forgotten != 1 {
		t.Fatalf("relay forgot %d islands, want the broken-off half", st.Forgotten)
	}
	if twice > 0 {
		t.Fatalf("%d times a member was placed by two islands in one render", twice)
	}
}

// TestRelayKeepsRestated: a hands island 1 (bodies 1–4) on to b, whose
// world has it as two islands: 1 (bodies 1 and 2) and 3 (bodies 3 and 4).
// b's manifest of island 3 claims bodies of a's island 1, but b restates
// island 1 itself with its own lease, waiting at the relay with the other:
// the relay must not forget island 1 whichever of b's two leases it hands
// out first (it takes them from a map, in no set order).
func TestRelayKeepsRestated(t *testing.T) {
	const period = 50_000
	ids := []island.MemberID{{Stable: 1}, {Stable: 2}, {Stable: 3}, {Stable: 4}}
	frame := func(id uint32, owner island.SenderID, epoch, seq uint32, at island.Time, members []island.MemberID) *island.Frame {
		f := &island.Frame{Sender: owner, Key: island.Key{Island: id, Epoch: epoch, Topology: 1, Config: 1, Seq: seq}, Time: at}
		for i, m := range members {
			f.Members = append(f.Members, island.Member{ID: m, State: island.State{X: float64(i), Y: float64(seq)}})
		}
		return f
	}
	for run := range 16 {
		fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
		relay, err := NewRelay(RelayConfig{Period: period, ShardOf: func(uint32) uint32 { return 0 }, Fence: fn})
		if err != nil {
			t.Fatal(err)
		}
		obs := newLink(t, 0x5eed, period, receiver.Config{})
		upA := newLink(t, 1, period, relay.Upstream("a").Hooks(receiver.Config{}))
		upB := newLink(t, 2, period, relay.Upstream("b").Hooks(receiver.Config{}))
		now, seq := int64(0), uint32(0)
		step := func(feed func(at island.Time)) {
			now += 1_000_000 / scenario.StepHz
			seq++
			feed(island.Time(now))
			msgs, frames := relay.Step()
			obs.carry(now, msgs, frames)
		}
		aFrame := func(at island.Time) {
			upA.carry(int64(at), nil, []*island.Frame{frame(1, 1, 100, seq, at, ids)})
		}
		upA.carry(0, []codec.Message{codec.Announce{IDs: ids}, codec.Lease{Island: 1, Epoch: 100, Owner: 1},
			codec.Manifest{Island: 1, Topology: 1, Config: 1, Members: ids}}, nil)
		for range 30 {
			step(aFrame)
		}
		fn.handing[0] = Holding{Holder: "a", Epoch: 100}
		fn.fence[0] = Holding{Holder: "b", Epoch: 200}
		upB.carry(now, []codec.Message{codec.Announce{IDs: ids},
			codec.Lease{Island: 1, Epoch: 200, Owner: 2}, codec.Manifest{Island: 1, Topology: 1, Config: 1, Members: ids[:2]},
			codec.Lease{Island: 3, Epoch: 200, Owner: 2}, codec.Manifest{Island: 3, Topology: 1, Config: 1, Members: ids[2:]}}, nil)
		step(aFrame) // b's leases wait for its first frames
		for range 12 {
			step(func(at island.Time) {
				aFrame(at)
				upB.carry(int64(at), nil, []*island.Frame{frame(1, 2, 200, seq, at, ids[:2]), frame(3, 2, 200, seq, at, ids[2:])})
			})
		}
		if st := relay.Stats(); st.Forgotten != 0 {
			t.Fatalf("run %d: the relay forgot %d islands, though b restated island 1", run, st.Forgotten)
		}
		if e := leaseEpochs(obs.rx); !slices.Equal(obs.rx.Islands(), []uint32{1, 3}) || !slices.Equal(e, []uint32{200}) {
			t.Fatalf("run %d: the observer knows islands %v under epochs %v, want b's 1 and 3 (200)", run, obs.rx.Islands(), e)
		}
	}
}

// TestRelayHandsOnWhileHanding: a holder that released its shard for the
// next one keeps stepping it; while the hand-off record stands and no new
// lease has come, the relay keeps handing out its frames — and stops
// once the record goes.
func TestRelayHandsOnWhileHanding(t *testing.T) {
	fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
	r := newOneShard(t, "bridge", fn, nil, receiver.Config{})
	run := func(n int) uint64 {
		before := r.obs.rx.Stats().FramesCommitted
		for range n {
			r.tick(func(now int64) {
				msgs, frames := r.a.Step()
				r.up.carry(now, msgs, frames)
			})
		}
		return r.obs.rx.Stats().FramesCommitted - before
	}
	if n := run(30); n == 0 {
		t.Fatal("nothing reached the observer while a held the shard")
	}
	delete(fn.fence, 0) // a released the shard; nobody has claimed it yet
	fn.handing[0] = Holding{Holder: "a", Epoch: 100}
	if n := run(30); n < 8 {
		t.Fatalf("%d frames handed out in half a second of hand-off, want about 10", n)
	}
	delete(fn.handing, 0) // a's session ended
	run(3)
	if n := run(30); n != 0 {
		t.Fatalf("%d frames handed out after the hand-off record went", n)
	}
}

// TestRelayMakesBeforeBreak: a hands island shard 0 on to b. b's lease is
// admitted at once, but while a still hands the shard on (its hand-off
// record) and b has sent no frame, a's frames go on reaching the observer
// and b's lease waits; with b's first frame the lease goes out — a Step
// after a frame of a's that waits to go out, if one does — and that frame
// with it. The observer's datagrams overtake its control in every Step, so
// b's first frame reaches it before its lease: it holds the frame for the
// lease and drops nothing. The observer never goes more than a broadcast
// period without a frame. A new holder that never sends a frame gets its
// lease out after handOverPeriods all the same.
//
// Every phase is tried: of the relay's broadcast cadence against the
// authorities' sampling, and of b's first frame against a's frames. In
// each, neither the relay's hand-off gap nor the observer's time between
// two frames it commits exceeds one period (3 Steps) across the hand-off.
func TestRelayMakesBeforeBreak(t *testing.T) {
	for _, silent := range []bool{false, true} {
		for phase := range 3 {
			for delay := range 3 {
				if silent && (phase > 0 || delay > 0) {
					continue
				}
				makesBeforeBreak(t, silent, phase, delay)
			}
		}
	}
}

// makesBeforeBreak is one run of TestRelayMakesBeforeBreak: the relay
// stepped phase Steps ahead of the authorities, b's frames held delay
// Steps longer.
func makesBeforeBreak(t *testing.T, silent bool, phase, delay int) {
	t.Helper()
	fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
	var gaps []float64
	var epochs []uint32 // the epoch of each frame the observer committed
	var at []int        // the Step of each
	steps := 0
	r := newOneShard(t, "bridge", fn, func(_ uint32, s float64) { gaps = append(gaps, s) },
		receiver.Config{OnCommit: func(f *validator.Validated) {
			epochs = append(epochs, f.Key().Epoch)
			at = append(at, steps)
		}})
	for range phase {
		r.relay.Step()
	}
	a, obs := r.a, r.obs
	obs.overtaken = true
	arrivedAt := -1 // the Step b's first frame reached the relay
	b, _ := scenario.NewShardAuthority(r.scs, 20, 0)
	upB := newLink(t, 2, b.Period(), r.relay.Upstream("b").Hooks(receiver.Config{}))
	bFrames := false // b's frames reach the relay (a Spawn's among them)
	var held []codec.Message
	step := func() {
		// As tick, but the relay's output is looked at on its way.
		steps++
		r.now += 1_000_000 / scenario.StepHz
		now := r.now
		msgs, frames := a.Step()
		r.up.carry(now, msgs, frames)
		msgs, frames = b.Step()
		if !bFrames {
			// Only b's identities and lease go up; what carries its
			// states (the Spawn, frames) waits.
			var up []codec.Message
			for _, m := range msgs {
				switch m.(type) {
				case codec.Announce, codec.Lease:
					up = append(up, m)
				default:
					held = append(held, m)
				}
			}
			msgs, frames = up, nil
		} else if held != nil {
			msgs, held = append(held, msgs...), nil
		}
		if arrivedAt < 0 && len(frames) > 0 {
			arrivedAt = steps
		}
		upB.carry(now, msgs, frames)
		msgs, frames = r.relay.Step()
		lease := slices.ContainsFunc(msgs, func(m codec.Message) bool { l, ok := m.(codec.Lease); return ok && l.Epoch == 101 })
		frame := slices.ContainsFunc(frames, func(f *island.Frame) bool { return f.Key.Epoch == 101 })
		if lease && arrivedAt >= 0 && !frame {
			t.Fatalf("phase %d, delay %d: b's lease went out at Step %d without b's first frame, there since Step %d", phase, delay, steps, arrivedAt)
		}
		obs.carry(now, msgs, frames)
	}
	for range 30 {
		step()
	}
	// a releases shard 0 (its hand-off record stays), b claims it.
	fn.handing[0] = Holding{Holder: "a", Epoch: 100}
	fn.fence[0] = Holding{Holder: "b", Epoch: 101}
	_ = b.Gain(0, 101, nil)
	n0 := len(epochs)
	for range 8 { // b's lease is here, its frames are not (fewer Steps than handOverPeriods allow)
		step()
	}
	if e := leaseEpochs(obs.rx); !slices.Equal(e, []uint32{100}) {
		t.Fatalf("the observer holds leases of epochs %v before b sent a frame, want a's (100)", e)
	}
	if got := len(epochs) - n0; got < 2 || slices.Contains(epochs[n0:], 101) {
		t.Fatalf("while b sent no frame the observer committed %d frames, epochs %v: a's should go on", got, epochs[n0:])
	}
	if silent {
		for range handOverPeriods * 3 { // periods of 3 Steps at 20 Hz
			step()
		}
		if e := leaseEpochs(obs.rx); !slices.Equal(e, []uint32{101}) {
			t.Fatalf("leases of epochs %v after %d periods without a frame of b's, want b's (101)", e, handOverPeriods)
		}
		return
	}
	for range delay {
		step()
	}
	bFrames = true
	for range 9 {
		step()
	}
	if e := leaseEpochs(obs.rx); !slices.Equal(e, []uint32{101}) || epochs[len(epochs)-1] != 101 {
		t.Fatalf("phase %d, delay %d: after b's first frames the observer holds leases of epochs %v and committed epochs %v", phase, delay, e, epochs[n0:])
	}
	parkDropped := 0
	st := obs.rx.Stats()
	st.Rejects(func(reason string, n uint64) {
		if reason == "wire:park-dropped" || reason == "wire:frame-park-dropped" {
			parkDropped += int(n)
		}
	})
	if parkDropped > 0 {
		t.Fatalf("phase %d, delay %d: the observer dropped %d datagrams or frames that waited for control", phase, delay, parkDropped)
	}
	const period = 3 // Steps
	if len(gaps) == 0 || slices.Max(gaps) > period/float64(scenario.StepHz)+1e-9 {
		t.Fatalf("phase %d, delay %d: hand-off gaps at the relay %v s, want within a period", phase, delay, gaps)
	}
	for i := n0 + 1; i < len(at); i++ {
		if at[i]-at[i-1] > period {
			t.Fatalf("phase %d, delay %d: the observer went %d Steps without a frame across the hand-off (commits at Steps %v, epochs %v)",
				phase, delay, at[i]-at[i-1], at[n0:], epochs[n0:])
		}
	}
}

// newHandedOut is newOneShard of "bridge" behind fn, whose observer
// records the epoch of every frame it commits, stepped until a's frames
// went out, and the prompt their first frames gave taken.
func newHandedOut(t *testing.T, fn Fence) (*oneShard, *[]uint32) {
	t.Helper()
	var epochs []uint32
	r := newOneShard(t, "bridge", fn, nil, receiver.Config{OnCommit: func(f *validator.Validated) { epochs = append(epochs, f.Key().Epoch) }})
	r.untilHandedOut()
	select {
	case <-r.relay.Prompt():
	default:
	}
	return r, &epochs
}

// TestRelayUrgentHandOver: a new holder's first state (its spawn) reaches
// a relay whose old holder's frames went out at the last Step: the relay
// prompts, and Urgent hands the island over at once — the new lease and
// that first state — without counting a Step; the next Step does not hand
// it out again.
func TestRelayUrgentHandOver(t *testing.T) {
	fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
	r, committed := newHandedOut(t, fn)
	// Each island's first frame prompted; its frames after that do not.
	r.untilHandedOut()
	select {
	case <-r.relay.Prompt():
		t.Fatal("the relay prompted with no hand-over waiting")
	default:
	}
	fn.handing[0] = Holding{Holder: "a", Epoch: 100}
	fn.fence[0] = Holding{Holder: "b", Epoch: 101}
	b, _ := scenario.NewShardAuthority(r.scs, 20, r.a.Time())
	_ = b.Gain(0, 101, nil)
	upB := newLink(t, 2, b.Period(), r.relay.Upstream("b").Hooks(receiver.Config{}))
	upB.carry(r.now, b.Control(), nil)
	select {
	case <-r.relay.Prompt():
	default:
		t.Fatal("b's first state is here and the relay did not prompt")
	}
	steps := r.relay.steps
	n0 := len(*committed)
	msgs, frames := r.relay.Urgent()
	if r.relay.steps != steps {
		t.Fatalf("Urgent counted %d Steps", r.relay.steps-steps)
	}
	r.obs.carry(r.now, msgs, frames)
	if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{101}) || !slices.Contains((*committed)[n0:], 101) {
		t.Fatalf("after Urgent the observer holds leases of epochs %v and committed epochs %v, want b's (101)", e, (*committed)[n0:])
	}
	if _, frames := r.relay.Step(); slices.ContainsFunc(frames, func(f *island.Frame) bool { return f.Key.Epoch == 101 }) {
		t.Fatal("the Step after Urgent handed b's first state out again")
	}
}

// TestRelayPromptsFirstFrame: after a crash (the old holder's key gone,
// no hand-over record) the new holder's catch-up reaches the relay
// between two Steps. When the fence admits its lease already, the relay
// prompts for the islands' first states (their spawns), and the Urgent
// call hands them out at once with the lease. When the lease came first,
// it waits, parked, and the spawns are refused; the new holder's first
// frame then prompts, and goes at once with the lease.
func TestRelayPromptsFirstFrame(t *testing.T) {
	for _, parked := range []bool{false, true} {
		t.Run(fmt.Sprintf("parked=%v", parked), func(t *testing.T) {
			fn := fence{0: {Holder: "a", Epoch: 100}}
			r, committed := newHandedOut(t, fn)
			b, _ := scenario.NewShardAuthority(r.scs, 20, r.a.Time())
			_ = b.Gain(0, 101, nil)
			upB := newLink(t, 2, b.Period(), r.relay.Upstream("b").Hooks(receiver.Config{}))
			if !parked {
				fn[0] = Holding{Holder: "b", Epoch: 101}
			}
			upB.carry(r.now, b.Control(), nil)
			if parked {
				select {
				case <-r.relay.Prompt():
					t.Fatal("the relay prompted for a lease the fence has not admitted")
				default:
				}
				fn[0] = Holding{Holder: "b", Epoch: 101}
				for first := []*island.Frame(nil); first == nil; {
					r.now += 1_000_000 / scenario.StepHz
					var msgs []codec.Message
					msgs, first = b.Step()
					upB.carry(r.now, msgs, first)
				}
			}
			select {
			case <-r.relay.Prompt():
			default:
				t.Fatal("b's first state is here and the relay did not prompt")
			}
			n0 := len(*committed)
			msgs, frames := r.relay.Urgent()
			if !slices.ContainsFunc(frames, func(f *island.Frame) bool { return f.Key.Epoch == 101 }) {
				t.Fatal("Urgent did not hand b's first state out")
			}
			r.obs.carry(r.now, msgs, frames)
			if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{101}) || !slices.Contains((*committed)[n0:], 101) {
				t.Fatalf("after Urgent the observer holds leases of epochs %v and committed epochs %v, want b's (101)", e, (*committed)[n0:])
			}
		})
	}
}

// epochCommit is a frame an observer committed: its epoch and authority
// time.
type epochCommit struct {
	epoch uint32
	t     island.Time
}

// handingBridge is a bridge shard held by a at epoch 100, behind a fence
// that also says who hands a shard on, its first frame handed out to an
// observer whose commits go to commits.
func handingBridge(t *testing.T, commits *[]epochCommit) (*oneShard, handingFence) {
	t.Helper()
	fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
	r := newOneShard(t, "bridge", fn, nil, receiver.Config{OnCommit: func(f *validator.Validated) {
		*commits = append(*commits, epochCommit{f.Key().Epoch, f.Time()})
	}})
	r.untilHandedOut()
	return r, fn
}

// TestRelayHandOverSkipsNoSample: b's first state reaches the relay two
// periods after the newest frame of a's it holds, a's frame between them
// still on its way. The relay waits for that frame (handOverPeriods at
// most, while a hands the island on), hands it out, and sends it again as
// a Final ahead of b's lease, so an observer that never gets its datagram
// still commits it before b's first state: the island's authority time
// moves on by one period across the hand-over, as it does between any two
// frames. So it does when a's frame comes a period late (a loaded machine
// delays one authority's frames more than the other's). When a's frame
// does not come, b's lease goes handOverPeriods later all the same.
func TestRelayHandOverSkipsNoSample(t *testing.T) {
	for _, how := range []string{"at once", "a period late", "never"} {
		comes := how != "never"
		var commits []epochCommit
		r, fn := handingBridge(t, &commits)
		// a's next frame is sampled and stays on its way.
		var heldMsgs []codec.Message
		var heldFrames []*island.Frame
		for heldFrames == nil {
			r.now += 1_000_000 / scenario.StepHz
			msgs, frames := r.a.Step()
			heldMsgs = append(heldMsgs, msgs...)
			if len(frames) > 0 {
				heldFrames = frames
			}
			m, f := r.relay.Step()
			r.obs.carry(r.now, m, f)
		}
		next := heldFrames[0].Time
		// b claims the shard; its first state is a period after a's
		// frame on its way.
		fn.handing[0] = Holding{Holder: "a", Epoch: 100}
		fn.fence[0] = Holding{Holder: "b", Epoch: 101}
		b, _ := scenario.NewShardAuthority(r.scs, 20, next+1)
		_ = b.Gain(0, 101, nil)
		upB := newLink(t, 2, b.Period(), r.relay.Upstream("b").Hooks(receiver.Config{}))
		upB.carry(r.now, b.Control(), nil)
		select {
		case <-r.relay.Prompt(): // b's first state is here
		default:
		}
		m, f := r.relay.Urgent()
		r.obs.carry(r.now, m, f)
		if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{100}) {
			t.Fatalf("a's frame of %d µs on its way, b's first state there: the observer holds leases of epochs %v, want a's (100) until that frame", next, e)
		}
		period := island.Time(r.a.Period())
		if how == "a period late" {
			for range r.relay.every {
				m, f := r.relay.Step()
				r.obs.carry(r.now, m, f)
			}
			if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{100}) {
				t.Fatalf("%s: a period on, a's frame still on its way: the observer holds leases of epochs %v, want a's (100)", how, e)
			}
		}
		if comes {
			r.up.carry(r.now, heldMsgs, heldFrames)
			select {
			case <-r.relay.Prompt():
			default:
				t.Fatal("a's awaited frame is here and the relay did not prompt")
			}
			r.obs.lose = true // the frame's datagram is lost: only the Final brings it
			m, f := r.relay.Urgent()
			r.obs.carry(r.now, m, f)
			m, f = r.relay.Step()
			if !slices.ContainsFunc(m, func(m codec.Message) bool { fm, ok := m.(codec.Final); return ok && fm.Time == next }) {
				var types []codec.MessageType
				for _, m := range m {
					types = append(types, m.Type())
				}
				t.Fatalf("the hand-over's control %v carries no Final of a's frame of %d µs", types, next)
			}
			r.obs.carry(r.now, m, f)
		} else {
			for range handOverPeriods * r.relay.every {
				m, f := r.relay.Step()
				r.obs.carry(r.now, m, f)
			}
		}
		if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{101}) {
			t.Fatalf("%s: after the hand-over the observer holds leases of epochs %v, want b's (101)", how, e)
		}
		var last, first island.Time
		for _, c := range commits {
			if c.epoch == 100 {
				last = c.t
			}
			if c.epoch == 101 && first == 0 {
				first = c.t
			}
		}
		want := period
		if !comes {
			want = 2 * period
		}
		if first-last != want {
			t.Fatalf("%s: authority time from a's last frame (%d µs) to b's first (%d µs) %d µs, want %d", how, last, first, first-last, want)
		}
	}
}

// TestRelayHandOverOldFramesFirst: a's next two frames reach the relay
// after b's first state, which is a period after the second. The first,
// two periods before b's state, goes out at once, off the cadence, while
// b's lease waits on; the second then goes, and b's lease with its first
// state a Step later: the observer commits both of a's frames, then b's
// state a period after the second. When a stops handing the island on
// after its first frame went out (its standby saw b's frames through
// another front), b's lease goes at the next Step, and when that frame's
// datagram is lost, the Final ahead of the lease brings it.
func TestRelayHandOverOldFramesFirst(t *testing.T) {
	for _, stops := range []bool{false, true} {
		oldFramesFirst(t, stops)
	}
}

func oldFramesFirst(t *testing.T, stops bool) {
	var commits []epochCommit
	r, fn := handingBridge(t, &commits)
	// a's next two frames are sampled and stay on their way.
	var heldMsgs [][]codec.Message
	var heldFrames [][]*island.Frame
	var msgs []codec.Message
	for len(heldFrames) < 2 {
		r.now += 1_000_000 / scenario.StepHz
		m, frames := r.a.Step()
		msgs = append(msgs, m...)
		if len(frames) > 0 { // copies: the authority reuses its frames' storage
			var fs []*island.Frame
			for _, f := range frames {
				c := *f
				c.Members = slices.Clone(f.Members)
				fs = append(fs, &c)
			}
			heldMsgs, heldFrames = append(heldMsgs, msgs), append(heldFrames, fs)
			msgs = nil
		}
		m, f := r.relay.Step()
		r.obs.carry(r.now, m, f)
	}
	next, next2 := heldFrames[0][0].Time, heldFrames[1][0].Time
	// b claims the shard; its first state is a period after a's second.
	fn.handing[0] = Holding{Holder: "a", Epoch: 100}
	fn.fence[0] = Holding{Holder: "b", Epoch: 101}
	b, _ := scenario.NewShardAuthority(r.scs, 20, next2+1)
	_ = b.Gain(0, 101, nil)
	upB := newLink(t, 2, b.Period(), r.relay.Upstream("b").Hooks(receiver.Config{}))
	upB.carry(r.now, b.Control(), nil)
	urgent := func(what string) {
		t.Helper()
		select {
		case <-r.relay.Prompt():
		default:
			t.Fatalf("%s: the relay did not prompt", what)
		}
		m, f := r.relay.Urgent()
		r.obs.carry(r.now, m, f)
	}
	urgent("b's first state")
	lastOf := func(epoch uint32) (t island.Time) {
		for _, c := range commits {
			if c.epoch == epoch {
				t = c.t
			}
		}
		return t
	}
	r.up.carry(r.now, heldMsgs[0], heldFrames[0])
	r.obs.lose = stops
	urgent("a's first frame on its way")
	if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{100}) || lastOf(100) != next && !stops {
		t.Fatalf("a's frame of %d µs came, two periods before b's first state: the observer holds leases of epochs %v and a's frames up to %d µs, want a's lease (100) and that frame",
			next, e, lastOf(100))
	}
	last := next2
	if stops {
		delete(fn.handing, 0)
		last = next
	} else {
		r.up.carry(r.now, heldMsgs[1], heldFrames[1])
		urgent("a's second frame")
	}
	m, f := r.relay.Step()
	r.obs.carry(r.now, m, f)
	if e := leaseEpochs(r.obs.rx); !slices.Equal(e, []uint32{101}) {
		t.Fatalf("stops %v: after the hand-over the observer holds leases of epochs %v, want b's (101)", stops, e)
	}
	var first island.Time
	for _, c := range commits {
		if c.epoch == 101 {
			first = c.t
			break
		}
	}
	if got := lastOf(100); got != last || first-last != island.Time(b.Period()*(1+boolInt(stops))) {
		t.Fatalf("stops %v: a's last frame committed at %d µs (want %d), b's first at %d µs", stops, got, last, first)
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestRelayCountsFinalsSent: a Final the relay's cap on control waiting
// for a Step refuses is counted as refused, not as a Final sent.
func TestRelayCountsFinalsSent(t *testing.T) {
	fn := handingFence{fence: fence{0: {Holder: "a", Epoch: 100}}, handing: map[uint32]Holding{}}
	r := newOneShard(t, "bridge", fn, nil, receiver.Config{})
	r.untilHandedOut()
	fn.handing[0] = Holding{Holder: "a", Epoch: 100}
	fn.fence[0] = Holding{Holder: "b", Epoch: 101}
	rl := r.relay
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var id uint32
	for id = range rl.islands {
		break
	}
	l := codec.Lease{Island: id, Epoch: 101, Owner: 2}
	st := rl.stats
	rl.pendingBytes = maxPendingBytes
	rl.final("b", l)
	if rl.stats.Finals != st.Finals || rl.stats.Refused != st.Refused+1 {
		t.Fatalf("with no room for it: Finals %d → %d, Refused %d → %d; want the Final refused, not sent",
			st.Finals, rl.stats.Finals, st.Refused, rl.stats.Refused)
	}
	rl.pendingBytes = 0
	rl.final("b", l)
	if rl.stats.Finals != st.Finals+1 {
		t.Fatalf("with room: Finals %d → %d, want one more", st.Finals, rl.stats.Finals)
	}
}

// leaseEpochs returns the distinct epochs of the leases rx holds, sorted.
func leaseEpochs(rx *receiver.Receiver) []uint32 {
	var e []uint32
	for _, id := range rx.Islands() {
		if l, ok := rx.Lease(id); ok && !slices.Contains(e, l.Epoch) {
			e = append(e, l.Epoch)
		}
	}
	slices.Sort(e)
	return e
}

// TestSourceKeepsToTheClock: an authority whose steps fell behind the
// timeline's clock skips ahead to it before stepping, so its frames stay
// at the clock's instants; one within MaxLag steps keeps stepping as it
// is; and one whose next step's time the clock has not reached does not
// step — no frame is sampled ahead of the clock — though the changes
// queued still go out.
func TestSourceKeepsToTheClock(t *testing.T) {
	auth, _ := shardAuthority(t, "chain")
	clock := auth.Time() + 1_000_000/scenario.StepHz - 1 // just before the next step's time
	src := &shardSource{auth: auth, now: func() island.Time { return clock }}
	src.change(0, 1, true, nil)
	src.preparing.Wait()
	before := auth.Time()
	msgs, frames := src.Step()
	if auth.Time() != before || len(frames) != 0 || len(msgs) == 0 {
		t.Fatalf("ahead of the clock: the time moved %d µs, %d frames, %d control messages; want no step, the gain's announcement",
			auth.Time()-before, len(frames), len(msgs))
	}
	clock++ // the next step's time
	if _, frames := src.Step(); auth.Time() != clock || len(frames) == 0 {
		t.Fatalf("at the next step's time: time %d µs, want %d; %d frames", auth.Time(), clock, len(frames))
	}
	clock = auth.Time() + MaxLag*1_000_000/scenario.StepHz // within the lag: stepped as it is
	before = auth.Time()
	src.Step()
	if got := auth.Time() - before; got > 20_000 {
		t.Fatalf("within the lag the time moved %d µs in a step", got)
	}
	clock = auth.Time() + 1_000_000 // a second behind
	src.Step()
	if d := clock - auth.Time(); d < 0 || d > 1_000_000/scenario.StepHz {
		t.Fatalf("a second behind, one step later the time is %d µs from the clock", d)
	}
}

// TestRelayLateUplink: an authority whose frames reach the relay 0 to
// spread−1 Steps late, at random (seeded), against every phase of the
// relay's cadence. A frame that missed its broadcast goes out as soon as
// its island has gone a period without one, rather than at the next
// broadcast — by when a newer frame may have replaced it: the relay adds
// no wait to the uplink's own lateness (the observer goes at most a
// period and that lateness without a frame), and no frame is replaced
// before it went out, but for the island's first.
func TestRelayLateUplink(t *testing.T) {
	for spread := 1; spread <= 3; spread++ {
		for phase := range 3 {
			for seed := range uint64(3) {
				worst, st := lateUplink(t, spread, phase, seed)
				if worst > 3+spread-1 || st.Superseded > 1 {
					t.Errorf("lateness up to %d Steps, relay %d Steps ahead, seed %d: the observer went up to %d Steps without a frame; %d of %d frames replaced before they went out",
						spread-1, phase, seed, worst, st.Superseded, st.Frames+st.Superseded)
				}
			}
		}
	}
}

// lateUplink runs 6 s of the bridge through a relay stepped phase Steps
// ahead of the authority, each frame reaching it 0 to spread−1 Steps late;
// it returns the most Steps the observer went without a frame after the
// first second, and the relay's counters.
func lateUplink(t *testing.T, spread, phase int, seed uint64) (worst int, st RelayStats) {
	t.Helper()
	var at []int
	steps := 0
	r := newOneShard(t, "bridge", fence{0: {Holder: "a", Epoch: 100}}, nil,
		receiver.Config{OnCommit: func(*validator.Validated) { at = append(at, steps) }})
	for range phase {
		r.relay.Step()
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	type late struct {
		due int
		f   island.Frame
	}
	var queue []late
	for range 6 * scenario.StepHz {
		r.tick(func(now int64) {
			steps++
			msgs, frames := r.a.Step()
			for _, f := range frames {
				c := *f
				c.Members = slices.Clone(f.Members)
				queue = append(queue, late{due: steps + rng.IntN(spread), f: c})
			}
			var out []*island.Frame
			for len(queue) > 0 && queue[0].due <= steps {
				out = append(out, &queue[0].f)
				queue = queue[1:]
			}
			r.up.carry(now, msgs, out)
		})
	}
	for i := 1; i < len(at); i++ {
		if at[i-1] > scenario.StepHz {
			worst = max(worst, at[i]-at[i-1])
		}
	}
	return worst, r.relay.Stats()
}

// TestGainsStartTogether: shards gained one after another before the next
// step — a drain's, a crashed holder's — and prepared by then all send
// their first frames from that one step: a gain does not wait for a step
// to take it (if it did, this test would wait for ever). A loss, which
// waits, is taken by the next step.
func TestGainsStartTogether(t *testing.T) {
	auth, n := shardAuthority(t, "bridge,chain")
	src := &shardSource{auth: auth}
	src.step.Store(auth.Steps() + 1)
	never := make(chan struct{})
	src.change(0, 1, true, never)
	src.change(1, 1, true, never)
	src.preparing.Wait()
	_, frames := src.Step()
	shards := map[int]int{}
	for _, f := range frames {
		shards[scenario.ShardOf(f.Key.Island, n)]++
	}
	if len(shards) != 2 {
		t.Fatalf("the step after two gains sent frames of shards %v, want both", shards)
	}
	lost := make(chan struct{})
	go func() { src.change(0, 1, false, never); close(lost) }()
	for stepped := false; !stepped; {
		select {
		case <-lost:
			stepped = true
		default:
			src.Step() // the loss returns only once a step took it
		}
	}
	if got := auth.Shards(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after the loss the authority steps shards %v, want [1]", got)
	}
}

// TestGainAnnouncedAtOnce: a gain prompts the server, and Urgent takes it
// without a step — the shard's leases and spawns, at the time the
// authority stands at — so that they need not wait for the next step; the
// next step sends the shard's first frames.
func TestGainAnnouncedAtOnce(t *testing.T) {
	auth, n := shardAuthority(t, "bridge")
	src := &shardSource{auth: auth, prompt: make(chan struct{}, 1)}
	src.Step()
	at := auth.Time()
	src.change(0, 7, true, nil)
	src.preparing.Wait()
	select {
	case <-src.Prompt():
	default:
		t.Fatal("a gain did not prompt")
	}
	msgs, frames := src.Urgent()
	leases, spawns := 0, 0
	for _, m := range msgs {
		switch m := m.(type) {
		case codec.Lease:
			if m.Epoch == 7 && scenario.ShardOf(m.Island, n) == 0 {
				leases++
			}
		case codec.Spawn:
			if m.Time == at {
				spawns++
			}
		}
	}
	if leases == 0 || spawns != leases || len(frames) != 0 || auth.Time() != at {
		t.Fatalf("Urgent: %d leases, %d spawns at %d µs, %d frames; time %d, was %d", leases, spawns, at, len(frames), auth.Time(), at)
	}
	if _, frames := src.Step(); len(frames) == 0 {
		t.Fatal("the step after sent no first frames")
	}
}

// TestGainPreparedOffTheLoop: a gained shard's world is built on a
// goroutine of its own while the server's loop goes on stepping (if a step
// waited for it, this test would wait for ever); a loss queued behind the
// gain is not taken before it; once the world is ready the next step takes
// both, in order — the gain's leases go out, then the shard is lost — and
// the loss returns. (The preparation is held where it asks the standby for
// its states.)
func TestGainPreparedOffTheLoop(t *testing.T) {
	auth, _ := shardAuthority(t, "bridge")
	release, asked := make(chan struct{}), make(chan struct{}, 1)
	last := func(island.MemberID) (island.State, island.Time, bool) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release // the preparation is slow
		return island.State{}, 0, false
	}
	src := &shardSource{auth: auth, last: last, prompt: make(chan struct{}, 1)}
	src.Step()
	src.change(0, 3, true, nil)
	<-asked
	loss := &shardReq{shard: 0, epoch: 3, done: make(chan struct{})} // what change queues for a loss
	src.request(loss)
	lost := loss.done
	for range 5 {
		if _, frames := src.Step(); len(frames) != 0 {
			t.Fatalf("%d frames while the gained world is being built", len(frames))
		}
		if got := auth.Shards(); len(got) != 0 {
			t.Fatalf("stepping shards %v before the gain is ready", got)
		}
	}
	select {
	case <-lost:
		t.Fatal("the loss was taken before the gain queued ahead of it")
	default:
	}
	close(release)
	src.preparing.Wait()
	msgs, _ := src.Step()
	<-lost
	leases := 0
	for _, m := range msgs {
		if l, ok := m.(codec.Lease); ok && l.Epoch == 3 {
			leases++
		}
	}
	if leases == 0 {
		t.Fatal("the gain was not taken: no lease of its epoch went out")
	}
	if got := auth.Shards(); len(got) != 0 {
		t.Fatalf("after the gain and the loss, the authority steps shards %v", got)
	}
}

// TestReadyGainsGoFirst: of two shards gained together, the one whose
// world is ready starts while the other's is still being built — a drain
// hands its shards over each as soon as its own world is ready — and a
// loss of the slow shard, queued behind its gain, still waits for it.
func TestReadyGainsGoFirst(t *testing.T) {
	auth, n := shardAuthority(t, "bridge,chain")
	release, asked := make(chan struct{}), make(chan struct{}, 1)
	last := func(id island.MemberID) (island.State, island.Time, bool) {
		if scenario.ShardOf(uint32(id.Stable), n) == 0 {
			select {
			case asked <- struct{}{}:
			default:
			}
			<-release // shard 0's preparation is slow
		}
		return island.State{}, 0, false
	}
	src := &shardSource{auth: auth, last: last, prompt: make(chan struct{}, 1)}
	src.Step()
	src.change(0, 3, true, nil)
	<-asked
	src.change(1, 4, true, nil)
	loss := &shardReq{shard: 0, epoch: 3, done: make(chan struct{})} // what change queues for a loss
	src.request(loss)
	src.mu.Lock()
	ready := src.reqs[1].ready // shard 1's gain
	src.mu.Unlock()
	<-ready
	if _, frames := src.Step(); len(frames) == 0 {
		t.Fatal("shard 1's gain was not taken while shard 0's world was being built: no frames")
	}
	if got := auth.Shards(); !slices.Equal(got, []int{1}) {
		t.Fatalf("while shard 0's world is built the authority steps shards %v, want [1]", got)
	}
	select {
	case <-loss.done:
		t.Fatal("shard 0's loss was taken before its gain, queued ahead of it")
	default:
	}
	close(release)
	src.preparing.Wait()
	src.Step()
	<-loss.done
	if got := auth.Shards(); !slices.Equal(got, []int{1}) {
		t.Fatalf("after shard 0's gain and loss the authority steps shards %v, want [1]", got)
	}
}

// shardAuthority returns a shard authority of the named scenarios at 20 Hz,
// holding none, and how many shards it has.
func shardAuthority(t *testing.T, names string) (*scenario.Authority, int) {
	t.Helper()
	scs, err := scenario.Pick(names)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := scenario.NewShardAuthority(scs, 20, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	return auth, len(scs)
}
