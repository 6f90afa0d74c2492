package broadcast

import (
	"cmp"
	"slices"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Wire-v2 defaults.
const (
	// DefaultKeyframeEvery is how many broadcasts apart an island's
	// keyframes go to an observer at the latest (2 s at 20 Hz), besides
	// those a new stream, a new segment or a request calls for.
	DefaultKeyframeEvery = 40
	// DefaultParity is the parity records a fragmented frame carries: with
	// two, the 160-link chain (two fragments a frame) commits 92 % of its
	// frames at 10 % loss and 87 % at 25 % across the impairment matrix,
	// against 70 % and 51 % with none and 88 % and 76 % with one.
	DefaultParity = 2
	// advanceAt is how many acknowledged baselines of an island make the
	// sender advance its window, keeping the newest: well before the 32
	// slots fill, so that the observer never has to stop storing.
	advanceAt = 24
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
// wire 2, from its next frame on, over Config.Class: quant.Loose for
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

// obsIsland is what the broadcaster tracks of one island for one v2
// observer: the baselines it acknowledged, and when it last got a keyframe.
type obsIsland struct {
	snd     *baseline.Sender
	lastKey uint32 // broadcast sequence of the last keyframe
	wantKey bool   // a keyframe was asked for
}

func (o *observer) island(id uint32, maxIslands int) *obsIsland {
	if oi := o.v2[id]; oi != nil {
		return oi
	}
	if len(o.v2) >= maxIslands {
		return nil
	}
	oi := &obsIsland{snd: baseline.NewSender(), wantKey: true}
	o.v2[id] = oi
	return oi
}

// quantized is one frame of a broadcast in quantized form, shared by every
// observer: the v2 frame and the table it restores.
type quantized struct {
	f     codec.V2Frame
	table *baseline.Table
}

// framesV2 encodes a broadcast for every observer: per island a keyframe or
// a delta against the newest baseline that observer acknowledged. Frames
// of different authority times become consecutive broadcasts.
func (b *Broadcaster) framesV2(frames []*island.Frame) {
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
		b.broadcastV2(rest[:n])
		rest = rest[n:]
	}
	clear(b.byTime) // keep no frame alive past the call
}

// broadcastV2 encodes frames of one authority time, ascending by island.
func (b *Broadcaster) broadcastV2(frames []*island.Frame) {
	b.quant = b.quant[:0]
	b.seq++
	t := frames[0].Time
	for _, f := range frames {
		if !b.live(f.Key.Island) {
			b.stats.FramesUnknown++
			continue
		}
		q, ok := b.quantize(f)
		if !ok {
			b.stats.FramesRefused++
			continue
		}
		b.stats.Frames++
		b.quant = append(b.quant, q)
	}
	if len(b.quant) == 0 {
		return
	}
	hasher := b.v2Encoder(b.cfg.Codec.MaxDatagram)
	hasher.Begin(b.seq, t)
	for i := range b.quant {
		hasher.FrameDigest(&b.quant[i].f) // once per frame, whatever the observers
	}
	b.ids = b.ids[:0]
	for id := range b.observers {
		b.ids = append(b.ids, id)
	}
	slices.Sort(b.ids)
	for _, id := range b.ids {
		o := b.observers[id]
		enc := b.v2Encoder(o.maxDatagram)
		enc.Begin(b.seq, t)
		for i := range b.quant {
			q := &b.quant[i]
			if !o.wants(q.f.Key.Island) {
				continue
			}
			oi := o.island(q.f.Key.Island, b.cfg.MaxIslands)
			if oi == nil {
				continue
			}
			var err error
			if base, ok := oi.snd.Baseline(); ok && !oi.wantKey && b.seq-oi.lastKey < uint32(b.cfg.KeyframeEvery) && deltaOK(base, &q.f) {
				err = enc.AddDelta(&q.f, &codec.V2Ref{Window: oi.snd.Gen(), Base: base})
			} else {
				err = enc.AddKey(&q.f, oi.snd.Gen())
				oi.lastKey, oi.wantKey = b.seq, false
			}
			if err != nil {
				b.stats.FramesRefused++
				continue
			}
			oi.snd.Sent(q.table)
		}
		b.one[0] = o
		b.share(b.one[:], enc.Datagrams(), func(dst []uint32, i int) []uint32 { return append(dst, enc.Islands(i)...) })
	}
}

// deltaOK reports whether f may be coded against base: the same stream,
// sender, segment, class and members, and not a boundary frame.
func deltaOK(base *baseline.Table, f *codec.V2Frame) bool {
	bf := &base.Frame
	return bf.Key.Stream() == f.Key.Stream() && bf.Sender == f.Sender && bf.Segment == f.Segment &&
		bf.Class == f.Class && len(base.Entries) == len(f.Members) && f.Flags&island.FlagInitial == 0
}

// quantize turns a sampled frame into its v2 form and the table it restores.
func (b *Broadcaster) quantize(f *island.Frame) (quantized, bool) {
	class := b.class(f.Key.Island, len(f.Members))
	p := class.Precision()
	key := f.Key
	key.Seq = b.seq
	t := &baseline.Table{ID: b.seq, Entries: make([]baseline.Entry, len(f.Members)),
		Frame: baseline.FrameInfo{Sender: f.Sender, Key: key, Time: f.Time, Segment: f.Segment, Class: class}}
	for i := range f.Members {
		q, err := quant.Quantize(f.Members[i].State, p)
		if err != nil {
			return quantized{}, false
		}
		t.Entries[i] = baseline.Entry{ID: f.Members[i].ID, Record: baseline.Record{Q: q, Time: f.Time, Segment: f.Segment}}
	}
	return quantized{f: codec.V2Frame{Sender: f.Sender, Key: key, Segment: f.Segment, Flags: f.Flags, Class: class, Members: t.Entries}, table: t}, true
}

func (b *Broadcaster) v2Encoder(maxDatagram int) *codec.V2Encoder {
	if e := b.enc2[maxDatagram]; e != nil {
		return e
	}
	c := b.cfg.Codec
	c.MaxDatagram = maxDatagram
	e, _ := codec.NewV2Encoder(c) // the cap was checked at Join
	_ = e.SetParity(b.cfg.Parity) // checked in New
	b.enc2[maxDatagram] = e
	return e
}

// held records an observer's v2 baseline acknowledgements: confirmations of
// window advances, acknowledged frames, and — past advanceAt acknowledged
// tables — a new window advance keeping the newest, queued to it.
func (b *Broadcaster) held(o *observer, m codec.Held) {
	adv := b.adv[:0]
	for _, e := range m.Entries {
		oi := o.v2[e.Island]
		if oi == nil {
			continue
		}
		if g, ok := oi.snd.Advancing(); ok && e.Window == g {
			oi.snd.Confirmed(g)
		}
		oi.snd.AckHeld(e.Window, e.Newest, e.Prior)
		if n, newest := oi.snd.Acked(); n >= advanceAt {
			if ctl, ok := oi.snd.Advance(newest); ok {
				adv = append(adv, codec.WindowEntry{Island: e.Island, Gen: ctl.Gen, Keep: newest})
			}
		}
	}
	b.adv = adv
	if len(adv) > 0 {
		queue(b, o, codec.Windows{Entries: adv})
	}
}

// keyframes marks islands whose next frame to the observer must be whole.
func (b *Broadcaster) keyframes(o *observer, m codec.Keyframes) {
	for _, id := range m.Islands {
		if oi := o.v2[id]; oi != nil {
			oi.wantKey = true
			oi.snd.KeyframeRequested()
		}
	}
}
