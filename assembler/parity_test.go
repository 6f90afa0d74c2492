package assembler

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// codedWithParity encodes a keyframe of a chain island of n members, as
// irregular as noise, cut into fragments with m parity records, and returns
// its data fragments and parity records in standalone form (the records
// alias nothing).
func codedWithParity(t testing.TB, isl uint32, n, m int, seq uint32) (data, parity []codec.Record) {
	data, parity, _ = codedDatagrams(t, isl, n, m, seq)
	return data, parity
}

// codedDatagrams is codedWithParity that also returns the datagrams that
// carry the parity records.
func codedDatagrams(t testing.TB, isl uint32, n, m int, seq uint32) (data, parity []codec.Record, parityDgs [][]byte) {
	t.Helper()
	enc, err := codec.NewEncoder(codec.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.SetParity(m); err != nil {
		t.Fatal(err)
	}
	f := codec.Frame{Sender: 1, Key: island.Key{Island: isl, Epoch: 1, Topology: 2, Config: 3, Seq: seq}, Class: quant.Chain}
	for i := range n {
		h := uint64(i+1) * 0x9E3779B97F4A7C15
		f.Members = append(f.Members, baseline.Entry{ID: island.MemberID{Stable: uint64(i + 1)},
			Record: baseline.Record{Q: quant.State{X: int64(h >> 40), Y: int64(h >> 20 & 0xFFFFF), Angle: int64(h & 0xFFF), VX: int64(h >> 50)}}})
	}
	enc.Begin(1, seq, island.Time(seq)*50_000)
	if err := enc.AddKey(&f); err != nil {
		t.Fatal(err)
	}
	for _, dg := range enc.Datagrams() {
		dec, _ := codec.NewDecoder(codec.Config{}) // one each: records stay valid
		_, recs, err := dec.Decode(append([]byte(nil), dg...))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == codec.KindParity {
				parity = append(parity, r)
				parityDgs = append(parityDgs, append([]byte(nil), dg...))
			} else {
				data = append(data, r)
			}
		}
	}
	if len(data) < 3 || len(parity) != m {
		t.Fatalf("%d data fragments, %d parity records: the frame is too small", len(data), len(parity))
	}
	return data, parity, parityDgs
}

func standalone(r *codec.Record) []byte { return codec.AppendStandalone(nil, r) }

// TestParityRebuild: with one data fragment lost, the frame's other
// fragments and one parity record rebuild it — handed back once, equal to
// the lost one, counted Rebuilt — and the frame is then finished: its late
// records make no new entry and cost nothing.
func TestParityRebuild(t *testing.T) {
	data, par := codedWithParity(t, 40, 300, 2, 5)
	a := mustNew(t, Config{})
	lost := 1
	if got := a.ParityData(0, 5, &data[0]); got != nil {
		t.Fatal("a data fragment was kept before any parity record arrived")
	}
	if got := a.ParityRecord(0, 5, &par[0]); got != nil || a.Stats().ParityFrames != 1 {
		t.Fatalf("parity record: %d rebuilt, %d entries", len(got), a.Stats().ParityFrames)
	}
	var rebuilt []codec.Record
	for i := range data {
		if i != lost {
			rebuilt = a.ParityData(int64(i), 5, &data[i])
		}
	}
	if len(rebuilt) == 0 { // fragment 0 was not kept: the second parity record completes the set
		rebuilt = a.ParityRecord(9, 5, &par[1])
	}
	if len(rebuilt) != 1 || !bytes.Equal(standalone(&rebuilt[0]), standalone(&data[lost])) {
		t.Fatalf("rebuilt %d fragments", len(rebuilt))
	}
	st := a.Stats()
	if st.Count(Rebuilt) != 1 || st.ParityFrames != 0 || st.PendingBytes != 0 {
		t.Fatalf("after the rebuild: %d rebuilt, %d entries, %d bytes", st.Count(Rebuilt), st.ParityFrames, st.PendingBytes)
	}
	if got := a.ParityData(10, 5, &data[lost]); got != nil || a.Stats().ParityFrames != 0 {
		t.Fatal("a finished frame's late fragment made an entry")
	}
	// A new timeline numbers frames anew: the finished frame no longer shuts
	// out a frame of the same number.
	a.Reset()
	a.ParityRecord(11, 5, &par[0])
	if a.Stats().ParityFrames != 1 {
		t.Fatal("after Reset, a frame with a finished frame's number got no entry")
	}
}

