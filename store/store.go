package store

import (
	"github.com/islandsync/islandsync/internal/idtable"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

// Authority tells the store an island's current version; *validator.Validator
// implements it.
type Authority interface {
	Stamp(islandID uint32) (validator.Stamp, bool)
}

// Config sets the store's bounds and playout constants. Times are
// microseconds; zero fields mean the documented defaults.
type Config struct {
	// History is how many validated frames are kept per island. Zero means 8.
	History int
	// MaxIslands caps islands with a history. Zero means 4096; a commit for
	// a new island beyond it is refused (CommitNoRoom).
	MaxIslands int
	// ExtrapolationCap is how far past its newest frame an island may be
	// extrapolated before it is held and reported stale. Zero means 100 ms.
	ExtrapolationCap int64
	// BridgeGap is the widest frame pair, µs, blended linearly when an
	// Extrapolator is set; wider pairs are bridged by it. Zero means 75 ms
	// (one frame lost at 20 Hz makes a 100 ms pair).
	BridgeGap int64
	// SmoothDuration is how long a recovery offset takes to decay to zero.
	// Zero means 100 ms.
	SmoothDuration int64
	// SnapDistance: a recovery whose largest member offset exceeds this many
	// metres is a discontinuity and applies at once. Zero means 1 m. (A new
	// continuity segment always applies at once, whatever the distance.)
	SnapDistance float64
	// StaleCleanup is how long, in µs of local time, an island may stay
	// Stale before its history is dropped; it then reports Empty (missing)
	// until a new frame arrives. Zero means 1 s.
	StaleCleanup int64
}

func (c Config) withDefaults() Config {
	if c.History <= 0 {
		c.History = 8
	}
	if c.MaxIslands <= 0 {
		c.MaxIslands = 4096
	}
	if c.ExtrapolationCap <= 0 {
		c.ExtrapolationCap = 100_000
	}
	if c.BridgeGap <= 0 {
		c.BridgeGap = 75_000
	}
	if c.SmoothDuration <= 0 {
		c.SmoothDuration = 100_000
	}
	if c.SnapDistance <= 0 {
		c.SnapDistance = 1
	}
	if c.StaleCleanup <= 0 {
		c.StaleCleanup = 1_000_000
	}
	return c
}

// CommitResult says what Commit did with a validated frame.
type CommitResult uint8

const (
	// Committed: the frame joined the island's history.
	Committed CommitResult = iota
	// CommitVersionChanged: lease, topology or config changed between
	// validation and commit; the whole frame was discarded.
	CommitVersionChanged
	// CommitDuplicate: a frame with the same authority time is already held.
	CommitDuplicate
	// CommitTooOld: the history is full and the frame is older than all of it.
	CommitTooOld
	// CommitNoRoom: the island cap is reached.
	CommitNoRoom
	// CommitLate: the frame's time is not after the playback time the
	// island was last shown at and lies inside the held history: accepting
	// it would rewrite what the playout already showed. (A late frame ahead
	// of r fills its gap; one newer than every held frame is taken.)
	CommitLate

	// NumCommitResults is the number of CommitResult values.
	NumCommitResults
)

func (r CommitResult) String() string {
	return [...]string{"committed", "version-changed", "duplicate", "too-old", "no-room", "late", "unknown"}[min(r, NumCommitResults)]
}

// history is one island's validated frames, ascending by time, all under
// one Stamp.
type history struct {
	stamp  validator.Stamp
	frames []*validator.Validated
	newest island.Time // the newest frame's time, while frames holds any: commit reads no frame in order
	spare  []*validator.Validated
	// prev is the version frames replaced (its frames, oldest first), shown
	// while playback is before frames' first; onPrev: the last view was.
	prev   []*validator.Validated
	onPrev bool
	// playout state
	mode       Mode
	shown      []island.State     // last poses handed out
	shownBy    []validator.Handle // the members those poses are of, in the same order
	offsets    []island.State     // recovery offsets (x, y, angle used)
	smoothFrom int64              // local time the decay started
	smoothing  bool
	lastEval   int64
	evaluated  bool
	leaseAt    int64 // local time of the last lease change, for hand-off latency
	leaseSeen  bool
	shownSeg   uint32      // continuity segment of the poses last shown
	lastR      island.Time // playback time the island was last shown at
	haveR      bool
	held       bool // the last poses were held through a clock freeze
	stale      bool // Stale since staleSince (local µs)
	staleSince int64
	last       View // the last view handed out, for Hold
	// A known cut: segment cutSeg starts at authority time cutAt, so the
	// older segment is never extrapolated past it.
	cutSeg  uint32
	cutAt   island.Time
	haveCut bool
}

// Store holds, per island, a bounded history of validated frames and turns
// it into whole-island poses at the playout time. It is not safe for
// concurrent use.
type Store struct {
	cfg     Config
	ext     Extrapolator
	auth    Authority
	islands idtable.Table[history]
	view    View
	stats   Stats
}

// New returns a store that re-checks versions with auth at commit time.
func New(cfg Config, auth Authority) *Store {
	return &Store{cfg: cfg.withDefaults(), auth: auth}
}

// An Extrapolator continues an island past its newest frame as a whole —
// an observer's local simulation of the island's joints — so that the
// bodies keep the constraints the authority keeps instead of each flying
// along its own velocity.
type Extrapolator interface {
	// Extrapolate writes to out (one state per member, in f's member order)
	// the island's states dt µs after frame f, 0 < dt ≤ the extrapolation
	// cap, and reports whether it could. When it cannot (no description of
	// the island's physics for f's topology and config, say), the store
	// moves every member along its own velocity instead.
	Extrapolate(f *validator.Validated, dt int64, out []island.State) bool
	// Bridge writes to out the island's states dt µs after frame a on the
	// way to the later frame b of the same segment (0 < dt < b's time − a's):
	// continued from a, and moved by the share dt/(b − a) of the gap between
	// where that continuation has the island at b's time and where b has
	// it. It reports false when it cannot; the store then blends a and b
	// linearly. The store asks only for pairs more than Config.BridgeGap
	// apart — frames lost between them — where a straight blend cuts the
	// arcs that swinging bodies follow and shortens their joints.
	Bridge(a, b *validator.Validated, dt int64, out []island.State) bool
	// Settle moves poses (the island's members, in its frames' order) the
	// least it can so that the island's joints stand as in frame a — or,
	// with b not nil, as in a blend of a and b by alpha (0: a, 1: b) — after
	// every blend the store made: interpolation, extrapolation, recovery
	// smoothing.
	Settle(a, b *validator.Validated, alpha float64, poses []island.State)
}

// SetExtrapolator makes the store continue islands past their newest frame
// with e (nil: every member along its own velocity). Views report the mode
// as Extrapolate either way; Stats.Simulated counts the views e produced.
func (s *Store) SetExtrapolator(e Extrapolator) { s.ext = e }

// LeaseChanged tells the store that the island's authority changed at local
// time now; the delay until its first committed frame under the new stamp is
// reported as hand-off latency.
func (s *Store) LeaseChanged(islandID uint32, now int64) {
	if h := s.islands.Get(islandID); h != nil {
		h.leaseAt, h.leaseSeen = now, true
	}
}

// Commit stores a copy of vf if the island's current version still equals
// the one vf was validated against (compare-and-commit). A frame under a new
// version replaces the island's whole history.
func (s *Store) Commit(now int64, vf *validator.Validated) CommitResult {
	r := s.commit(now, vf)
	s.stats.Commits[r]++
	return r
}

func (s *Store) commit(now int64, vf *validator.Validated) CommitResult {
	st := vf.Stamp()
	cur, ok := s.auth.Stamp(st.Island)
	if !ok || cur != st {
		return CommitVersionChanged
	}
	h := s.islands.Get(st.Island)
	if h == nil {
		if s.islands.Len() >= s.cfg.MaxIslands {
			return CommitNoRoom
		}
		h = &history{stamp: st}
		s.islands.Set(st.Island, h)
	}
	if h.stamp != st {
		if h.stamp.Epoch != st.Epoch && h.leaseSeen {
			lat := now - h.leaseAt
			s.stats.HandoffLatencyLast = lat
			s.stats.HandoffLatencyMax = max(s.stats.HandoffLatencyMax, lat)
			h.leaseSeen = false
		}
		h.supersede()
		h.stamp = st
		s.stats.Invalidations++
	}
	t := vf.Time()
	// A frame behind the shown r that lands inside the history would
	// rewrite what was already shown; one newer than every held frame only
	// replaces an extrapolation with data (through the shared correction).
	n := len(h.frames)
	if h.haveR && t <= h.lastR && n > 0 && t < h.newest {
		return CommitLate
	}
	i := n
	if n > 0 && t <= h.newest { // frames mostly come in order: search only when not
		for i > 0 && h.frames[i-1].Time() > t {
			i--
		}
		if i > 0 && h.frames[i-1].Time() == t {
			return CommitDuplicate
		}
	}
	if i == n {
		h.newest = t
	}
	if len(h.frames) == s.cfg.History {
		if i == 0 {
			return CommitTooOld
		}
		old := h.frames[0]
		copy(h.frames, h.frames[1:i])
		h.frames[i-1] = h.take(vf)
		h.spare = append(h.spare, old)
		return Committed
	}
	h.frames = append(h.frames, nil)
	copy(h.frames[i+1:], h.frames[i:])
	h.frames[i] = h.take(vf)
	return Committed
}

// take copies vf into a recycled frame.
func (h *history) take(vf *validator.Validated) *validator.Validated {
	var f *validator.Validated
	if n := len(h.spare); n > 0 {
		f = h.spare[n-1]
		h.spare = h.spare[:n-1]
	} else {
		f = &validator.Validated{}
	}
	f.CopyFrom(vf)
	return f
}

// supersede starts a new version's history: the frames held so far become
// prev, shown while playback is before the new version's first frame —
// they end where the new version starts (a topology change, a hand-off).
// With nothing held, an older prev stays the one shown.
func (h *history) supersede() {
	if len(h.frames) == 0 {
		return
	}
	h.spare = append(h.spare, h.prev...)
	h.prev = append(h.prev[:0], h.frames...)
	h.frames = h.frames[:0]
}

// dropPrev lets the replaced version go once playback reached the new one:
// what was shown of it goes too (other members, other joints), so the new
// version starts afresh.
func (h *history) dropPrev() {
	h.spare = append(h.spare, h.prev...)
	h.prev = h.prev[:0]
	h.onPrev = false
	h.mode = Empty
	h.smoothing = false
	h.evaluated = false
	h.held = false
	h.shown, h.shownBy = h.shown[:0], h.shownBy[:0]
}

// active is the frames the last view came from.
func (h *history) active() []*validator.Validated {
	if h.onPrev {
		return h.prev
	}
	return h.frames
}

// invalidate drops every frame, those of a replaced version too.
func (h *history) invalidate() {
	h.spare = append(h.spare, h.frames...)
	h.spare = append(h.spare, h.prev...)
	h.frames, h.prev, h.onPrev = h.frames[:0], h.prev[:0], false
	h.mode = Empty
	h.smoothing = false
	h.evaluated = false
	h.haveR = false
	h.held = false
}

// Cut records that the island's continuity segment segment starts at
// authority time at (a teleport, a respawn): the older segment is never
// extrapolated past at, and from at until a frame of the new segment is held
// the island reports Empty (missing) instead of a pose it no longer has.
// A cut for an island without a history is remembered for its first one.
func (s *Store) Cut(islandID uint32, segment uint32, at island.Time) {
	h := s.islands.Get(islandID)
	if h == nil {
		if s.islands.Len() >= s.cfg.MaxIslands {
			return
		}
		h = &history{}
		s.islands.Set(islandID, h)
	}
	if h.haveCut && segment != h.cutSeg && island.SeqNewer(h.cutSeg, segment) {
		return // an older cut than the one known
	}
	h.cutSeg, h.cutAt, h.haveCut = segment, at, true
}

// Forget removes an island and its history.
func (s *Store) Forget(islandID uint32) { s.islands.Delete(islandID) }

// Reset removes every island and its history; counters are kept.
func (s *Store) Reset() { s.islands.Clear() }

// Frames returns how many frames the island's history holds (a replaced
// version's still shown included).
func (s *Store) Frames(islandID uint32) int {
	if h := s.islands.Get(islandID); h != nil {
		return len(h.frames) + len(h.prev)
	}
	return 0
}

// Stats are the store's diagnostics: what the player saw, not only what arrived.
type Stats struct {
	Commits            [NumCommitResults]uint64 // per CommitResult
	Invalidations      uint64                   // histories replaced by a new version (the old one shown until r reaches it)
	StaleCleanups      uint64                   // histories dropped after staying Stale past StaleCleanup
	Recoveries         uint64                   // smoothed recoveries from extrapolation or freeze
	Snaps              uint64                   // recoveries applied at once (flags, cut, distance)
	Simulated          uint64                   // extrapolated views the Extrapolator produced (the rest went straight)
	Bridged            uint64                   // interpolated views across a gap the Extrapolator bridged
	CorrectionLast     float64                  // largest member offset of the last recovery, metres
	CorrectionMax      float64                  // largest recovery offset ever, metres
	ExtrapolationTime  int64                    // µs of island-time spent extrapolating, summed over islands
	FreezeTime         int64                    // µs of island-time held stale (whole island frozen)
	HandoffLatencyLast int64                    // µs from LeaseChanged to the first frame under the new epoch
	HandoffLatencyMax  int64
	BufferedFrames     int // frames held over all islands
}

// Count returns one commit result's counter.
func (s Stats) Count(r CommitResult) uint64 { return s.Commits[r] }

// Stats returns the store's diagnostics.
func (s *Store) Stats() Stats {
	st := s.stats
	st.BufferedFrames = 0
	for _, h := range s.islands.All() {
		st.BufferedFrames += len(h.frames) + len(h.prev)
	}
	return st
}
