package broadcast

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/stamp"
)

// ObserverID names one observer connection; the caller chooses it.
type ObserverID uint32

// Defaults and limits.
const (
	// DefaultMaxObservers caps joined observers.
	DefaultMaxObservers = 1024
	// DefaultMaxIslands caps the live islands (leases and manifests) held.
	DefaultMaxIslands = 4096
	// DefaultMaxIdentities caps the live identities held.
	DefaultMaxIdentities = 1 << 16
	// DefaultAnnounceChunk is how many identities one catch-up Announce
	// carries at most, keeping every message far below the control cap.
	DefaultAnnounceChunk = 4096
)

// Config sets a Broadcaster up. Zero fields mean the documented defaults.
type Config struct {
	// Timeline names this authority's simulation clock in Welcome; pick a
	// new random value at every start. Zero is a valid id.
	Timeline uint64
	// SendPeriod is the broadcast period announced in Welcome, µs. Zero
	// means 50 ms.
	SendPeriod int64
	// Codec caps frames (members, fragments); its MaxDatagram is the cap
	// for observers that join with cap 0.
	Codec codec.Config
	// MaxObservers caps joined observers. Zero means DefaultMaxObservers.
	MaxObservers int
	// MaxIslands caps live islands. Zero means DefaultMaxIslands.
	MaxIslands int
	// MaxIdentities caps live identities. Zero means DefaultMaxIdentities.
	MaxIdentities int
	// Wire is the datagram format: 3 (quantized keyframes and deltas
	// against baselines the observer confirmed holding) or 1 (float frames,
	// encoded once per cap and subscription). Zero means 3. Format 2 is
	// retired (refused).
	Wire int
	// KeyframeEvery: an island's frames go whole to an observer at least
	// this many broadcasts apart (wire 3). Zero means DefaultKeyframeEvery.
	KeyframeEvery int
	// Class picks the constraint class, and so the quantization (wire 3),
	// of an island SetClass said nothing about. Nil means DefaultClass:
	// rigid precision (1/512 m, 2⁻¹² turn) for every island; only the game
	// makes one loose.
	Class func(islandID uint32, members int) quant.Class
	// Parity is how many Reed–Solomon parity records a frame cut into
	// 2 … codec.MaxParityFragments fragments carries (wire 3): any
	// Fragments of its Fragments+Parity records complete it. An observer
	// whose confirmations showed CleanAfter datagrams in a row received
	// is sent none until one is lost, and an observer under a budget only
	// as many as fit beside its frames, unless FixedParity is set. Zero
	// means DefaultParity; negative means none; at most codec.MaxParity.
	Parity int
	// FixedParity spends Parity records on every fragmented frame to every
	// observer whatever its path loses; under a budget, only as many as
	// fit beside its frames still go.
	FixedParity bool
	// StampHistory is how many of each island's newest frames are kept to
	// judge observers' view stamps (CheckStamp; package stamp): 64 keeps
	// 3.2 s at 20 Hz. Zero keeps none and CheckStamp refuses every stamp
	// (ErrNoStamps): recording costs a table update per frame.
	StampHistory int
	// ObserverKbps caps what each observer is sent, kbit/s of datagram
	// bytes (wire 3). Zero means no cap of its own.
	ObserverKbps int
	// ServerKbps caps what all observers together are sent, kbit/s of
	// datagram bytes (wire 3), shared evenly among the joined observers.
	// Zero means no cap.
	ServerKbps int
	// Importance is how much priority an island's frame gains, each
	// broadcast, toward being sent to an observer whose budget cannot take
	// everything; it is multiplied by the island's SetWeight. It must be
	// positive and finite (anything else counts as 1). Nil means
	// DefaultImportance.
	Importance func(islandID uint32, f *island.Frame) float64
	// InterestMargin is how far, in metres, an island may drift out of
	// every region of an observer that subscribed to regions before it
	// starts to leave that observer's interest. Zero means
	// DefaultInterestMargin; negative means none.
	InterestMargin float64
	// InterestGrace is how many broadcasts an island stays out of every
	// grown region before the observer gets its Forget. Zero means
	// DefaultInterestGrace; negative means none (forgotten at once).
	InterestGrace int
	// FocusRadius is the radius, in metres, around a region's centre
	// within which islands gain importance for that observer (up to 8
	// times at the centre). Zero means DefaultFocusRadius; negative means
	// none.
	FocusRadius float64
}

// Errors.
var (
	ErrObserverLimit = errors.New("broadcast: observer limit reached")
	ErrObserverTaken = errors.New("broadcast: observer id already joined")
	ErrNoObserver    = errors.New("broadcast: no such observer")
	ErrDirection     = errors.New("broadcast: not an authority message")
	ErrTableFull     = errors.New("broadcast: island or identity table full")
	ErrBadMessage    = errors.New("broadcast: message refused")
	ErrNoStamps      = errors.New("broadcast: view stamps are not kept (Config.StampHistory is 0)")
)

