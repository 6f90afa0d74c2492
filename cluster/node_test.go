package cluster

import (
	"context"
	"crypto/tls"
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/islandsync/islandsync/internal/livestate"
	"github.com/islandsync/islandsync/internal/quantile"
	"github.com/islandsync/islandsync/netsim"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/transport"
	"github.com/islandsync/islandsync/validator"
)

// node is one process of a test world, run in a goroutine.
type node struct {
	name   string
	srv    *transport.Server
	cancel context.CancelCauseFunc
	done   chan error
}

func startNode(t *testing.T, prefix, name string, role Role, scs []scenario.Scenario, opts ...func(*NodeConfig)) *node {
	t.Helper()
	cert, fp, err := transport.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan *transport.Server, 1)
	reg := prometheus.NewRegistry()
	registries.Store(name, reg)
	t.Cleanup(func() { registries.Delete(name) })
	cfg := NodeConfig{Client: client(t), Prefix: prefix, Name: name, TTL: 2 * time.Second, Scenarios: scs,
		Server:      transport.ServerConfig{Listen: "127.0.0.1:0", TLS: transport.ServerTLS(cert), Metrics: transport.NewMetrics(reg)},
		Fingerprint: fp, Logger: testLogger, Registry: reg, Ready: func(s *transport.Server) { ready <- s }}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	n := &node{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() {
		if role == Authority {
			n.done <- RunAuthority(ctx, cfg)
		} else {
			n.done <- RunFront(ctx, cfg)
		}
	}()
	select {
	case n.srv = <-ready:
	case err := <-n.done:
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { n.stop(nil) })
	return n
}

// stop ends the node: a drain (nil) or a crash (ErrAbandon).
func (n *node) stop(cause error) error {
	if n.done == nil {
		return nil
	}
	n.cancel(cause)
	err := <-n.done
	n.done = nil
	return err
}

// observer is a watcher of a front, recording what it commits.
type observer struct {
	mu        sync.Mutex
	newest    map[uint32]uint32              // island → newest epoch committed
	firstAt   map[uint32]time.Time           // island → when its newest epoch's first frame committed
	firstTime map[uint32]island.Time         // island → its newest epoch's first frame's authority time, µs
	lastAt    map[uint32]time.Time           // island → when its newest frame committed
	silences  map[uint32]time.Duration       // island → its last hand-off's time without frames
	authGaps  map[uint32]island.Time         // island → its last hand-off's authority time between the old epoch's last frame and the new one's first, µs
	lastTime  map[uint32]island.Time         // island → its newest frame's authority time
	streak    map[uint32]int                 // island → frames committed under its newest epoch
	pause     time.Duration                  // the longest any island went between two frames of one epoch
	steady    []time.Duration                // while recording: every time an island went between two frames of one epoch
	record    bool                           // record steady
	jumps     map[uint32]float64             // island → its bodies' largest move across its last hand-off, m
	offs      map[uint32]float64             // island → its bodies' largest distance across its last hand-off from where their last frame's velocities carry them, m
	pos       map[island.MemberID][4]float64 // x, y, vx, vy in the last frame
	commits   int
	lastAny   time.Time     // when the newest frame of any island committed
	gapMax    time.Duration // the longest time without any frame committed, since it was last cleared
	backwards int           // frames committed under an older epoch after a newer one
	halves    int
	ticks     int
	playing   bool // the playout clock left Waiting
	waiting   bool // the playout clock went back to Waiting
	waitAt    time.Time
	addr      string         // the front it is connected to
	fronts    int            // times it joined a front other than the one before, the first included
	stats     receiver.Stats // at the last tick
	measure   bool           // record snapshot ages
	ages      []float64      // snapshot ages, ms, of renders not Waiting
	ask       chan chan livestate.State
	askSpaces chan chan int // the receiver's local-simulation spaces built now
	light     bool          // no jumps: the positions of every member are not kept
	cancel    context.CancelFunc
	done      chan error
}

