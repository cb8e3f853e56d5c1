package sqlplan

import (
	"math"
	"strings"

	"gostachio/plan"
)

// Heuristic constants of the estimates, where statistics say nothing:
const (
	// defaultTextLen is the assumed average length of a text value whose
	// statistics lack one.
	defaultTextLen = 16
	// textOffsetBytes is the per-value overhead of stored text (an Arrow
	// utf8 int32 offset).
	textOffsetBytes = 4
	// defaultDistinctShare is the distinct values per row assumed for a
	// column without a Distinct estimate or an integer range (older
	// manifests).
	defaultDistinctShare = 0.1
	// rangeSel is the selectivity of a comparison that no range informs
	// (an expression, a column without min/max): the classic one third.
	rangeSel = 1.0 / 3
	// likePrefixSel is LIKE 'abc%' (a fixed prefix), likeInnerSel a
	// pattern starting with '%'; each further fixed fragment multiplies
	// by likeFragmentSel. TPC-H's patterns select 1% ('forest%') to 17%
	// ('PROMO%') with a prefix, 5% ('%green%') to 1% (two fragments).
	likePrefixSel   = 0.1
	likeInnerSel    = 0.05
	likeFragmentSel = 0.2
	// minSel bounds every selectivity from below: estimates are
	// multiplied, and an operator must keep a positive share (a tail
	// of an aggregate's distribution, see aggCompare, can be far
	// smaller).
	minSel = 1e-6
	// magicShare: a subquery joined on keys whose input rows the outer
	// side can restrict (magic set) is restricted when the outer side's
	// distinct keys are below this share of the subquery's groups: the
	// outer keys are then shuffled, broadcast and semi-joined with the
	// subquery's input before it aggregates.
	magicShare = 0.2
	// transferShare: a scan semi-joins an existing broadcast hash table
	// of a key its column is joined to when the table's distinct keys
	// are below this share of the column's (a probe of a small table
	// costs less than carrying the rows it drops).
	transferShare = 0.5
	// buildCost is the work of building one row into a hash table in
	// rows probed (hashing, inserting, and a larger table's cache misses
	// for every probe): the join order weighs builds by it.
	buildCost = 2
	// maxOrdered is the most subtrees of one join tree whose orders are
	// all weighed (n! of them); more keep the order of their reductions.
	maxOrdered = 6
	// eagerKeep: a grouped block aggregates its fact side before joining
	// the relations its group keys read only when that join is estimated
	// to keep at least this share of the fact rows (a dimension that
	// filters is better joined before aggregating).
	eagerKeep = 0.9
	// groupTerms is the most group sizes a HAVING estimate sums its
	// model over (see groupMean); larger groups take a normal limit.
	groupTerms = 2000
)

// defaultDistinct is the distinct estimate of a column without one: its
// integer range where known, else defaultDistinctShare of the rows.
func defaultDistinct(t typ, rows float64, r plan.MinMax) float64 {
	d := math.Max(1, rows*defaultDistinctShare)
	if r.Valid && t.k != kString && t.k != kFloat {
		d = math.Min(rows, float64(r.Max-r.Min+1))
	}
	return math.Max(1, d)
}

// exprDistinct estimates the distinct values of an expression: a
// column's estimate, year() its range in years, substring n bytes at
// most 100^n (printable characters), a CASE its branches' sum, a literal
// 1, and other expressions the product of their operands' (capped).
func (p *planner) exprDistinct(e plan.Expr) float64 {
	switch x := e.(type) {
	case plan.Col:
		if c := p.cols[string(x)]; c != nil && c.distinct > 0 {
			return c.distinct
		}
		return 1000
	case plan.Lit:
		return 1
	case plan.Call:
		switch x.Fn {
		case plan.FnYear:
			if c, ok := x.Args[0].(plan.Col); ok && p.cols[string(c)] != nil && p.cols[string(c)].rng.Valid {
				r := p.cols[string(c)].rng
				return math.Max(1, float64(r.Max-r.Min)/365.25+1)
			}
			return 10
		case plan.FnSubstr:
			n := 1.0
			if l, ok := x.Args[2].(plan.Lit); ok {
				n = math.Pow(100, float64(l.I))
			}
			return math.Min(n, p.exprDistinct(x.Args[0]))
		case plan.FnCase:
			return p.exprDistinct(x.Args[1]) + p.exprDistinct(x.Args[2])
		}
		d := 1.0
		for _, a := range x.Args {
			d *= p.exprDistinct(a)
		}
		return math.Min(d, 1e12)
	}
	return 1000
}

