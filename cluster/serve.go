package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Owner is the rule that shares a world's shards among its authorities:
// rendezvous hashing. Each authority scores the shard with a hash of its
// name and the shard number, and the highest score owns it. Every process
// computes the same answer from the same member list, shards spread
// evenly, and when an authority joins or leaves only the shards it gains
// or held move. It returns "" when there is no authority.
func Owner(shard uint32, authorities []string) string {
	best, bestScore := "", uint64(0)
	var d xxhash.Digest
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], shard)
	for _, a := range authorities {
		d.Reset()
		d.Write(n[:])
		d.WriteString(a)
		if s := d.Sum64(); best == "" || s > bestScore || s == bestScore && a < best {
			best, bestScore = a, s
		}
	}
	return best
}

// Hooks are what Serve tells its caller. Each is called from Serve's
// goroutine, one at a time.
type Hooks struct {
	// Gain: the member now holds shard at epoch; it may step and send the
	// shard's islands under that epoch until Lose is called for it or the
	// member is fenced.
	Gain func(shard, epoch uint32)
	// Lose: the member must stop stepping and sending the shard's islands
	// now. Serve calls it when the shard was taken from it (its key
	// expired or was deleted), and after it released the shard for another
	// authority (a drain, a rebalance) once that one has claimed it — make
	// before break: the islands keep moving until their next holder steps
	// them — or once HandOffWait has passed without a claim, or at once
	// when no other authority is registered.
	Lose func(shard, epoch uint32)
	// Etcd, if set, is told how long each claim and release of a shard
	// took, from its request to etcd's answer (call "claim" or
	// "release"), whatever the answer.
	Etcd func(call string, took time.Duration)
}

// ErrDrained is Serve's answer once the member has left the world and
// released every shard it held.
var ErrDrained = errors.New("cluster: member drained")

