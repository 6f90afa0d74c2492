package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/islandsync/islandsync/island"
)

// TestDefaults: rigid and chain classes are no coarser than 1/512 m and
// 2^-12 turn, and each bound is half a quantum.
func TestDefaults(t *testing.T) {
	for _, c := range []Class{Rigid, Chain} {
		e := c.Precision().MaxError()
		if e.Pos > 1.0/1024+1e-15 || e.Angle > math.Pi/4096+1e-15 {
			t.Errorf("%v: error %+v coarser than 1/512 m, 2^-12 turn", c, e)
		}
	}
	e := Rigid.Precision().MaxError()
	if e.Pos != 1.0/1024 || math.Abs(e.Angle-2*math.Pi/8192) > 1e-18 {
		t.Errorf("rigid bounds %+v", e)
	}
}

// TestErrorBound: over random states in every class, restoring a quantized
// state never errs by more than MaxError, and quantizing the restored state
// gives the same integers (a fixed point).
func TestErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for c := Rigid; c < numClasses; c++ {
		p := c.Precision()
		e := p.MaxError()
		for range 20000 {
			s := island.State{X: (r.Float64() - 0.5) * 2e4, Y: (r.Float64() - 0.5) * 2e4, Angle: (r.Float64() - 0.5) * 100,
				VX: (r.Float64() - 0.5) * 80, VY: (r.Float64() - 0.5) * 80, AngVel: (r.Float64() - 0.5) * 60}
			qs, err := Quantize(s, p)
			if err != nil {
				t.Fatal(err)
			}
			g := qs.State(p)
			if math.Abs(g.X-s.X) > e.Pos || math.Abs(g.Y-s.Y) > e.Pos || math.Abs(g.Angle-s.Angle) > e.Angle*(1+1e-12) ||
				math.Abs(g.VX-s.VX) > e.Vel || math.Abs(g.VY-s.VY) > e.Vel || math.Abs(g.AngVel-s.AngVel) > e.AngVel*(1+1e-12) {
				t.Fatalf("%v: %+v restored as %+v, bound %+v", c, s, g, e)
			}
			if again, _ := Quantize(g, p); again != qs {
				t.Fatalf("%v: not a fixed point: %+v vs %+v", c, again, qs)
			}
		}
	}
}

// TestRangeNeverClamps: far positions stay exact integers, and only values
// beyond 2^53 quanta are refused — never cut to a boundary.
func TestRangeNeverClamps(t *testing.T) {
	p := Rigid.Precision()
	far := island.State{X: 1e9, Y: -3.5e12}
	qs, err := Quantize(far, p)
	if err != nil {
		t.Fatal(err)
	}
	if g := qs.State(p); g.X != 1e9 || g.Y != -3.5e12 {
		t.Fatalf("far position restored as %+v", g)
	}
	for _, bad := range []island.State{{X: 1e14}, {VY: -1e15}, {Angle: 1e14}} {
		if _, err := Quantize(bad, p); !errors.Is(err, ErrRange) {
			t.Fatalf("%+v: %v, want ErrRange", bad, err)
		}
	}
	if _, err := Quantize(island.State{X: math.NaN()}, p); !errors.Is(err, ErrNonFinite) {
		t.Fatal("NaN accepted")
	}
}

// TestDeltasAreIntegers: a delta coded against a baseline restores the
// exact integers, however many deltas are chained.
func TestDeltasAreIntegers(t *testing.T) {
	base := State{X: 10000, Y: 11000}
	a := State{X: 10020, Y: 11000}
	b := State{X: 10040, Y: 11000}
	if got := base.Add(b.Sub(base)); got != b {
		t.Fatalf("44 against 42: %+v", got)
	}
	if got := a.Add(b.Sub(base)); got.X != 10060 {
		t.Fatalf("the wrong baseline gives %d", got.X) // what a receiver must never do
	}
}

// TestInvPow2: multiplying by invPow2 is dividing by pow2, bit for bit,
// for every exponent a precision can hold and values up to the 2⁵³ cap.
func TestInvPow2(t *testing.T) {
	for bits := uint8(0); bits <= 30; bits++ {
		if invPow2(bits) != 1/pow2(bits) {
			t.Fatalf("invPow2(%d) = %g", bits, invPow2(bits))
		}
		for _, v := range []int64{0, 1, -1, 3, 12345, -987654321, 1<<53 - 1, -(1<<53 - 1)} {
			if a, b := float64(v)*invPow2(bits), float64(v)/pow2(bits); a != b {
				t.Fatalf("%d at %d bits: %g vs %g", v, bits, a, b)
			}
		}
	}
}

// TestRestoreIsState: Scales.Restore writes, field by field, exactly the
// state Scales.State returns and State.State restores, for every class and
// for values across the range, signs and extremes included.
func TestRestoreIsState(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	vals := []int64{0, 1, -1, 511, -512, 1 << 40, -(1 << 40), math.MaxInt64, math.MinInt64}
	for range 200 {
		vals = append(vals, rng.Int64()>>rng.IntN(63))
	}
	for _, c := range []Class{Rigid, Loose} {
		p := c.Precision()
		sc := p.Scales()
		for i, v := range vals {
			q := State{X: v, Y: -v, Angle: vals[(i+1)%len(vals)], VX: vals[(i+2)%len(vals)], VY: v / 3, AngVel: -v / 7}
			var got island.State
			sc.Restore(&got, &q)
			if want := sc.State(q); got != want || got != q.State(p) {
				t.Fatalf("%v: Restore(%+v) = %+v, State gives %+v", c, q, got, want)
			}
		}
	}
}
