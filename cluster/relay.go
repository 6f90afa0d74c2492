package cluster

import (
	"errors"
	"slices"
	"sync"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/validator"
)

// Fence says whether a lease or frame may be forwarded (Table.Admit), and
// whether frames of a lease already forwarded may still be while its
// holder hands the shard on (Table.Handing).
type Fence interface {
	Admit(shard uint32, holder string, epoch uint32) bool
	Handing(shard uint32, holder string, epoch uint32) bool
}

// RelayConfig sets a Relay up. Zero fields mean the documented defaults.
type RelayConfig struct {
	// Period is the broadcast period, µs: the relay hands out the newest
	// frame of each island once per period. Required.
	Period int64
	// StepRate is how many times per second Step is called. Zero means 60.
	StepRate int
	// ShardOf maps an island id to its shard. Required.
	ShardOf func(island uint32) uint32
	// Fence admits leases and frames. Required.
	Fence Fence
	// Control caps what the relay parses from upstream control streams
	// (the upstream receivers' limits). Zero fields mean the defaults.
	Control codec.ControlLimits
	// ForgetAfter is how long an island whose shard another member now
	// holds is kept, in Steps, waiting for the new holder to restate it;
	// then it is forgotten. Zero means two seconds of steps.
	ForgetAfter int
	// MaxIslands caps the islands the relay keeps. Zero means 65536.
	MaxIslands int
	// HandOff, if set, is called when an island's first frame under a new
	// holder or epoch is handed out, with how long after the old lease's
	// last frame (seconds, counted in Steps). Called from Step.
	HandOff func(island uint32, gap float64)
}

// RelayStats counts what a Relay did.
type RelayStats struct {
	Control       uint64 // control messages forwarded
	Frames        uint64 // frames handed out
	Superseded    uint64 // frames replaced by a newer one before they were handed out
	Late          uint64 // frames older than one of the same lease already held or handed out
	FencedLeases  uint64 // leases refused: not from the shard's holder, or below its epoch, for ForgetAfter Steps
	FencedControl uint64 // island messages refused: their island is not leased from that upstream
	FencedFrames  uint64 // frames refused: not under the forwarded lease, or no longer admitted
	Forgotten     uint64 // islands forgotten because their shard moved and the new holder did not restate them: after ForgetAfter, or at once when its manifests claim their members
	Refused       uint64 // control messages that did not parse, past MaxIslands, or past the bytes waiting for a Step
	Finals        uint64 // hand-overs whose old holder's last frame handed out went again, on the reliable stream, ahead of the new lease (codec.Final); one the cap on control waiting for a Step refused counts under Refused alone
}

// owned is what the relay forwards for one island: whose lease, and its
// newest frame.
type owned struct {
	holder   string
	epoch    uint32
	owner    island.SenderID
	frame    island.Frame
	fresh    bool  // frame not handed out yet
	has      bool  // frame holds a frame
	orphan   int   // Steps since the shard stopped admitting this lease
	lastOut  int64 // the Step that handed out the island's last frame; 0 none
	prevOut  int64 // lastOut under the lease before this one; 0 none
	shard    uint32
	firstAt  int64             // the first Step that may hand out a frame of this lease
	handNow  bool              // frame goes out this Step, off the cadence: the last before a hand-over
	awaited  bool              // a new holder's first frame waits for this holder's next frame (parked.behind)
	members  []island.Member   // frame's members
	sent     []island.Member   // the members of the frame handed out last
	sentTime island.Time       // its authority time
	sentSeg  uint32            // its segment
	manifest []island.MemberID // the members its last manifest forwarded lists
}

// parkKey names a lease waiting for the fence: whose, which island.
type parkKey struct {
	holder string
	island uint32
}

