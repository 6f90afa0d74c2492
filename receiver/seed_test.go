package receiver

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/stamp"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/validator"
)

// The design notes' worked example of decoding against a declared baseline,
// on the path users run: island A (one body) and island B (one body), in
// quantized position units of 1/512 m.
const (
	seedA, seedB, seedC = 1, 2, 3
	posUnit             = 1.0 / 512
)

// seedRig is an authority's Broadcaster and one observer's Receiver, with
// the control stream delivered at once and the observer's feedback
// delivered only when the test says so.
type seedRig struct {
	t  *testing.T
	bc *broadcast.Broadcaster
	rx *Receiver
	// dgs holds the datagrams of each broadcast to observer 1, by sequence.
	dgs map[uint32][][]byte
	// initial marks islands whose next frame is their first: Initial.
	initial map[uint32]bool
	// topo and gen give an island's topology (0: 1) and its member's
	// generation in the frames built from now on.
	topo, gen map[uint32]uint32
	now       int64
	seq       uint32
}

func newSeedRig(t *testing.T) *seedRig {
	return newSeedRigConfig(t, broadcast.Config{Timeline: 5, KeyframeEvery: 1000})
}

// newSeedRigConfig is newSeedRig with the broadcaster's configuration.
func newSeedRigConfig(t *testing.T, cfg broadcast.Config) *seedRig {
	bc, err := broadcast.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rx, _ := New(Config{})
	r := &seedRig{t: t, bc: bc, rx: rx, dgs: map[uint32][][]byte{}, initial: map[uint32]bool{},
		topo: map[uint32]uint32{}, gen: map[uint32]uint32{}}
	var members []island.MemberID
	for _, isl := range []uint32{seedA, seedB, seedC} {
		members = append(members, island.MemberID{Stable: uint64(100 + isl)})
	}
	if err := bc.Apply(codec.Announce{IDs: members}); err != nil {
		t.Fatal(err)
	}
	for i, isl := range []uint32{seedA, seedB, seedC} {
		for _, m := range []codec.Message{codec.Lease{Island: isl, Epoch: 1, Owner: 1},
			codec.Manifest{Island: isl, Topology: 1, Config: 1, Members: members[i : i+1]}} {
			if err := bc.Apply(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = bc.Join(1, 0)
	_ = bc.Subscribe(1, codec.Subscribe{All: true})
	return r
}

// broadcast sends one broadcast at authority time at (µs) carrying the
// islands in xs (island → x in position units), delivers its control and
// datagrams to the receiver, and returns the receiver's feedback, not yet
// delivered.
func (r *seedRig) broadcast(at island.Time, xs map[uint32]int64) []byte {
	r.t.Helper()
	for _, d := range r.withhold(at, xs) {
		r.dgs[r.seq] = append(r.dgs[r.seq], d)
		r.rx.Datagram(r.now, d)
	}
	return r.rx.Feedback(nil)
}

// withhold is broadcast with the datagrams kept back: the control stream
// is delivered, the datagrams are returned for the test to deliver later.
func (r *seedRig) withhold(at island.Time, xs map[uint32]int64) [][]byte {
	r.t.Helper()
	r.seq++
	var frames []*island.Frame
	for _, isl := range slices.Sorted(maps.Keys(xs)) {
		f := &island.Frame{Sender: 1, Key: island.Key{Island: isl, Epoch: 1, Topology: max(r.topo[isl], 1), Config: 1, Seq: r.seq},
			Time: at, Members: []island.Member{{ID: island.MemberID{Stable: uint64(100 + isl), Generation: r.gen[isl]}, State: island.State{X: float64(xs[isl]) * posUnit}}}}
		if r.initial[isl] {
			f.Flags, r.initial[isl] = island.FlagInitial, false
		}
		frames = append(frames, f)
	}
	r.bc.Frames(frames)
	ctl, dgs := r.bc.Take(1, nil, nil)
	r.now += 50_000
	if _, err := r.rx.ControlBytes(r.now, ctl); err != nil {
		r.t.Fatal(err)
	}
	var out [][]byte
	for _, d := range dgs {
		out = append(out, append([]byte(nil), d.Bytes...))
	}
	return out
}

func (r *seedRig) feedBack(fb []byte) {
	r.t.Helper()
	if _, err := r.bc.FeedbackBytes(1, fb); err != nil {
		r.t.Fatal(err)
	}
}

// record returns the record of island isl in broadcast seq's datagrams.
func (r *seedRig) record(seq, isl uint32) codec.Record {
	r.t.Helper()
	dec, _ := codec.NewDecoder(codec.Config{})
	for _, d := range r.dgs[seq] {
		_, recs, err := dec.Decode(d)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Island == isl || (rec.Kind == codec.KindRun && rec.Island <= isl && isl < rec.Island+rec.Count) {
				return rec
			}
		}
	}
	r.t.Fatalf("broadcast %d carries no record of island %d", seq, isl)
	return codec.Record{}
}

// held returns the x the receiver holds for island isl in its baseline of
// broadcast seq, and that baseline's authority time.
func (r *seedRig) held(isl, seq uint32) (int64, island.Time, bool) {
	s := r.rx.islandOf(isl)
	if s == nil {
		return 0, 0, false
	}
	t := s.kept.Find(seq)
	if t == nil {
		return 0, 0, false
	}
	return t.Entries[0].Q.X, t.Frame.Time, true
}

// seedDeclaredBaseline is the design notes' integer example. Baseline
// 42 has A at 10000 and B at 11000, both observed at 1.00 s. Packet 43, at
// 1.05 s, carries only A, 20 further on. Packet 44, at 1.10 s, is coded
// against 42 as well — the authority has no confirmation of 43 — so A's
// residual is 40 and A restores to 10040, not 10060 (43 plus 40). B, left
// out of 43 and 44, keeps its observation at 1.00 s.
func seedDeclaredBaseline(t *testing.T) {
	r := newSeedRig(t)
	// Broadcasts 1 … 41 carry island C alone; A and B start at 40.
	for r.seq < 39 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedC: 500}))
	}
	r.feedBack(r.broadcast(975_000, map[uint32]int64{seedA: 9990, seedB: 11000, seedC: 500})) // 40
	r.feedBack(r.broadcast(987_500, map[uint32]int64{seedA: 9995, seedB: 11000, seedC: 500})) // 41
	r.feedBack(r.broadcast(1_000_000, map[uint32]int64{seedA: 10000, seedB: 11000}))          // 42: confirmed
	fb43 := r.broadcast(1_050_000, map[uint32]int64{seedA: 10020})                            // 43: its confirmation is lost
	_ = fb43
	r.feedBack(r.broadcast(1_100_000, map[uint32]int64{seedA: 10040})) // 44

	if r.seq != 44 {
		t.Fatalf("the example ran to broadcast %d", r.seq)
	}
	rec43, rec44 := r.record(43, seedA), r.record(44, seedA)
	if rec43.Kind != codec.KindDelta || rec43.Lag != 1 || rec44.Kind != codec.KindDelta || rec44.Lag != 2 {
		t.Fatalf("43: kind %v lag %d; 44: kind %v lag %d — both must be deltas against 42", rec43.Kind, rec43.Lag, rec44.Kind, rec44.Lag)
	}
	if x, at, ok := r.held(seedA, 43); !ok || x != 10020 || at != 1_050_000 {
		t.Fatalf("A in 43: %d at %d (%v), want 10020 at 1.05 s", x, at, ok)
	}
	if x, at, ok := r.held(seedA, 44); !ok || x != 10040 || at != 1_100_000 {
		t.Fatalf("A in 44: %d at %d (%v), want 10040 at 1.10 s", x, at, ok)
	}
	// The same residual against 43 would have made 10060: the receiver
	// restored 44 from the baseline the record named.
	base43 := r.rx.islandOf(seedA).kept.Find(43)
	if ents, err := rec44.ExpandDelta(nil, base43, nil, 1_100_000); err != nil || ents[0].Q.X != 10060 {
		t.Fatalf("44's residual against 43: %v %v", ents, err)
	}
	if b := r.rx.islandOf(seedB).kept.Newest(); b == nil || b.ID != 42 || b.Frame.Time != 1_000_000 || b.Entries[0].Q.X != 11000 {
		t.Fatalf("B's newest frame: %+v, want 42 at 1.00 s, x 11000", b)
	}
	if st := r.rx.Stats(); st.Wire.NoBaseline != 0 || st.Wire.Digest != 0 || st.Wire.Refused != 0 {
		t.Fatalf("v2 stats %+v", st.Wire)
	}
}

