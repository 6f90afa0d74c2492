package cluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/transport"
	"github.com/islandsync/islandsync/validator"
)

// NodeConfig sets up one process of a world: an authority (RunAuthority)
// or a front (RunFront). Zero fields mean the documented defaults.
type NodeConfig struct {
	// Client reaches etcd. Required.
	Client *clientv3.Client
	// Prefix is the world's key prefix. Empty means DefaultPrefix.
	Prefix string
	// Name is the member's name in the world. Required.
	Name string
	// TTL is the member's etcd lease (Config.TTL). Zero means DefaultTTL.
	TTL time.Duration
	// Scenarios are the world's shards, in order: every process of one
	// world must list the same. Required.
	Scenarios []scenario.Scenario
	// Hz is the broadcast rate per island. Zero means 20.
	Hz int
	// Server configures the QUIC server the node serves on: an
	// authority's fronts connect to it, a front's observers do. Its
	// Timeline is the world's; its StepRate scenario.StepHz.
	Server transport.ServerConfig
	// Advertise is the address registered for others to dial. Empty means
	// the server's own (Server.Listen as bound).
	Advertise string
	// Fingerprint is the SHA-256 of the server certificate, hex: it is
	// registered beside the address, and whoever dials the node pins it.
	// Required.
	Fingerprint string
	// Dial makes an authority accept no connections (a player's client,
	// a worker behind NAT): it dials every registered front's uplink port
	// instead and serves each front over the connection it dialled
	// (transport.Server.Uplink), presenting its server certificate. It
	// registers "-" as its address. Server.Listen, empty, then means ":0".
	Dial bool
	// UplinkListen, for a front, opens an uplink port at this UDP address
	// for authorities started with Dial; it admits exactly the
	// certificates registered authorities hold. Empty means no uplink
	// port: the front dials every authority.
	UplinkListen string
	// UplinkAdvertise is the uplink address registered for authorities
	// to dial. Empty means the port as bound.
	UplinkAdvertise string
	// MaxUplinks caps a front's uplinks open at once
	// (transport.UplinkConfig.MaxUplinks). Zero means 64.
	MaxUplinks int
	// Logger receives structured logs. Nil means slog.Default().
	Logger *slog.Logger
	// Ready, if set, is called once the node is serving and registered,
	// with its server.
	Ready func(*transport.Server)
	// Registry, if set, receives the node's cluster metrics: an
	// authority's shards held and shard changes; a front's relayed frames,
	// fenced leases, messages and frames, forgotten islands and hand-off
	// gaps.
	Registry prometheus.Registerer
}

