package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// Source is what a Server broadcasts: a simulation stepped at a fixed rate.
// Step returns the control messages (in order) and the frames of one step.
type Source interface {
	Step() ([]codec.Message, []*island.Frame)
	Period() int64 // broadcast period, µs
}

// ServerConfig sets a Server up. Zero fields mean the documented defaults.
type ServerConfig struct {
	// Listen is the UDP address to serve on. Empty means 127.0.0.1:4242.
	Listen string
	// TLS carries the server certificate; ServerTLS builds one. Required.
	TLS *tls.Config
	// StepRate is how many times per second the Source steps. Zero means 60.
	StepRate int
	// MaxObservers caps connected observers. Zero means 256.
	MaxObservers int
	// DatagramQueue caps the datagrams queued for one observer. Zero means
	// 512. When a broadcast's datagrams are queued, older queued datagrams
	// whose islands all have a newer frame in it are dropped first (counted);
	// past the cap the oldest go.
	DatagramQueue int
	// ControlBacklog caps the control bytes queued for one observer. Zero
	// means 4 MiB. Past it the connection is closed with CodeBacklog.
	ControlBacklog int
	// IdleTimeout closes a silent connection. Zero means 10 s.
	IdleTimeout time.Duration
	// Timeline names this run of the authority in every Welcome. Zero
	// means a random value.
	Timeline uint64
	// Logger receives structured logs. Nil means slog.Default().
	Logger *slog.Logger
	// Metrics, if set, is updated as the server runs.
	Metrics *Metrics
	// Wire is the datagram format (see broadcast.Config.Wire). Zero means 2.
	Wire int
	// Parity is the Reed–Solomon parity records each fragmented frame
	// carries (see broadcast.Config.Parity). Zero means
	// broadcast.DefaultParity; negative means none.
	Parity int
}

func (c *ServerConfig) defaults() error {
	if c.TLS == nil {
		return errors.New("transport: ServerConfig.TLS is required")
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:4242"
	}
	if c.StepRate <= 0 {
		c.StepRate = 60
	}
	if c.MaxObservers <= 0 {
		c.MaxObservers = 256
	}
	if c.DatagramQueue <= 0 {
		c.DatagramQueue = 512
	}
	if c.ControlBacklog <= 0 {
		c.ControlBacklog = 4 << 20
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func quicConfig(idle time.Duration) *quic.Config {
	return &quic.Config{EnableDatagrams: true, MaxIdleTimeout: idle, KeepAlivePeriod: idle / 4,
		HandshakeIdleTimeout: 5 * time.Second, MaxIncomingStreams: 1, MaxIncomingUniStreams: -1}
}

// Server serves one Source to QUIC observers: frames as RFC 9221
// datagrams, control messages on one bidirectional stream per observer. One
// goroutine (Run) owns the Broadcaster; each connection has a reader, a
// control writer and a datagram sender of its own, joined to Run by
// bounded queues, so a slow observer never grows server memory.
type Server struct {
	cfg ServerConfig
	ln  *quic.Listener
	tr  *quic.Transport
	udp *net.UDPConn
	bc  *broadcast.Broadcaster
	src Source
	log *slog.Logger
	m   *Metrics

	events chan event
	mu     sync.Mutex
	conns  map[broadcast.ObserverID]*peer
	nextID broadcast.ObserverID
	paused bool
	pauseC chan bool
}

type eventKind uint8

const (
	evJoin eventKind = iota
	evLeave
	evMessage
	evRun // run fn on the goroutine that owns the broadcaster
)

type event struct {
	kind eventKind
	p    *peer
	raw  []byte        // evMessage: one whole control message, unparsed
	free chan<- []byte // evMessage: where raw goes back once applied
	fn   func()
}

// Listen opens the UDP socket and prepares a server for src. Nothing is
// served until Run.
func Listen(src Source, cfg ServerConfig) (*Server, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.Timeline == 0 {
		cfg.Timeline = randomTimeline()
	}
	bc, err := broadcast.New(broadcast.Config{Timeline: cfg.Timeline, SendPeriod: src.Period(), MaxObservers: cfg.MaxObservers, Wire: cfg.Wire, Parity: cfg.Parity})
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.Listen, err)
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.Listen, err)
	}
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.Listen(cfg.TLS, quicConfig(cfg.IdleTimeout))
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.Listen, err)
	}
	return &Server{cfg: cfg, ln: ln, tr: tr, udp: udp, bc: bc, src: src, log: cfg.Logger, m: cfg.Metrics,
		events: make(chan event, 1024), conns: map[broadcast.ObserverID]*peer{}, pauseC: make(chan bool)}, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Timeline returns the timeline id every Welcome carries.
