package transport

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/token"
)

var (
	squatters     = flag.Int("squatters", 4, "TestSquattersBesideWatchers: squatting clients of each kind (the soak: 32)")
	squatDefaults = flag.Bool("squat-default-bounds", false, "TestSquattersBesideWatchers: the server's default admission and stall bounds instead of 2 s")
)

// squat is one kind of squatting client: what it does once connected.
type squat struct {
	name string
	act  func(conn *quic.Conn) error
	want quic.ApplicationErrorCode
	// bound is how long the server may take to close it: its admission or
	// stall bound, plus a second for a loaded machine.
	bound time.Duration
}

func squats(cfg ServerConfig) []squat {
	half := []byte{0x00, 0x00, 0x01, 0x00, byte(codec.TypeHeld), 0, 0, 0} // announces 64 KiB, sends 4 of it
	open := func(conn *quic.Conn, b []byte) error {
		st, err := conn.OpenStream()
		if err == nil && len(b) > 0 {
			_, err = st.Write(b)
		}
		return err
	}
	sub := codec.Subscribe{All: true}.Append(nil)
	return []squat{
		{"half a message", func(c *quic.Conn) error { return open(c, append(append([]byte(nil), sub...), half...)) }, CodeSlowRead, cfg.MessageTimeout},
		{"reads nothing", func(c *quic.Conn) error { return open(c, sub) }, CodeBacklog, 2 * cfg.StallTimeout},
		{"never subscribes", func(c *quic.Conn) error { return open(c, nil) }, CodeNoStream, cfg.SubscribeTimeout},
	}
}

// TestSquattersBesideWatchers: squatters of every kind — half a control
// message sent, never reading, never subscribing — connect beside real
// watchers, with observer slots for the real ones and one kind of
// squatter. Every squatter is closed within its bound, with its code or,
// finding the slots taken, with CodeFull; the real watchers keep committing throughout,
// and the heap stays bounded. With TokenKeys, no squatter gets a slot at
// all. -squatters 32 is the soak.
func TestSquattersBesideWatchers(t *testing.T) {
	if testing.Short() {
		t.Skip("real network test")
	}
	for _, tokens := range []bool{false, true} {
		t.Run(fmt.Sprintf("tokens=%v", tokens), func(t *testing.T) {
			runSquat(t, tokens)
		})
	}
}