// Serve keeps the member holding exactly the shards Owner gives it among
// the registered authorities — claiming those it should have once they are
// free, releasing those another authority should have — until ctx ends,
// the member is fenced, or it has left the world (Leave) and released
// everything (ErrDrained). Every shard it holds is lost (Hooks.Lose) when
// it returns. shards lists the world's shards. The releases and claims one
// change of the table calls for go to etcd at once, each its own
// transaction: a drain of many shards takes about one round trip to etcd
// on each side, not one per shard (BenchmarkDrain).
func (m *Member) Serve(ctx context.Context, t *Table, shards []uint32, h Hooks) error {
	// Another holder's lease that etcd shows expired is revoked at once
	// rather than at etcd's next look (reap.go).
	rctx, stopReap := context.WithCancel(ctx)
	reaped := make(chan struct{})
	go func() { m.reap(rctx, t); close(reaped) }()
	defer func() { stopReap(); <-reaped }()
	held := map[uint32]uint32{}      // shard → epoch
	handing := map[uint32]handOver{} // shards released, still stepped until claimed
	seen := false                    // the table has shown this member's registration
	var calls []shardCall            // the releases and claims of one pass
	lose := func(s, epoch uint32) {
		if h.Lose != nil {
			h.Lose(s, epoch)
		}
	}
	defer func() {
		for _, s := range sortedKeys(held) {
			lose(s, held[s])
		}
		for s, ho := range handing {
			lose(s, ho.epoch)
		}
	}()
	for {
		retry := false
		changed := t.Changed()
		select {
		case <-m.fenced:
			return m.Err()
		default:
		}
		auths := t.Members(Authority)
		in := slices.Contains(auths, m.cfg.Name)
		seen = seen || in
		// Until the table shows the member registered, it takes nothing;
		// once it did, its registration gone means it left.
		left := !in
		if !seen {
			auths = nil
		}
		others := slices.DeleteFunc(slices.Clone(auths), func(a string) bool { return a == m.cfg.Name })
		now := time.Now()
		var wake time.Time // the earliest hand-off deadline
		soonest := func(t time.Time) {
			if wake.IsZero() || t.Before(wake) {
				wake = t
			}
		}
		calls = calls[:0]
		for _, s := range shards {
			cur, taken := t.Shard(s)
			if ho, ok := handing[s]; ok {
				// Released: keep stepping until the next holder claims it,
				// nobody else can, the wait is over, or it is ours again.
				if taken && cur.Lease != m.lease || Owner(s, others) == "" || !now.Before(ho.until) ||
					!left && Owner(s, auths) == m.cfg.Name {
					lose(s, ho.epoch)
					delete(handing, s)
				} else {
					soonest(ho.until)
					continue
				}
			}
			ep, mine := held[s]
			switch {
			case mine && t.Rev() >= int64(ep) && !taken && t.handedOff(s, m.cfg.Name, ep) && Owner(s, others) != "":
				// Released with the member's registration
				// (LeaveAndRelease): step it until the next holder claims
				// it, as after a release of Serve's own.
				delete(held, s)
				handing[s] = handOver{epoch: ep, until: now.Add(m.HandOffWait())}
				soonest(handing[s].until)
			case mine && t.Rev() >= int64(ep) && (!taken || cur.Epoch != ep):
				// The key expired or was deleted behind our back: stop. (A
				// table that has not yet seen the claim, at revision ep,
				// shows nothing of it.)
				lose(s, ep)
				delete(held, s)
			case mine && (left || Owner(s, auths) != m.cfg.Name):
				calls = append(calls, shardCall{shard: s, epoch: ep, release: true})
			case !mine && !left && !taken && Owner(s, auths) == m.cfg.Name:
				calls = append(calls, shardCall{shard: s})
			case !mine && taken && cur.Lease == m.lease:
				// A claim of ours from before (a Claim whose answer was
				// lost): take it up.
				held[s] = cur.Epoch
				if h.Gain != nil {
					h.Gain(s, cur.Epoch)
				}
			}
		}
		// The releases and claims of one pass go to etcd together, so that
		// a drain or a rebalance moving several shards waits for one round
		// trip of etcd's rather than one per shard; their answers are then
		// taken in shard order.
		m.shardCalls(ctx, calls)
		cancelled := false
		for _, c := range calls {
			if h.Etcd != nil {
				call := "claim"
				if c.release {
					call = "release"
				}
				h.Etcd(call, c.took)
			}
			s := c.shard
			if c.release {
				delete(held, s)
				if c.err != nil || !c.ok || Owner(s, others) == "" {
					// Not released (etcd lets it go with the lease if the
					// release did not reach it), or nobody to hand it to.
					lose(s, c.epoch)
					continue
				}
				handing[s] = handOver{epoch: c.epoch, until: now.Add(m.HandOffWait())}
				soonest(handing[s].until)
				continue
			}
			var he *HeldError
			switch {
			case c.err == nil:
				held[s] = c.epoch
				if h.Gain != nil {
					h.Gain(s, c.epoch)
				}
			case errors.As(c.err, &he):
				// Someone was quicker; the table will show it.
			case ctx.Err() != nil:
				cancelled = true // once every release of the pass is answered
			default:
				retry = true // etcd did not answer: try again shortly
			}
		}
		if cancelled {
			return ctx.Err()
		}
		if seen && left && len(held) == 0 && len(handing) == 0 {
			return ErrDrained
		}
		var again <-chan time.Time
		if retry {
			again = time.After(m.ttl / 10)
		}
		var handOff <-chan time.Time
		if !wake.IsZero() {
			handOff = time.After(time.Until(wake))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.fenced:
			return m.Err()
		case <-changed:
		case <-again:
		case <-handOff:
		}
	}
}

// shardCall is one release or claim of a pass of Serve, and its answer.
type shardCall struct {
	shard, epoch uint32 // epoch: the one released, or the one a claim got
	release      bool
	ok           bool // a release deleted the key
	err          error
	took         time.Duration // from the request to etcd's answer
}

// shardCalls makes every release and claim of calls at once, each on its
// own goroutine, and returns when every one has its answer.
func (m *Member) shardCalls(ctx context.Context, calls []shardCall) {
	do := func(c *shardCall) {
		start := time.Now()
		if c.release {
			c.ok, c.err = m.Release(ctx, c.shard, c.epoch)
		} else {
			c.epoch, c.err = m.Claim(ctx, c.shard)
		}
		c.took = time.Since(start)
	}
	if len(calls) == 1 {
		do(&calls[0])
		return
	}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { do(&calls[i]) })
	}
	wg.Wait()
}

// handOver is a shard released for its next holder and still stepped.
type handOver struct {
	epoch uint32
	until time.Time // stop stepping by then, claimed or not
}

// HandOffWait is how long Serve keeps stepping a shard it released for
// another authority while that one has not claimed it: half the TTL, so
// that a drain ends well within it.
func (m *Member) HandOffWait() time.Duration { return m.ttl / 2 }

func sortedKeys(m map[uint32]uint32) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
