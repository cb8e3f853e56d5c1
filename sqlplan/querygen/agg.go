package querygen

import (
	"math"
	"strconv"
)

// aggregate draws one aggregate over scope and describes its result (for
// HAVING literals and ORDER BY). group is false for a scalar aggregate.
func (q *gen) aggregate(scope []*ref) (string, val) {
	for range 4 {
		switch q.r.IntN(8) {
		case 0:
			q.feats.add(FeatCountStar)
			return "count(*)", val{k: kInt, lo: 1, hi: 20, bounded: true}
		case 1:
			rc := pick(q, cols(scope, func(*column) bool { return true }))
			q.feats.add(FeatCount)
			return "count(" + colSQL(rc.r, rc.c) + ")", val{k: kInt, lo: 1, hi: 20, bounded: true}
		case 2:
			rc := pick(q, cols(scope, func(*column) bool { return true }))
			q.feats.add(FeatCountDistinct)
			return "count(distinct " + colSQL(rc.r, rc.c) + ")", val{k: kInt, lo: 1, hi: 10, bounded: true}
		case 3, 4:
			v, ok := q.summable(scope)
			if !ok {
				continue
			}
			q.feats.add(FeatSum)
			r := v
			r.sql, r.samples, r.plain = "", nil, false
			r.hi = math.Max(r.hi*10, r.hi)
			return "sum(" + v.sql + ")", r
		case 5:
			v, ok := q.summable(scope)
			if !ok {
				continue
			}
			q.feats.add(FeatAvg)
			return "avg(" + v.sql + ")", val{k: kFloat, lo: v.lo, hi: v.hi, bounded: true}
		case 6, 7:
			var v val
			switch {
			case q.chance(0.5):
				c := pick(q, cols(scope, filterable))
				v = colVal(c.r, c.c)
			default:
				var ok bool
				if v, ok = q.computed(scope); !ok {
					continue
				}
			}
			if v.k != kStr && !v.bounded && len(v.samples) == 0 {
				continue
			}
			fn, f := "min", FeatMin
			if q.chance(0.5) {
				fn, f = "max", FeatMax
			}
			q.feats.add(f)
			r := v
			r.sql, r.plain = "", false
			return fn + "(" + v.sql + ")", r
		}
	}
	q.feats.add(FeatCountStar)
	return "count(*)", val{k: kInt, lo: 1, hi: 20, bounded: true}
}

// summable draws a numeric expression whose sum over the largest table
// cannot overflow a scaled int64.
func (q *gen) summable(scope []*ref) (val, bool) {
	for range 3 {
		var v val
		var ok bool
		if q.chance(0.2) {
			v, ok = q.divide(scope)
		} else {
			v, ok = q.numeric(scope, 2)
		}
		if !ok {
			return val{}, false
		}
		if v.k == kFloat || v.maxAbs()*math.Pow10(v.scale) <= q.sumLimit {
			return v, true
		}
	}
	return val{}, false
}

// having draws a HAVING condition: an aggregate compared with a literal
// its values reach.
func (q *gen) having(scope []*ref) string {
	a, v := q.aggregate(scope)
	op := pick(q, cmpOps)
	if v.k == kFloat {
		op = pick(q, []string{"<", ">"})
	}
	var lit string
	if v.k == kInt && !v.plain && len(v.samples) == 0 {
		lit = strconv.Itoa(int(v.lo) + q.r.IntN(int(max(v.hi-v.lo, 1))))
	} else {
		lit = q.literal(v)
	}
	q.feats.add(FeatHaving)
	return a + " " + op + " " + lit
}
