package netsim

import (
	"bytes"
	"container/heap"
	"math/rand/v2"
)

// Config describes one direction of a link. Probabilities are per datagram
// in [0, 1]; times are microseconds. The zero Config is a perfect link with
// no delay.
type Config struct {
	Loss      float64 // independent (Bernoulli) loss probability
	BurstIn   float64 // Gilbert–Elliott: probability of entering the bad state per datagram
	BurstOut  float64 // probability of leaving the bad state per datagram (0 means 0.25)
	BurstLoss float64 // loss probability while in the bad state (0 means 1)
	// BurstSlot bounds a burst in time, µs: the Gilbert–Elliott state
	// moves once per datagram and once more for every whole BurstSlot
	// that passes without one, so a bad state ends in time even when the
	// sender stops sending — as a sender whose congestion controller
	// waits for acknowledgements the burst ate does — rather than lasting
	// until enough datagrams were sent into it. A sender whose datagrams
	// are never a whole BurstSlot apart sees the state move per datagram
	// only. 0 means 100 ms; negative, per datagram only.
	BurstSlot int64
	// BurstClock, when positive, moves the Gilbert–Elliott state on time
	// alone, µs: once per BurstClock, whatever is sent, BurstIn and
	// BurstOut being probabilities per tick; BurstSlot is then not used.
	// Per datagram, a burst lasts a number of datagrams, so a sender of
	// few large datagrams (a congestion-controlled one, say) meets bursts
	// that last longer in time than one of many small ones; on the clock
	// it lasts as long for both, as a fade or a full queue does. 0: per
	// datagram (and per quiet BurstSlot).
	BurstClock int64
	Duplicate  float64 // probability a datagram is delivered twice
	Delay      int64   // base one-way delay
	Jitter     int64   // extra delay drawn uniformly from [0, Jitter]; reorders datagrams
	Corrupt    float64 // probability one random byte of a datagram is flipped
}

// LinkStats counts what a link did.
type LinkStats struct {
	Sent, Lost, BurstLost, Duplicated, Corrupted, Delivered uint64
	Bytes                                                   uint64 // bytes handed to Send
	// Silences counts the stretches of at least SilenceMin between two
	// datagrams the link kept (did not lose), by their send times: a loss
	// burst, a sender that stopped sending, or both — what the far end
	// sees as nothing arriving. SilentTime is their total length and
	// LongestSilence the longest, µs (0: none).
	Silences                   uint64
	SilentTime, LongestSilence int64
}

// SilenceMin is the shortest stretch LinkStats counts as a silence, µs:
// three broadcast periods at 20 Hz, longer than a playout's usual delay, so
// that an observer fed by the link freezes or extrapolates through it.
const SilenceMin = 150_000

type packet struct {
	due  int64
	seq  uint64
	data []byte
}

type queue []packet

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].due != q[j].due {
		return q[i].due < q[j].due
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(packet)) }
func (q *queue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}

// Link is one impaired, seeded, unidirectional datagram link. Not safe for
// concurrent use.
type Link struct {
	cfg   Config
	r     *rand.Rand
	q     queue
	seq   uint64
	bad   bool
	last  int64 // local time the Gilbert–Elliott state last moved for a datagram (on the clock: its last tick), µs
	sent  bool  // a datagram was sent: last is set
	kept  int64 // send time of the last datagram not lost, µs
	kepts bool  // a datagram was kept: kept is set
	stats LinkStats
}

// DefaultBurstSlot is Config.BurstSlot's default, µs: two broadcast
// periods at 20 Hz.
const DefaultBurstSlot = 100_000

// maxIdleMoves caps the moves of the Gilbert–Elliott state for one silence:
// past a few dozen the state is as likely good as it will ever be.
const maxIdleMoves = 64

// NewLink returns a link with its own random source seeded by seed.
func NewLink(cfg Config, seed uint64) *Link {
	if cfg.BurstOut == 0 {
		cfg.BurstOut = 0.25
	}
	if cfg.BurstLoss == 0 {
		cfg.BurstLoss = 1
	}
	if cfg.BurstSlot == 0 {
		cfg.BurstSlot = DefaultBurstSlot
	}
	return &Link{cfg: cfg, r: rand.New(rand.NewPCG(seed, 0x6e657473696d))}
}

// Stats returns the link's counters.
func (l *Link) Stats() LinkStats { return l.stats }

// Send offers a datagram at local time now. The link copies it.
func (l *Link) Send(now int64, dg []byte) {
	l.stats.Sent++
	l.stats.Bytes += uint64(len(dg))
	// The Gilbert–Elliott state moves once for each whole slot without a
	// datagram, then once for this one.
	if tick := l.cfg.BurstClock; tick > 0 {
		// On the clock: once per whole tick since the state last moved;
		// last advances by whole ticks, so the ticks never drift.
		if !l.sent {
			l.last, l.sent = now, true
		}
		k := max((now-l.last)/tick, 0)
		for j := min(k, maxIdleMoves); j > 0; j-- {
			l.move()
		}
		l.last += k * tick
	} else {
		if l.sent && l.cfg.BurstSlot > 0 {
			for k := min((now-l.last)/l.cfg.BurstSlot, maxIdleMoves); k > 0; k-- {
				l.move()
			}
		}
		l.move()
		l.last, l.sent = now, true
	}
	if l.bad && l.r.Float64() < l.cfg.BurstLoss {
		l.stats.Lost++
		l.stats.BurstLost++
		return
	}
	if l.cfg.Loss > 0 && l.r.Float64() < l.cfg.Loss {
		l.stats.Lost++
		return
	}
	if gap := now - l.kept; l.kepts && gap >= SilenceMin {
		l.stats.Silences++
		l.stats.SilentTime += gap
		l.stats.LongestSilence = max(l.stats.LongestSilence, gap)
	}
	l.kept, l.kepts = now, true
	copies := 1
	if l.cfg.Duplicate > 0 && l.r.Float64() < l.cfg.Duplicate {
		copies = 2
		l.stats.Duplicated++
	}
	for c := 0; c < copies; c++ {
		data := bytes.Clone(dg)
		if l.cfg.Corrupt > 0 && len(data) > 0 && l.r.Float64() < l.cfg.Corrupt {
			data[l.r.IntN(len(data))] ^= byte(1 + l.r.IntN(255))
			l.stats.Corrupted++
		}
		l.Inject(now+l.cfg.Delay+l.jitter(), data)
	}
}

// move moves the Gilbert–Elliott state one step.
func (l *Link) move() {
	if l.bad {
		if l.r.Float64() < l.cfg.BurstOut {
			l.bad = false
		}
	} else if l.cfg.BurstIn > 0 && l.r.Float64() < l.cfg.BurstIn {
		l.bad = true
	}
}

func (l *Link) jitter() int64 {
	if l.cfg.Jitter <= 0 {
		return 0
	}
	return l.r.Int64N(l.cfg.Jitter + 1)
}

// Inject queues a datagram for delivery at due, bypassing the impairments
// (an adversary's packet). The link keeps dg.
func (l *Link) Inject(due int64, dg []byte) {
	l.seq++
	heap.Push(&l.q, packet{due: due, seq: l.seq, data: dg})
}

// Deliver appends every datagram due at or before now to out, earliest
// first, and returns it.
func (l *Link) Deliver(now int64, out [][]byte) [][]byte {
	for len(l.q) > 0 && l.q[0].due <= now {
		p := heap.Pop(&l.q).(packet)
		l.stats.Delivered++
		out = append(out, p.data)
	}
	return out
}
