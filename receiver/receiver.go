package receiver

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// Config sets every stage's caps. The zero value means every default.
type Config struct {
	Codec     codec.Config        // datagram and frame caps
	Control   codec.ControlLimits // control message caps: ControlBytes reads under them (and callers that parse with ParseControl should); a zero MaxMembers is Codec's, so that a manifest may name every member a frame may carry
	Assembler assembler.Config    // reassembly and parity TTL and caps; zero MaxMembers, MaxFragments and MaxDatagram are Codec's
	Validator validator.Config    // lease and manifest table caps
	Store     store.Config        // history, extrapolation cap, smoothing
	// Clock sets the playout clock's constants. A zero SendPeriod takes
	// the period the authority's Welcome announces.
	Clock store.ClockConfig
	// MaxBodies and MaxTombstones cap the identity registry. Zero means
	// validator.DefaultMaxBodies and validator.DefaultMaxTombstones.
	MaxBodies, MaxTombstones int
	// MaxSimBodies caps the bodies of every island's local simulation
	// together (zero: DefaultMaxSimBodies). An island past the newest frame
	// continues under its Physics message — gravity, damping, joints — so
	// that extrapolated bodies keep their joints. Besides its cp body, a
	// simulated body may keep up to 3 kB of a bridged frame pair's
	// continuation (package localsim).
	MaxSimBodies int
	// MaxSimWork caps the local simulations' work per Render, in body steps
	// (zero: DefaultMaxSimWork). Islands past it this Render move along
	// their members' velocities (counted: Stats.SimOverBudget), so however
	// many islands run past their newest frame at once, a render tick's
	// cost stays bounded.
	MaxSimWork int
	// SimIdle is how long, in µs of the caller's clock, a local
	// simulation's cp space is kept while it does not run (no island
	// extrapolated or bridged with it); then it is let go, and built
	// afresh when next needed. A space holds about half a megabyte
	// whatever the island's size, so this bounds the memory of a
	// receiver that serves many islands to the spaces of the islands
	// that lost frames lately (Stats.SimSpaces). Zero means
	// DefaultSimIdle (30 s); negative, spaces are kept for as long as
	// their island and description.
	SimIdle int64
	// StraightExtrapolation ignores Physics messages: past its newest frame
	// every member moves along its own velocity (for comparison).
	StraightExtrapolation bool
	// MaxParked caps the wire-3 datagrams held because a whole frame in
	// them waits for a control message still on its way — its lease,
	// manifest, members' announcement or Physics (over QUIC a datagram can
	// overtake the control stream); they are received again once control
	// changed. It caps as many frames reassembled from several datagrams,
	// held for the same reason, apart. Zero means DefaultMaxParked;
	// negative, none is held. Each datagram is at most the decoder's
	// datagram cap (Codec.MaxDatagram, or the larger one a Welcome
	// announces, never above 65 507 bytes); each frame at most the
	// assembler's cap on members (Assembler.MaxMembers).
	MaxParked int
	// ParkFor is how long a datagram or reassembled frame is held at most,
	// µs of the caller's clock (zero or negative: DefaultParkFor).
	ParkFor int64

	// OnControl, if set, is called with the bytes of every control
	// message ControlBytes applied (not those it refused), after it applied
	// it: one whole message, envelope included, valid during the call only;
	// for a PhysicsRef, the Physics it stood for. Nil: no call.
	OnControl func(raw []byte)
	// OnCommit, if set, is called with every frame the store committed —
	// a Spawn's first frame too —
	// whole and validated, after the commit. The frame is valid during the
	// call only. Nil: no call.
	OnCommit func(f *validator.Validated)
}

// Errors Control returns. Each is also counted as a control reject.
var (
	// ErrNoWelcome: a message arrived before the authority's Welcome.
	ErrNoWelcome = errors.New("receiver: control message before welcome")
	// ErrDirection: an observer → server message (Subscribe, Received, …) arrived.
	ErrDirection = errors.New("receiver: message of the wrong direction")
	// ErrRefused: a well-formed message the receiver's state refused (a
	// table cap, a tombstoned or older generation, a repeated member). The
	// message changed nothing; the error wraps the stage's own error.
	ErrRefused = errors.New("receiver: control message refused")
)