// parked is a lease the fence did not admit yet, with the island's
// messages that came after it from the same upstream, in order. A front
// may hear an authority's lease before its etcd watch shows the claim
// behind it; the lease waits (ForgetAfter Steps at most) rather than being
// lost, since the authority will not say it again.
//
// An admitted lease waits too while the island's previous holder still
// hands it on (the fence's hand-off record) and the new holder has sent no
// frame under it: forwarding it would end the old holder's frames at the
// observers before the new holder has any (make before break). It goes
// with the new holder's first frame, or after handOverPeriods.
type parked struct {
	lease  codec.Lease
	msgs   []codec.Message // the island's messages after the lease, in order
	bytes  int
	age    int   // Steps parked unadmitted
	waited int64 // Steps parked admitted, for the previous holder's hand-off
	// first is the new holder's newest frame under the lease, when ready:
	// it came while the previous holder still hands the island on; the
	// next Step releases the lease and makes it the island's frame, to go
	// a Step after the lease (hand).
	first   island.Frame
	members []island.Member // first's members
	ready   bool
	// behind counts the Steps first has waited for the previous holder's
	// frames to reach a period before it: handing over sooner would leave
	// observers without a sample of the island between the two (unpark).
	behind int64
}

// maxParkedBytes caps the bytes of messages parked behind one lease, and
// maxPendingBytes those waiting for the next Step.
const (
	maxParkedBytes  = 4 << 20
	maxPendingBytes = 64 << 20
)

// handOverPeriods bounds, in broadcast periods, how long an admitted lease
// waits for its holder's first frame while the previous holder hands the
// island on, and then how long it waits for the previous holder's frames
// to come within a period of its holder's.
const handOverPeriods = 4

// A Relay is a front's source: it takes the control streams and committed
// frames of every upstream authority (each through its own receiver,
// Upstream.Hooks), forwards only what the fence admits — a lease from the
// shard's holder at or above its epoch, then the island's messages and
// frames under that lease — and hands out, once per broadcast period, the
// newest frame of each island that has a new one. A frame that comes late
// — its island's last went a period ago or more — goes at the next Step
// instead of the next broadcast, by when a newer one might have replaced
// it: the relay adds no wait of its own to an uplink's jitter and loses no
// frame to it. A hand-over keeps the same bound: the old holder's last
// frame, the new holder's lease and that holder's first frame follow one
// another within a period, and their authority times are no more than a
// period apart while the old holder's frames keep coming (the relay hands
// them out as they come and waits handOverPeriods at most for one within
// a period of the new holder's); the old holder's last frame goes again,
// as a Final, just before the new lease. The lease goes in the
// same Step as the frame it admits: control and datagrams travel apart,
// and an observer holds a datagram that came before the lease it needs
// until the lease arrives (receiver.Config.MaxParked), so the frame waits
// no Step for it. It implements transport.Source. Safe for concurrent
// use: upstreams feed it from their own goroutines while the server steps
// it.
type Relay struct {
	cfg   RelayConfig
	every int64 // Steps per broadcast

	mu           sync.Mutex
	steps        int64
	pending      []codec.Message // control messages to forward, in arrival order
	pendingBytes int
	firstDue     bool      // an island's first frame under its lease waits, or a hand-over's last
	handAfter    []parkKey // leases to release once this Step's frames are out
	nextDue      int64     // the first Step at which a fresh frame has waited a period since its island's last; 0 none
	islands      map[uint32]*owned
	memberOf     map[island.MemberID]uint32 // each member's island, as the manifests forwarded list it
	parked       map[parkKey]*parked
	stats        RelayStats
	prompt       chan struct{} // a new holder's first frame waits: hand it over at once (Urgent)

	// Step's (or Urgent's) output, valid until the next call of either.
	msgs   []codec.Message
	frames []island.Frame
	out    []*island.Frame
	order  []uint32
}

