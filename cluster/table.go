package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Holding is who holds a shard, as etcd has it.
type Holding struct {
	Holder string           // the holder's member name
	Epoch  uint32           // the shard key's creation revision
	Lease  clientv3.LeaseID // the holder's lease
}

// TableStats counts what a Table did.
type TableStats struct {
	Admitted uint64 // Admit calls answered yes
	Refused  uint64 // Admit calls answered no: not the holder, or an epoch below the shard's
	Ignored  uint64 // keys or values under the prefix that are not ours or break a limit
	Resyncs  uint64 // times the whole prefix was read again (watch compacted or broken)
}

// A Table is one process's view of a world in etcd — which member holds
// each shard at which epoch, and which members are registered — kept
// current by a watch. Fronts use it to refuse frames of an epoch that is
// not the shard's current one (Admit); authorities use it to share out
// the shards (Serve). It is safe for concurrent use.
type Table struct {
	prefix string
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	shards  map[uint32]Holding
	handing map[uint32]Holding   // shards released for their next holder: the releasing holder and epoch
	members [3]map[string]string // by Role: name → address
	rev     int64
	changed chan struct{} // closed at the next change
	stats   TableStats
}

// WatchTable reads the world under prefix (empty: DefaultPrefix) and
// keeps it current in a goroutine until Close.
func WatchTable(ctx context.Context, cli *clientv3.Client, prefix string) (*Table, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	t := &Table{prefix: prefix, done: make(chan struct{}), changed: make(chan struct{})}
	if err := t.load(ctx, cli); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	go t.watch(wctx, cli)
	return t, nil
}

