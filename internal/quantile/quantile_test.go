package quantile

import "testing"

func TestNearest(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	cases := []struct{ p, want float64 }{{50, 5}, {95, 10}, {10, 1}, {100, 10}, {1, 1}}
	for _, c := range cases {
		if got := Nearest(v, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Nearest(nil, 50) != 0 {
		t.Error("empty input")
	}
	if v[0] != 5 {
		t.Error("input was sorted in place")
	}
}
