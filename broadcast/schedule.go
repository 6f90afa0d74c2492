package broadcast

import (
	"cmp"
	"math"
	"slices"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// What an observer is sent when its link cannot carry everything: each
// broadcast its budget (bytes) is filled with whole frames, most important
// first, by priority accumulation.
//
//   - Every broadcast, each island the observer wants whose frame is in the
//     broadcast gains its importance (DefaultImportance unless
//     Config.Importance or SetWeight say otherwise) as priority.
//   - Islands go in descending priority (ties: ascending island). One whose
//     frame's estimated size fits what is left of the budget is sent and its
//     priority starts again from zero; one that does not fit is passed over
//     this broadcast, keeping its priority, and smaller ones after it may
//     still fit. The first island of a broadcast goes even when it does not
//     fit, so long as any budget is left: a frame larger than the budget is
//     sent whole and its excess is owed by the next broadcasts.
//   - A frame's size is estimated from what that island's last keyframe or
//     delta to the observer took, corrected by how far the estimates of
//     the last broadcasts were from what their frames took.
//   - Control bytes queued for the observer since its last broadcast
//     (catch-ups, Forgets, leases) are paid from the bucket first.
//   - The budget is a bucket refilled by one broadcast's worth each
//     broadcast and holding at most that: what an observer did not use is
//     not saved up for a burst, and what a frame overdrew is paid back
//     before anything else goes. So over any run of broadcasts the bytes
//     sent stay within the budget's sum plus one frame.
//   - Frames are estimated by their data alone. Parity records (Config.
//     Parity) are paid from what the frames picked leave of the credit:
//     each fragmented frame carries as many as fit, all of them alike, up
//     to the configured count; none for shortFor broadcasts after the
//     budget left a frame out. Parity never takes a frame's place. A frame
//     of several members that fits one datagram but fills a quarter of it
//     or more (codec.ParityCut) is cut into two fragments and protected
//     only when what is left after that pays for its records twice over;
//     otherwise it goes whole, unprotected, in a datagram it may share.
//   - A frame passed over is not encoded at all — not sent late: the next
//     broadcast codes that island's newer frame, against whatever baseline
//     the observer still holds (a keyframe when none).
//
// Starvation bound. Let N be the islands an observer wants, w the smallest
// importance one of them has while it waits, W the sum of all their
// importances, S the largest frame and B the budget per broadcast. An
// island is sent at least once every 2·⌈S/B⌉·(N + W/w) broadcasts: each
// island sent ahead of it in the later half of its wait had gathered at
// least as much priority as it, which bounds how often each can be, while
// the bucket sends at least one frame every ⌈S/B⌉ broadcasts.
// TestStarvationBound checks it on seeded random worlds.

// DefaultImportance is an island's importance when the game gives none: 1
// for an island at rest, plus its fastest member's speed in m/s up to 15,
// so a moving island is refreshed up to 16 times as often as a resting one
// and none is left out for long.
func DefaultImportance(_ uint32, f *island.Frame) float64 {
	var v2 float64
	for i := range f.Members {
		s := &f.Members[i].State
		v2 = max(v2, s.VX*s.VX+s.VY*s.VY)
	}
	if !(v2 < 225) { // NaN too
		return 16
	}
	return 1 + math.Sqrt(v2)
}

// cand is one island the scheduler may send this broadcast.
type cand struct {
	prio float64 // priority gathered, this broadcast's importance included
	size int     // its frame's estimated size, bytes
	isl  uint32
	i    int // its frame's index in the broadcast
	n    int // its frame's members
}

// bucket is one observer's byte budget: what it may still send.
type bucket struct {
	credit int // bytes; negative while a frame larger than what was left is paid back
	// scale corrects estimated sizes: what the frames picked actually took
	// against their estimates, averaged over the last broadcasts (1/1024
	// units; 0 means 1024, not learnt yet).
	scale   int
	planned int // the estimates of the frames picked this broadcast, bytes
}

// refill adds one broadcast's budget, keeping at most that much.
func (k *bucket) refill(budget int) { k.credit = min(k.credit+budget, budget) }

// spend takes the n bytes this broadcast took, parity among them, and
// learns from the frames' own bytes (n less parity) how far off their
// estimates were.
func (k *bucket) spend(n, parity int) {
	k.credit -= n
	n -= parity
	if k.planned > 0 {
		r := min(n*1024/k.planned, 8*1024) // this broadcast's ratio, at most 8
		if k.scale == 0 {
			k.scale = 1024
		}
		k.scale = max((3*k.scale+r)/4, 64) // at least 1/16
	}
	k.planned = 0
}

// scaled is an estimate corrected by what past estimates missed by.
func (k *bucket) scaled(size int) int {
	if k.scale == 0 {
		return size
	}
	return max(size*k.scale/1024, 1)
}

// plan picks from cs, in place reordered by priority, the islands to send
// this broadcast and returns how many it picked — cs[:n] are they — and
// what their corrected estimates left of the credit, bytes (negative when
// the first frame overdrew it). It does not spend the credit; the caller
// spends what the frames actually cost.
func (k *bucket) plan(cs []cand) (n, spare int) {
	slices.SortFunc(cs, func(a, b cand) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.isl, b.isl)
	})
	left := k.credit
	for j := range cs {
		if left <= 0 {
			break
		}
		if size := k.scaled(cs[j].size); size <= left || n == 0 {
			left -= size
			k.planned += cs[j].size
			cs[n], cs[j] = cs[j], cs[n]
			n++
		}
	}
	return n, left
}

