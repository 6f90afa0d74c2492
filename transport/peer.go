package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/token"
)

// peer is one observer connection on the server: a bounded control byte
// queue drained by its writer, and a bounded datagram queue drained by its
// sender. Run fills both without ever blocking on the network.
type peer struct {
	id          broadcast.ObserverID
	conn        *quic.Conn
	stream      *quic.Stream
	remote      net.Addr
	maxDatagram int
	m           *Metrics
	broke       bool         // Run's alone: the observer broke the protocol; its messages still queued are ignored
	token       *token.Token // what its connect token granted; nil without one
	stall       time.Duration
	heard       atomic.Int64  // Unix ns of the last control message from the observer
	inFlight    atomic.Int32  // its messages read but not yet applied by Run
	writingAt   atomic.Int64  // Unix ns the control write in progress began; 0 when none is
	sentSince   time.Time     // Run's alone: when its first datagram was queued; zero before
	ctlOff      uint64        // Run's alone: control-stream position of the next byte queued
	copies      []pendingCopy // Run's alone: stream copies still to send (copyControl)
	late        time.Duration // a datagram queued longer is dropped, not sent; 0: never
	handed      atomic.Int64  // datagram and control bytes handed to quic-go
	quicHeld    atomic.Int64  // of them, about how many it has not yet sent (pace)

	mu        sync.Mutex
	ctl       []byte    // control bytes not yet written
	ctlSince  time.Time // when the oldest of them was queued
	ctlCap    int
	dgs       []queued // datagrams not yet sent
	dgCap     int
	wake      chan struct{} // writer wake-up (control)
	wakeDG    chan struct{} // sender wake-up (datagrams)
	closed    bool
	reason    string
	closeOnce sync.Once
}

// pendingCopy is a stream copy datagram and how many more broadcasts send it.
type pendingCopy struct {
	b     []byte
	sends int
}

// Stream copies: control bytes a broadcast queued on the stream go again
// as datagrams (codec.StreamCopy) at that broadcast and the copySends − 1
// after it (control queued at a step without frames: from the next
// broadcast on), so that a lost stream packet — which QUIC sends again
// only after a round trip or more, while frames that need it wait — costs
// the observer a broadcast period rather than that, and a loss burst of a
// few packets does not take every copy. They go only where parity
// goes (a path that lost datagrams lately, with room in its budget for
// parity), and only for a broadcast's control that fits copyDatagrams
// datagrams: a large catch-up goes by the stream alone. The observer's
// budget pays for them (flush owes their bytes to the broadcaster).
const (
	copySends     = 3
	copyDatagrams = 2
	copyKept      = 16 // copies waiting at most; the oldest go first
)

// copyControl makes the stream copies of ctl, the control bytes just queued
// at stream position p.ctlOff.
func (p *peer) copyControl(ctl []byte) {
	room := p.maxDatagram - codec.StreamCopyHeaderSize
	if room <= 0 || len(ctl) > copyDatagrams*room {
		return
	}
	for off := 0; off < len(ctl); off += room {
		run := ctl[off:min(off+room, len(ctl))]
		c := codec.StreamCopy{Offset: p.ctlOff + uint64(off), Bytes: run}
		p.copies = append(p.copies, pendingCopy{c.Append(nil), copySends})
	}
	if over := len(p.copies) - copyKept; over > 0 { // control with no broadcast to carry it
		p.copies = slices.Delete(p.copies, 0, over)
	}
}

// appendCopies appends to dgs the stream copies this broadcast sends; the
// server calls it once per broadcast.
func (p *peer) appendCopies(dgs []broadcast.Datagram) []broadcast.Datagram {
	kept := p.copies[:0]
	for _, c := range p.copies {
		dgs = append(dgs, broadcast.Datagram{Bytes: c.b})
		if c.sends--; c.sends > 0 {
			kept = append(kept, c)
		}
	}
	clear(p.copies[len(kept):])
	p.copies = kept
	return dgs
}