func (s *Server) Timeline() uint64 { return s.cfg.Timeline }

// Pause stops (true) or resumes (false) stepping the source; connections
// keep being served. Tests use it to let every observer catch up.
func (s *Server) Pause(p bool) { s.pauseC <- p }

// Run serves until ctx ends, then closes every connection with
// CodeShutdown and the listener. It returns nil after a clean shutdown.
func (s *Server) Run(ctx context.Context) error {
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		s.accept(ctx)
	}()
	tick := time.NewTicker(time.Second / time.Duration(s.cfg.StepRate))
	defer tick.Stop()
	var ctl []byte
	var dgs []broadcast.Datagram
	for {
		select {
		case <-ctx.Done():
			s.shutdown()
			<-acceptDone
			return nil
		case p := <-s.pauseC:
			s.paused = p
		case ev := <-s.events:
			s.handle(ev)
		case <-tick.C:
			if s.paused {
				// Keep flushing control (joins and subscriptions) while paused.
				s.flush(&ctl, &dgs)
				continue
			}
			msgs, frames := s.src.Step()
			for _, m := range msgs {
				if err := s.bc.Apply(m); err != nil {
					s.log.Warn("control refused by broadcaster", "type", m.Type().String(), "err", err)
				}
			}
			s.bc.Frames(frames)
			s.flush(&ctl, &dgs)
		}
	}
}

// flush hands every observer's queued control bytes and datagrams to its
// connection.
func (s *Server) flush(ctl *[]byte, dgs *[]broadcast.Datagram) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, p := range s.conns {
		*ctl, *dgs = s.bc.Take(id, (*ctl)[:0], (*dgs)[:0])
		if len(*ctl) > 0 && !p.queueControl(*ctl) {
			s.log.Warn("observer control backlog over the cap; closing", "observer", id, "remote", p.remote)
			s.m.reject("control-backlog")
			go p.close(CodeBacklog, "control backlog")
		}
		if len(*dgs) > 0 {
			frames, datagrams := p.queueDatagrams(*dgs)
			s.m.droppedSlow(frames, datagrams)
		}
	}
}

func (s *Server) handle(ev event) {
	p := ev.p
	switch ev.kind {
	case evRun:
		ev.fn()
	case evJoin:
		if err := s.bc.Join(p.id, p.maxDatagram); err != nil {
			s.log.Warn("join refused", "remote", p.remote, "err", err)
			s.m.reject("join-refused")
			go p.close(CodeFull, err.Error())
			return
		}
		s.mu.Lock()
		s.conns[p.id] = p
		s.mu.Unlock()
		s.m.observers(s.bc.Observers())
		s.log.Info("observer joined", "observer", p.id, "remote", p.remote, "max_datagram", p.maxDatagram)
	case evLeave:
		s.mu.Lock()
		_, ok := s.conns[p.id]
		delete(s.conns, p.id)
		s.mu.Unlock()
		if ok {
			s.bc.Leave(p.id)
			s.m.observers(s.bc.Observers())
			s.log.Info("observer left", "observer", p.id, "remote", p.remote, "reason", p.closeReason())
		}
	case evMessage:
		if p.broke {
			ev.free <- ev.raw
			return
		}
		_, err := s.bc.FeedbackBytes(p.id, ev.raw)
		ev.free <- ev.raw // never blocks: the channel holds every buffer
		switch r := codec.Reason(err); {
		case err == nil || errors.Is(err, broadcast.ErrNoObserver):
		case r != "":
			p.broke = true
			s.log.Warn("observer sent bad control bytes; closing", "observer", p.id, "err", err)
			s.m.reject("control-" + r)
			go p.close(CodeProtocol, "bad control message")
		default:
			p.broke = true
			s.log.Warn("observer broke the protocol", "observer", p.id, "err", err)
			s.m.reject("wrong-direction")
			go p.close(CodeProtocol, "wrong-direction message")
		}
	}
}