// Datagram is one encoded datagram and the islands whose fragments it
// carries. Bytes is shared by every observer it was produced for and must not
// be modified.
type Datagram struct {
	Bytes   []byte
	Islands []uint32 // ascending, distinct
}

type observer struct {
	id          ObserverID
	maxDatagram int
	all         bool
	subs        []uint32              // ascending, when !all
	subKey      string                // groups observers with the same subscription: "" all, "none", or 'L' + the list
	ctl         []byte                // control bytes not yet taken
	out         []queued              // datagrams not yet taken
	buf         []byte                // the bytes of its own queued datagrams (reused once taken)
	isl         []uint32              // and their islands
	held        map[uint32]*obsIsland // wire 3: per island, what this observer holds and its keyframe schedule
	hint        []*obsIsland          // per frame of the last broadcast, its island's entry (islandAt)
	snd         *baseline.Sender      // wire 3: which datagram carried which frame; what the observer confirmed
	packet      uint32                // wire 3: the number of the next datagram to this observer
	restricted  bool                  // subscriptions are cut to allowed
	allowed     []uint32              // ascending, when restricted
	pathRate    int64                 // bytes/s its path carries now (SetPathRate); 0 unknown
	capKbps     int                   // its own cap (SetCap); 0: Config.ObserverKbps
	needIdents  bool                  // joined, not yet subscribed: the identity catch-up is still to come
	ctlOwed     int                   // control bytes queued since its last broadcast: its budget pays them
	shortUntil  uint32                // its budget is short of bytes (no parity) until this broadcast sequence
	bucket      bucket                // its byte budget (wire 3)
	cands       []cand                // broadcastQuant's scratch
	budget      ObserverBudget        // what the last broadcast to it did
	regions     []codec.Region        // its areas of interest; nil unless it subscribed to regions
	inside      map[uint32]*interest  // in region mode: the islands in its interest
	lastSeq     uint32                // the broadcast sequence it was last encoded for
	physics     codec.PhysicsCache    // the Physics descriptions it holds (digests only): what a PhysicsRef may name
}

// limit cuts a subscription to what the observer may see.
func (o *observer) limit(s codec.Subscribe) codec.Subscribe {
	if !o.restricted || s.Regions != nil && !s.All {
		return s // regions: what enters is checked against allowed
	}
	if s.All {
		return codec.Subscribe{Islands: o.allowed}
	}
	var cut []uint32
	for _, isl := range s.Islands {
		if _, ok := slices.BinarySearch(o.allowed, isl); ok {
			cut = append(cut, isl)
		}
	}
	return codec.Subscribe{Islands: cut}
}

func (o *observer) wants(islandID uint32) bool {
	if o.regions != nil {
		_, ok := o.inside[islandID]
		return ok
	}
	if o.all {
		return true
	}
	_, ok := slices.BinarySearch(o.subs, islandID)
	return ok
}

// group is the observers that receive the same datagrams: one datagram cap
// and one subscription. Its datagrams are encoded once per Frames call.
type group struct {
	maxDatagram int
	subKey      string
	members     []*observer
}

// Broadcaster is the authority's send path: it holds what is live
// (identities, leases, manifests), gives each observer a Welcome and a
// catch-up, keeps every observer's control messages in order, and turns
// sampled frames into datagrams, encoded once per distinct datagram cap and
// subscription and shared by every observer in it.
//
// It is a pure state machine: no goroutines, no clock, no I/O, not safe for
// concurrent use. The caller drives it (Join, Subscribe, Apply, Frames) and
// moves what it produced to the network with Take.
type Broadcaster struct {
	cfg       Config
	idents    map[uint64]island.MemberID
	leases    map[uint32]island.Lease
	manifests map[uint32]island.Manifest
	liveGen   uint64                 // counts changes of leases and manifests (liveAt)
	liveHint  []liveHint             // per frame of the last broadcast
	physics   map[uint32]physicsOf   // of the island's current manifest only
	classes   map[uint32]quant.Class // set by SetClass, until the island is forgotten
	observers map[ObserverID]*observer
	encoders  map[int]*codec.FloatEncoder
	groups    []group
	stats     Stats

	// wire 3
	seq    uint32 // broadcast sequence
	enc2   map[int]*codec.Encoder
	tables baseline.Pool // the frames' baseline tables, recycled once no observer holds them
	quant  []quantized
	byTime []*island.Frame
	ids    []ObserverID

	stamps    *stamp.History     // what was sent, to judge view stamps; nil without Config.StampHistory
	weights   map[uint32]float64 // SetWeight's, until the island is forgotten
	bounds    map[uint32]box     // each live island's bounds in its newest frame (when some observer has regions)
	sorted    []uint32           // live islands ascending, as of sortedGen
	sortedGen uint64
	ticks     uint32       // Frames calls with frames (broadcasts): the clock of interest's grace
	regionIDs []ObserverID // interests' scratch: the observers subscribed to regions
	entering  []entrant    // updateInterest's scratch: the islands entering one observer's interest

	cdec *codec.ControlDecoder // FeedbackBytes' decoder
	one  [1]*observer          // broadcastQuant's scratch: the observer one encoding goes to
}