func runSquat(t *testing.T, tokens bool) {
	const real = 8
	n := *squatters
	cfg := ServerConfig{MaxObservers: real + n, SubscribeTimeout: 2 * time.Second, MessageTimeout: 2 * time.Second, StallTimeout: 2 * time.Second}
	if *squatDefaults {
		cfg.SubscribeTimeout, cfg.MessageTimeout, cfg.StallTimeout = 0, 0, 0
	}
	var priv ed25519.PrivateKey
	if tokens {
		var pub ed25519.PublicKey
		pub, priv, _ = token.GenerateKey(nil)
		cfg.TokenKeys = []ed25519.PublicKey{pub}
	}
	auth, _ := scenario.NewAuthority(scenario.All, 20)
	srv, ct := testServer(t, auth, cfg)
	counts := make([]*atomic.Uint64, real)
	for i := range counts {
		w := WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}}
		if tokens { // each real watcher an observer id of its own
			w.Token, _ = token.Token{Observer: uint64(i + 1), Expires: time.Now().Add(time.Hour).Unix()}.Sign(priv)
		}
		counts[i], _ = runWatcher(t, w)
	}
	for i, c := range counts {
		waitFor(t, fmt.Sprintf("real watcher %d to commit", i), func() bool { return c.Load() > 0 })
	}
	// The real watchers' normal rate: over their next 1200 frames alone.
	rate := func(from []uint64, since time.Time) []string {
		var out []string
		for i, c := range counts {
			out = append(out, fmt.Sprintf("%.0f", float64(c.Load()-from[i])/time.Since(since).Seconds()))
		}
		return out
	}
	take := func() []uint64 {
		out := make([]uint64, real)
		for i, c := range counts {
			out[i] = c.Load()
		}
		return out
	}
	alone, aloneAt := take(), time.Now()
	waitFor(t, "the real watchers' first 1200 frames", func() bool { return counts[0].Load() >= alone[0]+1200 })
	normal := rate(alone, aloneAt)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	base := take()
	start := time.Now()

	kinds := squats(func() ServerConfig { c := cfg; _ = c.defaults(); return c }())
	type result struct {
		kind    string
		took    time.Duration
		code    quic.ApplicationErrorCode
		err     error
		refused bool
	}
	results := make(chan result, n*len(kinds))
	var wg sync.WaitGroup
	var maxObs atomic.Int64
	stopSample := make(chan struct{})
	go func() { // the most observers the server ever held during the squat
		for {
			select {
			case <-stopSample:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if o := int64(srv.Observers()); o > maxObs.Load() {
				maxObs.Store(o)
			}
		}
	}()
	for _, k := range kinds {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- func() result {
					ctx, cancel := context.WithTimeout(context.Background(), guardTime(t))
					defer cancel()
					t0 := time.Now()
					conn, err := quic.DialAddr(ctx, srv.Addr().String(), ct, quicConfig(30*time.Second))
					if err != nil {
						return result{kind: k.name, err: err}
					}
					defer conn.CloseWithError(0, "")
					if err := k.act(conn); err != nil {
						return result{kind: k.name, err: err}
					}
					select {
					case <-conn.Context().Done():
					case <-ctx.Done():
						return result{kind: k.name, err: errors.New("never closed")}
					}
					var ae *quic.ApplicationError
					if !errors.As(context.Cause(conn.Context()), &ae) || !ae.Remote {
						return result{kind: k.name, err: context.Cause(conn.Context())}
					}
					return result{kind: k.name, took: time.Since(t0), code: ae.ErrorCode}
				}()
			}()
		}
	}
	wg.Wait()
	close(stopSample)
	elapsed := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	close(results)
	took := map[string][]time.Duration{}
	bounds := map[string]time.Duration{}
	for _, k := range kinds {
		bounds[k.name] = k.bound + time.Second
	}
	codes := map[string]map[string]int{}
	for r := range results {
		// Without tokens a subscribing squatter holds a slot until its
		// bound, or finds the slots taken (full); with tokens every one is
		// refused for want of one — except one that never opens its
		// stream, which sends nothing at all.
		want := map[quic.ApplicationErrorCode]bool{}
		for _, k := range kinds {
			if k.name == r.kind {
				want[k.want] = true
			}
		}
		if tokens && r.kind != "never subscribes" {
			want = map[quic.ApplicationErrorCode]bool{CodeToken: true}
		} else if r.kind != "never subscribes" {
			want[CodeFull] = true
		}
		switch {
		case r.err != nil:
			t.Errorf("%s: %v", r.kind, r.err)
		case !want[r.code]:
			t.Errorf("%s: closed with %s", r.kind, CodeName(r.code))
		case r.took > bounds[r.kind]:
			t.Errorf("%s: closed after %v, bound %v", r.kind, r.took, bounds[r.kind])
		}
		if codes[r.kind] == nil {
			codes[r.kind] = map[string]int{}
		}
		codes[r.kind][CodeName(r.code)]++
		took[r.kind] = append(took[r.kind], r.took)
	}
	for i, c := range counts {
		if got := c.Load() - base[i]; got < 100 {
			t.Errorf("real watcher %d committed only %d frames while the squatters were there", i, got)
		}
	}
	rates := rate(base, start)
	if tokens && maxObs.Load() > real {
		t.Errorf("with tokens required, %d observers were joined at once: squatters got slots", maxObs.Load())
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	for _, k := range kinds {
		d := took[k.name]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		if len(d) > 0 {
			t.Logf("%d × %s: closed %v after %v … %v", len(d), k.name, codes[k.name], d[0].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
		}
	}
	t.Logf("%d real watchers committed %v frames/s alone, %v during %v of squatting; at most %d observers joined; heap (server and the real watchers) %+d KiB",
		real, normal, rates, elapsed.Round(time.Millisecond), maxObs.Load(), grew/1024)
	const bound = 64 << 20
	if grew > bound {
		t.Errorf("heap grew by %d MiB, bound %d MiB", grew>>20, bound>>20)
	}
}
