package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config sets a Member up. Zero fields mean the documented defaults.
type Config struct {
	// Prefix is the world's key prefix, ending in '/'. Empty means
	// DefaultPrefix. Every process of one world uses the same prefix.
	Prefix string
	// Name is the member's name within the world: unique, 1–MaxName
	// letters, digits, '.', '_' or '-'. Required.
	Name string
	// Role is what the member does. Required.
	Role Role
	// Addr is what others dial to reach the member (a front's QUIC
	// address; an authority's is informational). Empty means none.
	Addr string
	// TTL is the member's etcd lease: when etcd has heard nothing from it
	// this long, its registration and every shard it holds are deleted,
	// and another authority may take them. Zero means DefaultTTL; etcd
	// refuses less than about 2 s.
	TTL time.Duration
}

// DefaultTTL is Config.TTL's default.
const DefaultTTL = 5 * time.Second

// A Member is one process's presence in a world: an etcd lease kept alive
// for as long as the process runs, its registration bound to it, and the
// shards it claims. Its lease is also its fence: every shard key is bound
// to it, so when etcd lets the lease go the shards go with it, and the
// member stops itself — Fenced closes — once it can no longer be sure
// etcd still holds it: a keep-alive was refused, or none was confirmed for
// a whole TTL counted from when the last confirmed one was sent. Work
// done for a shard must stop when Fenced closes.
type Member struct {
	cli    *clientv3.Client
	cfg    Config
	lease  clientv3.LeaseID
	ttl    time.Duration
	cancel context.CancelFunc
	done   chan struct{} // closed when the keep-alive loop ends
	fenced chan struct{}
	// abandoned: stopped without a goodbye; Close revokes nothing.
	abandoned atomic.Bool
	// What Serve's reaping did: readings of other holders' leases, and
	// leases it revoked.
	readings, reaped atomic.Uint64

	mu       sync.Mutex
	deadline time.Time // the lease is surely alive until then
	why      error     // why the member is fenced
}

// Join grants the member's lease, keeps it alive in a goroutine, and
// registers the member under the world's prefix.
func Join(ctx context.Context, cli *clientv3.Client, cfg Config) (*Member, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	switch {
	case checkPrefix(cfg.Prefix) != nil:
		return nil, checkPrefix(cfg.Prefix)
	case checkName(cfg.Name) != nil:
		return nil, checkName(cfg.Name)
	case cfg.Role != Authority && cfg.Role != Front:
		return nil, fmt.Errorf("cluster: role %v: want Authority or Front", cfg.Role)
	case len(cfg.Addr) > MaxAddr:
		return nil, fmt.Errorf("cluster: address of %d bytes: at most %d", len(cfg.Addr), MaxAddr)
	case cfg.TTL < time.Second:
		return nil, fmt.Errorf("cluster: TTL %v: at least 1s", cfg.TTL)
	}
	sent := time.Now()
	g, err := cli.Grant(ctx, int64((cfg.TTL+time.Second-1)/time.Second))
	if err != nil {
		return nil, fmt.Errorf("cluster: lease: %w", err)
	}
	m := &Member{cli: cli, cfg: cfg, lease: g.ID, ttl: time.Duration(g.TTL) * time.Second,
		done: make(chan struct{}), fenced: make(chan struct{}), deadline: sent.Add(time.Duration(g.TTL) * time.Second)}
	key := memberKey(cfg.Prefix, cfg.Role, cfg.Name)
	r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, cfg.Addr, clientv3.WithLease(g.ID))).Commit()
	if err == nil && !r.Succeeded {
		err = fmt.Errorf("cluster: a %v named %q is already in the world", cfg.Role, cfg.Name)
	}
	if err != nil {
		cli.Revoke(context.WithoutCancel(ctx), g.ID)
		return nil, err
	}
	kctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.keepAlive(kctx)
	return m, nil
}

// keepAlive renews the lease every third of its TTL, and fences the member
// when a renewal is refused or none is confirmed before the deadline.
func (m *Member) keepAlive(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(m.ttl / 3)
	defer tick.Stop()
	for {
		m.mu.Lock()
		wait := time.Until(m.deadline)
		m.mu.Unlock()
		expire := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			expire.Stop()
			m.fence(errors.New("cluster: member closed"))
			return
		case <-expire.C:
			m.fence(errors.New("cluster: no keep-alive confirmed within the lease's TTL"))
			return
		case <-tick.C:
			expire.Stop()
		}
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, sent.Add(m.ttl/3))
		r, err := m.cli.KeepAliveOnce(rctx, m.lease)
		cancel()
		switch {
		case err == nil && r.TTL > 0:
			m.mu.Lock()
			m.deadline = sent.Add(time.Duration(r.TTL) * time.Second)
			m.mu.Unlock()
		case err == nil || errors.Is(err, errLeaseNotFound):
			m.fence(errors.New("cluster: etcd no longer holds the member's lease"))
			return
		}
		// Any other error (etcd unreachable): try again at the next tick,
		// until the deadline fences the member.
	}
}

func (m *Member) fence(why error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.why == nil {
		m.why = why
		close(m.fenced)
	}
}

// Fenced is closed when the member must stop acting for the shards it
// held: its lease is gone or may be.
func (m *Member) Fenced() <-chan struct{} { return m.fenced }

// Err says why the member is fenced; nil while it is not.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.why
}

// Deadline is the instant until which the member's lease is surely held
// (the last confirmed keep-alive's send time plus its TTL).
func (m *Member) Deadline() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadline
}

// Name returns the member's name.
func (m *Member) Name() string { return m.cfg.Name }

// Prefix returns the world's key prefix.
func (m *Member) Prefix() string { return m.cfg.Prefix }

// TTL returns the lease's TTL as etcd granted it.
func (m *Member) TTL() time.Duration { return m.ttl }

// Lease returns the member's etcd lease.
func (m *Member) Lease() clientv3.LeaseID { return m.lease }

// Close says goodbye: it stops the keep-alive and revokes the lease, so
// the registration and every shard the member holds go at once.
func (m *Member) Close(ctx context.Context) error {
	m.cancel()
	<-m.done
	if m.abandoned.Load() {
		return nil
	}
	_, err := m.cli.Revoke(ctx, m.lease)
	if errors.Is(err, errLeaseNotFound) {
		err = nil
	}
	return err
}

// Abandon stops the keep-alive without a goodbye, as a crashed process
// would: etcd lets the lease, the registration and the shards go only
// when the TTL runs out. A later Close revokes nothing.
func (m *Member) Abandon() {
	m.abandoned.Store(true)
	m.cancel()
	<-m.done
}
