package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/token"
)

// Default admission and stall bounds (ServerConfig).
const (
	DefaultSubscribeTimeout = 5 * time.Second
	DefaultMessageTimeout   = 5 * time.Second
	DefaultStallTimeout     = 10 * time.Second
)

// Source is what a Server broadcasts: a simulation stepped at a fixed rate.
// Step returns the control messages (in order) and the frames of one step.
type Source interface {
	Step() ([]codec.Message, []*island.Frame)
	Period() int64 // broadcast period, µs
}

// A Prompter is a Source that sometimes has output that should not wait for
// the next step — an island whose authority just changed hands. When
// Prompt's channel (the same one every call) receives, the Server calls
// Urgent, between steps and on the goroutine that calls Step, and sends
// what it returns at once. Urgent must not step the simulation: the next
// Step comes on the fixed cadence as ever. A paused Server calls neither.
type Prompter interface {
	Source
	Prompt() <-chan struct{}
	Urgent() ([]codec.Message, []*island.Frame)
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
	// Wire is the datagram format (see broadcast.Config.Wire). Zero means 3.
	Wire int
	// Parity is the Reed–Solomon parity records each fragmented frame
	// carries to an observer whose path loses (see broadcast.Config.Parity).
	// Zero means broadcast.DefaultParity; negative means none.
	Parity int
	// FixedParity sends Parity records to every observer, also to one
	// whose path lost nothing lately (broadcast.Config.FixedParity).
	FixedParity bool
	// Class picks each island's constraint class, and so its quantization
	// (see broadcast.Config.Class); it is called on the server's step
	// goroutine, the one that calls Source.Step. Nil means
	// broadcast.DefaultClass: rigid precision for every island.
	Class func(islandID uint32, members int) quant.Class
	// ObserverKbps caps what each observer is sent, kbit/s of datagram
	// bytes (broadcast.Config.ObserverKbps). Zero means no cap of its own.
	ObserverKbps int
	// ServerKbps caps what all observers together are sent, kbit/s,
	// shared evenly (broadcast.Config.ServerKbps). Zero means no cap.
	ServerKbps int
	// FixedRate turns off what follows the path: by default every
	// broadcast to an observer takes at most what its QUIC path carries now
	// — the congestion window over the smoothed round-trip time, less what
	// is still queued for it — so that frames that do not fit are left out
	// rather than queued to arrive late; a datagram is handed to quic-go
	// only once quic-go has sent nearly all it was handed before, and one
	// that waited here over two broadcast periods is dropped (counted).
	FixedRate bool
	// MaxDatagram caps the datagrams sent to each observer, in bytes
	// (codec.MinMaxDatagram … codec.MaxMaxDatagram); the path's own cap
	// still holds. Zero means the path's.
	MaxDatagram int

	// SubscribeTimeout bounds an observer's admission: from its handshake,
	// its control stream and a whole Subscribe on it (after a valid Hello,
	// with TokenKeys) must arrive within it, or the connection is closed
	// with CodeNoStream (CodeToken without the Hello). Until then it holds
	// no observer slot. Zero means 5 s.
	SubscribeTimeout time.Duration
	// MessageTimeout bounds one control message from a joined observer:
	// once its first byte has arrived, the whole message must within it,
	// or the connection is closed with CodeSlowRead. Zero means 5 s.
	MessageTimeout time.Duration
	// StallTimeout bounds an observer that does not read its control
	// stream: when control bytes queued for it make no progress for this
	// long, the connection is closed with CodeBacklog. Zero means 10 s.
	StallTimeout time.Duration
	// MaxAdmitting caps connections past their handshake that have not yet
	// subscribed; more are closed with CodeFull at once. Zero means
	// MaxObservers. Handshakes in progress are capped at four times it
	// (refused before any TLS work).
	MaxAdmitting int
	// DialOnly makes the server accept no connections: it serves only the
	// uplinks it dials (Uplink), from its UDP socket at Listen — an
	// authority in a player's client or behind NAT. Listen may then be
	// ":0".
	DialOnly bool
	// TokenKeys, when not empty, make the server require a connect token
	// (package token) signed by one of them in every observer's Hello
	// before it gets a slot or a byte of the world; a token that lists
	// islands restricts the observer to them. Empty: no token is needed.
	TokenKeys []ed25519.PublicKey
}

