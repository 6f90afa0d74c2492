package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// wireWorld is a sender and a receiver of wire-3 frames for a set of islands,
// with the receiver's restored tables, for round trips.
type wireWorld struct {
	t   testing.TB
	enc *Encoder
	dec *Decoder
	// links are the receiver's joint-prediction links by island
	links map[uint32]*Links
}

func newWireWorld(t testing.TB, cfg Config) *wireWorld {
	enc, err := NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder(Config{MaxDatagram: MaxMaxDatagram})
	if err != nil {
		t.Fatal(err)
	}
	return &wireWorld{t: t, enc: enc, dec: dec}
}

// testFrame3 builds island isl's frame with n members moving by seed.
func testFrame3(isl uint32, n int, seq uint32, class quant.Class, seed float64) Frame {
	f := Frame{Sender: 1, Key: island.Key{Island: isl, Epoch: 1, Topology: 2, Config: 3, Seq: seq}, Class: class}
	p := class.Precision()
	for i := range n {
		// Values as irregular as noise, so that no coding squeezes them
		// much: a frame's size in a batch and in fragments stays alike.
		h := uint64(i+1) * 0x9E3779B97F4A7C15
		jx, jy, ja := float64(h>>44)/4096, float64(h>>24&0xFFFFF)/4096, float64(h>>4&0xFFFFF)/65536
		s := island.State{X: float64(i)*0.25 + seed + jx, Y: 2 - seed/3 - jy, Angle: seed/7 + ja, VX: 1.5 + jy/7, VY: -seed, AngVel: 0.5 - ja/13}
		q, _ := quant.Quantize(s, p)
		f.Members = append(f.Members, baseline.Entry{ID: island.MemberID{Stable: uint64(isl)*1000 + uint64(i), Generation: uint32(i % 3)}, Record: baseline.Record{Q: q}})
	}
	return f
}

// table returns what the receiver keeps of a frame sent at time t.
func frameTable(f *Frame, t island.Time) *baseline.Table {
	tb := &baseline.Table{ID: f.Key.Seq, Frame: baseline.FrameInfo{Sender: f.Sender, Key: f.Key, Time: t, Segment: f.Segment, Class: f.Class}}
	for _, m := range f.Members {
		m.Time, m.Segment = t, f.Segment
		tb.Entries = append(tb.Entries, m)
	}
	return tb
}

// receive decodes every datagram and restores each island's frame: key
// records on their own, deltas and runs against bases (by island), parts
// of a fragmented frame put back together. It checks every datagram's sum
// over the whole frames it restores and every fragmented frame's digest.
func (w *wireWorld) receive(dgs [][]byte, bases map[uint32]*baseline.Table) map[uint32]*baseline.Table {
	w.t.Helper()
	out := map[uint32]*baseline.Table{}
	parts := map[uint32][]baseline.Entry{}
	for _, dg := range dgs {
		h, recs, err := w.dec.Decode(dg)
		if err != nil {
			w.t.Fatalf("decode: %v", err)
		}
		var sum DatagramSum
		for _, r := range recs {
			predicted := func(from, n uint32) {
				for k := uint32(0); k < n; k++ {
					base := bases[from+k]
					tb := restored(base.Frame, h, Predict(nil, base, h.Time))
					sum.Add(FrameSum(tb.Frame.Sender, tb.Frame.Key, h.Time, tb.Frame.Segment, 0, tb.Frame.Class, tb.Entries))
					out[from+k] = tb
				}
			}
			switch r.Kind {
			case KindRun:
				predicted(r.Island, r.Count)
				continue
			}
			switch r.Kind {
			case KindKey, KindDelta:
				var got []baseline.Entry
				info := baseline.FrameInfo{Sender: r.Sender, Key: island.Key{Island: r.Island, Epoch: r.Epoch, Topology: r.Topology, Config: r.Config}, Segment: r.Segment, Class: r.Class}
				if r.Kind == KindKey {
					if got, err = r.ExpandKey(nil, w.links[r.Island], h.Time); err != nil {
						w.t.Fatal(err)
					}
				} else {
					base := bases[r.Island]
					if h.Seq-r.Lag != base.ID {
						w.t.Fatalf("island %d: delta against %d, base is %d", r.Island, h.Seq-r.Lag, base.ID)
					}
					if got, err = r.ExpandDelta(nil, base, w.links[r.Island], h.Time); err != nil {
						w.t.Fatal(err)
					}
					info = base.Frame
				}
				all := append(parts[r.Island], got...)
				parts[r.Island] = all
				if len(all) < r.Total {
					continue
				}
				tb := restored(info, h, all)
				tb.Frame.Key.Seq = h.Seq
				if r.Fragments == 1 {
					sum.Add(FrameSum(tb.Frame.Sender, tb.Frame.Key, h.Time, tb.Frame.Segment, r.Flags, tb.Frame.Class, tb.Entries))
				} else {
					// The digest: the frame's sum, over the restored integers
					// as QuantSum reads them from quantized records too.
					if d := FrameSum(tb.Frame.Sender, tb.Frame.Key, h.Time, tb.Frame.Segment, r.Flags, tb.Frame.Class, tb.Entries); d != r.Digest {
						w.t.Fatalf("island %d: digest mismatch", r.Island)
					}
					hdr := FragmentHeader{Sender: tb.Frame.Sender, Key: tb.Frame.Key, Time: h.Time, Segment: tb.Frame.Segment,
						Flags: r.Flags, TotalMembers: uint32(len(tb.Entries)), Quantized: true, Class: tb.Frame.Class}
					if QuantSum(&hdr, AppendQuantRecords(nil, tb.Entries)) != r.Digest {
						w.t.Fatalf("island %d: QuantSum differs from FrameSum", r.Island)
					}
				}
				out[r.Island] = tb
			}
		}
		if got := sum.Sum32(); got != h.Sum {
			w.t.Fatalf("datagram %d: sum %#x, the header says %#x", h.Packet, got, h.Sum)
		}
	}
	return out
}

func restored(info baseline.FrameInfo, h Header, members []baseline.Entry) *baseline.Table {
	info.Time = h.Time
	info.Key.Seq = h.Seq
	return &baseline.Table{ID: h.Seq, Frame: info, Entries: members}
}

func sameMembers(a, b []baseline.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Q != b[i].Q {
			return false
		}
	}
	return true
}

