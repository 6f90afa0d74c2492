package broadcast

import (
	"cmp"
	"slices"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Wire-3 defaults.
const (
	// DefaultKeyframeEvery is how many broadcasts apart an island's
	// keyframes go to an observer at the latest (2 s at 20 Hz), besides
	// those a new stream, a new segment or a request calls for. Islands
	// take their turns spread over the interval, so that no broadcast
	// carries many more keyframes than another.
	DefaultKeyframeEvery = 40
	// DefaultParity is the parity records a fragmented frame carries: with
	// two, the 240-link chain (two fragments a frame) commits 92 % of its
	// frames at 10 % loss and 87 % at 25 % across the impairment matrix,
	// against 70 % and 51 % with none and 88 % and 76 % with one.
	DefaultParity = 2
)

// DefaultClass is the class of an island the game said nothing about: a
// long structure (more than 16 bodies) is a chain, anything else rigid —
// both 1/512 m and 2⁻¹² turn. Size never makes an island loose: a lone
// crate or vehicle matters as much as a chain link. Decoration is the
// game's call (Config.Class, SetClass).
func DefaultClass(_ uint32, members int) quant.Class {
	if members > 16 {
		return quant.Chain
	}
	return quant.Rigid
}

// SetClass sets island id's constraint class, and so its quantization on
// wire 3, from its next frame on, over Config.Class: quant.Loose for
// decoration the game does not interact with, quant.Rigid or quant.Chain
// for anything it does. The setting lasts until the island is forgotten.
// ErrBadMessage for a class that is none of the three; ErrTableFull when
// MaxIslands islands already have one.
func (b *Broadcaster) SetClass(id uint32, c quant.Class) error {
	if c > quant.Loose {
		return ErrBadMessage
	}
	if _, ok := b.classes[id]; !ok && len(b.classes) >= b.cfg.MaxIslands {
		return ErrTableFull
	}
	b.classes[id] = c
	return nil
}

// class is the class island id's frames are quantized with.
func (b *Broadcaster) class(id uint32, members int) quant.Class {
	if c, ok := b.classes[id]; ok {
		return c
	}
	return b.cfg.Class(id, members)
}

// obsIsland is what the broadcaster tracks of one island for one observer
// on wire 3: what the observer holds of it (a baseline.Track of the
// observer's baseline.Sender), and its keyframe schedule.
type obsIsland struct {
	track   *baseline.Track
	id      uint32 // the island
	lastKey uint32 // broadcast sequence the periodic keyframe schedule counts from
	wantKey bool   // a keyframe is due: new to the observer, or asked for
	gone    bool   // forgotten: a hint that still points here is stale
	// under a budget (schedule.go)
	prio      float64 // priority gathered since its last frame went
	pick      bool    // picked to go in the broadcast being encoded
	sentSeq   uint32  // broadcast sequence of its last frame sent
	keyCost   int     // bytes its last keyframe took; 0 none yet
	deltaCost int     // bytes its last delta took; 0 none yet
}

func (o *observer) island(id uint32) *obsIsland {
	if oi := o.held[id]; oi != nil {
		return oi
	}
	tr := o.snd.Track(id) // capped at MaxIslands
	if tr == nil {
		return nil
	}
	oi := &obsIsland{track: tr, id: id, wantKey: true, sentSeq: o.lastSeq}
	o.held[id] = oi
	return oi
}

// islandAt is island(id) for the i-th frame of a broadcast, looked up in
// the map only when the previous broadcast's i-th frame was of another
// island: a broadcast's frames are mostly those of the last one, in the
// same order. It keeps the answer as the next broadcast's hint.
func (o *observer) islandAt(i int, id uint32) *obsIsland {
	if i < len(o.hint) {
		if oi := o.hint[i]; oi != nil && oi.id == id && !oi.gone {
			return oi
		}
	} else {
		o.hint = append(o.hint, make([]*obsIsland, i+1-len(o.hint))...)
	}
	oi := o.island(id)
	o.hint[i] = oi
	return oi
}

// forgetIsland drops what the observer holds of island id.
func (o *observer) forgetIsland(id uint32) {
	if oi := o.held[id]; oi != nil {
		oi.gone = true
	}
	delete(o.held, id)
	o.snd.Forget(id)
}

// phase spreads islands over the keyframe interval: island id's periodic
// keyframes fall on broadcasts whose sequence is phase(id) modulo every,
// whatever broadcast it joined on. Islands go in blocks of keyBlock
// consecutive ids, so that the keyframes of one broadcast sit side by side
// and the runs of islands at rest between them stay long; consecutive
// blocks take consecutive turns.
func phase(id uint32, every int) uint32 {
	return id / keyBlock % uint32(every)
}

// shortFor is how many broadcasts an observer goes without parity after
// its budget left a frame out (1 s at 20 Hz).
const shortFor = 20

// keyBlock is how many consecutive island ids take their periodic
// keyframes in the same broadcast.
const keyBlock = 4

// quantized is one frame of a broadcast in quantized form, shared by every
// observer: the wire-3 frame and the table it restores.
type quantized struct {
	f     codec.Frame
	table *baseline.Table
	imp   float64 // importance, when some observer has a budget
}

// framesQuant encodes a broadcast for every observer: per island a keyframe or
// a delta against the newest frame that observer confirmed holding. Frames
// of different authority times become consecutive broadcasts.
func (b *Broadcaster) framesQuant(frames []*island.Frame) {
	b.byTime = append(b.byTime[:0], frames...)
	slices.SortStableFunc(b.byTime, func(x, y *island.Frame) int {
		if c := cmp.Compare(x.Time, y.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.Key.Island, y.Key.Island)
	})
	for rest := b.byTime; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].Time == rest[0].Time {
			n++
		}
		b.broadcastQuant(rest[:n])
		rest = rest[n:]
	}
	clear(b.byTime) // keep no frame alive past the call
}

