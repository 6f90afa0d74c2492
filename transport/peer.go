package transport

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
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
	broke       bool // Run's alone: the observer broke the protocol; its messages still queued are ignored

	mu        sync.Mutex
	ctl       []byte // control bytes not yet written
	ctlCap    int
	dgs       []broadcast.Datagram // datagrams not yet sent
	dgCap     int
	wake      chan struct{} // writer wake-up (control)
	wakeDG    chan struct{} // sender wake-up (datagrams)
	closed    bool
	reason    string
	closeOnce sync.Once
}

func newPeer(id broadcast.ObserverID, conn *quic.Conn, dgCap, ctlCap int, m *Metrics) *peer {
	return &peer{id: id, conn: conn, remote: conn.RemoteAddr(), m: m, ctlCap: ctlCap, dgCap: dgCap,
		wake: make(chan struct{}, 1), wakeDG: make(chan struct{}, 1)}
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
	p.ctl = append(p.ctl, b...)
	p.mu.Unlock()
	signal(p.wake)
	return true
}

// queueDatagrams queues one broadcast's datagrams. Queued datagrams whose
// islands all have a newer frame in this broadcast are dropped first; past
// the cap the oldest go. It returns the frames and datagrams dropped.
func (p *peer) queueDatagrams(dgs []broadcast.Datagram) (frames, datagrams int) {
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
	p.dgs = append(kept, dgs...)
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
		if len(buf) == 0 {
			continue
		}
		if _, err := p.stream.Write(buf); err != nil {
			p.close(CodeShutdown, "")
			return
		}
	}
}

func (p *peer) sendDatagrams() {
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
			p.dgs[0] = broadcast.Datagram{}
			p.dgs = p.dgs[1:]
			p.mu.Unlock()
			// SendDatagram blocks while quic-go's own small queue is full:
			// meanwhile Run keeps queueing, and the drop rules above apply.
			if err := p.conn.SendDatagram(d.Bytes); err != nil {
				if p.conn.Context().Err() != nil {
					return
				}
				p.m.reject("datagram-send")
				continue
			}
			p.m.sent(len(d.Bytes))
		}
	}
}

func (p *peer) close(code quic.ApplicationErrorCode, reason string) {
	p.closeOnce.Do(func() {
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
