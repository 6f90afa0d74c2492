package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// World is what every process of one world shares from etcd.
type World struct {
	// Timeline is the world timeline id every front's Welcome names, so an
	// observer moved to another front keeps its playout.
	Timeline uint64
	// Start is the instant authority time 0 stands for. Authority time is
	// µs since Start on the wall clock of whichever process steps an
	// island: on one host all processes read one clock; across hosts their
	// clocks must agree (NTP or PTP) to well within one broadcast period,
	// or an island handed to another host jumps in time by their offset.
	Start time.Time
}

// Now returns the authority time of instant t, µs.
func (w World) Now(t time.Time) int64 { return t.Sub(w.Start).Microseconds() }

// Open reads the world under prefix (empty: DefaultPrefix), writing it
// first if nobody has: a random timeline id and the start instant, once,
// in one transaction, so every process and every restart reads the same.
// Values that are not what Open writes are refused, not repaired.
func Open(ctx context.Context, cli *clientv3.Client, prefix string) (World, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := checkPrefix(prefix); err != nil {
		return World{}, err
	}
	var b [8]byte
	rand.Read(b[:])
	w := World{Timeline: binary.LittleEndian.Uint64(b[:]) | 1, Start: time.Now()} // a timeline is never 0
	tk, sk := prefix+keyTimeline, prefix+keyStart
	r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(tk), "=", 0)).
		Then(clientv3.OpPut(tk, fmt.Sprintf("%016x", w.Timeline)), clientv3.OpPut(sk, strconv.FormatInt(w.Start.UnixMicro(), 10))).
		Else(clientv3.OpGet(tk), clientv3.OpGet(sk)).Commit()
	if err != nil {
		return World{}, fmt.Errorf("cluster: world: %w", err)
	}
	if r.Succeeded {
		w.Start = time.UnixMicro(w.Start.UnixMicro())
		return w, nil
	}
	tv, sv := r.Responses[0].GetResponseRange().Kvs, r.Responses[1].GetResponseRange().Kvs
	if len(tv) != 1 || len(tv[0].Value) != 16 || len(sv) != 1 || len(sv[0].Value) > 20 {
		return World{}, fmt.Errorf("cluster: world at %s: timeline or start missing or malformed", prefix)
	}
	id, err1 := strconv.ParseUint(string(tv[0].Value), 16, 64)
	us, err2 := strconv.ParseInt(string(sv[0].Value), 10, 64)
	if err1 != nil || err2 != nil || id == 0 || us <= 0 {
		return World{}, fmt.Errorf("cluster: world at %s: timeline or start malformed", prefix)
	}
	return World{Timeline: id, Start: time.UnixMicro(us)}, nil
}
