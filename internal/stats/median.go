// Package stats holds the order statistics and means several packages
// share, one implementation of each. Every function states its formula
// and what it does with no values (returns NaN, or panics where a
// caller's empty sample is a bug).
package stats

import (
	"cmp"
	"math"
	"slices"
)

// Median returns the median of xs (xs is not modified): with the sample
// sorted, x(1) ≤ … ≤ x(n),
//
//	median = x((n+1)/2)                 n odd
//	median = (x(n/2) + x(n/2+1)) / 2    n even
//
// NaN for no values.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedMedian(s)
}

// LowerMedian returns the lower median of xs (xs is not modified), a
// value of the sample whatever n: with it sorted, x(1) ≤ … ≤ x(n),
//
//	lower median = x(⌊(n+1)/2⌋)
//
// (the median for odd n, the lower of the two middle values for even n).
// It panics if xs is empty.
func LowerMedian[T cmp.Ordered](xs []T) T {
	if len(xs) == 0 {
		panic("stats: LowerMedian of no values")
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of sorted, which must be in
// ascending order, by linear interpolation between order statistics
// (Hyndman & Fan's type 7, R's default): with the 0-based position
// h = q·(n−1),
//
//	Q(q) = x[⌊h⌋] + (x[⌊h⌋+1] − x[⌊h⌋])·(h − ⌊h⌋)
//
// (x[n−1] at h = n−1). NaN for no values; it panics if q is outside
// [0, 1].
func Quantile(sorted []float64, q float64) float64 {
	if !(q >= 0 && q <= 1) {
		panic("stats: Quantile outside [0, 1]")
	}
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// NearestRank returns the p-th quantile (0 ≤ p ≤ 1) of sorted, which
// must be in ascending order, by the nearest-rank method: a value of the
// sample,
//
//	P(p) = x(max(1, ⌈p·n⌉))             (1-based ranks)
//
// The zero value for no values.
func NearestRank[T any](sorted []T, p float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	k := int(p*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// GeoMean returns the geometric mean of xs,
//
//	GM = exp( (1/n) · Σ ln x_i )
//
// NaN for no values or if any value is not positive.
func GeoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		if !(x > 0) {
			return math.NaN()
		}
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