// state returns what the observer's receiver holds, read at its next tick.
func (o *observer) state() livestate.State {
	c := make(chan livestate.State, 1)
	o.ask <- c
	return <-c
}

// serverState returns what an authority's server holds.
func serverState(s *transport.Server) livestate.State {
	st := livestate.New()
	s.Live(st.Identity, st.Lease, st.Manifest)
	return st
}

// frontTLS is a watcher's TLS configuration for the test's own fronts,
// whose certificates it does not check.
func frontTLS(t *testing.T) *tls.Config {
	t.Helper()
	c, err := transport.ClientTLS("", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.InsecureSkipVerify = true
	return c
}

func watch(t *testing.T, front *node, fallback ...*node) *observer {
	t.Helper()
	o := &observer{newest: map[uint32]uint32{}, firstAt: map[uint32]time.Time{}, firstTime: map[uint32]island.Time{}, lastAt: map[uint32]time.Time{},
		silences: map[uint32]time.Duration{}, authGaps: map[uint32]island.Time{}, lastTime: map[uint32]island.Time{}, streak: map[uint32]int{}, jumps: map[uint32]float64{}, offs: map[uint32]float64{}, pos: map[island.MemberID][4]float64{}, done: make(chan error, 1),
		ask: make(chan chan livestate.State), askSpaces: make(chan chan int), light: lightWatchers}
	tlsc := frontTLS(t)
	var others []string
	for _, f := range fallback {
		others = append(others, f.srv.Addr().String())
	}
	w, err := transport.NewWatcher(transport.WatchConfig{Addr: front.srv.Addr().String(), Fallback: others, TLS: tlsc,
		Subscribe: codec.Subscribe{All: true}, Reconnect: true, Logger: slog.New(slog.DiscardHandler),
		Receiver: receiver.Config{MaxSimWork: max(watchSimWork, 0), StraightExtrapolation: watchSimWork < 0, OnCommit: func(f *validator.Validated) {
			k := f.Key()
			o.mu.Lock()
			defer o.mu.Unlock()
			o.commits++
			now := time.Now()
			if !o.lastAny.IsZero() {
				o.gapMax = max(o.gapMax, now.Sub(o.lastAny))
			}
			o.lastAny = now
			if e, seen := o.newest[k.Island]; seen && k.Epoch > e && !o.light {
				// How far the island's bodies jumped across the hand-off:
				// from where they were, and from where their velocities
				// carry them over the authority time between the frames
				// (what an observer's extrapolation shows meanwhile).
				jump, off := 0.0, 0.0
				dt := float64(f.Time()-o.lastTime[k.Island]) / 1e6
				for i := range f.Len() {
					if p, ok := o.pos[f.ID(i)]; ok {
						st := f.State(i)
						jump = max(jump, math.Hypot(st.X-p[0], st.Y-p[1]))
						off = max(off, math.Hypot(st.X-p[0]-p[2]*dt, st.Y-p[1]-p[3]*dt))
					}
				}
				o.jumps[k.Island], o.offs[k.Island] = jump, off
			}
			if e, seen := o.newest[k.Island]; (!seen || k.Epoch >= e) && !o.light {
				for i := range f.Len() {
					st := f.State(i)
					o.pos[f.ID(i)] = [4]float64{st.X, st.Y, st.VX, st.VY}
				}
			}
			switch e, seen := o.newest[k.Island]; {
			case seen && k.Epoch < e:
				o.backwards++
			case !seen || k.Epoch > e:
				if seen {
					// The island's silence across the hand-off: from the
					// last frame of the old epoch to the first of the new.
					o.silences[k.Island] = now.Sub(o.lastAt[k.Island])
					o.authGaps[k.Island] = f.Time() - o.lastTime[k.Island]
				}
				o.newest[k.Island], o.firstAt[k.Island], o.firstTime[k.Island] = k.Epoch, now, f.Time()
				o.streak[k.Island] = 0
			}
			if k.Epoch == o.newest[k.Island] {
				if o.streak[k.Island]++; o.streak[k.Island] > 1 {
					o.pause = max(o.pause, now.Sub(o.lastAt[k.Island]))
					if o.record {
						o.steady = append(o.steady, now.Sub(o.lastAt[k.Island]))
					}
				}
			}
			o.lastAt[k.Island], o.lastTime[k.Island] = now, f.Time()
		}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	go func() {
		o.done <- w.Run(ctx, func(tk *transport.Tick) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.ticks++
			o.stats = tk.Receiver.Stats()
			if o.addr != tk.Addr {
				o.fronts++
			}
			o.addr = tk.Addr
			if c := tk.Receiver.Clock(); c.State != store.Waiting && o.measure {
				o.ages = append(o.ages, float64(c.SnapshotAge)/1000)
			}
			o.halves += tk.HalfFrames
			select {
			case c := <-o.ask:
				c <- livestate.Of(tk.Receiver)
			case c := <-o.askSpaces:
				c <- tk.Receiver.Stats().SimSpaces
			default:
			}
			switch st := tk.Receiver.Clock().State; {
			case st != store.Waiting:
				o.playing = true
			case o.playing && !o.waiting:
				o.waiting = true
				o.waitAt = time.Now()
			}
		})
	}()
	watchers.Store(o, struct{}{})
	t.Cleanup(func() { cancel(); <-o.done; watchers.Delete(o) })
	return o
}

// await waits for cond, looking every few milliseconds; the bound only
// ends a hung test.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			registries.Range(func(k, v any) bool {
				mfs, _ := v.(*prometheus.Registry).Gather()
				for _, mf := range mfs {
					for _, m := range mf.GetMetric() {
						v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
						if strings.HasPrefix(mf.GetName(), "islandsync_") && v != 0 {
							t.Logf("%s %s %v %v", k, mf.GetName(), m.GetLabel(), v)
						}
					}
				}
				return true
			})
			watchers.Range(func(k, _ any) bool {
				o := k.(*observer)
				o.mu.Lock()
				t.Logf("watcher on %q (fronts joined %d): playing %v, back to Waiting %v, %d islands, %d commits, %d ticks",
					o.addr, o.fronts, o.playing, o.waiting, len(o.newest), o.commits, o.ticks)
				ids := slices.Sorted(maps.Keys(o.newest))
				t.Logf("  islands committed: %v", ids)
				o.stats.Rejects(func(reason string, n uint64) { t.Logf("  %s %d", reason, n) })
				t.Logf("  stats %+v", o.stats)
				o.mu.Unlock()
				return true
			})
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClusterOverQUIC runs a world of four shards on two authorities
// behind one front, with an observer of the front, over QUIC on
// 127.0.0.1: one authority crashes, a third joins, then one drains. After
// each, every island of every shard is back under the epoch of its new
// holder, no frame of an older epoch commits after a newer one, and no
// half-frame is shown.
func TestClusterOverQUIC(t *testing.T) {
	scs, p, tb := fourShards(t)
	a := startNode(t, p, "a", Authority, scs)
	b := startNode(t, p, "b", Authority, scs)
	f := startNode(t, p, "f", Front, scs)
	obs := watch(t, f)
	shards := span(len(scs))
	current := observed(obs, tb, len(scs))
	holders := func(names ...string) func() bool { return heldBy(tb, shards, names...) }
	await(t, "a and b share the shards", holders("a", "b"))
	await(t, "the observer has every shard", current)
	rate := func(what string) {
		obs.mu.Lock()
		c0 := obs.commits
		obs.mu.Unlock()
		time.Sleep(time.Second)
		obs.mu.Lock()
		t.Logf("%s: %d frames/s, %d islands", what, obs.commits-c0, len(obs.newest))
		obs.mu.Unlock()
	}
	rate("start")
	if len(tb.Held("a")) == 0 || len(tb.Held("b")) == 0 {
		t.Fatalf("a holds %v, b %v: the test needs both to hold some", tb.Held("a"), tb.Held("b"))
	}

	// Crash: a stops without a goodbye.
	lost := tb.Held("a")
	crashed := time.Now()
	if err := a.stop(ErrAbandon); err != nil {
		t.Fatal(err)
	}
	await(t, "b holds everything", holders("b"))
	await(t, "the observer has every shard from b", current)
	gaps, quiet, jumps, _ := islandGaps(obs, lost, len(scs), crashed)
	t.Logf("crash, TTL 2 s: %d islands of %d shards back after p50 %v, max %v; silent p50 %v, max %v; jump p50 %.3f m, max %.3f m", len(gaps), len(lost), gaps[len(gaps)/2], gaps[len(gaps)-1], quiet[len(quiet)/2], quiet[len(quiet)-1], jumps[len(jumps)/2], jumps[len(jumps)-1])

	// A third authority joins: b hands c its share.
	startNode(t, p, "c", Authority, scs)
	await(t, "b and c share", holders("b", "c"))
	await(t, "the observer follows the rebalance", current)
	// The drain is measured from a steady state: right after the
	// rebalance the islands c just gained may still be catching up, and
	// a pause then is not the drain's.
	await(t, "frames flow again for every island", flowing(obs))

	// Drain: b stops with a goodbye; c takes everything at once.
	moved := tb.Held("b")
	claims0, _ := histogram(t, "c", "islandsync_cluster_etcd_call_seconds", "claim")
	gains0, gainSum0 := histogram(t, "c", "islandsync_cluster_gain_seconds", "")
	before, within := frontGaps(t, "f", 0.05)
	_, within2 := frontGaps(t, "f", 0.1)
	drained := time.Now()
	if err := b.stop(nil); err != nil {
		t.Fatalf("drain: %v", err)
	}
	await(t, "c holds everything", holders("c"))
	await(t, "the observer has every shard from c", current)
	gaps, quiet, jumps, offs := islandGaps(obs, moved, len(scs), drained)
	obs.mu.Lock()
	for id, at := range obs.firstAt {
		// c continues each island from the newest state it received of
		// it, brought to its own time: its bodies are about where their
		// last frame's velocities carry them over the authority time
		// between the two epochs' frames (centimetres when the gap is a
		// period) — or, when the two authorities' step clocks drifted
		// apart on a loaded machine and that time says nothing, about
		// where they were shown last. Started afresh from the scenario
		// they jumped up to 33 m. An island that went without frames for
		// more than a second, or whose two frames across the hand-off are
		// more than a second of authority time apart (the race detector on
		// a loaded machine lags the whole pipeline, and each authority's
		// steps, by seconds), moved legitimately by metres meanwhile, and
		// says nothing either way.
		if slices.Contains(moved, uint32(scenario.ShardOf(id, len(scs)))) && at.After(drained) &&
			obs.silences[id] <= time.Second && max(obs.authGaps[id], -obs.authGaps[id]) <= island.Second && min(obs.jumps[id], obs.offs[id]) > 3 {
			t.Errorf("island %d landed %.2f m from where it was shown last and %.2f m off its course across the drain",
				id, obs.jumps[id], obs.offs[id])
		}
	}
	obs.mu.Unlock()
	t.Logf("drain: %d islands of %d shards back after p50 %v, max %v; silent p50 %v, max %v; jump p50 %.3f m, max %.3f m; off course p50 %.3f m, max %.3f m", len(gaps), len(moved), gaps[len(gaps)/2], gaps[len(gaps)-1], quiet[len(quiet)/2], quiet[len(quiet)-1], jumps[len(jumps)/2], jumps[len(jumps)-1], offs[len(offs)/2], offs[len(offs)-1])
	// The steps of the change of hands that the authorities time: b's
	// leave and releases, c's claims and gains.
	leaves, leaveSum := histogram(t, "b", "islandsync_cluster_etcd_call_seconds", "leave")
	releases, releaseSum := histogram(t, "b", "islandsync_cluster_etcd_call_seconds", "release")
	claims, claimSum := histogram(t, "c", "islandsync_cluster_etcd_call_seconds", "claim")
	gains, gainSum := histogram(t, "c", "islandsync_cluster_gain_seconds", "")
	if k := uint64(len(moved)); leaves != 1 || releases < k || claims-claims0 < k || gains-gains0 < k {
		t.Errorf("drain of %d shards: b's metrics show %d leaves and %d releases, c's %d claims and %d gains taken up",
			len(moved), leaves, releases, claims-claims0, gains-gains0)
	}
	if gains > gains0 {
		t.Logf("drain: b's leave took %v and its releases %v each on average; c's claims %v each, its gains %v each from claim to announced",
			secs(leaveSum), secs(releaseSum/float64(releases)), secs(claimSum/float64(claims)), secs((gainSum-gainSum0)/float64(gains-gains0)))
	}
	// Of the silence, what the authorities' sampling makes: the authority
	// time between the old holder's last frame and the new one's first.
	ag := authorityGaps(obs, moved, len(scs), drained)
	t.Logf("drain: authority time between the old epoch's last frame and the new one's first: p50 %.1f ms, max %.1f ms", float64(ag[len(ag)/2])/1000, float64(ag[len(ag)-1])/1000)
	after, withinAfter := frontGaps(t, "f", 0.05)
	_, withinAfter2 := frontGaps(t, "f", 0.1)
	// The old lease's frames go out on the front's cadence and the new
	// one's first frame at once, so a gap of one period (3 Steps) or a
	// Step or two more is the phase of the two authorities' broadcasts.
	t.Logf("drain at the front: of %d hand-offs, %d relayed within 50 ms of the old lease's last frame, %d within 100 ms", after-before, withinAfter-within, withinAfter2-within2)

	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.backwards != 0 || obs.halves != 0 {
		t.Fatalf("%d frames of an older epoch committed after a newer one; %d half-frames shown", obs.backwards, obs.halves)
	}
	if obs.waiting {
		t.Logf("observer: %d frames committed over %d ticks; went back to Waiting %v after the crash", obs.commits, obs.ticks, obs.waitAt.Sub(crashed))
	} else {
		t.Logf("observer: %d frames committed over %d ticks; never went back to Waiting", obs.commits, obs.ticks)
	}
	// A pause within one epoch is the front's or the path's, not a
	// hand-off's: after a new holder's first frame an observer's datagrams
	// once waited four broadcast periods behind the hand-over's control
	// bytes (the front's pacer then gave up on them).
	t.Logf("observer: the longest an island went between two frames of one epoch: %v; front's pacer gave up %v times",
		obs.pause, frontCounter(t, "f", "islandsync_pace_gave_up_total"))
}

// flowing reports whether the observer has committed at least four frames
// in a row of the newest epoch of every island it knows.
func flowing(obs *observer) func() bool {
	return func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		for _, n := range obs.streak {
			if n < 4 {
				return false
			}
		}
		return len(obs.streak) > 0
	}
}

