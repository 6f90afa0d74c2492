package stamp

import (
	"errors"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

const islandA, islandB = 1, 2

// seedHistory is the design notes' example on the authority's side: A sent
// every 50 ms from 1.00 to 1.50 s, B at 1.00 s and next at 1.50 s, all in
// epoch 1, segment 0, timeline 9.
func seedHistory(cfg Config) *History {
	h := New(cfg)
	h.SetTimeline(9)
	for t := island.Time(1_000_000); t <= 1_500_000; t += 50_000 {
		h.Observe(&island.Frame{Key: island.Key{Island: islandA, Epoch: 1}, Time: t})
		if t == 1_000_000 || t == 1_500_000 {
			h.Observe(&island.Frame{Key: island.Key{Island: islandB, Epoch: 1}, Time: t})
		}
	}
	return h
}

// view is a stamp at r where A is valid and B as given.
func view(r island.Time, gen uint32, bValid bool) *codec.ViewStamp {
	return &codec.ViewStamp{Timeline: 9, R: r, Generation: gen, Age: 100_000, Islands: []codec.IslandStamp{
		{Island: islandA, Epoch: 1, Valid: true}, {Island: islandB, Epoch: 1, Valid: bValid}}}
}

// TestSeedStamp is the design notes' example: B is frozen at 1.10 s while A
// shows 1.40 s. A stamp at r = 1.40 s that involves B is refused — the
// player did not see B there — and one involving A alone passes; once the
// authority calls B decoration, B's staleness blocks nothing. Leaving B out
// of the stamp does not demote it.
func TestSeedStamp(t *testing.T) {
	h := seedHistory(Config{})
	if err := h.Check(7, view(1_400_000, 1, false), []uint32{islandA, islandB}); !errors.Is(err, ErrNotValid) {
		t.Fatalf("B stale at 1.40 s: %v, want ErrNotValid", err)
	}
	if err := h.Check(7, view(1_400_000, 1, false), []uint32{islandA}); err != nil {
		t.Fatalf("A alone: %v", err)
	}
	omitted := view(1_400_000, 1, true)
	omitted.Islands = omitted.Islands[:1]
	if err := h.Check(7, omitted, []uint32{islandA, islandB}); !errors.Is(err, ErrNotValid) {
		t.Fatalf("B left out of the stamp: %v, want ErrNotValid", err)
	}
	h.SetCritical(islandB, false)
	if err := h.Check(7, view(1_400_000, 1, false), []uint32{islandA, islandB}); err != nil {
		t.Fatalf("B decoration: %v", err)
	}
}

// TestStampRules: each rule refuses what breaks it, and nothing else.
func TestStampRules(t *testing.T) {
	both := []uint32{islandA, islandB}
	cases := []struct {
		name string
		edit func(h *History, s *codec.ViewStamp)
		want error
	}{
		{"valid", func(*History, *codec.ViewStamp) {}, nil},
		{"another timeline", func(_ *History, s *codec.ViewStamp) { s.Timeline = 8 }, ErrTimeline},
		{"after the newest frame sent", func(_ *History, s *codec.ViewStamp) { s.R = 1_500_001 }, ErrOutOfHistory},
		{"before B's first frame", func(_ *History, s *codec.ViewStamp) { s.R = 999_999 }, ErrOutOfHistory},
		{"too old a view", func(_ *History, s *codec.ViewStamp) { s.Age = DefaultMaxAge + 1 }, ErrTooOld},
		{"a negative age", func(_ *History, s *codec.ViewStamp) { s.Age = -1 }, ErrTooOld},
		{"an older generation", func(h *History, s *codec.ViewStamp) {
			if err := h.Check(7, view(1_020_000, 4, true), both); err != nil {
				panic(err)
			}
		}, ErrGeneration},
		{"the same generation again", func(h *History, s *codec.ViewStamp) {
			_ = h.Check(7, view(1_020_000, 3, true), both)
		}, nil},
		{"another observer's generation", func(h *History, s *codec.ViewStamp) {
			_ = h.Check(8, view(1_020_000, 9, true), both)
		}, nil},
		{"another epoch", func(_ *History, s *codec.ViewStamp) { s.Islands[0].Epoch = 2 }, ErrMismatch},
		{"another segment", func(_ *History, s *codec.ViewStamp) { s.Islands[1].Segment = 1 }, ErrMismatch},
		{"an unknown island", func(h *History, s *codec.ViewStamp) { h.Forget(islandB) }, ErrOutOfHistory},
	}
	for _, c := range cases {
		h := seedHistory(Config{})
		s := view(1_050_000, 3, true)
		c.edit(h, s)
		if err := h.Check(7, s, both); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestStampAcrossATeleport: between the last frame of segment 0 and the
// first of segment 1, the observer may show either: both pass, a third
// segment does not.
func TestStampAcrossATeleport(t *testing.T) {
	h := New(Config{})
	h.Observe(&island.Frame{Key: island.Key{Island: islandA, Epoch: 1}, Time: 1_000_000})
	h.Observe(&island.Frame{Key: island.Key{Island: islandA, Epoch: 1}, Segment: 1, Time: 1_050_000})
	for seg, want := range map[uint32]error{0: nil, 1: nil, 2: ErrMismatch} {
		s := &codec.ViewStamp{R: 1_030_000, Islands: []codec.IslandStamp{{Island: islandA, Epoch: 1, Segment: seg, Valid: true}}}
		if err := h.Check(1, s, []uint32{islandA}); !errors.Is(err, want) {
			t.Errorf("segment %d shown at 1.03 s: %v, want %v", seg, err, want)
		}
	}
}

// TestStampBounds: an island keeps only its Window newest frames — a stamp
// older than them is outside the history —, at most MaxIslands islands are
// remembered (the least recently sent forgotten), and a new timeline
// forgets everything.
func TestStampBounds(t *testing.T) {
	h := seedHistory(Config{Window: 4, MaxIslands: 2})
	// A keeps 1.35 … 1.50 s; B keeps 1.00 and 1.50 s.
	if err := h.Check(1, view(1_300_000, 1, true), []uint32{islandA}); !errors.Is(err, ErrOutOfHistory) {
		t.Fatalf("r before A's kept frames: %v", err)
	}
	if err := h.Check(1, view(1_360_000, 1, true), []uint32{islandA, islandB}); err != nil {
		t.Fatalf("within both: %v", err)
	}
	h.Observe(&island.Frame{Key: island.Key{Island: islandA, Epoch: 1}, Time: 1_550_000})
	h.Observe(&island.Frame{Key: island.Key{Island: 3, Epoch: 1}, Time: 1_550_000}) // B was sent least recently
	if _, _, ok, _ := h.at(islandB, 1_500_000); ok {
		t.Fatal("a third island did not push out the least recently sent")
	}
	if _, _, ok, _ := h.at(islandA, 1_500_000); !ok {
		t.Fatal("the wrong island went")
	}
	h.SetTimeline(10)
	if err := h.Check(1, &codec.ViewStamp{Timeline: 10, R: 1_500_000}, []uint32{islandA}); !errors.Is(err, ErrOutOfHistory) {
		t.Fatalf("after a new timeline: %v", err)
	}
}

// TestObserveAllocs: once every island has its track, recording a
// broadcast allocates nothing.
func TestObserveAllocs(t *testing.T) {
	h := New(Config{})
	f := island.Frame{}
	broadcast := func() {
		f.Time += 50_000
		for id := range uint32(900) {
			f.Key.Island = id
			h.Observe(&f)
		}
	}
	broadcast()
	if a := testing.AllocsPerRun(20, broadcast); a != 0 {
		t.Fatalf("%v allocations per broadcast", a)
	}
}

// BenchmarkObserve records broadcasts of 900 islands (the Fiedler scene's
// count), per frame.
func BenchmarkObserve(b *testing.B) {
	h := New(Config{})
	f := island.Frame{}
	b.ReportAllocs()
	for b.Loop() {
		f.Time += 50_000
		for id := range uint32(900) {
			f.Key.Island = id
			h.Observe(&f)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*900), "ns/frame")
}