// NewRelay makes a relay.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Period <= 0 || cfg.ShardOf == nil || cfg.Fence == nil {
		return nil, errors.New("cluster: RelayConfig needs Period, ShardOf and Fence")
	}
	if cfg.StepRate <= 0 {
		cfg.StepRate = 60
	}
	if cfg.ForgetAfter <= 0 {
		cfg.ForgetAfter = 2 * cfg.StepRate
	}
	if cfg.MaxIslands <= 0 {
		cfg.MaxIslands = 1 << 16
	}
	cfg.Control = cfg.Control.WithDefaults()
	every := max(cfg.Period*int64(cfg.StepRate)/1_000_000, 1)
	return &Relay{cfg: cfg, every: every, islands: map[uint32]*owned{}, parked: map[parkKey]*parked{},
		memberOf: map[island.MemberID]uint32{}, prompt: make(chan struct{}, 1)}, nil
}

// Prompt receives when a new holder's first frame waits for its hand-over
// (transport.Prompter).
func (r *Relay) Prompt() <-chan struct{} { return r.prompt }

// Urgent hands over, between two Steps, the islands whose new holder's
// first frame is here (transport.Prompter): what the next Step would hand
// over, without its broadcast or its count. The control forwarded since
// the last Step goes with it. Both results stay valid until the next Step
// or Urgent.
func (r *Relay) Urgent() ([]codec.Message, []*island.Frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.step(true)
}

// promptNow asks the server for an Urgent call; mu held.
func (r *Relay) promptNow() {
	select {
	case r.prompt <- struct{}{}:
	default:
	}
}

// Period returns the broadcast period, µs.
func (r *Relay) Period() int64 { return r.cfg.Period }

// Stats returns the relay's counters.
func (r *Relay) Stats() RelayStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Upstream is one authority's stream into the relay.
type Upstream struct {
	r      *Relay
	holder string
}

// Upstream returns the stream of the authority named holder (its member
// name, which the fence checks).
func (r *Relay) Upstream(holder string) *Upstream { return &Upstream{r: r, holder: holder} }

// Hooks returns cfg with its OnControl and OnCommit set to feed the relay:
// the receiver configuration of the connection to this authority.
func (u *Upstream) Hooks(cfg receiver.Config) receiver.Config {
	cfg.OnControl = u.Control
	cfg.OnCommit = u.Commit
	return cfg
}

// Control takes one control message the upstream's receiver applied.
func (u *Upstream) Control(raw []byte) {
	r := u.r
	// Parsed once, from a copy the relay owns: the message may point into
	// it, and it is kept until a Step hands it out.
	m, _, err := codec.ParseControl(slices.Clone(raw), &r.cfg.Control)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.stats.Refused++
		return
	}
	var id uint32
	switch m := m.(type) {
	case codec.Welcome:
		return // the front says its own
	case codec.Lease:
		key := parkKey{u.holder, m.Island}
		delete(r.parked, key) // a newer lease of ours replaces a waiting one
		admitted := r.cfg.Fence.Admit(r.cfg.ShardOf(m.Island), u.holder, m.Epoch)
		if !admitted || r.handingOver(u.holder, m) {
			if len(r.parked) < r.cfg.MaxIslands {
				r.parked[key] = &parked{lease: m, bytes: len(raw)}
				return
			}
			if !admitted {
				r.stats.FencedLeases++
				return
			}
			// No room to wait for the first frame: break before make.
		}
		r.lease(u.holder, m)
		return
	case codec.Manifest:
		id = m.Island
	case codec.Physics:
		id = m.Island
	case codec.Spawn:
		id = m.Island
	case codec.Cut:
		id = m.Island
	case codec.Forget:
		id = m.Island
	default: // identities, and what concerns no one island
		r.forward(m)
		return
	}
	if p := r.parked[parkKey{u.holder, id}]; p != nil {
		if p.bytes+len(raw) > maxParkedBytes {
			delete(r.parked, parkKey{u.holder, id})
			r.stats.FencedLeases++
			return
		}
		p.msgs = append(p.msgs, m)
		p.bytes += len(raw)
		return
	}
	o := r.islands[id]
	if o == nil || o.holder != u.holder {
		r.stats.FencedControl++
		return
	}
	var first island.Time
	if o.has {
		first = o.frame.Time
	}
	r.pass(u.holder, id, m, first)
}