// fourShards starts a world of four shards (bridge, ragdolls, handoff,
// chain) with a table of it; it skips with -short.
func fourShards(t *testing.T) ([]scenario.Scenario, string, *Table) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a cluster for several seconds")
	}
	scs, err := scenario.Pick("bridge,ragdolls,handoff,chain")
	if err != nil {
		t.Fatal(err)
	}
	p, cli := world(t)
	return scs, p, watchTable(t, cli, p)
}

// observed reports whether the observer's newest epoch of every island of
// every one of n shards is the shard's current one, with frames committed
// for every shard.
func observed(obs *observer, tb *Table, n int) func() bool {
	return func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		seen := map[uint32]bool{}
		for id, e := range obs.newest {
			s := uint32(scenario.ShardOf(id, n))
			h, ok := tb.Shard(s)
			if !ok || e < h.Epoch {
				return false
			}
			seen[s] = true
		}
		return len(seen) == n
	}
}

// heldBy reports whether the shards are held by names, each by its owner
// among them.
func heldBy(tb *Table, shards []uint32, names ...string) func() bool {
	return func() bool {
		for _, s := range shards {
			h, ok := tb.Shard(s)
			if !ok || !slices.Contains(names, h.Holder) || h.Holder != Owner(s, names) {
				return false
			}
		}
		return true
	}
}

