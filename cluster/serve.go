package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
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

// Hooks are what Serve tells its caller. Both are called from Serve's
// goroutine, one at a time.
type Hooks struct {
	// Gain: the member now holds shard at epoch; it may step and send the
	// shard's islands under that epoch until Lose is called for it or the
	// member is fenced.
	Gain func(shard, epoch uint32)
	// Lose: the member must stop stepping and sending the shard's islands
	// now. Serve calls it before it releases a shard (so a drain can hand
	// the islands' state on first), and when the shard was taken from it
	// (its key expired or was deleted).
	Lose func(shard, epoch uint32)
}

// ErrDrained is Serve's answer once the member has left the world and
// released every shard it held.
var ErrDrained = errors.New("cluster: member drained")

// Serve keeps the member holding exactly the shards Owner gives it among
// the registered authorities — claiming those it should have once they are
// free, releasing those another authority should have — until ctx ends,
// the member is fenced, or it has left the world (Leave) and released
// everything (ErrDrained). Every shard it holds is lost (Hooks.Lose) when
// it returns. shards lists the world's shards.
func (m *Member) Serve(ctx context.Context, t *Table, shards []uint32, h Hooks) error {
	held := map[uint32]uint32{} // shard → epoch
	seen := false               // the table has shown this member's registration
	lose := func(s uint32) {
		if h.Lose != nil {
			h.Lose(s, held[s])
		}
		delete(held, s)
	}
	defer func() {
		for _, s := range sortedKeys(held) {
			lose(s)
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
		for _, s := range shards {
			cur, taken := t.Shard(s)
			ep, mine := held[s]
			switch {
			case mine && (!taken || cur.Epoch != ep):
				// The key expired or was deleted behind our back: stop.
				lose(s)
			case mine && (left || Owner(s, auths) != m.cfg.Name):
				lose(s)
				if _, err := m.Release(ctx, s, ep); err != nil && ctx.Err() == nil {
					// The shard is not ours any more either way; etcd lets it
					// go with the lease if the release did not reach it.
					continue
				}
			case !mine && !left && !taken && Owner(s, auths) == m.cfg.Name:
				e, err := m.Claim(ctx, s)
				var he *HeldError
				switch {
				case err == nil:
					held[s] = e
					if h.Gain != nil {
						h.Gain(s, e)
					}
				case errors.As(err, &he):
					// Someone was quicker; the table will show it.
				case ctx.Err() != nil:
					return ctx.Err()
				default:
					retry = true // etcd did not answer: try again shortly
				}
			case !mine && taken && cur.Lease == m.lease:
				// A claim of ours from before (a Claim whose answer was
				// lost): take it up.
				held[s] = cur.Epoch
				if h.Gain != nil {
					h.Gain(s, cur.Epoch)
				}
			}
		}
		if seen && left && len(held) == 0 {
			return ErrDrained
		}
		var again <-chan time.Time
		if retry {
			again = time.After(m.ttl / 10)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.fenced:
			return m.Err()
		case <-changed:
		case <-again:
		}
	}
}

func sortedKeys(m map[uint32]uint32) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