// seedMissingBaseline: a receiver that holds only 40 refuses 43, coded
// against 42, whole — nothing of A commits from it — and asks for A whole.
// Once the whole frame 44 is held and confirmed, the authority codes 45
// against 44.
func seedMissingBaseline(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 39 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedC: 500}))
	}
	r.feedBack(r.broadcast(975_000, map[uint32]int64{seedA: 9990}))    // 40
	r.feedBack(r.broadcast(987_500, map[uint32]int64{seedA: 9995}))    // 41
	r.feedBack(r.broadcast(1_000_000, map[uint32]int64{seedA: 10000})) // 42
	r.broadcast(1_050_000, map[uint32]int64{seedA: 10020})             // 43, against 42

	// A second observer's receiver, in the same state as the first at 40
	// but missing 41 and 42, is handed 43.
	lone, _ := New(Config{})
	ctl, _ := newSeedRig(t).bc.Take(1, nil, nil) // the same catch-up: Welcome, identities, leases, manifests
	if _, err := lone.ControlBytes(0, ctl); err != nil {
		t.Fatal(err)
	}
	for seq := uint32(1); seq <= 40; seq++ {
		for _, d := range r.dgs[seq] {
			lone.Datagram(int64(seq)*50_000, d)
		}
	}
	_ = lone.Feedback(nil)
	before := lone.Stats()
	for _, d := range r.dgs[43] {
		lone.Datagram(43*50_000, d)
	}
	after := lone.Stats()
	if after.Wire.NoBaseline != before.Wire.NoBaseline+1 || after.Wire.Unverified != before.Wire.Unverified+1 ||
		after.FramesCommitted != before.FramesCommitted {
		t.Fatalf("43 against 42 at a receiver holding only 40: no-baseline %d → %d, committed %d → %d",
			before.Wire.NoBaseline, after.Wire.NoBaseline, before.FramesCommitted, after.FramesCommitted)
	}
	if s := lone.islandOf(seedA); s.kept.Find(43) != nil || s.kept.Newest().ID != 40 {
		t.Fatalf("the refused frame was kept: newest %d", s.kept.Newest().ID)
	}
	lim := codec.ControlLimits{}.WithDefaults()
	fb := lone.Feedback(nil)
	m, n, err := codec.ParseControl(fb, &lim)
	if k, ok := m.(codec.Keyframes); err != nil || !ok || len(k.Islands) != 1 || k.Islands[0] != seedA {
		t.Fatalf("the receiver's feedback after refusing: %#v %v, want Keyframes [A] first", m, err)
	}
	if n != len(fb) {
		t.Fatal("the datagram of 43, which restored nothing, was confirmed")
	}

	// The first observer asks the same: 44 goes whole, and once confirmed
	// 45 is a delta against it.
	r.feedBack(codec.Keyframes{Islands: []uint32{seedA}}.Append(nil))
	r.feedBack(r.broadcast(1_100_000, map[uint32]int64{seedA: 10040})) // 44
	r.feedBack(r.broadcast(1_150_000, map[uint32]int64{seedA: 10060})) // 45
	if rec := r.record(44, seedA); rec.Kind != codec.KindKey {
		t.Fatalf("44 after the request: kind %v", rec.Kind)
	}
	if rec := r.record(45, seedA); rec.Kind != codec.KindDelta || rec.Lag != 1 {
		t.Fatalf("45: kind %v lag %d, want a delta against 44", rec.Kind, rec.Lag)
	}
}