// gather reads a node's metrics.
func gather(t *testing.T, node string) []*dto.MetricFamily {
	t.Helper()
	v, _ := registries.Load(node)
	mfs, err := v.(*prometheus.Registry).Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// frontCounter reads one of a node's counters.
func frontCounter(t *testing.T, node, name string) float64 {
	t.Helper()
	for _, mf := range gather(t, node) {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s has no counter %s", node, name)
	return 0
}

// frontGaps reads a front's hand-off gap histogram: how many hand-offs it
// relayed, and how many within le seconds (a bucket bound).
func frontGaps(t *testing.T, node string, le float64) (n, within uint64) {
	t.Helper()
	for _, mf := range gather(t, node) {
		if mf.GetName() != "islandsync_cluster_handoff_gap_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			n = h.GetSampleCount()
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == le {
					within = b.GetCumulativeCount()
				}
			}
		}
	}
	return n, within
}

// histogram reads one of a node's histograms: its count and sum (of the
// series whose label has value label; any, when label is empty).
func histogram(t *testing.T, node, name, label string) (n uint64, sum float64) {
	t.Helper()
	for _, mf := range gather(t, node) {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == label }) {
				continue
			}
			n += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return n, sum
}

// secs is s seconds as a duration, to the microsecond.
func secs(s float64) time.Duration { return time.Duration(s*1e6) * time.Microsecond }

