package broadcast

import (
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// simulate runs the scheduler alone over a world of islands with the given
// importances and frame sizes (every island has a frame every broadcast,
// and each frame costs exactly its estimate) for rounds broadcasts under
// budget bytes each, and returns every island's longest wait between
// frames sent, in broadcasts, with the bytes of each broadcast.
func simulate(imp []float64, size []int, budget, rounds int) (wait []int, sent []int) {
	n := len(imp)
	prio := make([]float64, n)
	last := make([]int, n) // broadcast of the last frame sent; 0: before the first
	wait = make([]int, n)
	var k bucket
	cs := make([]cand, 0, n)
	for r := 1; r <= rounds; r++ {
		k.refill(budget)
		cs = cs[:0]
		for i := range n {
			prio[i] += imp[i]
			cs = append(cs, cand{prio: prio[i], size: size[i], isl: uint32(i), i: i})
		}
		picked, _ := k.plan(cs)
		bytes := 0
		for _, c := range cs[:picked] {
			prio[c.i] = 0
			wait[c.i] = max(wait[c.i], r-last[c.i])
			last[c.i] = r
			bytes += c.size
		}
		k.spend(bytes, 0)
		sent = append(sent, bytes)
	}
	for i := range n {
		wait[i] = max(wait[i], rounds+1-last[i])
	}
	return wait, sent
}

// TestStarvationBound: on seeded random worlds — up to 300 islands,
// importances from 1 to 64, frames from 4 bytes to twice the budget — no
// island waits longer than 2·⌈S/B⌉·(N + W/w) broadcasts between frames
// (the bound the scheduler's doc states), and the bytes of any run of
// broadcasts stay within the budget's sum plus one largest frame.
func TestStarvationBound(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(300)
		budget := 16 + rng.IntN(4000)
		imp, size := make([]float64, n), make([]int, n)
		var w float64
		smax := 0
		for i := range n {
			imp[i] = 1 + 63*rng.Float64()*rng.Float64()
			size[i] = 4 + rng.IntN(2*budget)
			if rng.IntN(4) > 0 {
				size[i] = 4 + rng.IntN(max(budget/8, 1)) // most frames are small
			}
			w += imp[i]
			smax = max(smax, size[i])
		}
		rounds := 2000
		wait, sent := simulate(imp, size, budget, rounds)
		spans := float64((smax + budget - 1) / budget)
		for i := range n {
			bound := 2 * spans * (float64(n) + w/imp[i])
			if float64(wait[i]) > bound {
				t.Fatalf("seed %d: island %d (importance %.1f, %d bytes) waited %d broadcasts, bound %.0f (N %d, W %.0f, S %d, B %d)",
					seed, i, imp[i], size[i], wait[i], bound, n, w, smax, budget)
			}
		}
		for span := 1; span <= 40; span *= 2 {
			sum := 0
			for r := range sent {
				sum += sent[r]
				if r >= span {
					sum -= sent[r-span]
				}
				if sum > span*budget+smax {
					t.Fatalf("seed %d: %d bytes over %d broadcasts of budget %d (largest frame %d)", seed, sum, span, budget, smax)
				}
			}
		}
	}
}