// Stats are the broadcaster's counters.
type Stats struct {
	Frames        uint64 // frames accepted by Frames (counted once, however many observers)
	FramesUnknown uint64 // frames skipped: no lease or manifest was applied for the island
	FramesRefused uint64 // frames the encoder refused (non-finite, over the caps)
	Encodings     uint64 // group encodings: one per distinct cap and subscription per call
	Datagrams     uint64 // datagrams encoded
	Bytes         uint64 // datagram bytes encoded
	ControlBytes  uint64 // control bytes queued, summed over observers
	// Deferred counts frames an observer's byte budget left out (wire 3):
	// one per observer and frame not encoded for it.
	Deferred uint64
	// Wire says where wire-3 datagram bytes went (headers, indices,
	// positions, angles, velocities), summed over every encoder.
	Wire codec.ByteBreakdown
}

// New returns a broadcaster with nothing live and no observer.
func New(cfg Config) (*Broadcaster, error) {
	c, err := cfg.Codec.WithDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Codec = c
	if cfg.SendPeriod <= 0 {
		cfg.SendPeriod = 50_000
	}
	if cfg.SendPeriod > 1<<32-1 {
		return nil, errors.New("broadcast: SendPeriod does not fit the Welcome")
	}
	if cfg.MaxObservers <= 0 {
		cfg.MaxObservers = DefaultMaxObservers
	}
	if cfg.MaxIslands <= 0 {
		cfg.MaxIslands = DefaultMaxIslands
	}
	if cfg.MaxIdentities <= 0 {
		cfg.MaxIdentities = DefaultMaxIdentities
	}
	switch cfg.Wire {
	case 0:
		cfg.Wire = 3
	case 1, 3:
	default:
		return nil, errors.New("broadcast: Wire must be 3 or 1 (2 is retired)")
	}
	if cfg.KeyframeEvery <= 0 {
		cfg.KeyframeEvery = DefaultKeyframeEvery
	}
	switch {
	case cfg.Parity == 0:
		cfg.Parity = DefaultParity
	case cfg.Parity < 0:
		cfg.Parity = 0
	case cfg.Parity > codec.MaxParity:
		return nil, fmt.Errorf("broadcast: Parity %d above %d", cfg.Parity, codec.MaxParity)
	}
	if cfg.Class == nil {
		cfg.Class = DefaultClass
	}
	if cfg.Importance == nil {
		cfg.Importance = DefaultImportance
	}
	switch {
	case cfg.InterestMargin == 0:
		cfg.InterestMargin = DefaultInterestMargin
	case cfg.InterestMargin < 0 || math.IsNaN(cfg.InterestMargin):
		cfg.InterestMargin = 0
	}
	switch {
	case cfg.InterestGrace == 0:
		cfg.InterestGrace = DefaultInterestGrace
	case cfg.InterestGrace < 0:
		cfg.InterestGrace = 0
	}
	if cfg.FocusRadius == 0 {
		cfg.FocusRadius = DefaultFocusRadius
	}
	if cfg.ObserverKbps < 0 || cfg.ServerKbps < 0 {
		return nil, errors.New("broadcast: a negative budget")
	}
	b := &Broadcaster{cfg: cfg, idents: map[uint64]island.MemberID{}, leases: map[uint32]island.Lease{},
		manifests: map[uint32]island.Manifest{}, physics: map[uint32]physicsOf{}, classes: map[uint32]quant.Class{}, weights: map[uint32]float64{}, bounds: map[uint32]box{}, observers: map[ObserverID]*observer{},
		encoders: map[int]*codec.FloatEncoder{}, enc2: map[int]*codec.Encoder{},
		cdec: codec.NewControlDecoder(codec.ControlLimits{MaxMembers: cfg.Codec.MaxMembers})}
	if cfg.StampHistory > 0 {
		b.stamps = stamp.New(stamp.Config{Window: cfg.StampHistory, MaxIslands: cfg.MaxIslands, MaxObservers: cfg.MaxObservers})
		b.stamps.SetTimeline(cfg.Timeline)
	}
	return b, nil
}

