package stats

import (
	"math"
	"slices"
)

// MedianCI is the median of n paired measurements with its nonparametric
// 95% confidence interval by the normal approximation (Hoefler & Belli,
// SC'15, after Le Boudec): with the sample sorted, x(1) ≤ … ≤ x(n), the
// interval is [x(lo), x(hi)] with the 1-based ranks
//
//	lo = ⌈(n − 1.96·√n) / 2⌉,  hi = ⌈1 + (n + 1.96·√n) / 2⌉
//
// (the normal approximation of the binomial(n, ½) distribution of the
// number of values below the median). It assumes nothing about the
// distribution, only independent rounds. The ranks fall inside 1…n from
// n = 8 on; for smaller n the interval is unavailable (CI false) and the
// range [min, max] is the best distribution-free interval: it holds the
// median with probability RangeCoverage = 1 − 2·(½)ⁿ (93.75% for n = 5).
// MedianRankCI is its exact form.
type MedianCI struct {
	N      int     `json:"n"`
	Median float64 `json:"median"` // middle value, or the mean of the two middle ones for even n
	// CI reports whether Lo/Hi hold the 95% interval; the ranks are reported either way.
	CI            bool    `json:"ci95_available"`
	Lo            float64 `json:"ci95_lo,omitempty"`
	Hi            float64 `json:"ci95_hi,omitempty"`
	LoRank        int     `json:"ci95_lo_rank"`
	HiRank        int     `json:"ci95_hi_rank"`
	Min           float64 `json:"min"`
	Max           float64 `json:"max"`
	RangeCoverage float64 `json:"range_coverage"` // P(min ≤ true median ≤ max) = 1 − 2^(1−n)
}

// z95 is the two-sided 95% normal quantile.
const z95 = 1.96

// medianRanks returns the 1-based ranks of the 95% median interval for n
// values (see MedianCI); they may fall outside 1…n for small n.
func medianRanks(n int) (lo, hi int) {
	s := z95 * math.Sqrt(float64(n))
	return int(math.Ceil((float64(n) - s) / 2)), int(math.Ceil(1 + (float64(n)+s)/2))
}

// MedianNormalCI summarizes xs (not modified) as a MedianCI. No values
// give the zero MedianCI.
func MedianNormalCI(xs []float64) MedianCI {
	n := len(xs)
	if n == 0 {
		return MedianCI{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := MedianCI{N: n, Median: sortedMedian(s), Min: s[0], Max: s[n-1], RangeCoverage: 1 - math.Pow(0.5, float64(n-1))}
	m.LoRank, m.HiRank = medianRanks(n)
	if m.LoRank >= 1 && m.HiRank <= n {
		m.CI, m.Lo, m.Hi = true, s[m.LoRank-1], s[m.HiRank-1]
	}
	return m
}