// seedWindowKeepsAnchor: the window counts broadcasts, not islands. A
// receiver keeps an island's frames of the last 32 broadcasts and always
// its newest one, the anchor: island B, quiet after 42 while A moves on,
// is held as {42} alone once 42 is 32 broadcasts old (and the receiver has
// visited it, within 8 broadcasts) — every other frame of it let go
// without a control message — and when B moves again, 48 broadcasts
// later, the authority codes it against 42 and the receiver restores it.
func seedWindowKeepsAnchor(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 41 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedA: 9000 + int64(r.seq), seedB: 11000 - int64(r.seq)}))
	}
	r.feedBack(r.broadcast(1_050_000, map[uint32]int64{seedA: 10000, seedB: 11000})) // 42
	if n := r.rx.islandOf(seedB).kept.Len(); n < 20 {
		t.Fatalf("B holds %d baselines before going quiet", n)
	}
	for r.seq < 89 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedA: 10000 + int64(r.seq)}))
	}
	// 42 + 32 + 8: every frame of B before 42 is out of the window, and B
	// was visited since.
	if s := r.rx.islandOf(seedB); s.kept.Len() != 1 || s.kept.Newest().ID != 42 {
		t.Fatalf("at %d B holds %d baselines, newest %d; want {42}", r.seq, s.kept.Len(), s.kept.Newest().ID)
	}
	if ctl, _ := r.bc.Take(1, nil, nil); len(ctl) != 0 {
		t.Fatalf("the window moved with %d control bytes", len(ctl))
	}
	r.feedBack(r.broadcast(90*25_000, map[uint32]int64{seedA: 10100, seedB: 11050})) // 90
	rec := r.record(90, seedB)
	if rec.Kind != codec.KindDelta || rec.Lag != 48 {
		t.Fatalf("B at 90: kind %v lag %d, want a delta against 42", rec.Kind, rec.Lag)
	}
	if x, _, ok := r.held(seedB, 90); !ok || x != 11050 {
		t.Fatalf("B at 90 restored to %d (%v)", x, ok)
	}
	if st := r.rx.Stats(); st.Wire.NoBaseline != 0 || st.Wire.Refused != 0 {
		t.Fatalf("v2 stats %+v", st.Wire)
	}
}

// TestForgedBaselineNeverCommits: a receiver whose baseline differs from
// the authority's — here forged in place: A's and B's frames of 42 moved —
// restores 43 (a delta of A and a run of B, both against 42) to something
// the authority never sampled. The datagram's sum tells: neither frame
// commits, neither is kept, the datagram is not confirmed, and both
// islands are asked for whole. The same holds for a datagram whose
// residual was rewritten and its byte check recomputed.
func TestForgedBaselineNeverCommits(t *testing.T) {
	for _, forge := range []string{"baseline", "residual"} {
		t.Run(forge, func(t *testing.T) {
			r := newSeedRig(t)
			for r.seq < 41 {
				r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedA: 9000, seedB: 11000}))
			}
			r.feedBack(r.broadcast(1_000_000, map[uint32]int64{seedA: 10000, seedB: 11000})) // 42
			rx := r.rx
			// The broadcast of 43 goes to a copy of the receiver, as it was
			// at 42, so that the one the rig drives stays honest.
			r.rx = rx.Clone()
			r.broadcast(1_050_000, map[uint32]int64{seedA: 10020, seedB: 11000})
			r.rx = rx
			if rec := r.record(43, seedA); rec.Kind != codec.KindDelta || rec.Lag != 1 {
				t.Fatalf("43: A is %v lag %d", rec.Kind, rec.Lag)
			}
			dgs := r.dgs[43]
			if len(dgs) != 1 {
				t.Fatalf("43 went in %d datagrams", len(dgs))
			}
			dg := append([]byte(nil), dgs[0]...)
			switch forge {
			case "baseline":
				rx.islandOf(seedA).kept.Find(42).Entries[0].Q.X += 3
				rx.islandOf(seedB).kept.Find(42).Entries[0].Q.Y -= 1
			case "residual":
				dg[len(dg)-1] ^= 0x02 // the last residual byte
				dg = resign(dg)
			}
			before := rx.Stats()
			_ = rx.Feedback(nil)
			rx.Datagram(r.now+50_000, dg)
			after := rx.Stats()
			if after.FramesCommitted != before.FramesCommitted {
				t.Fatalf("a frame restored from a forged %s committed", forge)
			}
			if rx.islandOf(seedA).kept.Find(43) != nil || rx.islandOf(seedB).kept.Find(43) != nil {
				t.Fatal("a frame restored from a forged baseline was kept")
			}
			if forge == "baseline" && after.Wire.Digest != before.Wire.Digest+1 {
				t.Fatalf("sum mismatches %d → %d", before.Wire.Digest, after.Wire.Digest)
			}
			lim := codec.ControlLimits{}.WithDefaults()
			fb := rx.Feedback(nil)
			var keys []uint32
			for len(fb) > 0 {
				m, n, err := codec.ParseControl(fb, &lim)
				if err != nil {
					t.Fatal(err)
				}
				switch m := m.(type) {
				case codec.Keyframes:
					keys = m.Islands
				case codec.Received:
					t.Fatalf("the forged datagram was confirmed: %+v", m)
				}
				fb = fb[n:]
			}
			if forge == "baseline" && (len(keys) != 2 || keys[0] != seedA || keys[1] != seedB) {
				t.Fatalf("keyframes asked for %v, want A and B", keys)
			}
		})
	}
}

// TestRefusedDatagramNotConfirmed: a datagram any of whose frames the
// validator refuses is not confirmed. On a path that can forge datagrams,
// one may borrow the number of a datagram that was lost (here: 43, never
// delivered) and carry a frame of another sender; confirming it would have
// the authority take the lost datagram's frames for held, and code against
// baselines the observer never had.
func TestRefusedDatagramNotConfirmed(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 42 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedA: 9000 + int64(r.seq)}))
	}
	rx := r.rx
	r.rx = rx.Clone() // 43 goes elsewhere: lost on the way to rx
	r.broadcast(1_075_000, map[uint32]int64{seedA: 10000})
	r.rx = rx
	dec, _ := codec.NewDecoder(codec.Config{})
	h, _, err := dec.Decode(r.dgs[43][0])
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := codec.NewEncoder(codec.Config{})
	enc.Begin(h.Packet, h.Seq, h.Time)
	spoof := codec.Frame{Sender: 999, Key: island.Key{Island: seedA, Epoch: 1, Topology: 1, Config: 1, Seq: h.Seq},
		Members: []baseline.Entry{{ID: island.MemberID{Stable: 100 + seedA}}}}
	if err := enc.AddKey(&spoof); err != nil {
		t.Fatal(err)
	}
	_ = rx.Feedback(nil)
	before := rx.Stats()
	rx.Datagram(r.now+50_000, enc.Datagrams()[0])
	if rx.Stats().Wire.Refused != before.Wire.Refused+1 {
		t.Fatalf("the spoofed frame was not refused: %+v", rx.Stats().Wire)
	}
	lim := codec.ControlLimits{}.WithDefaults()
	for fb := rx.Feedback(nil); len(fb) > 0; {
		m, n, err := codec.ParseControl(fb, &lim)
		if err != nil {
			t.Fatal(err)
		}
		if rc, ok := m.(codec.Received); ok {
			t.Fatalf("the datagram with a refused frame was confirmed: %+v", rc)
		}
		fb = fb[n:]
	}
}

