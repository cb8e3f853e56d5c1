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
	// multiplied, and an operator must keep a positive share.
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
