package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/receiver"
)

// WatchConfig sets a Watcher up. Zero fields mean the documented defaults.
type WatchConfig struct {
	// Addr is the server's UDP address. Required by Run (RunConn takes
	// a connection instead).
	Addr string
	// Fallback lists other addresses that serve the same world (the
	// fronts of a cluster, one timeline). With Reconnect, each new
	// connection after a lost one dials the next address in turn, Addr
	// first again after the last; and a first connection that fails tries
	// them all before Run gives up. A server of the same timeline keeps
	// the playout clock (a reconnect), so moving to another front shows as
	// a fresh catch-up, not a restart. Each must pass the same TLS check.
	// When a connection that was served is lost, the next address is
	// dialled at once rather than after the reconnect wait — its server
	// is up, and the playout clock goes to Waiting if no frame comes for
	// about 0.6 s — at most once per ReconnectMax; every other attempt
	// waits as Reconnect says.
	Fallback []string
	// TLS is the client TLS configuration (ClientTLS builds one).
	// Required by Run.
	TLS *tls.Config
	// Subscribe is the subscription sent on every connection. The zero value
	// subscribes to nothing; use codec.Subscribe{All: true} for everything.
	Subscribe codec.Subscribe
	// Token is a connect token (package token) to present in a Hello
	// before subscribing: what a server started with TokenKeys requires.
	// Nil sends none.
	Token []byte
	// Receiver configures the receive path.
	Receiver receiver.Config
	// RenderRate is render ticks per second. Zero means 60.
	RenderRate int
	// AckPeriod is how often the receiver's feedback (keyframe requests,
	// confirmations of the datagrams that arrived) goes back. Zero means
	// 50 ms.
	AckPeriod time.Duration
	// IdleTimeout closes a silent connection. Zero means 10 s.
	IdleTimeout time.Duration
	// Reconnect makes Run dial again after a lost connection (with a fresh
	// catch-up) instead of returning. DialTimeout bounds each attempt.
	// Attempts back off: the wait doubles after every attempt that did not
	// reach the server's Welcome, from ReconnectMin up to ReconnectMax,
	// each drawn at random between half of it and all of it (so that many
	// observers of one restarted server do not dial in step). A server
	// whose certificate no longer matches the pin, or that refuses the
	// observer (CloseError with Refused), ends Run instead: dialling again
	// cannot help.
	Reconnect bool
	// ReconnectMin and ReconnectMax bound the wait between attempts. Zero
	// means 200 ms and 10 s.
	ReconnectMin, ReconnectMax time.Duration
	// DialTimeout bounds one connection attempt. Zero means 5 s.
	DialTimeout time.Duration
	// Logger receives structured logs. Nil means slog.Default().
	Logger *slog.Logger
	// ConfirmOnly makes the watcher a stand-in observer: it confirms every
	// datagram it receives (receiver.Receiver.Confirm) without restoring
	// it, and renders nothing (every Tick's Views is nil). To the server it
	// is an observer that receives everything it is sent, at a fraction of
	// a real one's CPU: what measuring a server under many observers on
	// one machine needs. Control messages are handled as usual.
	ConfirmOnly bool
}

// Tick is what a Watcher reports after every render: the views (valid
// during the callback only) and the receiver, to read Stats from.
type Tick struct {
	Now      int64 // µs since the watcher started
	Views    []receiver.IslandView
	Receiver *receiver.Receiver
	// HalfFrames counts islands, at this tick, whose members as shown come
	// from different frames: each member keeps the frame pair of the view
	// that last placed it, and an island is checked against its manifest.
	HalfFrames int
	// FeedbackSkipped counts, over this connection, feedback the watcher
	// did not send because the one before it was still being written.
	FeedbackSkipped uint64
	// Addr is the server address the watcher is connected to.
	Addr string
	// DatagramQueue and ControlQueue are how many datagrams and control
	// reads wait for the receive loop at this tick (at most 256 and
	// readBuffers): a watcher that falls behind shows it here first.
	DatagramQueue, ControlQueue int
	// Copies counts, over this connection, the stream copies (control
	// bytes the server sent again as datagrams) that brought bytes before
	// the stream did (Used), came after (Late), were let go for a cap
	// (Dropped) or were refused unread (Refused: not a good copy).
	Copies struct{ Used, Late, Dropped, Refused uint64 }
}

// feedbackWriter writes the watcher's feedback on the control stream from
// a goroutine of its own, with no deadline: a write that waits (a busy
// machine, flow control) holds up neither the receive loop nor the
// session, which ends only when the connection does. One buffer goes round
// between the loop and the writer.
type feedbackWriter struct {
	w      interface{ Write([]byte) (int, error) }
	done   <-chan struct{}
	out    chan []byte // feedback to write
	free   chan []byte // the buffer, once written
	failed chan error  // the stream refused a write
}

