package stats

import (
	"math"
	"testing"
)

// TestMedianRanks checks the Hoefler & Belli ranks against values worked out by hand:
// n=5: √5·1.96=4.383, (5−4.383)/2=0.309→1, 1+(5+4.383)/2=5.691→6 (beyond n: no CI);
// n=7: 5.186, 0.907→1, 7.093→8 (no CI); n=8: 5.544, 1.228→2, 7.772→8;
// n=10: 6.198, 1.901→2, 9.099→10; n=20: 8.765, 5.617→6, 15.383→16; n=1: 1.96, −0.48→0, 2.48→3.
func TestMedianRanks(t *testing.T) {
	for _, tc := range []struct{ n, lo, hi int }{{1, 0, 3}, {5, 1, 6}, {7, 1, 8}, {8, 2, 8}, {10, 2, 10}, {20, 6, 16}} {
		if lo, hi := medianRanks(tc.n); lo != tc.lo || hi != tc.hi {
			t.Errorf("n=%d: ranks %d,%d want %d,%d", tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestMedianCI(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want MedianCI
	}{
		{"empty", nil, MedianCI{}},
		// 5 values, unsorted: sorted 0.53 0.64 0.95 1.03 1.69; median 0.95; CI ranks 1,6: none;
		// range coverage 1 − 2/32 = 0.9375.
		{"five", []float64{0.53, 1.69, 0.64, 1.03, 0.95},
			MedianCI{N: 5, Median: 0.95, LoRank: 1, HiRank: 6, Min: 0.53, Max: 1.69, RangeCoverage: 0.9375}},
		// 8 values: sorted 1 2 3 4 5 6 7 8; median (4+5)/2 = 4.5; CI ranks 2 and 8 → [2, 8].
		{"eight", []float64{8, 1, 7, 2, 6, 3, 5, 4},
			MedianCI{N: 8, Median: 4.5, CI: true, Lo: 2, Hi: 8, LoRank: 2, HiRank: 8, Min: 1, Max: 8, RangeCoverage: 1 - 1.0/128}},
		// 10 values 0.1…1.0 reversed: median (0.5+0.6)/2 = 0.55; ranks 2 and 10 → [0.2, 1.0].
		{"ten", []float64{1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1},
			MedianCI{N: 10, Median: 0.55, CI: true, Lo: 0.2, Hi: 1.0, LoRank: 2, HiRank: 10, Min: 0.1, Max: 1.0, RangeCoverage: 1 - 1.0/512}},
		// One value: median is it, no CI, range coverage 1 − 2^0 = 0.
		{"one", []float64{3}, MedianCI{N: 1, Median: 3, LoRank: 0, HiRank: 3, Min: 3, Max: 3, RangeCoverage: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			got := MedianNormalCI(tc.xs)
			if math.Abs(got.Median-tc.want.Median) > 1e-12 {
				t.Errorf("median %v want %v", got.Median, tc.want.Median)
			}
			got.Median = tc.want.Median
			if math.Abs(got.RangeCoverage-tc.want.RangeCoverage) > 1e-12 {
				t.Errorf("range coverage %v want %v", got.RangeCoverage, tc.want.RangeCoverage)
			}
			got.RangeCoverage = tc.want.RangeCoverage
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			for i := range in {
				if in[i] != tc.xs[i] {
					t.Fatalf("input modified: %v", tc.xs)
				}
			}
		})
	}
}