// queued is one datagram waiting for its observer, with when it was queued.
type queued struct {
	broadcast.Datagram
	at time.Time
}

func newPeer(id broadcast.ObserverID, conn *quic.Conn, dgCap, ctlCap int, stall time.Duration, m *Metrics) *peer {
	return &peer{id: id, conn: conn, remote: conn.RemoteAddr(), m: m, ctlCap: ctlCap, dgCap: dgCap, stall: stall,
		wake: make(chan struct{}, 1), wakeDG: make(chan struct{}, 1)}
}

// controlFirst is how long a control write may wait before the observer's
// datagrams give way to it.
const controlFirst = 20 * time.Millisecond

// controlWaits reports whether a control write has been waiting longer than
// controlFirst at now.
func (p *peer) controlWaits(now time.Time) bool {
	t := p.writingAt.Load()
	return t != 0 && now.Sub(time.Unix(0, t)) > controlFirst
}

// hear notes a control message from the observer at now.
func (p *peer) hear(now time.Time) { p.heard.Store(now.UnixNano()) }

// silent reports whether the observer has been sent datagrams for longer
// than the stall bound while sending nothing back for that long: a client
// that reads nothing (a live one sends feedback several times a second,
// and at least an empty Keyframes every second). It is never silent while a
// message of its waits for Run: then the server is behind, not the
// observer, and its reader has stopped reading to wait. Run calls it after
// queueing.
func (p *peer) silent(now time.Time, sent bool) bool {
	if sent && p.sentSince.IsZero() {
		p.sentSince = now
	}
	if p.sentSince.IsZero() || now.Sub(p.sentSince) <= p.stall || p.inFlight.Load() > 0 {
		return false
	}
	return now.Sub(time.Unix(0, p.heard.Load())) > p.stall
}

// queueAge returns how long the oldest control byte or datagram queued for
// the observer has waited, at now; zero when nothing waits.
func (p *peer) queueAge(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var age time.Duration
	if len(p.ctl) > 0 {
		age = now.Sub(p.ctlSince)
	}
	if len(p.dgs) > 0 {
		age = max(age, now.Sub(p.dgs[0].at))
	}
	return age
}

func (p *peer) start() {
	go p.writeControl()
	go p.sendDatagrams()
}

// queueControl appends control bytes; it reports false when the backlog
// would pass the cap (the caller closes the connection).
func (p *peer) queueControl(b []byte) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return true
	}
	if len(p.ctl)+len(b) > p.ctlCap {
		p.mu.Unlock()
		return false
	}
	if len(p.ctl) == 0 {
		p.ctlSince = time.Now()
	}
	p.ctl = append(p.ctl, b...)
	p.mu.Unlock()
	signal(p.wake)
	return true
}