// TestRunClassMustMatchBaseline: a run whose class bits differ from its
// baseline's class restores nothing — it would be predicted at another
// precision than the authority's — and its island is asked for whole.
func TestRunClassMustMatchBaseline(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 42 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*25_000, map[uint32]int64{seedA: 9000}))
	}
	rx := r.rx
	r.rx = rx.Clone()
	r.broadcast(43*25_000, map[uint32]int64{seedA: 9000})
	r.rx = rx
	if rec := r.record(43, seedA); rec.Kind != codec.KindRun || rec.Class != 0 {
		t.Fatalf("43: %v of class %d, want a rigid run", rec.Kind, rec.Class)
	}
	// The same island at rest, predicted at frame 43 from a baseline of
	// class loose: the encoder writes the class it was given.
	dec, _ := codec.NewDecoder(codec.Config{})
	h, _, _ := dec.Decode(r.dgs[43][0])
	enc, _ := codec.NewEncoder(codec.Config{})
	fake := &baseline.Table{ID: 42, Entries: []baseline.Entry{{ID: island.MemberID{Stable: 1}}},
		Frame: baseline.FrameInfo{Sender: 1, Key: island.Key{Island: seedA, Seq: 42}, Time: 42 * 25_000, Class: quant.Loose}}
	f := codec.Frame{Sender: 1, Key: island.Key{Island: seedA, Seq: 43}, Class: quant.Loose, Members: fake.Entries}
	enc.Begin(h.Packet, 43, h.Time)
	if err := enc.AddDelta(&f, &codec.Ref{Base: fake}); err != nil {
		t.Fatal(err)
	}
	dg := enc.Datagrams()[0]
	before := rx.Stats()
	_ = rx.Feedback(nil)
	rx.Datagram(r.now+50_000, dg)
	after := rx.Stats()
	if after.FramesCommitted != before.FramesCommitted || after.Decode.Malformed != before.Decode.Malformed+1 {
		t.Fatalf("committed %d → %d, malformed %d → %d", before.FramesCommitted, after.FramesCommitted, before.Decode.Malformed, after.Decode.Malformed)
	}
	lim := codec.ControlLimits{}.WithDefaults()
	if m, _, err := codec.ParseControl(rx.Feedback(nil), &lim); err != nil || m.(codec.Keyframes).Islands[0] != seedA {
		t.Fatalf("feedback %v %v, want Keyframes [A]", m, err)
	}
}

// TestFrozenHoldsWhatArrives: while the playout clock is Frozen, every
// island is held as last shown, whatever frames arrive. Island A moves
// 100 units a broadcast; its frames stop, the clock freezes at latest + E;
// then a frame 50 ms newer arrives that puts A somewhere else (too little
// for the clock to resume): A's shown pose does not move.
func TestFrozenHoldsWhatArrives(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 30 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*50_000, map[uint32]int64{seedA: 1000 + 100*int64(r.seq)}))
		r.rx.Render(r.now)
	}
	poseA := func() (float64, bool) {
		for _, v := range r.rx.Render(r.now) {
			if v.Island == seedA && len(v.Poses) == 1 {
				return v.Poses[0].State.X, true
			}
		}
		return 0, false
	}
	for range 100 {
		r.now += 10_000
		if r.rx.Render(r.now); r.rx.clock.State() == store.Frozen {
			break
		}
	}
	if r.rx.clock.State() != store.Frozen {
		t.Fatalf("setup: the clock is %v", r.rx.clock.State())
	}
	held, ok := poseA()
	if !ok {
		t.Fatal("setup: A not shown")
	}
	r.now -= 50_000 // the next broadcast comes 50 ms after the last render
	r.broadcast(island.Time(r.seq+1)*50_000, map[uint32]int64{seedA: 90_000})
	x, ok := poseA()
	if r.rx.clock.State() != store.Frozen {
		t.Fatalf("the clock resumed (%v): the frame was meant to leave it frozen", r.rx.clock.State())
	}
	if !ok || x != held {
		t.Fatalf("frozen, A moved from %v to %v", held, x)
	}
}

// TestWaitingIsNotReady: a view rendered while the playout clock is Waiting
// (it lost its time base and has not re-anchored) is not ready, whatever
// the islands show.
func TestWaitingIsNotReady(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 30 {
		r.feedBack(r.broadcast(island.Time(r.seq+1)*50_000, map[uint32]int64{seedA: 1000, seedB: 2000, seedC: 3000}))
		r.rx.Render(r.now)
	}
	if !r.rx.ViewReady() {
		t.Fatal("setup: not ready while playing")
	}
	for range 200 { // no frames: frozen, then waiting to re-anchor
		r.now += 10_000
		if r.rx.Render(r.now); r.rx.clock.State() == store.Waiting {
			break
		}
	}
	if r.rx.clock.State() != store.Waiting {
		t.Fatalf("setup: the clock is %v", r.rx.clock.State())
	}
	if r.rx.ViewReady() {
		t.Fatal("ready while the clock is Waiting")
	}
}

// viewOf returns island isl's view in views.
func viewOf(views []IslandView, isl uint32) (IslandView, bool) {
	for _, v := range views {
		if v.Island == isl {
			return v, true
		}
	}
	return IslandView{}, false
}

