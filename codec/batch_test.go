package codec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// rcSymbol is one symbol of a range-coder round trip: a context bit, a
// direct bit, or a magnitude.
type rcSymbol struct {
	kind int // 0 context bit, 1 direct bit, 2 magnitude, 3 signed
	ctx  int
	bit  bool
	v    uint64
	s    int64
}

func rcWrite(e *rcEncoder, ps []prob, ms []sgnModel, syms []rcSymbol) {
	for _, s := range syms {
		switch s.kind {
		case 0:
			e.bit(&ps[s.ctx], s.bit)
		case 1:
			e.direct(s.bit)
		case 2:
			e.mag(&ms[s.ctx].mag, s.v)
		case 3:
			e.signed(&ms[s.ctx], s.s)
		}
	}
}

// TestRangeCoderRoundTrip: seeded random symbol streams — skewed and
// uniform bits in few and many contexts, direct bits, magnitudes and
// signed values up to the extremes — decode to what was coded, and an
// encoder that took symbols back (rollback) writes the very bytes of one
// that never coded them.
func TestRangeCoderRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := rng.IntN(2000)
		skew := rng.Float64()
		syms := make([]rcSymbol, n)
		for i := range syms {
			s := &syms[i]
			s.kind = rng.IntN(4)
			s.ctx = rng.IntN(8)
			s.bit = rng.Float64() < skew
			switch rng.IntN(4) {
			case 0:
				s.v = 1 + uint64(rng.IntN(4))
			case 1:
				s.v = 1 + rng.Uint64N(1<<20)
			case 2:
				s.v = max(1, rng.Uint64())
			default:
				s.v = math.MaxUint64
			}
			s.s = int64(rng.Uint64()) >> rng.IntN(64)
			if s.s == 0 {
				s.s = math.MinInt64
			}
		}
		fresh := func() ([]prob, []sgnModel) {
			ps := make([]prob, 8)
			ms := make([]sgnModel, 8)
			for i := range ps {
				ps[i] = probInit
				ms[i].init()
			}
			return ps, ms
		}
		var e rcEncoder
		e.reset(nil)
		ps, ms := fresh()
		cut := n / 2
		rcWrite(&e, ps, ms, syms[:cut])
		// Code some other symbols, then take them back.
		mark := e.mark()
		rcWrite(&e, ps, ms, syms[cut:])
		e.rollback(mark)
		rcWrite(&e, ps, ms, syms[cut:])
		out := bytes.Clone(e.finish())

		var plain rcEncoder
		plain.reset(nil)
		pp, pm := fresh()
		rcWrite(&plain, pp, pm, syms)
		bound := plain.bound()
		if !bytes.Equal(plain.finish(), out) {
			t.Fatalf("trial %d: a rollback changed the stream", trial)
		}
		if bound < len(out) {
			t.Fatalf("trial %d: bound %d below the stream's %d bytes", trial, bound, len(out))
		}

		var d rcDecoder
		d.reset(out)
		dp, dm := fresh()
		for i, s := range syms {
			var ok bool
			switch s.kind {
			case 0:
				ok = d.bit(&dp[s.ctx]) == s.bit
			case 1:
				ok = d.direct() == s.bit
			case 2:
				ok = d.mag(&dm[s.ctx].mag) == s.v
			case 3:
				v, valid := d.signed(&dm[s.ctx])
				ok = valid && v == s.s
			}
			if !ok {
				t.Fatalf("trial %d: symbol %d of %d (%+v) decoded otherwise", trial, i, n, s)
			}
		}
	}
}

// TestRangeCoderCost: a context that sees one bit value learns it, so a
// long skewed stream costs far less than a bit a symbol, while a uniform
// one costs about a bit.
func TestRangeCoderCost(t *testing.T) {
	for _, c := range []struct {
		skew     float64
		min, max float64 // bits per symbol
	}{{0.5, 0.95, 1.1}, {0.02, 0.05, 0.25}, {0, 0, 0.01}} {
		rng := rand.New(rand.NewPCG(3, 4))
		var e rcEncoder
		e.reset(nil)
		p := prob(probInit)
		const n = 20000
		for range n {
			e.bit(&p, rng.Float64() < c.skew)
		}
		got := float64(8*len(e.finish())) / n
		if got < c.min || got > c.max {
			t.Errorf("skew %.2f: %.3f bits a symbol, want %.2f … %.2f", c.skew, got, c.min, c.max)
		}
	}
}

