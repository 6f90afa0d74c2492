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
		{handOffKey(p, 3), handOffValue("auth-1", 9)},
		{handOffKey(p, 4), "auth-1 09"},
		{memberKey(p, Authority, "a"), registration{addr: "127.0.0.1:4242", fingerprint: strings.Repeat("ab", 32)}.String()},
		{memberKey(p, Authority, "b"), registration{addr: dialsOut, fingerprint: strings.Repeat("cd", 32)}.String()},
		{memberKey(p, Front, "g"), registration{addr: "127.0.0.1:4242", fingerprint: strings.Repeat("ef", 32), uplink: "127.0.0.1:4243"}.String()},
		{memberKey(p, Front, "f"), ""},
		{p + keyTimeline, "0123456789abcdef"},
		{p + "shards/0007", "x"},
		{p + "members/authority/", "x"},
		{"/elsewhere", "x"},
	} {
		f.Add(seed[0], []byte(seed[1]), int64(5), false)
	}
	f.Fuzz(func(t *testing.T, key string, value []byte, created int64, del bool) {
		tb := &Table{prefix: p, shards: map[uint32]Holding{}, handing: map[uint32]Holding{}, changed: make(chan struct{})}
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
		for n, h := range tb.handing {
			if n >= MaxShards || checkName(h.Holder) != nil || h.Epoch == 0 {
				t.Fatalf("hand-off of shard %d taken as %+v from %q = %q", n, h, key, value)
			}
		}
		for r := range tb.members {
			for name, addr := range tb.members[r] {
				if checkName(name) != nil || len(addr) > MaxAddr {
					t.Fatalf("member %q (%d-byte address) taken from %q", name, len(addr), key)
				}
			}
		}
		if r, ok := parseRegistered(string(value)); ok {
			if back, _ := parseRegistered(r.String()); back != r || !isFingerprint(r.fingerprint) || r.uplink == dialsOut {
				t.Fatalf("registration %q read as %+v, written back as %q", value, r, r.String())
			}
		}
	})
}