// islandGaps returns, sorted, how long after since each island of shards
// first committed under its newest epoch, and how long each went without
// frames across that hand-off.
func islandGaps(o *observer, shards []uint32, n int, since time.Time) (gaps, silences []time.Duration, jumps, offs []float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, at := range o.firstAt {
		if slices.Contains(shards, uint32(scenario.ShardOf(id, n))) && at.After(since) {
			gaps = append(gaps, at.Sub(since))
			silences = append(silences, o.silences[id])
			jumps = append(jumps, o.jumps[id])
			offs = append(offs, o.offs[id])
		}
	}
	slices.Sort(gaps)
	slices.Sort(silences)
	slices.Sort(jumps)
	slices.Sort(offs)
	if len(gaps) == 0 {
		gaps, silences, jumps, offs = append(gaps, 0), append(silences, 0), append(jumps, 0), append(offs, 0)
	}
	return gaps, silences, jumps, offs
}

// authorityGaps returns, sorted, the authority time (µs) between the last
// frame of each island of shards under its old epoch and the first under
// its newest, for hand-offs since since: the part of an observer's silence
// that the authorities' sampling makes, the rest being delivery.
func authorityGaps(o *observer, shards []uint32, n int, since time.Time) []island.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	gaps := []island.Time{0}
	for id, at := range o.firstAt {
		if slices.Contains(shards, uint32(scenario.ShardOf(id, n))) && at.After(since) {
			gaps = append(gaps, o.authGaps[id])
		}
	}
	if len(gaps) > 1 {
		gaps = gaps[1:]
	}
	slices.Sort(gaps)
	return gaps
}