// Pose is one member as the engine shows it.
type Pose struct {
	ID     island.MemberID  // stable identity
	Handle validator.Handle // the receiver's generation-safe handle for it
	State  island.State     // pose and velocity at the view's time
}

// IslandView is one island at the render time: every member from the same
// frame pair and one alpha — or, with Mode store.Empty and no poses, an
// island the receiver knows of but has nothing valid to show for (missing:
// hide it or draw a placeholder).
type IslandView struct {
	Island       uint32
	Mode         store.Mode  // Interpolate, Extrapolate, SegmentCut, Stale, HoldOldest, or Empty (missing)
	R            island.Time // playback time, authority µs
	SampleTime   island.Time // time the poses stand for (R unless held)
	ValidAtR     bool        // false when held (Stale, HoldOldest)
	Segment      uint32      // continuity segment of the poses
	Left, Right  island.Key  // the frame pair used; equal for single-frame modes
	Alpha        float64     // weight of Right when interpolating
	Extrapolated int64       // µs projected past the newest frame
	Smoothing    bool        // a shared recovery offset is decaying
	Poses        []Pose      // manifest order
}

// Receiver is the whole observer receive path: datagram decoder, assembler,
// identity registry, validator, store and playout clock, driven by control
// messages and datagrams the caller pushes with the local time now (µs of a
// monotonic clock). It is a pure state machine: no goroutines, no clock, no
// I/O; it is not safe for concurrent use.
type Receiver struct {
	cfg   Config
	dec   *codec.FloatDecoder
	dec2  *codec.Decoder
	cdec  *codec.ControlDecoder // ControlBytes' decoder, under cfg.Control
	asm   *assembler.Assembler
	reg   *validator.Registry
	val   *validator.Validator
	st    *store.Store
	clock *store.Clock
	sim   sims // local simulations of islands past their newest frame

	clockPeriod int64 // send period the clock was built with, µs; 0 for its default
	// descs is the Physics descriptions this connection sent, which a
	// PhysicsRef may name; resolved is the last Physics applied, encoded
	// (a PhysicsRef's, for OnControl).
	descs    codec.PhysicsCache
	resolved []byte
	// retired is the totals of the clocks a new send period replaced, so
	// that Stats' clock totals never go back.
	retired     store.ClockStats
	welcomed    bool
	welcome     codec.Welcome
	timelines   uint32   // local timeline counter: bumps on every new authority timeline
	known       []uint32 // islands with a manifest, ascending
	views       []IslandView
	ready       bool                            // the last Render showed every critical island valid at r
	decor       map[uint32]bool                 // islands the game said are not critical to interaction
	shown       codec.ViewStamp                 // the last Render's r, generation and age (Islands unused)
	shownViews  int                             // how many views the last Render returned
	later       []timedEvent                    // Destroy and Forget messages waiting for playback to reach their time, by time
	spawnAt     map[island.MemberID]island.Time // identities announced for a time playback has not reached
	spawnOf     map[uint32]island.Time          // islands of such identities: not shown before that time
	bases       []*islandBases                  // wire 3 decode baselines: bases[i] is island known[i]'s (nil until needed)
	arena       baseline.Arena                  // where they keep their one-member tables, broadcast by broadcast
	newestSeq   uint32                          // newest broadcast sequence of a wire-3 datagram
	seenSeq     bool
	pruneAt     int               // the next island of known pruneSome visits
	arrivals    baseline.Arrivals // wire-3 datagrams that arrived, for Received
	arrivalsNew bool              // some arrived since the last Feedback
	whole       []wholeFrame      // scratch: the whole frames of the datagram being received
	wents       []baseline.Entry  // scratch: their members
	wholeBad    bool              // some whole frame of it could not be restored
	dgRefused   bool              // some frame of it was refused
	wsum        codec.DatagramSum // the sums of its whole frames
	keyReq      []uint32          // islands to ask keyframes for, ascending
	ents        []baseline.Entry  // scratch: restored members
	runBases    []*baseline.Table // scratch: the baselines of a run's islands, looked up before any is restored
	recBases    []found           // scratch: the islands and baselines of a datagram's deltas, likewise
	raw         []byte            // scratch: their quantized records
	ids         []island.MemberID
	states      []island.State // scratch: restored members as the validator takes them
	lot         parkLot        // wire-3 datagrams that wait for control (park.go)
	waitCtl     bool           // the datagram being received had a whole frame wait for control
	ctlChanged  bool           // control changed since the held datagrams were last received

	stats Stats
}