func newFeedbackWriter(w interface{ Write([]byte) (int, error) }, done <-chan struct{}) *feedbackWriter {
	f := &feedbackWriter{w: w, done: done, out: make(chan []byte, 1), free: make(chan []byte, 1), failed: make(chan error, 1)}
	f.free <- nil
	return f
}

func (f *feedbackWriter) run() {
	for {
		select {
		case b := <-f.out:
			if _, err := f.w.Write(b); err != nil {
				f.failed <- err
				return
			}
			f.free <- b
		case <-f.done:
			return
		}
	}
}

// Watcher is an observer over QUIC: it dials a Server, subscribes, and
// drives a receiver.Receiver from one goroutine — control messages from the
// stream, datagrams as they arrive, a render tick at RenderRate and its
// feedback (Keyframes, Received) every AckPeriod.
type Watcher struct {
	cfg   WatchConfig
	rx    *receiver.Receiver
	log   *slog.Logger
	start time.Time
	torn  *tornCounter
	addrs []string // Addr, then Fallback
	at    int      // the address the current or next connection dials

	subMu  sync.Mutex
	sub    codec.Subscribe // what it subscribes to now (SetSubscribe)
	subNew bool            // sub changed since it was last sent
}

// SetSubscribe replaces what the watcher subscribes to — for a camera, its
// areas of interest as they move (codec.Subscribe.Regions). It goes out
// with the next feedback and opens every later connection. Safe for
// concurrent use with Run.
func (w *Watcher) SetSubscribe(s codec.Subscribe) {
	s.Islands, s.Regions = slices.Clone(s.Islands), slices.Clone(s.Regions)
	w.subMu.Lock()
	w.sub, w.subNew = s, true
	w.subMu.Unlock()
}

// pendingSubscribe appends the subscription to b when it changed since it
// was last sent.
func (w *Watcher) pendingSubscribe(b []byte) []byte {
	w.subMu.Lock()
	defer w.subMu.Unlock()
	if w.subNew {
		b = w.sub.Append(b)
		w.subNew = false
	}
	return b
}

// ErrConnect wraps a failure to reach the server at all.
var ErrConnect = errors.New("transport: cannot connect")

// NewWatcher validates cfg and builds the receive path. Nothing is dialled
// until Run.
func NewWatcher(cfg WatchConfig) (*Watcher, error) {
	positive(&cfg.RenderRate, 60)
	positive(&cfg.AckPeriod, 50*time.Millisecond)
	positive(&cfg.IdleTimeout, 10*time.Second)
	positive(&cfg.DialTimeout, 5*time.Second)
	positive(&cfg.ReconnectMin, 200*time.Millisecond)
	positive(&cfg.ReconnectMax, 10*time.Second)
	if cfg.ReconnectMax < cfg.ReconnectMin {
		return nil, errors.New("transport: WatchConfig.ReconnectMax below ReconnectMin")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rx, err := receiver.New(cfg.Receiver)
	if err != nil {
		return nil, err
	}
	return &Watcher{cfg: cfg, rx: rx, log: cfg.Logger, start: time.Now(), torn: newTornCounter(), sub: cfg.Subscribe,
		addrs: append([]string{cfg.Addr}, cfg.Fallback...)}, nil
}

// Receiver returns the watcher's receive path. Read it only from the
// onTick callback (Run's goroutine owns it).
func (w *Watcher) Receiver() *receiver.Receiver { return w.rx }

func (w *Watcher) now() int64 { return time.Since(w.start).Microseconds() }

// Run connects and serves until ctx ends (then it returns nil), or until
// the connection is lost and Reconnect is off (then it returns why).
// onTick, if not nil, runs on Run's goroutine after every render.
//
// A pin that no longer matches the server's certificate ends Run with an
// error wrapping ErrPinMismatch, and a refusal with a *CloseError whose
// Refused reports true, reconnecting or not.
func (w *Watcher) Run(ctx context.Context, onTick func(*Tick)) error {
	if w.cfg.Addr == "" || w.cfg.TLS == nil {
		return errors.New("transport: WatchConfig needs Addr and TLS to Run")
	}
	connected := false
	wait := backoff{min: w.cfg.ReconnectMin, max: w.cfg.ReconnectMax}
	var movedAt time.Time // when a lost session last went to the next server at once
	for tries := 1; ; tries++ {
		welcomes := w.welcomes()
		err := w.session(ctx, onTick, &connected)
		if ctx.Err() != nil {
			return nil
		}
		addr := w.addrs[w.at]
		w.at = (w.at + 1) % len(w.addrs) // the next connection tries the next server
		var ce *CloseError
		switch {
		case errors.Is(err, ErrPinMismatch):
			return fmt.Errorf("%s: %w", addr, err)
		case errors.As(err, &ce) && ce.Refused():
			return err
		case !connected && tries < len(w.addrs):
			continue
		case !connected:
			return fmt.Errorf("%w to %s: %w", ErrConnect, strings.Join(w.addrs, ", "), err)
		case !w.cfg.Reconnect:
			return err
		}
		if w.welcomes() != welcomes {
			wait.reset() // that session was served: start over
			if now := time.Now(); moveAtOnce(len(w.addrs), movedAt, now, w.cfg.ReconnectMax) {
				movedAt = now
				w.log.Info("connection lost; moving to the next server", "err", err, "addr", w.addrs[w.at])
				continue
			}
		}
		d := wait.next(rand.N[time.Duration])
		w.log.Info("connection lost; reconnecting", "err", err, "in", d)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
	}
}

// moveAtOnce reports whether a served session lost at now goes to the next
// of addrs servers without the reconnect wait: when there is another
// server, at most once per every (the last such move was at movedAt; zero:
// none yet).
func moveAtOnce(addrs int, movedAt, now time.Time, every time.Duration) bool {
	return addrs > 1 && (movedAt.IsZero() || now.Sub(movedAt) >= every)
}

// welcomes counts the Welcomes the receiver has had.
func (w *Watcher) welcomes() uint64 {
	st := w.rx.Stats()
	return st.Timelines + st.Reconnects
}

// backoff is the wait before each reconnect: it doubles from min up to max,
// and each wait is drawn between half of it and all of it.
type backoff struct {
	min, max, cur time.Duration
}

// next returns the wait before the next attempt and doubles the one after;
// randN(n) draws from [0, n).
func (b *backoff) next(randN func(time.Duration) time.Duration) time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	}
	d := b.cur/2 + randN(b.cur/2+1)
	b.cur = min(2*b.cur, b.max)
	return d
}