// TestBatchRoundTrip: seeded random broadcasts of many islands — at rest,
// moving as predicted, moving otherwise with residuals up to the extremes,
// keyframes with any identity and values, flags, every class, several
// lags, gaps between island ids, islands of one to fifty members and a few
// of hundreds, cut into fragments, with and without parity — are restored
// exactly, every datagram's sum and every fragmented frame's digest
// checked, at every datagram size.
func TestBatchRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var fragments, parity int
	defer func() {
		t.Logf("%d fragments, %d parity records", fragments, parity)
		if fragments < 20 || parity < 10 {
			t.Errorf("%d fragments and %d parity records in all: the cut was not exercised", fragments, parity)
		}
	}()
	for trial := range 60 {
		size := MinMaxDatagram + rng.IntN(MaxMaxDatagram-MinMaxDatagram)
		if trial%2 == 0 {
			size = DefaultMaxDatagram
		}
		w := newWireWorld(t, Config{MaxDatagram: size})
		if err := w.enc.SetParity(rng.IntN(3)); err != nil {
			t.Fatal(err)
		}
		seq := uint32(100 + rng.IntN(1000))
		now := island.Time(seq) * 50_000
		w.enc.Begin(rng.Uint32(), seq, now)
		bases := map[uint32]*baseline.Table{}
		sent := map[uint32]Frame{}
		isl := uint32(rng.IntN(5))
		for range 1 + rng.IntN(400) {
			isl += 1 + uint32(rng.IntN(3)*rng.IntN(3)*rng.IntN(40))
			n := 1 + rng.IntN(3)
			switch rng.IntN(40) {
			case 0, 1, 2, 3:
				n = 1 + rng.IntN(50)
			case 4: // cut into fragments
				n = 100 + rng.IntN(300)
			}
			class := quant.Class(rng.IntN(3))
			f := Frame{Sender: island.SenderID(rng.IntN(3)), Key: island.Key{Island: isl, Epoch: 1 + uint32(rng.IntN(2)), Topology: 3, Config: 4, Seq: seq},
				Segment: uint32(rng.IntN(2)), Class: class}
			if rng.IntN(8) == 0 {
				f.Flags = island.Flags(rng.IntN(4)) & island.KnownFlags
			}
			for m := range n {
				e := baseline.Entry{ID: island.MemberID{Stable: uint64(isl)*100 + uint64(m), Generation: uint32(rng.IntN(2))}}
				e.Q = quant.State{X: rng.Int64N(1 << 20), Y: rng.Int64N(1 << 12), Angle: rng.Int64N(1<<12) - 1<<11}
				if rng.IntN(2) == 0 {
					e.Q.VX, e.Q.VY, e.Q.AngVel = rng.Int64N(2000)-1000, rng.Int64N(2000)-1000, rng.Int64N(200)-100
				}
				if rng.IntN(40) == 0 {
					e.Q.X, e.Q.VY = math.MaxInt64>>rng.IntN(3), math.MinInt64>>rng.IntN(3)
				}
				f.Members = append(f.Members, e)
			}
			if rng.IntN(5) == 0 { // a keyframe
				if err := w.enc.AddKey(&f); err != nil {
					t.Fatal(err)
				}
				sent[isl] = f
				continue
			}
			lag := 1 + uint32(rng.IntN(3))
			bt := &baseline.Table{ID: seq - lag, Frame: baseline.FrameInfo{Sender: f.Sender, Key: f.Key, Time: now - island.Time(lag)*50_000, Segment: f.Segment, Class: class}}
			bt.Frame.Key.Seq = seq - lag
			for _, m := range f.Members {
				m.Time, m.Segment = bt.Frame.Time, f.Segment
				bt.Entries = append(bt.Entries, m)
			}
			cur := Frame{Sender: f.Sender, Key: f.Key, Segment: f.Segment, Flags: f.Flags, Class: class}
			for _, m := range bt.Entries {
				e := baseline.Entry{ID: m.ID}
				e.Q = m.Q
				switch rng.IntN(3) {
				case 0: // as predicted
					e.Q = predict(m.Q, int64(now-bt.Frame.Time), class.Precision())
				case 1: // small residuals
					e.Q = predict(m.Q, int64(now-bt.Frame.Time), class.Precision())
					e.Q.X += rng.Int64N(9) - 4
					e.Q.AngVel += rng.Int64N(3) - 1
				default: // anything
					e.Q.Y += rng.Int64N(1 << 16)
					e.Q.VX = int64(rng.Uint64())
				}
				cur.Members = append(cur.Members, e)
			}
			if err := w.enc.AddDelta(&cur, &Ref{Base: bt}); err != nil {
				t.Fatal(err)
			}
			bases[isl] = bt
			sent[isl] = cur
		}
		open := w.enc.Size()
		dgs := cloneAll(w.enc.Datagrams())
		total := 0
		for _, dg := range dgs {
			total += len(dg)
		}
		// Size tells the bytes so far: exactly once every datagram is
		// closed, and within a few bytes while a batch is still open.
		if w.enc.Size() != total || open < total-6 || open > total+6 {
			t.Fatalf("trial %d: Size %d while open, %d closed; the datagrams take %d", trial, open, w.enc.Size(), total)
		}
		for i, dg := range dgs {
			if len(dg) > size {
				t.Fatalf("trial %d: datagram %d is %d bytes, the cap %d", trial, i, len(dg), size)
			}
			if _, recs, err := w.dec.Decode(dg); err == nil && len(recs) == 1 {
				switch r := recs[0]; {
				case r.Kind == KindParity:
					parity++
				case r.Fragments > 1:
					fragments++
				}
			}
		}
		got := w.receive(dgs, bases)
		if len(got) != len(sent) {
			t.Fatalf("trial %d: %d islands restored of %d", trial, len(got), len(sent))
		}
		for id, f := range sent {
			tb := got[id]
			if tb == nil || len(tb.Entries) != len(f.Members) {
				t.Fatalf("trial %d: island %d not restored", trial, id)
			}
			for i := range f.Members {
				if tb.Entries[i].ID != f.Members[i].ID || tb.Entries[i].Q != f.Members[i].Q {
					t.Fatalf("trial %d: island %d member %d: %+v, sent %+v", trial, id, i, tb.Entries[i], f.Members[i])
				}
			}
		}
	}
}