// New returns a receiver with cfg's caps, waiting for the authority's Welcome.
func New(cfg Config) (*Receiver, error) {
	if cfg.Control.MaxMembers <= 0 {
		cfg.Control.MaxMembers = cfg.Codec.MaxMembers // one member cap for frames and manifests
	}
	cfg.Control = cfg.Control.WithDefaults()
	dec, err := codec.NewFloatDecoder(cfg.Codec)
	if err != nil {
		return nil, err
	}
	dec2, err := codec.NewDecoder(cfg.Codec)
	if err != nil {
		return nil, err
	}
	// One set of frame caps: reassembly takes the codec's unless set.
	dc := dec.Config()
	for _, c := range []struct {
		v *int
		d int
	}{{&cfg.Assembler.MaxMembers, dc.MaxMembers},
		{&cfg.Assembler.MaxFragments, dc.MaxFragments}, {&cfg.Assembler.MaxDatagram, dc.MaxDatagram}} {
		if *c.v == 0 {
			*c.v = c.d
		}
	}
	asm, err := assembler.New(cfg.Assembler)
	if err != nil {
		return nil, err
	}
	reg := validator.NewRegistry(cfg.MaxBodies, cfg.MaxTombstones)
	val := validator.New(reg, cfg.Validator)
	r := &Receiver{cfg: cfg, dec: dec, dec2: dec2, cdec: codec.NewControlDecoder(cfg.Control), asm: asm, reg: reg, val: val, st: store.New(cfg.Store, val),
		decor:   map[uint32]bool{},
		spawnAt: map[island.MemberID]island.Time{}, spawnOf: map[uint32]island.Time{}}
	r.clock = store.NewClock(cfg.Clock)
	r.arena.MaxTables = cfg.Validator.MaxIslands // a table per island and broadcast at most
	if r.cfg.MaxSimBodies <= 0 {
		r.cfg.MaxSimBodies = DefaultMaxSimBodies
	}
	if r.cfg.SimIdle == 0 {
		r.cfg.SimIdle = DefaultSimIdle
	}
	if r.cfg.MaxSimWork <= 0 {
		r.cfg.MaxSimWork = DefaultMaxSimWork
	}
	if r.cfg.MaxParked == 0 {
		r.cfg.MaxParked = DefaultMaxParked
	}
	if r.cfg.ParkFor <= 0 {
		r.cfg.ParkFor = DefaultParkFor
	}
	r.sim = sims{byID: make(map[uint32]*simPair), budget: r.cfg.MaxSimWork, idle: r.cfg.SimIdle}
	r.st.SetExtrapolator(&r.sim)
	return r, nil
}

// resetControl is the one reset path of every Welcome: it forgets every
// identity, lease, manifest, frame history, frame in reassembly with its
// streams' sequence state, parity buffer, decode baseline, datagram
// confirmation and keyframe request — the catch-up after a Welcome restates
// everything that is still live, and the frames that follow it (on a new
// timeline, numbered from zero again) owe nothing to any sequence seen
// before. The playout clock follows on a new timeline (control). Counters
// are kept.
func (r *Receiver) resetControl() {
	r.reg.Reset()
	r.val.Reset()
	r.st.Reset()
	r.asm.Reset()
	r.known = r.known[:0]
	r.sim.reset()
	clear(r.bases)
	r.bases = r.bases[:0]
	r.arena.Reset()
	r.newestSeq, r.seenSeq = 0, false
	r.arrivals, r.arrivalsNew = baseline.Arrivals{}, false
	r.keyReq = r.keyReq[:0]
	r.later = r.later[:0]
	clear(r.spawnAt)
	clear(r.spawnOf)
	r.descs.Reset()
}

