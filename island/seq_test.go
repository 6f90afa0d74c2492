package island

import (
	"math/rand/v2"
	"testing"
)

func TestSeqNewerAroundWrap(t *testing.T) {
	tests := []struct {
		a, b uint32
		want bool
	}{
		{1, 0, true},
		{0, 1, false},
		{0, 0xFFFFFFFF, true},
		{0xFFFFFFFF, 0, false},
		{1, 0xFFFFFFFE, true},
		{0xFFFFFFFE, 1, false},
		{0xFFFFFFFF, 0xFFFFFFFE, true},
		{0xFFFFFFFE, 0xFFFFFFFF, false},
		{5, 5, false},
		{0xFFFFFFFF, 0xFFFFFFFF, false},
		// Largest unambiguous distance.
		{0x7FFFFFFF, 0, true},
		{0, 0x7FFFFFFF, false},
		// Exact half range: the larger raw value wins, both directions.
		{0x80000000, 0, true},
		{0, 0x80000000, false},
		{0xFFFFFFFF, 0x7FFFFFFF, true},
		{0x7FFFFFFF, 0xFFFFFFFF, false},
		// Just past half range flips.
		{0x80000001, 0, false},
		{0, 0x80000001, true},
	}
	for _, tt := range tests {
		if got := SeqNewer(tt.a, tt.b); got != tt.want {
			t.Errorf("SeqNewer(%#x, %#x) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSeqCompareIsAntisymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(a, b uint32) {
		ab, ba := SeqCompare(a, b), SeqCompare(b, a)
		if ab != -ba {
			t.Fatalf("SeqCompare(%#x,%#x)=%d but SeqCompare(%#x,%#x)=%d", a, b, ab, b, a, ba)
		}
		if (ab == 0) != (a == b) {
			t.Fatalf("SeqCompare(%#x,%#x)=%d, equality mismatch", a, b, ab)
		}
	}
	for i := 0; i < 100000; i++ {
		a := r.Uint32()
		check(a, r.Uint32())
		check(a, a+0x80000000)
		check(a, a+uint32(r.IntN(5)))
	}
}

func TestSeqSequenceAcrossWrapIsIncreasing(t *testing.T) {
	seqs := []uint32{0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF, 0, 1, 2}
	for i := 1; i < len(seqs); i++ {
		if !SeqNewer(seqs[i], seqs[i-1]) || SeqCompare(seqs[i-1], seqs[i]) != -1 {
			t.Errorf("%#x should be newer than %#x", seqs[i], seqs[i-1])
		}
	}
}