// exprWidth is the estimated bytes of the expression's values.
func (p *planner) exprWidth(b bexpr) int {
	if c, ok := b.e.(plan.Col); ok {
		if col := p.cols[string(c)]; col != nil {
			return col.width
		}
	}
	return width(b.t, 0)
}

// selectivity estimates the share of rows satisfying pred: equality
// with a literal 1/distinct, a range on an integer-coded column the
// covered share of its [min, max], IN k/distinct, LIKE the constants
// above; AND multiplies (independence), OR is inclusion-exclusion, NOT
// complements.
func (p *planner) selectivity(pred plan.Expr) float64 {
	s := p.sel(pred)
	return math.Min(1, math.Max(minSel, s))
}

func (p *planner) sel(pred plan.Expr) float64 {
	c, ok := pred.(plan.Call)
	if !ok {
		return rangeSel
	}
	a := c.Args
	switch c.Fn {
	case plan.FnAnd:
		// Comparisons of one column with constants bound one range.
		s := 1.0
		type bounds struct{ lo, hi int64 }
		ranges := map[string]*bounds{}
		var order []string
		for _, x := range splitAnd(c) {
			if xc, ok := x.(plan.Call); ok && xc.Fn != plan.FnEq && xc.Fn != plan.FnIn {
				if col, lo, hi, ok := p.rangeOf(xc); ok {
					b := ranges[col]
					if b == nil {
						b = &bounds{math.MinInt64, math.MaxInt64}
						ranges[col] = b
						order = append(order, col)
					}
					b.lo, b.hi = max(b.lo, lo), min(b.hi, hi)
					continue
				}
			}
			s *= p.selectivity(x)
		}
		for _, col := range order {
			b := ranges[col]
			if b.lo > b.hi {
				return minSel
			}
			s *= math.Max(minSel, p.rangeShare(col, b.lo, b.hi))
		}
		return s
	case plan.FnOr:
		miss := 1.0
		for _, x := range a {
			miss *= 1 - p.selectivity(x)
		}
		return 1 - miss
	case plan.FnNot:
		return 1 - p.selectivity(a[0])
	case plan.FnEq, plan.FnNe:
		d := math.Max(p.exprDistinct(a[0]), p.exprDistinct(a[1]))
		s := 1 / math.Max(1, d)
		if c.Fn == plan.FnNe {
			return 1 - s
		}
		return s
	case plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
		if s, ok := p.aggCompare(c); ok {
			return s
		}
		col, lo, hi, ok := p.rangeOf(c)
		if !ok {
			return rangeSel
		}
		return p.rangeShare(col, lo, hi)
	case plan.FnBetween:
		col, lo, hi, ok := p.rangeOf(c)
		if !ok {
			return rangeSel * rangeSel * 2
		}
		return p.rangeShare(col, lo, hi)
	case plan.FnIn, plan.FnNotIn:
		s := math.Min(1, float64(len(a)-1)/math.Max(1, p.exprDistinct(a[0])))
		if c.Fn == plan.FnNotIn {
			return 1 - s
		}
		return s
	case plan.FnLike, plan.FnNotLike:
		s := likeSel(a[1].(plan.Lit).S, p.exprDistinct(a[0]))
		if c.Fn == plan.FnNotLike {
			return 1 - s
		}
		return s
	}
	return rangeSel
}

// likeSel is the estimated share of values matching pattern.
func likeSel(pattern string, distinct float64) float64 {
	frags := 0
	for _, f := range strings.FieldsFunc(pattern, func(r rune) bool { return r == '%' }) {
		if f != "" {
			frags++
		}
	}
	if !strings.ContainsAny(pattern, "%_") {
		return 1 / math.Max(1, distinct)
	}
	s := likeInnerSel
	if !strings.HasPrefix(pattern, "%") {
		s = likePrefixSel
	}
	for i := 1; i < frags; i++ {
		s *= likeFragmentSel
	}
	return s
}

// rangeShare is the share of column col's range [min, max] inside
// [lo, hi] (rangeSel when the column has no range).
func (p *planner) rangeShare(col string, lo, hi int64) float64 {
	c := p.cols[col]
	if c == nil || !c.rng.Valid || c.rng.Max < c.rng.Min {
		return rangeSel
	}
	l := math.Max(float64(lo), float64(c.rng.Min))
	h := math.Min(float64(hi), float64(c.rng.Max))
	if h < l {
		return minSel
	}
	return (h - l + 1) / (float64(c.rng.Max) - float64(c.rng.Min) + 1)
}