// Control applies one reliable control message from the authority, in
// stream order. A Welcome with a new timeline resets every stage and puts
// the playout clock back to Waiting; a Welcome of the same timeline (a
// reconnect) resets identities, leases, manifests and histories but keeps
// the clock, since the catch-up that follows restates what is live.
//
// It returns an error wrapping ErrNoWelcome, ErrDirection or ErrRefused; the
// message then changed nothing else and is counted under Stats.Control.
func (r *Receiver) Control(now int64, m codec.Message) error {
	// codec.TypeOf, not m.Type: a call through the interface would make
	// every message passed here escape to the heap.
	t := codec.TypeOf(m)
	err := r.control(now, t, m)
	r.stats.Control.count(t, err)
	switch t {
	case codec.TypeLease, codec.TypeManifest, codec.TypeAnnounce, codec.TypePhysics, codec.TypePhysicsRef, codec.TypeSpawn:
		// What a held datagram may have waited for.
		r.ctlChanged = r.ctlChanged || err == nil
	}
	return err
}

// ControlBytes applies the control messages in b, back to back as read
// from the control stream, in order, as Control does; a refused message is
// counted and the next one applied. It stops at bytes that are no whole
// message and returns the bytes it applied and that parse error: one
// wrapping codec.ErrTruncated means b ends inside a message (keep the rest
// and read more); any other means the authority broke the protocol.
func (r *Receiver) ControlBytes(now int64, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		t, size, err := r.cdec.Decode(b[n:])
		if err != nil {
			return n, err
		}
		err = r.Control(now, r.cdec.Message()) // boxed on the stack: Control keeps no message
		if err == nil && r.cfg.OnControl != nil {
			raw := b[n : n+size]
			if t == codec.TypePhysicsRef {
				raw = r.resolved // the Physics it stands for
			}
			r.cfg.OnControl(raw)
		}
		n += size
	}
	return n, nil
}