// reset starts the waits over from min.
func (b *backoff) reset() { b.cur = 0 }

// inbound is one control message read, or why reading stopped.
type inbound struct {
	raw  []byte        // one whole control message, unparsed
	free chan<- []byte // where raw goes back once applied
	err  error
}

func (w *Watcher) session(ctx context.Context, onTick func(*Tick), connected *bool) (err error) {
	dctx, cancel := context.WithTimeout(ctx, w.cfg.DialTimeout)
	conn, err := quic.DialAddr(dctx, w.addrs[w.at], w.cfg.TLS, quicConfig(w.cfg.IdleTimeout))
	cancel()
	if err != nil {
		return err
	}
	return w.serveConn(ctx, conn, w.addrs[w.at], onTick, connected)
}

// RunConn runs one session on an uplink the front accepted (the
// authority at the other end serves it as an observer) until ctx or the
// connection ends, and returns why, as Run does; there is no reconnect.
// Addr and TLS are not used. onTick is as for Run. A watcher runs one
// session at a time: RunConn and Run must not overlap.
func (w *Watcher) RunConn(ctx context.Context, c *UplinkConn, onTick func(*Tick)) error {
	connected := false
	err := w.serveConn(ctx, c.conn, c.conn.RemoteAddr().String(), onTick, &connected)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// serveConn subscribes on conn, a connection to a server of observers
// (addr names it in ticks), and drives the receiver until ctx or the
// connection ends.
func (w *Watcher) serveConn(ctx context.Context, conn *quic.Conn, addr string, onTick func(*Tick), connected *bool) (err error) {
	defer conn.CloseWithError(CodeShutdown, "")
	defer func() {
		// However the loop noticed the end (a read, a write), a close by
		// the server is reported as the server's CloseError — from the
		// error that ended the loop when it carries the server's code (the
		// connection's own end may not be recorded yet), else from the
		// connection.
		if ce, ok := closeError(err).(*CloseError); ok {
			err = ce
			return
		}
		if ce := closeError(context.Cause(conn.Context())); conn.Context().Err() != nil {
			if _, ok := ce.(*CloseError); ok {
				err = ce
			}
		}
	}()
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	var hello []byte
	if len(w.cfg.Token) > 0 {
		hello = codec.Hello{Token: w.cfg.Token}.Append(nil)
	}
	w.subMu.Lock()
	first := w.sub.Append(hello)
	w.subNew = false
	w.subMu.Unlock()
	if _, err := st.Write(first); err != nil {
		return err
	}
	*connected = true
	// Control and datagrams come on channels of their own, and the loop
	// takes control first: however far a busy watcher falls behind on
	// datagrams (which may be lost anyway), it keeps reading its control
	// stream, so the server never takes it for one that does not read.
	ctlIn := make(chan inbound, readBuffers)
	dgIn := make(chan []byte, 256)
	// The control stream is read from the stream and from the copies of
	// its bytes that come as datagrams, whichever brings a byte first.
	join := newStreamJoin()
	defer join.end(net.ErrClosed) // a reader still waiting on it stops
	go func() {
		buf := make([]byte, 16<<10)
		for {
			n, err := st.Read(buf)
			if n > 0 {
				if err := join.fromStream(buf[:n]); err != nil {
					if errors.Is(err, ErrCopyDiffers) {
						_ = conn.CloseWithError(CodeProtocol, "stream copy differs from the stream")
					}
					return
				}
			}
			if err != nil {
				join.end(err)
				return
			}
		}
	}()
	go func() {
		rd := newControlReader(join, w.cfg.Receiver.Control)
		for {
			b, err := rd.take(conn.Context().Done())
			if err == errStopped {
				return
			}
			if err != nil {
				if codec.Reason(err) != "" {
					_ = conn.CloseWithError(CodeProtocol, "bad control message")
				}
				ctlIn <- inbound{err: err}
				return
			}
			select {
			case ctlIn <- inbound{raw: b, free: rd.free}:
			case <-conn.Context().Done():
				return
			}
		}
	}()
	go func() {
		for {
			b, err := conn.ReceiveDatagram(conn.Context())
			if err != nil {
				return
			}
			select {
			case dgIn <- b:
			case <-conn.Context().Done():
				return
			}
		}
	}()
	fb := newFeedbackWriter(st, conn.Context().Done())
	go fb.run()
	render := time.NewTicker(time.Second / time.Duration(w.cfg.RenderRate))
	defer render.Stop()
	ack := time.NewTicker(w.cfg.AckPeriod)
	defer ack.Stop()
	tick := Tick{Receiver: w.rx}
	lastFeedback := time.Now()
	control := func(v inbound) error {
		if v.err != nil {
			return v.err
		}
		// Refusals are counted in the receiver's stats.
		_, err := w.rx.ControlBytes(w.now(), v.raw)
		v.free <- v.raw // never blocks: the channel holds every buffer
		if err != nil {
			_ = conn.CloseWithError(CodeProtocol, "bad control message")
		}
		return err
	}
	for {
		select {
		case v := <-ctlIn:
			if err := control(v); err != nil {
				return err
			}
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-conn.Context().Done():
			return context.Cause(conn.Context())
		case v := <-ctlIn:
			if err := control(v); err != nil {
				return err
			}
		case b := <-dgIn:
			if codec.IsStreamCopy(b) {
				c, err := codec.ParseStreamCopy(b)
				if err != nil {
					tick.Copies.Refused++
					continue
				}
				if err := join.fromCopy(c.Offset, c.Bytes); err != nil {
					_ = conn.CloseWithError(CodeProtocol, "stream copy differs from the stream")
					return err
				}
				continue
			}
			if w.cfg.ConfirmOnly {
				w.rx.Confirm(b)
				continue
			}
			w.rx.Datagram(w.now(), b)
		case err := <-fb.failed:
			return err
		case <-ack.C:
			// Keyframe requests and confirmations of datagrams. While
			// the last feedback is still being written (a busy machine, a
			// congested path) this one is skipped, not queued: the next
			// one reports the receiver's state then, which is all the
			// authority needs.
			// With nothing to report, an empty Keyframes goes at least once
			// a second: the server closes an observer that is sent frames
			// and says nothing back (a client that reads nothing).
			select {
			case buf := <-fb.free:
				buf = w.pendingSubscribe(buf[:0])
				buf = w.rx.Feedback(buf)
				if len(buf) == 0 && time.Since(lastFeedback) >= time.Second {
					buf = codec.Keyframes{}.Append(buf)
				}
				if len(buf) == 0 {
					fb.free <- buf
					continue
				}
				lastFeedback = time.Now()
				fb.out <- buf
			default:
				tick.FeedbackSkipped++
			}
		case <-render.C:
			tick.Now = w.now()
			tick.DatagramQueue, tick.ControlQueue = len(dgIn), len(ctlIn)
			js := join.counts()
			tick.Copies.Used, tick.Copies.Late, tick.Copies.Dropped = js.Used, js.Late, js.Dropped
			tick.Views = nil
			if !w.cfg.ConfirmOnly {
				tick.Views = w.rx.Render(tick.Now)
			}
			st := w.rx.Stats()
			tick.Addr = addr
			tick.HalfFrames = w.torn.count(tick.Views, st.Timelines+st.Reconnects, w.rx.Manifest)
			if onTick != nil {
				onTick(&tick)
			}
		}
	}
}
