package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// An uplink turns the dial around. An authority that cannot accept
// connections — a player's client behind NAT, a worker with no open port —
// dials a front (Server.Uplink) and then serves it over that connection
// exactly as it serves an observer that dialled it: the front, which
// accepted the connection (UplinkListener), opens the control stream,
// subscribes, and runs a receiver on what comes back (Watcher.RunConn).
// Both ends present certificates: the authority pins the front's, and the
// front admits only a client certificate its Allow function knows, in the
// handshake, before one byte of the protocol.

// UplinkALPN is the protocol an uplink's TLS handshake negotiates. It
// differs from ALPN, so an observer that dials an uplink port, or an
// authority that dials an observer port, fails the handshake.
const UplinkALPN = "islandsync-uplink/1"

// ErrUplinkRefused: the front's uplink port refused the client
// certificate presented (Allow does not know it).
var ErrUplinkRefused = errors.New("transport: uplink client certificate not allowed")

// UplinkClientTLS returns an authority's TLS configuration for dialling a
// front's uplink port: it presents cert, and accepts the front exactly when
// its leaf certificate has the SHA-256 fingerprint pin.
func UplinkClientTLS(cert tls.Certificate, pin string) (*tls.Config, error) {
	if pin == "" {
		return nil, errors.New("transport: an uplink needs the front's fingerprint")
	}
	c, err := ClientTLS(pin, "", nil)
	if err != nil {
		return nil, err
	}
	c.NextProtos = []string{UplinkALPN}
	c.Certificates = []tls.Certificate{cert}
	return c, nil
}

// UplinkConfig sets an UplinkListener up. Zero fields mean the documented
// defaults.
type UplinkConfig struct {
	// Listen is the UDP address authorities dial. Required.
	Listen string
	// Cert is the front's certificate, which authorities pin. Required.
	Cert tls.Certificate
	// Allow reports whether a client certificate, by its SHA-256
	// fingerprint (lowercase hex), may hold an uplink. It is called in
	// the handshake, on quic-go's goroutines. Required.
	Allow func(fingerprint string) bool
	// MaxUplinks caps the uplinks open at once; more are closed with
	// CodeFull as they arrive. Zero means 64. Handshakes in progress are
	// capped at four times it (refused before any TLS work).
	MaxUplinks int
	// IdleTimeout closes a silent connection. Zero means 10 s.
	IdleTimeout time.Duration
}

// UplinkStats counts what an UplinkListener did.
type UplinkStats struct {
	Accepted uint64 // connections past the handshake, handed to Accept
	Refused  uint64 // handshakes refused: certificate not allowed, or too many in progress
	Full     uint64 // connections closed at once: MaxUplinks open already
}

// UplinkListener is a front's uplink port: it accepts authorities' QUIC
// connections whose client certificate Allow admits.
type UplinkListener struct {
	cfg        UplinkConfig
	udp        *net.UDPConn
	tr         *quic.Transport
	ln         *quic.Listener
	open       atomic.Int64 // uplinks accepted and not yet ended
	handshakes atomic.Int64
	accepted   atomic.Uint64
	refused    atomic.Uint64
	full       atomic.Uint64
}

// ListenUplinks opens a front's uplink port.
func ListenUplinks(cfg UplinkConfig) (*UplinkListener, error) {
	if cfg.Listen == "" || cfg.Allow == nil || len(cfg.Cert.Certificate) == 0 {
		return nil, errors.New("transport: UplinkConfig needs Listen, Cert and Allow")
	}
	positive(&cfg.MaxUplinks, 64)
	positive(&cfg.IdleTimeout, 10*time.Second)
	ua, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("transport: uplinks %s: %w", cfg.Listen, err)
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("transport: uplinks %s: %w", cfg.Listen, err)
	}
	l := &UplinkListener{cfg: cfg, udp: udp}
	l.tr = &quic.Transport{Conn: udp, ConnContext: l.connContext}
	qc := quicConfig(cfg.IdleTimeout)
	qc.MaxIncomingStreams = -1 // the front opens the one control stream
	l.ln, err = l.tr.Listen(l.serverTLS(), qc)
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("transport: uplinks %s: %w", cfg.Listen, err)
	}
	return l, nil
}

// serverTLS requires a client certificate and checks it against Allow.
func (l *UplinkListener) serverTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{l.cfg.Cert}, NextProtos: []string{UplinkALPN}, MinVersion: tls.VersionTLS13,
		ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !l.cfg.Allow(Fingerprint(raw[0])) {
				return ErrUplinkRefused
			}
			return nil
		},
	}
}

type uplinkHandshake struct{ done atomic.Bool }