// control applies m, of type t.
func (r *Receiver) control(now int64, t codec.MessageType, m codec.Message) error {
	if w, ok := m.(codec.Welcome); ok {
		newTimeline := !r.welcomed || w.Timeline != r.welcome.Timeline
		if r.welcomed {
			// Held datagrams are the last connection's: none of them is
			// received again. Those held before the first Welcome are this
			// one's, and wait for the catch-up that follows it.
			r.lot.reset()
		}
		r.welcomed, r.welcome = true, w
		// Accept the datagrams the authority said it will send, if they are
		// larger than the configured cap (never beyond the largest UDP payload).
		if c := r.dec.Config(); int(w.MaxDatagram) > c.MaxDatagram && int(w.MaxDatagram) <= codec.MaxMaxDatagram {
			c.MaxDatagram = int(w.MaxDatagram)
			if dec, err := codec.NewFloatDecoder(c); err == nil {
				r.dec = dec
			}
			if dec2, err := codec.NewDecoder(c); err == nil {
				r.dec2 = dec2
			}
		}
		r.resetControl()
		if !newTimeline {
			r.stats.Reconnects++
			return nil
		}
		// A new timeline: the next Observe starts it and the clock waits
		// for two samples of it. A changed period needs a new clock.
		r.timelines++
		r.stats.Timelines++
		if cc := r.cfg.Clock; cc.SendPeriod == 0 && int64(w.SendPeriod) != r.clockPeriod {
			cc.SendPeriod = int64(w.SendPeriod)
			old := r.clock.Stats()
			r.retired.FrozenTime += old.FrozenTime
			r.retired.WaitingTime += old.WaitingTime
			r.retired.Reanchors += old.Reanchors
			r.clock, r.clockPeriod = store.NewClock(cc), cc.SendPeriod
		}
		return nil
	}
	if !t.FromServer() {
		return ErrDirection
	}
	if !r.welcomed {
		return ErrNoWelcome
	}
	switch m := m.(type) {
	case codec.Announce:
		for _, id := range m.IDs {
			if _, err := r.reg.Announce(id); err != nil {
				return fmt.Errorf("%w: announce %v: %w", ErrRefused, id, err)
			}
		}
		// Identities that come into existence ahead of playback: an island
		// they make is not shown before their time, even if its first
		// (Initial) frame is lost.
		if rt, ok := r.clock.R(); m.Time != 0 && (!ok || m.Time > rt) {
			for _, id := range m.IDs {
				if len(r.spawnAt) >= maxSpawns {
					break
				}
				r.spawnAt[id] = m.Time
			}
		}
	case codec.Destroy:
		if !r.due(m.Time) {
			r.postpone(timedEvent{t: m.Time, ids: slices.Clone(m.IDs)})
			return nil
		}
		for _, id := range m.IDs {
			r.reg.Destroy(id)
		}
	case codec.Lease:
		l := island.Lease(m)
		old, had := r.val.Lease(l.Island)
		if err := r.val.SetLease(l); err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		if had && old != l {
			r.st.LeaseChanged(l.Island, now)
		}
	case codec.Manifest:
		if err := r.val.SetManifest(island.Manifest(m)); err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		if i, found := slices.BinarySearch(r.known, m.Island); !found {
			r.known = slices.Insert(r.known, i, m.Island)
			r.bases = slices.Insert(r.bases, i, nil)
		}
		var spawn island.Time
		for _, id := range m.Members {
			spawn = max(spawn, r.spawnAt[id])
		}
		if spawn != 0 {
			r.spawnOf[m.Island] = spawn
		}
		// The island lives on: a Forget of it still waiting is void.
		r.later = slices.DeleteFunc(r.later, func(e timedEvent) bool { return e.forget && e.island == m.Island })
	case codec.Physics:
		// Held whatever becomes of it here: the authority counts on it.
		r.resolved = m.Append(r.resolved[:0])
		if d := codec.PhysicsDigest(r.resolved); !r.descs.Holds(d) {
			keep := m // its own storage: the caller's may change
			keep.Bodies, keep.Joints, keep.Static = slices.Clone(m.Bodies), slices.Clone(m.Joints), slices.Clone(m.Static)
			r.descs.Add(d, len(r.resolved), &keep)
		}
		r.setLinks(&m)
		if err := r.physics(m); err != nil {
			return err
		}
	case codec.PhysicsRef:
		p, ok := r.descs.Get(m)
		if !ok {
			return fmt.Errorf("%w: physics of island %d names a description not held", ErrRefused, m.Island)
		}
		r.resolved = p.Append(r.resolved[:0]) // what OnControl gets for it
		r.setLinks(&p)
		if err := r.physics(p); err != nil {
			return err
		}
	case codec.Cut:
		r.st.Cut(m.Island, m.Segment, m.Time)
	case codec.Spawn:
		if err := r.spawn(now, &m); err != nil {
			return fmt.Errorf("%w: spawn of island %d: %w", ErrRefused, m.Island, err)
		}
	case codec.Final:
		if err := r.commitStated(now, m.Island, m.Time, m.Segment, 0, m.Members); err != nil {
			return fmt.Errorf("%w: final of island %d: %w", ErrRefused, m.Island, err)
		}
	case codec.Forget:
		if !r.due(m.Time) {
			r.postpone(timedEvent{t: m.Time, forget: true, island: m.Island})
			return nil
		}
		r.forget(m.Island)
	}
	return nil
}

// timedEvent is a Destroy (ids) or a Forget (island) waiting for playback
// to reach its authority time t.
type timedEvent struct {
	t      island.Time
	forget bool
	island uint32
	ids    []island.MemberID
}

// maxLater caps the events waiting for their time: past it, one takes
// effect at once (counted as late).
const maxLater = codec.DefaultMaxControlIslands

// due reports whether an event of authority time t takes effect now: time
// 0, no playback time yet to wait for, or a time playback has reached —
// one it has passed is late, and counted.
func (r *Receiver) due(t island.Time) bool {
	rt, ok := r.clock.R()
	switch {
	case t == 0 || !ok:
		return true
	case t < rt:
		r.stats.LateEvents++
		return true
	case t == rt:
		return true
	case len(r.later) >= maxLater:
		r.stats.LateEvents++
		return true
	}
	return false
}