// CheckStamp judges a view stamp observer o attached to an interaction
// involving the islands involved, against what this broadcaster sent (see
// package stamp for the rules): nil when o could have seen every involved
// island critical to interaction valid at the stamp's playback time.
// ErrNoStamps without Config.StampHistory.
func (b *Broadcaster) CheckStamp(o ObserverID, s *codec.ViewStamp, involved []uint32) error {
	if b.stamps == nil {
		return ErrNoStamps
	}
	return b.stamps.Check(uint32(o), s, involved)
}

// SetCritical says whether island id is critical to interaction when
// stamps are judged (every island is, until the game says it is
// decoration), until the island is forgotten.
func (b *Broadcaster) SetCritical(id uint32, critical bool) {
	if b.stamps != nil {
		b.stamps.SetCritical(id, critical)
	}
}

// Join adds an observer whose datagrams must not exceed maxDatagram bytes
// (0 means the configured default; otherwise codec.MinMaxDatagram …
// codec.MaxMaxDatagram) and queues its Welcome. It receives no island until
// it subscribes; its first subscription brings the Announce of every live
// identity — or, to regions, of each island's members as the island enters
// its interest, so that an observer of a corner of a big world is not sent
// the whole world's identities.
func (b *Broadcaster) Join(id ObserverID, maxDatagram int) error {
	if _, ok := b.observers[id]; ok {
		return ErrObserverTaken
	}
	if len(b.observers) >= b.cfg.MaxObservers {
		return ErrObserverLimit
	}
	if maxDatagram == 0 {
		maxDatagram = b.cfg.Codec.MaxDatagram
	}
	if _, err := b.encoder(maxDatagram); err != nil {
		return err
	}
	o := &observer{id: id, maxDatagram: maxDatagram, subKey: "none", held: map[uint32]*obsIsland{},
		snd: baseline.NewSender(b.cfg.MaxIslands)}
	b.observers[id] = o
	queue(b, o, codec.Welcome{Version: codec.ControlVersion, Timeline: b.cfg.Timeline,
		SendPeriod: uint32(b.cfg.SendPeriod), MaxDatagram: uint16(min(maxDatagram, 0xFFFF))})
	o.needIdents = true
	return nil
}

// announceAll queues the Announce of every live identity, in chunks.
func (b *Broadcaster) announceAll(o *observer) {
	if len(b.idents) > 0 {
		all := make([]island.MemberID, 0, len(b.idents))
		for _, m := range b.idents {
			all = append(all, m)
		}
		slices.SortFunc(all, func(x, y island.MemberID) int {
			if x.Less(y) {
				return -1
			}
			return 1
		})
		for len(all) > 0 {
			n := min(len(all), DefaultAnnounceChunk)
			queue(b, o, codec.Announce{IDs: all[:n]})
			all = all[n:]
		}
	}
}

// Leave removes an observer and everything queued for it.
func (b *Broadcaster) Leave(id ObserverID) {
	if o := b.observers[id]; o != nil {
		o.snd.Release()
	}
	delete(b.observers, id)
}

// Observers returns how many observers are joined.
func (b *Broadcaster) Observers() int { return len(b.observers) }

// Restrict limits, from now on, what an observer may see to islands
// (strictly ascending): its subscription now and every later one is cut to
// them, All meaning exactly those islands. It is how a connect token that
// lists islands is enforced; islands it cuts from the current subscription
// get a Forget.
func (b *Broadcaster) Restrict(id ObserverID, islands []uint32) error {
	o := b.observers[id]
	if o == nil {
		return ErrNoObserver
	}
	cur := codec.Subscribe{All: o.all, Islands: o.subs, Regions: o.regions}
	o.restricted, o.allowed = true, slices.Clone(islands)
	return b.Subscribe(id, cur)
}

