package receiver

import (
	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

// Over QUIC the control stream and the datagrams travel apart: a datagram
// can overtake the Lease, Manifest, Announce or Physics its frames need —
// the stream stalls behind a lost packet, the datagrams do not. A wire-3
// datagram whose whole frames failed only for want of such a message is
// held (parked) and received again once control has changed, until it
// commits, fails for another reason, or is held longer than Config.ParkFor.
// A frame cut into several datagrams is held the same way once reassembled
// — its restored members, not its datagrams — and validated again; a
// hand-over's first frame of a big island is one, and its datagrams come
// with the new Lease. The hold is bounded (Config.MaxParked datagrams and
// as many reassembled frames, the oldest going first) and the frames are
// validated when received again, against the control state of that moment:
// nothing is guessed.

// Defaults of the datagram hold.
const (
	DefaultMaxParked = 16      // datagrams
	DefaultParkFor   = 500_000 // µs
)

// parked is one held datagram: a copy of its bytes and when it arrived.
type parked struct {
	at int64
	b  []byte
}

// heldFrame is one held frame reassembled from several datagrams: its
// restored members, what validation needs besides, and when it completed.
type heldFrame struct {
	at    int64
	info  baseline.FrameInfo
	flags island.Flags
	ents  []baseline.Entry
}

// parkLot is the held datagrams and reassembled frames, each oldest first,
// with their storage kept for reuse.
type parkLot struct {
	held      []parked
	spare     [][]byte
	frames    []heldFrame
	spareEnts [][]baseline.Entry
}

// addFrame holds a copy of a reassembled frame's members, completed at
// now, letting the oldest held frame go when max are held already; it
// reports how many went for room (0 or 1).
func (p *parkLot) addFrame(now int64, info *baseline.FrameInfo, flags island.Flags, ents []baseline.Entry, max int) (dropped int) {
	if len(p.frames) >= max {
		p.releaseFrame(0)
		dropped = 1
	}
	var buf []baseline.Entry
	if n := len(p.spareEnts); n > 0 {
		buf, p.spareEnts = p.spareEnts[n-1][:0], p.spareEnts[:n-1]
	}
	p.frames = append(p.frames, heldFrame{at: now, info: *info, flags: flags, ents: append(buf, ents...)})
	return dropped
}

// releaseFrame lets held frame i go, keeping its storage.
func (p *parkLot) releaseFrame(i int) {
	p.spareEnts = append(p.spareEnts, p.frames[i].ents)
	p.frames = append(p.frames[:i], p.frames[i+1:]...)
}

// waiting reports whether anything is held.
func (p *parkLot) waiting() bool { return len(p.held) > 0 || len(p.frames) > 0 }

// add holds a copy of b, received at now, letting the oldest go when max
// are held already; it reports how many went for room (0 or 1).
func (p *parkLot) add(now int64, b []byte, max int) (dropped int) {
	if len(p.held) >= max {
		p.release(0)
		dropped = 1
	}
	var buf []byte
	if n := len(p.spare); n > 0 {
		buf, p.spare = p.spare[n-1][:0], p.spare[:n-1]
	}
	p.held = append(p.held, parked{at: now, b: append(buf, b...)})
	return dropped
}

// release lets held datagram i go, keeping its storage.
func (p *parkLot) release(i int) {
	p.spare = append(p.spare, p.held[i].b)
	p.held = append(p.held[:i], p.held[i+1:]...)
}

// clone copies the held datagrams and frames, each into storage of its
// own.
func (p *parkLot) clone() parkLot {
	c := parkLot{held: make([]parked, len(p.held)), frames: make([]heldFrame, len(p.frames))}
	for i, h := range p.held {
		c.held[i] = parked{at: h.at, b: append([]byte(nil), h.b...)}
	}
	for i, f := range p.frames {
		f.ents = append([]baseline.Entry(nil), f.ents...)
		c.frames[i] = f
	}
	return c
}

// reset lets every held datagram and frame go.
func (p *parkLot) reset() {
	for len(p.held) > 0 {
		p.release(len(p.held) - 1)
	}
	for len(p.frames) > 0 {
		p.releaseFrame(len(p.frames) - 1)
	}
}

// waitsForControl reports whether a frame refused for reason may pass once
// a control message still on its way arrives: its lease, manifest, a newer
// lease or manifest, or its members' announcement.
func waitsForControl(reason validator.Reason) bool {
	switch reason {
	case validator.NoLease, validator.FutureEpoch, validator.NoManifest, validator.FutureTopology,
		validator.FutureConfig, validator.UnknownIdentity:
		return true
	}
	return false
}

// park holds wire-3 datagram b, received at now, whose whole frames wait
// for control (quantDatagram set r.waitCtl): b decoded, so it is within
// the decoder's datagram cap.
func (r *Receiver) park(now int64, b []byte) {
	if r.cfg.MaxParked < 0 {
		return
	}
	r.stats.Wire.Parked++
	r.stats.Wire.ParkDropped += uint64(r.lot.add(now, b, r.cfg.MaxParked))
}

// holdFrame holds a frame reassembled from several datagrams whose
// validation failed only for want of control (pushFragment).
func (r *Receiver) holdFrame(now int64, info *baseline.FrameInfo, flags island.Flags, ents []baseline.Entry) {
	if r.cfg.MaxParked < 0 {
		return
	}
	r.stats.Wire.FramesParked++
	r.stats.Wire.FramesParkDropped += uint64(r.lot.addFrame(now, info, flags, ents, r.cfg.MaxParked))
}

// unpark receives the held datagrams and frames again, oldest first, when
// control changed since they were last tried, and lets go of those held
// longer than ParkFor. A datagram that commits is confirmed as if it had
// just arrived; a frame that commits becomes a baseline of its island; one
// that fails for another reason than control goes. Frames go before
// datagrams, each oldest first.
func (r *Receiver) unpark(now int64) {
	for i := 0; i < len(r.lot.frames); {
		f := &r.lot.frames[i]
		if now-f.at > r.cfg.ParkFor {
			r.stats.Wire.FramesParkDropped++
			r.lot.releaseFrame(i)
			continue
		}
		if !r.ctlChanged {
			i++
			continue
		}
		switch reason := r.commitRestored(now, &f.info, f.flags, f.ents); {
		case reason == validator.OK:
			r.stats.Wire.FramesUnparked++
			r.stats.Wire.ParkedWait += uint64(max(now-f.at, 0))
			if s := r.islandOf(f.info.Key.Island); s != nil {
				r.keepBaseline(s, &f.info, f.ents)
			}
			r.lot.releaseFrame(i)
		case !waitsForControl(reason):
			r.stats.Wire.FramesParkDropped++
			r.lot.releaseFrame(i)
		default:
			i++
		}
	}
	for i := 0; i < len(r.lot.held); {
		p := &r.lot.held[i]
		if now-p.at > r.cfg.ParkFor {
			r.stats.Wire.ParkDropped++
			r.lot.release(i)
			continue
		}
		if !r.ctlChanged {
			i++
			continue
		}
		r.waitCtl = false
		switch {
		case r.quantDatagram(now, p.b):
			r.stats.Wire.Unparked++
			r.stats.Wire.ParkedWait += uint64(max(now-p.at, 0))
			r.lot.release(i)
		case !r.waitCtl:
			r.stats.Wire.ParkDropped++
			r.lot.release(i)
		default:
			i++
		}
	}
	r.ctlChanged = false
}