// maxMembers caps the members the relay follows through manifests; past
// it, it stops taking new ones (stale islands then go only by ForgetAfter).
const maxMembers = 1 << 20

// pass forwards one message about island id from holder, which holds its
// forwarded lease; mu held. first bounds when id may show the bodies m
// lists under that lease: the authority time of its first state (Spawn or
// first frame) when m waited here with the lease, else of its newest frame
// here; 0 when there is none yet.
//
// A manifest that lists a member of an island another holder still has
// here — one its new holder did not restate, say the half of a bridge that
// broke off under the old holder — forgets that island first: two islands
// would otherwise place the same bodies, and an observer show one of them
// torn. The island ends at its last frame here, or at first when that is
// earlier: while the old holder hands the shard on it steps on, and its
// frames can reach past the new holder's first (their step clocks differ
// by a step or more). An island whose lease this holder has waiting here
// is restated by that lease, and neither are the holder's own islands
// touched: it restructures them in order.
func (r *Relay) pass(holder string, id uint32, m codec.Message, first island.Time) {
	switch m := m.(type) {
	case codec.Forget:
		r.drop(id)
	case codec.Manifest:
		for _, mid := range m.Members {
			prev, ok := r.memberOf[mid]
			if !ok || prev == id {
				continue
			}
			if _, restated := r.parked[parkKey{holder, prev}]; restated {
				continue
			}
			if p := r.islands[prev]; p != nil && p.holder != holder {
				var t island.Time
				if p.has {
					t = p.frame.Time
				}
				if first != 0 && (t == 0 || first < t) {
					t = first
				}
				r.forward(codec.Forget{Island: prev, Time: t})
				r.drop(prev)
				r.stats.Forgotten++
			}
		}
		if o := r.islands[id]; o != nil {
			for _, mid := range o.manifest {
				if r.memberOf[mid] == id {
					delete(r.memberOf, mid)
				}
			}
			o.manifest = append(o.manifest[:0], m.Members...)
			if len(r.memberOf)+len(m.Members) <= maxMembers {
				for _, mid := range m.Members {
					r.memberOf[mid] = id
				}
			}
		}
	}
	r.forward(m)
}

// drop forgets island id here, with the members its manifest listed; mu
// held.
func (r *Relay) drop(id uint32) {
	if o := r.islands[id]; o != nil {
		for _, mid := range o.manifest {
			if r.memberOf[mid] == id {
				delete(r.memberOf, mid)
			}
		}
		delete(r.islands, id)
	}
}

// lease takes an admitted lease of holder's and forwards it; mu held.
func (r *Relay) lease(holder string, m codec.Lease) bool {
	o := r.islands[m.Island]
	if o == nil {
		if len(r.islands) >= r.cfg.MaxIslands {
			r.stats.Refused++
			return false
		}
		o = &owned{}
		r.islands[m.Island] = o
	}
	if o.holder != holder || o.epoch != m.Epoch {
		o.has, o.fresh = false, false // frames of the old lease are done
		if o.lastOut != 0 {
			o.prevOut, o.lastOut = o.lastOut, 0
		}
	}
	o.holder, o.epoch, o.owner, o.shard, o.orphan = holder, m.Epoch, m.Owner, r.cfg.ShardOf(m.Island), 0
	r.forward(m)
	return true
}

// handingOver reports whether an admitted lease of holder's should wait
// for its first frame: the island's frames here are another holder's,
// handed out already, and that holder still hands the shard on; mu held.
func (r *Relay) handingOver(holder string, l codec.Lease) bool {
	o := r.islands[l.Island]
	return o != nil && o.holder != holder && o.lastOut != 0 && r.cfg.Fence.Handing(o.shard, o.holder, o.epoch)
}

