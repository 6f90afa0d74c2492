package cluster

import (
	"context"
	"crypto/tls"
	"log/slog"
	"sync"
	"time"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/transport"
)

// links keeps run going for every registered member of role whose
// registration want accepts, one at a time per member, as the table has
// them, until ctx ends: a member whose registration changes has its run's
// context ended (and a fresh one started for the new value), and so has
// one whose registration went — unless keep (nil: none) says to go on
// with it for now.
func links(ctx context.Context, tb *Table, role Role, want func(registration) bool, keep func(name string) bool,
	run func(ctx context.Context, name string, r registration)) {
	type link struct {
		value  string
		cancel context.CancelFunc
	}
	live := map[string]*link{}
	defer func() {
		for _, l := range live {
			l.cancel()
		}
	}()
	for {
		changed := tb.Changed()
		for name, l := range live {
			v, ok := tb.Addr(role, name)
			if ok && v == l.value || !ok && keep != nil && keep(name) {
				continue
			}
			l.cancel()
			delete(live, name)
		}
		for _, name := range tb.Members(role) {
			if live[name] != nil {
				continue
			}
			v, _ := tb.Addr(role, name)
			r, ok := parseRegistered(v)
			if !ok || !want(r) {
				continue
			}
			lctx, cancel := context.WithCancel(ctx)
			live[name] = &link{value: v, cancel: cancel}
			go run(lctx, name, r)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// authorityOf returns the registered authority whose certificate has the
// fingerprint fp (the first by name, should two register one).
func authorityOf(tb *Table, fp string) (string, bool) {
	for _, name := range tb.Members(Authority) {
		v, _ := tb.Addr(Authority, name)
		if r, ok := parseRegistered(v); ok && r.fingerprint == fp {
			return name, true
		}
	}
	return "", false
}

// acceptUplinks takes the uplinks authorities dial to this front until
// ctx ends. Each is known, by the certificate it presented, as the
// registered authority holding that certificate, and feeds the relay as
// that holder — so the fence judges its leases and frames exactly as those
// of an authority the front dialled. A newer uplink of one authority
// replaces the older.
func acceptUplinks(ctx context.Context, ln *transport.UplinkListener, tb *Table, relay *Relay, log *slog.Logger) {
	var mu sync.Mutex
	current := map[string]*transport.UplinkConn{}
	for {
		c, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		name, ok := authorityOf(tb, c.Fingerprint())
		if !ok { // its registration went between the handshake and now
			c.Close(transport.CodeProtocol, "not a registered authority")
			continue
		}
		mu.Lock()
		if old := current[name]; old != nil {
			old.Close(transport.CodeReplaced, "a newer uplink of this authority")
		}
		current[name] = c
		mu.Unlock()
		log.Info("uplink accepted", "authority", name, "remote", c.RemoteAddr())
		go func() {
			defer func() {
				mu.Lock()
				if current[name] == c {
					delete(current, name)
				}
				mu.Unlock()
			}()
			w, err := transport.NewWatcher(upstreamWatch(relay.Upstream(name), log))
			if err == nil {
				err = w.RunConn(ctx, c, nil)
			}
			c.Close(transport.CodeShutdown, "")
			if ctx.Err() == nil {
				log.Info("uplink ended", "authority", name, "err", err)
			}
		}()
	}
}

// upstreamRenderRate is the render ticks per second of a front's link from
// an authority: a relay takes the receiver's control messages and commits,
// which come as they arrive, and none of its views. At each render the
// receiver still expires unfinished frames and applies timed events.
const upstreamRenderRate = 4

// upstreamWatch is the watcher configuration of a front's link from one
// authority, feeding up: it renders rarely and simulates nothing past the
// newest frame (a front that continued every island with the observers'
// local simulation spent most of its link's time on views nobody reads).
func upstreamWatch(up *Upstream, log *slog.Logger) transport.WatchConfig {
	return transport.WatchConfig{Subscribe: codec.Subscribe{All: true}, RenderRate: upstreamRenderRate,
		Receiver: up.Hooks(receiver.Config{StraightExtrapolation: true}), Logger: log}
}

// dialAuthorities keeps one connection to every registered authority that accepts
// them, as the table has them, until ctx ends.
func dialAuthorities(ctx context.Context, tb *Table, relay *Relay, log *slog.Logger) {
	// An authority that drains leaves the world first and then hands its
	// shards on, stepping each until its next holder's frames show here:
	// its link stays while it holds or hands on any, or the islands would
	// go without frames from its leaving until their next holder's first.
	links(ctx, tb, Authority, func(r registration) bool { return r.addr != dialsOut }, tb.Busy,
		func(ctx context.Context, name string, r registration) {
			dialAuthority(ctx, name, r.addr, r.fingerprint, relay, log)
		})
}

// dialAuthority connects to one authority and feeds the relay until ctx ends,
// dialling again after any loss.
func dialAuthority(ctx context.Context, name, addr, pin string, relay *Relay, log *slog.Logger) {
	tlsc, err := transport.ClientTLS(pin, "", nil)
	if err != nil {
		log.Warn("authority registered a bad fingerprint", "authority", name, "err", err)
		return
	}
	up := relay.Upstream(name)
	for ctx.Err() == nil {
		wc := upstreamWatch(up, log)
		wc.Addr, wc.TLS, wc.Reconnect = addr, tlsc, true
		w, err := transport.NewWatcher(wc)
		if err != nil {
			log.Warn("uplink", "authority", name, "err", err)
			return
		}
		err = w.Run(ctx, nil)
		if ctx.Err() != nil {
			return
		}
		log.Info("uplink lost; dialling again", "authority", name, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dialFronts keeps one uplink from srv to every registered front with an
// uplink port until ctx ends.
func dialFronts(ctx context.Context, tb *Table, srv *transport.Server, cert tls.Certificate, log *slog.Logger) {
	links(ctx, tb, Front, func(r registration) bool { return r.uplink != "" }, nil,
		func(ctx context.Context, name string, r registration) { dialFront(ctx, name, r, srv, cert, log) })
}

// dialFront keeps an uplink to one front until ctx ends, dialling again
// after any loss: at once after an uplink that lasted, else after a wait
// that doubles from 200 ms to 5 s (a front that has not yet seen this
// authority's registration refuses its certificate).
func dialFront(ctx context.Context, name string, r registration, srv *transport.Server, cert tls.Certificate, log *slog.Logger) {
	tlsc, err := transport.UplinkClientTLS(cert, r.fingerprint)
	if err != nil {
		log.Warn("front registered a bad fingerprint", "front", name, "err", err)
		return
	}
	const first, most = 200 * time.Millisecond, 5 * time.Second
	wait := first
	for ctx.Err() == nil {
		began := time.Now()
		err := srv.Uplink(ctx, r.uplink, tlsc)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > most {
			wait = first
		}
		log.Info("uplink to front ended; dialling again", "front", name, "err", err, "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, most)
	}
}
