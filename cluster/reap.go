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
// etcd reports a lease's remaining time in whole seconds, truncated: a
// reading of 0 means less than 1 s is left (or the lease has expired and
// etcd has not yet looked), not that it expired. An expired lease can no
// longer be renewed. The rule that makes a revoke safe:
//
//   - A reading of 0 taken at etcd's instant ρ₀ means the lease expires
//     before ρ₀ + 1 s — unless it is renewed after ρ₀.
//   - A renewal at u starts the granted TTL G ≥ 2 s again, so every
//     reading taken in [u, u + G − 1 s) reads at least 1. Two readings of 0
//     less than G − 1 s apart (at least a second) therefore have no
//     renewal between them.
//   - So a run of readings of 0, each one answered less than runGap after
//     the previous one was requested (each ρ lies between its request and
//     its answer, so consecutive ones are less than runGap apart), whose
//     last was requested at least a second after its first was answered,
//     proves the lease expired by its last reading: ρ₀ ≤ the first's
//     answer and ρₙ ≥ the last's request, so ρₙ ≥ ρ₀ + 1 s, with no
//     renewal in between.
//
// Only the order of events on one clock matters, not how long an answer
// took, so slow answers (a loaded machine) at worst start a run afresh;
// they never make a proof wrong. The reaper reads every other holder's
// lease each reapPoll, and each reapFast once one is late: it reads under
// two seconds and less than a lease renewed on schedule shows (etcd's
// client renews a third of the TTL after the last renewal, so such a lease
// reads at least ⌊2·TTL/3⌋: a lease of 5 s is late at 1, one of 2 s at 0).
// So the first reading of 0 comes within reapFast of the lease's last
// second beginning (plus its answer's time). The reading that can prove
// the expiry is requested at the first instant it can — a second after
// that answer (nextReading), not at the next reapFast — so the proof
// comes as long after the expiry as the first zero came after the last
// second began, plus the answers' time.
const (
	reapPoll    = 50 * time.Millisecond  // between readings of a lease that is not late
	reapFast    = 10 * time.Millisecond  // between readings of a lease that is late
	reapTimeout = 250 * time.Millisecond // a reading's timeout
	runGap      = 750 * time.Millisecond // a reading answered longer after the previous one's request starts a new run: under G − 1 s
)

// zeroRun is the readings of 0 of one lease since its last other reading.
type zeroRun struct {
	since    time.Time // the first reading of 0's answer: zero while there is no run
	lastSent time.Time // the last reading's request
}

// observe takes one reading — requested at sent, answered at recv, the
// lease's remaining whole seconds ttl (−1: etcd holds no such lease) and
// its granted TTL in seconds — and reports whether the lease has surely
// expired. A reading of 1 or more, or a lease granted less than 2 s, ends
// the run; an answer runGap or more after the last reading's request
// starts a new one.
func (z *zeroRun) observe(sent, recv time.Time, ttl, granted int64) bool {
	if ttl != 0 || granted < 2 {
		*z = zeroRun{}
		return false
	}
	if z.since.IsZero() || recv.Sub(z.lastSent) >= runGap {
		z.since = recv
	}
	z.lastSent = sent
	return sent.Sub(z.since) >= time.Second
}

// late reports whether a lease of granted seconds whose reading is ttl
// (whole seconds left) has under two seconds left and reads less than a
// lease renewed on schedule would: its renewal is overdue.
func late(ttl, granted int64) bool { return ttl >= 0 && ttl <= 1 && ttl < granted*2/3 }

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
			rctx, cancel := context.WithTimeout(ctx, reapTimeout)
			r, err := m.cli.TimeToLive(rctx, l)
			cancel()
			if err != nil {
				*z = zeroRun{}
				continue
			}
			m.readings.Add(1)
			if !z.observe(sent, time.Now(), r.TTL, r.GrantedTTL) {
				fast = fast || late(r.TTL, r.GrantedTTL)
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
		wait.Reset(nextReading(time.Now(), fast, runs))
	}
}

// nextReading returns how long the reaper waits, at now, before it reads
// the leases again: reapFast when one is late (fast), else reapPoll — but
// no longer than until the first instant a run of zeros can prove its
// lease expired (a second after the run's first answer), so that the
// proof is not a reading's spacing late.
func nextReading(now time.Time, fast bool, runs map[clientv3.LeaseID]*zeroRun) time.Duration {
	next := reapPoll
	if fast {
		next = reapFast
	}
	for _, z := range runs {
		if z.since.IsZero() {
			continue
		}
		if due := z.since.Add(time.Second).Sub(now); due < next {
			next = max(due, 0)
		}
	}
	return next
}

// Reaped returns how many other holders' leases the member revoked once
// they had expired (Serve's reaping), before etcd did.
func (m *Member) Reaped() uint64 { return m.reaped.Load() }
