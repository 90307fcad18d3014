package result

import (
	"math"
	"sort"
)

// Median of values, in their unit: the middle value, the mean of the two
// middle ones for an even count; NaN for none. values is not changed.
func Median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
