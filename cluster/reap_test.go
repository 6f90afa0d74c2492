package cluster

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestZeroRun holds the reaping rule to readings at given instants: only
// a run of zeros whose last request comes a second after its first answer,
// each answered less than runGap after the previous request, proves a
// lease expired; slow answers delay a proof but do not spoil it.
func TestZeroRun(t *testing.T) {
	type reading struct {
		at, took time.Duration // request sent at, answered after
		ttl      int64
	}
	// zeros every step from from to end, each answered after took
	zeros := func(from, end, step, took time.Duration) []reading {
		var rs []reading
		for at := from; at <= end; at += step {
			rs = append(rs, reading{at, took, 0})
		}
		return rs
	}
	cat := func(parts ...[]reading) []reading {
		var out []reading
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	ms := time.Millisecond
	step := 20 * ms
	for _, tc := range []struct {
		name    string
		granted int64
		rs      []reading
		want    int // index of the reading that proves expiry; -1: none
	}{
		// Readings every 20 ms. The first answer comes at 1 ms: the
		// reading requested at 1,020 ms is the first a second after it.
		{"a second of zeros", 2, zeros(0, 2*time.Second, step, ms), 51},
		{"short of a second", 2, zeros(0, time.Second, step, ms), -1},
		{"renewed on the way", 2, cat(zeros(0, 500*ms, step, ms), []reading{{520 * ms, ms, 1}},
			zeros(540*ms, 1500*ms, step, ms)), -1},
		{"a gap restarts the run", 2, cat(zeros(0, 400*ms, step, ms), zeros(400*ms+runGap, 400*ms+runGap+time.Second, step, ms)), -1},
		{"a slow answer restarts the run", 2, cat(zeros(0, 500*ms, step, ms), []reading{{520 * ms, runGap, 0}},
			zeros(520*ms+runGap, 520*ms+runGap+time.Second-step, step, ms)), -1},
		// Answers taking 200 ms, one request as each answer comes: the
		// first answer at 200 ms, the request at 1,200 ms proves it.
		{"slow answers still prove it", 2, zeros(0, 2*time.Second, 200*ms, 200*ms), 6},
		{"granted under 2 s", 1, zeros(0, 3*time.Second, step, ms), -1},
		{"gone", 2, []reading{{0, ms, -1}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var z zeroRun
			t0 := time.Unix(1_000_000, 0)
			got := -1
			for i, r := range tc.rs {
				if z.observe(t0.Add(r.at), t0.Add(r.at+r.took), r.ttl, tc.granted) {
					got = i
					break
				}
			}
			if got != tc.want {
				t.Fatalf("proved at reading %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLate: the reaper reads a lease often only once it reads under two
// seconds and less than a lease renewed on schedule would.
func TestLate(t *testing.T) {
	for _, tc := range []struct {
		ttl, granted int64
		want         bool
	}{
		{4, 5, false}, {3, 5, false}, {2, 5, false}, {1, 5, true}, {0, 5, true},
		{1, 2, false}, {0, 2, true}, // a 2 s lease renewed on schedule reads 1
		{1, 3, true}, {2, 3, false}, {1, 10, true}, {2, 10, false},
		{-1, 5, false}, // gone
		{0, 1, false},  // a lease of 1 s reads 0 however it is renewed
	} {
		if got := late(tc.ttl, tc.granted); got != tc.want {
			t.Errorf("late(%d, %d) = %v, want %v", tc.ttl, tc.granted, got, tc.want)
		}
	}
}

// TestReapSparesTheLiving: a holder whose keep-alives flow, and one whose
// lease read 0 before it renewed late, keep their leases through many
// readings of a reaping member; once the late one stops renewing, it is
// revoked.
func TestReapSparesTheLiving(t *testing.T) {
	p, cli := world(t)
	tb := watchTable(t, cli, p)
	shards := span(4)
	alive := join(t, client(t), p, "alive", 2*time.Second)
	_ = serve(t, alive, watchTable(t, cli, p), shards)
	until(t, tb, "alive holds every shard", func() bool { return len(tb.Held("alive")) == len(shards) })
	// A second world member holding one shard under a lease renewed by
	// hand, late.
	ctx := context.Background()
	raw := client(t)
	g, err := raw.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	key := shardKey(p, 99)
	if _, err := raw.Put(ctx, key, "late", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	until(t, tb, "the late holder's shard shows", func() bool { _, ok := tb.Shard(99); return ok })
	// The reaping member is registered as a front, so that the shards stay
	// where they are.
	reaper, err := Join(ctx, client(t), Config{Prefix: p, Name: "reaper", Role: Front, TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reaper.Close(context.Background()) })
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { reaper.reap(rctx, tb); close(done) }()
	defer func() { stop(); <-done }()
	// Wait until the late lease reads 0 (under a second left), renew it,
	// and do so three times.
	look := time.NewTicker(10 * time.Millisecond)
	defer look.Stop()
	for range 3 {
		for r, err := raw.TimeToLive(ctx, g.ID); r == nil || r.TTL > 0; r, err = raw.TimeToLive(ctx, g.ID) {
			if err != nil {
				t.Fatal(err)
			}
			<-look.C
		}
		if _, err := raw.KeepAliveOnce(ctx, g.ID); err != nil {
			t.Fatalf("renewing the late lease: %v", err)
		}
	}
	// The living holder's own Serve reaps too.
	// (A loaded machine may time readings out: then there are fewer.)
	if n := reaper.Reaped() + alive.Reaped(); n != 0 || reaper.readings.Load() == 0 {
		t.Fatalf("reaped %d leases in %d readings; want none, in some", n, reaper.readings.Load())
	}
	if len(tb.Held("alive")) != len(shards) {
		t.Fatal("the living holder lost a shard")
	}
	// Now it stops renewing: it goes, by the reaper's hand or etcd's.
	until(t, tb, "the late holder's shard goes", func() bool { _, ok := tb.Shard(99); return !ok })
	if len(tb.Held("alive")) != len(shards) {
		t.Fatal("the living holder lost a shard")
	}
	t.Logf("%d readings; leases reaped: %d by the reaper, %d by the living holder (the rest by etcd)",
		reaper.readings.Load(), reaper.Reaped(), alive.Reaped())
}

// TestNextReading: the reaper reads again after reapFast or reapPoll, or
// sooner, at the first instant a run of zeros can prove its lease expired.
func TestNextReading(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ms := time.Millisecond
	run := func(since time.Duration) *zeroRun { return &zeroRun{since: t0.Add(since), lastSent: t0} }
	for _, tc := range []struct {
		name string
		fast bool
		runs map[clientv3.LeaseID]*zeroRun
		want time.Duration
	}{
		{"nothing late", false, nil, reapPoll},
		{"a lease late", true, map[clientv3.LeaseID]*zeroRun{1: {}}, reapFast},
		{"a run far from its second", true, map[clientv3.LeaseID]*zeroRun{1: run(-500 * ms)}, reapFast},
		{"a run 4 ms from its second", true, map[clientv3.LeaseID]*zeroRun{1: run(-996 * ms), 2: run(-500 * ms)}, 4 * ms},
		{"a run past its second", true, map[clientv3.LeaseID]*zeroRun{1: run(-1100 * ms)}, 0},
	} {
		if got := nextReading(t0, tc.fast, tc.runs); got != tc.want {
			t.Errorf("%s: next reading in %v, want %v", tc.name, got, tc.want)
		}
	}
}