func (c *ServerConfig) defaults() error {
	if c.TLS == nil {
		return errors.New("transport: ServerConfig.TLS is required")
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:4242"
	}
	if c.MaxDatagram != 0 && (c.MaxDatagram < codec.MinMaxDatagram || c.MaxDatagram > codec.MaxMaxDatagram) {
		return fmt.Errorf("transport: ServerConfig.MaxDatagram %d outside %d … %d", c.MaxDatagram, codec.MinMaxDatagram, codec.MaxMaxDatagram)
	}
	positive(&c.StepRate, 60)
	positive(&c.MaxObservers, 256)
	positive(&c.DatagramQueue, 512)
	positive(&c.ControlBacklog, 4<<20)
	positive(&c.IdleTimeout, 10*time.Second)
	positive(&c.SubscribeTimeout, DefaultSubscribeTimeout)
	positive(&c.MessageTimeout, DefaultMessageTimeout)
	positive(&c.StallTimeout, DefaultStallTimeout)
	positive(&c.MaxAdmitting, c.MaxObservers)
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
	period time.Duration // the source's broadcast period

	admitting  atomic.Int64     // connections past the handshake, not yet joined
	handshakes atomic.Int64     // handshakes in progress
	byToken    map[uint64]*peer // Run's alone: the connection holding each token's observer id
	ages       []float64        // flush's scratch: observer queue ages
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
	sub  codec.Subscribe // evJoin: the observer's first subscription
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
	bc, err := broadcast.New(broadcast.Config{Timeline: cfg.Timeline, SendPeriod: src.Period(), MaxObservers: cfg.MaxObservers, Wire: cfg.Wire, Parity: cfg.Parity, FixedParity: cfg.FixedParity, Class: cfg.Class,
		ObserverKbps: cfg.ObserverKbps, ServerKbps: cfg.ServerKbps})
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
	s := &Server{cfg: cfg, udp: udp, bc: bc, src: src, log: cfg.Logger, m: cfg.Metrics,
		events: make(chan event, 1024), conns: map[broadcast.ObserverID]*peer{}, pauseC: make(chan bool),
		byToken: map[uint64]*peer{}, period: time.Duration(src.Period()) * time.Microsecond}
	s.tr = &quic.Transport{Conn: udp, ConnContext: s.connContext}
	if cfg.DialOnly {
		return s, nil
	}
	s.ln, err = s.tr.Listen(cfg.TLS, quicConfig(cfg.IdleTimeout))
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.Listen, err)
	}
	return s, nil
}

// handshake follows one incoming connection through its handshake.
type handshake struct{ accepted atomic.Bool }

type handshakeKey struct{}

// connContext runs when a connection starts its handshake: past the cap of
// handshakes in progress it is refused before any TLS work; a handshake
// that ends without the connection being accepted is counted as failed.
func (s *Server) connContext(ctx context.Context, _ *quic.ClientInfo) (context.Context, error) {
	if s.handshakes.Add(1) > int64(4*s.cfg.MaxAdmitting) {
		s.handshakes.Add(-1)
		s.m.handshakeFailed("refused")
		return nil, errors.New("transport: too many handshakes in progress")
	}
	h := &handshake{}
	context.AfterFunc(ctx, func() {
		if !h.accepted.Load() {
			s.handshakes.Add(-1)
			s.m.handshakeFailed("failed")
		}
	})
	return context.WithValue(ctx, handshakeKey{}, h), nil
}

// accepted marks a connection's handshake done.
func (s *Server) accepted(conn *quic.Conn) {
	if h, ok := conn.Context().Value(handshakeKey{}).(*handshake); ok && h.accepted.CompareAndSwap(false, true) {
		s.handshakes.Add(-1)
	}
}

// Addr returns the address the server listens on (with DialOnly, the
// address its uplinks leave from).
func (s *Server) Addr() net.Addr { return s.udp.LocalAddr() }

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
	pr, _ := s.src.(Prompter)
	var prompt <-chan struct{}
	if pr != nil {
		prompt = pr.Prompt()
	}
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
				s.flush(&ctl, &dgs, false)
				continue
			}
			msgs, frames := s.src.Step()
			s.m.stepped(len(frames) > 0)
			s.send(msgs, frames, &ctl, &dgs)
		case <-prompt:
			if s.paused {
				continue
			}
			if msgs, frames := pr.Urgent(); len(msgs) > 0 || len(frames) > 0 {
				s.send(msgs, frames, &ctl, &dgs)
			}
		}
	}
}

