package cluster

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"runtime/metrics"
	"slices"
	"sort"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/transport"
)

var (
	soak          = flag.Bool("soak", false, "run TestClusterSoak: two fronts, 16 watchers, fencing, crash, drain and front loss")
	soakScenarios = flag.String("soak-scenarios", "all", "TestClusterSoak: the world's scenarios")
	soakReal      = flag.Int("soak-real", 16, "TestClusterSoak: how many of the 16 watchers run the whole receive path; the others are stand-ins that only confirm datagrams")
	soakSim       = flag.Bool("soak-sim", false, "TestClusterSoak: the watchers continue islands past their frames with local simulations (off: along their velocities)")
	soakSimWork   = flag.Int("soak-sim-work", receiver.DefaultMaxSimWork/16, "TestClusterSoak with -soak-sim: each real watcher's local-simulation budget, body steps per render (receiver.Config.MaxSimWork): 16 observers on one machine share what one has alone")
)

// TestClusterSoak is the cluster's whole story at once, over QUIC on
// 127.0.0.1 with an embedded etcd: every scenario, two authorities, two
// fronts and 16 watchers (8 on each front, the other as fallback).
//
//  1. Fencing: a's etcd lease is revoked while it runs; it stops within its
//     TTL, and what it still sends is refused and counted.
//  2. A third authority c joins; b and c share.
//  3. Crash: b stops without a goodbye; c takes its islands after the TTL.
//  4. A fourth authority d joins; c and d share.
//  5. Drain: c stops with a goodbye; d takes its islands at once.
//  6. Front loss: f1 stops; its watchers move to f2 and play on.
//
// After each, every watcher has every island of every shard under the
// shard's current epoch. At the end no watcher has shown a half-frame or
// committed a frame of an older epoch after a newer one, and every watcher
// holds exactly the identities, leases and manifests of the one authority
// left. A measurement with figures: run it with -soak -v. The drain is
// measured from a steady state: every watcher has committed four frames in
// a row of every island since the rebalance before it. 16 watchers share
// one machine, so they continue islands past their frames along their
// velocities, not with local simulations: a change of hands delays frames
// to every watcher at once, their simulations then take up the slack, and
// on 2 cores the process saturates and delays frames further. Over 10
// runs alternating with 10 without them, with a sixteenth each of the
// simulation budget one observer has alone, the simulations took half the
// process's CPU during the drain, and in 6 runs the islands came back
// 0.42–2.78 s after the drain began; without them, 54–194 ms in every
// run. -soak-sim turns them on (-soak-sim-work sets each one's budget).
// -soak-real N keeps N of them and makes the others stand-ins
// (transport.WatchConfig.ConfirmOnly: to a front, observers that receive
// everything, at a fraction of the CPU). The checks and figures are the
// real watchers'. Each change of hands also reports when its islands
// moved on the authorities' time base, and how busy the process was
// meanwhile.
func TestClusterSoak(t *testing.T) {
	if !*soak {
		t.Skip("a soak: go test ./cluster -run TestClusterSoak -soak -v")
	}
	scs, err := scenario.Pick(*soakScenarios)
	if err != nil {
		t.Fatal(err)
	}
	p, cli := world(t)
	tb := watchTable(t, cli, p)
	shards := span(len(scs))
	lightWatchers, watchSimWork = true, -1
	if *soakSim {
		watchSimWork = *soakSimWork
	}
	t.Cleanup(func() { lightWatchers, watchSimWork = false, 0 })
	// The default TTL: 16 watchers load a 2-core machine enough that
	// keep-alives of 2 s leases are sometimes not confirmed in time.
	ttl := func(c *NodeConfig) { c.TTL = DefaultTTL }
	period := time.Second / 20 // the broadcast period at NodeConfig.Hz's default
	a := startNode(t, p, "a", Authority, scs, ttl)
	w, err := Open(context.Background(), cli, p) // the world a wrote: its time base
	if err != nil {
		t.Fatal(err)
	}
	b := startNode(t, p, "b", Authority, scs, ttl)
	f1 := startNode(t, p, "f1", Front, scs, ttl)
	f2 := startNode(t, p, "f2", Front, scs, ttl)
	var obs []*observer
	for i := range 16 {
		first, other := f1, f2
		if i%2 == 1 {
			first, other = f2, f1
		}
		if i >= *soakReal {
			standIn(t, first, other)
			continue
		}
		obs = append(obs, watch(t, first, other))
	}
	if len(obs) == 0 {
		t.Fatal("-soak-real 0: no watcher to check")
	}
	everyone := func(what string) {
		t.Helper()
		for i, o := range obs {
			await(t, fmt.Sprintf("watcher %d: %s", i, what), observed(o, tb, len(scs)))
		}
	}
	await(t, "a and b share", heldBy(tb, shards, "a", "b"))
	everyone("every shard from a and b")
	var steadyMax time.Duration // the longest gap between two frames before the drain; 0 until measured
	// gaps reports, over every watcher, how long after since each island
	// of shards committed under its new epoch, and how long it went
	// without frames across the hand-off.
	gaps := func(what string, moved []uint32, since time.Time) {
		var back, quiet []time.Duration
		for _, o := range obs {
			g, q, _, _ := islandGaps(o, moved, len(scs), since)
			back, quiet = append(back, g...), append(quiet, q...)
		}
		slices.Sort(back)
		slices.Sort(quiet)
		t.Logf("%s: %d island hand-offs over %d watchers, back after p50 %v, max %v; silent p50 %v, max %v",
			what, len(back), len(obs), back[len(back)/2], back[len(back)-1], quiet[len(quiet)/2], quiet[len(quiet)-1])
		if steadyMax > 0 {
			t.Logf("%s: silent longer than any gap before it (%v) in %d of %d hand-offs", what, steadyMax,
				len(quiet)-sort.Search(len(quiet), func(i int) bool { return quiet[i] > steadyMax }), len(quiet))
		}
		// Of the silence, what the authorities' sampling makes — the
		// authority time between the old epoch's last frame and the new
		// one's first — the rest being delivery on a shared machine.
		var auth []island.Time
		for _, o := range obs {
			auth = append(auth, authorityGaps(o, moved, len(scs), since)...)
		}
		slices.Sort(auth)
		over := len(auth) - sort.Search(len(auth), func(i int) bool { return auth[i] > island.Time(period/time.Microsecond) })
		t.Logf("%s: authority time between the old epoch's last frame and the new one's first: p50 %.1f ms, max %.1f ms; over a period in %d of %d",
			what, float64(auth[len(auth)/2])/1000, float64(auth[len(auth)-1])/1000, over, len(auth))
		// When the islands moved on the authorities' time base: the
		// authority time of each new epoch's first frame, after the stop's.
		var at []island.Time
		for _, o := range obs {
			at = append(at, movedAt(o, moved, len(scs), since, island.Time(w.Now(since)))...)
		}
		if len(at) > 0 {
			slices.Sort(at)
			over = len(at) - sort.Search(len(at), func(i int) bool { return at[i] > island.Time(period/time.Microsecond) })
			t.Logf("%s: the new epochs' first frames sampled after the stop, in authority time: p50 %.1f ms, max %.1f ms; over a period in %d of %d",
				what, float64(at[len(at)/2])/1000, float64(at[len(at)-1])/1000, over, len(at))
		}
	}

	// memory reports the process's live heap after its last collection
	// and the local-simulation spaces the watchers hold.
	memory := func(what string) {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		spaces := 0
		for _, o := range obs {
			c := make(chan int, 1)
			select {
			case o.askSpaces <- c:
				spaces += <-c
			case <-time.After(time.Second): // a watcher between connections
			}
		}
		t.Logf("%s: live heap %.0f MB; the %d watchers hold %d local-simulation spaces",
			what, float64(sample[0].Value.Uint64())/1e6, len(obs), spaces)
	}

	// fronts sums, over both fronts, the hand-offs they relayed and those
	// whose new holder's first frame went out within le of the old lease's
	// last (the relay's gap, counted in its Steps).
	fronts := func(le time.Duration) (n, within uint64) {
		for _, f := range []*node{f1, f2} {
			k, w := frontGaps(t, f.name, le.Seconds())
			n, within = n+k, within+w
		}
		return n, within
	}

	// moveAll stops n — a drain (cause nil) or a crash (ErrAbandon) — and
	// waits until heir holds every shard and every watcher has them.
	// expiry, when not zero, is when n's lease expires (a crash): the
	// islands' return is reported from it too.
	moveAll := func(what string, n *node, cause error, heir string, expiry time.Time) {
		moved, since := tb.Held(n.name), time.Now()
		sched0, cpu0 := schedLatencies(), cpuTime()
		claims0, claimSum0 := histogram(t, heir, "islandsync_cluster_etcd_call_seconds", "claim")
		gains0, gainSum0 := histogram(t, heir, "islandsync_cluster_gain_seconds", "")
		releases0, releaseSum0 := histogram(t, n.name, "islandsync_cluster_etcd_call_seconds", "release")
		relayed0, within0 := fronts(period)
		if err := n.stop(cause); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		await(t, heir+" holds everything", heldBy(tb, shards, heir))
		everyone("every shard from " + heir)
		gaps(what, moved, since)
		if relayed, within := fronts(period); relayed > relayed0 {
			// Counted in the fronts' own Steps: a loaded machine that
			// delays the frames delays the Steps that count them too.
			t.Logf("%s: at the fronts, %d of %d hand-offs went out within a period of the old lease's last frame, counted in their Steps",
				what, within-within0, relayed-relayed0)
		}
		// How busy the process was meanwhile: the cores it used (none
		// where the platform does not say) and how long its goroutines
		// waited to run once runnable (the runtime samples them).
		used := "an unknown share of its cores"
		if cpu0 > 0 {
			used = fmt.Sprintf("%.2f cores", float64(cpuTime()-cpu0)/float64(time.Since(since)))
		}
		t.Logf("%s: meanwhile the process used %s, and its goroutines waited to run %s", what, used, waited(sched0, schedLatencies()))
		// What the authorities timed of it: etcd's answers and the gains'
		// builds, each on average.
		claims, claimSum := histogram(t, heir, "islandsync_cluster_etcd_call_seconds", "claim")
		gains, gainSum := histogram(t, heir, "islandsync_cluster_gain_seconds", "")
		releases, releaseSum := histogram(t, n.name, "islandsync_cluster_etcd_call_seconds", "release")
		_, leaveSum := histogram(t, n.name, "islandsync_cluster_etcd_call_seconds", "leave")
		mean := func(sum, sum0 float64, k, k0 uint64) time.Duration {
			if k == k0 {
				return 0
			}
			return secs((sum - sum0) / float64(k-k0))
		}
		took := fmt.Sprintf("%s's claims %v, its gains %v from claim to announced (each on average)",
			heir, mean(claimSum, claimSum0, claims, claims0), mean(gainSum, gainSum0, gains, gains0))
		if cause == nil {
			rel := "its releases went with it"
			if releases > releases0 {
				rel = fmt.Sprintf("its releases %v", mean(releaseSum, releaseSum0, releases, releases0))
			}
			took = fmt.Sprintf("%s's leave took %v, %s; %s", n.name, secs(leaveSum), rel, took)
		}
		t.Logf("%s: %s", what, took)
		if expiry.IsZero() {
			return
		}
		var back []time.Duration
		for _, o := range obs {
			g, _, _, _ := islandGaps(o, moved, len(scs), since)
			for _, d := range g {
				back = append(back, since.Add(d).Sub(expiry))
			}
		}
		slices.Sort(back)
		t.Logf("%s: the lease expired %v after the crash; the islands were back p50 %v, max %v after it",
			what, expiry.Sub(since).Round(time.Millisecond), back[len(back)/2], back[len(back)-1])
	}

	// 1. Fencing.
	fenced0 := counter(t, "f1", "islandsync_cluster_fenced_total", "frame") + counter(t, "f2", "islandsync_cluster_fenced_total", "frame")
	held := tb.Held("a")
	h, _ := tb.Shard(held[0])
	revoked := time.Now()
	if _, err := cli.Revoke(context.Background(), h.Lease); err != nil {
		t.Fatal(err)
	}
	if err := <-a.done; err == nil {
		t.Fatal("a fenced authority exited without an error")
	}
	a.done = nil
	stopped := time.Since(revoked)
	await(t, "b holds everything", heldBy(tb, shards, "b"))
	everyone("every shard from b")
	fenced := counter(t, "f1", "islandsync_cluster_fenced_total", "frame") + counter(t, "f2", "islandsync_cluster_fenced_total", "frame") - fenced0
	t.Logf("fencing: a stopped %v after its lease was revoked (TTL %v); the fronts refused %v of its frames", stopped, DefaultTTL, fenced)
	gaps("fencing", held, revoked)

	// 2–3. c joins; b crashes.
	c := startNode(t, p, "c", Authority, scs, ttl)
	await(t, "b and c share", heldBy(tb, shards, "b", "c"))
	everyone("every shard from b and c")
	// b crashes just after a keep-alive renewed its lease, so that every
	// run measures the worst case: the lease lives a whole TTL on.
	moveAll(fmt.Sprintf("crash (TTL %v)", DefaultTTL), b, ErrAbandon, "c", justRenewed(t, cli, tb, "b"))

	// 4–5. d joins; c drains.
	d := startNode(t, p, "d", Authority, scs, ttl)
	await(t, "c and d share", heldBy(tb, shards, "c", "d"))
	everyone("every shard from c and d")
	// The drain is measured from a steady state, as in TestClusterOverQUIC.
	for i, o := range obs {
		await(t, fmt.Sprintf("watcher %d: frames flow again for every island", i), flowing(o))
	}
	memory("before the drain")
	// What the loaded process does to frames with no change of hands:
	// every gap between two frames of one island and epoch, about a
	// second's worth (20 per island) at each watcher, beside the drain's.
	for _, o := range obs {
		o.mu.Lock()
		o.steady, o.record = o.steady[:0], true
		o.mu.Unlock()
	}
	var steady []time.Duration
	for i, o := range obs {
		await(t, fmt.Sprintf("watcher %d: a second of frames", i), func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			return len(o.steady) >= 20*len(o.newest)
		})
	}
	for _, o := range obs {
		o.mu.Lock()
		steady, o.record = append(steady, o.steady...), false
		o.mu.Unlock()
	}
	slices.Sort(steady)
	steadyMax = steady[len(steady)-1]
	t.Logf("before the drain: %d gaps between two frames of one island at the watchers: p50 %v, p99 %v, max %v; over %v in %d",
		len(steady), steady[len(steady)/2], steady[len(steady)*99/100], steadyMax, period+period/5,
		len(steady)-sort.Search(len(steady), func(i int) bool { return steady[i] > period+period/5 }))
	moveAll("drain", c, nil, "d", time.Time{})

	// 6. Front loss.
	var movers []*observer // f1's watchers
	var before []int       // their commits before
	for _, o := range obs {
		o.mu.Lock()
		o.waiting, o.gapMax = false, 0
		if o.addr == f1.srv.Addr().String() {
			movers, before = append(movers, o), append(before, o.commits)
		}
		o.mu.Unlock()
	}
	if err := f1.stop(nil); err != nil {
		t.Fatal(err)
	}
	for i, o := range obs {
		await(t, fmt.Sprintf("watcher %d on f2", i), func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.addr == f2.srv.Addr().String()
		})
	}
	everyone("every shard through f2")
	var moved []time.Duration
	for i, o := range movers {
		// Two broadcasts' frames of every island through f2: the time
		// without frames across the move is behind.
		await(t, fmt.Sprintf("f1's watcher %d commits through f2", i), func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.commits >= before[i]+2*len(o.newest)
		})
		o.mu.Lock()
		moved = append(moved, o.gapMax)
		o.mu.Unlock()
	}
	if len(moved) > 0 {
		slices.Sort(moved)
		t.Logf("front loss: %d watchers moved from f1 to f2; the longest each went without a frame: p50 %v, max %v",
			len(moved), moved[len(moved)/2], moved[len(moved)-1])
	}

	want := serverState(d.srv)
	for i, o := range obs {
		await(t, fmt.Sprintf("watcher %d holds d's identities, leases and manifests", i), func() bool {
			return o.state().Equal(serverState(d.srv))
		})
	}
	waits, commits, halves, backwards := 0, 0, 0, 0
	for i, o := range obs {
		o.mu.Lock()
		if o.halves != 0 || o.backwards != 0 {
			t.Errorf("watcher %d: %d half-frames shown, %d frames of an older epoch committed after a newer one", i, o.halves, o.backwards)
		}
		if o.waiting {
			waits++
		}
		commits, halves, backwards = commits+o.commits, halves+o.halves, backwards+o.backwards
		o.mu.Unlock()
	}
	t.Logf("%d watchers (and %d stand-ins): %d frames committed, %d half-frames, %d older-epoch frames after newer; %d went back to Waiting when f1 stopped; %d islands, %d identities at the end",
		len(obs), 16-len(obs), commits, halves, backwards, waits, len(want.Leases), len(want.IDs))
}