// broadcastQuant encodes frames of one authority time, ascending by island.
func (b *Broadcaster) broadcastQuant(frames []*island.Frame) {
	b.quant = b.quant[:0]
	b.seq++
	t := frames[0].Time
	budgets := false // some observer has a budget: importance counts
	for _, o := range b.observers {
		if b.budgetOf(o) > 0 {
			budgets = true
			break
		}
	}
	for i, f := range frames {
		if !b.liveAt(i, f.Key.Island) {
			b.stats.FramesUnknown++
			continue
		}
		q, ok := b.quantize(f)
		if !ok {
			b.stats.FramesRefused++
			continue
		}
		b.stats.Frames++
		if budgets {
			q.imp = b.importance(f)
		}
		if len(f.Members) > 1 {
			q.f.Links = b.physics[f.Key.Island].links // the encoder checks they describe the frame
		}
		b.quant = append(b.quant, q)
	}
	if len(b.quant) > 0 {
		b.encodeQuant(t)
	}
	// The broadcast's own references end: a table no observer's datagram
	// carried goes back to the pool now, the others once no observer
	// holds them.
	for i := range b.quant {
		b.tables.Done(b.quant[i].table)
		b.quant[i] = quantized{}
	}
	b.quant = b.quant[:0]
}

// encodeQuant encodes the broadcast's frames (b.quant, of authority time t)
// for every observer.
func (b *Broadcaster) encodeQuant(t island.Time) {
	hasher := b.wireEncoder(b.cfg.Codec.MaxDatagram)
	hasher.Begin(0, b.seq, t)
	for i := range b.quant {
		hasher.FrameDigest(&b.quant[i].f) // once per frame, whatever the observers
	}
	b.ids = b.ids[:0]
	for id := range b.observers {
		b.ids = append(b.ids, id)
	}
	slices.Sort(b.ids)
	every := uint32(b.cfg.KeyframeEvery)
	for _, id := range b.ids {
		o := b.observers[id]
		o.lastSeq = b.seq
		enc := b.wireEncoder(o.maxDatagram)
		enc.Begin(o.packet, b.seq, t)
		budget := b.budgetOf(o)
		// Parity goes only to a path that lost a datagram lately
		// (CleanAfter), and under a budget only as much as fits beside the
		// frames picked (parityFits) — none for a second after a broadcast
		// left frames out: the path is taken to be short of bytes, and
		// parity would take them from frames.
		parity := b.cfg.Parity
		if !b.cfg.FixedParity && o.snd.Clean() >= CleanAfter {
			parity = 0
		}
		if budget > 0 && int32(b.seq-o.shortUntil) < 0 {
			parity = 0
		}
		o.budget = ObserverBudget{Budget: budget, Interest: len(o.inside), Loss: o.snd.Loss()}
		cut := budget == 0
		if budget > 0 {
			o.budget.Deferred, o.budget.OldestAge, parity, cut = b.schedule(o, budget, parity)
			b.stats.Deferred += uint64(o.budget.Deferred)
			if o.budget.Deferred > 0 {
				o.shortUntil = b.seq + shortFor
			}
		} else {
			o.ctlOwed = 0 // nothing to pay it from
		}
		o.budget.Parity = parity
		_ = enc.SetParity(parity)
		// Under a budget, parity is paid from what the frames leave:
		// frames that fit a datagram are cut for it only when what is
		// left pays for their records twice over; otherwise they stay
		// whole.
		enc.SetParityCut(cut)
		for i := range b.quant {
			q, oi := b.wanted(o, i)
			if oi == nil {
				continue
			}
			size, par := 0, int64(0)
			if budget > 0 {
				if !oi.pick {
					continue
				}
				oi.pick = false
				size, par = enc.Size(), enc.ParityBytes()
			}
			var err error
			switch base := b.deltaBase(oi, q); {
			case base != nil:
				err = enc.AddDelta(&q.f, &codec.Ref{Base: base})
				if budget > 0 && err == nil {
					oi.deltaCost = dataCost(enc, size, par, parity)
				}
			default:
				f := &q.f
				if oi.wantKey && f.Links != nil {
					// A keyframe asked for restores without the island's
					// links: an observer that lacks them still gets it.
					plain := *f
					plain.Links = nil
					f = &plain
				}
				err = enc.AddKey(f)
				if budget > 0 && err == nil {
					oi.keyCost = dataCost(enc, size, par, parity)
				}
				if oi.wantKey || b.seq-oi.lastKey < every {
					// Off schedule (new, asked for, a new stream): the next
					// periodic keyframe still falls in the island's turn.
					oi.lastKey = b.seq - (b.seq%every+every-phase(q.f.Key.Island, b.cfg.KeyframeEvery))%every
				} else {
					oi.lastKey = b.seq
				}
				oi.wantKey = false
			}
			if err != nil {
				b.stats.FramesRefused++
			}
		}
		dgs := enc.Datagrams()
		_ = enc.SetParity(b.cfg.Parity)
		if budget > 0 {
			par := 0
			for i, d := range dgs {
				o.budget.Sent += len(d)
				if enc.Parts(i) == 0 {
					par += len(d)
				}
			}
			o.bucket.spend(o.budget.Sent, par)
		}
		b.carried(o, enc, dgs)
		o.packet = enc.Next()
		b.one[0] = o
		b.share(b.one[:], dgs, func(dst []uint32, i int) []uint32 { return append(dst, enc.Islands(i)...) })
	}
}