// load reads the whole prefix and replaces the view with it.
func (t *Table) load(ctx context.Context, cli *clientv3.Client) error {
	r, err := cli.Get(ctx, t.prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shards, t.handing = map[uint32]Holding{}, map[uint32]Holding{}
	for i := range t.members {
		t.members[i] = map[string]string{}
	}
	for _, kv := range r.Kvs {
		t.put(string(kv.Key), kv.Value, kv.CreateRevision, kv.Lease)
	}
	t.rev = r.Header.Revision
	t.notify()
	return nil
}

// watch follows the prefix from the revision read; when the watch breaks
// or its revision was compacted away it reads everything again.
func (t *Table) watch(ctx context.Context, cli *clientv3.Client) {
	defer close(t.done)
	for ctx.Err() == nil {
		t.mu.Lock()
		from := t.rev + 1
		t.mu.Unlock()
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), t.prefix, clientv3.WithPrefix(), clientv3.WithRev(from))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				break
			}
			t.mu.Lock()
			for _, ev := range resp.Events {
				key := string(ev.Kv.Key)
				if ev.Type == clientv3.EventTypeDelete {
					t.del(key)
				} else {
					t.put(key, ev.Kv.Value, ev.Kv.CreateRevision, ev.Kv.Lease)
				}
			}
			t.rev = resp.Header.Revision
			t.notify()
			t.mu.Unlock()
		}
		if ctx.Err() != nil {
			return
		}
		for ctx.Err() == nil {
			if err := t.load(ctx, cli); err == nil {
				t.mu.Lock()
				t.stats.Resyncs++
				t.mu.Unlock()
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (t *Table) notify() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// put applies one key's value; mu held.
func (t *Table) put(key string, value []byte, created, lease int64) {
	rest, ok := strings.CutPrefix(key, t.prefix)
	switch {
	case !ok:
		t.stats.Ignored++
	case rest == keyTimeline || rest == keyStart:
	case strings.HasPrefix(rest, keyShards):
		n, ok := parseShard(rest[len(keyShards):])
		ep, err := epochOf(created)
		if !ok || err != nil || checkName(string(value)) != nil {
			t.stats.Ignored++
			return
		}
		if _, had := t.shards[n]; !had && len(t.shards) >= MaxShards {
			t.stats.Ignored++
			return
		}
		t.shards[n] = Holding{Holder: string(value), Epoch: ep, Lease: clientv3.LeaseID(lease)}
	case strings.HasPrefix(rest, keyHandOff):
		n, ok := parseShard(rest[len(keyHandOff):])
		h, okv := parseHandOff(string(value))
		if !ok || !okv {
			t.stats.Ignored++
			return
		}
		h.Lease = clientv3.LeaseID(lease)
		t.handing[n] = h // at most MaxShards: n is below it
	case strings.HasPrefix(rest, keyMembers):
		r, name, ok := parseMember(rest[len(keyMembers):])
		if !ok || len(value) > MaxAddr {
			t.stats.Ignored++
			return
		}
		if _, had := t.members[r][name]; !had && len(t.members[Authority])+len(t.members[Front]) >= MaxMembers {
			t.stats.Ignored++
			return
		}
		t.members[r][name] = string(value)
	default:
		t.stats.Ignored++
	}
}

// del applies one key's deletion; mu held.
func (t *Table) del(key string) {
	rest, _ := strings.CutPrefix(key, t.prefix)
	if n, ok := parseShard(strings.TrimPrefix(rest, keyShards)); ok && strings.HasPrefix(rest, keyShards) {
		delete(t.shards, n)
	} else if n, ok := parseShard(strings.TrimPrefix(rest, keyHandOff)); ok && strings.HasPrefix(rest, keyHandOff) {
		delete(t.handing, n)
	} else if r, name, ok := parseMember(strings.TrimPrefix(rest, keyMembers)); ok && strings.HasPrefix(rest, keyMembers) {
		delete(t.members[r], name)
	}
}

// Rev returns the etcd revision the table is current to.
func (t *Table) Rev() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rev
}

// Shard returns who holds shard n.
func (t *Table) Shard(n uint32) (Holding, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.shards[n]
	return h, ok
}

// Admit says whether a lease or frame of an island of shard n, at epoch,
// sent by the member named holder, may be taken — what a front checks
// before it forwards either — and counts the answer. It may when holder
// holds the shard now and epoch is at least the shard's epoch (the key's
// creation revision): the holder may hand an island on within itself,
// which raises the island's epoch past it, but any earlier holder's
// epochs lie below it. A shard nobody holds admits nothing (but see
// Handing).
func (t *Table) Admit(n uint32, holder string, epoch uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.shards[n]; ok && h.Holder == holder && epoch >= h.Epoch {
		t.stats.Admitted++
		return true
	}
	t.stats.Refused++
	return false
}

// Handing says whether holder released shard n for its next holder
// (Member.Release) at or below epoch, and its session is still alive: it
// keeps stepping the shard until the next holder's frames are out (make
// before break), and a front keeps handing out the frames of a lease of
// holder's it already forwarded, epoch and up, until the next holder's
// lease arrives. Handing admits no lease, and counts nothing: a front asks
// it only after Admit, whose answer is counted.
func (t *Table) Handing(n uint32, holder string, epoch uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.handing[n]
	return ok && h.Holder == holder && epoch >= h.Epoch
}

// handedOff reports whether the member named holder released shard n at
// exactly epoch and its hand-off record still stands.
func (t *Table) handedOff(n uint32, holder string, epoch uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.handing[n]
	return ok && h.Holder == holder && h.Epoch == epoch
}

// Busy reports whether the member named name holds a shard or hands one
// on (it released it and steps it until its next holder's frames show):
// a front keeps its link to such an authority even after its
// registration went, the first step of its drain.
func (t *Table) Busy(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, h := range t.shards {
		if h.Holder == name {
			return true
		}
	}
	for _, h := range t.handing {
		if h.Holder == name {
			return true
		}
	}
	return false
}

// Members returns the names of the registered members of role, sorted.
func (t *Table) Members(r Role) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(r) >= len(t.members) {
		return nil
	}
	out := make([]string, 0, len(t.members[r]))
	for n := range t.members[r] {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Addr returns the address member name of role registered.
func (t *Table) Addr(r Role, name string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(r) >= len(t.members) {
		return "", false
	}
	a, ok := t.members[r][name]
	return a, ok
}

// Held returns the shards member name holds, in order.
func (t *Table) Held(name string) []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []uint32
	for n, h := range t.shards {
		if h.Holder == name {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Leases returns the distinct etcd leases that hold shards or shards being
// handed on, in order.
func (t *Table) Leases() []clientv3.LeaseID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []clientv3.LeaseID
	for _, m := range []map[uint32]Holding{t.shards, t.handing} {
		for _, h := range m {
			if h.Lease != 0 && !slices.Contains(out, h.Lease) {
				out = append(out, h.Lease)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Changed returns a channel closed at the table's next change.
func (t *Table) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// Revision returns the etcd revision the table is current to.
func (t *Table) Revision() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rev
}

// Stats returns the table's counters.
func (t *Table) Stats() TableStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Close stops the watch.
func (t *Table) Close() {
	t.cancel()
	<-t.done
}