// Subscribe replaces an observer's subscription (cut to what Restrict
// allows it). Islands it gains get what is held of their Lease, Manifest
// and Physics queued now (the catch-up), before any of their frames — an
// island whose lease or manifest is still to come gets it live, as every
// observer that wants the island does; islands it loses get a Forget.
func (b *Broadcaster) Subscribe(id ObserverID, s codec.Subscribe) error {
	o := b.observers[id]
	if o == nil {
		return ErrNoObserver
	}
	s = o.limit(s)
	regions := s.Regions != nil && !s.All
	if o.needIdents {
		o.needIdents = false
		if !regions {
			b.announceAll(o)
		}
	}
	if regions {
		b.subscribeRegions(o, s.Regions)
		return nil
	}
	// Every island the broadcaster holds anything of, not only the live
	// ones: a lease applied before this subscription and a manifest after
	// it (or the other way round) must both reach the observer, and the
	// later one goes live only to those who want the island by then.
	for _, isl := range b.knownIslands() {
		had := o.wants(isl)
		now := s.All
		if !now {
			_, now = slices.BinarySearch(s.Islands, isl)
		}
		switch {
		case now && !had:
			if l, ok := b.leases[isl]; ok {
				queue(b, o, codec.Lease(l))
			}
			if m, ok := b.manifests[isl]; ok {
				queue(b, o, codec.Manifest(m))
				b.queuePhysics(o, isl)
			}
		case had && !now:
			queue(b, o, codec.Forget{Island: isl})
			o.forgetIsland(isl) // the observer drops its baselines of it
		}
	}
	o.all, o.subs, o.subKey = s.All, slices.Clone(s.Islands), ""
	o.regions, o.inside = nil, nil
	if !s.All {
		key := append(make([]byte, 0, 1+4*len(s.Islands)), 'L')
		for _, isl := range s.Islands {
			key = binary.LittleEndian.AppendUint32(key, isl)
		}
		o.subKey = string(key)
	}
	return nil
}

// knownIslands returns the islands with a lease or a manifest, ascending.
func (b *Broadcaster) knownIslands() []uint32 {
	out := make([]uint32, 0, len(b.manifests))
	for isl := range b.manifests {
		out = append(out, isl)
	}
	for isl := range b.leases {
		if _, ok := b.manifests[isl]; !ok {
			out = append(out, isl)
		}
	}
	slices.Sort(out)
	return out
}

// liveIslands returns the islands with both a lease and a manifest, ascending.
func (b *Broadcaster) liveIslands() []uint32 {
	out := make([]uint32, 0, len(b.manifests))
	for isl := range b.manifests {
		if _, ok := b.leases[isl]; ok {
			out = append(out, isl)
		}
	}
	slices.Sort(out)
	return out
}

// Feedback applies one control message from an observer: Subscribe,
// and for wire 3 Received (datagrams it confirms, and so the baselines it
// holds) and Keyframes (islands to send whole). Anything else is
// ErrDirection.
func (b *Broadcaster) Feedback(id ObserverID, m codec.Message) error {
	o := b.observers[id]
	if o == nil {
		return ErrNoObserver
	}
	switch m := m.(type) {
	case codec.Subscribe:
		return b.Subscribe(id, m)
	case codec.Received:
		b.received(o, m)
	case codec.Keyframes:
		b.keyframes(o, m)
	default:
		return ErrDirection
	}
	return nil
}

// FeedbackBytes applies an observer's control messages in p, back to back
// as read from its stream, in order, as Feedback does. It stops at the
// first message that does not parse or that Feedback refuses, and returns
// the bytes it applied and that error: one wrapping codec.ErrTruncated
// means p ends inside a message (keep the rest and read more); any other
// means the observer broke the protocol.
//
// Received, Keyframes and Ack — what every observer sends several times a
// second — are decoded into storage the broadcaster reuses, so that
// applying them allocates nothing.
func (b *Broadcaster) FeedbackBytes(id ObserverID, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		_, size, err := b.cdec.Decode(p[n:])
		if err != nil {
			return n, err
		}
		// Boxed on the stack: Feedback keeps no message.
		if err := b.Feedback(id, b.cdec.Message()); err != nil {
			return n, err
		}
		n += size
	}
	return n, nil
}