// FuzzBatchRoundTrip: islands whose residuals and values the fuzzer picks
// go through the encoder and the decoder and come back exactly.
func FuzzBatchRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(bytes.Repeat([]byte{0x80, 0, 0, 0, 0, 0, 0, 0x7f}, 30))
	f.Add(bytes.Repeat([]byte{0xff}, 200))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		w := newWireWorld(t, Config{})
		const seq, now = 9, 450_000
		w.enc.Begin(1, seq, now)
		at := 0
		next := func() int64 {
			var v [8]byte
			for i := range v {
				v[i] = b[at%len(b)]
				at++
			}
			x := int64(v[0]) | int64(v[1])<<8 | int64(v[2])<<16 | int64(v[3])<<24 | int64(v[4])<<32 | int64(v[5])<<40 | int64(v[6])<<48 | int64(v[7])<<56
			return x >> (uint(v[0]) % 64)
		}
		bases := map[uint32]*baseline.Table{}
		sent := map[uint32]Frame{}
		isl := uint32(0)
		for range 1 + len(b)/8 {
			isl += 1 + uint32(b[at%len(b)]%4)
			n := 1 + int(b[(at+1)%len(b)]%4)
			fr := Frame{Sender: 1, Key: island.Key{Island: isl, Epoch: 1, Seq: seq}, Class: quant.Class(b[at%len(b)] % 3)}
			bt := &baseline.Table{ID: seq - 1, Frame: baseline.FrameInfo{Sender: 1, Key: island.Key{Island: isl, Epoch: 1, Seq: seq - 1}, Time: now - 50_000, Class: fr.Class}}
			for m := range n {
				e := baseline.Entry{ID: island.MemberID{Stable: uint64(next()), Generation: uint32(m)}}
				e.Q = quant.State{X: next(), Y: next(), Angle: next(), VX: next(), VY: next(), AngVel: next()}
				bt.Entries = append(bt.Entries, e)
				c := e
				c.Q = quant.State{X: next(), Y: next(), Angle: next(), VX: next(), VY: next(), AngVel: next()}
				fr.Members = append(fr.Members, c)
			}
			var err error
			if b[at%len(b)]%3 == 0 {
				err = w.enc.AddKey(&fr)
			} else {
				err = w.enc.AddDelta(&fr, &Ref{Base: bt})
				bases[isl] = bt
			}
			if err != nil {
				t.Fatal(err)
			}
			sent[isl] = fr
		}
		got := w.receive(cloneAll(w.enc.Datagrams()), bases)
		for id, fr := range sent {
			tb := got[id]
			if tb == nil {
				t.Fatalf("island %d not restored", id)
			}
			for i := range fr.Members {
				if tb.Entries[i].ID != fr.Members[i].ID || tb.Entries[i].Q != fr.Members[i].Q {
					t.Fatalf("island %d member %d: %+v, sent %+v", id, i, tb.Entries[i], fr.Members[i])
				}
			}
		}
	})
}

