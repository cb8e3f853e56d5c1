package experiments

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestResamplerMedian compares the counting median of a resample with the
// median of the same resample drawn and sorted explicitly.
func TestResamplerMedian(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 10} {
		xs := make([]float64, n)
		src := rand.New(rand.NewPCG(3, uint64(n)))
		for i := range xs {
			xs[i] = src.NormFloat64()
		}
		r := newResampler(xs)
		a, b := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
		for range 500 {
			got := r.median(a)
			draw := make([]float64, n)
			for i := range draw {
				draw[i] = r.s[b.IntN(n)]
			}
			if want := Median(draw); got != want {
				t.Fatalf("n=%d: resample median %v, want %v", n, got, want)
			}
		}
	}
}

// sampler draws run times of A and B with a known true ratio of medians.
type sampler struct {
	name  string
	truth float64
	draw  func(rng *rand.Rand) (a, b float64)
}

var samplers = []sampler{
	// Lognormal: median exp(mu); A's spread 0.1, B's 0.3.
	{"lognormal", 2, func(rng *rand.Rand) (float64, float64) {
		return math.Exp(math.Ln2 + 0.1*rng.NormFloat64()), math.Exp(0.3 * rng.NormFloat64())
	}},
	// Shifted exponentials (right-skewed like measured times): median
	// shift + scale·ln 2.
	{"shifted-exp", (3 + 0.5*math.Ln2) / (2 + 0.2*math.Ln2), func(rng *rand.Rand) (float64, float64) {
		return 3 + 0.5*rng.ExpFloat64(), 2 + 0.2*rng.ExpFloat64()
	}},
}

func drawN(s sampler, rng *rand.Rand, n int) (a, b []float64) {
	for range n {
		x, y := s.draw(rng)
		a, b = append(a, x), append(b, y)
	}
	return a, b
}

// TestMedianSpeedupCICoverage: in 200 seeded trials per distribution and
// size, the 95% bootstrap interval covers the true ratio of medians in at
// least 90%.
func TestMedianSpeedupCICoverage(t *testing.T) {
	for _, s := range samplers {
		for _, n := range []int{5, 12} {
			rng := rand.New(rand.NewPCG(11, uint64(n)))
			cover, trials := 0, 200
			for range trials {
				a, b := drawN(s, rng, n)
				med, lo, hi := MedianSpeedupCI(a, b, 0.95, rng)
				if !(lo <= med && med <= hi) {
					t.Fatalf("%s: median %v outside [%v, %v]", s.name, med, lo, hi)
				}
				if lo <= s.truth && s.truth <= hi {
					cover++
				}
			}
			if c := float64(cover) / float64(trials); c < 0.90 {
				t.Errorf("%s n=%d: coverage %.3f < 0.90", s.name, n, c)
			} else {
				t.Logf("%s n=%d: coverage %.3f", s.name, n, c)
			}
		}
	}
}

// TestMedianSpeedupCINarrows: the interval's mean width shrinks with n
// (about as 1/√n: quadrupling n should at least shrink it by a third).
func TestMedianSpeedupCINarrows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	width := func(n int) float64 {
		w := 0.0
		for range 40 {
			a, b := drawN(samplers[0], rng, n)
			_, lo, hi := MedianSpeedupCI(a, b, 0.95, rng)
			w += hi - lo
		}
		return w / 40
	}
	w8, w32, w128 := width(8), width(32), width(128)
	if !(w32 < 0.67*w8 && w128 < 0.67*w32) {
		t.Errorf("mean widths n=8: %.3f, n=32: %.3f, n=128: %.3f; want each < 2/3 of the previous", w8, w32, w128)
	}
	// Identical runs: a point interval.
	if m, lo, hi := MedianSpeedupCI([]float64{2, 2, 2}, []float64{1, 1}, 0.95, rng); m != 2 || lo != 2 || hi != 2 {
		t.Errorf("constant runs: %v [%v, %v]", m, lo, hi)
	}
	if m, _, _ := MedianSpeedupCI(nil, []float64{1}, 0.95, rng); !math.IsNaN(m) {
		t.Error("no runs of A gave a number")
	}
	// Seeded: the same interval twice.
	a, b := drawN(samplers[1], rand.New(rand.NewPCG(1, 1)), 10)
	_, lo1, hi1 := MedianSpeedupCI(a, b, 0.95, rand.New(rand.NewPCG(4, 4)))
	_, lo2, hi2 := MedianSpeedupCI(a, b, 0.95, rand.New(rand.NewPCG(4, 4)))
	if lo1 != lo2 || hi1 != hi2 {
		t.Error("same seed, different intervals")
	}
}

