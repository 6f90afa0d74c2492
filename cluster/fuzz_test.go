package cluster

import (
	"strings"
	"testing"
)

// FuzzTableKeys: whatever keys and values etcd holds under a world's
// prefix, the table takes only well-formed shards and members, never
// panics, and keeps to its caps.
func FuzzTableKeys(f *testing.F) {
	const p = "/w/"
	for _, seed := range [][2]string{
		{shardKey(p, 3), "auth-1"},
		{memberKey(p, Authority, "a"), registered("127.0.0.1:4242", strings.Repeat("ab", 32))},
		{memberKey(p, Front, "f"), ""},
		{p + keyTimeline, "0123456789abcdef"},
		{p + "shards/0007", "x"},
		{p + "members/authority/", "x"},
		{"/elsewhere", "x"},
	} {
		f.Add(seed[0], []byte(seed[1]), int64(5), false)
	}
	f.Fuzz(func(t *testing.T, key string, value []byte, created int64, del bool) {
		tb := &Table{prefix: p, shards: map[uint32]Holding{}, changed: make(chan struct{})}
		for i := range tb.members {
			tb.members[i] = map[string]string{}
		}
		tb.put(key, value, created, 1)
		if del {
			tb.del(key)
		}
		for n, h := range tb.shards {
			if n >= MaxShards || checkName(h.Holder) != nil || h.Epoch == 0 {
				t.Fatalf("shard %d taken as %+v from %q = %q", n, h, key, value)
			}
		}
		for r := range tb.members {
			for name, addr := range tb.members[r] {
				if checkName(name) != nil || len(addr) > MaxAddr {
					t.Fatalf("member %q (%d-byte address) taken from %q", name, len(addr), key)
				}
			}
		}
		_, _, _ = parseRegistered(string(value))
	})
}