// parityFits returns how many of want parity records per fragmented frame
// the frames picked this broadcast (cs) can carry within spare, what their
// estimates left of the credit (plan's second result), and whether the
// rest of spare pays twice over for cutting the frames that would fit a
// datagram whole but are big enough for codec.ParityCut: each then goes in
// two fragments (a header more) with that many records half its size. A
// frame whose corrected estimate exceeds one datagram of maxDatagram bytes
// is cut into that many fragments, and each of its parity records is
// about one fragment long. Parity only from bytes the frames leave: on a
// path short of bytes it would take them from frames, or queue them to
// arrive late. Cutting a frame that fits turns one datagram into three or
// four, and over a congestion-controlled path the window they fill is what
// a loss burst then stalls; room for the records twice leaves the window
// that headroom (on the chain over QUIC at 5 % loss, cutting whenever the
// records fit once committed more frames but left more runs with outages
// of a few hundred milliseconds).
func (k *bucket) parityFits(cs []cand, spare, want, maxDatagram int) (parity int, cut bool) {
	if want <= 0 || maxDatagram <= 0 {
		return 0, false
	}
	one := 0   // bytes of one parity record for every fragmented frame
	whole := 0 // bytes of one parity record for every frame cut only for parity
	for _, c := range cs {
		size := k.scaled(c.size)
		switch {
		case size > maxDatagram:
			parts := (size + maxDatagram - 1) / maxDatagram
			one += (size + parts - 1) / parts
		case c.n > 1 && size >= maxDatagram/codec.ParityCut:
			whole += (size+1)/2 + 2*codec.HeaderSize
		}
	}
	parity = want
	if one > 0 {
		parity = max(min(want, spare/one), 0)
	}
	if parity == 0 || whole == 0 {
		return parity, false
	}
	return parity, spare-parity*one >= 2*parity*whole
}

// ObserverBudget is what the last broadcast to one observer did under its
// budget (wire 3).
type ObserverBudget struct {
	// Budget is the bytes that broadcast could take: the smallest of
	// Config.ObserverKbps, the observer's share of Config.ServerKbps and
	// its path's rate (SetPathRate), over one SendPeriod. Zero means
	// unlimited: every frame went.
	Budget int
	// Sent is the datagram bytes the broadcast took.
	Sent int
	// Deferred is the frames it left out for the budget.
	Deferred int
	// OldestAge is, among the islands the observer wants whose frames were
	// in the broadcast, how many broadcasts ago the one longest without a
	// frame was last sent one: 0 when every one went.
	OldestAge int
	// Interest is how many islands are in its interest when it subscribed
	// to regions; 0 otherwise.
	Interest int
	// Parity is the parity records each frame cut into several datagrams
	// carried: Config.Parity, or 0 on a clean path (CleanAfter) or while
	// the budget is short.
	Parity int
	// Loss is the share (0–1) of the observer's datagrams its
	// confirmations show lost, averaged over about the last 64:
	// baseline.InitialLoss until a confirmation names a datagram
	// baseline.LossHorizon newer than its first.
	Loss float64
}

// SetPathRate tells the broadcaster what observer id's path carries now,
// bytes of datagrams per second (a transport derives it from its
// congestion window and round-trip time); zero means unknown, leaving only
// the configured caps. Each broadcast to it then takes at most one
// SendPeriod of that rate.
func (b *Broadcaster) SetPathRate(id ObserverID, bytesPerSecond int64) error {
	o := b.observers[id]
	if o == nil {
		return ErrNoObserver
	}
	o.pathRate = max(bytesPerSecond, 0)
	return nil
}

// Owe charges observer id's budget with bytes sent to it besides what
// Take gave (a transport's stream copies of its control, say): the next
// broadcast to it pays them from its budget first, as it pays the control
// bytes Take gave. Under no budget it changes nothing.
func (b *Broadcaster) Owe(id ObserverID, bytes int) error {
	o := b.observers[id]
	if o == nil {
		return ErrNoObserver
	}
	if bytes < 0 || bytes > MaxOwe {
		return ErrBadMessage
	}
	o.ctlOwed = min(o.ctlOwed+bytes, MaxOwe)
	return nil
}

// MaxOwe caps what Owe takes at once, and what an observer may owe, bytes.
const MaxOwe = 1 << 24

