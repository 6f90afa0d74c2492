package assembler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// delivery is one fragment arriving at the receiver.
type delivery struct {
	at    int64
	frame int // index into sent frames
	frag  int // fragment index
}

// refModel is the "dumb" reference: it tracks, per frame, when its first
// fragment arrived and which fragment indices it has, and per stream the
// newest completed sequence and every completed one. A frame completes when
// all its fragments arrived within one TTL window — whether or not a newer
// frame of its stream completed meanwhile — unless it completed already or
// lies 64 or more behind the newest.
type refModel struct {
	ttl     int64
	first   map[int]int64
	have    map[int]map[int]bool
	last    map[streamID]uint32
	doneSeq map[streamID]map[uint32]bool
	frames  []island.Frame
	nfrags  []int
	done    map[int]bool
	ordered []int
}

func (m *refModel) push(d delivery) {
	// Expire everything whose window closed.
	for k, t0 := range m.first {
		if d.at-t0 >= m.ttl {
			delete(m.first, k)
			delete(m.have, k)
		}
	}
	f := &m.frames[d.frame]
	sid := streamID{sender: f.Sender, stream: f.Key.Stream()}
	if last, ok := m.last[sid]; ok && !island.SeqNewer(f.Key.Seq, last) &&
		(last-f.Key.Seq >= 64 || m.doneSeq[sid][f.Key.Seq]) {
		return
	}
	if _, ok := m.first[d.frame]; !ok {
		m.first[d.frame] = d.at
		m.have[d.frame] = map[int]bool{}
	}
	m.have[d.frame][d.frag] = true
	if len(m.have[d.frame]) < m.nfrags[d.frame] {
		return
	}
	m.done[d.frame] = true
	m.ordered = append(m.ordered, d.frame)
	if last, ok := m.last[sid]; !ok || island.SeqNewer(f.Key.Seq, last) {
		m.last[sid] = f.Key.Seq
	}
	if m.doneSeq[sid] == nil {
		m.doneSeq[sid] = map[uint32]bool{}
	}
	m.doneSeq[sid][f.Key.Seq] = true
	delete(m.first, d.frame)
	delete(m.have, d.frame)
}

// TestModelRandomDelivery: seeded random frames (1–300 members) on several
// senders and islands are fragmented and delivered with loss, duplication,
// reordering and delay. Every emitted frame must equal a sent one bit for
// bit, none twice, and the completed set and order must match the model.
func TestModelRandomDelivery(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x15a4d))
	const period = 40_000 // µs between frames of one stream
	ttl := int64(60_000 + r.IntN(200_000))
	loss := r.Float64() * 0.2
	dup := r.Float64() * 0.2
	jitter := int64(r.IntN(150_000))

	var frames []island.Frame
	var frags [][]codec.Fragment
	var events []delivery
	streams := 1 + r.IntN(4)
	for s := 0; s < streams; s++ {
		sender := island.SenderID(1 + s%2)
		k := island.Key{Island: uint32(s), Epoch: 1, Topology: 1, Config: 1, Seq: 0xFFFFFFF0 + uint32(r.IntN(8))}
		for i := 0; i < 25; i++ {
			k.Seq++
			if r.IntN(10) == 0 {
				k.Topology++ // a new stream of the same island
			}
			n := 1 + r.IntN(300)
			f := testFrame(sender, k, n, float64(r.IntN(1000)))
			fi := len(frames)
			frames = append(frames, f)
			fr := fragmentsOf(t, f)
			frags = append(frags, fr)
			sent := int64(i) * period
			for j := range fr {
				if r.Float64() < loss {
					continue
				}
				copies := 1
				if r.Float64() < dup {
					copies = 2
				}
				for c := 0; c < copies; c++ {
					events = append(events, delivery{at: sent + r.Int64N(jitter+1), frame: fi, frag: j})
				}
			}
		}
	}
	slices.SortStableFunc(events, func(a, b delivery) int { return int(a.at - b.at) })

	model := &refModel{ttl: ttl, first: map[int]int64{}, have: map[int]map[int]bool{},
		last: map[streamID]uint32{}, doneSeq: map[streamID]map[uint32]bool{}, frames: frames, done: map[int]bool{}}
	for _, fr := range frags {
		model.nfrags = append(model.nfrags, len(fr))
	}
	// Caps large enough that only TTL and staleness act.
	a := mustNew(t, Config{TTL: ttl, MaxCandidatesPerIsland: 64, MaxPending: 4096, MaxPendingBytes: 1 << 30})
	var gotOrder []int
	seen := map[frameID]bool{}
	for _, d := range events {
		model.push(d)
		o, out := a.Push(d.at, &frags[d.frame][d.frag])
		if o.IsReject() && o != RejectStale {
			t.Fatalf("honest traffic rejected: %v", o)
		}
		if out == nil {
			continue
		}
		id := frameID{out.Sender, out.Key}
		if seen[id] {
			t.Fatalf("frame %v emitted twice", out.Key)
		}
		seen[id] = true
		idx := -1
		for i := range frames {
			if frames[i].Sender == out.Sender && frames[i].Key == out.Key {
				idx = i
			}
		}
		if idx < 0 || !sameFrame(out, &frames[idx]) {
			t.Fatalf("emitted frame %v was never sent as such", out.Key)
		}
		gotOrder = append(gotOrder, idx)
	}
	if !slices.Equal(gotOrder, model.ordered) {
		t.Fatalf("completed %v, model %v", gotOrder, model.ordered)
	}
	a.Expire(events[len(events)-1].at + ttl)
	if st := a.Stats(); st.PendingBytes != 0 || st.PendingFrames != 0 {
		t.Fatalf("after final expiry: %+v", st)
	}
	if len(gotOrder) == 0 {
		t.Fatal("nothing completed: the test would prove nothing")
	}
}

