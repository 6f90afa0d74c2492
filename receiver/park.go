package receiver

import "github.com/islandsync/islandsync/validator"

// Over QUIC the control stream and the datagrams travel apart: a datagram
// can overtake the Lease, Manifest, Announce or Physics its frames need —
// the stream stalls behind a lost packet, the datagrams do not. A wire-3
// datagram whose whole frames failed only for want of such a message is
// held (parked) and received again once control has changed, until it
// commits, fails for another reason, or is held longer than Config.ParkFor.
// The hold is bounded (Config.MaxParked datagrams, the oldest going first)
// and the frames are validated when received again, against the control
// state of that moment: nothing is guessed. Fragments of frames cut into
// several datagrams are not held: their reassembly has its own TTL.

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

// parkLot is the held datagrams, oldest first, with their storage kept for
// reuse.
type parkLot struct {
	held  []parked
	spare [][]byte
}

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

// clone copies the held datagrams, each into storage of its own.
func (p *parkLot) clone() parkLot {
	c := parkLot{held: make([]parked, len(p.held))}
	for i, h := range p.held {
		c.held[i] = parked{at: h.at, b: append([]byte(nil), h.b...)}
	}
	return c
}

// reset lets every held datagram go.
func (p *parkLot) reset() {
	for len(p.held) > 0 {
		p.release(len(p.held) - 1)
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

// unpark receives the held datagrams again, oldest first, when control
// changed since they were last tried, and lets go of those held longer
// than ParkFor. A datagram that commits is confirmed as if it had just
// arrived; one that fails for another reason than control goes.
func (r *Receiver) unpark(now int64) {
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
