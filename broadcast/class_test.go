package broadcast

import (
	"errors"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// classesSent broadcasts one frame of each island and returns the class
// every record of observer 1's datagrams carries, by island.
func classesSent(t *testing.T, b *Broadcaster, seq uint32, islands map[uint32][]island.MemberID) map[uint32]quant.Class {
	t.Helper()
	var frames []*island.Frame
	for id, m := range islands {
		frames = append(frames, frameOf(id, m, seq))
	}
	b.Frames(frames)
	_, dgs := b.Take(1, nil, nil)
	dec, _ := codec.NewDecoder(codec.Config{})
	out := map[uint32]quant.Class{}
	for _, d := range dgs {
		_, recs, err := dec.Decode(d.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out[r.Island] = r.Class
		}
	}
	return out
}

// TestClassByRole: every island is quantized at rigid precision unless the
// game says otherwise — a lone body included — and the game's word holds
// until the island is forgotten.
func TestClassByRole(t *testing.T) {
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	islands := map[uint32][]island.MemberID{1: ids(1, 1), 2: ids(10, 4), 3: ids(100, 40)}
	for id, m := range islands {
		live(t, b, id, m)
	}
	subscribeAll(t, b, 1)
	got := classesSent(t, b, 1, islands)
	want := map[uint32]quant.Class{1: quant.Rigid, 2: quant.Rigid, 3: quant.Chain}
	for id, c := range want {
		if got[id] != c {
			t.Errorf("default: island %d sent as class %d, want %d", id, got[id], c)
		}
	}
	if err := b.SetClass(1, quant.Loose); err != nil {
		t.Fatal(err)
	}
	if got := classesSent(t, b, 2, islands); got[1] != quant.Loose || got[2] != quant.Rigid {
		t.Errorf("after SetClass(1, loose): classes %v", got)
	}
	if err := b.Apply(codec.Forget{Island: 1}); err != nil {
		t.Fatal(err)
	}
	live(t, b, 1, islands[1])
	if got := classesSent(t, b, 3, islands); got[1] != quant.Rigid {
		t.Errorf("a forgotten island kept its class: %v", got)
	}
	if err := b.SetClass(2, quant.Class(3)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("class 3: %v", err)
	}

	small, _ := New(Config{MaxIslands: 1})
	if err := small.SetClass(5, quant.Loose); err != nil {
		t.Fatal(err)
	}
	if err := small.SetClass(5, quant.Rigid); err != nil {
		t.Errorf("resetting a set class: %v", err)
	}
	if err := small.SetClass(6, quant.Loose); !errors.Is(err, ErrTableFull) {
		t.Errorf("past MaxIslands: %v", err)
	}
}

// TestKeyframesStaggered: with every datagram confirmed, each of 400
// islands still goes whole at least every KeyframeEvery broadcasts, but
// the islands take turns: no broadcast carries more than twice the mean
// number of keyframes.
func TestKeyframesStaggered(t *testing.T) {
	b, _ := New(Config{})
	const n = 400
	m := map[uint32][]island.MemberID{}
	for id := uint32(1); id <= n; id++ {
		m[id] = ids(uint64(10*id), 1)
		live(t, b, id, m[id])
	}
	subscribeAll(t, b, 1)
	dec, _ := codec.NewDecoder(codec.Config{})
	lastKey := map[uint32]uint32{}
	var keys []int
	for seq := uint32(1); seq <= 200; seq++ {
		var frames []*island.Frame
		for id := uint32(1); id <= n; id++ {
			f := frameOf(id, m[id], seq)
			f.Members[0].State.X += float64(seq) // moving: no runs
			frames = append(frames, f)
		}
		b.Frames(frames)
		_, dgs := b.Take(1, nil, nil)
		k := 0
		var newest uint32
		for _, d := range dgs {
			h, recs, err := dec.Decode(d.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			newest = h.Packet
			for _, r := range recs {
				if r.Kind == codec.KindKey {
					k++
					if last, ok := lastKey[r.Island]; ok && seq > 80 && seq-last > DefaultKeyframeEvery {
						t.Fatalf("island %d went whole at %d and %d", r.Island, last, seq)
					}
					lastKey[r.Island] = seq
				}
			}
		}
		if len(dgs) > 0 {
			if _, err := b.FeedbackBytes(1, codec.Received{Newest: newest, Prior: ^uint64(0)}.Append(nil)); err != nil {
				t.Fatal(err)
			}
		}
		if seq > 80 { // past the first keyframes and their first turn
			keys = append(keys, k)
		}
	}
	total, most := 0, 0
	for _, k := range keys {
		total += k
		most = max(most, k)
	}
	mean := float64(total) / float64(len(keys))
	if want := float64(n) / DefaultKeyframeEvery; mean < 0.8*want || mean > 1.2*want {
		t.Fatalf("%.1f keyframes per broadcast, want about %.0f", mean, want)
	}
	if float64(most) > 2*mean {
		t.Fatalf("a broadcast carried %d keyframes, the mean is %.1f", most, mean)
	}
}

// TestFragmentedFrameHeldWhenAllConfirmed: a frame cut into several
// datagrams counts as held only once every one of them is confirmed; a
// parity datagram confirms nothing of it.
func TestFragmentedFrameHeldWhenAllConfirmed(t *testing.T) {
	for _, parity := range []int{-1, 2} {
		b, _ := New(Config{Parity: parity})
		m := ids(1, 300)
		live(t, b, 1, m)
		subscribeAll(t, b, 1)
		dec, _ := codec.NewDecoder(codec.Config{})
		send := func(seq uint32) (kind codec.RecordKind, data, par []uint32) {
			f := noisyFrameOf(1, m, seq)
			b.Frames([]*island.Frame{f})
			_, dgs := b.Take(1, nil, nil)
			for _, d := range dgs {
				h, recs, err := dec.Decode(d.Bytes)
				if err != nil {
					t.Fatal(err)
				}
				if recs[0].Kind == codec.KindParity {
					par = append(par, h.Packet)
					continue
				}
				kind = recs[0].Kind
				data = append(data, h.Packet)
			}
			return kind, data, par
		}
		confirm := func(pkts []uint32) {
			for _, p := range pkts {
				if _, err := b.FeedbackBytes(1, codec.Received{Newest: p}.Append(nil)); err != nil {
					t.Fatal(err)
				}
			}
		}
		_, data, par := send(1)
		if len(data) < 2 {
			t.Fatalf("the frame went in %d datagrams", len(data))
		}
		confirm(data[:len(data)-1])
		confirm(par)
		if kind, _, _ := send(2); kind != codec.KindKey {
			t.Fatalf("parity %d: with a data datagram unconfirmed, frame 2 is a %v", parity, kind)
		}
		_, data, _ = send(3)
		confirm(data)
		if kind, _, _ := send(4); kind == codec.KindKey { // coded against 3: a run, the frame being the same
			t.Fatalf("parity %d: with every data datagram confirmed, frame 4 is a keyframe", parity)
		}
	}
}

// noisyFrameOf is frameOf with positions as irregular as noise, so that
// no coding squeezes a large frame into one datagram.
func noisyFrameOf(islandID uint32, members []island.MemberID, seq uint32) *island.Frame {
	f := frameOf(islandID, members, seq)
	for i := range f.Members {
		h := uint64(i+1) * 0x9E3779B97F4A7C15
		f.Members[i].State.X = float64(h>>44) / 512
		f.Members[i].State.Y = float64(h>>24&0xFFFFF) / 512
	}
	return f
}
