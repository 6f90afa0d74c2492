package baseline

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

var (
	idA = island.MemberID{Stable: 1}
	idB = island.MemberID{Stable: 2}
)

const sec = island.Second

// packetFor codes next against base (nil: keyframe) in window gen.
func packetFor(base, next *Table, gen uint32) *Packet {
	p := &Packet{ID: next.ID, Window: gen, Keyframe: base == nil, Changes: Diff(nil, base, next), Digest: next.Digest()}
	if base != nil {
		p.Baseline = base.ID
	}
	return p
}

func table(id uint32, entries ...Entry) *Table { return &Table{ID: id, Entries: entries} }

func rec(x int64, t island.Time) Record { return Record{Q: quant.State{X: x}, Time: t} }

// TestDeltaAgainstDeclaredBaseline: baseline 42 holds A at 10000 and B at
// 11000, both observed at 1.00 s. Packet 43 (1.05 s) carries only A's new
// observation, +20: its table has A at 10020 observed at 1.05 and B still
// at 11000 observed at 1.00. Packet 44, coded against 42 with A at 1.10 s,
// restores 10040 — never 10060, which adding its +40 to 43 would give.
func TestDeltaAgainstDeclaredBaseline(t *testing.T) {
	r := NewReceiver(0)
	t42 := table(42, Entry{idA, rec(10000, sec)}, Entry{idB, rec(11000, sec)})
	if _, stored, err := r.Decode(packetFor(nil, t42, 0)); err != nil || !stored {
		t.Fatalf("keyframe 42: stored %v, %v", stored, err)
	}
	p43 := &Packet{ID: 43, Baseline: 42, Changes: []Change{{ID: idA, Kind: Delta, Mask: FieldX, Q: quant.State{X: 20}, Time: 1_050_000}}}
	want43 := table(43, Entry{idA, rec(10020, 1_050_000)}, Entry{idB, rec(11000, sec)})
	p43.Digest = want43.Digest()
	got43, _, err := r.Decode(p43)
	if err != nil || !reflect.DeepEqual(got43.Entries, want43.Entries) {
		t.Fatalf("43: %+v, %v", got43, err)
	}
	if b, _ := got43.Get(idB); b.Time != sec {
		t.Fatalf("B's observation time moved to %v without a new observation", b.Time)
	}
	p44 := &Packet{ID: 44, Baseline: 42, Changes: []Change{{ID: idA, Kind: Delta, Mask: FieldX, Q: quant.State{X: 40}, Time: 1_100_000}}}
	want44 := table(44, Entry{idA, rec(10040, 1_100_000)}, Entry{idB, rec(11000, sec)})
	p44.Digest = want44.Digest()
	got44, _, err := r.Decode(p44)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := got44.Get(idA); a.Q.X != 10040 {
		t.Fatalf("44 restored A at %d, want 10040", a.Q.X)
	}
	// The same changes with 43's digest, or a digest of 10060, are refused whole.
	bad := *p44
	bad.ID, bad.Digest = 45, table(45, Entry{idA, rec(10060, 1_100_000)}, Entry{idB, rec(11000, sec)}).Digest()
	if _, _, err := r.Decode(&bad); !errors.Is(err, ErrDigest) {
		t.Fatalf("a wrong digest: %v", err)
	}
}

// TestMissingBaselineAsksForKeyframe: a receiver holding only 40 rejects 43
// that references 42; the sender, told so, sends full state, and references
// 44 only once 44 is acknowledged.
func TestMissingBaselineAsksForKeyframe(t *testing.T) {
	r := NewReceiver(0)
	s := NewSender()
	t40 := table(40, Entry{idA, rec(9960, 900_000)})
	t42 := table(42, Entry{idA, rec(10000, sec)})
	t43 := table(43, Entry{idA, rec(10020, 1_050_000)})
	if _, stored, err := r.Decode(packetFor(nil, t40, 0)); err != nil || !stored {
		t.Fatal(err)
	}
	// The sender believes 42 was acknowledged (say the receiver lost it).
	s.Sent(t42)
	s.Ack(0, 42)
	base, ok := s.Baseline()
	if !ok || base.ID != 42 {
		t.Fatal("sender has no baseline")
	}
	if _, _, err := r.Decode(packetFor(base, t43, 0)); !errors.Is(err, ErrNoBaseline) {
		t.Fatalf("43 against a missing 42: %v", err)
	}
	s.KeyframeRequested()
	if _, ok := s.Baseline(); ok {
		t.Fatal("still referencing after a keyframe request")
	}
	t44 := table(44, Entry{idA, rec(10040, 1_100_000)})
	s.Sent(t44)
	if _, stored, err := r.Decode(packetFor(nil, t44, 0)); err != nil || !stored {
		t.Fatalf("keyframe 44: %v", err)
	}
	if _, ok := s.Baseline(); ok {
		t.Fatal("44 referenced before it was acknowledged")
	}
	s.Ack(0, 44)
	if base, ok := s.Baseline(); !ok || base.ID != 44 {
		t.Fatal("44 not used after its acknowledgement")
	}
}

