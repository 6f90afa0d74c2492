package cluster

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var errLeaseNotFound = rpctypes.ErrLeaseNotFound

// HeldError is Claim's answer when another member holds the shard.
type HeldError struct {
	Shard  uint32
	Holder string // the holder's name as etcd has it
	Epoch  uint32
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("cluster: shard %d is held by %q (epoch %d)", e.Shard, e.Holder, e.Epoch)
}

// Claim makes the member the authority of shard, if nobody is: the shard's
// key is created bound to the member's lease, in one transaction that
// succeeds only when the key does not exist. The epoch it returns is the
// key's creation revision — a fencing token that only grows, so every
// later holder's epoch is higher — and is the epoch of every island of the
// shard while the member holds it. Claiming a shard the member already
// holds returns its epoch again. A shard held by another member gives a
// *HeldError.
func (m *Member) Claim(ctx context.Context, shard uint32) (uint32, error) {
	if shard >= MaxShards {
		return 0, fmt.Errorf("cluster: shard %d: at most %d", shard, MaxShards-1)
	}
	select {
	case <-m.fenced:
		return 0, m.Err()
	default:
	}
	key := shardKey(m.cfg.Prefix, shard)
	r, err := m.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, m.cfg.Name, clientv3.WithLease(m.lease))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: claim shard %d: %w", shard, err)
	}
	if r.Succeeded {
		return epochOf(r.Header.Revision)
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return 0, fmt.Errorf("cluster: claim shard %d: the key went while claiming; try again", shard)
	}
	ep, err := epochOf(kvs[0].CreateRevision)
	if err != nil {
		return 0, err
	}
	if clientv3.LeaseID(kvs[0].Lease) == m.lease {
		return ep, nil
	}
	return 0, &HeldError{Shard: shard, Holder: string(kvs[0].Value[:min(len(kvs[0].Value), MaxName)]), Epoch: ep}
}

// Release gives shard up at once, for a drain or a rebalance: the key is
// deleted only if it is still the one created at epoch, so a release that
// comes late never deletes a later holder's claim. In the same transaction
// it records the hand-off (P handoff/<n>, bound to the member's lease, so
// it ends with the member's session; the shard's next release replaces
// it): while it stands, fences keep handing out the frames of the
// member's leases they forwarded until the next holder's arrive
// (Table.Handing), so the member may keep stepping the shard until then.
// It reports whether it deleted anything.
func (m *Member) Release(ctx context.Context, shard, epoch uint32) (bool, error) {
	key := shardKey(m.cfg.Prefix, shard)
	r, err := m.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", int64(epoch)),
		clientv3.Compare(clientv3.LeaseValue(key), "=", m.lease)).
		Then(clientv3.OpDelete(key),
			clientv3.OpPut(handOffKey(m.cfg.Prefix, shard), handOffValue(m.cfg.Name, epoch), clientv3.WithLease(m.lease))).Commit()
	if err != nil {
		return false, fmt.Errorf("cluster: release shard %d: %w", shard, err)
	}
	return r.Succeeded, nil
}

// Leave deletes the member's registration while keeping its lease and
// shards, the first step of a drain: the other authorities stop counting
// it when they share out the shards, while it still holds them until it
// releases each one.
func (m *Member) Leave(ctx context.Context) error {
	_, err := m.cli.Delete(ctx, memberKey(m.cfg.Prefix, m.cfg.Role, m.cfg.Name))
	return err
}

// maxLeaveShards caps the shards LeaveAndRelease releases in its one
// transaction: each takes two operations, and etcd's default cap is 128.
const maxLeaveShards = 60

// LeaveAndRelease is Leave and, in the same transaction, the Release of
// every shard t shows the member holding under its lease, each compared
// at its epoch: a drain then waits for one round trip to etcd before the
// next holders may claim, not a leave, a watch and a release after it.
// Serve takes a shard whose key went while the member's hand-off record
// for it stands as released (it keeps stepping it until the next holder
// claims it). When the member holds none, more than maxLeaveShards, or the
// table was behind (a compare failed), only the registration goes, and
// Serve releases each shard itself once the table shows it left. It
// reports how many shards it released.
func (m *Member) LeaveAndRelease(ctx context.Context, t *Table) (int, error) {
	var held []uint32
	for _, s := range t.Held(m.cfg.Name) {
		if h, ok := t.Shard(s); ok && h.Lease == m.lease {
			held = append(held, s)
		}
	}
	if len(held) == 0 || len(held) > maxLeaveShards {
		return 0, m.Leave(ctx)
	}
	key := memberKey(m.cfg.Prefix, m.cfg.Role, m.cfg.Name)
	var cmps []clientv3.Cmp
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	for _, s := range held {
		h, _ := t.Shard(s)
		sk := shardKey(m.cfg.Prefix, s)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(sk), "=", int64(h.Epoch)),
			clientv3.Compare(clientv3.LeaseValue(sk), "=", m.lease))
		ops = append(ops, clientv3.OpDelete(sk),
			clientv3.OpPut(handOffKey(m.cfg.Prefix, s), handOffValue(m.cfg.Name, h.Epoch), clientv3.WithLease(m.lease)))
	}
	r, err := m.cli.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return 0, err
	}
	if !r.Succeeded {
		return 0, nil
	}
	return len(held), nil
}
