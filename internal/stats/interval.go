package stats

import (
	"math"
	"slices"
)

// MedianInterval is a sample's median with a distribution-free confidence
// interval for the true median (Hoefler & Belli, SC'15, rule 5; Le
// Boudec): with the sample sorted, x(1) ≤ … ≤ x(n), the interval is
// [x(l), x(n+1−l)] and it holds the true median with probability exactly
//
//	coverage = 1 − 2·P(B ≤ l−1),  B ~ Binomial(n, ½)
//
// whatever the distribution (continuous, independent runs). l is the
// largest rank whose coverage still reaches the level asked for. This is
// the exact form of the normal approximation MedianCI uses, symmetric in
// the ranks, and it exists from n = 6 on at 95% (from n = 8 with the
// approximation).
type MedianInterval struct {
	N      int     `json:"n"`
	Median float64 `json:"median"` // middle value, or the mean of the two middle ones
	// Lo and Hi bound the interval; Coverage is its exact coverage. When
	// even the range [min, max] covers less than asked (n too small), OK
	// is false and Lo, Hi are min and max with their lower Coverage.
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Coverage float64 `json:"coverage"`
	OK       bool    `json:"ok"`
}

// MedianRankCI returns the median of xs (not modified) with its median-rank
// interval at level conf (0.95 for 95%). Empty xs gives N 0 and NaNs.
func MedianRankCI(xs []float64, conf float64) MedianInterval {
	n := len(xs)
	if n == 0 {
		nan := math.NaN()
		return MedianInterval{Median: nan, Lo: nan, Hi: nan}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := MedianInterval{N: n, Median: sortedMedian(s)}
	// cdf[k] = P(B ≤ k), accumulated from the binomial pmf in log space
	// (n may be large).
	l, cov := 0, 0.0
	cdf := 0.0
	for k := 0; 2*k < n; k++ {
		// Rank l = k+1 covers with 1 − 2·P(B ≤ k).
		cdf += math.Exp(logChoose(n, k) - float64(n)*math.Ln2)
		c := 1 - 2*cdf
		if c < conf {
			break
		}
		l, cov = k+1, c
	}
	if l == 0 {
		m.Lo, m.Hi, m.Coverage = s[0], s[n-1], max(1-2*math.Exp(-float64(n)*math.Ln2), 0)
		return m
	}
	m.Lo, m.Hi, m.Coverage, m.OK = s[l-1], s[n-l], cov, true
	return m
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