// rangeOf reads a comparison of an integer-coded column with literals
// as the column's closed range [lo, hi] in its own coding (decimal
// literals scaled to the column's scale; a bound that does not land on
// the scale is widened, so the range never drops a matching value).
func (p *planner) rangeOf(c plan.Call) (col string, lo, hi int64, ok bool) {
	a := c.Args
	if len(a) < 2 {
		return "", 0, 0, false
	}
	fn := c.Fn
	cc, isCol := a[0].(plan.Col)
	litIdx := 1
	if !isCol {
		if cc, isCol = a[1].(plan.Col); !isCol || fn == plan.FnBetween || fn == plan.FnIn {
			return "", 0, 0, false
		}
		litIdx = 0
		fn = map[plan.Fn]plan.Fn{plan.FnLt: plan.FnGt, plan.FnLe: plan.FnGe, plan.FnGt: plan.FnLt, plan.FnGe: plan.FnLe, plan.FnEq: plan.FnEq}[fn]
	}
	colInfo := p.cols[string(cc)]
	if colInfo == nil || !(colInfo.t.integer() || colInfo.t.k == kDecimal || colInfo.t.k == kDate) {
		return "", 0, 0, false
	}
	scale := 0
	if colInfo.t.k == kDecimal {
		scale = colInfo.t.scale
	}
	conv := func(e plan.Expr) (floor, ceil int64, ok bool) {
		l, isLit := e.(plan.Lit)
		if !isLit {
			return 0, 0, false
		}
		switch {
		case l.Kind == plan.LitDate && colInfo.t.k == kDate:
			return l.I, l.I, true
		case (l.Kind == plan.LitInt || l.Kind == plan.LitDecimal) && colInfo.t.k != kDate:
			ls := 0
			if l.Kind == plan.LitDecimal {
				ls = int(l.Scale)
			}
			v := l.I
			for ; ls < scale; ls++ {
				if v > math.MaxInt64/10 || v < math.MinInt64/10 {
					return 0, 0, false
				}
				v *= 10
			}
			if ls == scale {
				return v, v, true
			}
			div := int64(1)
			for ; ls > scale; ls-- {
				div *= 10
			}
			f := v / div
			if v%div != 0 && v < 0 {
				f--
			}
			return f, f + 1, true
		}
		return 0, 0, false
	}
	lo, hi = math.MinInt64, math.MaxInt64
	switch fn {
	case plan.FnEq:
		f, cl, ok := conv(a[litIdx])
		if !ok {
			return "", 0, 0, false
		}
		lo, hi = f, cl
	case plan.FnLt, plan.FnLe:
		f, cl, ok := conv(a[litIdx])
		if !ok {
			return "", 0, 0, false
		}
		hi = cl
		if fn == plan.FnLt && f == cl {
			hi = f - 1
		}
	case plan.FnGt, plan.FnGe:
		f, cl, ok := conv(a[litIdx])
		if !ok {
			return "", 0, 0, false
		}
		lo = f
		if fn == plan.FnGt && f == cl {
			lo = f + 1
		}
	case plan.FnBetween:
		f1, _, ok1 := conv(a[1])
		_, c2, ok2 := conv(a[2])
		if !ok1 || !ok2 {
			return "", 0, 0, false
		}
		lo, hi = f1, c2
	case plan.FnIn:
		for i, x := range a[1:] {
			f, cl, ok := conv(x)
			if !ok {
				return "", 0, 0, false
			}
			if i == 0 || f < lo {
				lo = f
			}
			if i == 0 || cl > hi {
				hi = cl
			}
		}
	default:
		return "", 0, 0, false
	}
	return string(cc), lo, hi, true
}

// aggOf is the aggregate statistics of e when it is an aggregate's
// output column (nil otherwise).
func (p *planner) aggOf(e plan.Expr) *aggStat {
	if c, ok := e.(plan.Col); ok && p.cols[string(c)] != nil {
		return p.cols[string(c)].agg
	}
	return nil
}