// release forwards a parked lease, then the island's messages that waited
// behind it; mu held.
func (r *Relay) release(k parkKey, p *parked) {
	delete(r.parked, k)
	r.final(k.holder, p.lease)
	if r.lease(k.holder, p.lease) {
		var first island.Time // the lease's first state: its Spawn's or first frame's
		if p.ready {
			first = p.first.Time
		}
		for _, m := range p.msgs {
			if sp, ok := m.(codec.Spawn); ok && (first == 0 || sp.Time < first) {
				first = sp.Time
			}
		}
		for _, m := range p.msgs {
			r.pass(k.holder, k.island, m, first)
		}
	}
}

// unpark forwards the parked leases the fence admits now, each followed by
// its island's messages — unless the island's previous holder still hands
// it on and the wait for the new holder's first frame is not over — and
// drops those the fence did not admit for too long; mu held. A lease whose
// holder's first frame is here goes now, with that frame — but when the
// previous holder's own frame waits to go out, that frame goes this Step,
// off the cadence, and the lease and the new holder's frame at the next
// (handAfter): an observer refuses the old holder's frame once it holds
// the new lease, so the two must not race. count: a Step, which the waits
// count in (Urgent calls do not).
func (r *Relay) unpark(count bool) {
	for k, p := range r.parked {
		switch {
		case r.cfg.Fence.Admit(r.cfg.ShardOf(k.island), k.holder, p.lease.Epoch):
			if p.ready {
				if o := r.islands[k.island]; o != nil && r.handingOver(k.holder, p.lease) {
					switch {
					case p.first.Time-o.frame.Time > island.Time(r.cfg.Period) && p.behind < handOverPeriods*r.every:
						// The previous holder's newest frame here is more
						// than a period before the new holder's: its next
						// frames go first, off the cadence as they come,
						// until one is within a period of the new
						// holder's newest, and the island skips no sample
						// (a loaded machine delays one holder's frames
						// more than the other's). They are waited for
						// handOverPeriods at most, while that holder still
						// steps the island on.
						if count {
							p.behind++
						}
						if o.fresh {
							o.handNow, r.firstDue = true, true
						}
						if p.behind < handOverPeriods*r.every {
							o.awaited = true
							continue
						}
						if o.fresh {
							r.handAfter = append(r.handAfter, k)
							continue
						}
					case o.fresh:
						o.handNow, r.firstDue = true, true
						r.handAfter = append(r.handAfter, k)
						continue
					}
				}
				r.hand(k, p, r.steps)
				continue
			}
			if p.waited < handOverPeriods*r.every && r.handingOver(k.holder, p.lease) {
				if count {
					p.waited++
				}
				continue
			}
			r.release(k, p)
		case p.age >= r.cfg.ForgetAfter:
			delete(r.parked, k)
			r.stats.FencedLeases++
		case count:
			p.age++
		}
	}
}

// final forwards, ahead of lease l of holder's, a Final of the frame the
// island's previous holder had handed out last, when it went out within
// the last broadcast period, or that holder still hands the island on:
// observers may receive that frame's datagram after the lease, and refuse
// it then; the Final, on the reliable stream, comes before. (The previous
// holder may stop handing the island on between its last frame and the
// lease: it stops once its standby, an observer of some front, saw the
// next holder's frames.) mu held.
func (r *Relay) final(holder string, l codec.Lease) {
	o := r.islands[l.Island]
	if o == nil || len(o.sent) == 0 || o.holder == holder && o.epoch == l.Epoch ||
		!(o.lastOut != 0 && r.steps-o.lastOut <= r.every || r.handingOver(holder, l)) {
		return
	}
	if r.forward(codec.Final{Island: l.Island, Time: o.sentTime, Segment: o.sentSeg, Members: slices.Clone(o.sent)}) {
		r.stats.Finals++
	}
}