// postpone queues e in time order, after those of the same time.
func (r *Receiver) postpone(e timedEvent) {
	i, _ := slices.BinarySearchFunc(r.later, e.t+1, func(x timedEvent, t island.Time) int { return cmp.Compare(x.t, t) })
	r.later = slices.Insert(r.later, i, e)
}

// applyDue applies, in order, the events whose time playback time rt has
// reached.
func (r *Receiver) applyDue(rt island.Time) {
	n := 0
	for n < len(r.later) && r.later[n].t <= rt {
		e := &r.later[n]
		if e.forget {
			r.forget(e.island)
		} else {
			for _, id := range e.ids {
				r.reg.Destroy(id)
			}
		}
		n++
	}
	r.later = slices.Delete(r.later, 0, n)
}

// errNotLive: a Spawn or a Final of an island without a lease and manifest.
var errNotLive = errors.New("no lease and manifest for the island")

// spawn takes an island's initial state from the reliable stream as its
// first frame — Initial, of its lease's epoch and its manifest's topology
// and config, at the spawn's time — validated like any frame. It does not
// feed the playout clock (it is no arrival of a frame), and the island's
// own first frame, of the same time, then finds it held.
func (r *Receiver) spawn(now int64, m *codec.Spawn) error {
	return r.commitStated(now, m.Island, m.Time, m.Segment, island.FlagInitial, m.Members)
}

// commitStated commits the states a Spawn or a Final gives of island isl
// as one frame with flags, of the island's lease and manifest as held.
func (r *Receiver) commitStated(now int64, isl uint32, t island.Time, segment uint32, flags island.Flags, ms []island.Member) error {
	l, okL := r.val.Lease(isl)
	man, okM := r.val.Manifest(isl)
	if !okL || !okM {
		return errNotLive
	}
	r.ids, r.states = r.ids[:0], r.states[:0]
	for i := range ms {
		r.ids = append(r.ids, ms[i].ID)
		r.states = append(r.states, ms[i].State)
	}
	reason, vf := r.val.ValidateStates(validator.Header{Sender: l.Owner, Time: t, Segment: segment, Flags: flags,
		Key: island.Key{Island: isl, Epoch: l.Epoch, Topology: man.Topology, Config: man.Config}}, r.ids, r.states)
	if reason != validator.OK {
		return errors.New(reason.String())
	}
	if r.st.Commit(now, vf) == store.Committed && r.cfg.OnCommit != nil {
		r.cfg.OnCommit(vf)
	}
	return nil
}

// maxSpawns caps the identities whose spawn time playback has not reached
// that the receiver remembers; past it, the islands they make are shown
// from their first frame alone.
const maxSpawns = 65536

// notYet reports whether island id does not exist yet at playback time rt:
// made of identities announced for a later time. Once rt reaches that time
// the island is remembered no more.
func (r *Receiver) notYet(id uint32, rt island.Time) bool {
	t, ok := r.spawnOf[id]
	if !ok {
		return false
	}
	if rt < t {
		return true
	}
	delete(r.spawnOf, id)
	return false
}

// forget drops island id: lease, manifest, history, simulation, baselines.
func (r *Receiver) forget(id uint32) {
	delete(r.spawnOf, id)
	delete(r.decor, id)
	r.val.Forget(id)
	r.st.Forget(id)
	r.sim.forget(id)
	if i, found := slices.BinarySearch(r.known, id); found {
		if s := r.bases[i]; s != nil {
			s.kept.Clear() // its tables of the arena go back
		}
		r.known = slices.Delete(r.known, i, i+1)
		r.bases = slices.Delete(r.bases, i, i+1)
	}
}