// TestTTLBoundary: a frame is held at TTL−1 and freed at TTL, and the byte
// accounting returns to zero.
func TestTTLBoundary(t *testing.T) {
	const ttl = 5000
	fr := fragmentsOf(t, testFrame(1, key1, 40, 0))
	a := mustNew(t, Config{TTL: ttl})
	a.Push(1000, &fr[0])
	a.Push(1500, &fr[1])
	if d, ok := a.NextDeadline(); !ok || d != 1000+ttl {
		t.Fatalf("deadline %d %v", d, ok)
	}
	a.Expire(1000 + ttl - 1)
	if st := a.Stats(); st.PendingFrames != 1 || st.PendingBytes == 0 {
		t.Fatalf("freed early: %+v", st)
	}
	a.Expire(1000 + ttl)
	if st := a.Stats(); st.PendingFrames != 0 || st.PendingBytes != 0 || st.Count(Expired) != 1 {
		t.Fatalf("not freed at TTL: %+v", st)
	}
	if _, ok := a.NextDeadline(); ok {
		t.Fatal("deadline with nothing pending")
	}
	// The last fragment arriving exactly at TTL starts a new, incomplete frame.
	a.Push(2000, &fr[0])
	if o, _ := a.Push(2000+ttl, &fr[1]); o != Buffered {
		t.Fatalf("%v", o)
	}
	// Poisoned tombstones also end at TTL and free their overhead.
	a = mustNew(t, Config{TTL: ttl})
	bad := cloneFragment(fr[1])
	bad.Header.Segment = 9
	a.Push(0, &fr[0])
	a.Push(0, &bad)
	a.Expire(ttl)
	if st := a.Stats(); st.PendingFrames != 0 || st.PendingBytes != 0 {
		t.Fatalf("tombstone kept: %+v", st)
	}
}

// TestWrapAround: sequences …FFFE, FFFF, 0, 1 complete in order, and replays
// of any completed frame never complete again.
func TestWrapAround(t *testing.T) {
	a := mustNew(t, Config{})
	var all [][]codec.Fragment
	for _, seq := range []uint32{0xFFFFFFFE, 0xFFFFFFFF, 0, 1} {
		fr := fragmentsOf(t, testFrame(1, keySeq(seq), 40, float64(seq%7)))
		all = append(all, fr)
		for i, f := range fr {
			o, out := a.Push(int64(seq), &f)
			if want := Buffered; i == len(fr)-1 {
				if o != Completed || out.Key.Seq != seq {
					t.Fatalf("seq %#x: %v", seq, o)
				}
			} else if o != want {
				t.Fatalf("seq %#x frag %d: %v", seq, i, o)
			}
		}
	}
	for _, fr := range all {
		for _, f := range fr {
			if o, out := a.Push(10, &f); o != RejectStale || out != nil {
				t.Fatalf("replay of %v: %v", f.Header.Key, o)
			}
		}
	}
}