// hand releases a parked lease whose holder's first frame is here, and
// makes that frame the island's, to go out at Step at; mu held.
func (r *Relay) hand(k parkKey, p *parked, at int64) {
	r.release(k, p)
	o := r.islands[k.island]
	if o == nil || o.holder != k.holder || o.epoch != p.lease.Epoch {
		r.stats.FencedFrames++
		return
	}
	o.awaited = false
	o.members = append(o.members[:0], p.members...)
	o.frame = p.first
	o.frame.Members = o.members
	o.has, o.fresh, o.firstAt = true, true, at
	r.firstDue = true
}

// forward queues m for the next Step and reports whether it did; mu held.
func (r *Relay) forward(m codec.Message) bool {
	if r.pendingBytes+m.Size() > maxPendingBytes {
		// Nobody steps the relay, or an authority floods it: refuse (and
		// count) rather than grow without bound.
		r.stats.Refused++
		return false
	}
	r.pending = append(r.pending, m)
	r.pendingBytes += m.Size()
	r.stats.Control++
	return true
}

// Commit takes one frame the upstream's receiver committed.
func (u *Upstream) Commit(f *validator.Validated) {
	r := u.r
	k := f.Key()
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.islands[k.Island]
	if o == nil || o.holder != u.holder || o.epoch != k.Epoch {
		// The first frame of a lease that waits for one while the previous
		// holder hands the island on, or for the fence: the lease and this
		// frame go together, at once (an observer holds a frame whose lease
		// has not come yet: receiver.Config.MaxParked).
		pk := parkKey{u.holder, k.Island}
		p := r.parked[pk]
		if p == nil || p.lease.Epoch != k.Epoch || !r.cfg.Fence.Admit(r.cfg.ShardOf(k.Island), u.holder, k.Epoch) {
			r.stats.FencedFrames++
			return
		}
		if r.handingOver(u.holder, p.lease) {
			// The previous holder's frames still come: the next Step
			// decides whether one of them goes out before the lease.
			if p.ready && f.Time() <= p.first.Time {
				r.stats.Late++
				return
			}
			if p.ready {
				r.stats.Superseded++
			}
			p.first, p.members = frameOf(f, p.lease.Owner, p.members)
			p.ready = true
			r.promptNow()
			return
		}
		r.release(pk, p)
		if o = r.islands[k.Island]; o == nil || o.holder != u.holder || o.epoch != k.Epoch {
			r.stats.FencedFrames++
			return
		}
		o.firstAt = r.steps
	}
	if o.has && f.Time() <= o.frame.Time {
		// Reordered on the uplink: a newer frame of this lease is held or
		// was handed out already.
		r.stats.Late++
		return
	}
	if o.fresh {
		r.stats.Superseded++
	}
	o.frame, o.members = frameOf(f, o.owner, o.members)
	o.has, o.fresh = true, true
	if o.awaited {
		// A new holder's first frame waited for this one: both go now.
		o.awaited = false
		r.promptNow()
	}
	switch {
	case o.lastOut == 0:
		// An island's first frame under its lease — a new holder's, after
		// a crash or on the way in — goes at once, between Steps.
		r.firstDue = true
		r.promptNow()
	case r.nextDue == 0 || o.lastOut+r.every < r.nextDue:
		r.nextDue = o.lastOut + r.every
	}
}

// frameOf copies a committed frame, sent by sender, into members' storage.
func frameOf(f *validator.Validated, sender island.SenderID, members []island.Member) (island.Frame, []island.Member) {
	members = members[:0]
	for i := range f.Len() {
		members = append(members, island.Member{ID: f.ID(i), State: f.State(i)})
	}
	return island.Frame{Sender: sender, Key: f.Key(), Time: f.Time(), Segment: f.Segment(), Flags: f.Flags(), Members: members}, members
}

