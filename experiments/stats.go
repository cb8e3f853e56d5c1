package experiments

import (
	"math"
	"math/rand/v2"
	"slices"

	"gostachio/internal/stats"
)

// Resamples is the number of bootstrap resamples of MedianSpeedupCI and
// GeoMeanSpeedupCI.
const Resamples = 10000

// MedianInterval is a sample's median with its distribution-free
// confidence interval (stats.MedianInterval).
type MedianInterval = stats.MedianInterval

// MedianRankCI is stats.MedianRankCI: the median of xs with its
// median-rank interval at level conf.
func MedianRankCI(xs []float64, conf float64) MedianInterval { return stats.MedianRankCI(xs, conf) }

// Median returns the median of xs (not modified); NaN for none.
func Median(xs []float64) float64 { return stats.Median(xs) }

// resampler draws bootstrap medians of one sample quickly: the sample is
// sorted once, so the median of a resample is the value at the median of
// the drawn indices, found by counting (O(n) per resample, no sort).
type resampler struct {
	s      []float64
	counts []int
}

func newResampler(xs []float64) *resampler {
	s := slices.Clone(xs)
	slices.Sort(s)
	return &resampler{s: s, counts: make([]int, len(s))}
}

func (r *resampler) median(rng *rand.Rand) float64 {
	n := len(r.s)
	clear(r.counts)
	for range n {
		r.counts[rng.IntN(n)]++
	}
	// The resample sorted is s[i] repeated counts[i] times; find its
	// 0-based positions (n-1)/2 and n/2.
	lo, hi := (n-1)/2, n/2
	var vlo, vhi float64
	seen := 0
	for i, c := range r.counts {
		if c == 0 {
			continue
		}
		if seen <= lo && lo < seen+c {
			vlo = r.s[i]
		}
		if seen <= hi && hi < seen+c {
			vhi = r.s[i]
			break
		}
		seen += c
	}
	return (vlo + vhi) / 2
}

// percentile returns the p-quantile (0 ≤ p ≤ 1) of sorted s by linear
// interpolation between order statistics: stats.Quantile's formula,
// written s[i]·(1−f) + s[i+1]·f, which rounds differently in the last
// bit; the bootstrap intervals keep it so that their bounds stay as
// published.
func percentile(s []float64, p float64) float64 {
	if len(s) == 1 {
		return s[0]
	}
	x := p * float64(len(s)-1)
	i := int(math.Floor(x))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	f := x - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}

// MedianSpeedupCI returns the speedup of B over A, median(a)/median(b)
// for run times a of A and b of B (> 1: B is faster), with a confidence
// interval at level conf: the percentile bootstrap of the ratio of
// medians, Resamples resamples drawn from rng (seed it for reproducible
// intervals), each resampling a and b independently.
//
// Why the bootstrap: the ratio of two independent medians has no
// distribution-free rank interval (the rank interval of MedianRankCI is
// for one median; pairing A and B by repetition would need every
// repetition of both, which merged shards do not guarantee), and the
// percentile bootstrap is consistent for medians and their smooth
// functions. Its coverage is checked by seeded trials from known
// distributions in the tests (≥ 90% at 95% from n = 5 per side). Below 5
// runs per side it is too coarse to trust (callers warn). Empty a or b
// gives NaNs; rng is used only when both have runs.
func MedianSpeedupCI(a, b []float64, conf float64, rng *rand.Rand) (median, lo, hi float64) {
	if len(a) == 0 || len(b) == 0 {
		nan := math.NaN()
		return nan, nan, nan
	}
	median = Median(a) / Median(b)
	ra, rb := newResampler(a), newResampler(b)
	boot := make([]float64, Resamples)
	for i := range boot {
		boot[i] = ra.median(rng) / rb.median(rng)
	}
	slices.Sort(boot)
	alpha := (1 - conf) / 2
	return median, percentile(boot, alpha), percentile(boot, 1-alpha)
}

// GeoMeanSpeedupCI returns the geometric mean over groups of the
// speedups median(a)/median(b) (groups[i] = {a, b}, every one non-empty),
// with the percentile bootstrap interval at level conf: each resample
// resamples every group's a and b independently and takes the geometric
// mean of the resampled ratios. No groups gives NaNs.
func GeoMeanSpeedupCI(groups [][2][]float64, conf float64, rng *rand.Rand) (gm, lo, hi float64) {
	if len(groups) == 0 {
		nan := math.NaN()
		return nan, nan, nan
	}
	rs := make([][2]*resampler, len(groups))
	logSum := 0.0
	for i, g := range groups {
		if len(g[0]) == 0 || len(g[1]) == 0 {
			nan := math.NaN()
			return nan, nan, nan
		}
		rs[i] = [2]*resampler{newResampler(g[0]), newResampler(g[1])}
		logSum += math.Log(Median(g[0]) / Median(g[1]))
	}
	gm = math.Exp(logSum / float64(len(groups)))
	boot := make([]float64, Resamples)
	for i := range boot {
		s := 0.0
		for _, r := range rs {
			s += math.Log(r[0].median(rng) / r[1].median(rng))
		}
		boot[i] = math.Exp(s / float64(len(rs)))
	}
	slices.Sort(boot)
	alpha := (1 - conf) / 2
	return gm, percentile(boot, alpha), percentile(boot, 1-alpha)
}

// MedianSE is the standard error of the median of xs: for runs drawn from
// a distribution of density f at its median, the sample median is about
// normal with standard deviation 1/(2 f √n); with the normal's f and the
// spread estimated robustly, by the median absolute deviation,
//
//	SE = √(π/2) · b_n · 1.4826 · MAD(xs) / √n
//
// where b_n is Croux & Rousseeuw's (1992) small-sample correction of the
// MAD (1.206 at n = 5, 1.107 at 9, n/(n − 0.8) past 9): the MAD of a few
// runs around their own median is biased low.
//
// It is how far the measured median of runs like xs typically lies from
// the true one: a prediction exact on the true median still differs from
// the measured one by |N(0, SE)|, 0.674·SE in the median. Fewer than 3 runs
// give NaN (no spread to estimate).
func MedianSE(xs []float64) float64 {
	n := len(xs)
	if n < 3 {
		return math.NaN()
	}
	m := Median(xs)
	dev := make([]float64, n)
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	b := float64(n) / (float64(n) - 0.8)
	if n <= 9 {
		b = [...]float64{3: 1.495, 4: 1.363, 5: 1.206, 6: 1.200, 7: 1.140, 8: 1.129, 9: 1.107}[n]
	}
	return math.Sqrt(math.Pi/2) * b * 1.4826 * Median(dev) / math.Sqrt(float64(n))
}