// queueDatagrams queues one broadcast's datagrams. Queued datagrams whose
// islands all have a newer frame in this broadcast are dropped first; past
// the cap the oldest go. It returns the frames and datagrams dropped.
func (p *peer) queueDatagrams(dgs []broadcast.Datagram) (frames, datagrams int) {
	now := time.Now()
	var fresh []uint32
	for _, d := range dgs {
		for _, isl := range d.Islands {
			if i, ok := slices.BinarySearch(fresh, isl); !ok {
				fresh = slices.Insert(fresh, i, isl)
			}
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, 0
	}
	var superseded []uint32 // islands whose queued frame was dropped
	kept := p.dgs[:0]
	for _, d := range p.dgs {
		if coveredBy(d.Islands, fresh) {
			datagrams++
			for _, isl := range d.Islands {
				if i, ok := slices.BinarySearch(superseded, isl); !ok {
					superseded = slices.Insert(superseded, i, isl)
				}
			}
			continue
		}
		kept = append(kept, d)
	}
	clear(p.dgs[len(kept):])
	p.dgs = kept
	for _, d := range dgs {
		p.dgs = append(p.dgs, queued{d, now})
	}
	if over := len(p.dgs) - p.dgCap; over > 0 {
		for _, d := range p.dgs[:over] {
			frames += len(d.Islands)
		}
		datagrams += over
		p.dgs = slices.Delete(p.dgs, 0, over)
	}
	p.mu.Unlock()
	signal(p.wakeDG)
	return frames + len(superseded), datagrams
}

// coveredBy reports whether every island of a (ascending) is in b (ascending).
func coveredBy(a, b []uint32) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return len(a) > 0
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// writeChunk is how much control the writer hands QUIC at a time: each
// chunk must go within the stall bound, so an observer that reads slowly but
// steadily keeps its connection however large its catch-up.
const writeChunk = 16 << 10

func (p *peer) writeControl() {
	var buf []byte
	for {
		select {
		case <-p.wake:
		case <-p.conn.Context().Done():
			return
		}
		p.mu.Lock()
		buf, p.ctl = p.ctl, buf[:0]
		p.mu.Unlock()
		for b := buf; len(b) > 0; {
			n := min(len(b), writeChunk)
			start := time.Now()
			_ = p.stream.SetWriteDeadline(start.Add(p.stall))
			p.writingAt.Store(start.UnixNano())
			err := p.hand(n, func() error { _, err := p.stream.Write(b[:n]); return err })
			p.writingAt.Store(0)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					p.m.reject("control-stalled")
					p.close(CodeBacklog, "control stream not read")
					return
				}
				p.close(CodeShutdown, "")
				return
			}
			b = b[n:]
		}
	}
}

// hand counts n bytes as handed to quic-go, then hands them over (give);
// when give fails they are taken off the count again. Counted first:
// quic-go may send them before give returns — a stream Write returns only
// once they are packed — and a byte the pacer sees sent before it sees it
// handed would count as held for good (paceMeter).
func (p *peer) hand(n int, give func() error) error {
	p.handed.Add(int64(n))
	err := give()
	if err != nil {
		p.handed.Add(-int64(n))
	}
	return err
}

func (p *peer) sendDatagrams() {
	var meter paceMeter
	for {
		select {
		case <-p.wakeDG:
		case <-p.conn.Context().Done():
			return
		}
		for {
			p.mu.Lock()
			if len(p.dgs) == 0 {
				p.mu.Unlock()
				break
			}
			d := p.dgs[0]
			p.dgs[0] = queued{}
			p.dgs = p.dgs[1:]
			p.mu.Unlock()
			now := time.Now()
			if p.late > 0 {
				if now = p.pace(&meter); now.IsZero() {
					return
				}
			}
			if p.late > 0 && now.Sub(d.at) > p.late {
				// Too late to be worth sending: the observer has or will
				// have a newer frame of its islands first.
				p.m.droppedLate(len(d.Islands))
				continue
			}
			if p.controlWaits(now) {
				// Control first: on a congested path QUIC fills each packet
				// with a datagram before stream data, so datagrams sent
				// now would keep the control stream waiting. Frames are
				// lossy anyway; this one is dropped, counted.
				p.m.droppedSlow(len(d.Islands), 1)
				continue
			}
			// SendDatagram blocks while quic-go's own small queue is full:
			// meanwhile Run keeps queueing, and the drop rules above apply.
			if err := p.hand(len(d.Bytes), func() error { return p.conn.SendDatagram(d.Bytes) }); err != nil {
				if p.conn.Context().Err() != nil {
					return
				}
				p.m.reject("datagram-send")
				continue
			}
			p.m.sent(len(d.Bytes))
			p.m.waited(time.Since(d.at))
		}
	}
}

// pace waits until quic-go has sent nearly all it was handed, so that a
// datagram waits here — where one too late is dropped — rather than in
// quic-go's queue, which drains no faster than the congestion window allows
// and from which nobody can take a stale datagram back. It returns the
// time it let the datagram go; zero when the connection ended meanwhile.
func (p *peer) pace(m *paceMeter) time.Time {
	for {
		now := time.Now()
		sent := p.conn.ConnectionStats().BytesSent // before the handed count: see paceMeter
		held, gaveUp := m.observe(now, sent, p.handed.Load(), 2*p.late)
		if gaveUp {
			p.m.paceGaveUp()
		}
		p.quicHeld.Store(held)
		if held <= paceHeld {
			return now
		}
		t := time.NewTimer(paceStep)
		select {
		case <-t.C:
		case <-p.conn.Context().Done():
			t.Stop()
			return time.Time{}
		}
	}
}

