package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// One embedded etcd serves the package's tests; each test works under its
// own prefix.
var etcd *Embedded

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "islandsync-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	etcd, err = Embed(dir, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	etcd.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

var prefixes atomic.Int64

// world returns a fresh prefix and a client closed with the test.
func world(t testing.TB) (string, *clientv3.Client) {
	t.Helper()
	return fmt.Sprintf("/test/%s/%d/", t.Name(), prefixes.Add(1)), client(t)
}

func client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := Dial(etcd.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func join(t testing.TB, cli *clientv3.Client, prefix, name string, ttl time.Duration) *Member {
	t.Helper()
	m, err := Join(context.Background(), cli, Config{Prefix: prefix, Name: name, Role: Authority, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func watchTable(t testing.TB, cli *clientv3.Client, prefix string) *Table {
	t.Helper()
	tb, err := WatchTable(context.Background(), cli, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.Close)
	return tb
}

// until waits for cond, looking again at every change of the table and
// every few milliseconds (the holders' hooks run after the table changes).
func until(t testing.TB, tb *Table, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only a hung test's bound
	defer cancel()
	look := time.NewTicker(10 * time.Millisecond)
	defer look.Stop()
	for {
		ch := tb.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-look.C:
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		}
	}
}

func TestClaimEpochs(t *testing.T) {
	ctx := context.Background()
	p, cli := world(t)
	a, b := join(t, cli, p, "a", 0), join(t, cli, p, "b", 0)
	ea, err := a.Claim(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := a.Claim(ctx, 7); err != nil || again != ea {
		t.Fatalf("claiming a held shard again: %d, %v; want %d", again, err, ea)
	}
	var he *HeldError
	if _, err := b.Claim(ctx, 7); !errors.As(err, &he) || he.Holder != "a" || he.Epoch != ea {
		t.Fatalf("b claimed a's shard: %v", err)
	}
	if ok, err := b.Release(ctx, 7, ea); ok || err != nil {
		t.Fatalf("b released a's shard: %v %v", ok, err)
	}
	if ok, err := a.Release(ctx, 7, ea); !ok || err != nil {
		t.Fatalf("a could not release its shard: %v %v", ok, err)
	}
	eb, err := b.Claim(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if eb <= ea {
		t.Fatalf("epoch went %d → %d: a fencing token must grow", ea, eb)
	}
	if ok, _ := a.Release(ctx, 7, ea); ok {
		t.Fatal("a late release of the old epoch deleted the new holder's claim")
	}
	if _, err := a.Claim(ctx, MaxShards); err == nil {
		t.Fatal("shard past the cap claimed")
	}
}

// TestHandOffFence: a released shard admits no lease, but its releasing
// holder is handing it on (Table.Handing) at its epoch and up — a front
// keeps relaying the frames it forwarded until the next holder's lease
// arrives — through the next holder's claim, until the releasing holder's
// session ends.
func TestHandOffFence(t *testing.T) {
	ctx := context.Background()
	p, cli := world(t)
	tb := watchTable(t, cli, p)
	a, b := join(t, cli, p, "a", 0), join(t, cli, p, "b", 0)
	for _, s := range []uint32{1, 2} {
		if _, err := a.Claim(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	until(t, tb, "a holds 1 and 2", func() bool { return len(tb.Held("a")) == 2 })
	e1, _ := tb.Shard(1)
	e2, _ := tb.Shard(2)
	for s, h := range map[uint32]Holding{1: e1, 2: e2} {
		if ok, err := a.Release(ctx, s, h.Epoch); !ok || err != nil {
			t.Fatalf("release of shard %d: %v %v", s, ok, err)
		}
	}
	until(t, tb, "both released", func() bool { return len(tb.Held("a")) == 0 })
	if tb.Admit(1, "a", e1.Epoch) {
		t.Fatal("a released shard admitted a lease")
	}
	if !tb.Handing(1, "a", e1.Epoch) || !tb.Handing(2, "a", e2.Epoch+1) {
		t.Fatal("a released shard is not being handed on by its releasing holder")
	}
	if tb.Handing(1, "a", e1.Epoch-1) || tb.Handing(1, "b", e1.Epoch) {
		t.Fatal("a hand-off covers an older epoch or another member")
	}
	eb, err := b.Claim(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	until(t, tb, "b holds 1", func() bool { h, _ := tb.Shard(1); return h.Holder == "b" })
	if tb.Admit(1, "a", e1.Epoch) || !tb.Admit(1, "b", eb) || !tb.Handing(1, "a", e1.Epoch) {
		t.Fatal("after the claim: the fence must admit the claimant only, and a may still hand its frames on")
	}
	// a's session ends: nothing of a's is handed on any more.
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	until(t, tb, "a's hand-off records gone with its lease", func() bool {
		return !tb.Handing(1, "a", e1.Epoch) && !tb.Handing(2, "a", e2.Epoch)
	})
}

func TestJoinRefusesTwins(t *testing.T) {
	p, cli := world(t)
	join(t, cli, p, "a", 0)
	if _, err := Join(context.Background(), cli, Config{Prefix: p, Name: "a", Role: Authority}); err == nil {
		t.Fatal("two authorities named a")
	}
	for _, c := range []Config{{Prefix: p, Name: "", Role: Authority}, {Prefix: p, Name: "a/b", Role: Authority},
		{Prefix: "no-slash", Name: "x", Role: Authority}, {Prefix: p, Name: "x", Role: 9}, {Prefix: p, Name: "x", Role: Front, TTL: time.Millisecond}} {
		if _, err := Join(context.Background(), cli, c); err == nil {
			t.Errorf("Join(%+v) accepted", c)
		}
	}
}

func TestWorldIsWrittenOnce(t *testing.T) {
	ctx := context.Background()
	p, cli := world(t)
	a, err := Open(ctx, cli, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, client(t), p)
	if err != nil || a.Timeline != b.Timeline || a.Timeline == 0 || !a.Start.Equal(b.Start) {
		t.Fatalf("world %+v then %+v (%v)", a, b, err)
	}
	if now := a.Now(a.Start.Add(time.Second)); now != 1_000_000 {
		t.Fatalf("a second after the start is %d µs", now)
	}
	for _, bad := range [][2]string{{"not hex at all!", "1"}, {"0000000000000001", "-5"}, {"0000000000000001", "x"}} {
		p2, _ := world(t)
		cli.Put(ctx, p2+keyTimeline, bad[0])
		cli.Put(ctx, p2+keyStart, bad[1])
		if _, err := Open(ctx, cli, p2); err == nil {
			t.Fatalf("world %q accepted", bad)
		}
	}
}

func TestOwnerMovesLittle(t *testing.T) {
	var names []string
	for i := range 5 {
		names = append(names, fmt.Sprintf("auth-%d", i))
	}
	const shards = 4000
	count := map[string]int{}
	for s := range uint32(shards) {
		count[Owner(s, names)]++
	}
	for _, n := range names {
		if c := count[n]; c < shards/5*8/10 || c > shards/5*12/10 {
			t.Errorf("%s owns %d of %d shards; want about %d", n, c, shards, shards/5)
		}
	}
	more := append(slices.Clone(names), "auth-new")
	moved := 0
	for s := range uint32(shards) {
		before, after := Owner(s, names), Owner(s, more)
		if before != after {
			moved++
			if after != "auth-new" {
				t.Fatalf("shard %d moved %s → %s when auth-new joined", s, before, after)
			}
		}
	}
	if moved < shards/6*8/10 || moved > shards/6*12/10 {
		t.Errorf("%d of %d shards moved to the new authority; want about %d", moved, shards, shards/6)
	}
	if Owner(1, nil) != "" {
		t.Error("a shard owned with no authority")
	}
}

// holder runs Serve for one member and records what it holds.
type holder struct {
	m      *Member
	mu     sync.Mutex
	held   map[uint32]uint32
	gained map[uint32]time.Time
	done   chan error
	cancel context.CancelFunc
}

func serve(t testing.TB, m *Member, tb *Table, shards []uint32) *holder {
	h := &holder{m: m, held: map[uint32]uint32{}, gained: map[uint32]time.Time{}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		h.done <- m.Serve(ctx, tb, shards, Hooks{
			Gain: func(s, e uint32) {
				h.mu.Lock()
				h.held[s], h.gained[s] = e, time.Now()
				h.mu.Unlock()
			},
			Lose: func(s, e uint32) {
				h.mu.Lock()
				if h.held[s] != e {
					t.Errorf("%s lost shard %d at epoch %d, held at %d", m.Name(), s, e, h.held[s])
				}
				delete(h.held, s)
				h.mu.Unlock()
			},
		})
	}()
	t.Cleanup(func() { cancel(); <-h.done })
	return h
}

func (h *holder) holding() map[uint32]uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.held)
}

func span(n int) []uint32 {
	var s []uint32
	for i := range uint32(n) {
		s = append(s, i)
	}
	return s
}

// settled reports whether every shard is held by its Owner among names,
// in the table and in each holder's own view.
func settled(tb *Table, shards []uint32, hs ...*holder) bool {
	var names []string
	for _, h := range hs {
		names = append(names, h.m.Name())
	}
	slices.Sort(names)
	for _, s := range shards {
		want := Owner(s, names)
		cur, ok := tb.Shard(s)
		if !ok || cur.Holder != want {
			return false
		}
		for _, h := range hs {
			ep, has := h.holding()[s]
			if has != (h.m.Name() == want) || has && ep != cur.Epoch {
				return false
			}
		}
	}
	return true
}

func TestRebalanceOnJoin(t *testing.T) {
	p, cli := world(t)
	shards := span(12)
	tb := watchTable(t, cli, p)
	a := serve(t, join(t, cli, p, "a", 0), watchTable(t, cli, p), shards)
	until(t, tb, "a holds all", func() bool { return settled(tb, shards, a) })
	b := serve(t, join(t, client(t), p, "b", 0), watchTable(t, cli, p), shards)
	until(t, tb, "a and b share", func() bool { return settled(tb, shards, a, b) })
	if n := len(b.holding()); n == 0 || n == len(shards) {
		t.Fatalf("b holds %d of %d shards", n, len(shards))
	}
}

// twoHolders runs authorities a and b, each with its own client and
// table, on eight shards with the given TTL, until they share them; tb is
// the test's own view.
func twoHolders(t *testing.T, ttl time.Duration) (tb *Table, a, b *holder, shards []uint32) {
	p, cli := world(t)
	shards = span(8)
	tb = watchTable(t, cli, p)
	a = serve(t, join(t, client(t), p, "a", ttl), watchTable(t, cli, p), shards)
	b = serve(t, join(t, client(t), p, "b", ttl), watchTable(t, cli, p), shards)
	until(t, tb, "a and b share", func() bool { return settled(tb, shards, a, b) })
	return tb, a, b, shards
}

// TestCrashFailover: an authority stops without a goodbye; etcd lets its
// lease go after the TTL and the other takes every shard under a higher
// epoch, which fronts admit while refusing the old one.
func TestCrashFailover(t *testing.T) {
	tb, a, b, shards := twoHolders(t, 2*time.Second)
	ma := a.m
	old := a.holding()
	if len(old) == 0 {
		t.Fatal("a holds nothing to lose")
	}
	crashed := time.Now()
	ma.Abandon()
	until(t, tb, "b holds everything", func() bool {
		return len(b.holding()) == len(shards) && len(tb.Held("b")) == len(shards)
	})
	var gaps []time.Duration
	for s, e := range old {
		cur, _ := tb.Shard(s)
		if cur.Epoch <= e {
			t.Errorf("shard %d: epoch %d after failover, %d before", s, cur.Epoch, e)
		}
		if tb.Admit(s, "a", e) || tb.Admit(s, "b", e) {
			t.Errorf("shard %d: the crashed holder's epoch %d admitted", s, e)
		}
		if !tb.Admit(s, "b", cur.Epoch) || tb.Admit(s, "a", cur.Epoch) {
			t.Errorf("shard %d: the new epoch refused", s)
		}
		b.mu.Lock()
		gaps = append(gaps, b.gained[s].Sub(crashed))
		b.mu.Unlock()
	}
	slices.Sort(gaps)
	t.Logf("TTL %v: %d shards back after %v (first) to %v (last)", ma.TTL(), len(gaps), gaps[0], gaps[len(gaps)-1])
	if st := tb.Stats(); st.Refused != uint64(3*len(old)) {
		t.Errorf("refused %d, want %d", st.Refused, 3*len(old))
	}
}

// TestFencing: the authority's lease is revoked behind its back (a
// partition from etcd); it fences itself and loses every shard, and its
// epochs are refused.
func TestFencing(t *testing.T) {
	p, cli := world(t)
	shards := span(4)
	tb := watchTable(t, cli, p)
	ma := join(t, client(t), p, "a", 2*time.Second)
	a := serve(t, ma, watchTable(t, cli, p), shards)
	until(t, tb, "a holds all", func() bool { return settled(tb, shards, a) })
	old := a.holding()
	if _, err := cli.Revoke(context.Background(), ma.Lease()); err != nil {
		t.Fatal(err)
	}
	<-ma.Fenced()
	if err := <-a.done; err == nil || ma.Err() == nil {
		t.Fatalf("Serve ended with %v after the lease went", err)
	}
	a.done <- nil // for the cleanup
	if h := a.holding(); len(h) != 0 {
		t.Fatalf("a still holds %v after it was fenced", h)
	}
	until(t, tb, "the shards are gone", func() bool { return len(tb.Held("a")) == 0 })
	for s, e := range old {
		if tb.Admit(s, "a", e) {
			t.Errorf("shard %d: a fenced epoch admitted", s)
		}
	}
	if _, err := ma.Claim(context.Background(), 0); err == nil {
		t.Fatal("a fenced member claimed a shard")
	}
}

// TestSelfFenceWithoutEtcd: with etcd gone altogether the member cannot
// renew, and fences itself once the TTL since its last confirmed renewal
// has passed.
func TestSelfFenceWithoutEtcd(t *testing.T) {
	own, err := Embed(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := Dial(own.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	m, err := Join(context.Background(), cli, Config{Prefix: "/p/", Name: "a", Role: Authority, TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	own.Close()
	<-m.Fenced()
	if now, d := time.Now(), m.Deadline(); now.Before(d) {
		t.Fatalf("fenced at %v, before its deadline %v", now, d)
	}
	t.Log(m.Err())
}

// TestDrain: an authority leaves; its shards move to the other at once,
// while its own lease is still alive — no waiting for a TTL.
func TestDrain(t *testing.T) {
	tb, a, b, shards := twoHolders(t, 10*time.Second)
	ma := a.m
	cli := client(t)
	if err := ma.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-a.done; !errors.Is(err, ErrDrained) {
		t.Fatalf("Serve ended with %v, want ErrDrained", err)
	}
	a.done <- nil
	until(t, tb, "b holds everything", func() bool { return settled(tb, shards, b) })
	ttl, err := cli.TimeToLive(context.Background(), ma.Lease())
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("a's lease is gone (%v, %v): the shards moved by expiry, not by the drain", ttl, err)
	}
	select {
	case <-ma.Fenced():
		t.Fatal("a drained member was fenced")
	default:
	}
}

// TestDrainMakeBeforeBreak: a draining authority keeps each shard until
// its next holder has claimed it — etcd shows the claim when Lose comes —
// and the drain ends well within the TTL: whether it leaves and Serve
// releases each shard, or it releases them all as it leaves
// (LeaveAndRelease), or tries to with a table that is behind (only the
// registration goes; Serve releases them).
func TestDrainMakeBeforeBreak(t *testing.T) {
	for _, how := range []string{"leave", "leave and release", "leave and release, table behind"} {
		t.Run(how, func(t *testing.T) { drainMakesBeforeBreak(t, how) })
	}
}

func drainMakesBeforeBreak(t *testing.T, how string) {
	p, cli := world(t)
	shards := span(8)
	tb := watchTable(t, cli, p)
	serve(t, join(t, client(t), p, "b", 0), watchTable(t, cli, p), shards)
	ma := join(t, client(t), p, "a", 0)
	tba := watchTable(t, cli, p)
	type loss struct {
		shard  uint32
		holder string // the shard's holder in etcd when a lost it
	}
	losses := make(chan loss, len(shards))
	gained := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ma.Serve(ctx, tba, shards, Hooks{
			Gain: func(uint32, uint32) { gained++ },
			Lose: func(s, _ uint32) {
				r, err := cli.Get(context.Background(), shardKey(p, s))
				h := "nobody"
				if err == nil && len(r.Kvs) == 1 {
					h = string(r.Kvs[0].Value)
				}
				losses <- loss{s, h}
			},
		})
	}()
	until(t, tb, "a and b share", func() bool {
		for _, s := range shards {
			if h, ok := tb.Shard(s); !ok || h.Holder != Owner(s, []string{"a", "b"}) {
				return false
			}
		}
		return true
	})
	n := len(tb.Held("a"))
	until(t, tba, "a's own table shows its share", func() bool { return len(tba.Held("a")) == n })
	began := time.Now()
	switch how {
	case "leave":
		if err := ma.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
	case "leave and release":
		if got, err := ma.LeaveAndRelease(context.Background(), tba); got != n || err != nil {
			t.Fatalf("LeaveAndRelease released %d shards (%v), want %d", got, err, n)
		}
	default:
		// A table that shows a's shards at epochs etcd no longer has.
		behind := &Table{shards: map[uint32]Holding{}}
		for _, s := range tb.Held("a") {
			h, _ := tb.Shard(s)
			h.Epoch--
			behind.shards[s] = h
		}
		if got, err := ma.LeaveAndRelease(context.Background(), behind); got != 0 || err != nil {
			t.Fatalf("LeaveAndRelease released %d shards (%v) by a table behind etcd", got, err)
		}
	}
	if err := <-done; !errors.Is(err, ErrDrained) {
		t.Fatalf("Serve ended with %v, want ErrDrained", err)
	}
	took := time.Since(began)
	close(losses)
	for l := range losses {
		n--
		if l.holder != "b" {
			t.Errorf("a stopped stepping shard %d while etcd showed it held by %s, not yet by b", l.shard, l.holder)
		}
	}
	if n != 0 {
		t.Fatalf("%d shards a held were never lost", n)
	}
	if took >= ma.HandOffWait() {
		t.Errorf("the drain took %v, past the hand-off wait %v: the claims were not seen", took, ma.HandOffWait())
	}
}

// TestHandedOff: a shard counts as released by its holder only at the
// exact epoch of the hand-off record that stands.
func TestHandedOff(t *testing.T) {
	tb := &Table{handing: map[uint32]Holding{3: {Holder: "a", Epoch: 5}}}
	for _, tc := range []struct {
		shard  uint32
		holder string
		epoch  uint32
		want   bool
	}{{3, "a", 5, true}, {3, "a", 6, false}, {3, "a", 4, false}, {3, "b", 5, false}, {4, "a", 5, false}} {
		if got := tb.handedOff(tc.shard, tc.holder, tc.epoch); got != tc.want {
			t.Errorf("handedOff(%d, %s, %d) = %v, want %v", tc.shard, tc.holder, tc.epoch, got, tc.want)
		}
	}
}

// TestTableIgnoresGarbage: whatever else is written under the prefix is
// counted and ignored.
func TestTableIgnoresGarbage(t *testing.T) {
	ctx := context.Background()
	p, cli := world(t)
	for _, k := range []string{"shards/x", "shards/0001", "shards/99999999", "shards/", "members/king/a",
		"members/authority/bad name", "members/authority", "elsewhere"} {
		cli.Put(ctx, p+k, "a")
	}
	cli.Put(ctx, p+"shards/3", "a name far too long for any member of a world, surely past sixty-four bytes")
	cli.Put(ctx, p+"members/front/f", string(make([]byte, MaxAddr+1)))
	tb := watchTable(t, cli, p)
	if st := tb.Stats(); st.Ignored != 10 {
		t.Fatalf("ignored %d keys, want 10", st.Ignored)
	}
	cli.Put(ctx, p+"shards/5", "b")
	cli.Put(ctx, p+"shards/6", "")
	until(t, tb, "shard 5 seen", func() bool { _, ok := tb.Shard(5); return ok })
	until(t, tb, "the empty holder counted", func() bool { return tb.Stats().Ignored == 11 })
	if _, ok := tb.Shard(6); ok {
		t.Fatal("a shard with no holder name taken")
	}
}

// TestServeWaitsForItsRegistration: a table read before the member joined
// does not show it yet; Serve must wait for it rather than take the
// member's absence for a drain.
func TestServeWaitsForItsRegistration(t *testing.T) {
	p, cli := world(t)
	shards := span(3)
	early := watchTable(t, cli, p)
	a := serve(t, join(t, cli, p, "a", 0), early, shards)
	until(t, early, "a holds all", func() bool { return settled(early, shards, a) })
}