func (c *NodeConfig) defaults() error {
	if c.Client == nil || c.Name == "" || len(c.Scenarios) == 0 || c.Fingerprint == "" {
		return errors.New("cluster: NodeConfig needs Client, Name, Scenarios and Fingerprint")
	}
	if c.Hz == 0 {
		c.Hz = 20
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Server.StepRate = scenario.StepHz
	c.Server.Logger = c.Logger
	if (c.Dial || c.UplinkListen != "") && (c.Server.TLS == nil || len(c.Server.TLS.Certificates) == 0) {
		return errors.New("cluster: an uplink needs the certificate in Server.TLS.Certificates")
	}
	return nil
}

// cert is the node's certificate, which its uplinks present.
func (c *NodeConfig) cert() tls.Certificate { return c.Server.TLS.Certificates[0] }

func (c *NodeConfig) advertise(srv *transport.Server) string {
	if c.Advertise != "" {
		return c.Advertise
	}
	return srv.Addr().String()
}

func (c *NodeConfig) shards() []uint32 {
	out := make([]uint32, len(c.Scenarios))
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// standby keeps the newest state of every member the world's front sends
// this authority, so that a shard it gains continues from where its
// previous holder left it rather than from the scenario's beginning.
type standby struct {
	mu      sync.Mutex
	states  map[island.MemberID]lastSeen
	seen    map[uint32]bool // islands with a frame kept, until ready
	ready   chan struct{}   // closed once every island the front announced has a frame kept
	shardOf func(island uint32) uint32
	epochs  map[uint32]uint32 // shard → the newest epoch of a frame of it kept
	islands map[uint32]uint32 // island → the newest epoch of a frame of it kept, while the receiver knows the island
	newer   chan struct{}     // closed when epochs or islands change
}

func newStandby(shardOf func(uint32) uint32) *standby {
	return &standby{states: map[island.MemberID]lastSeen{}, seen: map[uint32]bool{}, ready: make(chan struct{}),
		shardOf: shardOf, epochs: map[uint32]uint32{}, islands: map[uint32]uint32{}, newer: make(chan struct{})}
}

// shown waits until the front has shown frames of shard at epoch or later
// — of every island of it the standby knows — or until timeout or stop.
// A front hands each island over on its own, when the previous holder's
// frames of it have come close enough in time to the next holder's
// (Relay), so the previous holder steps the shard on until the last of
// its islands has changed hands.
func (s *standby) shown(shard, epoch uint32, timeout <-chan time.Time, stop <-chan struct{}) {
	for {
		s.mu.Lock()
		done, newer := s.handedOn(shard, epoch), s.newer
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-newer:
		case <-timeout:
			return
		case <-stop:
			return
		}
	}
}

// handedOn reports whether the front has shown frames of shard at epoch
// or later, of every island of it the standby knows; mu held.
func (s *standby) handedOn(shard, epoch uint32) bool {
	if s.epochs[shard] < epoch {
		return false
	}
	for id, e := range s.islands {
		if e < epoch && s.shardOf != nil && s.shardOf(id) == shard {
			return false
		}
	}
	return true
}

// maxStandby caps the members a standby keeps; past it, it starts over.
const maxStandby = 1 << 20

func (s *standby) commit(f *validator.Validated) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.states)+f.Len() > maxStandby {
		clear(s.states)
		clear(s.islands)
	}
	for i := range f.Len() {
		s.states[f.ID(i)] = lastSeen{f.State(i), f.Time()}
	}
	s.saw(f.Key())
	if s.seen != nil {
		s.seen[f.Key().Island] = true
	}
}

// tick forgets the islands the receiver no longer knows, and closes ready
// once every island it knows has a frame kept.
func (s *standby) tick(tk *transport.Tick) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := tk.Receiver.Islands()
	s.known(ids)
	if s.seen == nil {
		return
	}
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		if !s.seen[id] {
			return
		}
	}
	s.seen = nil
	close(s.ready)
}

// saw takes the key of a frame kept, and tells shown when its island's or
// shard's newest epoch moved on; mu held.
func (s *standby) saw(k island.Key) {
	changed := false
	if e, ok := s.islands[k.Island]; !ok || k.Epoch > e {
		s.islands[k.Island], changed = k.Epoch, true // as many as the members kept, at most
	}
	if s.shardOf != nil && k.Epoch > s.epochs[s.shardOf(k.Island)] {
		s.epochs[s.shardOf(k.Island)], changed = k.Epoch, true // shards are capped: MaxShards
	}
	if changed {
		close(s.newer)
		s.newer = make(chan struct{})
	}
}

// known forgets the islands not in ids (sorted), which the receiver no
// longer knows — a forgotten island's last holder will send it no more —
// and tells shown; mu held.
func (s *standby) known(ids []uint32) {
	gone := false
	for id := range s.islands {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			delete(s.islands, id)
			gone = true
		}
	}
	if gone {
		close(s.newer)
		s.newer = make(chan struct{})
	}
}

// lastSeen is a body's newest state the standby committed, and the
// authority time of its frame.
type lastSeen struct {
	st island.State
	at island.Time
}

// last is the standby's scenario.Continue: a body's newest state and when.
func (s *standby) last(id island.MemberID) (island.State, island.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.states[id]
	return o.st, o.at, ok
}