// Apply records one authority change — Announce, Destroy, Lease, Manifest,
// Physics (of the current manifest; refused otherwise), Spawn or Final (of
// the current manifest's size), Forget or Cut — and
// queues it, in order, to every observer it concerns:
// identities to all, island messages to the island's subscribers.
func (b *Broadcaster) Apply(m codec.Message) error {
	switch m := m.(type) {
	case codec.Announce:
		for _, id := range m.IDs {
			if _, ok := b.idents[id.Stable]; !ok && len(b.idents) >= b.cfg.MaxIdentities {
				return ErrTableFull
			}
			b.idents[id.Stable] = id
		}
		for _, o := range b.observers {
			// A region observer learns identities island by island as they
			// enter its interest (and with each new manifest of one in it);
			// one not yet subscribed gets them all with its subscription.
			if o.regions == nil && !o.needIdents {
				queue(b, o, m)
			}
		}
	case codec.Destroy:
		for _, id := range m.IDs {
			if cur, ok := b.idents[id.Stable]; ok && cur.Generation <= id.Generation {
				delete(b.idents, id.Stable)
			}
		}
		b.queueAll(m, nil)
	case codec.Lease:
		if _, ok := b.leases[m.Island]; !ok && len(b.leases) >= b.cfg.MaxIslands {
			return ErrTableFull
		}
		b.leases[m.Island] = island.Lease(m)
		b.liveGen++
		b.queueAll(m, &m.Island)
	case codec.Manifest:
		if len(m.Members) == 0 || len(m.Members) > b.cfg.Codec.MaxMembers {
			return ErrBadMessage
		}
		if _, ok := b.manifests[m.Island]; !ok && len(b.manifests) >= b.cfg.MaxIslands {
			return ErrTableFull
		}
		cp := island.Manifest(m)
		cp.Members = slices.Clone(m.Members)
		b.manifests[m.Island] = cp
		b.liveGen++
		delete(b.physics, m.Island) // it described the manifest this one replaces
		for _, o := range b.observers {
			if o.regions != nil && o.wants(m.Island) {
				queue(b, o, codec.Announce{IDs: cp.Members}) // its members may be new to it
			}
		}
		b.queueAll(codec.Manifest(cp), &m.Island)
	case codec.Physics:
		man, ok := b.manifests[m.Island]
		if !ok || man.Topology != m.Topology || man.Config != m.Config || len(m.Bodies) != len(man.Members) {
			return ErrBadMessage
		}
		if lim := (codec.ControlLimits{MaxMembers: b.cfg.Codec.MaxMembers}).WithDefaults(); !parses(m, &lim) {
			return ErrBadMessage // what no observer would accept
		}
		m.Bodies, m.Joints = slices.Clone(m.Bodies), slices.Clone(m.Joints)
		enc := m.Append(nil)
		b.physics[m.Island] = physicsOf{m: m, digest: codec.PhysicsDigest(enc), size: len(enc), links: codec.NewLinks(&m)}
		for _, o := range b.observers {
			if o.wants(m.Island) {
				b.queuePhysics(o, m.Island)
			}
		}
	case codec.Forget:
		delete(b.leases, m.Island)
		delete(b.manifests, m.Island)
		b.liveGen++
		delete(b.physics, m.Island)
		delete(b.classes, m.Island)
		delete(b.weights, m.Island)
		delete(b.bounds, m.Island)
		if b.stamps != nil {
			b.stamps.Forget(m.Island)
		}
		b.queueAll(m, &m.Island)
		for _, o := range b.observers {
			o.forgetIsland(m.Island)
			delete(o.inside, m.Island)
		}
	case codec.Cut:
		b.queueAll(m, &m.Island) // an event, not state: late joiners get the new segment's frames
	case codec.Spawn:
		if man, ok := b.manifests[m.Island]; !ok || len(man.Members) != len(m.Members) {
			return ErrBadMessage
		}
		m.Members = slices.Clone(m.Members)
		b.queueAll(m, &m.Island) // an event: late joiners get keyframes
	case codec.Final:
		if man, ok := b.manifests[m.Island]; !ok || len(man.Members) != len(m.Members) {
			return ErrBadMessage
		}
		m.Members = slices.Clone(m.Members)
		b.queueAll(m, &m.Island) // an event, as a Spawn

	default:
		return ErrDirection
	}
	return nil
}

func (b *Broadcaster) queueAll(m codec.Message, islandID *uint32) {
	for _, o := range b.observers {
		if islandID == nil || o.wants(*islandID) {
			queue(b, o, m)
		}
	}
}

// physicsOf is an island's Physics with its description's digest and its
// encoded size.
type physicsOf struct {
	m      codec.Physics
	digest uint64
	size   int
	links  *codec.Links // for joint-predicted keyframes and deltas; nil when no member hangs on another
}

// queuePhysics queues island isl's Physics for o, if it has one: a
// PhysicsRef when o holds its description (an island built like one it
// was sent before), else the whole message, which o then holds.
func (b *Broadcaster) queuePhysics(o *observer, isl uint32) {
	p, ok := b.physics[isl]
	if !ok {
		return
	}
	if o.physics.Holds(p.digest) {
		queue(b, o, codec.PhysicsRef{Island: p.m.Island, Topology: p.m.Topology, Config: p.m.Config, Digest: p.digest})
		return
	}
	queue(b, o, p.m)
	o.physics.Add(p.digest, p.size, nil)
}

// queue appends m to the observer's control bytes. It is generic over the
// message type so that a message of a known type is appended without being
// put in an interface (which would make it escape to the heap).
func queue[M codec.Message](b *Broadcaster, o *observer, m M) {
	n := len(o.ctl)
	o.ctl = m.Append(o.ctl)
	b.stats.ControlBytes += uint64(len(o.ctl) - n)
	o.ctlOwed += len(o.ctl) - n
}

