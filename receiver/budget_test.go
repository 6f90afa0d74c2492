package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/store"
)

// newBudgetLoop is scene at 20 Hz to one observer of a broadcaster
// configured by cfg (its SendPeriod is the scene's), with acknowledgements
// two snapshots late and no loss.
func newBudgetLoop(t *testing.T, scene string, cfg broadcast.Config) *lagLoop {
	return &lagLoop{loop: newLoopConfig(t, scene, cfg), lag: 2, last: map[island.MemberID]quant.State{}}
}

// TestBudgetOnFiedler drives the Fiedler scene (901 islands, a pusher
// sweeping through stacks of boxes) to one observer held to 96 kbit/s —
// 600 bytes a broadcast at 20 Hz, less than the scene takes — with
// acknowledgements two snapshots late and no loss. Every frame sent
// commits whole against the baseline it was coded against, although an
// island's baseline is as old as its last frame sent; the bytes of every
// run of 20 broadcasts (one second) stay within 21 budgets; and no island
// waits more than a second for a frame.
func TestBudgetOnFiedler(t *testing.T) {
	skipLongUnderRace(t, "steps 901 bodies for 110 broadcasts")
	l := newBudgetLoop(t, "fiedler", broadcast.Config{Class: func(uint32, int) quant.Class { return quant.Rigid }})
	bc, rx := l.bc, l.rx
	for range 10 { // the catch-up (identities, leases, manifests, physics, spawns) at no cap
		l.snapshot()
	}
	_ = bc.SetCap(1, 96)
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

// TestBudgetStep: on the Fiedler scene, busy after 10 s, the observer's cap
// drops from 1 Mbit/s to 128 kbit/s and comes back 3 s later. Within one second of
// each step (here: from the very next broadcast) every broadcast keeps to
// the cap in force, more than twice as much goes before the drop and after
// the return as during it, and every frame sent still commits whole.
func TestBudgetStep(t *testing.T) {
	skipLongUnderRace(t, "steps 901 bodies for 380 broadcasts")
	l := newBudgetLoop(t, "fiedler", broadcast.Config{ObserverKbps: 1000})
	bc, rx := l.bc, l.rx
	for range 200 { // 10 s: the pusher has reached the stacks
		l.snapshot()
	}
	var sent [3]int // bytes in each phase after its first second
	for s := range 180 {
		switch s {
		case 60:
			_ = bc.SetCap(1, 128)
		case 120:
			_ = bc.SetCap(1, 0) // back to the configured 1 Mbit/s
		}
		l.snapshot()
		bud, _ := bc.Budget(1)
		want := 1000 * 1000 / 8 / 20
		if s >= 60 && s < 120 {
			want = 128 * 1000 / 8 / 20
		}
		if bud.Budget != want {
			t.Fatalf("snapshot %d: budget %d, want %d", s, bud.Budget, want)
		}
		if bud.Sent > 2*want && s != 0 && s != 60 && s != 120 {
			t.Fatalf("snapshot %d: %d bytes sent under a budget of %d", s, bud.Sent, want)
		}
		if s%60 >= 20 {
			sent[s/60] += bud.Sent
		}
	}
	t.Logf("bytes per broadcast before, during and after the drop: %d, %d, %d", sent[0]/40, sent[1]/40, sent[2]/40)
	if sent[0] < 2*sent[1] || sent[2] < 2*sent[1] || sent[1] > 40*800 {
		t.Fatalf("sent %v bytes in the three phases", sent)
	}
	if st := rx.Stats(); st.Wire.Refused+st.Wire.Digest+st.Wire.NoBaseline != 0 {
		t.Fatalf("wire stats %+v", st.Wire)
	}
}

// TestLeftOutGoesStale: the 24 ragdolls to an observer held to 8 kbit/s
// (50 bytes a broadcast: a frame or two), so that most islands are left
// out most broadcasts. An island left out keeps the time of its own newest
// frame — shown extrapolated from it, then Stale (held, not valid at r)
// past the clock's extrapolation cap, its age in Stats.OldestIsland — and
// ViewReady is false exactly while some critical island is not valid at r.
func TestLeftOutGoesStale(t *testing.T) {
	l := newBudgetLoop(t, "ragdolls", broadcast.Config{})
	for range 5 { // the catch-up at no cap
		l.snapshot()
	}
	_ = l.bc.SetCap(1, 8)
	var stale, readyRenders, renders int
	for range 200 {
		l.snapshot()
		views := l.rx.Render(l.now)
		if len(views) == 0 {
			continue
		}
		renders++
		allValid, oldest, nStale := true, int64(0), 0
		for _, v := range views {
			allValid = allValid && v.ValidAtR
			oldest = max(oldest, v.Extrapolated)
			if v.Mode == store.Stale {
				nStale++
				if v.ValidAtR || v.SampleTime >= v.R || v.Extrapolated <= 100_000 {
					t.Fatalf("island %d stale: %+v", v.Island, v)
				}
			}
		}
		stale += nStale
		if l.rx.ViewReady() != allValid {
			t.Fatalf("ViewReady %v with every island valid %v", l.rx.ViewReady(), allValid)
		}
		if l.rx.ViewReady() {
			readyRenders++
		}
		if st := l.rx.Stats(); st.OldestIsland != oldest || st.StaleIslands != nStale {
			t.Fatalf("stats: oldest %d stale %d; views: %d, %d", st.OldestIsland, st.StaleIslands, oldest, nStale)
		}
	}
	bs := l.bc.Stats()
	t.Logf("%d frames left out of %d; %d stale island views in %d renders, %d renders ready", bs.Deferred, bs.Frames, stale, renders, readyRenders)
	if bs.Deferred < bs.Frames/2 || stale == 0 {
		t.Fatalf("the budget left out %d of %d frames and no island went stale", bs.Deferred, bs.Frames)
	}
}

// skipLongUnderRace skips a long single-goroutine scene test under the race
// detector. The receiver and the broadcaster start no goroutines, so such a
// test has no race to find; under -race it only takes minutes (TestBudgetStep
// alone took 139 s) of the package's ten. The plain go test runs it.
func skipLongUnderRace(t *testing.T, what string) {
	t.Helper()
	if raceEnabled {
		t.Skip(what + " on one goroutine: nothing for the race detector; go test without -race runs it")
	}
}