// follow keeps the standby fed from one registered front (the first by
// name), as an observer of the whole world, until ctx ends.
func (s *standby) follow(ctx context.Context, tb *Table, log *slog.Logger) {
	for ctx.Err() == nil {
		changed := tb.Changed()
		fronts := tb.Members(Front)
		if len(fronts) == 0 {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		v, _ := tb.Addr(Front, fronts[0])
		reg, ok := parseRegistered(v)
		tlsc, err := transport.ClientTLS(reg.fingerprint, "", nil)
		if ok && err == nil {
			w, err := transport.NewWatcher(transport.WatchConfig{Addr: reg.addr, TLS: tlsc, Subscribe: codec.Subscribe{All: true},
				RenderRate: 4, Logger: log, Receiver: receiver.Config{OnCommit: s.commit, StraightExtrapolation: true}})
			if err == nil {
				err = w.Run(ctx, s.tick)
			}
			if ctx.Err() == nil {
				log.Info("standby: front lost", "front", fronts[0], "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// shardSource is an authority's transport.Source: a shard authority whose
// shards Serve's hooks change between steps.
type shardSource struct {
	auth      *scenario.Authority
	last      scenario.Continue  // the standby's
	now       func() island.Time // the timeline's clock, µs; nil: steps alone keep the time
	mu        sync.Mutex
	reqs      []*shardReq
	prompt    chan struct{}       // a change waits: the server takes it at once (Urgent)
	taken     func(time.Duration) // told, for each gain taken up, how long after its request; nil: nobody
	step      atomic.Int64        // the authority's timeline step + 1, for the gains prepared meanwhile; 0: not known yet (a gain is then built where it is taken)
	preparing sync.WaitGroup      // gains whose worlds are being prepared
}

type shardReq struct {
	shard uint32
	epoch uint32
	gain  bool
	at    time.Time // when it was requested
	done  chan struct{}
	// A gain's world, prepared on a goroutine of its own (nil when the
	// preparation failed: the gain then builds it where it is taken);
	// ready is closed once it is set.
	prepared *scenario.Prepared
	ready    chan struct{}
}

func (s *shardSource) request(r *shardReq) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
	s.poke()
}

// poke tells the server that a change waits.
func (s *shardSource) poke() {
	select {
	case s.prompt <- struct{}{}:
	default:
	}
}

// change hands a shard gained or lost to the server, which takes every
// change queued, in order, between two steps (Urgent) or at the next step.
// A loss waits until it was taken (or stopped is closed): from then on the
// shard's frames have stopped. A gain does not wait: its world is built
// and caught up to the authority's time on a goroutine of its own
// (scenario.Authority.Prepare) — the server's loop goes on stepping the
// other shards meanwhile, and the shards gained together, a drain's or a
// crashed holder's, are built side by side rather than one after another
// on the loop — and the server takes it up as soon as it is ready, with
// the changes of its shard queued behind it (those of other shards do not
// wait for it); its announcement (leases, manifests, the islands' spawns)
// goes out at once, and its first frames at the next step.
func (s *shardSource) change(shard, epoch uint32, gain bool, stopped <-chan struct{}) {
	r := &shardReq{shard: shard, epoch: epoch, gain: gain, at: time.Now(), done: make(chan struct{})}
	if gain {
		r.ready = make(chan struct{})
		s.preparing.Add(1)
		go func() {
			defer s.preparing.Done()
			s.prepare(r)
		}()
		s.request(r)
		return
	}
	s.request(r)
	select {
	case <-r.done:
	case <-stopped:
	}
}

// prepare builds a gained shard's world at the authority's step, and
// tells the server it is ready.
func (s *shardSource) prepare(r *shardReq) {
	if at := s.step.Load() - 1; at >= 0 {
		if p, err := s.auth.Prepare(int(r.shard), r.epoch, s.last, at); err == nil {
			r.prepared = p
		}
	}
	close(r.ready)
	s.poke()
}

// Step steps the authority once, when the timeline's clock has reached
// its next step's time. The server's ticker runs at the step rate from a
// phase of its own, and an authority starts on the timeline's grid at or
// after the clock (scenario.NewShardAuthority), up to a period ahead: one
// that stepped at every tick would sample its frames that far ahead of
// the clock for as long as it runs, and the islands it hands on to
// another authority, or receives from one, would jump in time by the
// difference. So a tick that comes before the next step's time only takes
// the changes queued and sends their announcements; the authority's time
// then stays within a step behind the clock (more when a loaded machine
// drops ticks, up to MaxLag).
func (s *shardSource) Step() ([]codec.Message, []*island.Frame) {
	s.take()
	if s.now != nil && !s.auth.Due(s.now()) {
		return s.auth.Control(), nil
	}
	msgs, frames := s.auth.Step()
	s.step.Store(s.auth.Steps() + 1)
	return msgs, frames
}

// Prompt receives when a change waits (transport.Prompter).
func (s *shardSource) Prompt() <-chan struct{} { return s.prompt }

// Urgent takes the changes queued and returns what they announce, without
// a step (transport.Prompter): a gained shard's islands reach the fronts
// up to a step sooner.
func (s *shardSource) Urgent() ([]codec.Message, []*island.Frame) {
	s.take()
	return s.auth.Control(), nil
}

// take brings the authority's time up to the clock and takes the changes
// queued, in order, but for a gain whose world is not ready yet and the
// changes of its shard queued behind it: those stay queued, in order,
// while the others go on — the shards a drain hands over together start
// each as soon as its own world is ready, not with the slowest.
func (s *shardSource) take() {
	if s.now != nil {
		// Steps that came late (a loaded machine drops ticks) would leave
		// this authority's time behind the clock every other authority
		// reads, and an island handed on would jump in time by the
		// difference: past MaxLag, the time moves on without the steps.
		// First, so that a shard gained now catches up to the clock.
		if n := s.auth.Behind(s.now()); n > MaxLag {
			s.auth.Skip(n - 1)
		}
	}
	s.step.Store(s.auth.Steps() + 1)
	s.mu.Lock()
	var due, held []*shardReq // new arrays: due is read below, unlocked
	for _, r := range s.reqs {
		if waiting(r) || slices.ContainsFunc(held, func(h *shardReq) bool { return h.shard == r.shard }) {
			held = append(held, r)
			continue
		}
		due = append(due, r)
	}
	s.reqs = held
	s.mu.Unlock()
	for _, r := range due {
		if r.gain {
			if r.prepared == nil || s.auth.Adopt(r.prepared) != nil {
				_ = s.auth.Gain(int(r.shard), r.epoch, s.last)
			}
			if s.taken != nil {
				s.taken(time.Since(r.at))
			}
		} else {
			s.auth.Lose(int(r.shard))
		}
		close(r.done)
	}
}

// waiting reports whether r is a gain whose world is still being prepared.
func waiting(r *shardReq) bool {
	if !r.gain {
		return false
	}
	select {
	case <-r.ready:
		return false
	default:
		return true
	}
}

// Both sources hand a change of hands over between steps.
var (
	_ transport.Prompter = (*shardSource)(nil)
	_ transport.Prompter = (*Relay)(nil)
)

// MaxLag is how many steps an authority's time may fall behind the
// timeline's clock before it skips ahead (three steps: one broadcast
// period at 20 Hz). Past it the authority's bodies hold still for the
// steps skipped.
const MaxLag = 3

func (s *shardSource) Period() int64 { return s.auth.Period() }

// ErrAbandon, as the cause of RunAuthority's context, makes it stop at
// once without a goodbye — no drain, no revoke — as a crashed process
// would: its shards stay held until etcd lets its lease go.
var ErrAbandon = errors.New("cluster: abandoned")

// RunAuthority runs an authority until ctx ends: it serves the shards it
// holds to the fronts that connect (over QUIC, as a server of observers)
// or, with Dial, to those it dials, and keeps holding its share of the
// world's shards (Member.Serve). When ctx ends it drains — leaves the
// world and hands every shard on at once, stepping each until the next
// holder's frames show — then stops. It returns an error when the member is fenced (its lease
// lost): it has then stopped stepping every shard, and whoever runs it
// should start it again.
func RunAuthority(ctx context.Context, cfg NodeConfig) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	w, err := Open(ctx, cfg.Client, cfg.Prefix)
	if err != nil {
		return err
	}
	auth, err := scenario.NewShardAuthority(cfg.Scenarios, cfg.Hz, island.Time(w.Now(time.Now())))
	if err != nil {
		return err
	}
	n := len(cfg.Scenarios)
	sb := newStandby(func(id uint32) uint32 { return uint32(scenario.ShardOf(id, n)) })
	met := newNodeMetrics(cfg.Registry, Authority)
	src := &shardSource{auth: auth, last: sb.last, now: func() island.Time { return island.Time(w.Now(time.Now())) }, prompt: make(chan struct{}, 1),
		taken: met.gained}
	src.step.Store(auth.Steps() + 1)
	cfg.Server.Timeline = w.Timeline
	if cfg.Dial {
		cfg.Server.DialOnly = true
		if cfg.Server.Listen == "" {
			cfg.Server.Listen = ":0"
		}
	}
	srv, err := transport.Listen(src, cfg.Server)
	if err != nil {
		return err
	}
	srvCtx, stopSrv := context.WithCancel(context.Background())
	var srvErr error
	srvStopped := make(chan struct{})
	go func() { srvErr = srv.Run(srvCtx); close(srvStopped) }()
	defer func() { stopSrv(); <-srvStopped }()

	tb, err := WatchTable(ctx, cfg.Client, cfg.Prefix)
	if err != nil {
		return err
	}
	defer tb.Close()
	log := cfg.Logger.With("member", cfg.Name)
	followCtx, stopFollow := context.WithCancel(context.Background())
	followed := make(chan struct{})
	go func() { sb.follow(followCtx, tb, log); close(followed) }()
	defer func() { stopFollow(); <-followed }()
	// Take no shard before the standby holds the world as a front shows it
	// (a front registered), so that what this authority gains continues
	// from its newest state; a world with no front yet has none to show.
	if len(tb.Members(Front)) > 0 {
		select {
		case <-sb.ready:
		case <-time.After(max(cfg.TTL, DefaultTTL)):
			log.Warn("standby not caught up; joining without it")
		case <-ctx.Done():
			return nil
		}
	}
	reg := registration{addr: cfg.advertise(srv), fingerprint: cfg.Fingerprint}
	if cfg.Dial {
		reg.addr = dialsOut
	}
	m, err := Join(ctx, cfg.Client, Config{Prefix: cfg.Prefix, Name: cfg.Name, Role: Authority, TTL: cfg.TTL, Addr: reg.String()})
	if err != nil {
		return err
	}
	defer m.Close(context.WithoutCancel(ctx)) // after Abandon: etcd answers that the lease is gone, or revokes it
	if cfg.Dial {
		// The uplinks end after the drain, before the server stops.
		dialCtx, stopDial := context.WithCancel(context.Background())
		dialled := make(chan struct{})
		go func() { dialFronts(dialCtx, tb, srv, cfg.cert(), log); close(dialled) }()
		defer func() { stopDial(); <-dialled }()
	}
	if cfg.Ready != nil {
		cfg.Ready(srv)
	}
	registerReaped(cfg.Registry, m)
	held := 0
	apply := func(shard, epoch uint32, gain bool) {
		src.change(shard, epoch, gain, srvStopped)
		log.Info(map[bool]string{true: "shard gained", false: "shard lost"}[gain], "shard", shard, "epoch", epoch)
	}
	// A shard handed on to another authority is stepped on until the
	// front shows the new holder's frames of it (the standby sees them) or
	// HandOffWait has passed: make before break, so that observers see no
	// gap while it changes hands.
	type handOff struct{ stop, done chan struct{} }
	var (
		hmu      sync.Mutex
		handoffs = map[uint32]handOff{}
		handing  sync.WaitGroup
	)
	var stopping atomic.Bool // fenced or crashed: every shard stops at once from now on
	stopHandOffs := func() {
		stopping.Store(true)
		hmu.Lock()
		for s, ho := range handoffs {
			close(ho.stop)
			delete(handoffs, s)
		}
		hmu.Unlock()
	}
	defer handing.Wait() // before the server stops
	change := func(shard, epoch uint32, gain bool) {
		if gain {
			held++
		} else {
			held--
		}
		met.change(gain, held)
		hmu.Lock()
		ho, pending := handoffs[shard]
		delete(handoffs, shard)
		hmu.Unlock()
		if pending { // the shard comes back before its hand-off ended
			close(ho.stop)
			<-ho.done
		}
		next, ok := tb.Shard(shard)
		if gain || stopping.Load() || !ok || next.Holder == cfg.Name || next.Epoch <= epoch {
			apply(shard, epoch, gain)
			return
		}
		ho = handOff{stop: make(chan struct{}), done: make(chan struct{})}
		hmu.Lock()
		handoffs[shard] = ho
		hmu.Unlock()
		handing.Add(1)
		go func() {
			defer handing.Done()
			defer close(ho.done)
			wait := time.NewTimer(m.HandOffWait())
			defer wait.Stop()
			sb.shown(shard, next.Epoch, wait.C, ho.stop)
			apply(shard, epoch, false)
			hmu.Lock()
			if cur, ok := handoffs[shard]; ok && cur.done == ho.done {
				delete(handoffs, shard)
			}
			hmu.Unlock()
		}()
		log.Info("shard handed on; stepping it until the next holder's frames show", "shard", shard, "epoch", epoch, "to", next.Holder)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	var serveErr error
	served := make(chan struct{})
	go func() {
		serveErr = m.Serve(serveCtx, tb, cfg.shards(), Hooks{
			Gain: func(s, e uint32) { change(s, e, true) },
			Lose: func(s, e uint32) { change(s, e, false) },
			Etcd: met.etcdCall,
		})
		close(served)
	}()
	// Serve ends (its shards lost) before the server stops stepping them.
	defer func() { stopServe(); <-served }()
	select {
	case <-served:
		stopHandOffs() // fenced: stop stepping everything now
		return fmt.Errorf("cluster: authority %s: %w", cfg.Name, serveErr)
	case <-srvStopped:
		return srvErr
	case <-ctx.Done():
	}
	if errors.Is(context.Cause(ctx), ErrAbandon) {
		m.Abandon()
		stopHandOffs()
		return nil
	}
	// Drain: leave, and let Serve hand every shard on.
	log.Info("draining")
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.TTL())
	defer cancel()
	left := time.Now()
	if _, err := m.LeaveAndRelease(dctx, tb); err != nil {
		return err
	}
	met.etcdCall("leave", time.Since(left))
	select {
	case <-served:
		if !errors.Is(serveErr, ErrDrained) {
			return serveErr
		}
	case <-dctx.Done():
		return errors.New("cluster: drain did not finish within the TTL")
	}
	return nil
}

// RunFront runs a front until ctx ends: it serves observers on the
// world's timeline, connects to every registered authority that accepts
// connections as an observer (pinning the fingerprint it registered),
// takes the uplinks of those that dial (UplinkListen), and relays what
// each sends under the leases the world's table admits (Relay).
func RunFront(ctx context.Context, cfg NodeConfig) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	w, err := Open(ctx, cfg.Client, cfg.Prefix)
	if err != nil {
		return err
	}
	tb, err := WatchTable(ctx, cfg.Client, cfg.Prefix)
	if err != nil {
		return err
	}
	defer tb.Close()
	n := len(cfg.Scenarios)
	probe, _ := scenario.NewShardAuthority(cfg.Scenarios, cfg.Hz, 0)
	met := newNodeMetrics(cfg.Registry, Front)
	relay, err := NewRelay(RelayConfig{Period: probe.Period(), StepRate: scenario.StepHz, Fence: tb,
		ShardOf: func(id uint32) uint32 { return uint32(scenario.ShardOf(id, n)) }, HandOff: met.handOff})
	if err != nil {
		return err
	}
	registerRelay(cfg.Registry, relay)
	cfg.Server.Timeline = w.Timeline
	srv, err := transport.Listen(relay, cfg.Server)
	if err != nil {
		return err
	}
	log := cfg.Logger.With("member", cfg.Name)
	reg := registration{addr: cfg.advertise(srv), fingerprint: cfg.Fingerprint}
	upCtx, stopUp := context.WithCancel(ctx)
	defer stopUp()
	if cfg.UplinkListen != "" {
		ln, err := transport.ListenUplinks(transport.UplinkConfig{Listen: cfg.UplinkListen, Cert: cfg.cert(),
			MaxUplinks: cfg.MaxUplinks, IdleTimeout: cfg.Server.IdleTimeout,
			Allow: func(fp string) bool { _, ok := authorityOf(tb, fp); return ok }})
		if err != nil {
			return err
		}
		defer ln.Close()
		registerUplinks(cfg.Registry, ln)
		reg.uplink = cmp.Or(cfg.UplinkAdvertise, ln.Addr().String())
		go acceptUplinks(upCtx, ln, tb, relay, log)
	}
	m, err := Join(ctx, cfg.Client, Config{Prefix: cfg.Prefix, Name: cfg.Name, Role: Front, TTL: cfg.TTL, Addr: reg.String()})
	if err != nil {
		return err
	}
	defer m.Close(context.WithoutCancel(ctx))
	if cfg.Ready != nil {
		cfg.Ready(srv)
	}
	go dialAuthorities(upCtx, tb, relay, log)
	// A front that lost its lease may also have lost its view of the
	// world's leases: it stops serving rather than relay on a stale fence.
	srvCtx, stopSrv := context.WithCancel(ctx)
	defer stopSrv()
	go func() {
		select {
		case <-m.Fenced():
			stopSrv()
		case <-srvCtx.Done():
		}
	}()
	err = srv.Run(srvCtx)
	if m.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("cluster: front %s: %w", cfg.Name, m.Err())
	}
	return err
}