// TestWireRoundTrip: keyframes, deltas, runs and fragmented frames restore
// exactly the quantized members sent, for every class, under several caps,
// over many broadcasts with random motion, rests and teleports.
func TestWireRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, maxDG := range []int{576, 1200, 9000} {
		w := newWireWorld(t, Config{MaxDatagram: maxDG})
		sizes := map[uint32]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 6, 9: 40, 50: 160, 51: 1, 52: 1}
		var ids []uint32
		for id := range sizes {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		frames := map[uint32]Frame{}
		bases := map[uint32]*baseline.Table{}
		for seq := uint32(1); seq <= 40; seq++ {
			tm := island.Time(seq) * 50_000
			w.enc.Begin(0, seq, tm)
			sent := map[uint32]Frame{}
			for _, id := range ids {
				class := quant.Class(id % 3)
				f, had := frames[id]
				if !had {
					f = testFrame3(id, sizes[id], seq, class, float64(id))
				}
				f.Key.Seq = seq
				f.Flags = 0
				f.Members = append([]baseline.Entry(nil), f.Members...)
				for i := range f.Members {
					q := &f.Members[i].Q
					switch rnd.IntN(4) {
					case 0: // at rest, or moving exactly as predicted
						*q = predict(*q, 50_000, class.Precision())
					case 1:
						*q = predict(*q, 50_000, class.Precision())
						q.X += rnd.Int64N(9) - 4
					case 2:
						q.VY -= 25
						q.Y += q.VY / 40
					default:
						q.AngVel = rnd.Int64N(200) - 100
						q.Angle += 7
					}
				}
				base, ok := bases[id]
				if !ok || rnd.IntN(10) == 0 {
					if err := w.enc.AddKey(&f); err != nil {
						t.Fatal(err)
					}
				} else if err := w.enc.AddDelta(&f, &Ref{Base: base}); err != nil {
					t.Fatal(err)
				}
				sent[id] = f
				frames[id] = f
			}
			dgs := w.enc.Datagrams()
			for _, dg := range dgs {
				if len(dg) > maxDG {
					t.Fatalf("cap %d: datagram of %d bytes", maxDG, len(dg))
				}
			}
			got := w.receive(cloneAll(dgs), bases)
			for _, id := range ids {
				g, ok := got[id]
				f := sent[id]
				if !ok || !sameMembers(g.Entries, f.Members) {
					t.Fatalf("cap %d seq %d island %d: not restored", maxDG, seq, id)
				}
				bases[id] = frameTable(&f, tm) // every frame acknowledged
				bases[id].Frame.Key.Seq = seq
			}
		}
	}
}

// splitParity decodes dgs and returns their data records and their parity
// records, in datagram order.
func splitParity(tb testing.TB, dec *Decoder, dgs [][]byte) (data, parity []Record) {
	tb.Helper()
	for _, dg := range dgs {
		_, recs, err := dec.Decode(dg)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == KindParity {
				parity = append(parity, r)
			} else {
				data = append(data, r)
			}
		}
	}
	return data, parity
}

func cloneAll(dgs [][]byte) [][]byte {
	out := make([][]byte, len(dgs))
	for i, d := range dgs {
		out[i] = bytes.Clone(d)
	}
	return out
}

// TestWirePrediction: motion is predicted from the baseline's velocities in
// exact integer arithmetic, rounded half away from zero, the same on every
// platform; absurd products saturate instead of overflowing.
func TestWirePrediction(t *testing.T) {
	p := quant.Rigid.Precision() // positions 2^-9 m, velocities 2^-7 m/s, angles 2^-12 turn, 2^-8 turn/s
	b := quant.State{X: 100, VX: 128, VY: -128, Angle: 4, AngVel: -256}
	// 1 m/s for 0.1 s = 0.1 m = 51.2 quanta → 51; −1 turn/s for 0.1 s = −409.6 → −410.
	got := predict(b, 100_000, p)
	if got.X != 151 || got.Y != -51 || got.Angle != 4-410 {
		t.Fatalf("predicted %+v", got)
	}
	if advance(1, 250_000, 1) != 1 || advance(-1, 250_000, 1) != -1 || advance(1, 249_999, 1) != 0 {
		t.Fatal("rounding is not half away from zero")
	}
	if advance(math.MaxInt64, math.MaxInt64, 3) != 1<<53 || advance(math.MinInt64+1, 7, 3) != -(1<<53) {
		t.Fatal("overflow does not saturate")
	}
}

// TestWireResiduals: a body that moved exactly as its baseline's motion
// predicts carries zero residuals; one that did not carries its positions
// less the prediction and its velocities less the ones its positions imply
// under constant acceleration (2·Δ/dt − v₀).
func TestWireResiduals(t *testing.T) {
	p := quant.Rigid.Precision()
	b := quant.State{X: 100, VX: 128, VY: -128, Angle: 4, AngVel: -256}
	// 0.1 s at 1 m/s: 51 quanta on; the velocity those 51 quanta imply is
	// 2·51 / (0.1 s · 4 position quanta per velocity quantum) − 128 = 127;
	// the angle's −410 quanta imply round(−820 / 1.6) + 256 = −513 + 256 = −257.
	moved := quant.State{X: 151, Y: -51, Angle: 4 - 410, VX: 127, VY: -127, AngVel: -257}
	if got := Residuals(b, moved, 100_000, p); got != [6]int64{} {
		t.Fatalf("as predicted: %v", got)
	}
	// 3 quanta further on x and a full stop on y: x's implied velocity is
	// 2·54/0.4 − 128 = 142, y's 2·0 − (−128) = 128.
	hit := quant.State{X: 154, Y: 0, Angle: 4 - 410, VX: 0, VY: 0, AngVel: -257}
	if got, want := Residuals(b, hit, 100_000, p), [6]int64{3, 51, 0, -142, -128, 0}; got != want {
		t.Fatalf("knocked: %v, want %v", got, want)
	}
}

// TestWirePredictTable: Predict carries every member of a baseline table as
// predict does one state — bodies at rest, moving, turning, and with
// extreme velocities — with the new time and the member's own segment.
func TestWirePredictTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, class := range []quant.Class{quant.Rigid, quant.Chain, quant.Loose} {
		base := &baseline.Table{ID: 5, Frame: baseline.FrameInfo{Time: 1_000_000, Class: class}}
		for i := range 64 {
			q := quant.State{X: rng.Int64N(1 << 20), Y: -rng.Int64N(1 << 20), Angle: rng.Int64N(4096)}
			switch i % 4 {
			case 1:
				q.VX, q.VY = rng.Int64N(2000)-1000, rng.Int64N(2000)-1000
			case 2:
				q.AngVel = rng.Int64N(512) - 256
			case 3:
				q.VX, q.AngVel = math.MaxInt64/3, math.MinInt64/5
			}
			base.Entries = append(base.Entries, baseline.Entry{ID: island.MemberID{Stable: uint64(i + 1)},
				Record: baseline.Record{Q: q, Time: 999_000, Segment: uint32(i % 3)}})
		}
		for _, at := range []island.Time{1_000_000, 1_050_000, 1_016_667, 999_000} {
			prefix := baseline.Entry{ID: island.MemberID{Stable: 999}}
			got := Predict([]baseline.Entry{prefix}, base, at) // appends
			if len(got) != 1+len(base.Entries) || got[0] != prefix {
				t.Fatalf("%d members after a prefix of 1, the first %+v", len(got), got[0])
			}
			got = got[1:]
			for i, b := range base.Entries {
				want := baseline.Entry{ID: b.ID, Record: baseline.Record{Q: predict(b.Q, int64(at-base.Frame.Time), class.Precision()),
					Time: at, Segment: b.Segment}}
				if got[i] != want {
					t.Fatalf("%v at %d, member %d: %+v, want %+v", class, at, i, got[i], want)
				}
			}
		}
	}
}