// paceMeter estimates how many bytes quic-go holds unsent: what it was
// handed (datagrams and control bytes, peer.handed) less what it has put
// on the wire (ConnectionStats' BytesSent), never below zero — packet
// headers and acknowledgements only make it look emptier. The estimate
// is right only if no byte is seen sent before it is seen handed: the
// floor would swallow the early send, and the byte would then count as
// held for good, holding every datagram after it. So writers count bytes
// before quic-go gets them (peer.hand), and BytesSent is read before the
// handed count.
type paceMeter struct {
	held       int64     // bytes
	lastHanded int64     // the handed count at the last observation
	lastSent   uint64    // BytesSent at the last observation
	moved      time.Time // when BytesSent last grew; zero before the first observation
}

// observe takes BytesSent and the handed count read at now and returns
// the bytes held. When nothing has gone on the wire for longer than
// giveUp, quic-go holds nothing it could send (what it was handed and
// never sent — a datagram it dropped as too large — must not hold the
// pace forever): the estimate starts again from zero, and gaveUp reports
// whether that released bytes over paceHeld.
func (m *paceMeter) observe(now time.Time, sent uint64, handed int64, giveUp time.Duration) (held int64, gaveUp bool) {
	m.held = max(m.held+(handed-m.lastHanded)-int64(sent-m.lastSent), 0)
	if sent != m.lastSent || m.moved.IsZero() {
		m.moved = now
	} else if now.Sub(m.moved) > giveUp {
		gaveUp = m.held > paceHeld
		m.held = 0
	}
	m.lastSent, m.lastHanded = sent, handed
	return m.held, gaveUp
}

// pathGain is how far above the congestion window's rate an observer's
// budget goes: QUIC grows its window only while the window is what holds
// the sender back, so a budget at exactly the window's rate would let each
// loss shrink it for good.
const pathGain = 1.25

// paceHeld is how many bytes quic-go may hold unsent before the next
// datagram waits (about two full datagrams), and paceStep how often a
// waiting sender looks again.
const (
	paceHeld = 2500
	paceStep = 2 * time.Millisecond
)

// pathRate is what the observer's path carries now, datagram bytes per
// second: QUIC's congestion window over its smoothed round-trip time, less
// what is still queued for the observer (control bytes and datagrams
// here, and what quic-go holds unsent, spread over one broadcast period). Zero before the first round-trip
// sample; at least 1 after, so that a path that carries nothing now still
// gets one frame now and then rather than none at all.
func (p *peer) pathRate(period time.Duration) int64 {
	st := p.conn.ConnectionStats()
	if st.SmoothedRTT <= 0 || st.CongestionWindow == 0 || period <= 0 {
		return 0
	}
	rate := int64(pathGain * float64(st.CongestionWindow) / st.SmoothedRTT.Seconds())
	p.mu.Lock()
	backlog := len(p.ctl)
	for _, d := range p.dgs {
		backlog += len(d.Bytes)
	}
	p.mu.Unlock()
	rate -= int64(float64(backlog) / period.Seconds())
	return max(rate, 1)
}

func (p *peer) close(code quic.ApplicationErrorCode, reason string) {
	p.closeOnce.Do(func() {
		p.m.closed(code)
		p.mu.Lock()
		p.closed = true
		p.reason = fmt.Sprintf("code %d %s", code, reason)
		p.ctl, p.dgs = nil, nil
		p.mu.Unlock()
		_ = p.conn.CloseWithError(code, reason)
	})
}

func (p *peer) closeReason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reason == "" {
		if err := context.Cause(p.conn.Context()); err != nil {
			return err.Error()
		}
	}
	return p.reason
}
