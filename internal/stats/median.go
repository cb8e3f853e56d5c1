// Package stats holds the small order statistics several packages share.
package stats

import (
	"math"
	"slices"
)

// Median returns the median of xs (xs is not modified): the middle value,
// or the mean of the two middle values for an even count; NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedMedian(s)
}