// movedAt returns, sorted, how long after authority time at (µs) the
// first frame of each island of shards under its newest epoch was
// sampled, for hand-offs since since: when, on the authorities' one time
// base, the island moved to its new holder.
func movedAt(o *observer, shards []uint32, n int, since time.Time, at island.Time) []island.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var moved []island.Time
	for id, t := range o.firstAt {
		if slices.Contains(shards, uint32(scenario.ShardOf(id, n))) && t.After(since) {
			moved = append(moved, o.firstTime[id]-at)
		}
	}
	slices.Sort(moved)
	return moved
}

// lightWatchers makes watch keep no positions (no jumps): many watchers
// in one test cost less.
var lightWatchers bool

// watchSimWork is the local-simulation budget of watch's watchers
// (receiver.Config.MaxSimWork; 0: the default; negative: none, members
// move along their velocities past their newest frame).
var watchSimWork int

// registries holds each running node's metrics and watchers each running
// watcher, shown (the non-zero islandsync_ metrics, the watcher's state)
// when a test waits in vain.
var registries, watchers sync.Map

// testLogger takes the nodes' logs; a TextHandler on os.Stderr shows them.
var testLogger = slog.New(slog.DiscardHandler)

// TestFrontLoss: two fronts serve one world; the front an observer is on
// stops, and the observer moves to the other — a fresh catch-up on the
// same timeline — without its playout going back to Waiting.
func TestFrontLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for several seconds")
	}
	scs, err := scenario.Pick("bridge,ragdolls")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := world(t)
	startNode(t, p, "a", Authority, scs)
	f1 := startNode(t, p, "f1", Front, scs)
	f2 := startNode(t, p, "f2", Front, scs)
	obs := watch(t, f1, f2)
	// The observer dials f1 first, but a connection lost before the move
	// (a stall on a loaded machine) sends it on to f2 by design: the test
	// stops whichever front it is on. Having moved once, it moves again
	// only after the reconnect wait (one move at once per ReconnectMax),
	// so its playout may then go Waiting.
	var islands, before, fronts int
	var on string
	await(t, "the observer plays every island from a front", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		islands, before, on, fronts = len(obs.newest), obs.commits, obs.addr, obs.fronts
		return obs.playing && islands == 25 && on != ""
	})
	lost, other := f1, f2
	if on == f2.srv.Addr().String() {
		lost, other = f2, f1
	}
	if err := lost.stop(nil); err != nil {
		t.Fatal(err)
	}
	await(t, "the observer commits a second of frames from the other front", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.addr == other.srv.Addr().String() && obs.commits > before+20*islands
	})
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.waiting && !raceEnabled && fronts == 1 || obs.halves != 0 || obs.backwards != 0 {
		t.Fatalf("after the move: went back to Waiting %v, %d half-frames, %d frames of an older epoch", obs.waiting, obs.halves, obs.backwards)
	}
}

