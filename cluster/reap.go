package cluster

import (
	"context"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reaping. etcd deletes an expired lease's keys only when its lessor next
// looks for expired leases, every 500 ms; until then a crashed holder's
// shard keys stay and no other authority can claim them. So Serve watches
// the lease of every other holder and revokes one that etcd itself shows
// expired, which is what etcd would do a little later.
//
// etcd reports a lease's remaining time in whole seconds, rounded down: a
// reading of 0 means less than 1 s is left, not that the lease expired.
// The rule that makes a revoke safe: once a lease read 0 at a reply
// received at r, it expires before r + 1 s unless renewed after that
// reading; a renewal starts the full TTL again (at least 2 s), so the
// lease reads at least 1 for a whole second after it. A run of readings
// of 0 spaced closely enough that no second fits between them without one
// of them seeing it, lasting until r + 1 s + reapMargin, therefore proves
// the lease expired, and an expired lease can no longer be renewed.
const (
	reapPoll   = 50 * time.Millisecond // between readings of a lease that read at least 1
	reapFast   = 20 * time.Millisecond // between readings of a lease that read 0; also a reading's timeout
	reapMargin = 4 * reapFast          // past r + 1 s: covers the spacing of readings and their latency
)

// zeroRun is the readings of 0 of one lease since its last other reading.
type zeroRun struct {
	since    time.Time // the first reading of 0's reply: zero while there is no run
	lastSent time.Time // the last reading's request
}

// observe takes one reading — requested at sent, answered at recv, the
// lease's remaining whole seconds ttl (−1: etcd holds no such lease) and
// its granted TTL in seconds — and reports whether the lease has surely
// expired. A reading of 1 or more, a slow answer, a lease granted less
// than 2 s, or a gap between readings longer than two fast periods ends the
// run (a gap starts a new one).
func (z *zeroRun) observe(sent, recv time.Time, ttl, granted int64) bool {
	if ttl != 0 || granted < 2 || recv.Sub(sent) > reapFast {
		*z = zeroRun{}
		return false
	}
	if z.since.IsZero() || sent.Sub(z.lastSent) > 2*reapFast {
		z.since = recv
	}
	z.lastSent = sent
	return recv.Sub(z.since) >= time.Second+reapMargin
}

// reap revokes the leases of other shard holders once they surely
// expired, until ctx ends or the member is fenced. Each revoke is counted
// (Member.Reaped).
func (m *Member) reap(ctx context.Context, t *Table) {
	runs := map[clientv3.LeaseID]*zeroRun{}
	wait := time.NewTimer(reapPoll)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.fenced:
			return
		case <-wait.C:
		}
		leases := t.Leases()
		fast := false
		for _, l := range leases {
			if l == m.lease {
				continue
			}
			z := runs[l]
			if z == nil {
				z = &zeroRun{}
				runs[l] = z
			}
			sent := time.Now()
			rctx, cancel := context.WithTimeout(ctx, reapFast)
			r, err := m.cli.TimeToLive(rctx, l)
			cancel()
			if err != nil {
				*z = zeroRun{}
				continue
			}
			m.readings.Add(1)
			if !z.observe(sent, time.Now(), r.TTL, r.GrantedTTL) {
				fast = fast || !z.since.IsZero()
				continue
			}
			if _, err := m.cli.Revoke(ctx, l); err == nil {
				m.reaped.Add(1)
			}
			delete(runs, l)
		}
		for l := range runs {
			if !slices.Contains(leases, l) {
				delete(runs, l)
			}
		}
		next := reapPoll
		if fast {
			next = reapFast
		}
		wait.Reset(next)
	}
}

// Reaped returns how many other holders' leases the member revoked once
// they had expired (Serve's reaping), before etcd did.
func (m *Member) Reaped() uint64 { return m.reaped.Load() }
