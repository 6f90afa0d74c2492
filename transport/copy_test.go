package transport

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/internal/livestate"
	"github.com/islandsync/islandsync/netsim"
	"github.com/islandsync/islandsync/scenario"
)

// TestCopyControl: a broadcast's control bytes go as stream copies at that
// broadcast and the two after it, at their stream positions, cut to
// the observer's datagram; control over copyDatagrams datagrams goes by the
// stream alone.
func TestCopyControl(t *testing.T) {
	p := &peer{maxDatagram: 600}
	room := p.maxDatagram - codec.StreamCopyHeaderSize
	ctl := bytes.Repeat([]byte{7}, room+10) // two copies' worth
	p.ctlOff = 1000
	p.copyControl(ctl)
	p.ctlOff += uint64(len(ctl))
	var sends [][]broadcast.Datagram
	for range 4 {
		sends = append(sends, p.appendCopies(nil))
	}
	for i, dgs := range sends {
		want := 2
		if i == 3 {
			want = 0
		}
		if len(dgs) != want {
			t.Fatalf("broadcast %d sent %d copies, want %d", i, len(dgs), want)
		}
		var got []byte
		for k, d := range dgs {
			c, err := codec.ParseStreamCopy(d.Bytes)
			if err != nil || c.Offset != 1000+uint64(len(got)) || len(d.Bytes) > p.maxDatagram || len(d.Islands) != 0 {
				t.Fatalf("broadcast %d copy %d: offset %d, %d bytes, %v", i, k, c.Offset, len(d.Bytes), err)
			}
			got = append(got, c.Bytes...)
		}
		if want > 0 && !bytes.Equal(got, ctl) {
			t.Fatalf("broadcast %d: the copies are not the control bytes", i)
		}
	}
	p.copyControl(make([]byte, copyDatagrams*room+1))
	if dgs := p.appendCopies(nil); len(dgs) != 0 {
		t.Fatalf("control over %d datagrams copied", copyDatagrams)
	}
	// Control with no broadcast to carry its copies: at most 16 wait, the
	// newest.
	for i := range 40 {
		p.copyControl([]byte{byte(i)})
		p.ctlOff++
	}
	dgs := p.appendCopies(nil)
	if len(dgs) != 16 {
		t.Fatalf("%d copies waited, want 16", len(dgs))
	}
	if c, _ := codec.ParseStreamCopy(dgs[0].Bytes); c.Bytes[0] != 24 {
		t.Fatalf("the oldest copy kept is of byte %d, want 24", c.Bytes[0])
	}
}

// countCopies counts the stream copies among queued datagrams (the queue
// drops superseded frames, never copies).
func countCopies(q []queued) int {
	n := 0
	for _, d := range q {
		if codec.IsStreamCopy(d.Bytes) {
			n++
		}
	}
	return n
}

// TestCopiesFollowParity: the server copies an observer's control into
// datagrams exactly when the broadcaster sends it parity, each copy the
// stream's bytes at its position, sent at broadcasts only; without parity
// nothing is copied.
func TestCopiesFollowParity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parity int
		want   bool
	}{{"parity", 2, true}, {"no parity", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			auth := pickAuthority(t, "bridge")
			bc, err := broadcast.New(broadcast.Config{SendPeriod: auth.Period(), Parity: tc.parity, FixedParity: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := bc.Join(1, 1200); err != nil {
				t.Fatal(err)
			}
			_ = bc.Subscribe(1, codec.Subscribe{All: true})
			// A server without a network: nothing drains the peer's queues,
			// so they hold everything sent, the stream from its first byte.
			p := &peer{id: 1, maxDatagram: 1200, ctlCap: 1 << 20, dgCap: 1 << 12, stall: time.Hour,
				wake: make(chan struct{}, 1), wakeDG: make(chan struct{}, 1)}
			s := &Server{cfg: ServerConfig{FixedRate: true}, bc: bc, log: quiet,
				conns: map[broadcast.ObserverID]*peer{1: p}}
			var ctl []byte
			var dgs []broadcast.Datagram
			for range 3 * scenario.StepHz { // 3 s
				msgs, frames := auth.Step()
				before := countCopies(p.dgs)
				s.send(msgs, frames, &ctl, &dgs)
				// Copies go only at broadcasts, the steps that sampled
				// frames, so that three go over three broadcast periods.
				if countCopies(p.dgs) > before && len(frames) == 0 {
					t.Fatal("a stream copy sent at a step that sampled no frame")
				}
			}
			copies := 0
			for _, d := range p.dgs {
				if !codec.IsStreamCopy(d.Bytes) {
					continue
				}
				copies++
				c, err := codec.ParseStreamCopy(d.Bytes)
				if err != nil || c.Offset+uint64(len(c.Bytes)) > uint64(len(p.ctl)) ||
					!bytes.Equal(c.Bytes, p.ctl[c.Offset:c.Offset+uint64(len(c.Bytes))]) {
					t.Fatalf("copy at %d (%d bytes) is not the stream's bytes there: %v", c.Offset, len(c.Bytes), err)
				}
			}
			if (copies > 0) != tc.want || len(p.ctl) == 0 {
				t.Fatalf("%d copies of %d control bytes", copies, len(p.ctl))
			}
			t.Logf("%d control bytes, %d copies", len(p.ctl), copies)
		})
	}
}

// TestWatcherReadsCopies: over QUIC through a relay that loses 10 % of
// packets, a server with parity on (no budget) sends its control again as
// stream copies; the watcher reads them — refusing none — and ends with
// exactly the server's identities, leases and manifests.
func TestWatcherReadsCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("real network test")
	}
	auth := pickAuthority(t, "config")
	srv, ct := testServer(t, auth, ServerConfig{FixedRate: true})
	imp := netsim.Config{Loss: 0.10, Delay: 5_000, Jitter: 10_000}
	relay, err := netsim.NewRelay("127.0.0.1:0", srv.Addr().String(), imp, imp, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	w, err := NewWatcher(WatchConfig{Addr: relay.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet,
		DialTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var read, refused atomic.Uint64
	var converged atomic.Bool
	paused := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(tk *Tick) {
			read.Store(tk.Copies.Used + tk.Copies.Late)
			refused.Store(tk.Copies.Refused)
			select {
			case <-paused:
				converged.Store(livestate.Of(tk.Receiver).Equal(serverState(srv)))
			default:
			}
		})
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "a stream copy read", func() bool { return read.Load() > 0 })
	srv.Pause(true)
	close(paused)
	waitFor(t, "the watcher's state to equal the server's", converged.Load)
	if refused.Load() != 0 {
		t.Fatalf("%d copies refused", refused.Load())
	}
	t.Logf("stream copies read: %d", read.Load())
}