// TestUplinkJitter: an authority whose link to the front has 0–100 ms of
// jitter (and reorders) against one on a clean link: the front
// re-broadcasts at its own cadence, and the observers' snapshot age p95 is
// compared.
func TestUplinkJitter(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures two clusters for several seconds each")
	}
	scs, err := scenario.Pick("ragdolls,bridge")
	if err != nil {
		t.Fatal(err)
	}
	p95 := func(jitter int64) float64 {
		p, _ := world(t)
		var opts []func(*NodeConfig)
		if jitter > 0 {
			// The authority listens on a port of its own and registers a
			// relay in front of it.
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			at := pc.LocalAddr().String()
			pc.Close()
			relay, err := netsim.NewRelay("127.0.0.1:0", at, netsim.Config{}, netsim.Config{Jitter: jitter}, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, down := relay.Stats(); down.Delivered == 0 {
					t.Error("nothing crossed the jittered uplink")
				}
				relay.Close()
			})
			opts = append(opts, func(c *NodeConfig) { c.Server.Listen, c.Advertise = at, relay.Addr().String() })
		}
		a := startNode(t, p, "a", Authority, scs, opts...)
		f := startNode(t, p, "f", Front, scs)
		obs := watch(t, f)
		await(t, "the observer plays", func() bool {
			obs.mu.Lock()
			defer obs.mu.Unlock()
			return obs.playing && len(obs.newest) == 25
		})
		obs.mu.Lock()
		obs.measure = true
		obs.mu.Unlock()
		await(t, "three seconds of renders", func() bool {
			obs.mu.Lock()
			defer obs.mu.Unlock()
			return len(obs.ages) >= 180
		})
		obs.mu.Lock()
		v := quantile.Nearest(obs.ages, 95)
		obs.mu.Unlock()
		t.Logf("jitter %d ms: the front relayed %.0f frames; %.0f more were replaced by newer ones before they went out", jitter/1000,
			frontCounter(t, "f", "islandsync_cluster_relayed_frames_total"), frontCounter(t, "f", "islandsync_cluster_superseded_frames_total"))
		obs.cancel()
		f.stop(nil)
		a.stop(nil)
		return v
	}
	// A measurement, not a timing assertion: on a loaded machine both
	// figures grow. The events are checked (every island played, traffic
	// through the relay); the ages are reported.
	clean := p95(0)
	jittered := p95(100_000)
	t.Logf("snapshot age p95: clean uplink %.0f ms, 0–100 ms jitter %.0f ms (broadcast period 50 ms)", clean, jittered)
}

