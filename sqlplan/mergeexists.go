package sqlplan

import (
	"math"

	"gostachio/plan"
)

// An EXISTS and a NOT EXISTS over the same table and correlation key,
// each with one more correlation x <op> v (attachCorrelated: per-key
// min(x), max(x), count(*)), where the NOT EXISTS's conditions are the
// EXISTS's and more (TPC-H's Q21: all lines of the order, and its late
// lines), aggregate that table once. The EXISTS's groups are aggregated
// as before and, over the same rows, the NOT EXISTS's statistics with
// its extra conditions inside: min(case when extra then x else the
// largest int64 end), max(case when extra then x else the smallest end),
// sum(case when extra then 1 else 0 end). Why this is exact:
//   - the NOT EXISTS's rows are exactly the EXISTS's rows meeting extra,
//     so a key's count is its count of those rows, and where it is not 0
//     its min and max are those rows' (x is an integer, so the sentinels
//     never win over a value);
//   - a key with NOT EXISTS rows has EXISTS rows, so every key the NOT
//     EXISTS's left outer join found is among the EXISTS's groups; a key
//     without NOT EXISTS rows has count 0 there, as the zero fill had;
//   - the NOT EXISTS's test is count = 0 or the negated comparison: where
//     the count is 0 the sentinels are never read; an enclosing row whose
//     key has no EXISTS group is dropped by the EXISTS's inner join, with
//     or without the NOT EXISTS's answer.

// mergeExists merges such pairs among blk's relations.
func (p *planner) mergeExists(blk *block) {
	for {
		merged := false
		for _, e := range blk.rels {
			for _, n := range blk.rels {
				if p.mergeExistsPair(blk, e, n) {
					merged = true
					break
				}
			}
			if merged {
				break
			}
		}
		if !merged {
			return
		}
	}
}

// minMaxCount reports whether r is a relation attachCorrelated made: one
// base relation, inner, grouped on nk keys into min(x), max(x), count(*),
// and returns that base relation.
func minMaxCount(r *rel) (*rel, int, bool) {
	sb := r.sub
	if sb == nil || !sb.grouped || len(sb.rels) != 1 || sb.rels[0].kind != relInner || sb.rels[0].table == nil ||
		len(sb.havingRels) > 0 || len(sb.leftJoins) > 0 || len(sb.countDistincts) > 0 || len(sb.having) > 0 ||
		sb.magic != nil || sb.input != nil || sb.distinct || sb.limit >= 0 || len(sb.order) > 0 {
		return nil, 0, false
	}
	nk := len(sb.keys)
	a := sb.aggs
	if nk == 0 || len(a) != 3 || a[0].Fn != plan.AggMin || a[1].Fn != plan.AggMax || a[2].Fn != plan.AggCount ||
		a[0].Arg == nil || a[1].Arg == nil || a[0].Arg.String() != a[1].Arg.String() ||
		len(sb.outs) != nk+3 || len(r.out) != nk+3 {
		return nil, 0, false
	}
	for i, o := range sb.outs {
		want := ""
		if i < nk {
			want = sb.keys[i].Name
		} else {
			want = a[i-nk].As
		}
		if c, ok := o.e.e.(plan.Col); !ok || string(c) != want {
			return nil, 0, false
		}
	}
	return sb.rels[0], nk, true
}

// mergeExistsPair merges n (a NOT EXISTS) into e (an EXISTS) where the
// rules above allow.
func (p *planner) mergeExistsPair(blk *block, e, n *rel) bool {
	if e == n || e.kind != relInner || n.kind != relLeftOuter {
		return false
	}
	eb, nk, ok := minMaxCount(e)
	if !ok {
		return false
	}
	nb, nk2, ok := minMaxCount(n)
	if !ok || nk2 != nk || eb.table.Name != nb.table.Name || len(eb.cols) != len(nb.cols) {
		return false
	}
	x := p.cols[colName(n.sub.aggs[0].Arg)]
	if x == nil || !x.t.integer() {
		return false
	}
	// n's columns by e's.
	names := map[string]string{}
	for i, c := range nb.cols {
		names[c.name] = eb.cols[i].name
	}
	// The same keys: n joins its i-th key output to outer column k, and a
	// condition of blk joins e's i-th key output to k.
	if len(n.outerKeys) != nk || len(n.buildKeys) != nk || len(n.carry) != 3 {
		return false
	}
	for i := 0; i < nk; i++ {
		ek, ok1 := e.sub.keys[i].E.(plan.Col)
		nkc, ok2 := n.sub.keys[i].E.(plan.Col)
		if !ok1 || !ok2 || names[string(nkc)] != string(ek) || n.buildKeys[i] != n.out[i].name {
			return false
		}
		eq := plan.Eq(plan.Col(n.outerKeys[i]), plan.Col(e.out[i].name)).String()
		found := false
		for _, c := range blk.conds {
			found = found || c.e.String() == eq
		}
		if !found {
			return false
		}
	}
	// n's conditions are e's and more.
	have := map[string]bool{}
	for _, c := range e.sub.conds {
		for _, y := range splitAnd(c.e) {
			have[y.String()] = true
		}
	}
	var extra []plan.Expr
	for _, c := range n.sub.conds {
		for _, y := range splitAnd(c.e) {
			z, ok := renameExpr(y, names)
			if !ok {
				return false
			}
			if have[z.String()] {
				delete(have, z.String())
				continue
			}
			extra = append(extra, z)
		}
	}
	if len(have) > 0 || len(extra) == 0 {
		return false
	}
	// n's outputs are read only by count = 0 or ... conditions.
	cnt := n.out[nk+2].name
	zero := plan.Eq(plan.Col(cnt), plan.Int(0)).String()
	for _, c := range blk.conds {
		refs := false
		for _, o := range n.out {
			refs = refs || p.refsCol(c.e, o.name)
		}
		if !refs {
			continue
		}
		or, ok := c.e.(plan.Call)
		if !ok || or.Fn != plan.FnOr || len(or.Args) != 2 || or.Args[0].String() != zero {
			return false
		}
	}
	for _, k := range blk.keys {
		for _, o := range n.out {
			if p.refsCol(k.E, o.name) {
				return false
			}
		}
	}
	xn, ok := renameExpr(n.sub.aggs[0].Arg, names)
	if !ok {
		return false
	}
	// Merge: n's statistics computed in e's aggregation, n's outputs
	// carried by e.
	cond := and(extra)
	na := n.sub.aggs
	e.sub.aggs = append(e.sub.aggs,
		plan.Min(na[0].As, plan.Case(cond, xn, plan.Int(math.MaxInt64))),
		plan.Max(na[1].As, plan.Case(cond, xn, plan.Int(math.MinInt64))),
		plan.Sum(na[2].As, plan.Case(cond, plan.Int(1), plan.Int(0))))
	wide := typ{k: kInt}
	for i, o := range n.sub.outs[nk:] {
		p.cols[na[i].As].t = wide
		o.e.t = wide
		e.sub.outs = append(e.sub.outs, o)
		c := n.out[nk+i]
		c.rel, c.t = e, wide
		e.out = append(e.out, c)
	}
	for i, r := range blk.rels {
		if r == n {
			blk.rels = append(blk.rels[:i], blk.rels[i+1:]...)
			break
		}
	}
	return true
}

// colName is e's column name ("" if e is not a column).
func colName(e plan.Expr) string {
	c, _ := e.(plan.Col)
	return string(c)
}

// refsCol reports whether e reads column c.
func (p *planner) refsCol(e plan.Expr, c string) bool {
	for _, x := range colsOf(e, nil) {
		if x == c {
			return true
		}
	}
	return false
}
