package netsim

import (
	"errors"
	"net"
	"sync"
	"time"
)

// MaxRelaySessions caps the client addresses one Relay serves; packets from
// further addresses are dropped.
const MaxRelaySessions = 1024

// Relay is an impairing UDP relay for real sockets: clients send to its
// address, it forwards to the upstream server through a seeded Link per
// direction and per client, and it sends the server's answers back through
// another. Used to put QUIC connections on 127.0.0.1 under the same loss,
// bursts, duplication, reordering and corruption as the in-memory demo. It
// reads the wall clock, so which packets fall on which impairment is
// reproducible only as far as packet timing is.
type Relay struct {
	conn     *net.UDPConn
	upstream *net.UDPAddr
	up, down Config
	seed     uint64
	start    time.Time

	mu       sync.Mutex
	sessions map[string]*relaySession
	order    []*relaySession
	closed   chan struct{}
	wg       sync.WaitGroup
}

type relaySession struct {
	client *net.UDPAddr
	conn   *net.UDPConn // to the upstream server
	up     *Link        // client → server
	down   *Link        // server → client
}

// NewRelay listens on listen (e.g. "127.0.0.1:0") and relays to upstream.
// up impairs client → server packets, down server → client packets.
func NewRelay(listen, upstream string, up, down Config, seed uint64) (*Relay, error) {
	la, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", upstream)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	r := &Relay{conn: c, upstream: ua, up: up, down: down, seed: seed, start: time.Now(),
		sessions: map[string]*relaySession{}, closed: make(chan struct{})}
	r.wg.Add(2)
	go r.readClients()
	go r.pump()
	return r, nil
}

// Addr is where clients send.
func (r *Relay) Addr() net.Addr { return r.conn.LocalAddr() }

func (r *Relay) now() int64 { return time.Since(r.start).Microseconds() }

func (r *Relay) readClients() {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		s := r.session(from)
		if s == nil {
			continue
		}
		r.mu.Lock()
		s.up.Send(r.now(), buf[:n])
		r.mu.Unlock()
	}
}

// session returns the client's session, opening its upstream socket on
// first sight.
func (r *Relay) session(from *net.UDPAddr) *relaySession {
	key := from.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[key]; s != nil {
		return s
	}
	if len(r.sessions) >= MaxRelaySessions {
		return nil
	}
	c, err := net.DialUDP("udp", nil, r.upstream)
	if err != nil {
		return nil
	}
	_ = c.SetReadBuffer(4 << 20)
	k := uint64(len(r.order)) * 2
	s := &relaySession{client: from, conn: c, up: NewLink(r.up, r.seed+k), down: NewLink(r.down, r.seed+k+1)}
	r.sessions[key] = s
	r.order = append(r.order, s)
	r.wg.Add(1)
	go r.readServer(s)
	return s
}

func (r *Relay) readServer(s *relaySession) {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP port unreachable while the server restarts
		}
		r.mu.Lock()
		s.down.Send(r.now(), buf[:n])
		r.mu.Unlock()
	}
}

// pump delivers due packets every millisecond.
func (r *Relay) pump() {
	defer r.wg.Done()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	var up, down [][]byte
	for {
		select {
		case <-r.closed:
			return
		case <-t.C:
		}
		r.mu.Lock()
		now := r.now()
		for _, s := range r.order {
			up = s.up.Deliver(now, up[:0])
			down = s.down.Deliver(now, down[:0])
			for _, p := range up {
				_, _ = s.conn.Write(p)
			}
			for _, p := range down {
				_, _ = r.conn.WriteToUDP(p, s.client)
			}
		}
		r.mu.Unlock()
	}
}

// Stats returns the summed link counters of every session, per direction.
func (r *Relay) Stats() (up, down LinkStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.order {
		up = up.add(s.up.Stats())
		down = down.add(s.down.Stats())
	}
	return up, down
}

func (a LinkStats) add(b LinkStats) LinkStats {
	a.Sent += b.Sent
	a.Lost += b.Lost
	a.BurstLost += b.BurstLost
	a.Duplicated += b.Duplicated
	a.Corrupted += b.Corrupted
	a.Delivered += b.Delivered
	a.Bytes += b.Bytes
	a.Silences += b.Silences
	a.SilentTime += b.SilentTime
	a.LongestSilence = max(a.LongestSilence, b.LongestSilence)
	return a
}

// Close stops the relay and closes its sockets.
func (r *Relay) Close() {
	select {
	case <-r.closed:
		return
	default:
	}
	close(r.closed)
	_ = r.conn.Close()
	r.mu.Lock()
	for _, s := range r.order {
		_ = s.conn.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
