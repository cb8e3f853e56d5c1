package querygen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// gen is the state of drawing one query.
type gen struct {
	g     *Generator
	r     *rand.Rand
	refs  []*ref
	feats Features
	// sumLimit bounds the scaled magnitude of a summed expression so that
	// a sum over the largest table fits an int64.
	sumLimit float64
}

// ref is one occurrence of a table in the query (FROM item), rendered
// with or without an alias once the whole query is known (render.go).
type ref struct {
	id int
	t  *table
}

func (q *gen) newRef(t *table) *ref {
	r := &ref{id: len(q.refs) + 1, t: t}
	q.refs = append(q.refs, r)
	return r
}

// colSQL and fromSQL are placeholders resolved by render.
func colSQL(r *ref, c *column) string { return fmt.Sprintf("\x00%d.%s\x00", r.id, c.name) }
func fromSQL(r *ref) string           { return fmt.Sprintf("\x01%d\x01", r.id) }

func (q *gen) chance(p float64) bool { return q.r.Float64() < p }

// pick returns a random element of xs.
func pick[T any](q *gen, xs []T) T { return xs[q.r.IntN(len(xs))] }

type refCol struct {
	r *ref
	c *column
}

// cols lists the columns of scope that ok accepts.
func cols(scope []*ref, ok func(*column) bool) []refCol {
	var out []refCol
	for _, r := range scope {
		for _, c := range r.t.cols {
			if ok(c) {
				out = append(out, refCol{r, c})
			}
		}
	}
	return out
}

// colVal is a bare column reference as a val.
func colVal(r *ref, c *column) val {
	v := val{sql: colSQL(r, c), k: c.k, scale: c.scale, lo: c.lo, hi: c.hi, bounded: c.ranged, samples: c.samples, plain: true}
	if !v.bounded && c.k != kStr && len(c.samples) > 0 {
		// Bounds for literals only: a column without a range never takes
		// part in arithmetic (see numeric).
		v.lo, v.hi = sampleBounds(c.k, c.samples)
	}
	return v
}

func sampleBounds(k kind, samples []string) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range samples {
		var f float64
		var ok bool
		if k == kDate {
			f, ok = days(s)
		} else {
			var err error
			f, err = strconv.ParseFloat(s, 64)
			ok = err == nil
		}
		if ok {
			lo, hi = math.Min(lo, f), math.Max(hi, f)
		}
	}
	if lo > hi {
		return 0, 0
	}
	return lo, hi
}

// filterable accepts columns a predicate can select rows of.
func filterable(c *column) bool { return len(c.samples) > 0 || (c.k != kStr && c.ranged) }

// computable accepts columns arithmetic may use: numbers with known
// bounds that are not keys.
func computable(c *column) bool { return (c.k == kInt || c.k == kDec) && c.ranged && !c.key }

// numLit is a small numeric literal.
func (q *gen) numLit() val {
	if q.chance(0.5) {
		n := float64(q.r.IntN(20) + 1)
		return val{sql: strconv.Itoa(int(n)), k: kInt, lo: n, hi: n, bounded: true, lit: true}
	}
	cents := q.r.IntN(150) + 1
	x := float64(cents) / 100
	return val{sql: strconv.FormatFloat(x, 'f', 2, 64), k: kDec, scale: 2, lo: x, hi: x, bounded: true, lit: true}
}

// numeric draws an integer or decimal expression over scope with bounds
// (arithmetic of computable columns and literals), or false where scope
// has no computable column.
func (q *gen) numeric(scope []*ref, depth int) (val, bool) {
	cands := cols(scope, computable)
	if len(cands) == 0 {
		return val{}, false
	}
	leaf := func() val {
		rc := pick(q, cands)
		return colVal(rc.r, rc.c)
	}
	if depth <= 0 || q.chance(0.35) {
		return leaf(), true
	}
	a, _ := q.numeric(scope, depth-1)
	var b val
	if q.chance(0.4) {
		b = q.numLit()
	} else {
		b, _ = q.numeric(scope, depth-1)
	}
	if q.chance(0.5) {
		a, b = b, a
	}
	op := pick(q, []string{"+", "-", "*"})
	v, ok := arith(a, op, b)
	if !ok || v.maxAbs()*math.Pow10(v.scale) > 1e15 || (v.k == kInt && v.maxAbs() >= math.MaxInt32) {
		return leaf(), true
	}
	q.feats.add(FeatArith)
	return v, true
}