// Step hands out the control messages forwarded since the last Step, in
// order, and — once per broadcast period — the newest frame of every
// island that has a new one and is still admitted; an island's first frame
// under a new lease goes at the first Step after it arrived. An island whose shard
// another member holds now, and that its new holder did not restate
// within ForgetAfter Steps, is forgotten. Both results stay valid until
// the next Step or Urgent.
func (r *Relay) Step() ([]codec.Message, []*island.Frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.step(false)
}

// step is Step, or Urgent: a call between Steps that neither counts as one
// nor broadcasts, and hands out only first frames under new leases; mu
// held.
func (r *Relay) step(urgent bool) ([]codec.Message, []*island.Frame) {
	if !urgent {
		r.steps++
	}
	r.unpark(!urgent)
	r.msgs = append(r.msgs[:0], r.pending...)
	clear(r.pending)
	r.pending, r.pendingBytes = r.pending[:0], 0
	r.out = r.out[:0]
	// Off the cadence only an island's first frame under a new lease goes
	// (a hand-off shows as soon as the new holder's first frame is here),
	// the previous holder's last before it, and a frame of an island whose
	// last went a whole period ago (it came late, or its island left the
	// cadence with an off-cadence frame): no island goes more than a period
	// without a frame when it has one. Every other frame waits for the
	// next broadcast.
	onCadence := !urgent && r.steps%r.every == 0
	due := r.nextDue != 0 && r.steps >= r.nextDue
	if !onCadence && !r.firstDue && !due {
		return r.msgs, r.out
	}
	r.firstDue, r.nextDue = false, 0
	r.order = r.order[:0]
	for id := range r.islands {
		r.order = append(r.order, id)
	}
	slices.Sort(r.order)
	r.frames = slices.Grow(r.frames[:0], len(r.order))[:0]
	for _, id := range r.order {
		o := r.islands[id]
		if !onCadence && !(o.fresh && (o.lastOut == 0 || o.handNow || r.steps-o.lastOut >= r.every)) {
			if o.fresh && o.lastOut != 0 && (r.nextDue == 0 || o.lastOut+r.every < r.nextDue) {
				r.nextDue = o.lastOut + r.every
			}
			continue
		}
		o.handNow = false
		if r.steps < o.firstAt {
			r.firstDue = true // its lease goes out first
			continue
		}
		// While the holder hands the shard on, its frames go on until the
		// next holder's lease replaces it here, with that holder's first
		// frame: observers see no gap while the shard changes hands.
		if !r.cfg.Fence.Admit(o.shard, o.holder, o.epoch) && !r.cfg.Fence.Handing(o.shard, o.holder, o.epoch) {
			if urgent {
				continue // orphans are counted in Steps
			}
			o.orphan += int(r.every)
			if o.fresh {
				r.stats.FencedFrames++
				o.fresh = false
			}
			if o.orphan >= r.cfg.ForgetAfter {
				var t island.Time
				if o.has {
					t = o.frame.Time
				}
				r.msgs = append(r.msgs, codec.Forget{Island: id, Time: t})
				r.drop(id)
				r.stats.Forgotten++
			}
			continue
		}
		o.orphan = 0
		if !o.fresh {
			continue
		}
		o.fresh = false
		if o.lastOut == 0 && o.prevOut != 0 && r.cfg.HandOff != nil {
			r.cfg.HandOff(id, float64(r.steps-o.prevOut)/float64(r.cfg.StepRate))
		}
		o.lastOut = r.steps
		f := o.frame
		o.sent = append(o.sent[:0], o.members...)
		o.sentTime, o.sentSeg = f.Time, f.Segment
		f.Members = o.sent
		r.frames = append(r.frames, f)
		r.stats.Frames++
	}
	for i := range r.frames {
		r.out = append(r.out, &r.frames[i])
	}
	// The leases whose previous holder's last frame just went: each goes
	// at the next Step with its holder's first frame.
	for _, k := range r.handAfter {
		if p := r.parked[k]; p != nil {
			r.hand(k, p, r.steps+1)
		}
	}
	r.handAfter = r.handAfter[:0]
	return r.msgs, r.out
}