// Datagram decodes one datagram and pushes its fragments through assembly,
// validation and commit. Bad input is counted (Stats), never returned:
// datagrams are unreliable and any of them may be hostile.
func (r *Receiver) Datagram(now int64, b []byte) {
	r.stats.Datagrams++
	r.stats.BytesReceived += uint64(len(b))
	if r.lot.waiting() {
		r.unpark(now)
	}
	if v, err := codec.DatagramVersion(b); err == nil && v == codec.VersionV3 {
		r.waitCtl = false
		if !r.quantDatagram(now, b) && r.waitCtl {
			r.park(now, b)
		}
		return
	}
	frags, err := r.dec.Decode(b)
	if err != nil {
		r.stats.Decode.add(err)
		return
	}
	for i := range frags {
		r.push(now, &frags[i])
	}
}

// Confirm takes a wire-3 datagram as received without restoring it: its
// header is checked and its number goes into the next Feedback's Received,
// as if every frame it carries had been committed. It is for stand-in
// observers that measure what observers cost a server (to the server, one
// that confirms everything is a perfect observer, at a fraction of the
// work); such a receiver shows no frames. Datagrams and bytes are counted
// as by Datagram, a bad header by its decode reason.
func (r *Receiver) Confirm(b []byte) {
	r.stats.Datagrams++
	r.stats.BytesReceived += uint64(len(b))
	h, err := r.dec2.Header(b)
	if err != nil {
		r.stats.Decode.add(err)
		return
	}
	r.arrivals.Arrived(h.Packet)
	r.arrivalsNew = true
}

// Render advances the playout clock to now and evaluates every known island
// at the one playback time r: each island from one frame pair and one alpha
// (or held whole). While the clock is Frozen, r and the shown poses freeze
// together: every island is held as last shown, whatever frames arrive, and
// the change when the clock resumes goes through the island's shared
// correction. Islands without a valid pose come as missing views (Mode
// store.Empty, no poses). It returns nil while the clock has no time
// anchored. The views and their poses are the receiver's: valid until the
// next Render. Render also expires incomplete frames whose TTL has passed.
func (r *Receiver) Render(now int64) []IslandView {
	if r.lot.waiting() {
		r.unpark(now) // before the clock moves: held frames that now commit are shown
	}
	r.asm.Expire(now)
	r.clock.Advance(now)
	rt, ok := r.clock.R()
	r.ready, r.shownViews = false, 0
	if !ok {
		return nil
	}
	r.applyDue(rt)
	if len(r.spawnAt) > 0 { // identities whose time came: nothing left to wait for
		maps.DeleteFunc(r.spawnAt, func(_ island.MemberID, at island.Time) bool { return at <= rt })
	}
	gen := r.clock.Generation()
	r.shown = codec.ViewStamp{Timeline: r.welcome.Timeline, R: rt, Generation: gen, Age: max(r.clock.Stats().SnapshotAge, 0)}
	frozen := r.clock.State() == store.Frozen
	r.sim.spent, r.sim.now = 0, now
	r.sim.sweep(now)
	n := 0
	r.ready = r.clock.State() != store.Waiting // no time base to be ready on
	r.stats.OldestIsland, r.stats.StaleIslands = 0, 0
	for _, id := range r.known {
		var v *store.View
		if frozen {
			v = r.st.Hold(id, rt, now, gen)
		} else {
			v = r.st.Evaluate(id, rt, now, gen)
		}
		if (v != nil && v.Mode == store.Pending) || r.notYet(id, rt) {
			continue // not in existence yet at r: neither shown nor missing
		}
		if n == len(r.views) {
			r.views = append(r.views, IslandView{})
		}
		iv := &r.views[n]
		n++
		if v == nil || v.Mode == store.Empty {
			*iv = IslandView{Island: id, Mode: store.Empty, R: rt, Poses: iv.Poses[:0]}
			r.ready = r.ready && r.decor[id]
			continue
		}
		r.ready = r.ready && (v.ValidAtR || r.decor[id])
		r.stats.OldestIsland = max(r.stats.OldestIsland, v.Extrapolated)
		if v.Mode == store.Stale {
			r.stats.StaleIslands++
		}
		*iv = IslandView{Island: id, Mode: v.Mode, R: v.R, SampleTime: v.SampleTime, ValidAtR: v.ValidAtR,
			Segment: v.Segment, Left: v.Left, Right: v.Right, Alpha: v.Alpha, Extrapolated: v.Extrapolated,
			Smoothing: v.Smoothing, Poses: iv.Poses[:0]}
		for i, h := range v.Handles {
			mid, _ := r.reg.Identity(h)
			iv.Poses = append(iv.Poses, Pose{ID: mid, Handle: h, State: v.Poses[i]})
		}
	}
	r.shownViews = n
	return r.views[:n]
}