// arith combines a and b by op with interval arithmetic on the bounds.
func arith(a val, op string, b val) (val, bool) {
	if a.lit && b.lit {
		return val{}, false
	}
	v := val{sql: "(" + a.sql + " " + op + " " + b.sql + ")", k: kInt, bounded: true}
	if a.k == kDec || b.k == kDec {
		v.k = kDec
	}
	switch op {
	case "+":
		v.lo, v.hi = a.lo+b.lo, a.hi+b.hi
		v.scale = max(a.scale, b.scale)
	case "-":
		v.lo, v.hi = a.lo-b.hi, a.hi-b.lo
		v.scale = max(a.scale, b.scale)
	case "*":
		p := []float64{a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi}
		v.lo, v.hi = min(p[0], p[1], p[2], p[3]), max(p[0], p[1], p[2], p[3])
		v.scale = a.scale + b.scale
	}
	if v.scale > 4 {
		return val{}, false
	}
	return v, true
}

// computed draws a non-trivial scalar expression: arithmetic, a division,
// extract(year), substring or CASE; false when scope offers none.
func (q *gen) computed(scope []*ref) (val, bool) {
	for range 4 {
		switch q.r.IntN(6) {
		case 0, 1:
			if v, ok := q.numeric(scope, 2); ok && !v.plain {
				return v, true
			}
		case 2:
			if v, ok := q.divide(scope); ok {
				return v, true
			}
		case 3:
			if v, ok := q.year(scope); ok {
				return v, true
			}
		case 4:
			if v, ok := q.substring(scope); ok {
				return v, true
			}
		case 5:
			if v, ok := q.caseExpr(scope); ok {
				return v, true
			}
		}
	}
	return val{}, false
}

// divide is num / den with den's range excluding zero (a float in both
// dialects).
func (q *gen) divide(scope []*ref) (val, bool) {
	num, ok := q.numeric(scope, 1)
	if !ok {
		return val{}, false
	}
	var den val
	for range 4 {
		d, _ := q.numeric(scope, 1)
		if q.chance(0.25) {
			// (1 + x) with x >= 0 is a classic non-zero denominator.
			if x, ok := arith(val{sql: "1", k: kInt, lo: 1, hi: 1, bounded: true, lit: true}, "+", d); ok {
				d = x
			}
		}
		if d.lo >= 0.01 || d.hi <= -0.01 {
			den = d
			break
		}
	}
	if den.sql == "" {
		return val{}, false
	}
	p := []float64{num.lo / den.lo, num.lo / den.hi, num.hi / den.lo, num.hi / den.hi}
	v := val{sql: "(" + num.sql + " / " + den.sql + ")", k: kFloat, bounded: true,
		lo: min(p[0], p[1], p[2], p[3]), hi: max(p[0], p[1], p[2], p[3])}
	if v.maxAbs() > 1e12 {
		return val{}, false
	}
	q.feats.add(FeatDivide)
	return v, true
}

func (q *gen) year(scope []*ref) (val, bool) {
	cands := cols(scope, func(c *column) bool { return c.k == kDate && (c.ranged || len(c.samples) > 0) })
	if len(cands) == 0 {
		return val{}, false
	}
	rc := pick(q, cands)
	c := colVal(rc.r, rc.c)
	v := val{sql: "extract(year from " + c.sql + ")", k: kInt, bounded: true}
	v.lo, v.hi = float64(yearOf(c.lo)), float64(yearOf(c.hi))
	for _, s := range c.samples {
		v.samples = append(v.samples, s[:4])
	}
	q.feats.add(FeatYear)
	return v, true
}

