package sqlplan

import (
	"math"
	"math/rand"
	"testing"

	"gostachio/plan"
)

// poissonSample draws K ~ Poisson(m) by Knuth's product of uniforms
// (m small) or as the sum of Poisson(1) draws (m larger).
func poissonSample(r *rand.Rand, m float64) int {
	k := 0
	for m > 10 {
		k += poissonSample(r, 10)
		m -= 10
	}
	l, prod := math.Exp(-m), r.Float64()
	for prod > l {
		k++
		prod *= r.Float64()
	}
	return k
}

func TestUniformMomentsAndCDF(t *testing.T) {
	for _, tc := range []struct{ lo, hi, d float64 }{{1, 50, 50}, {0, 0.1, 11}, {100, 5000, 50}, {-3, 7, 2}} {
		step := (tc.hi - tc.lo) / (tc.d - 1)
		var sum, sq float64
		for i := 0.0; i < tc.d; i++ {
			x := tc.lo + i*step
			sum += x
			sq += x * x
		}
		mean := sum / tc.d
		variance := sq/tc.d - mean*mean
		m, v := uniformMoments(tc.lo, tc.hi, tc.d)
		if math.Abs(m-mean) > 1e-9*math.Max(1, math.Abs(mean)) || math.Abs(v-variance) > 1e-9*math.Max(1, variance) {
			t.Errorf("uniformMoments(%v): %v, %v; want %v, %v", tc, m, v, mean, variance)
		}
		for _, c := range []float64{tc.lo - 1, tc.lo, tc.lo + step/2, tc.lo + 2*step, tc.hi, tc.hi + 1} {
			var lt, le float64
			for i := 0.0; i < tc.d; i++ {
				x := tc.lo + i*step
				if x < c-1e-12 {
					lt++
				}
				if x <= c+1e-12 {
					le++
				}
			}
			below, atMost := uniformCDF(c, tc.lo, tc.hi, tc.d)
			if math.Abs(below-lt/tc.d) > 1e-12 || math.Abs(atMost-le/tc.d) > 1e-12 {
				t.Errorf("uniformCDF(%v, %v): %v, %v; want %v, %v", c, tc, below, atMost, lt/tc.d, le/tc.d)
			}
		}
	}
}

func TestPoissonAtLeast(t *testing.T) {
	for _, m := range []float64{0.5, 3, 30, 400} {
		// pmf by the recurrence p(j) = p(j−1)·m/j, in logs from p(0).
		pmf := func(j int) float64 {
			lp := -m
			for i := 1; i <= j; i++ {
				lp += math.Log(m / float64(i))
			}
			return math.Exp(lp)
		}
		for _, k := range []int{0, 1, int(m), int(m) + 1, int(2*m) + 5} {
			want := 0.0
			for j := k; j < k+2000; j++ {
				want += pmf(j)
			}
			got := poissonAtLeast(float64(k), m)
			if math.Abs(got-want) > 1e-9+1e-6*want {
				t.Errorf("poissonAtLeast(%d, %v) = %v, want %v", k, m, got, want)
			}
		}
	}
}

