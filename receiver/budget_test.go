package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/scenario"
)

// TestBudgetOnFiedler drives the Fiedler scene (901 islands, a pusher
// sweeping through stacks of boxes) to one observer held to 96 kbit/s —
// 600 bytes a broadcast at 20 Hz, less than the scene takes — with
// acknowledgements two snapshots late and no loss. Every frame sent
// commits whole against the baseline it was coded against, although an
// island's baseline is as old as its last frame sent; the bytes of every
// run of 20 broadcasts (one second) stay within 21 budgets; and no island
// waits more than a second for a frame.
func TestBudgetOnFiedler(t *testing.T) {
	scs, err := scenario.Pick("fiedler")
	if err != nil {
		t.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := broadcast.New(broadcast.Config{SendPeriod: auth.Period(), ObserverKbps: 96,
		Class: func(uint32, int) quant.Class { return quant.Rigid }})
	if err != nil {
		t.Fatal(err)
	}
	rx, _ := New(Config{})
	l := &lagLoop{loop: &loop{t: t, auth: auth, bc: bc, rx: rx, lim: codec.ControlLimits{}.WithDefaults()}, lag: 2,
		last: map[island.MemberID]quant.State{}}
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})

	const snaps, warm = 100, 10
	var sent []int
	oldest, deferred := 0, 0
	for s := range snaps {
		_, bytes := l.snapshot()
		bud, _ := bc.Budget(1)
		if bud.Budget != 600 || bud.Sent != int(bytes) {
			t.Fatalf("snapshot %d: budget %+v, %d bytes sent", s, bud, bytes)
		}
		sent = append(sent, bud.Sent)
		if s >= warm { // after the first keyframes of all 901 islands went out
			oldest = max(oldest, bud.OldestAge)
		}
		deferred += bud.Deferred
	}
	st, bs := rx.Stats(), bc.Stats()
	if st.Wire.NoBaseline != 0 || st.Wire.Digest != 0 || st.Wire.Refused != 0 {
		t.Fatalf("wire stats %+v", st.Wire)
	}
	if bs.Deferred != uint64(deferred) || deferred == 0 {
		t.Fatalf("deferred %d, counted %d", deferred, bs.Deferred)
	}
	if want := bs.Frames - bs.Deferred; st.FramesCommitted != want {
		t.Fatalf("committed %d frames of %d sent (%d sampled, %d deferred)", st.FramesCommitted, want, bs.Frames, bs.Deferred)
	}
	worst, sum, total := 0, 0, 0
	for i, n := range sent {
		sum += n
		total += n
		if i >= 20 {
			sum -= sent[i-20]
		}
		worst = max(worst, sum)
	}
	t.Logf("%d of %d frames sent, %d deferred; the busiest second took %d bytes (budget %d); oldest island %d broadcasts (mean %d bytes)",
		bs.Frames-bs.Deferred, bs.Frames, bs.Deferred, worst, 20*600, oldest, total/snaps)
	if worst > 21*600 {
		t.Fatalf("a second took %d bytes, budget %d", worst, 20*600)
	}
	if oldest > 20 {
		t.Fatalf("an island waited %d broadcasts", oldest)
	}
}