// dataCost is what the frame just added to enc took without its parity
// records, in bytes, at least 1: the encoder's size and parity bytes
// before it were size and par, and it carries parity records per frame
// it cuts into fragments, each in a datagram of its own. The scheduler
// estimates frames by their data and pays their parity from what they
// leave of the budget.
func dataCost(enc *codec.Encoder, size int, par int64, parity int) int {
	n := enc.Size() - size
	if p := int(enc.ParityBytes() - par); p > 0 {
		n -= p + parity*codec.HeaderSize
	}
	return max(n, 1)
}

// CleanAfter is how many datagrams in a row an observer's confirmations
// must show received before its frames go without parity: about 3 s of the
// 240-link chain at 20 Hz. One judged lost brings parity back at once.
// Parity only on a path that loses: without loss it would double a big
// frame's bytes for nothing.
const CleanAfter = 256

// deltaBase returns the baseline q's frame goes to o's island entry oi as
// a delta against; nil when it goes whole (no usable baseline, a keyframe
// asked for or due, or a frame that may not be coded against it).
func (b *Broadcaster) deltaBase(oi *obsIsland, q *quantized) *baseline.Table {
	base, ok := oi.track.Baseline(b.seq)
	if !ok || oi.wantKey || b.seq-oi.lastKey >= uint32(b.cfg.KeyframeEvery) || !deltaOK(base, &q.f) {
		return nil
	}
	return base
}

