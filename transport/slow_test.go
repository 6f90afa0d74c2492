package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// TestStalledFeedbackKeepsSession: the server stops reading the watcher's
// control stream (a busy machine, a full flow-control window), so the
// watcher's feedback writes cannot go. The session must live on — frames
// keep committing and feedback is skipped, not fatal — for as long as the
// stall lasts: here until 40 feedback periods in a row were skipped, where
// a 1 s write deadline used to end the session after 20.
func TestStalledFeedbackKeepsSession(t *testing.T) {
	cert, pin, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	qc := quicConfig(30 * time.Second)
	qc.InitialStreamReceiveWindow, qc.MaxStreamReceiveWindow = 1024, 1024 // fills after a few feedbacks
	ln, err := quic.ListenAddr("127.0.0.1:0", ServerTLS(cert), qc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serveUnread(ctx, ln) }()

	ct, _ := ClientTLS(pin, "", nil)
	w, err := NewWatcher(WatchConfig{Addr: ln.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	type progress struct{ skipped, committed uint64 }
	ticks := make(chan progress, 1)
	done := make(chan error, 1)
	go func() {
		done <- w.Run(wctx, func(tk *Tick) {
			select {
			case ticks <- progress{tk.FeedbackSkipped, tk.Receiver.Stats().FramesCommitted}:
			default:
			}
		})
	}()
	var committedAtStall uint64
	for {
		select {
		case err := <-done:
			t.Fatalf("the session ended while its feedback could not be written: %v", err)
		case p := <-ticks:
			if p.skipped == 1 {
				committedAtStall = p.committed
			}
			if p.skipped >= 40 && p.committed > committedAtStall {
				wcancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				cancel()
				if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
				return
			}
		}
	}
}

// serveUnread is a server that never reads its observer's control stream:
// it broadcasts the chain to the first observer that connects.
func serveUnread(ctx context.Context, ln *quic.Listener) error {
	conn, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	st, err := conn.AcceptStream(ctx)
	if err != nil {
		return err
	}
	auth, err := scenario.NewAuthority(scenario.All[1:2], 20)
	if err != nil {
		return err
	}
	bc, err := broadcast.New(broadcast.Config{Timeline: 1, SendPeriod: auth.Period()})
	if err != nil {
		return err
	}
	_ = bc.Join(1, datagramCap(conn))
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	tick := time.NewTicker(time.Second / scenario.StepHz)
	defer tick.Stop()
	var ctl []byte
	var dgs []broadcast.Datagram
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		msgs, frames := auth.Step()
		for _, m := range msgs {
			_ = bc.Apply(m)
		}
		bc.Frames(frames)
		ctl, dgs = bc.Take(1, ctl[:0], dgs[:0])
		if len(ctl) > 0 {
			if _, err := st.Write(ctl); err != nil {
				return err
			}
		}
		for _, d := range dgs {
			_ = conn.SendDatagram(d.Bytes)
		}
	}
}