// standIn runs a stand-in watcher of front (fallback after it) until the
// test ends: it confirms every datagram without restoring it, so that the
// fronts serve it as any observer while it takes little of the machine.
func standIn(t *testing.T, front *node, fallback *node) {
	t.Helper()
	w, err := transport.NewWatcher(transport.WatchConfig{Addr: front.srv.Addr().String(), Fallback: []string{fallback.srv.Addr().String()},
		TLS: frontTLS(t), Subscribe: codec.Subscribe{All: true}, Reconnect: true, ConfirmOnly: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx, nil); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// renewalBracket is how soon after the request of the reading before it a
// reading that shows a renewal must come back for justRenewed to take it.
const renewalBracket = 15 * time.Millisecond

// justRenewed waits until the lease of holder (of some shard) has just
// been renewed — a reading of its remaining time came back higher than
// the one before, within renewalBracket of that one's request — and
// returns when it expires at the earliest: a whole TTL after the earlier
// reading's request, the renewal having come after it (and at most
// renewalBracket later). From it the islands' return is measured at the
// latest. A renewal seen through slower readings is let pass.
func justRenewed(t *testing.T, cli *clientv3.Client, tb *Table, holder string) time.Time {
	t.Helper()
	held := tb.Held(holder)
	if len(held) == 0 {
		t.Fatalf("%s holds nothing", holder)
	}
	h, _ := tb.Shard(held[0])
	ctx := context.Background()
	prev, prevSent := int64(-1), time.Time{}
	for deadline := time.Now().Add(10 * DefaultTTL); time.Now().Before(deadline); {
		sent := time.Now()
		r, err := cli.TimeToLive(ctx, h.Lease)
		if err != nil {
			t.Fatal(err)
		}
		if prev >= 0 && r.TTL > prev && time.Since(prevSent) < renewalBracket {
			return prevSent.Add(time.Duration(r.GrantedTTL) * time.Second)
		}
		prev, prevSent = r.TTL, sent
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no renewal of %s's lease seen within %v", holder, 10*DefaultTTL)
	return time.Time{}
}

// schedLatencies reads how long the process's goroutines have waited,
// runnable, before they ran (the Go runtime's histogram since it started).
func schedLatencies() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// waited describes the waits to run between two readings of
// schedLatencies: how many, their p50 and p99, and the longest bucket's
// upper bound.
func waited(before, after *metrics.Float64Histogram) string {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return "(not measured)"
	}
	var n uint64
	counts := make([]uint64, len(after.Counts))
	for i := range counts {
		counts[i] = after.Counts[i] - before.Counts[i]
		n += counts[i]
	}
	if n == 0 {
		return "(no waits)"
	}
	// upper is bucket i's upper bound (its lower one for the last,
	// unbounded, bucket).
	upper := func(i int) time.Duration {
		if b := after.Buckets[i+1]; !math.IsInf(b, 1) {
			return secs(b)
		}
		return secs(after.Buckets[i])
	}
	at := func(q float64) time.Duration {
		want, sum := uint64(q*float64(n)), uint64(0)
		for i, c := range counts {
			if sum += c; sum > want {
				return upper(i)
			}
		}
		return upper(len(counts) - 1)
	}
	var longest time.Duration
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] > 0 {
			longest = upper(i)
			break
		}
	}
	return fmt.Sprintf("%d times: p50 under %v, p99 under %v, the longest under %v", n, at(0.5), at(0.99), longest)
}