// seedSparseIsland is the design notes' low-rate entity, on the wire
// path: A is sent every 50 ms, B only at 1.00 s and then not for 500 ms.
// Rendered every 10 ms, B is valid while r is within the 100 ms
// extrapolation cap of 1.00 s, and from then on Stale, held at its 1.10 s
// pose (sample time 1.10 s) however many of A's frames arrive; A stays
// valid throughout. When B's 1.50 s frame arrives with r still before
// 1.50 s, B interpolates between 1.00 and 1.50 s and is valid again. Every
// render's r, B's sample time and validity are checked, and the view is
// ready exactly when B is valid.
func seedSparseIsland(t *testing.T) {
	for _, lateB := range []bool{false, true} {
		r := newSeedRig(t)
		for r.seq < 20 { // 0.05 … 1.00 s: A and B every 50 ms
			at := island.Time(r.seq+1) * 50_000
			r.feedBack(r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedB: 5000, seedC: 1}))
			r.rx.Render(r.now)
		}
		var validB, staleB int
		var lastR island.Time
		check := func(bArrived island.Time) {
			for range 5 { // render every 10 ms until the next broadcast
				r.now += 10_000
				views := r.rx.Render(r.now)
				a, okA := viewOf(views, seedA)
				b, okB := viewOf(views, seedB)
				if !okA || !okB || !a.ValidAtR {
					t.Fatalf("r %d: A %+v, B %+v", a.R, a, b)
				}
				if b.R < lastR {
					t.Fatalf("r went back from %d to %d", lastR, b.R)
				}
				lastR = b.R
				switch {
				case bArrived > 0 && b.R <= bArrived && b.R >= 1_000_000:
					if b.Mode != store.Interpolate || !b.ValidAtR || b.SampleTime != b.R {
						t.Fatalf("r %d, B's 1.50 s frame in: %v valid %v sample %d", b.R, b.Mode, b.ValidAtR, b.SampleTime)
					}
					validB++
				case b.R-1_000_000 <= 100_000 && bArrived == 0:
					if !b.ValidAtR || b.SampleTime != b.R {
						t.Fatalf("r %d, 100 ms or less past B's frame: %v valid %v sample %d", b.R, b.Mode, b.ValidAtR, b.SampleTime)
					}
					validB++
				case bArrived == 0 || b.R-bArrived > 100_000:
					if b.Mode != store.Stale || b.ValidAtR || b.SampleTime != max(bArrived, 1_000_000)+100_000 {
						t.Fatalf("r %d, past B's cap: %v valid %v sample %d", b.R, b.Mode, b.ValidAtR, b.SampleTime)
					}
					staleB++
				}
				if r.rx.ViewReady() != b.ValidAtR {
					t.Fatalf("r %d: ready %v with B valid %v", b.R, r.rx.ViewReady(), b.ValidAtR)
				}
			}
			r.now -= 50_000 // the broadcast moves now on by 50 ms
		}
		check(0)
		for at := island.Time(1_050_000); at <= 1_450_000; at += 50_000 {
			r.feedBack(r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedC: 1}))
			check(0)
		}
		b15 := map[uint32]int64{seedA: 15000, seedB: 6000, seedC: 1}
		if !lateB {
			r.feedBack(r.broadcast(1_500_000, b15))
			check(1_500_000)
		} else {
			// The 1.50 s broadcast is held up on the path until r is past
			// 1.70 s; A's later frames arrive meanwhile.
			held := r.withhold(1_500_000, b15)
			for at := island.Time(1_550_000); lastR <= 1_700_000; at += 50_000 {
				r.feedBack(r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedC: 1}))
				check(0)
			}
			for _, d := range held {
				r.rx.Datagram(r.now, d)
			}
			// B's frame is 200 ms and more behind r: it stays Stale, held at
			// 100 ms past that frame, not valid again for one update.
			b, _ := viewOf(r.rx.Render(r.now), seedB)
			if b.R <= 1_700_000 || b.Mode != store.Stale || b.ValidAtR || b.SampleTime != 1_600_000 {
				t.Fatalf("r %d, B's 1.50 s frame in late: %v valid %v sample %d", b.R, b.Mode, b.ValidAtR, b.SampleTime)
			}
		}
		if validB == 0 || staleB == 0 {
			t.Fatalf("late %v: B valid at %d renders, stale at %d: the run proves little", lateB, validB, staleB)
		}
		t.Logf("late %v: B valid at %d renders, stale at %d", lateB, validB, staleB)
	}
}

// TestSeedStamp is the design notes' interaction on the wire path: B is
// frozen at 1.10 s (no frame of it after 1.00 s) while A (and C) play on. The view
// is not ready; its stamp, at r past 1.10 s, involving B is refused by the
// authority, one involving A alone passes, and one claiming a moment later
// than anything sent is refused. Once the game makes B decoration — on the
// observer, the view is ready; on the authority, the stamp passes — B's
// staleness blocks nothing; the observer alone cannot demote it.
func TestSeedStamp(t *testing.T) {
	r := newSeedRigConfig(t, broadcast.Config{Timeline: 5, KeyframeEvery: 1000, StampHistory: 64})
	for r.seq < 20 { // A and B every 50 ms up to 1.00 s
		at := island.Time(r.seq+1) * 50_000
		r.feedBack(r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedB: 5000, seedC: 1}))
		r.rx.Render(r.now)
	}
	for r.seq < 29 { // A (and C) alone up to 1.45 s
		at := island.Time(r.seq+1) * 50_000
		r.feedBack(r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedC: 1}))
	}
	views := r.rx.Render(r.now)
	a, _ := viewOf(views, seedA)
	b, _ := viewOf(views, seedB)
	if !a.ValidAtR || b.ValidAtR || b.Mode != store.Stale || b.R <= 1_100_000 {
		t.Fatalf("setup: r %d, A %v, B %v", b.R, a.Mode, b.Mode)
	}
	if r.rx.ViewReady() {
		t.Fatal("ready with B stale")
	}
	var vs codec.ViewStamp
	r.rx.Stamp(&vs, []uint32{seedA, seedB})
	if vs.Timeline != 5 || vs.R != a.R || vs.Generation != r.rx.clock.Generation() || len(vs.Islands) != 2 ||
		!vs.Islands[0].Valid || vs.Islands[1].Valid || vs.Islands[0].Epoch != 1 {
		t.Fatalf("stamp %+v", vs)
	}
	b1 := vs.Append(nil) // as the game sends it
	var got codec.ViewStamp
	if _, err := codec.ParseViewStamp(b1, &got); err != nil {
		t.Fatal(err)
	}
	if err := r.bc.CheckStamp(1, &got, []uint32{seedA, seedB}); !errors.Is(err, stamp.ErrNotValid) {
		t.Fatalf("a shot involving B: %v, want stamp.ErrNotValid", err)
	}
	if err := r.bc.CheckStamp(1, &got, []uint32{seedA}); err != nil {
		t.Fatalf("a shot at A alone: %v", err)
	}
	later := got
	later.R = 1_450_001
	if err := r.bc.CheckStamp(1, &later, []uint32{seedA}); !errors.Is(err, stamp.ErrOutOfHistory) {
		t.Fatalf("a moment after anything sent: %v", err)
	}
	r.rx.SetCritical(seedB, false)
	r.rx.Render(r.now)
	if !r.rx.ViewReady() {
		t.Fatal("not ready with only decoration stale")
	}
	r.rx.Stamp(&vs, []uint32{seedA, seedB})
	if err := r.bc.CheckStamp(1, &vs, []uint32{seedA, seedB}); !errors.Is(err, stamp.ErrNotValid) {
		t.Fatalf("the observer alone demoted B: %v", err)
	}
	r.bc.SetCritical(seedB, false)
	if err := r.bc.CheckStamp(1, &vs, []uint32{seedA, seedB}); err != nil {
		t.Fatalf("B decoration on the authority too: %v", err)
	}
}