// TestWireRoundMicro: roundMicro — a multiply for the division, no branch on
// the sign — equals rounding by division, half away from zero, for seeded
// random and edge products up to 2⁶²; and predictInto advances each
// position by that rounding by division where the product is in the common
// range, and as advance's long path does out of it.
func TestWireRoundMicro(t *testing.T) {
	byDivision := func(p int64) int64 {
		if p >= 0 {
			return (p + 500_000) / 1_000_000
		}
		return -((-p + 500_000) / 1_000_000)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	edges := []int64{0, 1, -1, 499_999, 500_000, -500_000, 500_001, 1_499_999, 1_500_000, -1_500_000, 1<<62 - 1, -(1<<62 - 1)}
	for i := range 300_000 {
		p := rng.Int64N(1<<uint(rng.IntN(63))) * (1 - 2*int64(i%2))
		if i < len(edges) {
			p = edges[i]
		}
		if got, want := roundMicro(p), byDivision(p); got != want {
			t.Fatalf("roundMicro(%d) = %d, want %d", p, got, want)
		}
	}
	for i := range 100_000 {
		q := quant.State{X: rng.Int64N(1 << 30), VX: rng.Int64N(1<<29) - 1<<28, VY: rng.Int64N(1<<30) - 1<<29,
			AngVel: rng.Int64N(1<<27) - 1<<26}
		dt := rng.Int64N(1<<29) - 1<<27
		ps, as := rng.IntN(8)-1, rng.IntN(8)-1
		if i%3 == 0 {
			dt = 50_000
		}
		ref := func(v int64, shift int) int64 {
			if v > -1<<28 && v < 1<<28 && dt > -1<<28 && dt < 1<<28 && shift >= 0 && shift <= 6 {
				return byDivision(v * dt << uint(shift))
			}
			return advance(v, dt, shift)
		}
		want := q
		want.X += ref(q.VX, ps)
		want.Y += ref(q.VY, ps)
		want.Angle += ref(q.AngVel, as)
		got := q
		predictInto(&got, dt, ps, as)
		if got != want {
			t.Fatalf("predictInto(%+v, %d, %d, %d) = %+v, want %+v", q, dt, ps, as, got, want)
		}
	}
}

// TestWireSmallIslandsAreCheap: 900 one-body islands, 90 % at rest: the rest
// cost a run record; a moving one a few bytes; everything in few datagrams.
func TestWireSmallIslandsAreCheap(t *testing.T) {
	w := newWireWorld(t, Config{})
	bases := map[uint32]*baseline.Table{}
	var frames []Frame
	for id := uint32(1); id <= 900; id++ {
		f := testFrame3(id, 1, 1, quant.Rigid, 0)
		f.Members[0].Q.VX, f.Members[0].Q.VY, f.Members[0].Q.AngVel = 0, 0, 0 // asleep
		frames = append(frames, f)
		bases[id] = frameTable(&f, 50_000)
	}
	w.enc.Begin(0, 2, 100_000)
	for i := range frames {
		f := frames[i]
		f.Key.Seq = 2
		f.Members = append([]baseline.Entry(nil), f.Members...)
		if i%10 == 0 { // a tenth is pushed
			f.Members[0].Q.X += 30
			f.Members[0].Q.VX = 200
		}
		if err := w.enc.AddDelta(&f, &Ref{Base: bases[f.Key.Island]}); err != nil {
			t.Fatal(err)
		}
	}
	dgs := w.enc.Datagrams()
	total := 0
	for _, d := range dgs {
		total += len(d)
	}
	bitsPerBody := float64(8*total) / 900
	t.Logf("900 islands, 90 moving: %d datagrams, %d bytes, %.2f bits/body", len(dgs), total, bitsPerBody)
	if bitsPerBody > 10 {
		t.Fatalf("%.2f bits per body", bitsPerBody)
	}
	got := w.receive(cloneAll(dgs), bases)
	if len(got) != 900 {
		t.Fatalf("%d islands restored", len(got))
	}
}

// TestWireRejects: malformed datagrams are refused whole with typed errors.
func TestWireRejects(t *testing.T) {
	w := newWireWorld(t, Config{})
	f := testFrame3(7, 3, 5, quant.Rigid, 1)
	w.enc.Begin(0, 5, 250_000)
	if err := w.enc.AddKey(&f); err != nil {
		t.Fatal(err)
	}
	good := bytes.Clone(w.enc.Datagrams()[0])
	if _, _, err := w.dec.Decode(good); err != nil {
		t.Fatal(err)
	}
	// Mutations get a correct check, so that each case reaches the field it
	// is about; "bad check" keeps the wrong one.
	mut := func(f func(b []byte) []byte) []byte { return fixCheck(f(bytes.Clone(good))) }
	cases := map[string][]byte{
		"truncated header": good[:10],
		"bad magic":        mut(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version 2":        mut(func(b []byte) []byte { b[4] = 2; return b }),
		"version 4":        mut(func(b []byte) []byte { b[4] = 4; return b }),
		"no record":        good[:HeaderSize],
		"batch head bits":  mut(func(b []byte) []byte { b[HeaderSize] |= headSameRef; return b }),
		"batch class bits": mut(func(b []byte) []byte { b[HeaderSize] |= headClass; return b }),
		"whole key":        mut(func(b []byte) []byte { b[HeaderSize] = byte(KindKey); return b }),
		"whole delta":      mut(func(b []byte) []byte { b[HeaderSize] = byte(KindDelta); return b }),
		"whole run":        mut(func(b []byte) []byte { b[HeaderSize] = byte(KindRun); return b }),
		"no islands":       mut(func(b []byte) []byte { b[HeaderSize+2] = 0; return b }),
		"long stream":      mut(func(b []byte) []byte { b[HeaderSize+3]++; return b }),
		"trailing byte":    fixCheck(append(bytes.Clone(good), 0)),
		"cut member":       fixCheck(bytes.Clone(good[:len(good)-1])),
		"long varint":      fixCheck(append(append(bytes.Clone(good[:HeaderSize+1]), 0x87, 0x00), good[HeaderSize+2:]...)),
		"bad check":        func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }(),
	}
	for name, b := range cases {
		if h, recs, err := w.dec.Decode(b); err == nil || recs != nil || !isCodecError(err) {
			t.Errorf("%s: %v %v %v", name, h, recs, err)
		}
	}
	// Every truncation fails, and no bit flip panics or yields a record the
	// encoder would not write.
	for i := range good {
		if _, _, err := w.dec.Decode(good[:i]); err == nil {
			t.Fatalf("truncated at %d accepted", i)
		}
	}
}

// wireCase is one golden case: its datagrams and the islands the encoder
// says each carries.
type wireCase struct {
	name    string
	about   string // what the golden encodes, for its companion
	dgs     [][]byte
	islands [][]uint32
}

// wireGoldenCases are the v2 goldens: a keyframe, a delta, many small islands
// in one datagram, a fragmented frame, the same with two parity records and
// edge values.
func wireGoldenCases(t testing.TB) []wireCase {
	w := newWireWorld(t, Config{})
	var out []wireCase
	add := func(name, about string, build func()) {
		build()
		c := wireCase{name: name, about: about, dgs: cloneAll(w.enc.Datagrams())}
		for i := range c.dgs {
			c.islands = append(c.islands, slices.Clone(w.enc.Islands(i)))
		}
		out = append(out, c)
	}
	key := testFrame3(7, 3, 100, quant.Rigid, 1)
	key.Flags = island.FlagInitial
	add("v2-key", "A keyframe: island 7, three rigid members, frame 100 at 1.5 s, Initial, in the observer's datagram 40. The baseline of v2-delta.", func() {
		w.enc.Begin(40, 100, 1_500_000)
		if err := w.enc.AddKey(&key); err != nil {
			t.Fatal(err)
		}
	})
	base := frameTable(&key, 1_500_000)
	add("v2-delta", "A delta: island 7's frame 102 at 1.6 s in datagram 42, coded against frame 100 (v2-key): member 0 moved exactly as predicted, members 1 and 2 did not.", func() {
		f := testFrame3(7, 3, 102, quant.Rigid, 1)
		f.Members[0].Q = predict(f.Members[0].Q, 100_000, quant.Rigid.Precision())
		f.Members[1].Q.X += 20
		f.Members[2].Q.VY -= 25
		w.enc.Begin(42, 102, 1_600_000)
		if err := w.enc.AddDelta(&f, &Ref{Base: base}); err != nil {
			t.Fatal(err)
		}
	})
	smallBase := func(id uint32) Frame {
		f := testFrame3(id, 1, 7, quant.Loose, 0)
		f.Members[0].Q.VX, f.Members[0].Q.VY, f.Members[0].Q.AngVel = 0, 0, 0
		return f
	}
	add("v2-small-base", "Keyframes of 20 one-body loose islands, 1 … 20, at rest: frame 7 at 0.35 s, in datagram 4. The baselines of v2-small.", func() {
		w.enc.Begin(4, 7, 350_000)
		for id := uint32(1); id <= 20; id++ {
			f := smallBase(id)
			if err := w.enc.AddKey(&f); err != nil {
				t.Fatal(err)
			}
		}
	})
	add("v2-small", "The 20 islands of v2-small-base at frame 9, 0.45 s, in datagram 5, against their frame 7, in one batch record: islands 1 … 6 still at rest (predicted), 7 moved (a delta: y 3 quanta lower), 8 … 13 at rest, 14 moved as 7 did, 15 … 20 at rest.", func() {
		w.enc.Begin(5, 9, 450_000)
		for id := uint32(1); id <= 20; id++ {
			f := smallBase(id)
			f.Key.Seq = 9
			b := frameTable(&f, 350_000)
			b.ID = 7
			if id%7 == 0 {
				f.Members[0].Q.Y -= 3
			}
			if err := w.enc.AddDelta(&f, &Ref{Base: b}); err != nil {
				t.Fatal(err)
			}
		}
	})
	add("v2-chain", "A keyframe of a 300-member chain-class island (40), frame 3 at 0.15 s, cut into three fragments, datagrams 1 … 3.", func() {
		f := testFrame3(40, 300, 3, quant.Chain, 2)
		w.enc.Begin(1, 3, 150_000)
		if err := w.enc.AddKey(&f); err != nil {
			t.Fatal(err)
		}
	})
	add("v2-parity", "The chain of v2-chain at frame 4, 0.2 s, with two Reed–Solomon parity records: three data fragments (datagrams 4 … 6), then a parity record in each of datagrams 7 and 8.", func() {
		f := testFrame3(40, 300, 4, quant.Chain, 2)
		if err := w.enc.SetParity(2); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.enc.SetParity(0) }()
		w.enc.Begin(4, 4, 200_000)
		if err := w.enc.AddKey(&f); err != nil {
			t.Fatal(err)
		}
	})
	jkey, jnext := goldenJointFrames()
	add("v2-joint-base", "A joint-predicted keyframe of island 8, a chain of four chain-class links 0.5 m long (anchors (±0.25 m, 0) on each link, in body metres): link 0 hangs by (−0.25, 0) from the world point (0 m, 2 m), link i by (−0.25, 0) from link i − 1's (0.25, 0), each joint a pivot — its Physics, which gives the links of v2-joint. Frame 20 at 1.0 s, datagram 10: link i at angle −π/2 + 0.2·i rad, every link turning at 0.5 rad/s, positions and velocities where the joints put them, so that each link but the first codes them as a quantum or none.", func() {
		w.enc.Begin(10, 20, 1_000_000)
		jkey.Links = NewLinks(goldenJointPhysics())
		if err := w.enc.AddKey(&jkey); err != nil {
			t.Fatal(err)
		}
	})
	add("v2-joint", "A joint-predicted delta of island 8 (v2-joint-base, whose Physics gives the links): frame 21 at 1.05 s in datagram 11, coded against frame 20. Each link turned by 0.03 rad and turns at 0.45 + 0.05·i rad/s; positions and velocities are where the joints put them, so their residuals against the joint prediction are a quantum or none, where the baseline's motion would leave tens.", func() {
		w.enc.Begin(11, 21, 1_050_000)
		jnext.Links = NewLinks(goldenJointPhysics())
		if err := w.enc.AddDelta(&jnext, &Ref{Base: frameTable(&jkey, 1_000_000)}); err != nil {
			t.Fatal(err)
		}
	})
	add("v2-edges", "A keyframe with every key field, the packet number, the sequence and the sender at their maxima, time −1, both flags, loose class, and extreme values (±(2⁵³ − 1), the zero identity, the largest identity).", func() {
		f := Frame{Sender: math.MaxUint32, Key: island.Key{Island: math.MaxUint32, Epoch: math.MaxUint32, Topology: math.MaxUint32, Config: math.MaxUint32, Seq: math.MaxUint32},
			Segment: math.MaxUint32, Flags: island.FlagInitial | island.FlagReleasing, Class: quant.Loose,
			Members: []baseline.Entry{
				{ID: island.MemberID{}, Record: baseline.Record{Q: quant.State{X: 1<<53 - 1, Y: -(1<<53 - 1), Angle: -1, VX: 1, VY: 0, AngVel: math.MinInt32}}},
				{ID: island.MemberID{Stable: math.MaxUint64, Generation: math.MaxUint32}},
			}}
		w.enc.Begin(math.MaxUint32, math.MaxUint32, -1)
		if err := w.enc.AddKey(&f); err != nil {
			t.Fatal(err)
		}
	})
	return out
}