func (s *Server) accept(ctx context.Context) {
	for {
		conn, err := s.ln.Accept(ctx)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.nextID++
		id := s.nextID
		s.mu.Unlock()
		go s.serve(ctx, id, conn)
	}
}

// serve runs one connection: it waits for the observer's control stream,
// joins it to the broadcaster, then reads its control messages until the
// connection ends.
func (s *Server) serve(ctx context.Context, id broadcast.ObserverID, conn *quic.Conn) {
	p := newPeer(id, conn, s.cfg.DatagramQueue, s.cfg.ControlBacklog, s.m)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := conn.AcceptStream(sctx)
	cancel()
	if err != nil {
		s.m.reject("no-stream")
		p.close(CodeNoStream, "no control stream")
		return
	}
	p.stream = st
	p.maxDatagram = datagramCap(conn)
	if p.maxDatagram < codec.MinMaxDatagram {
		s.m.reject("datagram-too-small")
		p.close(CodeDatagrams, "path too small for datagrams")
		return
	}
	p.start()
	s.events <- event{kind: evJoin, p: p}
	defer func() { s.events <- event{kind: evLeave, p: p} }()

	// Observers send no datagrams: any is garbage, and so is the sender.
	go func() {
		if _, err := conn.ReceiveDatagram(conn.Context()); err == nil {
			s.log.Warn("observer sent a datagram; closing", "observer", id)
			s.m.reject("observer-datagram")
			p.close(CodeProtocol, "observers send no datagrams")
		}
	}()
	rd := newControlReader(st, codec.ControlLimits{MaxMessage: 64 << 10})
	for {
		b, err := rd.take(conn.Context().Done())
		if err != nil {
			if r := codec.Reason(err); r != "" {
				s.log.Warn("observer sent bad control bytes; closing", "observer", id, "err", err)
				s.m.reject("control-" + r)
				p.close(CodeProtocol, "bad control message")
			}
			p.close(CodeShutdown, "")
			return
		}
		// The body is parsed where it is applied (Run); the direction is
		// in the envelope already.
		if t := codec.MessageType(b[4]); t.FromServer() {
			s.log.Warn("observer sent an authority message; closing", "observer", id, "type", t.String())
			s.m.reject("wrong-direction")
			p.close(CodeProtocol, "wrong-direction message")
			return
		}
		select {
		case s.events <- event{kind: evMessage, p: p, raw: b, free: rd.free}:
		case <-conn.Context().Done():
			return
		}
	}
}

// datagramCap returns the largest datagram payload the connection can
// carry now, capped at codec.MaxMaxDatagram. quic-go reports it when asked
// to send something larger than any path carries; nothing is sent.
func datagramCap(conn *quic.Conn) int {
	var tooLarge *quic.DatagramTooLargeError
	if err := conn.SendDatagram(make([]byte, codec.MaxMaxDatagram+1)); errors.As(err, &tooLarge) {
		return int(min(tooLarge.MaxDatagramPayloadSize, codec.MaxMaxDatagram))
	}
	return codec.DefaultMaxDatagram
}

func (s *Server) shutdown() {
	s.mu.Lock()
	peers := make([]*peer, 0, len(s.conns))
	for _, p := range s.conns {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	for _, p := range peers {
		p.close(CodeShutdown, "server shutting down")
	}
	_ = s.ln.Close()
	_ = s.tr.Close()
	_ = s.udp.Close()
	s.log.Info("server stopped", "observers", len(peers))
}

// Live calls the functions for every identity, lease and manifest the
// server's broadcaster holds, on the goroutine that owns it (Run must be
// running). Pause first for a state that holds still.
func (s *Server) Live(id func(island.MemberID), lease func(island.Lease), manifest func(island.Manifest)) {
	done := make(chan struct{})
	s.events <- event{kind: evRun, fn: func() { s.bc.Live(id, lease, manifest); close(done) }}
	<-done
}

// Stats returns the broadcaster's counters, read on the goroutine that owns
// it (Run must be running).
func (s *Server) Stats() broadcast.Stats {
	var st broadcast.Stats
	done := make(chan struct{})
	s.events <- event{kind: evRun, fn: func() { st = s.bc.Stats(); close(done) }}
	<-done
	return st
}