// aggCompare estimates a comparison of an aggregate's output column with
// a literal (HAVING sum(x) > c): the share of groups whose aggregate
// passes, from a model of the groups. The groups hold n̄ input rows on
// average (aggStat.perGroup); lacking the spread of the group sizes, a
// group is assumed to hold one row plus a Poisson(n̄−1) number of others
// (the other rows fall into the groups independently): size N with mean
// n̄, variance n̄−1, every group exactly one row when n̄ = 1. The argument
// x is assumed uniform over its d distinct values spread evenly over its
// statistics' [min, max] (see uniformMoments), independently of the
// group. With μ, σ² x's mean and variance, F(c) = P(x ≤ c) and
// G(c) = P(x ≥ c):
//
//	count(*) > c:  P(1 + Poisson(n̄−1) > c)                 (poissonAtLeast)
//	sum(x) > c:    E[1 − Φ((c − Nμ) / (σ√N))]              (central limit)
//	avg(x) > c:    E[1 − Φ((c − μ) / (σ/√N))]              (central limit)
//	max(x) ≤ c:    E[F(c)^N] = F·exp(−(n̄−1)(1−F))          (order statistic)
//	min(x) ≥ c:    E[G(c)^N] = G·exp(−(n̄−1)(1−G))
//
// where the expectations over N are summed (groupMean), a group of one
// row taking x's own distribution in place of the normal; the other
// operators are the complements (sum and avg read ≥ as >). A floor,
// minSel, applies to the result as to every selectivity. ok is false
// where the model does not apply: another aggregate, an argument without
// a range, an expression, a non-literal bound, or an aggregation not yet
// estimated.
func (p *planner) aggCompare(c plan.Call) (float64, bool) {
	a := c.Args
	fn := c.Fn
	as := p.aggOf(a[0])
	lit, isLit := a[1].(plan.Lit)
	if as == nil {
		if as = p.aggOf(a[1]); as == nil {
			return 0, false
		}
		lit, isLit = a[0].(plan.Lit)
		fn = map[plan.Fn]plan.Fn{plan.FnLt: plan.FnGt, plan.FnLe: plan.FnGe, plan.FnGt: plan.FnLt, plan.FnGe: plan.FnLe}[fn]
	}
	if !isLit || as.perGroup < 1 {
		return 0, false
	}
	var v float64
	switch lit.Kind {
	case plan.LitInt, plan.LitDate:
		v = float64(lit.I)
	case plan.LitDecimal:
		v = float64(lit.I) / math.Pow10(int(lit.Scale))
	case plan.LitFloat:
		v = lit.F
	default:
		return 0, false
	}
	n := as.perGroup
	// above is P(agg > v), or P(agg ≥ v) when orEqual.
	orEqual := fn == plan.FnGe || fn == plan.FnLt
	var above float64
	if as.fn == plan.AggCount {
		k := math.Floor(v) + 1
		if orEqual {
			k = math.Ceil(v)
		}
		above = poissonAtLeast(k-1, n-1)
	} else {
		x := p.cols[as.arg]
		if x == nil || !x.rng.Valid || x.rng.Max < x.rng.Min || !(x.t.integer() || x.t.k == kDecimal || x.t.k == kDate) {
			return 0, false
		}
		unit := 1.0
		if x.t.k == kDecimal {
			unit = math.Pow10(-x.t.scale)
		}
		lo, hi := float64(x.rng.Min)*unit, float64(x.rng.Max)*unit
		d := x.distinct
		if d <= 0 {
			d = float64(x.rng.Max-x.rng.Min) + 1
		}
		switch as.fn {
		case plan.AggSum, plan.AggAvg:
			mu, vr := uniformMoments(lo, hi, d)
			below, atMost := uniformCDF(v, lo, hi, d)
			one := 1 - atMost
			if orEqual {
				one = 1 - below
			}
			avg := as.fn == plan.AggAvg
			above = groupMean(n, func(k float64) float64 {
				if k == 1 {
					return one
				}
				if avg {
					return normalAbove((v - mu) / math.Sqrt(vr/k))
				}
				return normalAbove((v - k*mu) / math.Sqrt(k*vr))
			}, func() float64 {
				if avg {
					return normalAbove((v - mu) / math.Sqrt(vr/n))
				}
				// Many rows a group: the compound sum's own normal,
				// variance n̄σ² + (n̄−1)μ².
				return normalAbove((v - n*mu) / math.Sqrt(n*vr+(n-1)*mu*mu))
			})
		case plan.AggMax:
			// P(max > v) = 1 − E[P(x ≤ v)^N]; ≥ reads P(x < v).
			below, atMost := uniformCDF(v, lo, hi, d)
			f := atMost
			if orEqual {
				f = below
			}
			above = 1 - powerMean(f, n)
		case plan.AggMin:
			// P(min > v) = E[P(x > v)^N]; ≥ reads P(x ≥ v).
			below, atMost := uniformCDF(v, lo, hi, d)
			g := 1 - atMost
			if orEqual {
				g = 1 - below
			}
			above = powerMean(g, n)
		default:
			return 0, false
		}
	}
	if fn == plan.FnLt || fn == plan.FnLe {
		return 1 - above, true
	}
	return above, true
}