// ViewReady reports whether the last Render showed every island critical to
// interaction valid at r — none missing, none held Stale or before its
// first frame — on a playout clock that was not Waiting to re-anchor.
// Decoration (SetCritical false) may be stale without making a view
// unready. A view that is not ready must not be used for anything that
// needs all of it at r (say, hit queries against what the player saw).
func (r *Receiver) ViewReady() bool { return r.ready }

// SetCritical says whether island id is critical to interaction: every
// island is, until the game says it is decoration. ViewReady counts only
// critical islands. (The authority judges an interaction by its own idea
// of what is critical: package stamp.)
func (r *Receiver) SetCritical(id uint32, critical bool) {
	if critical {
		delete(r.decor, id)
	} else if len(r.decor) < codec.DefaultMaxControlIslands {
		r.decor[id] = true
	}
}

// Stamp writes to dst (reusing its storage) the stamp of the last Render's
// view, to attach to an interaction the player makes on it: the authority
// timeline, playback time r, playback generation and the view's age, and
// for each island of islands (ascending; nil: every known island, at most
// codec.MaxStampIslands) the ownership epoch and continuity segment of the
// poses shown and whether they were valid at r — an island not shown
// (missing, or unknown) comes as not valid. Before the first Render that
// had a time base, the stamp has no time (R 0) and every island is not
// valid.
func (r *Receiver) Stamp(dst *codec.ViewStamp, islands []uint32) {
	out := r.shown
	out.Islands = dst.Islands[:0]
	if islands == nil {
		islands = r.known
	}
	for _, id := range islands[:min(len(islands), codec.MaxStampIslands)] {
		is := codec.IslandStamp{Island: id}
		i, found := slices.BinarySearchFunc(r.views[:r.shownViews], id, func(v IslandView, id uint32) int { return cmp.Compare(v.Island, id) })
		if found && r.views[i].Mode != store.Empty {
			v := &r.views[i]
			is.Epoch, is.Segment, is.Valid = v.Right.Epoch, v.Segment, v.ValidAtR
		}
		out.Islands = append(out.Islands, is)
	}
	*dst = out
}

// NextDeadline returns the local time at which an incomplete frame expires,
// if any: a caller that sleeps between datagrams should wake by then (Render
// expires them too).
func (r *Receiver) NextDeadline() (int64, bool) { return r.asm.NextDeadline() }

// Islands returns the islands the receiver has a manifest for, ascending.
// The slice is the receiver's; do not modify it.
func (r *Receiver) Islands() []uint32 { return r.known }

// Welcome returns the authority's last Welcome, and false before the first.
func (r *Receiver) Welcome() (codec.Welcome, bool) { return r.welcome, r.welcomed }

// Clock returns the playout clock's state. Its totals (FrozenTime,
// WaitingTime, Reanchors) count from the receiver's start, across the new
// clock a Welcome with another send period brings.
func (r *Receiver) Clock() store.ClockStats {
	c := r.clock.Stats()
	c.FrozenTime += r.retired.FrozenTime
	c.WaitingTime += r.retired.WaitingTime
	c.Reanchors += r.retired.Reanchors
	return c
}

// Lease returns an island's current lease.
func (r *Receiver) Lease(islandID uint32) (island.Lease, bool) { return r.val.Lease(islandID) }

// Manifest returns an island's current manifest (the receiver's copy: do
// not modify it).
func (r *Receiver) Manifest(islandID uint32) (island.Manifest, bool) { return r.val.Manifest(islandID) }

// Identities calls fn for every live identity, in no particular order.
func (r *Receiver) Identities(fn func(island.MemberID)) { r.reg.Live(fn) }
