package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/assembler"
	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
)

// TestParityFollowsLoss: on the chain (240 links, two 576-byte datagrams a frame),
// a path that loses nothing soon gets no parity at all; one that loses
// every tenth datagram gets broadcast.DefaultParity records per frame
// again, and frames are rebuilt from them.
func TestParityFollowsLoss(t *testing.T) {
	l := newLagLoopDatagram(t, "chain", 20, 2, 3, codec.MinMaxDatagram)
	for range 100 { // 5 s: about 400 datagrams judged
		l.snapshot()
	}
	parity := func() int64 { return l.bc.Stats().Wire.Parity }
	before := parity()
	for range 40 {
		l.snapshot()
	}
	b, _ := l.bc.Budget(1)
	if b.Parity != 0 || b.Loss > 0.0005 || parity() != before {
		t.Fatalf("clean path: %d parity records a frame (%d parity bytes in 2 s), loss %v", b.Parity, parity()-before, b.Loss)
	}
	l.drop = func(n int) bool { return n%10 == 0 }
	rebuilt := l.rx.Stats().Assembler.Count(assembler.Rebuilt)
	for range 100 {
		l.snapshot()
	}
	b, _ = l.bc.Budget(1)
	if b.Parity != broadcast.DefaultParity || b.Loss < 0.05 || b.Loss > 0.15 {
		t.Fatalf("every tenth datagram lost: %d parity records a frame, loss %v", b.Parity, b.Loss)
	}
	if n := l.rx.Stats().Assembler.Count(assembler.Rebuilt) - rebuilt; n == 0 {
		t.Fatal("every tenth datagram lost: no fragment rebuilt from parity")
	}
}
