package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Timeline returns the world's timeline id, the one every Welcome of
// every front names: the first caller writes a random one, every later
// caller (any process, any restart) reads it back. A value that is not 16
// hex digits is refused, not repaired.
func Timeline(ctx context.Context, cli *clientv3.Client, prefix string) (uint64, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := checkPrefix(prefix); err != nil {
		return 0, err
	}
	var b [8]byte
	rand.Read(b[:])
	id := binary.LittleEndian.Uint64(b[:]) | 1 // never 0
	key := prefix + keyTimeline
	r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fmt.Sprintf("%016x", id))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: timeline: %w", err)
	}
	if r.Succeeded {
		return id, nil
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 || len(kvs[0].Value) != 16 {
		return 0, fmt.Errorf("cluster: timeline at %s is not 16 hex digits", key)
	}
	v, err := strconv.ParseUint(string(kvs[0].Value), 16, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("cluster: timeline at %s is not 16 hex digits", key)
	}
	return v, nil
}