// uniformMoments is the mean and variance of a value uniform over d
// points spread evenly over [lo, hi]: (lo+hi)/2 and
// (hi−lo)²·(d+1)/(12(d−1)), which tends to the continuous (hi−lo)²/12 as
// d grows (d ≤ 1: one point, variance 0).
func uniformMoments(lo, hi, d float64) (mean, variance float64) {
	mean = (lo + hi) / 2
	if d <= 1 || hi <= lo {
		return mean, 0
	}
	return mean, (hi - lo) * (hi - lo) * (d + 1) / (12 * (d - 1))
}

// uniformCDF is P(x < v) and P(x ≤ v) for x uniform over d points
// spread evenly over [lo, hi] (d ≤ 1 or lo = hi: the one point lo).
func uniformCDF(v, lo, hi, d float64) (below, atMost float64) {
	if d <= 1 || hi <= lo {
		if v < lo {
			return 0, 0
		}
		if v == lo {
			return 0, 1
		}
		return 1, 1
	}
	step := (hi - lo) / (d - 1)
	// Points lo + i·step, i = 0..d−1; t is v's position among them.
	t := (v - lo) / step
	atMost = math.Min(d, math.Max(0, math.Floor(t)+1)) / d
	below = math.Min(d, math.Max(0, math.Ceil(t))) / d
	return below, atMost
}

// groupMean is E[f(N)] for a group size N = 1 + Poisson(n−1), summed
// over the sizes within 12 standard deviations of the mean (the mass
// beyond is below 1e-30); when that is more than groupTerms sizes, large
// returns the value, the groups being large enough for a normal limit.
func groupMean(n float64, f func(k float64) float64, large func() float64) float64 {
	m := n - 1
	if m <= 0 {
		return f(1)
	}
	spread := 12*math.Sqrt(m) + 12
	if 2*spread > groupTerms {
		return large()
	}
	sum := 0.0
	for j := math.Max(0, math.Floor(m-spread)); j <= m+spread; j++ {
		lg, _ := math.Lgamma(j + 1)
		sum += math.Exp(j*math.Log(m)-m-lg) * f(j+1)
	}
	return sum
}

// powerMean is E[q^N] for a group size N = 1 + Poisson(n−1):
// q·exp(−(n−1)(1−q)).
func powerMean(q, n float64) float64 {
	return q * math.Exp(-(n-1)*(1-q))
}

// normalAbove is 1 − Φ(z), the standard normal's upper tail
// (erfc(z/√2)/2); z = ±Inf gives 0 and 1, NaN (a zero spread at its
// point) one half.
func normalAbove(z float64) float64 {
	if math.IsNaN(z) {
		return 0.5
	}
	return math.Erfc(z/math.Sqrt2) / 2
}

// poissonAtLeast is P(K ≥ k) for K ~ Poisson(m): Σ_{j≥k} e^{−m}m^j/j!,
// summed in logs over the j within 40 standard deviations of m (the
// terms beyond are below double precision); the tail above the mean is
// summed itself, the one below as 1 − Σ_{j<k} (so neither loses a small
// tail to rounding).
func poissonAtLeast(k, m float64) float64 {
	k = math.Ceil(k)
	if k <= 0 {
		return 1
	}
	if m <= 0 {
		return 0
	}
	spread := 40*math.Sqrt(m) + 40
	term := func(j float64) float64 {
		lg, _ := math.Lgamma(j + 1)
		return math.Exp(j*math.Log(m) - m - lg)
	}
	sum := 0.0
	if k > m {
		for j := k; j <= m+spread; j++ {
			sum += term(j)
		}
		return math.Min(1, sum)
	}
	for j := math.Max(0, math.Floor(m-spread)); j < k; j++ {
		sum += term(j)
	}
	return math.Max(0, 1-sum)
}