// send hands the broadcaster one step's (or an urgent call's) control and
// frames, and every observer its share.
func (s *Server) send(msgs []codec.Message, frames []*island.Frame, ctl *[]byte, dgs *[]broadcast.Datagram) {
	for _, m := range msgs {
		if err := s.bc.Apply(m); err != nil {
			s.log.Warn("control refused by broadcaster", "type", m.Type().String(), "err", err)
			s.m.controlRefused()
		}
	}
	s.pathRates()
	if s.m == nil {
		s.bc.Frames(frames)
	} else {
		before := s.bc.Stats()
		s.bc.Frames(frames)
		after := s.bc.Stats()
		s.m.skipped(after.FramesUnknown-before.FramesUnknown, after.FramesRefused-before.FramesRefused)
	}
	s.flush(ctl, dgs, len(frames) > 0)
}

// pathRates tells the broadcaster what each observer's path carries now.
func (s *Server) pathRates() {
	if s.cfg.FixedRate || s.cfg.Wire == 1 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, p := range s.conns {
		_ = s.bc.SetPathRate(id, p.pathRate(s.period))
	}
}

// flush hands every observer's queued control bytes and datagrams to its
// connection; at a broadcast (a step that sampled frames), the stream
// copies due too.
func (s *Server) flush(ctl *[]byte, dgs *[]broadcast.Datagram, sampled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.ages = s.ages[:0]
	defer func() { s.m.queueAges(s.ages) }()
	for id, p := range s.conns {
		if s.m != nil {
			s.ages = append(s.ages, p.queueAge(now).Seconds())
		}
		bud, ok := s.bc.Budget(id)
		if ok {
			s.m.budget(bud, s.period)
		}
		*ctl, *dgs = s.bc.Take(id, (*ctl)[:0], (*dgs)[:0])
		sent := len(*dgs) > 0
		if len(*ctl) > 0 {
			if !p.queueControl(*ctl) {
				s.log.Warn("observer control backlog over the cap; closing", "observer", id, "remote", p.remote)
				s.m.reject("control-backlog")
				go p.close(CodeBacklog, "control backlog")
			} else if bud.Parity > 0 {
				p.copyControl(*ctl)
			}
			p.ctlOff += uint64(len(*ctl))
		}
		n := len(*dgs)
		if sampled {
			*dgs = p.appendCopies(*dgs)
		}
		if copies := (*dgs)[n:]; len(copies) > 0 {
			s.m.streamCopies(len(copies))
			owed := 0
			for _, c := range copies {
				owed += len(c.Bytes)
			}
			_ = s.bc.Owe(id, owed) // the observer's budget pays for them
		}
		if len(*dgs) > 0 {
			frames, datagrams := p.queueDatagrams(*dgs)
			s.m.droppedSlow(frames, datagrams)
		}
		if p.silent(now, sent) && !p.broke {
			p.broke = true
			s.log.Warn("observer sends nothing back; closing", "observer", id, "remote", p.remote)
			s.m.reject("silent")
			go p.close(CodeBacklog, "observer silent: reads nothing")
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
			s.m.joinRefused("full")
			go p.close(CodeFull, err.Error())
			return
		}
		if p.token != nil {
			if old := s.byToken[p.token.Observer]; old != nil {
				s.log.Info("observer token presented again; closing the older connection", "token_observer", p.token.Observer, "remote", old.remote)
				go old.close(CodeReplaced, "a newer connection presented this observer's token")
			}
			s.byToken[p.token.Observer] = p
			if len(p.token.Islands) > 0 {
				_ = s.bc.Restrict(p.id, p.token.Islands)
			}
		}
		_ = s.bc.Subscribe(p.id, ev.sub)
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
		if p.token != nil && s.byToken[p.token.Observer] == p {
			delete(s.byToken, p.token.Observer)
		}
		if ok {
			s.bc.Leave(p.id)
			s.m.observers(s.bc.Observers())
			s.log.Info("observer left", "observer", p.id, "remote", p.remote, "reason", p.closeReason())
		}
	case evMessage:
		defer p.inFlight.Add(-1)
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
	if s.ln == nil { // DialOnly
		return
	}
	for {
		conn, err := s.ln.Accept(ctx)
		if err != nil {
			return
		}
		s.accepted(conn)
		s.mu.Lock()
		s.nextID++
		id := s.nextID
		s.mu.Unlock()
		go s.serve(ctx, id, conn)
	}
}

// serve runs one connection: it admits the observer (its control stream,
// its Hello when tokens are required, its first Subscribe, all within
// SubscribeTimeout), joins it to the broadcaster, then reads its control
// messages until the connection ends.
func (s *Server) serve(ctx context.Context, id broadcast.ObserverID, conn *quic.Conn) {
	p := newPeer(id, conn, s.cfg.DatagramQueue, s.cfg.ControlBacklog, s.cfg.StallTimeout, s.m)
	if !s.cfg.FixedRate {
		p.late = 2 * s.period
	}
	sub, rd, ok := s.admit(ctx, p)
	if !ok {
		return
	}
	p.hear(time.Now())
	p.start()
	s.events <- event{kind: evJoin, p: p, sub: sub}
	defer func() { s.events <- event{kind: evLeave, p: p} }()

	// Observers send no datagrams: any is garbage, and so is the sender.
	go func() {
		if _, err := conn.ReceiveDatagram(conn.Context()); err == nil {
			s.log.Warn("observer sent a datagram; closing", "observer", id)
			s.m.reject("observer-datagram")
			p.close(CodeProtocol, "observers send no datagrams")
		}
	}()
	rd.bound(p.stream.SetReadDeadline, s.cfg.MessageTimeout)
	for {
		b, err := rd.take(conn.Context().Done())
		if err != nil {
			s.readFailed(p, err)
			return
		}
		// The body is parsed where it is applied (Run); the direction is
		// in the envelope already.
		if t := codec.MessageType(b[4]); t.FromServer() || t == codec.TypeHello {
			s.log.Warn("observer sent a message it must not; closing", "observer", id, "type", t.String())
			s.m.reject("wrong-direction")
			p.close(CodeProtocol, "wrong-direction message")
			return
		}
		p.hear(time.Now())
		p.inFlight.Add(1)
		select {
		case s.events <- event{kind: evMessage, p: p, raw: b, free: rd.free}:
		case <-conn.Context().Done():
			p.inFlight.Add(-1)
			return
		}
	}
}

// readFailed closes a connection whose control stream could not be read:
// bad bytes, a message that did not arrive in time, or the end of the
// connection.
func (s *Server) readFailed(p *peer, err error) {
	var ne net.Error
	switch r := codec.Reason(err); {
	case r != "":
		s.log.Warn("observer sent bad control bytes; closing", "observer", p.id, "err", err)
		s.m.reject("control-" + r)
		p.close(CodeProtocol, "bad control message")
	case errors.As(err, &ne) && ne.Timeout():
		s.log.Warn("observer's control message did not arrive in time; closing", "observer", p.id)
		s.m.reject("slow-read")
		p.close(CodeSlowRead, "control message not whole in time")
	default:
		p.close(CodeShutdown, "")
	}
}

// admit takes an observer through admission: its control stream, its
// Hello with a valid token (when TokenKeys are set) and a Subscribe, each
// by the one deadline SubscribeTimeout after the handshake. Until it
// returns true the connection holds no observer slot, and at most
// MaxAdmitting connections are here at once.
func (s *Server) admit(ctx context.Context, p *peer) (codec.Subscribe, *controlReader, bool) {
	conn := p.conn
	defer s.admitting.Add(-1)
	if s.admitting.Add(1) > int64(s.cfg.MaxAdmitting) {
		s.m.joinRefused("admission-full")
		p.close(CodeFull, "too many connections being admitted")
		return codec.Subscribe{}, nil, false
	}
	until := time.Now().Add(s.cfg.SubscribeTimeout)
	sctx, cancel := context.WithDeadline(ctx, until)
	st, err := conn.AcceptStream(sctx)
	cancel()
	if err != nil {
		s.m.joinRefused("no-stream")
		p.close(CodeNoStream, "no control stream")
		return codec.Subscribe{}, nil, false
	}
	p.stream = st
	p.maxDatagram = datagramCap(conn)
	if c := s.cfg.MaxDatagram; c > 0 {
		p.maxDatagram = min(p.maxDatagram, c)
	}
	if p.maxDatagram < codec.MinMaxDatagram {
		s.m.joinRefused("datagram-too-small")
		p.close(CodeDatagrams, "path too small for datagrams")
		return codec.Subscribe{}, nil, false
	}
	lim := codec.ControlLimits{MaxMessage: 64 << 10}.WithDefaults()
	rd := newControlReader(st, lim)
	rd.bound(st.SetReadDeadline, s.cfg.MessageTimeout)
	rd.by(until)
	defer rd.by(time.Time{})
	// next reads the next message; on a timeout it returns nil and true
	// (the caller says what was missing), on any other failure false, the
	// connection closed.
	next := func() (codec.Message, bool) {
		b, err := rd.take(conn.Context().Done())
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil, true
			}
			s.readFailed(p, err)
			return nil, false
		}
		m, _, err := codec.ParseControl(b, &lim)
		rd.free <- b
		if err != nil {
			s.readFailed(p, err)
			return nil, false
		}
		return m, true
	}
	m, ok := next()
	if !ok {
		return codec.Subscribe{}, nil, false
	}
	if h, isHello := m.(codec.Hello); isHello {
		if len(s.cfg.TokenKeys) > 0 {
			tok, err := token.Verify(h.Token, s.cfg.TokenKeys, time.Now().Unix())
			if err != nil {
				s.log.Info("observer token refused", "remote", p.remote, "err", err)
				s.m.tokenRefused(token.Reason(err))
				p.close(CodeToken, "connect token refused: "+token.Reason(err))
				return codec.Subscribe{}, nil, false
			}
			p.token = &tok
		}
		if m, ok = next(); !ok {
			return codec.Subscribe{}, nil, false
		}
	} else if len(s.cfg.TokenKeys) > 0 {
		s.m.tokenRefused("missing")
		p.close(CodeToken, "a connect token is required")
		return codec.Subscribe{}, nil, false
	}
	sub, isSub := m.(codec.Subscribe)
	switch {
	case m != nil && !isSub:
		s.log.Warn("observer's first message is no Subscribe; closing", "observer", p.id, "type", codec.TypeOf(m).String())
		s.m.reject("wrong-direction")
		p.close(CodeProtocol, "the first message must be Subscribe")
		return codec.Subscribe{}, nil, false
	case m == nil:
		s.m.joinRefused("no-subscribe")
		p.close(CodeNoStream, "no subscribe in time")
		return codec.Subscribe{}, nil, false
	}
	return sub, rd, true
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