// TestFullWindowAdvances: with all 32 slots full the window still advances
// to w+1 = {42} without a 33rd acknowledgement; packets of w+1 that arrive
// before the control wait for it; after it, old-window packets naming a
// released table are refused while those naming the kept anchor still
// decode; the control is deduplicated and never goes back.
func TestFullWindowAdvances(t *testing.T) {
	r := NewReceiver(0)
	s := NewSender()
	var tables []*Table
	for id := uint32(11); id <= 42; id++ {
		tb := table(id, Entry{idA, rec(int64(id), island.Time(id)*1000)})
		tables = append(tables, tb)
		base, _ := s.Baseline()
		p := packetFor(base, tb, s.Gen())
		s.Sent(tb)
		_, stored, err := r.Decode(p)
		if err != nil || !stored {
			t.Fatalf("table %d: stored %v, %v", id, stored, err)
		}
		s.Ack(r.Gen(), id)
	}
	if !r.Full() {
		t.Fatal("32 tables do not fill the window")
	}
	t43 := table(43, Entry{idA, rec(43, 43_000)})
	base, _ := s.Baseline()
	if tb, stored, err := r.Decode(packetFor(base, t43, 0)); err != nil || stored || tb == nil {
		t.Fatalf("43 in a full window: stored %v, %v (decoded, but never stored or acknowledged)", stored, err)
	}
	keep, ok := r.Anchor()
	if !ok || keep != 42 {
		t.Fatalf("anchor %d", keep)
	}
	ctl, ok := s.Advance(keep)
	if !ok || ctl.Gen != 1 || len(ctl.Keep) != 1 || ctl.Keep[0] != 42 {
		t.Fatalf("control %+v", ctl)
	}
	// A packet of window 1 overtakes the control: held, not guessed.
	t44 := table(44, Entry{idA, rec(44, 44_000)})
	early := packetFor(tables[len(tables)-1], t44, 1)
	if _, _, err := r.Decode(early); !errors.Is(err, ErrFutureWindow) {
		t.Fatalf("early packet: %v", err)
	}
	ready, err := r.Commit(ctl)
	if err != nil || r.Gen() != 1 || !reflect.DeepEqual(r.Held(), []uint32{42}) {
		t.Fatalf("commit: %v, gen %d, held %v", err, r.Gen(), r.Held())
	}
	if len(ready) != 1 || ready[0].ID != 44 {
		t.Fatalf("held packets %v", ready)
	}
	if _, stored, err := r.Decode(&ready[0]); err != nil || !stored {
		t.Fatalf("held 44 after the commit: %v", err)
	}
	s.Confirmed(1)
	if base, ok := s.Baseline(); !ok || base.ID != 42 || s.Gen() != 1 {
		t.Fatal("the sender does not code against the anchor in window 1")
	}
	if _, _, err := r.Decode(packetFor(tables[0], table(45, Entry{idA, rec(45, 45_000)}), 0)); !errors.Is(err, ErrOldWindow) {
		t.Fatalf("old-window packet naming a released table: %v", err)
	}
	if _, _, err := r.Decode(packetFor(tables[len(tables)-1], table(46, Entry{idA, rec(46, 46_000)}), 0)); err != nil {
		t.Fatalf("old-window packet naming the anchor: %v", err)
	}
	if ready, err := r.Commit(ctl); err != nil || ready != nil || r.Gen() != 1 {
		t.Fatal("a repeated control changed something")
	}
	if _, err := r.Commit(Control{Gen: 0, Keep: []uint32{11}}); err != nil || r.Gen() != 1 {
		t.Fatal("a stale control moved the window back")
	}
	if _, err := r.Commit(Control{Gen: 2, Keep: []uint32{13}}); !errors.Is(err, ErrMissingAnchor) || r.Gen() != 1 {
		t.Fatal("a control keeping a released table was applied")
	}
}