// TestBatchAllocs: once warm, encoding and decoding a broadcast of many
// small islands — predicted, deltas and keyframes over several datagrams,
// batch records filled and taken back at their ends — allocates nothing.
func TestBatchAllocs(t *testing.T) {
	w := newWireWorld(t, Config{})
	var keys, deltas []Frame
	var bases []*baseline.Table
	for isl := uint32(1); isl <= 900; isl++ {
		f := testFrame3(isl, 1, 9, quant.Rigid, float64(isl%7))
		bt := frameTable(&f, 350_000)
		bt.ID = 7
		bt.Frame.Key.Seq = 7
		if isl%3 == 0 {
			f.Members[0].Q.X += int64(isl % 11)
		}
		if isl%40 == 0 {
			keys = append(keys, f)
			continue
		}
		deltas = append(deltas, f)
		bases = append(bases, bt)
	}
	var dst []baseline.Entry
	step := func() {
		w.enc.Begin(5, 9, 450_000)
		k, d := 0, 0
		for isl := uint32(1); isl <= 900; isl++ {
			var err error
			if isl%40 == 0 {
				err = w.enc.AddKey(&keys[k])
				k++
			} else {
				err = w.enc.AddDelta(&deltas[d], &Ref{Base: bases[d]})
				d++
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, dg := range w.enc.Datagrams() {
			_, recs, err := w.dec.Decode(dg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				if recs[i].Kind == KindKey {
					dst, _ = recs[i].ExpandKey(dst, nil, 450_000)
				}
			}
		}
	}
	step()
	if n := len(w.enc.Datagrams()); n < 2 {
		t.Fatalf("setup: %d datagrams", n)
	}
	if a := testing.AllocsPerRun(50, step); a != 0 {
		t.Fatalf("%.1f allocations per broadcast", a)
	}
}

// TestWorstBytesBounds: what coding an island adds to a batch stream never
// exceeds the encoder's worst-case bound for it — which lets it code the
// islands far from a datagram's end without logging for a take-back — even
// when every context was trained on the opposite: 999 islands alike (one
// member, residuals +1, the same lag and class, no flags, consecutive),
// then one that is nothing like them, deltas and keyframes in turn.
func TestWorstBytesBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e, _ := NewEncoder(Config{})
	b := &e.bat
	b.st.reset()
	b.rc.reset(nil)
	isl := uint32(0)
	for i := range 20000 {
		big := i%1000 == 999 // after 999 islands that trained every context to the opposite
		isl++
		if big {
			isl += 1 << 20
		}
		it := batchIsland{island: isl, kind: batchDelta, lag: 1, n: 1}
		if big {
			it.class, it.flags, it.lag, it.n = quant.Loose, island.FlagReleasing, 1<<30, 4
		}
		if (i/1000)%3 == 2 {
			it.kind = batchKey
			it.key = [5]uint32{1, 1, 2, 3, 0}
			if big {
				it.key = [5]uint32{rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32()}
			}
		}
		e.dres = e.dres[:0]
		e.keys = e.keys[:0]
		for range it.n {
			var r resMember
			var k keyMember
			k.stable, k.gen = uint64(i), 0
			if big {
				k.stable, k.gen = rng.Uint64(), rng.Uint32()
			}
			for f := range 6 {
				v := int64(1)
				if big {
					v = -int64(rng.Uint64()>>1) | 1
				}
				r.d[f], k.v[f] = v, v
				if v != 0 {
					r.mask |= 1 << f
				}
			}
			e.dres = append(e.dres, r)
			e.keys = append(e.keys, k)
		}
		worst := e.worstBytes(&it)
		before := b.rc.bound()
		b.st.encodeHead(&b.rc, &it)
		if it.kind == batchKey {
			b.st.encodeKey(&b.rc, e.keys, false, nil)
		} else {
			b.st.encodeDelta(&b.rc, e.dres, false)
		}
		if grew := b.rc.bound() - before; grew > worst {
			t.Fatalf("island %d (%+v): the stream grew %d bytes, the bound says %d", i, it, grew, worst)
		}
	}
}