// TestSpawnAndDestroyOnTime: objects appear and go when playback reaches
// their authority time, not when the news arrives (about one interpolation
// delay earlier). Island D is spawned at 1.50 s — Announce, Lease and
// Manifest go out with its first, Initial frame — and B is destroyed and
// forgotten at 1.50 s, its frames going on until then. While r is before
// 1.50 s, D is not shown (and the view stays ready) and B is shown, its
// identity live; from r = 1.50 s D is shown and B is gone. A Forget whose
// time playback has passed takes effect at once and is counted; a Manifest
// of an island whose Forget waits cancels it.
func TestSpawnAndDestroyOnTime(t *testing.T) {
	r := newSeedRig(t)
	const seedD, spawn = 4, island.Time(1_500_000)
	all := func(at island.Time) map[uint32]int64 {
		return map[uint32]int64{seedA: int64(at / 100), seedB: 5000, seedC: 1}
	}
	for r.seq < 24 { // 0.05 … 1.20 s
		at := island.Time(r.seq+1) * 50_000
		r.feedBack(r.broadcast(at, all(at)))
		r.rx.Render(r.now)
	}
	apply := func(ms ...codec.Message) {
		for _, m := range ms {
			if err := r.bc.Apply(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, b := island.MemberID{Stable: 100 + seedD}, island.MemberID{Stable: 100 + seedB}
	live := func(id island.MemberID) bool {
		found := false
		r.rx.Identities(func(x island.MemberID) { found = found || x == id })
		return found
	}
	var before, after int
	for at := island.Time(1_250_000); at <= 1_800_000; at += 50_000 {
		xs := all(at)
		if at == spawn {
			apply(codec.Announce{Time: spawn, IDs: []island.MemberID{d}}, codec.Lease{Island: seedD, Epoch: 1, Owner: 1},
				codec.Manifest{Island: seedD, Topology: 1, Config: 1, Members: []island.MemberID{d}},
				codec.Forget{Island: seedB, Time: spawn}, codec.Destroy{Time: spawn, IDs: []island.MemberID{b}})
			r.initial[seedD] = true
		}
		if at >= spawn {
			delete(xs, seedB)
			xs[seedD] = 7000
		}
		r.feedBack(r.broadcast(at, xs))
		for range 5 {
			views := r.rx.Render(r.now)
			r.now += 10_000
			_, hasD := viewOf(views, seedD)
			vb, hasB := viewOf(views, seedB)
			if len(views) == 0 {
				t.Fatal("no views")
			}

			if views[0].R < spawn {
				if hasD || !hasB || !vb.ValidAtR || !live(b) || !r.rx.ViewReady() {
					t.Fatalf("r %d, before the spawn: D shown %v, B shown %v valid %v live %v, ready %v", views[0].R, hasD, hasB, vb.ValidAtR, live(b), r.rx.ViewReady())
				}
				before++
			} else {
				if !hasD || hasB || live(b) {
					t.Fatalf("r %d, from the spawn on: D shown %v, B shown %v live %v", views[0].R, hasD, hasB, live(b))
				}
				after++
			}
		}
		r.now -= 50_000
	}
	if before == 0 || after == 0 || r.rx.Stats().LateEvents != 0 {
		t.Fatalf("%d renders before the spawn, %d after, %d late events", before, after, r.rx.Stats().LateEvents)
	}
	// A Forget of a time playback has passed: at once, counted.
	apply(codec.Forget{Island: seedC, Time: 1_000_000})
	r.feedBack(r.broadcast(1_850_000, map[uint32]int64{seedA: 1, seedD: 1}))
	if _, ok := viewOf(r.rx.Render(r.now), seedC); ok || r.rx.Stats().LateEvents != 1 {
		t.Fatalf("a late Forget: C still shown %v, %d late events", ok, r.rx.Stats().LateEvents)
	}
	// A Manifest after a waiting Forget: the island lives on.
	apply(codec.Forget{Island: seedA, Time: 5_000_000}, codec.Manifest{Island: seedA, Topology: 1, Config: 1, Members: []island.MemberID{{Stable: 100 + seedA}}})
	r.feedBack(r.broadcast(1_900_000, map[uint32]int64{seedA: 1, seedD: 1}))
	if st := r.rx.Stats(); st.PendingEvents != 0 {
		t.Fatalf("%d events still wait after the Manifest", st.PendingEvents)
	}
}

// TestSpawnWithoutItsFirstFrame: island D is spawned at 1.50 s and the
// datagram with its first (Initial) frame is lost; its next frames arrive
// while r is still before 1.50 s. D is still not shown before 1.50 s — its
// identity was announced for 1.50 s — and from then on it is shown, valid:
// its Spawn gave its state at 1.50 s on the reliable stream, so playback
// interpolates from it to the next frame.
func TestSpawnWithoutItsFirstFrame(t *testing.T) {
	r := newSeedRig(t)
	const seedD, spawn = 4, island.Time(1_500_000)
	d := island.MemberID{Stable: 100 + seedD}
	var before, after int
	render := func() {
		for range 5 {
			views := r.rx.Render(r.now)
			r.now += 10_000
			_, hasD := viewOf(views, seedD)
			switch {
			case len(views) == 0:
			case views[0].R < spawn && hasD:
				t.Fatalf("r %d: D shown before its spawn", views[0].R)
			case views[0].R < spawn:
				before++
			case !hasD:
				t.Fatalf("r %d: D not shown after its spawn", views[0].R)
			default:
				if v, _ := viewOf(views, seedD); !v.ValidAtR {
					t.Fatalf("r %d: D shown %v, not valid, after its spawn", views[0].R, v.Mode)
				}
				after++
			}
		}
		r.now -= 50_000
	}
	for at := island.Time(50_000); at < spawn; at += 50_000 {
		r.feedBack(r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedB: 1, seedC: 1}))
		render()
	}
	stray := island.MemberID{Stable: 999} // announced, never in an island: forgotten once its time came
	for _, m := range []codec.Message{codec.Announce{Time: spawn, IDs: []island.MemberID{d, stray}}, codec.Lease{Island: seedD, Epoch: 1, Owner: 1},
		codec.Manifest{Island: seedD, Topology: 1, Config: 1, Members: []island.MemberID{d}},
		codec.Spawn{Island: seedD, Time: spawn, Members: []island.Member{{ID: d, State: island.State{X: 7000 * posUnit}}}}} {
		if err := r.bc.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	r.initial[seedD] = true
	_ = r.withhold(spawn, map[uint32]int64{seedA: 15000, seedB: 1, seedC: 1, seedD: 7000}) // lost
	render()
	for at := spawn + 50_000; at <= 1_800_000; at += 50_000 {
		r.broadcast(at, map[uint32]int64{seedA: int64(at / 100), seedB: 1, seedC: 1, seedD: 7000}) // no feedback: keyframes
		render()
	}
	if before < 5 || after == 0 {
		t.Fatalf("%d renders before the spawn, %d after: the run proves little", before, after)
	}
	if n := len(r.rx.spawnAt) + len(r.rx.spawnOf); n != 0 {
		t.Fatalf("%d spawn times kept after playback passed them", n)
	}
}

// hold is broadcast with nothing delivered, island A's frames in segment
// segmentA: the control bytes and the datagrams are returned for the test
// to deliver later (or never).
func (r *seedRig) hold(at island.Time, xs map[uint32]int64, segmentA uint32) (ctl []byte, dgs [][]byte) {
	r.t.Helper()
	r.seq++
	var frames []*island.Frame
	for _, isl := range slices.Sorted(maps.Keys(xs)) {
		f := &island.Frame{Sender: 1, Key: island.Key{Island: isl, Epoch: 1, Topology: 1, Config: 1, Seq: r.seq},
			Time: at, Members: []island.Member{{ID: island.MemberID{Stable: uint64(100 + isl)}, State: island.State{X: float64(xs[isl]) * posUnit}}}}
		if isl == seedA {
			f.Segment = segmentA
		}
		frames = append(frames, f)
	}
	r.bc.Frames(frames)
	c, ds := r.bc.Take(1, nil, nil)
	r.now += 50_000
	for _, d := range ds {
		dgs = append(dgs, append([]byte(nil), d.Bytes...))
	}
	return append([]byte(nil), c...), dgs
}

// seedLateTeleport is the design notes' late teleport on the wire
// path: A is teleported at 1.25 s (a Cut, then frames of segment 1, 0.39 m
// away: too little for a jump to snap by its size), and everything from
// 1.25 s on — the Cut included — is held up
// until the playout clock has frozen at 1.30 s, past the cut. When it
// arrives, A shows the new segment at once — one correction, no smoothing
// across the cut — and r is never taken back to 1.25 s.
func seedLateTeleport(t *testing.T) {
	r := newSeedRig(t)
	for r.seq < 24 { // 0.05 … 1.20 s, segment 0
		at := island.Time(r.seq+1) * 50_000
		r.feedBack(r.broadcast(at, map[uint32]int64{seedA: 1000, seedB: 1, seedC: 1}))
		r.rx.Render(r.now)
	}
	const cut = island.Time(1_250_000)
	if err := r.bc.Apply(codec.Cut{Island: seedA, Segment: 1, Time: cut}); err != nil {
		t.Fatal(err)
	}
	var ctls []byte
	var dgs [][]byte
	for at := cut; at <= 1_400_000; at += 50_000 {
		c, d := r.hold(at, map[uint32]int64{seedA: 1200, seedB: 1, seedC: 1}, 1)
		ctls, dgs = append(ctls, c...), append(dgs, d...)
	}
	var lastR island.Time
	for range 100 { // until frozen at latest + E
		r.now += 10_000
		r.rx.Render(r.now)
		lastR = island.Time(r.rx.Clock().R)
		if r.rx.clock.State() == store.Frozen {
			break
		}
	}
	if r.rx.clock.State() != store.Frozen || lastR <= cut {
		t.Fatalf("setup: %v at r %d", r.rx.clock.State(), lastR)
	}
	if _, err := r.rx.ControlBytes(r.now, ctls); err != nil {
		t.Fatal(err)
	}
	for _, d := range dgs {
		r.rx.Datagram(r.now, d)
	}
	for range 10 {
		r.now += 10_000
		a, _ := viewOf(r.rx.Render(r.now), seedA)
		if now := island.Time(r.rx.Clock().R); now < lastR {
			t.Fatalf("r went back from %d to %d", lastR, now)
		} else {
			lastR = now
		}
		if r.rx.clock.State() == store.Frozen {
			continue
		}
		if a.Segment != 1 || !a.ValidAtR || a.Smoothing || len(a.Poses) != 1 || a.Poses[0].State.X != 1200*posUnit {
			t.Fatalf("r %d: A %v segment %d valid %v smoothing %v at x %v, want the new segment at once", a.R, a.Mode, a.Segment, a.ValidAtR, a.Smoothing, a.Poses[0].State.X)
		}
		return
	}
	t.Fatal("the clock never resumed")
}

// seedOldGeneration: A's body is destroyed at 1.00 s and its stable id
// comes back as generation 1 in a new topology of A. Once playback passed
// 1.00 s, a replay of an old datagram — A's keyframe of generation 0 —
// revives nothing: its frame is refused (the old topology), the old
// generation stays tombstoned, and A goes on showing generation 1.
func seedOldGeneration(t *testing.T) {
	r := newSeedRig(t)
	old, young := island.MemberID{Stable: 100 + seedA}, island.MemberID{Stable: 100 + seedA, Generation: 1}
	for r.seq < 19 {
		at := island.Time(r.seq+1) * 50_000
		r.feedBack(r.broadcast(at, map[uint32]int64{seedA: 1000, seedB: 1, seedC: 1}))
		r.rx.Render(r.now)
	}
	const at = island.Time(1_000_000)
	for _, m := range []codec.Message{codec.Destroy{Time: at, IDs: []island.MemberID{old}}, codec.Announce{Time: at, IDs: []island.MemberID{young}},
		codec.Manifest{Island: seedA, Topology: 2, Config: 1, Members: []island.MemberID{young}}} {
		if err := r.bc.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	r.topo[seedA], r.gen[seedA], r.initial[seedA] = 2, 1, true
	for t0 := at; t0 <= 1_400_000; t0 += 50_000 {
		r.feedBack(r.broadcast(t0, map[uint32]int64{seedA: 2000, seedB: 1, seedC: 1}))
		r.rx.Render(r.now)
	}
	live := func(id island.MemberID) bool {
		found := false
		r.rx.Identities(func(x island.MemberID) { found = found || x == id })
		return found
	}
	if live(old) || !live(young) {
		t.Fatalf("setup: generation 0 live %v, generation 1 live %v", live(old), live(young))
	}
	refused := r.rx.Stats().Validator.Count(validator.StaleTopology)
	for _, d := range r.dgs[1] { // A's keyframe of generation 0, topology 1
		r.rx.Datagram(r.now, d)
	}
	a, _ := viewOf(r.rx.Render(r.now), seedA)
	if r.rx.Stats().Validator.Count(validator.StaleTopology) == refused {
		t.Fatal("the old keyframe was not refused")
	}
	if live(old) || len(a.Poses) != 1 || a.Poses[0].ID != young {
		t.Fatalf("after the replay: generation 0 live %v, A shows %+v", live(old), a.Poses)
	}
}

// seedLateTick is seed 000's input on the wire path, a tick being
// 25 ms (2.500 s is tick 100): island A at (tick, segment, position)
// (100, 0, 0) (104, 1, 102) (106, 1, 104) and so on, the datagram of tick
// 102 held up and carrying position 50. Once r has shown tick 103 —
// SegmentCut, position 102 — the late tick 102 arrives and is refused (the
// playout's timeline is never rewritten): tick 103 still gives 102.
// (With tick 102 on time, tick 101.5 shows 1.50: the store's
// segment_seed trace.)
func seedLateTick(t *testing.T) {
	r := newSeedRig(t)
	const tick = 25_000
	for r.seq < 49 { // up to tick 98: A at rest at 0, segment 0
		at := island.Time(r.seq+1) * 2 * tick
		r.feedBack(r.broadcast(at, map[uint32]int64{seedA: 0, seedB: 1, seedC: 1}))
		r.rx.Render(r.now)
	}
	r.feedBack(r.broadcast(100*tick, map[uint32]int64{seedA: 0, seedB: 1, seedC: 1}))
	_, late := r.hold(102*tick, map[uint32]int64{seedA: 50 * 512, seedB: 1, seedC: 1}, 0) // x in 1/512 m
	// Renders every millisecond; the view at the first one in tick 103.
	var at103 IslandView
	for _, tk := range []island.Time{104, 106, 108, 110, 112} {
		c, d := r.hold(tk*tick, map[uint32]int64{seedA: int64(tk-2) * 512, seedB: 1, seedC: 1}, 1)
		if _, err := r.rx.ControlBytes(r.now, c); err != nil {
			t.Fatal(err)
		}
		for _, dg := range d {
			r.rx.Datagram(r.now, dg)
		}
		for range 50 {
			a, _ := viewOf(r.rx.Render(r.now), seedA)
			if a.R >= 103*tick && a.R < 104*tick && at103.R == 0 {
				at103 = a
				at103.Poses = slices.Clone(a.Poses) // the receiver's until the next Render
			}
			r.now += 1_000
		}
		r.now -= 50_000
	}
	if at103.Mode != store.SegmentCut || at103.Poses[0].State.X != 102 || at103.Segment != 1 {
		t.Fatalf("r %d (tick 103): A %v at %v, segment %d — want SegmentCut at 102", at103.R, at103.Mode, at103.Poses, at103.Segment)
	}
	committed := r.rx.Stats().Store.Count(store.CommitLate)
	for _, d := range late {
		r.rx.Datagram(r.now, d)
	}
	if r.rx.Stats().Store.Count(store.CommitLate) == committed {
		t.Fatal("the late tick 102 was not refused as late")
	}
	// Playback has moved on; the island's history at tick 103 still gives 102.
	if v := r.rx.st.Evaluate(seedA, 103*tick, r.now, r.rx.clock.Generation()); v.Mode != store.SegmentCut || v.Poses[0].X != 102 {
		t.Fatalf("after the late tick, tick 103: A %v at %v", v.Mode, v.Poses)
	}
}

// TestSeedRecipe runs the design notes' validation recipe through a
// Broadcaster and a Receiver, step by step, each on a fresh authority and
// observer: the declared-baseline integer example, the missing baseline,
// the window, the sparse island, the late teleport, the old generation and
// seed 000's late tick.
func TestSeedRecipe(t *testing.T) {
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"42 → 43 → 44: each restored from the baseline it names, B kept at 1.00 s", seedDeclaredBaseline},
		{"a receiver holding only 40 refuses 43 whole and asks for a keyframe", seedMissingBaseline},
		{"a full window advances keeping its anchor", seedWindowKeepsAnchor},
		{"A every 50 ms, B silent for 500 ms: r, B's sample time and validity per render", seedSparseIsland},
		{"a late teleport: the new segment at once, r never back", seedLateTeleport},
		{"an old generation revives nothing", seedOldGeneration},
		{"seed 000's late tick refused", seedLateTick},
	} {
		t.Run(step.name, step.run)
	}
}
