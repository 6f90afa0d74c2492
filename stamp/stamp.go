package stamp

import (
	"errors"
	"slices"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// Errors Check returns.
var (
	ErrTimeline     = errors.New("stamp: not of the authority's timeline")
	ErrOutOfHistory = errors.New("stamp: playback time outside the authority's history")
	ErrTooOld       = errors.New("stamp: the view is older than the bound")
	ErrGeneration   = errors.New("stamp: an older playback generation than the observer already used")
	ErrNotValid     = errors.New("stamp: an island critical to interaction was not valid in the view")
	ErrMismatch     = errors.New("stamp: an island's epoch or segment differs from the authority's at that time")
)

// Defaults.
const (
	DefaultWindow       = 64
	DefaultMaxIslands   = 4096
	DefaultMaxAge       = 500_000 // µs
	DefaultMaxObservers = 4096
)

// Config sets the history's bounds. Zero fields mean the defaults.
type Config struct {
	// Window is how many of each island's newest frames are kept.
	Window int
	// MaxIslands caps the islands remembered; the least recently sent goes.
	MaxIslands int
	// MaxAge is the oldest view, µs (server time − r), an interaction may be
	// judged on.
	MaxAge int64
	// MaxObservers caps the observers whose newest generation is kept.
	MaxObservers int
}

// sample is one frame's place in an island's history.
type sample struct {
	t       island.Time
	epoch   uint32
	segment uint32
}

// track is one island's newest frames, oldest first.
type track struct {
	samples []sample
	last    uint64 // Observe count when it was last sent, for eviction
}

// History is the authority's record of what it sent, for checking stamps.
type History struct {
	cfg         Config
	timeline    uint64
	islands     map[uint32]*track
	decor       map[uint32]bool // islands not critical to interaction
	generations map[uint32]uint32
	newest      island.Time
	seen        bool
	count       uint64
}

// New returns an empty history.
func New(cfg Config) *History {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxIslands <= 0 {
		cfg.MaxIslands = DefaultMaxIslands
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxObservers <= 0 {
		cfg.MaxObservers = DefaultMaxObservers
	}
	return &History{cfg: cfg, islands: map[uint32]*track{}, decor: map[uint32]bool{}, generations: map[uint32]uint32{}}
}

// SetTimeline starts the authority timeline t: everything recorded of
// another is forgotten.
func (h *History) SetTimeline(t uint64) {
	if t == h.timeline {
		return
	}
	h.timeline = t
	clear(h.islands)
	clear(h.generations)
	h.newest, h.seen = 0, false
}

// SetCritical says whether island id is critical to interaction (every
// island is, unless set otherwise): a critical island involved in an
// interaction must be valid in the stamp.
func (h *History) SetCritical(id uint32, critical bool) {
	if critical {
		delete(h.decor, id)
		return
	}
	if len(h.decor) < h.cfg.MaxIslands {
		h.decor[id] = true
	}
}

// Forget lets go of island id's history and its criticality setting.
func (h *History) Forget(id uint32) {
	delete(h.islands, id)
	delete(h.decor, id)
}

// Observe records a frame the authority sent. Frames of one island come in
// time order; one no newer than the island's newest is ignored, except at
// the same time (a boundary frame), which replaces it.
func (h *History) Observe(f *island.Frame) {
	h.count++
	tr := h.islands[f.Key.Island]
	if tr == nil {
		if len(h.islands) >= h.cfg.MaxIslands {
			h.evict()
		}
		tr = &track{samples: make([]sample, 0, h.cfg.Window)}
		h.islands[f.Key.Island] = tr
	}
	tr.last = h.count
	s := sample{t: f.Time, epoch: f.Key.Epoch, segment: f.Segment}
	switch n := len(tr.samples); {
	case n > 0 && f.Time < tr.samples[n-1].t:
		return
	case n > 0 && f.Time == tr.samples[n-1].t:
		tr.samples[n-1] = s
	case n == h.cfg.Window:
		copy(tr.samples, tr.samples[1:])
		tr.samples[n-1] = s
	default:
		tr.samples = append(tr.samples, s)
	}
	if !h.seen || f.Time > h.newest {
		h.newest, h.seen = f.Time, true
	}
}

// evict forgets the island sent least recently.
func (h *History) evict() {
	var oldest uint32
	var at uint64
	first := true
	for id, tr := range h.islands {
		if first || tr.last < at {
			oldest, at, first = id, tr.last, false
		}
	}
	delete(h.islands, oldest)
}

// at returns island id's frames bracketing r: its newest no later than r,
// and the one after it (ok2 false when there is none yet).
func (h *History) at(id uint32, r island.Time) (before, after sample, ok, ok2 bool) {
	tr := h.islands[id]
	if tr == nil {
		return sample{}, sample{}, false, false
	}
	// The first frame later than r.
	i, _ := slices.BinarySearchFunc(tr.samples, r, func(s sample, r island.Time) int {
		if s.t <= r {
			return -1
		}
		return 1
	})
	if i == 0 {
		return sample{}, sample{}, false, false
	}
	if i < len(tr.samples) {
		return tr.samples[i-1], tr.samples[i], true, true
	}
	return tr.samples[i-1], sample{}, true, false
}

// Check judges observer's stamp s for an interaction involving the islands
// involved (the authority's own idea of what the interaction touches:
// the target, what could block it). It returns nil when the observer could
// have seen every critical one of them valid at s.R, or the first rule s
// breaks (see the package doc). A stamp that passes raises the observer's
// remembered generation to its own.
func (h *History) Check(observer uint32, s *codec.ViewStamp, involved []uint32) error {
	switch {
	case s.Timeline != h.timeline:
		return ErrTimeline
	case !h.seen || s.R > h.newest:
		return ErrOutOfHistory
	case s.Age < 0 || s.Age > h.cfg.MaxAge:
		return ErrTooOld
	}
	if g, ok := h.generations[observer]; ok && s.Generation < g {
		return ErrGeneration
	}
	for _, id := range involved {
		before, after, ok, ok2 := h.at(id, s.R)
		if !ok {
			return ErrOutOfHistory
		}
		if h.decor[id] {
			continue
		}
		i, found := slices.BinarySearchFunc(s.Islands, id, func(is codec.IslandStamp, id uint32) int {
			switch {
			case is.Island < id:
				return -1
			case is.Island > id:
				return 1
			}
			return 0
		})
		if !found || !s.Islands[i].Valid {
			return ErrNotValid
		}
		// Between two frames the observer shows one pair: a hand-off or a
		// teleport between them may show either side's epoch or segment.
		is := s.Islands[i]
		if (is.Epoch != before.epoch || is.Segment != before.segment) &&
			(!ok2 || is.Epoch != after.epoch || is.Segment != after.segment) {
			return ErrMismatch
		}
	}
	if _, ok := h.generations[observer]; !ok && len(h.generations) >= h.cfg.MaxObservers {
		clear(h.generations)
	}
	h.generations[observer] = s.Generation
	return nil
}