// TestAggregateTails checks aggCompare's group model against a seeded
// Monte-Carlo simulation of it: groups of 1 + Poisson(n̄−1) rows, values
// uniform over d evenly spread points. count, min and max are exact
// under the model; sum and avg are normal approximations, held to a
// looser bound (and, in the tails, to a factor of the simulated share).
func TestAggregateTails(t *testing.T) {
	const trials = 200000
	r := rand.New(rand.NewSource(1))
	type agg struct {
		fn   plan.AggFn
		v    float64
		op   plan.Fn
		want float64 // filled by the simulation
	}
	for _, g := range []struct{ n, lo, hi, d float64 }{{4, 1, 50, 50}, {1, 1, 50, 50}, {20, 0, 0.1, 11}, {2.5, 100, 1000, 901}} {
		mu := (g.lo + g.hi) / 2
		var cases []agg
		for _, fn := range []plan.AggFn{plan.AggSum, plan.AggAvg, plan.AggMin, plan.AggMax, plan.AggCount} {
			for _, q := range []float64{0.1, 0.5, 0.9, 1.5, 2} {
				var v float64
				switch fn {
				case plan.AggSum:
					v = q * g.n * mu
				case plan.AggCount:
					v = math.Round(q * g.n)
				default:
					v = g.lo + (g.hi-g.lo)*q/2
				}
				for _, op := range []plan.Fn{plan.FnGt, plan.FnGe, plan.FnLt, plan.FnLe} {
					cases = append(cases, agg{fn: fn, v: v, op: op})
				}
			}
		}
		step := (g.hi - g.lo) / (g.d - 1)
		for i := 0; i < trials; i++ {
			n := 1 + poissonSample(r, g.n-1)
			var sum float64
			mn, mx := math.Inf(1), math.Inf(-1)
			for j := 0; j < n; j++ {
				x := g.lo + float64(r.Intn(int(g.d)))*step
				sum += x
				mn, mx = math.Min(mn, x), math.Max(mx, x)
			}
			for k := range cases {
				c := &cases[k]
				var a float64
				switch c.fn {
				case plan.AggSum:
					a = sum
				case plan.AggAvg:
					a = sum / float64(n)
				case plan.AggMin:
					a = mn
				case plan.AggMax:
					a = mx
				case plan.AggCount:
					a = float64(n)
				}
				eps := 1e-9 * math.Max(1, math.Abs(c.v))
				var pass bool
				switch c.op {
				case plan.FnGt:
					pass = a > c.v+eps
				case plan.FnGe:
					pass = a >= c.v-eps
				case plan.FnLt:
					pass = a < c.v-eps
				case plan.FnLe:
					pass = a <= c.v+eps
				}
				if pass {
					c.want++
				}
			}
		}
		p := &planner{cols: map[string]*column{
			"x": {name: "x", t: typ{k: kDecimal, scale: 2}, distinct: g.d,
				rng: plan.MinMax{Valid: true, Min: int64(math.Round(g.lo * 100)), Max: int64(math.Round(g.hi * 100))}},
		}}
		for k, c := range cases {
			col := &column{name: "a", t: typ{k: kFloat}, agg: &aggStat{fn: c.fn, arg: "x", perGroup: g.n}}
			p.cols["a"] = col
			lit := plan.Lit{Kind: plan.LitDecimal, I: int64(math.Round(c.v * 1e6)), Scale: 6}
			call := plan.Call{Fn: c.op, Args: []plan.Expr{plan.Col("a"), lit}}
			if k%2 == 1 {
				// The mirrored comparison: literal first.
				mirror := map[plan.Fn]plan.Fn{plan.FnGt: plan.FnLt, plan.FnGe: plan.FnLe, plan.FnLt: plan.FnGt, plan.FnLe: plan.FnGe}
				call = plan.Call{Fn: mirror[c.op], Args: []plan.Expr{lit, plan.Col("a")}}
			}
			got, ok := p.aggCompare(call)
			if !ok {
				t.Fatalf("%v: aggCompare does not apply", call)
			}
			want := c.want / trials
			se := math.Sqrt(want*(1-want)/trials) + 1e-4
			tol := 5 * se
			approx := c.fn == plan.AggSum || c.fn == plan.AggAvg
			if approx {
				// The normal approximation: within 0.04, and within a factor of
				// 2.5 of a tail of at least 0.2%.
				tol = math.Max(tol, 0.04)
			}
			if math.Abs(got-want) > tol {
				t.Errorf("n̄ %v, x uniform over %v points in [%v, %v]: %s(x) %s %v: model %.4f, simulated %.4f", g.n, g.d, g.lo, g.hi, c.fn, c.op, c.v, got, want)
			}
			if approx && want >= 0.002 && want <= 0.2 && (got > 2.5*want || got < want/2.5) {
				t.Errorf("n̄ %v, [%v, %v]: %s(x) %s %v: tail %.5f, simulated %.5f", g.n, g.lo, g.hi, c.fn, c.op, c.v, got, want)
			}
		}
	}
}

// TestHavingEstimate plans HAVING conditions on aggregates and checks
// the filters' estimates are the model's (t: 1000 rows, s 10 distinct,
// so 100 rows a group; a uniform over 1..1000).
func TestHavingEstimate(t *testing.T) {
	mu, vr := 500.5, 999.0*1001/12
	// The sum's tail mixed over group sizes 1 + Poisson(99), the pmf by
	// its recurrence.
	sumTail, pmf := 0.0, math.Exp(-99)
	for j := 0; j < 400; j++ {
		if j > 0 {
			pmf *= 99 / float64(j)
		}
		k := float64(j + 1)
		sumTail += pmf * math.Erfc((60000-k*mu)/math.Sqrt(k*vr)/math.Sqrt2) / 2
	}
	for _, tc := range []struct {
		sql  string
		want float64
	}{
		{"select s, count(*) from t group by s having count(*) > 110", poissonAtLeast(110, 99)},
		{"select s, sum(a) from t group by s having sum(a) > 60000", sumTail},
		{"select s from t group by s having 990 < max(a)", 1 - powerMean(0.99, 100)},
	} {
		p, err := Plan("h", tc.sql, testTables(), Options{})
		if err != nil {
			t.Fatalf("%q: %v", tc.sql, err)
		}
		found := false
		for _, pl := range p.Pipelines {
			for _, op := range pl.Ops {
				if op.Kind == plan.OpFilter {
					found = true
					if math.Abs(op.Selectivity-tc.want) > 1e-9 {
						t.Errorf("%q: filter %q estimated %v, want %v", tc.sql, op.Label, op.Selectivity, tc.want)
					}
				}
			}
		}
		if !found {
			t.Errorf("%q: no filter", tc.sql)
		}
	}
}