// TestFrontFenced: a front whose lease etcd let go stops serving (and
// returns why) rather than relay on a view of the world it may have lost.
func TestFrontFenced(t *testing.T) {
	scs, err := scenario.Pick("bridge")
	if err != nil {
		t.Fatal(err)
	}
	p, cli := world(t)
	f := startNode(t, p, "f", Front, scs)
	r, err := cli.Get(context.Background(), memberKey(p, Front, "f"))
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("the front's registration: %v, %v", r, err)
	}
	if _, err := cli.Revoke(context.Background(), clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	err = <-f.done
	f.done = nil
	if err == nil {
		t.Fatal("a fenced front went on serving")
	}
	t.Log(err)
}

// TestStandbyHandedOn: an authority handing a shard on steps it until its
// standby has seen the next holder's epoch on every island of the shard it
// knows — a front hands each island over on its own — or the island was
// forgotten; islands of other shards do not count.
func TestStandbyHandedOn(t *testing.T) {
	sb := newStandby(func(id uint32) uint32 { return id / 100 })
	see := func(id, epoch uint32) {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		sb.saw(island.Key{Island: id, Epoch: epoch})
	}
	on := func(shard, epoch uint32) bool {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		return sb.handedOn(shard, epoch)
	}
	see(1, 100)
	see(2, 100)
	see(3, 100)
	see(101, 100)
	if on(0, 101) {
		t.Fatal("handed on before any frame of the new epoch")
	}
	newer := sb.newer
	see(1, 101)
	select {
	case <-newer:
	default:
		t.Fatal("an island's newer epoch did not wake shown")
	}
	see(101, 101)
	if on(0, 101) {
		t.Fatal("handed on with islands 2 and 3 still at the old epoch")
	}
	see(2, 101)
	if on(0, 101) {
		t.Fatal("handed on with island 3 still at the old epoch")
	}
	newer = sb.newer
	sb.mu.Lock()
	sb.known([]uint32{1, 2, 101}) // island 3 was forgotten
	sb.mu.Unlock()
	select {
	case <-newer:
	default:
		t.Fatal("a forgotten island did not wake shown")
	}
	if !on(0, 101) {
		t.Fatal("not handed on with every island it knows at the new epoch")
	}
	if on(1, 102) || on(2, 101) {
		t.Fatal("handed on at an epoch not seen, or a shard never seen")
	}
}
