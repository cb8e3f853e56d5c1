package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// binomCoverage is 1 − 2·P(B ≤ l−1), B ~ Binomial(n, ½), computed exactly
// with big rationals (independent of MedianRankCI's log-space sums).
func binomCoverage(n, l int) float64 {
	sum := new(big.Int)
	for k := 0; k < l; k++ {
		sum.Add(sum, new(big.Int).Binomial(int64(n), int64(k)))
	}
	p := new(big.Rat).SetFrac(new(big.Int).Mul(sum, big.NewInt(2)), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	f, _ := new(big.Rat).Sub(big.NewRat(1, 1), p).Float64()
	return f
}

// TestMedianRankCIRanks checks the ranks and coverage against the exact
// binomial: the largest l whose coverage reaches 95%, for n = 1..120.
func TestMedianRankCIRanks(t *testing.T) {
	for n := 1; n <= 120; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // reversed: MedianRankCI must sort
		}
		m := MedianRankCI(xs, 0.95)
		wantL := 0
		for l := 1; 2*l <= n+1; l++ {
			if binomCoverage(n, l) >= 0.95 {
				wantL = l
			}
		}
		if n%2 == 1 && m.Median != float64((n+1)/2) || n%2 == 0 && m.Median != float64(n+1)/2 {
			t.Errorf("n=%d: median %v", n, m.Median)
		}
		if wantL == 0 {
			if m.OK || m.Lo != 1 || m.Hi != float64(n) || math.Abs(m.Coverage-binomCoverage(n, 1)) > 1e-12 && n > 1 {
				t.Errorf("n=%d: %+v, want the range without 95%% (coverage %v)", n, m, binomCoverage(n, 1))
			}
			continue
		}
		// Sorted values are 1..n: x(l) = l.
		if !m.OK || m.Lo != float64(wantL) || m.Hi != float64(n+1-wantL) || math.Abs(m.Coverage-binomCoverage(n, wantL)) > 1e-9 {
			t.Errorf("n=%d: %+v, want ranks %d..%d coverage %v", n, m, wantL, n+1-wantL, binomCoverage(n, wantL))
		}
	}
	if m := MedianRankCI([]float64{3, 1, 2, 5, 4, 6}, 0.95); !m.OK || m.Lo != 1 || m.Hi != 6 || m.Median != 3.5 {
		t.Errorf("n=6: %+v (6 values are the fewest with a 95%% interval: the range)", m)
	}
	if m := MedianRankCI(nil, 0.95); m.N != 0 || !math.IsNaN(m.Median) {
		t.Errorf("empty: %+v", m)
	}
}

// TestMedianRankCICoverage draws seeded samples from a distribution with
// a known median (exponential: ln 2) and checks the interval covers it in
// at least 93% of trials (it is exact: ≥ 95% in expectation).
func TestMedianRankCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{8, 15, 40} {
		cover, trials := 0, 1000
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.ExpFloat64()
			}
			if m := MedianRankCI(xs, 0.95); m.Lo <= math.Ln2 && math.Ln2 <= m.Hi {
				cover++
			}
		}
		if c := float64(cover) / float64(trials); c < 0.93 {
			t.Errorf("n=%d: coverage %.3f", n, c)
		}
	}
}