func (b *Broadcaster) encoder(maxDatagram int) (*codec.FloatEncoder, error) {
	if e := b.encoders[maxDatagram]; e != nil {
		return e, nil
	}
	c := b.cfg.Codec
	c.MaxDatagram = maxDatagram
	e, err := codec.NewFloatEncoder(c)
	if err != nil {
		return nil, err
	}
	b.encoders[maxDatagram] = e
	return e, nil
}

// Frames encodes one broadcast's frames and queues the datagrams for every
// observer that subscribed to their islands. Frames of an island without an
// applied Lease and Manifest are skipped (counted), so no observer ever gets
// a frame before the control messages it needs. Each group of observers with
// the same datagram cap and subscription shares one encoding: one buffer,
// allocated per group and call, that nobody writes again.
func (b *Broadcaster) Frames(frames []*island.Frame) {
	b.interests(frames)
	if b.stamps != nil {
		for _, f := range frames {
			if b.live(f.Key.Island) {
				b.stamps.Observe(f)
			}
		}
	}
	if b.cfg.Wire == 3 {
		b.framesQuant(frames)
		return
	}
	b.groups = b.groups[:0]
	for _, o := range b.observers {
		i := slices.IndexFunc(b.groups, func(g group) bool { return g.maxDatagram == o.maxDatagram && g.subKey == o.subKey })
		if i < 0 {
			b.groups = append(b.groups, group{maxDatagram: o.maxDatagram, subKey: o.subKey})
			i = len(b.groups) - 1
		}
		b.groups[i].members = append(b.groups[i].members, o)
	}
	for _, f := range frames {
		if !b.live(f.Key.Island) {
			b.stats.FramesUnknown++
			continue
		}
		b.stats.Frames++
	}
	for gi := range b.groups {
		g := &b.groups[gi]
		b.encodeGroup(g, frames)
		clear(g.members)
		g.members = g.members[:0]
	}
}

// liveAt is live for the i-th frame of a broadcast, remembered from the
// last broadcast's i-th frame while no lease or manifest changed since.
func (b *Broadcaster) liveAt(i int, islandID uint32) bool {
	if i >= len(b.liveHint) {
		b.liveHint = append(b.liveHint, make([]liveHint, i+1-len(b.liveHint))...)
	}
	h := &b.liveHint[i]
	if h.id != islandID || h.gen != b.liveGen || !h.set {
		*h = liveHint{id: islandID, gen: b.liveGen, set: true, live: b.live(islandID)}
	}
	return h.live
}

// liveHint is what liveAt remembers of one frame position.
type liveHint struct {
	id        uint32
	gen       uint64
	set, live bool
}

func (b *Broadcaster) live(islandID uint32) bool {
	_, ok := b.leases[islandID]
	_, ok2 := b.manifests[islandID]
	return ok && ok2
}

func (b *Broadcaster) encodeGroup(g *group, frames []*island.Frame) {
	rep := g.members[0]
	enc := b.encoders[g.maxDatagram]
	enc.Reset()
	added := 0
	for _, f := range frames {
		if !b.live(f.Key.Island) || !rep.wants(f.Key.Island) {
			continue
		}
		if err := enc.Add(f); err != nil {
			b.stats.FramesRefused++
			continue
		}
		added++
	}
	if added == 0 {
		return
	}
	dgs := enc.Datagrams()
	b.share(g.members, dgs, func(dst []uint32, i int) []uint32 { return islandsOf(dst, dgs[i]) })
}

// share queues one encoding's datagrams, with the islands each carries
// (islands appends datagram i's, ascending), for every observer given: for
// one, copied into its own storage, reused once taken; for several, into
// one buffer they share and nobody writes again.
func (b *Broadcaster) share(members []*observer, dgs [][]byte, islands func(dst []uint32, i int) []uint32) {
	size := 0
	for _, d := range dgs {
		size += len(d)
	}
	b.stats.Encodings++
	b.stats.Datagrams += uint64(len(dgs))
	b.stats.Bytes += uint64(size)
	if len(members) == 1 {
		o := members[0]
		for i, d := range dgs {
			start, istart := len(o.buf), len(o.isl)
			o.buf = append(o.buf, d...)
			o.isl = islands(o.isl, i)
			o.out = append(o.out, queued{own: true, d: Datagram{Bytes: o.buf[start:len(o.buf):len(o.buf)],
				Islands: o.isl[istart:len(o.isl):len(o.isl)]}})
		}
		return
	}
	arena := make([]byte, 0, size)
	var isl []uint32 // every datagram's island list, back to back
	first := len(members[0].out)
	for i, d := range dgs {
		start, istart := len(arena), len(isl)
		arena = append(arena, d...)
		isl = islands(isl, i)
		members[0].out = append(members[0].out, queued{d: Datagram{Bytes: arena[start:len(arena):len(arena)],
			Islands: isl[istart:len(isl):len(isl)]}})
	}
	for _, o := range members[1:] {
		o.out = append(o.out, members[0].out[first:]...)
	}
}

