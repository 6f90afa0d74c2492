package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
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
	squatDefaults = flag.Bool("squat-default-bounds", false, "TestSquattersBesideWatchers: the server's default admission bounds instead of 2 s")
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
	half := []byte{0x00, 0x30, 0x00, 0x00, byte(codec.TypeKeyframes), 0, 0, 0} // announces 12 KiB, sends 4 of it
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
	skipRace(t)
	for _, tokens := range []bool{false, true} {
		t.Run(fmt.Sprintf("tokens=%v", tokens), func(t *testing.T) {
			runSquat(t, tokens)
		})
	}
}

func runSquat(t *testing.T, tokens bool) {
	// Two real watchers in the suite, eight in the soak: every receive path
	// runs in this process, and on a loaded machine eight of them starve
	// one another (a watcher that cannot say anything for the stall bound
	// is closed as one that reads nothing).
	real := 2
	n := *squatters
	if n > 4 {
		real = 8
	}
	cfg := ServerConfig{MaxObservers: real + n, SubscribeTimeout: 2 * time.Second, MessageTimeout: 2 * time.Second, StallTimeout: 5 * time.Second}
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
	srv, ct, pin := testServerPin(t, auth, cfg)
	counts := make([]*atomic.Uint64, real)
	dones := make([]<-chan error, real)
	for i := range counts {
		w := WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}}
		if tokens { // each real watcher an observer id of its own
			w.Token, _ = token.Token{Observer: uint64(i + 1), Expires: time.Now().Add(time.Hour).Unix()}.Sign(priv)
		}
		counts[i], dones[i] = runWatcher(t, w)
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

	bounded := cfg
	positive(&bounded.SubscribeTimeout, DefaultSubscribeTimeout)
	positive(&bounded.MessageTimeout, DefaultMessageTimeout)
	positive(&bounded.StallTimeout, DefaultStallTimeout)
	kinds := squats(bounded)
	results := make(chan result, n*len(kinds))
	var maxObs, peakHeap atomic.Int64
	sampled := make(chan struct{})
	stopSample := make(chan struct{})
	go func() { // the most observers the server ever held during the squat
		for {
			select {
			case <-stopSample:
				close(sampled)
				return
			case <-time.After(50 * time.Millisecond):
			}
			if o := int64(srv.Observers()); o > maxObs.Load() {
				maxObs.Store(o)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if h := int64(ms.HeapAlloc); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
		}
	}()
	// The squatters run in a process of their own, so that the heap
	// measured here is the server's and the real watchers' alone.
	squatOut, err := runSquatters(t, srv.Addr().String(), pin, n)
	if err != nil {
		t.Fatalf("squatters: %v\n%s", err, squatOut)
	}
	for _, r := range parseSquatters(t, squatOut) {
		results <- r
	}
	close(stopSample)
	<-sampled
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
		// stream, which sends nothing at all. Any of them may also find
		// the connections being admitted at MaxAdmitting (squatters that
		// never subscribe hold it for their bound) and be refused before a
		// byte is read (full): on a loaded machine the order they connect
		// in decides which.
		want := map[quic.ApplicationErrorCode]bool{CodeFull: true}
		for _, k := range kinds {
			if k.name == r.kind {
				want[k.want] = true
			}
		}
		if tokens && r.kind != "never subscribes" {
			want = map[quic.ApplicationErrorCode]bool{CodeToken: true, CodeFull: true}
		}
		name := CodeName(r.code)
		switch {
		case r.refused:
			name = "refused at handshake"
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
		codes[r.kind][name]++
		took[r.kind] = append(took[r.kind], r.took)
	}
	for i, d := range dones {
		select {
		case err := <-d:
			t.Errorf("real watcher %d lost its session: %v", i, err)
		default:
		}
	}
	for i, c := range counts {
		if got := c.Load() - base[i]; got < 100 {
			t.Errorf("real watcher %d committed only %d frames while the squatters were there", i, got)
		}
	}
	rates := rate(base, start)
	if tokens && maxObs.Load() > int64(real) {
		t.Errorf("with tokens required, %d observers were joined at once: squatters got slots", maxObs.Load())
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	peak := peakHeap.Load() - int64(before.HeapAlloc)
	for _, k := range kinds {
		d := took[k.name]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		if len(d) > 0 {
			t.Logf("%d × %s: closed %v after %v … %v", len(d), k.name, codes[k.name], d[0].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
		}
	}
	t.Logf("%d real watchers committed %v frames/s alone, %v during %v of squatting; at most %d observers joined; heap (server and the real watchers) at most %+d KiB during, %+d KiB after",
		real, normal, rates, elapsed.Round(time.Millisecond), maxObs.Load(), peak/1024, grew/1024)
	// The peak is the heap before a collection: live data and what the
	// collector has not yet taken, for the server and 8 receive paths.
	bound := int64(128 << 20)
	if raceEnabled {
		bound *= 2
	}
	// The bound holds in the soak (-squatters above 4), run alone: in the
	// suite, tests before this one and a loaded machine move the heap of
	// the shared test binary too much to measure the server by.
	if *squatters > 4 && peak > bound {
		t.Errorf("heap grew by up to %d MiB, bound %d MiB", peak>>20, bound>>20)
	}
}

// squatResult is how one squatter ended.
type squatResult struct {
	kind    string
	took    time.Duration
	code    quic.ApplicationErrorCode
	err     error
	refused bool // refused at the handshake
}

type result = squatResult

// squatOnce connects one squatter of kind k to addr and waits for the
// server to close it.
func squatOnce(addr string, ct *tls.Config, k squat, guard time.Duration) squatResult {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	t0 := time.Now()
	conn, err := quic.DialAddr(ctx, addr, ct, quicConfig(30*time.Second))
	var te *quic.TransportError
	if errors.As(err, &te) && te.ErrorCode == quic.ConnectionRefused {
		// A burst of handshakes past quic-go's accept queue (32) is
		// refused before it holds anything.
		return squatResult{kind: k.name, took: time.Since(t0), refused: true}
	}
	if err != nil {
		return squatResult{kind: k.name, err: err}
	}
	defer conn.CloseWithError(0, "")
	var ae *quic.ApplicationError
	if err := k.act(conn); err != nil {
		// The server may close a squatter before it finishes its act (the
		// admission slots full, on a loaded machine): that is its answer.
		if errors.As(err, &ae) && ae.Remote {
			return squatResult{kind: k.name, took: time.Since(t0), code: ae.ErrorCode}
		}
		return squatResult{kind: k.name, err: err}
	}
	select {
	case <-conn.Context().Done():
	case <-ctx.Done():
		return squatResult{kind: k.name, err: errors.New("never closed")}
	}
	if !errors.As(context.Cause(conn.Context()), &ae) || !ae.Remote {
		return squatResult{kind: k.name, err: context.Cause(conn.Context())}
	}
	return squatResult{kind: k.name, took: time.Since(t0), code: ae.ErrorCode}
}

// TestSquatHelper is the squatters' process (runSquatters starts it): it
// runs ISLANDSYNC_SQUATTERS squatters of each kind against
// ISLANDSYNC_SQUAT_ADDR, pinning ISLANDSYNC_SQUAT_PIN, and prints one line
// per squatter: kind, code, milliseconds, refused, error.
func TestSquatHelper(t *testing.T) {
	addr := os.Getenv("ISLANDSYNC_SQUAT_ADDR")
	if addr == "" {
		t.Skip("the squatters' process of TestSquattersBesideWatchers")
	}
	n, _ := strconv.Atoi(os.Getenv("ISLANDSYNC_SQUATTERS"))
	ct, err := ClientTLS(os.Getenv("ISLANDSYNC_SQUAT_PIN"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, k := range squats(ServerConfig{}) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := squatOnce(addr, ct, k, 5*time.Minute)
				mu.Lock()
				defer mu.Unlock()
				fmt.Printf("squat\t%s\t%d\t%d\t%v\t%v\n", r.kind, r.code, r.took.Milliseconds(), r.refused, r.err)
			}()
		}
	}
	wg.Wait()
}

// runSquatters runs n squatters of each kind in a process of their own.
func runSquatters(t *testing.T, addr, pin string, n int) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSquatHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "ISLANDSYNC_SQUAT_ADDR="+addr, "ISLANDSYNC_SQUAT_PIN="+pin, "ISLANDSYNC_SQUATTERS="+strconv.Itoa(n))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func parseSquatters(t *testing.T, out string) []squatResult {
	var rs []squatResult
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 || f[0] != "squat" {
			continue
		}
		code, _ := strconv.Atoi(f[2])
		ms, _ := strconv.Atoi(f[3])
		r := squatResult{kind: f[1], code: quic.ApplicationErrorCode(code), took: time.Duration(ms) * time.Millisecond, refused: f[4] == "true"}
		if f[5] != "<nil>" {
			r.err = errors.New(f[5])
		}
		rs = append(rs, r)
	}
	return rs
}