// TestGeoMeanSpeedupCI: the point estimate is the geometric mean of the
// per-group ratios of medians, and the interval covers the true geometric
// mean in at least 90% of 200 seeded trials.
func TestGeoMeanSpeedupCI(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	truth := math.Sqrt(samplers[0].truth * samplers[1].truth)
	cover := 0
	for range 200 {
		a0, b0 := drawN(samplers[0], rng, 6)
		a1, b1 := drawN(samplers[1], rng, 6)
		gm, lo, hi := GeoMeanSpeedupCI([][2][]float64{{a0, b0}, {a1, b1}}, 0.95, rng)
		want := math.Sqrt(Median(a0) / Median(b0) * Median(a1) / Median(b1))
		if math.Abs(gm-want) > 1e-12*want {
			t.Fatalf("geomean %v, want %v", gm, want)
		}
		if lo <= truth && truth <= hi {
			cover++
		}
	}
	if c := float64(cover) / 200; c < 0.90 {
		t.Errorf("geomean coverage %.3f < 0.90", c)
	}
	if gm, _, _ := GeoMeanSpeedupCI(nil, 0.95, rng); !math.IsNaN(gm) {
		t.Error("no groups gave a number")
	}
}

func TestNaturalCompare(t *testing.T) {
	in := []string{"q10", "q2", "q1", "chunk=16MiB", "chunk=8MiB", "chunk=128MiB", "q21"}
	slices.SortFunc(in, naturalCompare)
	want := []string{"chunk=8MiB", "chunk=16MiB", "chunk=128MiB", "q1", "q2", "q10", "q21"}
	if !slices.Equal(in, want) {
		t.Errorf("got %v, want %v", in, want)
	}
}

// TestMedianSEPredictsTheError: from known distributions (normal;
// uniform, whose density at the median is not the normal's), over many
// trials of n runs, the typical |measured median − true median| is
// 0.674·SE within a factor 1.4 — the use validate makes of it (a noise
// floor over many cases) — and SE shrinks as 1/√n.
func TestMedianSEPredictsTheError(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	if !math.IsNaN(MedianSE([]float64{1, 2})) {
		t.Fatal("2 runs: want NaN")
	}
	if se := MedianSE([]float64{3, 3, 3, 3}); se != 0 {
		t.Fatalf("identical runs: SE %v", se)
	}
	for _, d := range []struct {
		name string
		draw func() float64
	}{
		{"normal", func() float64 { return 10 + rng.NormFloat64() }},
		{"uniform", func() float64 { return 9 + 2*rng.Float64() }},
	} {
		for _, n := range []int{5, 9, 36} {
			const trials = 4000
			errs, floors := make([]float64, trials), make([]float64, trials)
			for trial := range errs {
				xs := make([]float64, n)
				for i := range xs {
					xs[i] = d.draw()
				}
				errs[trial] = math.Abs(Median(xs) - 10)
				floors[trial] = 0.674 * MedianSE(xs)
			}
			got, want := Median(floors), Median(errs)
			t.Logf("%s n=%d: median |error| %.4f, 0.674·SE %.4f", d.name, n, want, got)
			if got < want/1.4 || got > want*1.4 {
				t.Errorf("%s n=%d: 0.674·SE is %.4f in the median, the error %.4f", d.name, n, got, want)
			}
		}
	}
}
