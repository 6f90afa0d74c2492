// Package quantile computes the percentiles the commands report.
package quantile

import (
	"slices"
	"sort"
)

// Nearest returns the p-th percentile (0 < p ≤ 100) of v by the nearest-rank
// method, or 0 for an empty v. v is not modified.
func Nearest(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	k := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(k, len(s)-1))]
}
