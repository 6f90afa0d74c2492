package broadcast

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// aoiRig is a broadcaster with islands 1 … n of one member each and one
// observer subscribed to a region; each step places the islands and
// broadcasts.
type aoiRig struct {
	t   *testing.T
	b   *Broadcaster
	seq uint32
	n   int
}

func newAOIRig(t *testing.T, n int, cfg Config) *aoiRig {
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		live(t, b, uint32(i), ids(uint64(100*i), 1))
	}
	if err := b.Join(1, 0); err != nil {
		t.Fatal(err)
	}
	return &aoiRig{t: t, b: b, n: n}
}

// step broadcasts frames with island i at x[i-1] (y 0) and returns what the
// observer was sent: its control messages in order ("lease 2", "forget 1",
// …) and the islands its datagrams carry.
func (r *aoiRig) step(x ...float64) (ctl []string, islands []uint32) {
	r.seq++
	var frames []*island.Frame
	for i := 1; i <= r.n; i++ {
		f := frameOf(uint32(i), ids(uint64(100*i), 1), r.seq)
		f.Members[0].State.X = x[i-1]
		frames = append(frames, f)
	}
	r.b.Frames(frames)
	cb, dgs := r.b.Take(1, nil, nil)
	for _, m := range parseAll(r.t, cb) {
		switch m := m.(type) {
		case codec.Announce:
			ctl = append(ctl, fmt.Sprintf("announce %d", m.IDs[0].Stable/100))
		case codec.Lease:
			ctl = append(ctl, fmt.Sprintf("lease %d", m.Island))
		case codec.Manifest:
			ctl = append(ctl, fmt.Sprintf("manifest %d", m.Island))
		case codec.Forget:
			ctl = append(ctl, fmt.Sprintf("forget %d", m.Island))
		}
	}
	for _, d := range dgs {
		for _, isl := range d.Islands {
			if !slices.Contains(islands, isl) {
				islands = append(islands, isl)
			}
		}
	}
	slices.Sort(islands)
	return ctl, islands
}

// TestInterestEntersAndLeaves: an observer that subscribes to the region
// x 0…10 gets the catch-up of an island as it enters and before its first
// frame; one that drifts out by less than the margin (1 m) stays; one out
// by more gets its Forget only once it has been out for the grace (3
// broadcasts), with the broadcast after, and none at all when it comes back
// first; an island the token does not allow never
// enters.
func TestInterestEntersAndLeaves(t *testing.T) {
	r := newAOIRig(t, 3, Config{InterestMargin: 1, InterestGrace: 3})
	if err := r.b.Subscribe(1, codec.Subscribe{Regions: []codec.Region{{X0: 0, Y0: -5, X1: 10, Y1: 5}}}); err != nil {
		t.Fatal(err)
	}
	r.b.Take(1, nil, nil) // Welcome and the Announces
	expect := func(step string, ctl []string, islands []uint32, wantCtl string, wantIsl []uint32) {
		t.Helper()
		if got := strings.Join(ctl, ", "); got != wantCtl || !slices.Equal(islands, wantIsl) {
			t.Fatalf("%s: control [%s] islands %v, want [%s] %v", step, got, islands, wantCtl, wantIsl)
		}
	}
	ctl, isl := r.step(5, 50, 60)
	expect("island 1 inside", ctl, isl, "announce 1, lease 1, manifest 1", []uint32{1})
	ctl, isl = r.step(5, 9, 60)
	expect("island 2 enters", ctl, isl, "announce 2, lease 2, manifest 2", []uint32{1, 2})
	for range 5 { // longer than the grace
		ctl, isl = r.step(10.5, 9, 60)
		expect("island 1 within the margin", ctl, isl, "", []uint32{1, 2})
	}
	for i := range 3 {
		ctl, isl = r.step(5, 20, 60)
		expect(fmt.Sprintf("island 2 out, broadcast %d of the grace", i+1), ctl, isl, "", []uint32{1, 2})
		if i == 1 {
			ctl, isl = r.step(5, 9, 60) // back before the grace ran out
			expect("island 2 back", ctl, isl, "", []uint32{1, 2})
		}
	}
	for range 2 {
		ctl, isl = r.step(5, 20, 60)
		expect("island 2 out, the grace not yet over", ctl, isl, "", []uint32{1, 2})
	}
	ctl, isl = r.step(5, 20, 60)
	expect("island 2 forgotten", ctl, isl, "forget 2", []uint32{1})
	ctl, isl = r.step(5, 20, 60)
	expect("island 2 gone", ctl, isl, "", []uint32{1})
	if err := r.b.Restrict(1, []uint32{1, 2}); err != nil {
		t.Fatal(err)
	}
	ctl, isl = r.step(5, 5, 5)
	expect("island 3 not allowed", ctl, isl, "announce 2, lease 2, manifest 2", []uint32{1, 2})
	if bud, _ := r.b.Budget(1); bud.Interest != 2 {
		t.Fatalf("interest %d islands, want 2", bud.Interest)
	}
	// A new identity is not announced to it until an island in its
	// interest takes it in.
	born := island.MemberID{Stable: 101}
	if err := r.b.Apply(codec.Announce{IDs: []island.MemberID{born}}); err != nil {
		t.Fatal(err)
	}
	ctl, isl = r.step(5, 5, 5)
	expect("a new identity elsewhere", ctl, isl, "", []uint32{1, 2})
	if err := r.b.Apply(codec.Manifest{Island: 1, Topology: 2, Config: 1, Members: []island.MemberID{{Stable: 100}, born}}); err != nil {
		t.Fatal(err)
	}
	raw, _ := r.b.Take(1, nil, nil)
	var got []string
	for _, m := range parseAll(t, raw) {
		got = append(got, fmt.Sprintf("%s %v", m.Type(), m))
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "announce") || !strings.Contains(got[0], "101") || !strings.HasPrefix(got[1], "manifest") {
		t.Fatalf("a new manifest of an island in interest: %v", got)
	}
	// Back to a list: what it had and keeps stays without a catch-up.
	if err := r.b.Subscribe(1, codec.Subscribe{Islands: []uint32{2}}); err != nil {
		t.Fatal(err)
	}
	ctl, isl = r.step(5, 5, 5)
	expect("a list again", ctl, isl, "forget 1", []uint32{2})
}

