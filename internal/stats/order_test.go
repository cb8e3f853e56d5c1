package stats

import (
	"math"
	"testing"
	"time"
)

func TestLowerMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []int64
		want int64
	}{{[]int64{3}, 3}, {[]int64{4, 1}, 1}, {[]int64{5, 1, 3}, 3}, {[]int64{8, 2, 6, 4}, 4}} {
		in := append([]int64(nil), c.xs...)
		if got := LowerMedian(c.xs); got != c.want {
			t.Errorf("LowerMedian(%v) = %d, want %d", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.xs[i] {
				t.Errorf("LowerMedian reordered %v to %v", in, c.xs)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("LowerMedian of no values does not panic")
		}
	}()
	LowerMedian([]float64{})
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 4, 8}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {1, 8}, {0.5, 3}, {0.9, 6.8}, {1.0 / 3, 2}} {
		if got := Quantile(s, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v, %g) = %g, want %g", s, c.q, got, c.want)
		}
	}
	if got := Quantile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("no values: %g", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Quantile(1.5) does not panic")
		}
	}()
	Quantile(s, 1.5)
}

func TestNearestRank(t *testing.T) {
	d := []time.Duration{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 10}, {0.5, 50}, {0.51, 60}, {0.99, 100}, {1, 100}} {
		if got := NearestRank(d, c.p); got != c.want {
			t.Errorf("NearestRank(p=%g) = %d, want %d", c.p, got, c.want)
		}
	}
	if got := NearestRank([]time.Duration(nil), 0.5); got != 0 {
		t.Errorf("no values: %d", got)
	}
}

func TestGeoMean(t *testing.T) {
	if got := GeoMean([]float64{1, 4, 16}); math.Abs(got-4) > 1e-12 {
		t.Errorf("GeoMean(1, 4, 16) = %g", got)
	}
	for _, xs := range [][]float64{nil, {1, 0}, {2, -1}} {
		if got := GeoMean(xs); !math.IsNaN(got) {
			t.Errorf("GeoMean(%v) = %g, want NaN", xs, got)
		}
	}
}