// TestWireGolden compares every v2 golden datagram byte for byte with
// testdata/golden/v2/ (rewrite with -update and review the diff).
func TestWireGolden(t *testing.T) {
	dir := filepath.Join(goldenDir, "v2")
	for _, c := range wireGoldenCases(t) {
		for i, dg := range c.dgs {
			name := fmt.Sprintf("%s.%02d", c.name, i)
			if _, _, err := newWireWorld(t, Config{}).dec.Decode(dg); err != nil {
				t.Fatalf("%s: own output does not decode: %v", name, err)
			}
			checkGolden(t, filepath.Join(dir, name+".bin"), dg, describeWire(c.about, dg)+"\n"+hex.Dump(dg))
		}
	}
}

// describeWire is a golden's companion: what it encodes, then every field as
// a decoder reads it.
func describeWire(about string, dg []byte) string {
	dec, _ := NewDecoder(Config{})
	h, recs, err := dec.Decode(dg)
	if err != nil {
		return about + "\n\ndoes not decode: " + err.Error() + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nversion 3, packet %d, seq %d, time %d µs, sum %#08x, %d bytes\n", about, h.Packet, h.Seq, h.Time, h.Sum, len(dg))
	if dg[HeaderSize] == byte(KindBatch) {
		p := parser{b: dg, off: HeaderSize + 1}
		first, _ := p.uvarint("")
		n, _ := p.uvarint("")
		l, _ := p.uvarint("")
		fmt.Fprintf(&b, "one batch record at offset %d: first island %d, %d islands, a stream of %d bytes at offset %d\n", HeaderSize, first, n, l, p.off)
	}
	kinds := map[RecordKind]string{KindKey: "key", KindDelta: "delta", KindRun: "run", KindParity: "parity"}
	for i, r := range recs {
		fmt.Fprintf(&b, "record %d: %s, island %d, class %d, flags %d", i, kinds[r.Kind], r.Island, r.Class, r.Flags)
		switch r.Kind {
		case KindRun:
			fmt.Fprintf(&b, ", lag %d, islands %d … %d\n", r.Lag, r.Island, r.Island+r.Count-1)
			continue
		case KindParity:
			fmt.Fprintf(&b, ", parity %d of %d for %d data fragments, shard %d bytes\n", r.Index, r.Parity, r.Fragments, len(r.Shard()))
			continue
		case KindDelta:
			fmt.Fprintf(&b, ", lag %d", r.Lag)
			if r.Joint {
				b.WriteString(", joint-predicted (x, y, vx and vy of every member hanging on a member before it, or on the world, against where the joint puts them)")
			} else if r.Total > 1 || r.Fragments > 1 {
				b.WriteString(", not joint-predicted")
			}
		case KindKey:
			fmt.Fprintf(&b, ", sender %d, epoch %d, topology %d, config %d, segment %d", r.Sender, r.Epoch, r.Topology, r.Config, r.Segment)
		}
		fmt.Fprintf(&b, ", members: %d", r.Total)
		if r.Fragments > 1 {
			fmt.Fprintf(&b, ", fragment %d of %d: members %d … %d, frame digest (the frame sum) %#016x, the members range-coded in %d bytes", r.Index, r.Fragments, r.First, r.First+r.N-1, r.Digest, len(r.raw))
		}
		b.WriteString("\n")
		if r.Kind == KindKey && r.Joint {
			b.WriteString("  joint-predicted: each member's values as coded — x, y, vx and vy less where its joint puts it (when it hangs on the world or a member before it in the record), every other value less the member before's (the record's first member: as such)\n")
			for j, v := 0, r.vals; len(v) >= 8; j, v = j+1, v[8:] {
				fmt.Fprintf(&b, "  member %d: id %d.g%d, coded x %d, y %d, angle %d, vx %d, vy %d, angular velocity %d\n", r.First+j, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7])
			}
			continue
		}
		if r.Kind == KindKey {
			ms, _ := r.ExpandKey(nil, nil, h.Time)
			for j, m := range ms {
				if j == 3 && r.N > 4 {
					fmt.Fprintf(&b, "  … %d more members\n", r.N-3)
					break
				}
				fmt.Fprintf(&b, "  member %d: id %d.g%d, x %d, y %d, angle %d, vx %d, vy %d, angular velocity %d\n", r.First+j, m.ID.Stable, m.ID.Generation, m.Q.X, m.Q.Y, m.Q.Angle, m.Q.VX, m.Q.VY, m.Q.AngVel)
			}
			continue
		}
		for k := 0; k < len(r.res); {
			mask := r.res[k]
			n := bits.OnesCount8(uint8(mask))
			fmt.Fprintf(&b, "  changed member: mask %#02x, residuals %v\n", mask, r.res[k+1:k+1+n])
			k += 1 + n
		}
	}
	return b.String()
}