// SetObserverKbps replaces Config.ObserverKbps — every observer's cap,
// kbit/s, 0 for none — from the next broadcast on; an observer's own SetCap
// still comes first.
func (b *Broadcaster) SetObserverKbps(kbps int) error {
	if kbps < 0 {
		return ErrBadMessage
	}
	b.cfg.ObserverKbps = kbps
	return nil
}

// SetCap caps what observer id is sent from the next broadcast on, kbit/s
// of datagram bytes, over Config.ObserverKbps; zero goes back to
// Config.ObserverKbps. The budget follows at once: the next broadcast to
// it takes at most one SendPeriod of the new cap.
func (b *Broadcaster) SetCap(id ObserverID, kbps int) error {
	o := b.observers[id]
	if o == nil {
		return ErrNoObserver
	}
	if kbps < 0 {
		return ErrBadMessage
	}
	o.capKbps = kbps
	return nil
}

// SetWeight multiplies island id's importance (Config.Importance) by w
// from now on, until the island is forgotten: 2 makes it go twice as often
// as an otherwise equal island when budgets are short. w must be positive
// and finite; 1 is the default. ErrTableFull when MaxIslands islands
// already have one.
func (b *Broadcaster) SetWeight(id uint32, w float64) error {
	if !(w > 0) || math.IsInf(w, 0) {
		return ErrBadMessage
	}
	if _, ok := b.weights[id]; !ok && len(b.weights) >= b.cfg.MaxIslands {
		return ErrTableFull
	}
	b.weights[id] = w
	return nil
}

// Budget returns what the last broadcast to observer id did under its
// budget; false when no such observer is joined.
func (b *Broadcaster) Budget(id ObserverID) (ObserverBudget, bool) {
	o := b.observers[id]
	if o == nil {
		return ObserverBudget{}, false
	}
	return o.budget, true
}

// budgetOf is the bytes one broadcast to o may take; 0 means unlimited.
func (b *Broadcaster) budgetOf(o *observer) int {
	var rate int64 // bytes/s; 0: none yet
	take := func(r int64) {
		if r > 0 && (rate == 0 || r < rate) {
			rate = r
		}
	}
	if o.capKbps > 0 {
		take(int64(o.capKbps) * 1000 / 8)
	} else {
		take(int64(b.cfg.ObserverKbps) * 1000 / 8)
	}
	if b.cfg.ServerKbps > 0 {
		take(max(int64(b.cfg.ServerKbps)*1000/8/int64(len(b.observers)), 1))
	}
	take(o.pathRate)
	if rate == 0 {
		return 0
	}
	return int(max(rate*b.cfg.SendPeriod/1_000_000, 1))
}

// importance is how much priority frame f's island gains this broadcast.
func (b *Broadcaster) importance(f *island.Frame) float64 {
	v := b.cfg.Importance(f.Key.Island, f)
	if !(v > 0) || math.IsInf(v, 0) {
		v = 1
	}
	if w, ok := b.weights[f.Key.Island]; ok {
		v *= w
	}
	return v
}

// schedule picks, under o's budget, which of this broadcast's frames go to
// o, marking their islands' entries (obsIsland.pick), and returns how many
// frames it left out, how many broadcasts the longest-waiting of those
// last went, how many of want parity records per fragmented frame fit
// beside the frames it picked, and whether frames that would fit a
// datagram may be cut for parity too (parityFits). Every wanted island
// gains its importance first.
func (b *Broadcaster) schedule(o *observer, budget, want int) (deferred, oldest, parity int, cut bool) {
	o.bucket.refill(budget)
	o.bucket.credit -= o.ctlOwed // control shares the path: catch-ups and Forgets first
	o.ctlOwed = 0
	o.cands = o.cands[:0]
	for i := range b.quant {
		q, oi := b.wanted(o, i)
		if oi == nil {
			continue
		}
		imp := q.imp
		if o.regions != nil {
			if bx, ok := b.bounds[q.f.Key.Island]; ok {
				imp *= b.focus(o, bx)
			}
		}
		oi.prio += imp
		size := oi.deltaCost
		if b.deltaBase(oi, q) == nil {
			size = oi.keyCost
			if size == 0 {
				size = 8 + 14*len(q.f.Members) // a keyframe's members cost about 12 bytes each
			}
		} else if size == 0 {
			size = 2 + 4*len(q.f.Members)
		}
		o.cands = append(o.cands, cand{prio: oi.prio, size: size, isl: q.f.Key.Island, i: i, n: len(q.f.Members)})
	}
	n, spare := o.bucket.plan(o.cands)
	for _, c := range o.cands[:n] {
		oi := o.hint[c.i]
		oi.pick, oi.prio, oi.sentSeq = true, 0, b.seq
	}
	for _, c := range o.cands[n:] {
		oldest = max(oldest, int(b.seq-o.hint[c.i].sentSeq))
	}
	parity, cut = o.bucket.parityFits(o.cands[:n], spare, want, o.maxDatagram)
	return len(o.cands) - n, oldest, parity, cut
}
