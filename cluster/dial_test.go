package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/transport"
)

// counter reads a counter of a node's registry by name and one label
// value (any label), 0 when absent.
func counter(t *testing.T, node, name, label string) float64 {
	t.Helper()
	v, ok := registries.Load(node)
	if !ok {
		t.Fatalf("no registry for %s", node)
	}
	mfs, err := v.(*prometheus.Registry).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestDialingAuthority: an authority that accepts no connections (Dial —
// a player's client, a worker behind NAT) dials both fronts' uplink ports
// and shares the world with one the fronts dial. An observer of either
// front sees every island of both; a certificate no authority registered
// is refused at the uplink port, counted; when the dialling authority
// crashes, the other continues its islands under a new epoch — no frame of
// an older epoch after a newer one, no half-frame.
func TestDialingAuthority(t *testing.T) {
	scs, p, tb := fourShards(t)
	uplinkPort := func(c *NodeConfig) { c.UplinkListen = "127.0.0.1:0" }
	f1 := startNode(t, p, "f1", Front, scs, uplinkPort)
	f2 := startNode(t, p, "f2", Front, scs, uplinkPort)
	startNode(t, p, "a", Authority, scs)
	player := startNode(t, p, "player", Authority, scs, func(c *NodeConfig) { c.Dial = true; c.Server.Listen = "" })
	await(t, "the player's registration", func() bool { _, ok := tb.Addr(Authority, "player"); return ok })
	if v, _ := tb.Addr(Authority, "player"); len(v) < 2 || v[:2] != dialsOut+" " {
		t.Fatalf("the dialling authority registered %q, want address %q", v, dialsOut)
	}
	obs1, obs2 := watch(t, f1), watch(t, f2)
	shards := span(len(scs))
	await(t, "a and player share the shards", heldBy(tb, shards, "a", "player"))
	if len(tb.Held("player")) == 0 {
		t.Fatalf("player holds nothing (a holds %v): the test needs it to hold some", tb.Held("a"))
	}
	await(t, "f1's observer has every shard", observed(obs1, tb, len(scs)))
	await(t, "f2's observer has every shard", observed(obs2, tb, len(scs)))
	for _, f := range []string{"f1", "f2"} {
		if n := counter(t, f, "islandsync_cluster_uplinks_total", "accepted"); n < 1 {
			t.Fatalf("%s accepted %v uplinks, want the player's", f, n)
		}
	}

	// A stranger's certificate gets no uplink.
	reg, ok := parseRegistered(func() string { v, _ := tb.Addr(Front, "f1"); return v }())
	if !ok || reg.uplink == "" {
		t.Fatalf("f1 registered no uplink port")
	}
	cert, _, err := transport.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := transport.Listen(scenarioSource(t, scs), transport.ServerConfig{Listen: "127.0.0.1:0",
		TLS: transport.ServerTLS(cert), DialOnly: true, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- stranger.Run(sctx) }()
	upTLS, err := transport.UplinkClientTLS(cert, reg.fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Uplink(sctx, reg.uplink, upTLS); !errors.Is(err, transport.ErrUplinkRefused) {
		t.Fatalf("an unregistered certificate's uplink ended with %v, want ErrUplinkRefused", err)
	}
	stop()
	<-stopped
	await(t, "f1 to count the refusal", func() bool {
		return counter(t, "f1", "islandsync_cluster_uplinks_total", "refused") >= 1
	})

	// The player's client crashes: a takes its islands over.
	lost := tb.Held("player")
	crashed := time.Now()
	if err := player.stop(ErrAbandon); err != nil {
		t.Fatal(err)
	}
	await(t, "a holds everything", heldBy(tb, shards, "a"))
	await(t, "f1's observer has every shard from a", observed(obs1, tb, len(scs)))
	await(t, "f2's observer has every shard from a", observed(obs2, tb, len(scs)))
	gaps, _, _, _ := islandGaps(obs1, lost, len(scs), crashed)
	t.Logf("dialling authority crashed, TTL 2 s: %d islands of %d shards back after p50 %v, max %v", len(gaps), len(lost), gaps[len(gaps)/2], gaps[len(gaps)-1])
	for _, o := range []*observer{obs1, obs2} {
		o.mu.Lock()
		backwards, halves := o.backwards, o.halves
		o.mu.Unlock()
		if backwards != 0 || halves != 0 {
			t.Fatalf("%d frames of an older epoch committed after a newer one; %d half-frames shown", backwards, halves)
		}
	}
}

// scenarioSource is a one-shard authority to serve from.
func scenarioSource(t *testing.T, scs []scenario.Scenario) transport.Source {
	t.Helper()
	auth, err := scenario.NewAuthority(scs[:1], 20)
	if err != nil {
		t.Fatal(err)
	}
	return auth
}

// TestLinkOutlivesRegistration: a front keeps its link to an authority
// whose registration went while the authority still holds a shard or hands
// one on — a drain leaves the world first, then hands its shards on, and
// steps each until its next holder's frames show at the fronts — and ends
// the link once the authority holds nothing.
func TestLinkOutlivesRegistration(t *testing.T) {
	p, cli := world(t)
	tb := watchTable(t, cli, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := registration{addr: "127.0.0.1:1", fingerprint: strings.Repeat("ab", 32)}.String()
	member := func(name string) *Member {
		m, err := Join(ctx, cli, Config{Prefix: p, Name: name, Role: Authority, TTL: 2 * time.Second, Addr: reg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(context.Background()) })
		return m
	}
	b := member("b")
	epoch, err := b.Claim(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Each run hands over its name and context as it starts. links ends a
	// link's context before it starts any later one, so once a later link
	// has started, the context says whether the earlier one was ended.
	type run struct {
		name string
		ctx  context.Context
	}
	started := make(chan run, 8)
	go links(ctx, tb, Authority, func(registration) bool { return true }, tb.Busy,
		func(ctx context.Context, name string, _ registration) {
			started <- run{name, ctx}
			<-ctx.Done()
		})
	guard := time.After(2 * time.Minute) // only a hung test's bound
	awaitStart := func(want string) context.Context {
		t.Helper()
		select {
		case r := <-started:
			if r.name != want {
				t.Fatalf("the link to %s started, not to %s", r.name, want)
			}
			return r.ctx
		case <-guard:
			t.Fatalf("never: the link to %s starts", want)
		}
		return nil
	}
	linkB := awaitStart("b")

	// b leaves the world, as a drain begins, holding shard 0; then x
	// registers, a change links takes in after b's leaving.
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	member("x")
	awaitStart("x")
	if linkB.Err() != nil {
		t.Fatal("the link to b ended when b left the world, holding a shard")
	}
	// b releases the shard for its next holder and hands it on.
	if ok, err := b.Release(ctx, 0, epoch); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	member("y")
	awaitStart("y")
	if linkB.Err() != nil {
		t.Fatal("the link to b ended while b handed its shard on")
	}
	// b's session ends: it holds nothing, and its link goes.
	b.Close(ctx)
	select {
	case <-linkB.Done():
	case <-guard:
		t.Fatal("never: the link to b ends")
	}
}

// TestUpstreamWatch: a front's link from an authority feeds the relay
// (control and commits) and spends nothing on views: a few renders a
// second, no local simulation.
func TestUpstreamWatch(t *testing.T) {
	relay, err := NewRelay(RelayConfig{Period: 50_000, ShardOf: func(uint32) uint32 { return 0 }, Fence: fence{}})
	if err != nil {
		t.Fatal(err)
	}
	c := upstreamWatch(relay.Upstream("a"), testLogger)
	if c.RenderRate == 0 || c.RenderRate > 4 || !c.Receiver.StraightExtrapolation || c.Receiver.OnControl == nil || c.Receiver.OnCommit == nil {
		t.Fatalf("upstream watcher: %d renders a second, straight extrapolation %v, feeds the relay %v",
			c.RenderRate, c.Receiver.StraightExtrapolation, c.Receiver.OnControl != nil && c.Receiver.OnCommit != nil)
	}
}