type uplinkHandshakeKey struct{}

// connContext caps the handshakes in progress and counts those refused.
func (l *UplinkListener) connContext(ctx context.Context, _ *quic.ClientInfo) (context.Context, error) {
	if l.handshakes.Add(1) > int64(4*l.cfg.MaxUplinks) {
		l.handshakes.Add(-1)
		l.refused.Add(1)
		return nil, errors.New("transport: too many uplink handshakes in progress")
	}
	h := &uplinkHandshake{}
	context.AfterFunc(ctx, func() {
		if h.done.CompareAndSwap(false, true) {
			l.handshakes.Add(-1)
			l.refused.Add(1)
		}
	})
	return context.WithValue(ctx, uplinkHandshakeKey{}, h), nil
}

// Addr returns the address the listener is bound to.
func (l *UplinkListener) Addr() net.Addr { return l.ln.Addr() }

// Stats returns the listener's counters.
func (l *UplinkListener) Stats() UplinkStats {
	return UplinkStats{Accepted: l.accepted.Load(), Refused: l.refused.Load(), Full: l.full.Load()}
}

// Accept waits for the next uplink. It returns an error once ctx ends or
// the listener is closed.
func (l *UplinkListener) Accept(ctx context.Context) (*UplinkConn, error) {
	for {
		conn, err := l.ln.Accept(ctx)
		if err != nil {
			return nil, err
		}
		if h, ok := conn.Context().Value(uplinkHandshakeKey{}).(*uplinkHandshake); ok && h.done.CompareAndSwap(false, true) {
			l.handshakes.Add(-1)
		}
		if l.open.Add(1) > int64(l.cfg.MaxUplinks) {
			l.open.Add(-1)
			l.full.Add(1)
			_ = conn.CloseWithError(CodeFull, "too many uplinks")
			continue
		}
		context.AfterFunc(conn.Context(), func() { l.open.Add(-1) })
		certs := conn.ConnectionState().TLS.PeerCertificates
		if len(certs) == 0 { // the handshake required one
			_ = conn.CloseWithError(CodeProtocol, "no client certificate")
			continue
		}
		l.accepted.Add(1)
		return &UplinkConn{conn: conn, fp: Fingerprint(certs[0].Raw)}, nil
	}
}

// Close closes the port and every uplink on it.
func (l *UplinkListener) Close() error {
	err := l.ln.Close()
	_ = l.tr.Close()
	_ = l.udp.Close()
	return err
}

// UplinkConn is one authority's uplink as the front accepted it.
type UplinkConn struct {
	conn *quic.Conn
	fp   string
}

// Fingerprint is the SHA-256 of the authority's client certificate,
// lowercase hex: who is at the other end.
func (c *UplinkConn) Fingerprint() string { return c.fp }

// RemoteAddr is the authority's UDP address.
func (c *UplinkConn) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// Close ends the uplink with code and reason.
func (c *UplinkConn) Close(code quic.ApplicationErrorCode, reason string) {
	_ = c.conn.CloseWithError(code, reason)
}

// Uplink dials a front's uplink port at addr from the server's own UDP
// socket, with tlsConf (UplinkClientTLS), and serves the front over that
// connection as one observer, admitted as any other, until the connection
// or ctx ends. It returns why the connection ended: a *CloseError when the
// front closed it, ctx's error when ctx ended. Run must be running.
func (s *Server) Uplink(ctx context.Context, addr string, tlsConf *tls.Config) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return fmt.Errorf("transport: uplink %s: %w", addr, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := s.tr.Dial(dctx, ua, tlsConf, quicConfig(s.cfg.IdleTimeout))
	cancel()
	if err != nil {
		if refusedCert(err) {
			// The front's refusal can arrive before the dial returns.
			return fmt.Errorf("%w by %s: %w", ErrUplinkRefused, addr, err)
		}
		return fmt.Errorf("%w to %s: %w", ErrConnect, addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.CloseWithError(CodeShutdown, "") })
	defer stop()
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	s.serve(ctx, id, conn)
	<-conn.Context().Done()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cause := context.Cause(conn.Context())
	// TLS 1.3 finishes the client's handshake before the server has
	// checked the client's certificate: a refusal usually arrives as a
	// crypto error closing the connection just dialled.
	if refusedCert(cause) {
		return fmt.Errorf("%w by %s: %w", ErrUplinkRefused, addr, cause)
	}
	return closeError(cause)
}

// refusedCert reports whether err is the peer closing the handshake with a
// TLS alert, which is how a front refuses the uplink's certificate.
func refusedCert(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.Remote && te.ErrorCode.IsCryptoError()
}