// queued is a datagram waiting for Take or Drain; own when its bytes are in
// the observer's storage, which is written again once they are taken.
type queued struct {
	d   Datagram
	own bool
}

// islandsOf appends to out the islands whose fragment records a datagram the
// encoder just produced carries, ascending and distinct.
func islandsOf(out []uint32, d []byte) []uint32 {
	base := len(out)
	off := codec.DatagramHeaderSize
	for r := 0; r < int(d[5]); r++ {
		n := int(binary.LittleEndian.Uint16(d[off:]))
		isl := binary.LittleEndian.Uint32(d[off+codec.RecordLengthSize+4:])
		if i, found := slices.BinarySearch(out[base:], isl); !found {
			out = slices.Insert(out, base+i, isl)
		}
		off += codec.RecordLengthSize + n
	}
	return out
}

// Take appends the observer's queued control bytes to ctl and its queued
// datagrams to dgs, clears its queues, and returns both. Control bytes are
// a sequence of whole control messages, to be written to the observer's
// control stream in order. The datagrams are the caller's to keep: their
// bytes are never written again. Drain is Take without the copy.
func (b *Broadcaster) Take(id ObserverID, ctl []byte, dgs []Datagram) ([]byte, []Datagram) {
	o := b.observers[id]
	if o == nil {
		return ctl, dgs
	}
	ctl = append(ctl, o.ctl...)
	o.ctl = o.ctl[:0]
	var bytes []byte
	var isl []uint32
	if len(o.buf) > 0 {
		bytes, isl = make([]byte, 0, len(o.buf)), make([]uint32, 0, len(o.isl))
	}
	for _, q := range o.out {
		d := q.d
		if q.own {
			start, istart := len(bytes), len(isl)
			bytes = append(bytes, d.Bytes...)
			isl = append(isl, d.Islands...)
			d = Datagram{Bytes: bytes[start:len(bytes):len(bytes)], Islands: isl[istart:len(isl):len(isl)]}
		}
		dgs = append(dgs, d)
	}
	o.empty()
	return ctl, dgs
}

// Out is what Drain hands over for one observer: its control bytes, to be
// written to its control stream in order, and its datagrams, in storage
// the Out and the broadcaster trade, so that draining allocates nothing
// once warm. Everything in it stays valid until the Out is drained into
// again. The zero value is ready to use.
type Out struct {
	Control   []byte
	Datagrams []Datagram
	bytes     []byte
	islands   []uint32
}

// Drain replaces what out holds with the observer's queued control bytes
// and datagrams, and clears its queues: Take for a caller that is done
// with each batch before the next (it sends them at once, or copies
// them). An unknown observer leaves out empty.
func (b *Broadcaster) Drain(id ObserverID, out *Out) {
	clear(out.Datagrams)
	out.Control, out.Datagrams = out.Control[:0], out.Datagrams[:0]
	o := b.observers[id]
	if o == nil {
		return
	}
	out.Control, o.ctl = o.ctl, out.Control
	for _, q := range o.out {
		out.Datagrams = append(out.Datagrams, q.d)
	}
	// The observer's storage goes out with its datagrams; out's, no longer
	// in use, is the observer's to write next.
	out.bytes, o.buf = o.buf, out.bytes
	out.islands, o.isl = o.isl, out.islands
	o.empty()
}

// empty clears the observer's datagram queue and readies its storage.
func (o *observer) empty() {
	clear(o.out)
	o.out, o.buf, o.isl = o.out[:0], o.buf[:0], o.isl[:0]
}

// Stats returns the counters.
func (b *Broadcaster) Stats() Stats {
	st := b.stats
	for _, e := range b.enc2 {
		st.Wire.Add(e.Bytes())
	}
	return st
}

// Live calls the functions for every live identity, lease and manifest
// (nil functions are skipped), islands in ascending order.
func (b *Broadcaster) Live(id func(island.MemberID), lease func(island.Lease), manifest func(island.Manifest)) {
	if id != nil {
		for _, m := range b.idents {
			id(m)
		}
	}
	for _, isl := range b.liveIslands() {
		if lease != nil {
			lease(b.leases[isl])
		}
		if manifest != nil {
			manifest(b.manifests[isl])
		}
	}
}

// parses reports whether m, encoded, is a message an observer accepts.
func parses(m codec.Message, lim *codec.ControlLimits) bool {
	_, _, err := codec.ParseControl(m.Append(nil), lim)
	return err == nil
}