func yearOf(days float64) int { return time.Unix(int64(days)*86400, 0).UTC().Year() }

func (q *gen) substring(scope []*ref) (val, bool) {
	cands := cols(scope, func(c *column) bool { return c.k == kStr && len(c.samples) > 0 })
	if len(cands) == 0 {
		return val{}, false
	}
	rc := pick(q, cands)
	start, n := q.r.IntN(3)+1, q.r.IntN(5)+1
	v := val{sql: fmt.Sprintf("substring(%s, %d, %d)", colSQL(rc.r, rc.c), start, n), k: kStr}
	for _, s := range rc.c.samples {
		v.samples = append(v.samples, substr(s, start, n))
	}
	q.feats.add(FeatSubstring)
	return v, true
}

// substr is SQL's substring on bytes (1-based start).
func substr(s string, start, n int) string {
	if start-1 >= len(s) {
		return ""
	}
	s = s[start-1:]
	if n < len(s) {
		s = s[:n]
	}
	return s
}

// caseExpr is case when p then a else b end with a and b of one type (or
// a decimal and the integer 0, as TPC-H's Q14 writes).
func (q *gen) caseExpr(scope []*ref) (val, bool) {
	cond := q.atom(scope)
	if cond == "" {
		return val{}, false
	}
	var a, b val
	if q.chance(0.7) {
		var ok bool
		if a, ok = q.numeric(scope, 1); !ok {
			return val{}, false
		}
		if q.chance(0.5) {
			b = val{sql: "0", k: kInt, bounded: true, lit: true}
		} else {
			b, _ = q.numeric(scope, 1)
		}
		if q.chance(0.5) {
			a, b = b, a
		}
		if a.lit && b.lit {
			return val{}, false
		}
	} else {
		cands := cols(scope, func(c *column) bool { return c.k == kStr && len(c.samples) > 0 })
		if len(cands) == 0 {
			return val{}, false
		}
		x := pick(q, cands)
		a = colVal(x.r, x.c)
		if q.chance(0.5) {
			y := pick(q, cands)
			b = colVal(y.r, y.c)
		} else {
			s := pick(q, x.c.samples)
			b = val{sql: quote(s), k: kStr, samples: []string{s}, lit: true}
		}
	}
	v := val{sql: "case when " + cond + " then " + a.sql + " else " + b.sql + " end", k: a.k, scale: max(a.scale, b.scale),
		lo: min(a.lo, b.lo), hi: max(a.hi, b.hi), bounded: a.k != kStr}
	if a.k == kDec || b.k == kDec {
		v.k = kDec
	}
	if v.k == kStr {
		v.samples = append(append([]string(nil), a.samples...), b.samples...)
	}
	q.feats.add(FeatCase)
	return v, true
}

// pred draws a boolean condition over scope: an atom or a combination of
// atoms by AND, OR and NOT. Empty when scope has nothing to filter on.
func (q *gen) pred(scope []*ref, depth int) string {
	if depth <= 0 || q.chance(0.55) {
		return q.atom(scope)
	}
	switch q.r.IntN(5) {
	case 0:
		a := q.atom(scope)
		if a == "" {
			return ""
		}
		q.feats.add(FeatNot)
		return "not (" + a + ")"
	case 1, 2:
		a, b := q.pred(scope, depth-1), q.pred(scope, depth-1)
		if a == "" || b == "" {
			return a + b
		}
		q.feats.add(FeatOr)
		return "(" + a + " or " + b + ")"
	default:
		a, b := q.pred(scope, depth-1), q.pred(scope, depth-1)
		if a == "" || b == "" {
			return a + b
		}
		q.feats.add(FeatAnd)
		return "(" + a + " and " + b + ")"
	}
}

var cmpOps = []string{"=", "<>", "<", "<=", ">", ">="}