// TestWireGoldensRestore: the goldens carry every baseline their deltas need.
// From the files alone, v2-key restores island 7's frame 100 and v2-delta
// restores frame 102 against it; v2-small-base restores the 20 frames 7
// and v2-small restores their frames 9 against them — every datagram's sum
// checked, so each restores exactly what was encoded.
func TestWireGoldensRestore(t *testing.T) {
	read := func(name string) []byte { return readWireGolden(t, name) }
	w := newWireWorld(t, Config{})
	for _, pair := range [][2]string{{"v2-key.00", "v2-delta.00"}, {"v2-small-base.00", "v2-small.00"}} {
		bases := w.receive([][]byte{read(pair[0])}, nil)
		got := w.receive([][]byte{read(pair[1])}, bases)
		if len(got) == 0 || len(got) != len(bases) {
			t.Fatalf("%s against %s: %d frames restored, %d baselines", pair[1], pair[0], len(got), len(bases))
		}
	}
}

// readWireGolden reads testdata/golden/v2/name.bin.
func readWireGolden(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join(goldenDir, "v2", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixCheck rewrites a wire-3 datagram's check to match its bytes.
func fixCheck(b []byte) []byte {
	if len(b) >= HeaderSize {
		binary.LittleEndian.PutUint32(b[checkAt:], datagramCheck(b))
	}
	return b
}

// FuzzDecodeWire: any input decodes or fails with a typed error; what decodes
// expands without panicking. The check is fixed up first, so that the
// fuzzer explores the records rather than the checksum.
func FuzzDecodeWire(f *testing.F) {
	for _, c := range wireGoldenCases(f) {
		for _, dg := range c.dgs {
			f.Add(dg)
		}
	}
	dec, _ := NewDecoder(Config{MaxDatagram: MaxMaxDatagram})
	base := &baseline.Table{}
	var dst []baseline.Entry
	baseOf := func(n int, class quant.Class) *baseline.Table {
		base.Frame.Class = class
		base.Entries = base.Entries[:0]
		for i := 0; i < n; i++ {
			base.Entries = append(base.Entries, baseline.Entry{ID: island.MemberID{Stable: uint64(i)}})
		}
		return base
	}
	// linksOf is a chain's links for a delta of n members against base
	// (island, topology and config 0): every joint-predicted delta restores.
	linksOf := func(r *Record) *Links {
		if !r.Joint {
			return nil
		}
		p := chainLinks(0, r.Total, 0.25, [2]float64{1, 2})
		p.Topology, p.Config = 0, 0
		return NewLinks(p)
	}
	// keyLinksOf is a chain's links for a keyframe record, or nil.
	keyLinksOf := func(r *Record) *Links {
		if !r.Joint {
			return nil
		}
		p := chainLinks(r.Island, r.Total, 0.25, [2]float64{1, 2})
		p.Topology, p.Config = r.Topology, r.Config
		return NewLinks(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseStandalone(b, Config{})
		if err == nil {
			if r.Fragments < 2 || r.Index >= r.Fragments || (r.Kind != KindKey && r.Kind != KindDelta) {
				t.Fatalf("standalone %+v", r)
			}
			if r.Kind == KindDelta {
				if dst, err = r.ExpandDelta(dst, baseOf(r.Total, r.Class), linksOf(&r), 0); err != nil || len(dst) != r.N {
					t.Fatalf("standalone delta expanded %d of %d: %v", len(dst), r.N, err)
				}
			}
		} else if !isCodecError(err) {
			t.Fatal(err)
		}
		// The decoder's own parse (the receiver's) says the same.
		r2, err2 := dec.ParseStandalone(b)
		same := slices.Equal(r2.res, r.res) && bytes.Equal(r2.members, r.members)
		r2.res, r.res, r2.members, r.members = nil, nil, nil, nil
		if fmt.Sprint(err2) != fmt.Sprint(err) || (err == nil && (!reflect.DeepEqual(r2, r) || !same)) {
			t.Fatalf("decoder: %+v %v; ParseStandalone: %+v %v", r2, err2, r, err)
		}
		h, recs, err := dec.Decode(fixCheck(b))
		if err != nil {
			if recs != nil || !isCodecError(err) {
				t.Fatalf("recs=%d err=%v", len(recs), err)
			}
			return
		}
		for _, r := range recs {
			switch r.Kind {
			case KindParity:
				if len(r.Shard()) == 0 || r.Index >= r.Parity || r.Fragments < 2 {
					t.Fatalf("parity record %+v", r)
				}
			case KindKey:
				if dst, err = r.ExpandKey(dst, keyLinksOf(&r), h.Time); err != nil || len(dst) != r.N {
					t.Fatalf("%d members expanded of %d: %v", len(dst), r.N, err)
				}
			case KindDelta:
				if dst, err = r.ExpandDelta(dst, baseOf(r.Total, r.Class), linksOf(&r), h.Time); err != nil || len(dst) != r.N {
					t.Fatalf("delta expanded %d of %d: %v", len(dst), r.N, err)
				}
			}
		}
	})
}

// BenchmarkWireDecode: decode and expand a 300-member chain delta (every
// member moved), per member.
func BenchmarkWireDecode(b *testing.B) {
	w := newWireWorld(b, Config{MaxDatagram: MaxMaxDatagram})
	key := testFrame3(40, 300, 1, quant.Chain, 1)
	base := frameTable(&key, 50_000)
	f := testFrame3(40, 300, 2, quant.Chain, 1.3)
	w.enc.Begin(0, 2, 100_000)
	if err := w.enc.AddDelta(&f, &Ref{Base: base}); err != nil {
		b.Fatal(err)
	}
	dg := bytes.Clone(w.enc.Datagrams()[0])
	var dst []baseline.Entry
	b.ReportAllocs()
	for b.Loop() {
		h, recs, err := w.dec.Decode(dg)
		if err != nil {
			b.Fatal(err)
		}
		if dst, err = recs[0].ExpandDelta(dst, base, nil, h.Time); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*300), "ns/member")
}

// TestWireDecodeAllocs: decoding and expanding in steady state allocates
// nothing.
func TestWireDecodeAllocs(t *testing.T) {
	w := newWireWorld(t, Config{MaxDatagram: MaxMaxDatagram})
	key := testFrame3(40, 300, 1, quant.Chain, 1)
	base := frameTable(&key, 50_000)
	f := testFrame3(40, 300, 2, quant.Chain, 1.3)
	w.enc.Begin(0, 2, 100_000)
	if err := w.enc.AddDelta(&f, &Ref{Base: base}); err != nil {
		t.Fatal(err)
	}
	dg := bytes.Clone(w.enc.Datagrams()[0])
	var dst []baseline.Entry
	step := func() {
		h, recs, _ := w.dec.Decode(dg)
		dst, _ = recs[0].ExpandDelta(dst, base, nil, h.Time)
		dst = Predict(dst[:0], base, h.Time)
	}
	step()
	if a := testing.AllocsPerRun(100, step); a != 0 {
		t.Fatalf("%.1f allocations per decode", a)
	}
}

// TestWireParity: a frame cut into three fragments with two parity records
// is restored from any three of its five records — data fragments rebuilt
// from parity parse and expand to the very members sent.
func TestWireParity(t *testing.T) {
	w := newWireWorld(t, Config{})
	if err := w.enc.SetParity(2); err != nil {
		t.Fatal(err)
	}
	f := testFrame3(40, 300, 7, quant.Chain, 2)
	w.enc.Begin(0, 7, 350_000)
	if err := w.enc.AddKey(&f); err != nil {
		t.Fatal(err)
	}
	dgs := cloneAll(w.enc.Datagrams())
	data, parity := splitParity(t, w.dec, dgs)
	k, m := len(data), len(parity)
	if k < 2 || m != 2 || parity[0].Fragments != k {
		t.Fatalf("%d data fragments, %d parity records", k, m)
	}
	var dec ParityDecoder
	for lost := range k { // lose data fragment `lost` and one more record
		shards := make([][]byte, k+m)
		for i, r := range data {
			if i != lost {
				shards[i] = AppendStandalone(nil, &r) // Reconstruct pads it
			}
		}
		shards[k] = parity[0].Shard()
		shards[k+1] = nil // and a parity record lost too
		if err := dec.Reconstruct(shards, k, m); err != nil {
			t.Fatal(err)
		}
		r, err := ParseStandalone(shards[lost], Config{})
		if err != nil {
			t.Fatalf("rebuilt fragment %d: %v", lost, err)
		}
		got, _ := r.ExpandKey(nil, nil, 350_000)
		for i, e := range got {
			if want := f.Members[r.First+i]; e.ID != want.ID || e.Q != want.Q {
				t.Fatalf("rebuilt fragment %d member %d differs", lost, i)
			}
		}
	}
	// Shards that cannot be one frame's are refused: parity records of
	// different lengths, a data shard longer than the parity, no parity.
	if k != 3 {
		t.Fatalf("%d data fragments; the cases below are written for 3", k)
	}
	p0, p1 := parity[0].Shard(), parity[1].Shard()
	long := append(AppendStandalone(nil, &data[0]), make([]byte, len(p0))...)
	for name, shards := range map[string][][]byte{
		"parity lengths": {nil, AppendStandalone(nil, &data[1]), AppendStandalone(nil, &data[2]), p0, p1[:len(p1)-1]},
		"long data":      {nil, long, AppendStandalone(nil, &data[2]), p0, p1},
		"no parity":      {nil, AppendStandalone(nil, &data[1]), AppendStandalone(nil, &data[2]), nil, nil},
	} {
		if err := dec.Reconstruct(shards, k, m); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Standalone forms of records that were not lost are what the encoder
	// computed parity over: re-encoding them is exact.
	for _, r := range data {
		if r2, err := ParseStandalone(AppendStandalone(nil, &r), Config{}); err != nil || r2.Index != r.Index {
			t.Fatalf("standalone round trip: %v", err)
		}
	}
}

// TestWireParityMatchesDoc computes the parity of the v2-parity golden from
// the wire format's own definition — GF(2⁸) over 0x11d, the Vandermonde
// matrix made systematic — with nothing from the Reed–Solomon library, and
// finds the golden's parity shards.
func TestWireParityMatchesDoc(t *testing.T) {
	mul := func(a, b byte) byte {
		var p byte
		for b != 0 {
			if b&1 != 0 {
				p ^= a
			}
			hi := a & 0x80
			a <<= 1
			if hi != 0 {
				a ^= 0x1d
			}
			b >>= 1
		}
		return p
	}
	inv := func(a byte) byte {
		for x := 1; x < 256; x++ {
			if mul(a, byte(x)) == 1 {
				return byte(x)
			}
		}
		t.Fatal("no inverse")
		return 0
	}
	pow := func(a byte, n int) byte {
		p := byte(1)
		for range n {
			p = mul(p, a)
		}
		return p
	}
	var dgs [][]byte
	for _, c := range wireGoldenCases(t) {
		if c.name == "v2-parity" {
			dgs = c.dgs
		}
	}
	dec, _ := NewDecoder(Config{})
	recs, par := splitParity(t, dec, dgs)
	var data [][]byte
	for i := range recs {
		data = append(data, AppendStandalone(nil, &recs[i]))
	}
	k, m := len(data), len(par)
	if k != 3 || m != 2 {
		t.Fatalf("%d data, %d parity", k, m)
	}
	// top: the k×k top of the Vandermonde matrix, inverted by Gauss–Jordan.
	a := make([][]byte, k)
	for r := range k {
		a[r] = make([]byte, 2*k)
		for c := range k {
			a[r][c] = pow(byte(r), c)
		}
		a[r][k+r] = 1
	}
	for c := range k {
		p := c
		for a[p][c] == 0 {
			p++
		}
		a[c], a[p] = a[p], a[c]
		iv := inv(a[c][c])
		for j := range 2 * k {
			a[c][j] = mul(a[c][j], iv)
		}
		for r := range k {
			if r != c && a[r][c] != 0 {
				f := a[r][c]
				for j := range 2 * k {
					a[r][j] ^= mul(f, a[c][j])
				}
			}
		}
	}
	l := 0
	for _, d := range data {
		l = max(l, len(d))
	}
	for j, pr := range par {
		want := pr.Shard()
		if len(want) != l {
			t.Fatalf("shard length %d, longest standalone form %d", len(want), l)
		}
		// row k+j of V · V₀⁻¹
		row := make([]byte, k)
		for i := range k {
			for x := range k {
				row[i] ^= mul(pow(byte(k+j), x), a[x][k+i])
			}
		}
		for b := range want {
			var v byte
			for i := range k {
				if b < len(data[i]) {
					v ^= mul(row[i], data[i][b])
				}
			}
			if v != want[b] {
				t.Fatalf("parity %d byte %d: %#x from the definition, %#x on the wire", j, b, v, want[b])
			}
		}
	}
}

// BenchmarkWireParity: cutting a 300-member chain keyframe into fragments
// without and with two parity records (encode, per member), and rebuilding
// one lost data fragment from the others and a parity record (per rebuilt
// fragment, standalone forms included).
func BenchmarkWireParity(b *testing.B) {
	f := testFrame3(40, 300, 4, quant.Chain, 2)
	for _, m := range []int{0, 2} {
		b.Run(fmt.Sprintf("encode/parity=%d", m), func(b *testing.B) {
			w := newWireWorld(b, Config{})
			if err := w.enc.SetParity(m); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				w.enc.Begin(4, 4, 200_000)
				if err := w.enc.AddKey(&f); err != nil {
					b.Fatal(err)
				}
				_ = w.enc.Datagrams()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(f.Members)), "ns/member")
		})
	}
	b.Run("rebuild", func(b *testing.B) {
		w := newWireWorld(b, Config{})
		_ = w.enc.SetParity(2)
		w.enc.Begin(4, 4, 200_000)
		if err := w.enc.AddKey(&f); err != nil {
			b.Fatal(err)
		}
		data, par := splitParity(b, w.dec, cloneAll(w.enc.Datagrams()))
		k, l := len(data), len(par[0].Shard())
		shards := make([][]byte, k+len(par))
		bufs := make([][]byte, k)
		for i := range bufs {
			bufs[i] = make([]byte, 0, l)
		}
		var dec ParityDecoder
		b.ReportAllocs()
		for b.Loop() {
			for i := 1; i < k; i++ { // fragment 0 is lost
				shards[i] = AppendStandalone(bufs[i][:0], &data[i])
			}
			shards[0] = bufs[0][:0]
			shards[k] = par[0].Shard()
			if err := dec.Reconstruct(shards, k, len(par)); err != nil {
				b.Fatal(err)
			}
			if _, err := ParseStandalone(shards[0], Config{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestWireParitySizes: seeded frames of many sizes, islands and datagram
// caps, with 1–3 parity records: every datagram fits the cap, every data
// fragment is within a few bytes of the others (even cut), and every
// record decodes.
func TestWireParitySizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	protected := 0
	for range 200 {
		maxDg := MinMaxDatagram + rng.IntN(1400)
		w := newWireWorld(t, Config{MaxDatagram: maxDg})
		m := 1 + rng.IntN(3)
		if err := w.enc.SetParity(m); err != nil {
			t.Fatal(err)
		}
		isl := []uint32{1, 200, 70_000, math.MaxUint32}[rng.IntN(4)]
		n := 20 + rng.IntN(600)
		f := testFrame3(isl, n, 5, quant.Class(rng.IntN(3)), rng.Float64()*100)
		w.enc.Begin(0, 5, 250_000)
		if err := w.enc.AddKey(&f); err != nil {
			continue // too many fragments for the cap: refused, not cut wrong
		}
		var data []int
		parity := 0
		for _, dg := range w.enc.Datagrams() {
			if len(dg) > maxDg {
				t.Fatalf("cap %d: a %d-byte datagram", maxDg, len(dg))
			}
			_, recs, err := w.dec.Decode(dg)
			if err != nil {
				t.Fatalf("cap %d, island %d, %d members: %v", maxDg, isl, n, err)
			}
			for _, r := range recs {
				if r.Kind == KindParity {
					parity++
				} else if r.Fragments > 1 {
					data = append(data, len(dg))
				}
			}
		}
		if len(data) > 1 && len(data) <= MaxParityFragments {
			protected++
			if parity != m {
				t.Fatalf("%d data fragments, %d parity records, want %d", len(data), parity, m)
			}
		}
		if len(data) > 1 && slices.Max(data)-slices.Min(data) > 64 {
			t.Fatalf("cap %d: fragment sizes %v are not even", maxDg, data)
		}
	}
	if protected < 100 {
		t.Fatalf("only %d of 200 frames were cut and protected", protected)
	}
}

// TestWireEncodeAllocs: once warm, cutting a 300-member frame into fragments
// allocates nothing; with parity, only the Reed–Solomon library's one
// working array per frame.
func TestWireEncodeAllocs(t *testing.T) {
	f := testFrame3(40, 300, 4, quant.Chain, 2)
	for _, c := range []struct {
		parity int
		allocs float64
	}{{0, 0}, {2, 1}} {
		w := newWireWorld(t, Config{})
		_ = w.enc.SetParity(c.parity)
		step := func() {
			w.enc.Begin(4, 4, 200_000)
			if err := w.enc.AddKey(&f); err != nil {
				t.Fatal(err)
			}
			if len(w.enc.Datagrams()) < 2 {
				t.Fatal("not fragmented")
			}
		}
		step()
		if a := testing.AllocsPerRun(100, step); a > c.allocs {
			t.Fatalf("parity %d: %.1f allocations per frame", c.parity, a)
		}
	}
}

// TestWireIslands: the islands the encoder reports for each datagram are
// what a decoder finds in it — every record's island, a run's and a gap
// delta's every covered one — over every golden case (runs, gap deltas,
// fragments, parity records, the largest island id).
func TestWireIslands(t *testing.T) {
	dec, _ := NewDecoder(Config{})
	for _, c := range wireGoldenCases(t) {
		for i, dg := range c.dgs {
			_, recs, err := dec.Decode(dg)
			if err != nil {
				t.Fatal(err)
			}
			var want []uint32
			for _, r := range recs {
				switch r.Kind {
				case KindRun:
					for k := uint32(0); k < r.Count; k++ {
						want = append(want, r.Island+k)
					}
				default:
					want = append(want, r.Island)
				}
			}
			if !slices.Equal(c.islands[i], want) {
				t.Errorf("%s.%02d: encoder says %v, the datagram holds %v", c.name, i, c.islands[i], want)
			}
		}
	}
}

// TestQuantRecords: AppendQuantRecords lays out each member as a frame sum
// hashes it, after bytes already in the buffer; the records read back as
// the very members; and QuantSum over them is FrameSum, for frames hashed
// from the stack (one member) and streamed alike.
func TestQuantRecords(t *testing.T) {
	for _, n := range []int{1, 8, 9, 40} {
		f := testFrame3(40, n, 2, quant.Chain, 1.3)
		b := AppendQuantRecords([]byte("head"), f.Members)
		if string(b[:4]) != "head" || len(b) != 4+n*MemberSize {
			t.Fatalf("%d members: %d bytes", n, len(b))
		}
		r := QuantRecords(b[4:])
		var one []byte
		for i, e := range f.Members {
			if r.ID(i) != e.ID || r.Quant(i) != e.Q {
				t.Fatalf("member %d: %v %+v", i, r.ID(i), r.Quant(i))
			}
			var m [MemberSize]byte
			putMemberSum(&m, &f.Members[i])
			one = append(one, m[:]...)
		}
		if !bytes.Equal(one, r) {
			t.Fatal("records differ from what a frame sum hashes")
		}
		if got := r.AppendEntries(nil); !sameMembers(got, f.Members) {
			t.Fatal("AppendEntries differs")
		}
		h := FragmentHeader{Sender: f.Sender, Key: f.Key, Time: 1234, Segment: f.Segment, Flags: f.Flags,
			TotalMembers: uint32(n), Quantized: true, Class: f.Class}
		if QuantSum(&h, r) != FrameSum(f.Sender, f.Key, 1234, f.Segment, f.Flags, f.Class, f.Members) {
			t.Fatalf("%d members: QuantSum differs from FrameSum", n)
		}
	}
}

// TestWireDecoderParseStandalone: a delta fragment rebuilt from parity and
// parsed by the decoder between two Decode calls restores the members sent,
// as ParseStandalone's record does, and leaves the records of the last
// Decode as they were.
func TestWireDecoderParseStandalone(t *testing.T) {
	w := newWireWorld(t, Config{})
	if err := w.enc.SetParity(2); err != nil {
		t.Fatal(err)
	}
	key := testFrame3(40, 300, 1, quant.Chain, 1)
	base := frameTable(&key, 50_000)
	g := testFrame3(40, 300, 2, quant.Chain, 1.3)
	for i := range g.Members { // residuals that differ from member to member
		g.Members[i].Q.X += int64(i*7919%211) - 100
		g.Members[i].Q.Y += int64(i*104729%97) - 40
		g.Members[i].Q.Angle -= int64(i * 15485863 % 61)
	}
	w.enc.Begin(0, 2, 100_000)
	if err := w.enc.AddDelta(&g, &Ref{Base: base}); err != nil {
		t.Fatal(err)
	}
	dgs := cloneAll(w.enc.Datagrams())
	// fragment decodes datagram i and returns its delta fragment record.
	fragment := func(i int) (island.Time, Record) {
		h, recs, err := w.dec.Decode(dgs[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == KindDelta && r.Fragments > 1 {
				return h.Time, r
			}
		}
		t.Fatalf("datagram %d carries no delta fragment", i)
		return 0, Record{}
	}
	check := func(what string, r *Record, tm island.Time) {
		t.Helper()
		got, err := r.ExpandDelta(nil, base, nil, tm)
		if err != nil || len(got) != r.N {
			t.Fatalf("%s: %d members, %v", what, len(got), err)
		}
		for i, e := range got {
			if m := g.Members[r.First+i]; e.ID != m.ID || e.Q != m.Q {
				t.Fatalf("%s: member %d is %+v, sent %+v", what, r.First+i, e.Q, m.Q)
			}
		}
	}
	t1, r1 := fragment(1)
	shard := AppendStandalone(nil, &r1)
	t0, r0 := fragment(0)
	res0 := slices.Clone(r0.res)
	rebuilt, err := w.dec.ParseStandalone(shard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r0.res, res0) {
		t.Fatal("parsing the shard changed the residuals of the record decoded before")
	}
	check("rebuilt by the decoder", &rebuilt, t1)
	check("the record decoded before", &r0, t0)
	alone, err := ParseStandalone(shard, Config{})
	if err != nil {
		t.Fatal(err)
	}
	check("ParseStandalone", &alone, t1)
}

// TestWireClassMustMatchBaseline: a delta whose class bits differ from its
// baseline's class is malformed — the residuals would be read at another
// precision than they were coded at.
func TestWireClassMustMatchBaseline(t *testing.T) {
	w := newWireWorld(t, Config{})
	f := testFrame3(7, 3, 102, quant.Rigid, 1)
	base := frameTable(&f, 1_500_000)
	base.ID = 100
	f.Members[1].Q.X += 20
	w.enc.Begin(42, 102, 1_600_000)
	if err := w.enc.AddDelta(&f, &Ref{Base: base}); err != nil {
		t.Fatal(err)
	}
	_, recs, err := w.dec.Decode(w.enc.Datagrams()[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recs[0].ExpandDelta(nil, base, nil, 1_600_000); err != nil {
		t.Fatalf("matching class: %v", err)
	}
	base.Frame.Class = quant.Loose
	if _, err := recs[0].ExpandDelta(nil, base, nil, 1_600_000); !errors.Is(err, ErrMalformed) {
		t.Fatalf("class rigid against a loose baseline: %v", err)
	}
}

// TestFrameSumMatchesDefinition: the frame sum is xxhash64 over exactly
// the bytes docs/wire-format.md lists, for frames hashed from one buffer
// (up to 8 members) and streamed (more).
func TestFrameSumMatchesDefinition(t *testing.T) {
	for _, n := range []int{0, 1, 8, 9, 40} {
		f := testFrame3(77, n, 12, quant.Chain, 3)
		key := f.Key
		var b []byte
		for _, v := range []uint32{key.Island, uint32(f.Sender), key.Epoch, key.Topology, key.Config, key.Seq} {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		tm := island.Time(-5)
		b = binary.LittleEndian.AppendUint64(b, uint64(tm))
		b = binary.LittleEndian.AppendUint32(b, 9)
		b = append(b, byte(island.FlagReleasing), byte(quant.Chain))
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, m := range f.Members {
			b = binary.LittleEndian.AppendUint64(b, m.ID.Stable)
			b = binary.LittleEndian.AppendUint32(b, m.ID.Generation)
			for _, v := range []int64{m.Q.X, m.Q.Y, m.Q.Angle, m.Q.VX, m.Q.VY, m.Q.AngVel} {
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		}
		if got, want := FrameSum(f.Sender, key, -5, 9, island.FlagReleasing, quant.Chain, f.Members), xxhash.Sum64(b); got != want {
			t.Errorf("%d members: %#x, the definition gives %#x", n, got, want)
		}
	}
	small, big := testFrame3(1, 3, 1, quant.Rigid, 0), testFrame3(2, 30, 1, quant.Rigid, 0)
	if a := testing.AllocsPerRun(100, func() {
		_ = FrameSum(small.Sender, small.Key, 0, 0, 0, quant.Rigid, small.Members)
		_ = FrameSum(big.Sender, big.Key, 0, 0, 0, quant.Rigid, big.Members)
	}); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// TestWireIslandsInAnyOrder: islands added in any order — one again, as a
// hand-off adds the old holder's last frame and the new holder's first, or
// one below the last — go in records the decoder reads back, every one: a
// batch never codes an island at or below the one before it.
func TestWireIslandsInAnyOrder(t *testing.T) {
	for _, order := range [][]uint32{{5, 5}, {5, 3}, {2, 4, 6, 4, 1, 9}, {7, 8, 8, 8, 2}} {
		enc, _ := NewEncoder(Config{})
		enc.Begin(1, 10, 500_000)
		for i, isl := range order {
			f := testFrame3(isl, 1, 10, quant.Rigid, float64(i))
			if err := enc.AddKey(&f); err != nil {
				t.Fatal(err)
			}
		}
		dec, _ := NewDecoder(Config{})
		var got []uint32
		for _, dg := range enc.Datagrams() {
			_, recs, err := dec.Decode(dg)
			if err != nil {
				t.Fatalf("%v: %v", order, err)
			}
			for _, r := range recs {
				got = append(got, r.Island)
			}
		}
		if !slices.Equal(got, order) {
			t.Fatalf("added %v, decoded %v", order, got)
		}
	}
}