// shutdown closes every observer's connection, all at once: a close
// returns only once quic-go's loop for that connection has sent it, which
// on a loaded machine took up to 80 ms a connection, so closing them one
// after another kept the last observers of a stopping front waiting
// (200 ms for nine) before they could move to another.
func (s *Server) shutdown() {
	s.mu.Lock()
	peers := make([]*peer, 0, len(s.conns))
	for _, p := range s.conns {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Go(func() { p.close(CodeShutdown, "server shutting down") })
	}
	wg.Wait()
	if s.ln != nil {
		_ = s.ln.Close()
	}
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

// SetObserverKbps changes every observer's cap, kbit/s of datagram bytes
// (0: none), from the next broadcast on (ServerConfig.ObserverKbps; Run
// must be running).
func (s *Server) SetObserverKbps(kbps int) error {
	var err error
	done := make(chan struct{})
	s.events <- event{kind: evRun, fn: func() { err = s.bc.SetObserverKbps(kbps); close(done) }}
	<-done
	return err
}

// Observers returns how many observers are joined, read on the goroutine
// that owns the broadcaster (Run must be running).
func (s *Server) Observers() int {
	var n int
	done := make(chan struct{})
	s.events <- event{kind: evRun, fn: func() { n = s.bc.Observers(); close(done) }}
	<-done
	return n
}