// TestParityAllDataArrived: once parity is on (a record of an earlier
// frame), a frame whose every data fragment arrived is finished without a
// rebuild, and its parity arriving late makes no entry.
func TestParityAllDataArrived(t *testing.T) {
	data, par := codedWithParity(t, 40, 300, 1, 5)
	a := mustNew(t, Config{})
	a.ParityRecord(0, 4, &par[0])
	for i := range data {
		if got := a.ParityData(0, 5, &data[i]); got != nil {
			t.Fatal("rebuilt a fragment that arrived")
		}
	}
	if st := a.Stats(); st.ParityFrames != 1 || st.Count(Rebuilt) != 0 {
		t.Fatalf("%+v", st)
	}
	if a.ParityRecord(0, 5, &par[0]); a.Stats().ParityFrames != 1 {
		t.Fatal("the late parity of a finished frame made an entry")
	}
}

// TestParityForged: parity whose shard was altered (the datagram's check
// recomputed, as an attacker would) rebuilds something that is not a
// fragment of the frame: it is refused, counted RejectParity, and nothing is
// handed back.
func TestParityForged(t *testing.T) {
	data, _, dgs := codedDatagrams(t, 40, 300, 1, 5)
	// The rebuilt fragment's head and island. (Altered further on, it still
	// parses as a fragment of the frame and is handed back: reassembly
	// refuses it by the frame's digest.)
	for _, at := range []int{0, 1} {
		a := mustNew(t, Config{})
		dg := append([]byte(nil), dgs[0]...)
		dec, _ := codec.NewDecoder(codec.Config{})
		_, recs, _ := dec.Decode(dg)
		dg[len(dg)-len(recs[0].Shard())+at] ^= 0x5a
		d := xxhash.New()
		_, _ = d.Write(dg[:25])
		_, _ = d.Write(dg[codec.HeaderSize:])
		binary.LittleEndian.PutUint32(dg[25:], uint32(d.Sum64()))
		_, recs, err := dec.Decode(dg)
		if err != nil {
			t.Fatal(err)
		}
		a.ParityRecord(0, 5, &recs[0])
		var got []codec.Record
		for i := 1; i < len(data); i++ {
			got = a.ParityData(0, 5, &data[i])
		}
		if got != nil || a.Stats().Count(RejectParity) != 1 || a.Stats().Count(Rebuilt) != 0 {
			t.Fatalf("byte %d forged: %d handed back, %d refused", at, len(got), a.Stats().Count(RejectParity))
		}
	}
}

// TestParityExpiryAndCaps: a kept frame expires with the assembler's TTL —
// counted ParityDropped when some of its data arrived, silently when only
// parity did — its bytes are charged to MaxPendingBytes while it is kept,
// and at MaxPending the oldest entry goes, a frame in reassembly or one
// kept for parity.
func TestParityExpiryAndCaps(t *testing.T) {
	data, par := codedWithParity(t, 40, 300, 2, 5)
	a := mustNew(t, Config{})
	a.ParityRecord(0, 5, &par[0]) // frame 5: parity, then one data fragment
	a.ParityData(0, 5, &data[0])  //
	a.ParityRecord(0, 6, &par[0]) // frame 6: parity only
	if st := a.Stats(); st.ParityFrames != 2 || st.PendingBytes < 3*codec.DefaultMaxDatagram {
		t.Fatalf("kept: %+v", st)
	}
	if d, ok := a.NextDeadline(); !ok || d != DefaultTTL {
		t.Fatalf("deadline %d %v", d, ok)
	}
	a.Expire(DefaultTTL)
	if st := a.Stats(); st.ParityFrames != 0 || st.Count(ParityDropped) != 1 || st.PendingBytes != 0 {
		t.Fatalf("expired: %d entries, %d dropped, %d bytes", st.ParityFrames, st.Count(ParityDropped), st.PendingBytes)
	}

	b := mustNew(t, Config{MaxPending: 8, MaxCandidatesPerIsland: 8})
	b.ParityRecord(1, 100, &par[0])
	b.ParityData(1, 100, &data[0])
	h, ents := quantFrame(40)
	for i := range 7 {
		h.Key.Seq = uint32(i)
		parts := quantParts(h, ents, 10)
		b.Push(int64(2+i), &parts[0])
	}
	if st := b.Stats(); st.PendingFrames != 7 || st.ParityFrames != 1 {
		t.Fatalf("before the cap: %+v", st)
	}
	h.Key.Seq = 7
	parts := quantParts(h, ents, 10)
	b.Push(20, &parts[0]) // the oldest entry, the parity frame, goes
	if st := b.Stats(); st.PendingFrames != 8 || st.ParityFrames != 0 || st.Count(ParityDropped) != 1 {
		t.Fatalf("at the cap: %+v", st)
	}
	b.ParityRecord(21, 101, &par[0]) // now the oldest frame in reassembly goes
	if st := b.Stats(); st.PendingFrames != 7 || st.ParityFrames != 1 || st.Count(EvictedPendingCap) != 1 {
		t.Fatalf("a parity frame at the cap: %+v", st)
	}
}