// atom draws one comparison, BETWEEN, IN list or LIKE over scope.
func (q *gen) atom(scope []*ref) string {
	plain := cols(scope, filterable)
	if len(plain) == 0 {
		return ""
	}
	for range 4 {
		switch q.r.IntN(12) {
		case 0, 1, 2:
			rc := pick(q, plain)
			v := colVal(rc.r, rc.c)
			q.feats.add(FeatCompare)
			return v.sql + " " + pick(q, cmpOps) + " " + q.literal(v)
		case 3:
			rc := pick(q, plain)
			v := colVal(rc.r, rc.c)
			lo, hi := q.sortedPair(v)
			q.feats.add(FeatBetween)
			return v.sql + " between " + lo + " and " + hi
		case 4:
			rc := pick(q, plain)
			v := colVal(rc.r, rc.c)
			n := q.r.IntN(4) + 1
			lits := make([]string, n)
			for i := range lits {
				lits[i] = q.literal(v)
			}
			q.feats.add(FeatInList)
			op := " in ("
			if q.chance(0.25) {
				op = " not in ("
			}
			return v.sql + op + strings.Join(lits, ", ") + ")"
		case 5, 6:
			if s := q.like(scope); s != "" {
				return s
			}
		case 7:
			if s := q.columnCompare(scope); s != "" {
				return s
			}
		case 8, 9, 10, 11:
			v, ok := q.computed(scope)
			if !ok || (v.k != kStr && !v.bounded) {
				continue
			}
			if v.k == kStr && len(v.samples) == 0 {
				continue
			}
			op := pick(q, cmpOps)
			if v.k == kFloat {
				// Floats are rounded differently by the two engines: no
				// equality on them.
				op = pick(q, []string{"<", ">"})
			}
			q.feats.add(FeatCompare)
			return v.sql + " " + op + " " + q.literal(v)
		}
	}
	rc := pick(q, plain)
	v := colVal(rc.r, rc.c)
	q.feats.add(FeatCompare)
	return v.sql + " " + pick(q, cmpOps) + " " + q.literal(v)
}

// like draws a LIKE or NOT LIKE with a prefix or infix of a sampled value
// (patterns never hold % or _ of their own).
func (q *gen) like(scope []*ref) string {
	cands := cols(scope, func(c *column) bool { return c.k == kStr && len(c.samples) > 0 })
	if len(cands) == 0 {
		return ""
	}
	rc := pick(q, cands)
	s := pick(q, rc.c.samples)
	s = strings.Map(func(r rune) rune {
		if r == '%' || r == '_' {
			return -1
		}
		return r
	}, s)
	if len(s) < 2 {
		return ""
	}
	var pat string
	if q.chance(0.5) {
		pat = s[:1+q.r.IntN(min(len(s), 6))] + "%"
		q.feats.add(FeatLikePrefix)
	} else {
		i := q.r.IntN(len(s) - 1)
		n := 1 + q.r.IntN(min(len(s)-i, 5))
		pat = "%" + s[i:i+n] + "%"
		if q.chance(0.3) {
			// Two fragments in order, as TPC-H's '%special%requests%'.
			j := q.r.IntN(len(s))
			if j > i+n {
				pat = "%" + s[i:i+n] + "%" + s[j:min(len(s), j+3)] + "%"
			}
		}
		q.feats.add(FeatLikeInfix)
	}
	op := " like "
	if q.chance(0.25) {
		op = " not like "
		q.feats.add(FeatNotLike)
	}
	return colSQL(rc.r, rc.c) + op + quote(pat)
}

// columnCompare compares two columns of one type (dates with dates,
// numbers with numbers).
func (q *gen) columnCompare(scope []*ref) string {
	cands := cols(scope, func(c *column) bool { return c.k == kDate || (c.k != kStr && !c.key && c.ranged) })
	if len(cands) < 2 {
		return ""
	}
	a := pick(q, cands)
	for range 6 {
		b := pick(q, cands)
		if b == a || (a.c.k == kDate) != (b.c.k == kDate) {
			continue
		}
		q.feats.add(FeatColumnCompare)
		return colSQL(a.r, a.c) + " " + pick(q, cmpOps) + " " + colSQL(b.r, b.c)
	}
	return ""
}