// wanted returns the i-th frame of the broadcast and o's entry of its
// island; a nil entry when o does not want the island (or the table of
// what o holds is full).
func (b *Broadcaster) wanted(o *observer, i int) (*quantized, *obsIsland) {
	q := &b.quant[i]
	if !o.wants(q.f.Key.Island) {
		return q, nil
	}
	return q, o.islandAt(i, q.f.Key.Island)
}

// carried records, in the observer's baseline.Sender, which frames each
// datagram just encoded for it carried, so that its confirmations of
// datagrams tell which baselines it holds. Datagrams carry islands in
// ascending order, as b.quant holds their frames (a fragmented frame's
// island in several datagrams in a row): one walk along both finds every
// frame.
func (b *Broadcaster) carried(o *observer, enc *codec.Encoder, dgs [][]byte) {
	first := enc.Next() - uint32(len(dgs))
	k := 0
	for i := range dgs {
		o.snd.Packet(first + uint32(i))
		parts := enc.Parts(i)
		if parts == 0 { // parity: no data of a frame
			continue
		}
		for _, isl := range enc.Islands(i) {
			for k < len(b.quant) && b.quant[k].f.Key.Island < isl {
				k++
			}
			if k == len(b.quant) || b.quant[k].f.Key.Island != isl {
				continue
			}
			oi := o.islandAt(k, isl) // the encode loop's answer: no lookup
			if oi == nil {
				continue
			}
			o.snd.Carried(oi.track, b.quant[k].table, parts)
		}
	}
}

// deltaOK reports whether f may be coded against base: the same stream,
// sender, segment, class and members, and not a boundary frame.
func deltaOK(base *baseline.Table, f *codec.Frame) bool {
	bf := &base.Frame
	return bf.Key.Stream() == f.Key.Stream() && bf.Sender == f.Sender && bf.Segment == f.Segment &&
		bf.Class == f.Class && len(base.Entries) == len(f.Members) && f.Flags&island.FlagInitial == 0
}

// quantize turns a sampled frame into its wire-3 form and the table it restores.
func (b *Broadcaster) quantize(f *island.Frame) (quantized, bool) {
	class := b.class(f.Key.Island, len(f.Members))
	p := class.Precision()
	key := f.Key
	key.Seq = b.seq
	t := b.tables.Table(len(f.Members))
	t.ID = b.seq
	t.Frame = baseline.FrameInfo{Sender: f.Sender, Key: key, Time: f.Time, Segment: f.Segment, Class: class}
	for i := range f.Members {
		q, err := quant.Quantize(f.Members[i].State, p)
		if err != nil {
			b.tables.Done(t)
			return quantized{}, false
		}
		t.Entries[i] = baseline.Entry{ID: f.Members[i].ID, Record: baseline.Record{Q: q, Time: f.Time, Segment: f.Segment}}
	}
	return quantized{f: codec.Frame{Sender: f.Sender, Key: key, Segment: f.Segment, Flags: f.Flags, Class: class, Members: t.Entries}, table: t}, true
}

func (b *Broadcaster) wireEncoder(maxDatagram int) *codec.Encoder {
	if e := b.enc2[maxDatagram]; e != nil {
		return e
	}
	c := b.cfg.Codec
	c.MaxDatagram = maxDatagram
	e, _ := codec.NewEncoder(c)   // the cap was checked at Join
	_ = e.SetParity(b.cfg.Parity) // checked in New
	b.enc2[maxDatagram] = e
	return e
}

// received applies an observer's confirmation of datagrams.
func (b *Broadcaster) received(o *observer, m codec.Received) {
	o.snd.Received(m.Newest, m.Prior)
}

// keyframes marks islands whose next frame to the observer must be whole,
// and makes the observer's Sender take none of their frames sent so far
// as held.
func (b *Broadcaster) keyframes(o *observer, m codec.Keyframes) {
	for _, id := range m.Islands {
		if oi := o.held[id]; oi != nil {
			oi.wantKey = true
			oi.track.Refused(b.seq + 1)
		}
	}
}