// TestImportanceShares: under a budget that takes a quarter of the frames,
// a more important island is sent at least as often as a less important
// one, and an island of importance k at least 0.6·k times as often as one
// of importance 1 (accumulation sends in whole broadcasts, so shares are
// near, not exactly, proportional).
func TestImportanceShares(t *testing.T) {
	imp := []float64{1, 1, 2, 4, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	const rounds = 4000
	var prio [16]float64
	var k bucket
	count := make([]int, len(imp))
	for range rounds {
		k.refill(400) // four frames of sixteen
		cs := make([]cand, 0, len(imp))
		for i := range imp {
			prio[i] += imp[i]
			cs = append(cs, cand{prio: prio[i], size: 100, isl: uint32(i), i: i})
		}
		n, _ := k.plan(cs)
		for _, c := range cs[:n] {
			prio[c.i] = 0
			count[c.i]++
		}
		k.spend(100*n, 0)
	}
	t.Logf("importances %v: sent %v", imp, count)
	for i := range imp {
		for j := range imp {
			if imp[i] < imp[j] && count[i] > count[j] {
				t.Errorf("island %d (importance %.0f) sent %d times, island %d (importance %.0f) %d", i, imp[i], count[i], j, imp[j], count[j])
			}
		}
		if float64(count[i]) < 0.6*imp[i]*float64(count[0]) {
			t.Errorf("island %d (importance %.0f) sent %d times, an island of importance 1 %d", i, imp[i], count[i], count[0])
		}
	}
}

// TestParityFitsBudget: a 1,500-body frame cut into fragments goes with
// as many parity records as what its data leaves of the budget pays for —
// both with room for both, one with room for one, none with room for
// none — and the frame itself goes every broadcast all along. After the
// budget left a frame out, no parity goes for a second (20 broadcasts)
// even once the budget has room again.
func TestParityFitsBudget(t *testing.T) {
	dec, _ := codec.NewDecoder(codec.Config{})
	bc, chain := chainObserver(t, Config{ObserverKbps: 100_000, KeyframeEvery: 1000})
	seq := uint32(0)
	// send broadcasts one frame and returns its parity records, the
	// frames the budget left out, and the bytes of data and of one parity
	// record.
	send := func() (parity, deferred, data, one int) {
		seq++
		f := frameOf(1, chain, seq)
		for i := range f.Members {
			f.Members[i].State.Y = float64(min(seq-1, 1)*uint32(i%7)) * 0.01 // moved once: every delta costs the same
		}
		bc.Frames([]*island.Frame{f})
		_, dgs := bc.Take(1, nil, nil)
		for _, d := range dgs {
			if _, recs, err := dec.Decode(d.Bytes); err != nil {
				t.Fatal(err)
			} else if len(recs) > 0 && recs[0].Kind == codec.KindParity {
				parity++
				one = max(one, len(d.Bytes))
			} else {
				data += len(d.Bytes)
			}
		}
		bud, _ := bc.Budget(1)
		return parity, bud.Deferred, data, one
	}
	kbps := func(bytes int) int { return bytes * 8 * 20 / 1000 } // per broadcast at 20 Hz
	var data, one int
	for range 4 {
		p, l, d, o := send()
		if p != DefaultParity || l != 0 {
			t.Fatalf("room: %d parity records, %d frames left out", p, l)
		}
		data, one = d, o // the first is a keyframe; the last a delta like those to come
	}
	for _, c := range []struct {
		budget, parity int
	}{
		{data + 3*one, DefaultParity},
		{data + 3*one/2, 1},
		{data + one/3, 0},
	} {
		_ = bc.SetCap(1, kbps(c.budget))
		for i := range 12 {
			p, l, _, _ := send()
			if l != 0 {
				t.Fatalf("budget %d bytes (data %d, a parity record %d): broadcast %d left %d frames out", c.budget, data, one, i, l)
			}
			if i >= 2 && p != c.parity { // two to learn what frames cost
				t.Fatalf("budget %d bytes (data %d, a parity record %d): broadcast %d carried %d parity records; want %d", c.budget, data, one, i, p, c.parity)
			}
		}
	}
	_ = bc.SetCap(1, kbps(data*6/10))
	first := -1
	for i := range 10 {
		if _, l, _, _ := send(); l > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("the budget never left a frame out")
	}
	_ = bc.SetCap(1, kbps(data+3*one))
	for i := range shortFor - 1 {
		if p, _, _, _ := send(); p != 0 {
			t.Fatalf("broadcast %d after a frame was left out: %d parity records", i+1, p)
		}
	}
	back := false
	for range 4 {
		if p, _, _, _ := send(); p == DefaultParity {
			back = true
		}
	}
	if !back {
		t.Fatal("parity did not come back a second after the budget was short")
	}
}

// TestParityCutUnderBudget: under a budget, a frame of several members
// that fits one datagram but fills a quarter of it or more is cut into two
// fragments and sent with its parity records when the budget has room,
// and goes whole, in one datagram without parity, when it has room for
// the frame alone. The frame itself goes every broadcast all along.
func TestParityCutUnderBudget(t *testing.T) {
	dec, _ := codec.NewDecoder(codec.Config{})
	bc, err := New(Config{ObserverKbps: 100_000, KeyframeEvery: 1000})
	if err != nil {
		t.Fatal(err)
	}
	members := ids(1, 200)
	live(t, bc, 1, members)
	subscribeAll(t, bc, 1)
	seq := uint32(0)
	// send broadcasts one frame and returns its data fragments, its
	// parity records, the frames the budget left out and the bytes sent.
	send := func() (frags, parity, deferred, bytes int) {
		seq++
		f := frameOf(1, members, seq)
		for i := range f.Members {
			f.Members[i].State.Y = float64((seq*uint32(i+1)*2654435761)>>19) * 0.001 // about the same bytes each broadcast
		}
		bc.Frames([]*island.Frame{f})
		_, dgs := bc.Take(1, nil, nil)
		frags, parity = fragments(t, dec, dgs)
		for _, d := range dgs {
			bytes += len(d.Bytes)
		}
		bud, _ := bc.Budget(1)
		return frags, parity, bud.Deferred, bytes
	}
	kbps := func(bytes int) int { return bytes * 8 * 20 / 1000 } // per broadcast at 20 Hz
	var cut int
	for i := range 6 {
		f, p, l, n := send()
		if i >= 2 && (f != 2 || p != DefaultParity || l != 0) { // two to learn what frames cost
			t.Fatalf("room, broadcast %d: %d fragments, %d parity records, %d frames left out (%d bytes); want 2, %d, 0", i, f, p, l, n, DefaultParity)
		}
		cut = n
	}
	// Room for the frame alone (TestParityFitsCut draws the line).
	budget := cut * 6 / 10
	_ = bc.SetCap(1, kbps(budget))
	for i := range 12 {
		f, p, l, n := send()
		if l != 0 {
			t.Fatalf("budget %d bytes (cut and protected %d): broadcast %d left %d frames out", budget, cut, i, l)
		}
		if i >= 2 && (f != 0 || p != 0) { // two to learn what frames cost
			t.Fatalf("budget %d bytes (cut and protected %d): broadcast %d sent %d fragments and %d parity records (%d bytes); want the frame whole", budget, cut, i, f, p, n)
		}
	}
	_ = bc.SetCap(1, kbps(cut*3))
	for i := range 6 {
		if f, p, _, _ := send(); i >= 2 && (f != 2 || p != DefaultParity) {
			t.Fatalf("room again, broadcast %d: %d fragments, %d parity records", i, f, p)
		}
	}
}

// TestParityFitsCut: frames that fit a datagram are cut for parity only
// when what the frames leave pays for their records twice over — after
// the records of the frames that are fragmented anyway — and only frames
// of several members filling a quarter of a datagram or more are cut.
func TestParityFitsCut(t *testing.T) {
	const dg = 1200
	rec := 300 + 2*codec.HeaderSize // one record of a 600-byte frame cut in two
	chain := cand{size: 600, n: 50}
	big := cand{size: 2000, n: 200} // two fragments of 1000 bytes anyway
	for _, c := range []struct {
		name   string
		cs     []cand
		spare  int
		want   int
		parity int
		cut    bool
	}{
		{"room for the records twice", []cand{chain}, 2 * 2 * rec, 2, 2, true},
		{"a byte short of twice", []cand{chain}, 2*2*rec - 1, 2, 2, false},
		{"room for the records once", []cand{chain}, 2 * rec, 2, 2, false},
		{"one record wanted", []cand{chain}, 2 * rec, 1, 1, true},
		{"no parity wanted", []cand{chain}, 1 << 20, 0, 0, false},
		{"one member", []cand{{size: 600, n: 1}}, 1 << 20, 2, 2, false},
		{"under a quarter of a datagram", []cand{{size: dg/codec.ParityCut - 1, n: 50}}, 1 << 20, 2, 2, false},
		{"a fragmented frame's records first", []cand{big, chain}, 2*1000 + 2*2*rec, 2, 2, true},
		{"a fragmented frame's records leave too little", []cand{big, chain}, 2*1000 + 2*2*rec - 1, 2, 2, false},
		{"room for one record of the fragmented frame only", []cand{big, chain}, 1000 + 2*rec, 2, 1, true},
	} {
		var k bucket
		p, cut := k.parityFits(c.cs, c.spare, c.want, dg)
		if p != c.parity || cut != c.cut {
			t.Errorf("%s: %d records, cut %v; want %d, %v", c.name, p, cut, c.parity, c.cut)
		}
	}
}

// TestOweChargesBudget: bytes owed for what the caller sent besides Take's
// output come off the next broadcast's budget first — a budget owed whole
// leaves that broadcast's frame out — and nothing more.
func TestOweChargesBudget(t *testing.T) {
	bc, err := New(Config{ObserverKbps: 100_000, KeyframeEvery: 1000})
	if err != nil {
		t.Fatal(err)
	}
	members := ids(1, 20)
	live(t, bc, 1, members)
	subscribeAll(t, bc, 1)
	seq := uint32(0)
	send := func() ObserverBudget {
		seq++
		bc.Frames([]*island.Frame{frameOf(1, members, seq)})
		_, _ = bc.Take(1, nil, nil)
		bud, _ := bc.Budget(1)
		return bud
	}
	for i := range 4 {
		if bud := send(); bud.Deferred != 0 || bud.Sent == 0 {
			t.Fatalf("broadcast %d: %+v", i, bud)
		}
	}
	_ = bc.SetCap(1, 200) // 1250 bytes a broadcast at 20 Hz: room for the frame
	for i := range 3 {
		if bud := send(); bud.Deferred != 0 {
			t.Fatalf("capped, broadcast %d: %+v", i, bud)
		}
	}
	bud, _ := bc.Budget(1)
	if err := bc.Owe(1, bud.Budget); err != nil {
		t.Fatal(err)
	}
	if got := send(); got.Deferred != 1 || got.Sent != 0 {
		t.Fatalf("after owing a whole budget: %+v, want the frame left out", got)
	}
	if got := send(); got.Deferred != 0 {
		t.Fatalf("the broadcast after: %+v", got)
	}
	if err := bc.Owe(9, 1); err != ErrNoObserver {
		t.Fatalf("unknown observer: %v", err)
	}
	if err := bc.Owe(1, -1); err != ErrBadMessage {
		t.Fatalf("negative: %v", err)
	}
}
