package stats_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"gostachio/internal/stats"
)

// Example summarizes seeded run times (ms) with every statistic of the
// package.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 11)
	for i := range xs {
		xs[i] = 100 + float64(rng.IntN(50))
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	fmt.Println("runs:", sorted)
	fmt.Println("median:", stats.Median(xs), "lower median of 10:", stats.LowerMedian(xs[:10]))
	fmt.Printf("quantile 0.9: %.1f, nearest-rank p90: %.0f\n", stats.Quantile(sorted, 0.9), stats.NearestRank(sorted, 0.9))
	fmt.Printf("geometric mean: %.3f\n", stats.GeoMean(xs))
	ci := stats.MedianNormalCI(xs)
	fmt.Printf("normal 95%%: ranks %d..%d available %v\n", ci.LoRank, ci.HiRank, ci.CI)
	r := stats.MedianRankCI(xs, 0.95)
	fmt.Printf("rank 95%%: [%g, %g] coverage %.4f\n", r.Lo, r.Hi, r.Coverage)
	// Output:
	// runs: [102 106 109 111 122 124 130 133 138 139 139]
	// median: 124 lower median of 10: 122
	// quantile 0.9: 139.0, nearest-rank p90: 139
	// geometric mean: 122.260
	// normal 95%: ranks 3..10 available true
	// rank 95%: [106, 139] coverage 0.9883
}
