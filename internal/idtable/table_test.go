package idtable

import (
	"math/rand/v2"
	"testing"
)

// TestModel runs seeded random operations against a Table and a map side
// by side: every Get, Len and All agrees with the map, and the table never
// holds a page without a value.
func TestModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var tab Table[int]
		ref := map[uint32]*int{}
		id := func() uint32 {
			switch rng.IntN(3) {
			case 0: // clustered, as an authority numbers islands
				return uint32(rng.IntN(300))
			case 1: // another world's range
				return 40_000 + uint32(rng.IntN(300))
			default: // anywhere: a hostile spread
				return rng.Uint32()
			}
		}
		for op := range 5000 {
			k := id()
			switch rng.IntN(10) {
			case 0, 1, 2, 3:
				v := new(int)
				*v = op
				tab.Set(k, v)
				ref[k] = v
			case 4, 5:
				tab.Delete(k)
				delete(ref, k)
			case 6:
				tab.Set(k, nil)
				delete(ref, k)
			case 7:
				if rng.IntN(40) == 0 {
					tab.Clear()
					clear(ref)
				}
			default:
				if got, want := tab.Get(k), ref[k]; got != want {
					t.Fatalf("seed %d op %d: Get(%d) = %p, want %p", seed, op, k, got, want)
				}
			}
			if tab.Len() != len(ref) {
				t.Fatalf("seed %d op %d: Len %d, want %d", seed, op, tab.Len(), len(ref))
			}
			if len(tab.pages) > tab.Len() {
				t.Fatalf("seed %d op %d: %d pages for %d values", seed, op, len(tab.pages), tab.Len())
			}
		}
		seen := 0
		for k, v := range tab.All() {
			if ref[k] != v {
				t.Fatalf("seed %d: All yields %d → %p, want %p", seed, k, v, ref[k])
			}
			seen++
		}
		if seen != len(ref) {
			t.Fatalf("seed %d: All yields %d values, want %d", seed, seen, len(ref))
		}
		for k, v := range ref {
			if tab.Get(k) != v {
				t.Fatalf("seed %d: Get(%d) lost", seed, k)
			}
		}
	}
}

// TestAllStops checks that All stops when its consumer does.
func TestAllStops(t *testing.T) {
	var tab Table[int]
	for k := range uint32(200) {
		tab.Set(k*1000, new(int))
	}
	n := 0
	for range tab.All() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("All went on to %d after the loop broke", n)
	}
}

func TestGetAllocatesNothing(t *testing.T) {
	var tab Table[int]
	for k := range uint32(1000) {
		tab.Set(k, new(int))
	}
	k := uint32(0)
	if a := testing.AllocsPerRun(1000, func() {
		_ = tab.Get(k)
		k = (k + 7) % 2000
	}); a != 0 {
		t.Fatalf("Get allocates %.1f times", a)
	}
}

// BenchmarkGet looks up 1,000 islands numbered 1..1,000 in id order, as the
// records of a broadcast name them, from a Table and from a map.
func BenchmarkGet(b *testing.B) {
	var tab Table[int]
	m := map[uint32]*int{}
	for k := uint32(1); k <= 1000; k++ {
		v := new(int)
		tab.Set(k, v)
		m[k] = v
	}
	b.Run("table=idtable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for k := uint32(1); k <= 1000; k++ {
				if tab.Get(k) == nil {
					b.Fatal(k)
				}
			}
		}
	})
	b.Run("table=map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for k := uint32(1); k <= 1000; k++ {
				if m[k] == nil {
					b.Fatal(k)
				}
			}
		}
	})
}