// TestFocusFavoursTheCentre: under a budget that takes a few frames a
// broadcast, islands near the region's centre go far more often than those
// at its edge, and every island in the region still goes (at least once
// every 80 broadcasts here).
func TestFocusFavoursTheCentre(t *testing.T) {
	const n = 40
	r := newAOIRig(t, n, Config{SendPeriod: 50_000})
	if err := r.b.Subscribe(1, codec.Subscribe{Regions: []codec.Region{{X0: -100, Y0: -5, X1: 100, Y1: 5}}}); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i) * 2.5 // 0 … 97.5 m from the centre
	}
	r.step(x...)         // the catch-up and first frames at no cap
	_ = r.b.SetCap(1, 8) // 50 bytes a broadcast
	sent := make([]int, n+1)
	const rounds = 400
	for range rounds {
		_, isl := r.step(x...)
		for _, i := range isl {
			sent[i]++
		}
	}
	near, far := sent[1]+sent[2]+sent[3], sent[n-2]+sent[n-1]+sent[n]
	t.Logf("frames sent per island, centre outwards: %v", sent[1:])
	if near < 3*far {
		t.Fatalf("the three nearest islands went %d times, the three farthest %d", near, far)
	}
	for i := 1; i <= n; i++ {
		if sent[i] < rounds/80 {
			t.Fatalf("island %d went %d times in %d broadcasts", i, sent[i], rounds)
		}
	}
}

// TestCatchUpsPacedByBudget: under a budget, islands entering a region
// enter nearest its centre first, and their catch-ups take at most half of
// each broadcast's budget (and one island more); every island gets its
// catch-up before its first frame, and in the end every island in the
// region has entered. Without a budget all enter at once.
func TestCatchUpsPacedByBudget(t *testing.T) {
	const n = 12
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(n-i) * 3 // island 1 farthest from the centre (0), island n nearest
	}
	region := []codec.Region{{X0: -50, Y0: -5, X1: 50, Y1: 5}}

	free := newAOIRig(t, n, Config{SendPeriod: 50_000})
	_ = free.b.Subscribe(1, codec.Subscribe{Regions: region})
	free.b.Take(1, nil, nil)
	if ctl, _ := free.step(x...); len(ctl) != 3*n {
		t.Fatalf("no budget: %d control messages at once, want every island's catch-up (%d)", len(ctl), 3*n)
	}

	r := newAOIRig(t, n, Config{SendPeriod: 50_000, ObserverKbps: 8}) // 50 bytes a broadcast: less than one catch-up
	_ = r.b.Subscribe(1, codec.Subscribe{Regions: region})
	r.b.Take(1, nil, nil)
	budget := 8 * 1000 / 8 / 20
	var order []uint32
	entered := map[uint32]bool{}
	start := r.b.Stats()
	largest, rounds := 0, 0
	for round := 0; len(order) < n; round++ {
		rounds++
		if round > 10*n {
			t.Fatalf("after %d broadcasts only %v entered", round, order)
		}
		before := r.b.Stats().ControlBytes
		ctl, isl := r.step(x...)
		bytes := int(r.b.Stats().ControlBytes - before)
		var now []uint32
		for _, c := range ctl {
			var k uint32
			if _, err := fmt.Sscanf(c, "lease %d", &k); err == nil {
				now = append(now, k)
			}
		}
		if len(now) > 1 && bytes > budget/2+bytes/len(now) {
			t.Fatalf("broadcast %d: %d catch-ups in %d bytes, budget %d", round, len(now), bytes, budget)
		}
		for _, k := range now {
			entered[k] = true
			order = append(order, k)
		}
		if len(now) > 0 {
			largest = max(largest, bytes/len(now))
		}
		for _, k := range isl {
			if !entered[k] {
				t.Fatalf("island %d sent a frame before its catch-up", k)
			}
		}
	}
	// Catch-ups and frames together keep to the budget, but for one
	// catch-up or frame paid back after.
	end := r.b.Stats()
	if spent := int(end.Bytes - start.Bytes + end.ControlBytes - start.ControlBytes); spent > rounds*budget+largest {
		t.Fatalf("%d bytes in %d broadcasts of %d", spent, rounds, budget)
	}
	for i, k := range order {
		if want := uint32(n - i); k != want {
			t.Fatalf("entered in order %v, want the nearest first", order)
		}
	}
}