// TestDiffRoundTrip: random tables — moves, new bodies, new generations,
// teleports (segments), removals — coded with Diff restore exactly.
func TestDiffRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	r := NewReceiver(0)
	prev := &Table{ID: 1}
	for i := 0; i < 60; i++ {
		prev.Entries = append(prev.Entries, Entry{ID: island.MemberID{Stable: uint64(i * 2)}, Record: rec(int64(i), 0)})
	}
	if _, _, err := r.Decode(packetFor(nil, prev, 0)); err != nil {
		t.Fatal(err)
	}
	for id := uint32(2); id < 30; id++ {
		next := &Table{ID: id}
		for _, e := range prev.Entries {
			switch rnd.IntN(10) {
			case 0: // removed
				continue
			case 1: // a new generation replaces it
				e.ID.Generation++
				e.Record = rec(rnd.Int64N(1000), island.Time(id)*1000)
			case 2: // teleported
				e.Segment++
				e.Q.X += 100000
				e.Time = island.Time(id) * 1000
			case 3, 4, 5: // moved
				e.Q.X += rnd.Int64N(40) - 20
				e.Q.VY = rnd.Int64N(5)
				e.Time = island.Time(id) * 1000
			}
			next.Entries = append(next.Entries, e)
		}
		next.Entries = append(next.Entries, Entry{ID: island.MemberID{Stable: uint64(1000 + id)}, Record: rec(5, island.Time(id)*1000)})
		p := packetFor(prev, next, r.Gen())
		for _, c := range p.Changes {
			// An empty mask is a new observation of unchanged values: it
			// must carry a new time, or the body should have been left out.
			if b, _ := prev.Get(c.ID); c.Kind == Delta && c.Mask == 0 && c.Time == b.Time {
				t.Fatal("an unchanged record was sent")
			}
		}
		got, _, err := r.Decode(p)
		if err != nil || !reflect.DeepEqual(got.Entries, next.Entries) {
			t.Fatalf("table %d: %v", id, err)
		}
		if len(r.Held()) > 8 { // keep the test's window roomy
			keep, _ := r.Anchor()
			if _, err := r.Commit(Control{Gen: r.Gen() + 1, Keep: []uint32{keep}}); err != nil {
				t.Fatal(err)
			}
		}
		prev = got
	}
}

// TestMalformedIsWhole: bad change lists are refused whole; nothing stored.
func TestMalformedIsWhole(t *testing.T) {
	r := NewReceiver(2)
	base := table(1, Entry{idA, rec(1, 0)})
	if _, _, err := r.Decode(packetFor(nil, base, 0)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]*Packet{
		"delta for an unknown body": {ID: 2, Baseline: 1, Changes: []Change{{ID: idB, Kind: Delta, Mask: FieldX}}},
		"delta across segments":     {ID: 3, Baseline: 1, Changes: []Change{{ID: idA, Kind: Delta, Mask: FieldX, Segment: 1}}},
		"unordered":                 {ID: 4, Baseline: 1, Changes: []Change{{ID: idB, Kind: Full}, {ID: idA, Kind: Full}}},
		"repeated":                  {ID: 5, Baseline: 1, Changes: []Change{{ID: idA, Kind: Full}, {ID: idA, Kind: Full}}},
		"delta in a keyframe":       {ID: 6, Keyframe: true, Changes: []Change{{ID: idA, Kind: Delta, Mask: FieldX}}},
		"unknown mask bits":         {ID: 7, Baseline: 1, Changes: []Change{{ID: idA, Kind: Delta, Mask: 0x80}}},
		"over the body cap":         {ID: 8, Baseline: 1, Changes: []Change{{ID: idB, Kind: Full}, {ID: island.MemberID{Stable: 3}, Kind: Full}}},
	}
	for name, p := range cases {
		if _, stored, err := r.Decode(p); err == nil || stored {
			t.Errorf("%s: accepted", name)
		}
	}
	if held := r.Held(); len(held) != 1 {
		t.Fatalf("held %v after refusals", held)
	}
}

// TestAckHeldIsAcks: in seeded random runs of sends, held reports,
// keyframe requests and window advances, a sender fed AckHeld holds exactly
// the acknowledgements of one fed Ack for newest and then each prior bit,
// newest first — including when the window's slots run out mid-report —
// and picks the same baseline.
func TestAckHeldIsAcks(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 9))
		one, each := NewSender(), NewSender()
		next := rng.Uint32() // sequence numbers wrap
		for step := range 400 {
			switch op := rng.IntN(10); {
			case op < 5:
				tb := table(next)
				next += 1 + uint32(rng.IntN(2))
				one.Sent(tb)
				each.Sent(tb)
			case op < 8:
				gen := one.Gen()
				if rng.IntN(8) == 0 {
					gen++
				}
				newest := next - 1 - uint32(rng.IntN(40))
				prior := rng.Uint32()
				if rng.IntN(2) == 0 {
					prior = ^uint32(0) >> rng.IntN(33)
				}
				one.AckHeld(gen, newest, prior)
				each.Ack(gen, newest)
				for i := range uint32(32) {
					if prior&(1<<i) != 0 {
						each.Ack(gen, newest-1-i)
					}
				}
			case op < 9:
				one.KeyframeRequested()
				each.KeyframeRequested()
			default:
				if g, ok := one.Advancing(); ok {
					one.Confirmed(g)
					each.Confirmed(g)
				} else if n, newest := one.Acked(); n > 0 {
					one.Advance(newest)
					each.Advance(newest)
				}
			}
			if !slices.Equal(one.acked, each.acked) || one.Gen() != each.Gen() {
				t.Fatalf("seed %d step %d: AckHeld holds %v, Ack %v", seed, step, ids(one.acked), ids(each.acked))
			}
			b1, ok1 := one.Baseline()
			b2, ok2 := each.Baseline()
			if b1 != b2 || ok1 != ok2 {
				t.Fatalf("seed %d step %d: baselines differ", seed, step)
			}
		}
	}
}

func ids(ts []*Table) []uint32 {
	var out []uint32
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}
