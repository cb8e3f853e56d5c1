package sqlplan

import (
	"slices"

	"gostachio/plan"
)

// A grouping block that keeps only the keys an IN (subquery) finds, where
// the subquery groups one table T on one of its columns k with a HAVING
// (TPC-H's Q18: orders whose lines sum above 300), and that itself joins
// T only through k's equalities with other relations' columns, one of
// them the IN's (or through k being the IN's column), reads T once: the
// subquery's groups, extended with the block's aggregates over T per k,
// stand for both T and the IN. Required besides: T's conditions of their
// own in the block are the subquery's WHERE (so a key's rows are the same
// in both), T's columns appear elsewhere only inside sum, count, min or
// max over T's columns alone, the other aggregates are min or max (or
// count), and the block has group keys. Why this is exact (no NULLs):
//   - the block's joined rows for a key k are its rows without T (the
//     rest) whose columns equal k, each times T's n_k rows with k, n_k
//     at least 1 for every key the subquery keeps (the same rows, the
//     same conditions) and where the rest matches k in both;
//   - the HAVING keeps exactly the keys the IN keeps, so the rest rows
//     kept are the same, each joined with the one group of its key;
//   - so each group's sum over T's column is the sum, over its rest rows,
//     of their key's per-key sum, its count the sum of per-key counts
//     (count(x) is count(*): nothing is null), and a minimum or maximum
//     the minimum or maximum of per-key ones, or of rest columns, which
//     repeating rows does not change. Nothing assumes a key unique in
//     the rest; with no group keys an empty input would differ (count
//     0, a sum of counts NULL), hence the group keys.

// oneScan applies the rewrite to blk's IN relations where it holds.
func (p *planner) oneScan(blk *block) {
	if !blk.grouped || len(blk.keys) == 0 || len(blk.countDistincts) > 0 || len(blk.leftJoins) > 0 ||
		blk.magic != nil || blk.input != nil {
		return
	}
	for i := 0; i < len(blk.rels); i++ {
		if s := blk.rels[i]; s.kind == relSemi && p.oneScanSemi(blk, s) {
			i = -1
		}
	}
}

// oneScanSemi rewrites blk's semi relation s with a relation T of blk,
// or returns false (blk untouched).
func (p *planner) oneScanSemi(blk *block, s *rel) bool {
	sb := s.sub
	if sb == nil || len(s.outerKeys) != 1 || len(s.buildKeys) != 1 || len(s.out) != 1 || s.buildKeys[0] != s.out[0].name {
		return false
	}
	if !sb.grouped || len(sb.keys) != 1 || len(sb.rels) != 1 || len(sb.havingRels) > 0 || len(sb.leftJoins) > 0 ||
		len(sb.countDistincts) > 0 || sb.magic != nil || sb.input != nil || sb.distinct || sb.limit >= 0 ||
		len(sb.order) > 0 || len(sb.outs) != 1 {
		return false
	}
	u := sb.rels[0]
	if u.kind != relInner || u.table == nil {
		return false
	}
	ku, ok := sb.keys[0].E.(plan.Col)
	if !ok || p.cols[string(ku)] == nil || p.cols[string(ku)].rel != u {
		return false
	}
	if o, ok := sb.outs[0].e.e.(plan.Col); !ok || string(o) != sb.keys[0].Name {
		return false
	}
	for _, t := range blk.rels {
		if t.kind != relInner || t.table == nil || t.table.Name != u.table.Name || len(t.cols) != len(u.cols) {
			continue
		}
		if p.oneScanWith(blk, s, t, string(ku)) {
			return true
		}
	}
	return false
}

// oneScanWith rewrites s with T = t where the rules hold (ku: the
// subquery's key column).
func (p *planner) oneScanWith(blk *block, s, t *rel, ku string) bool {
	sb, u := s.sub, s.sub.rels[0]
	names := map[string]string{} // the subquery's columns -> t's
	back := map[string]string{}  // t's -> the subquery's
	own := map[string]bool{}
	kt := ""
	for i, c := range u.cols {
		names[c.name], back[t.cols[i].name] = t.cols[i].name, c.name
		own[t.cols[i].name] = true
		if c.name == ku {
			kt = t.cols[i].name
		}
	}
	refsT := func(e plan.Expr) (some, all bool) {
		cs := colsOf(e, nil)
		n := 0
		for _, c := range cs {
			if own[c] {
				n++
			}
		}
		return n > 0, n == len(cs)
	}
	// The block's conditions: t's own, and k's equalities with others.
	var local []bexpr
	linked := s.outerKeys[0] == kt
	edges := 0
	for _, c := range blk.conds {
		for _, x := range splitAnd(c.e) {
			some, all := refsT(x)
			switch {
			case !some:
			case all:
				local = append(local, bexpr{e: x})
			default:
				o, ok := otherSide(x, kt)
				if !ok || own[o] {
					return false
				}
				edges++
				linked = linked || o == s.outerKeys[0]
			}
		}
	}
	if !linked {
		return false
	}
	inner := 0
	for _, r := range blk.rels {
		if r.kind == relInner {
			inner++
		}
		if r == s || r == t {
			continue
		}
		for _, k := range r.outerKeys {
			if own[k] {
				return false
			}
		}
	}
	if edges == 0 && inner > 1 {
		return false
	}
	want, ok := condSet(sb.conds, names)
	if !ok {
		return false
	}
	if got, ok := condSet(local, nil); !ok || got != want {
		return false
	}
	for _, k := range blk.keys {
		if some, _ := refsT(k.E); some {
			return false
		}
	}
	for _, o := range blk.outs {
		if some, _ := refsT(o.e.e); some {
			return false
		}
	}
	for _, h := range blk.having {
		if some, _ := refsT(h.e); some {
			return false
		}
	}
	// Each aggregate: per key over the subquery's rows, then merged.
	type merge struct {
		i    int
		fn   plan.AggFn
		part plan.Agg
	}
	var ms []merge
	for i, a := range blk.aggs {
		some, all := false, false
		if a.Arg != nil {
			some, all = refsT(a.Arg)
		}
		switch {
		case a.Fn == plan.AggCount:
			ms = append(ms, merge{i, plan.AggSum, plan.Agg{Fn: plan.AggCount}})
		case (a.Fn == plan.AggMin || a.Fn == plan.AggMax) && !some:
		case !all || (a.Fn != plan.AggSum && a.Fn != plan.AggMin && a.Fn != plan.AggMax):
			return false
		default:
			x, ok := renameExpr(a.Arg, back)
			if !ok {
				return false
			}
			ms = append(ms, merge{i, a.Fn, plan.Agg{Fn: a.Fn, Arg: x}})
		}
	}
	if len(ms) == 0 {
		return false
	}
	// The rewrite: the subquery's groups with the partial aggregates.
	nb := *sb
	nb.aggs = slices.Clone(sb.aggs)
	nb.outs = slices.Clone(sb.outs)
	var parts []string
	for _, m := range ms {
		i := slices.IndexFunc(nb.aggs, func(o plan.Agg) bool {
			return o.Fn == m.part.Fn && (o.Arg == nil) == (m.part.Arg == nil) && (o.Arg == nil || o.Arg.String() == m.part.Arg.String())
		})
		if i < 0 {
			ty := typ{k: kInt}
			if m.part.Fn != plan.AggCount {
				ty = p.cols[blk.aggs[m.i].As].t
			}
			c := p.addColumn(m.part.Fn.String(), ty, nil)
			c.agg = &aggStat{fn: m.part.Fn}
			if ac, ok := m.part.Arg.(plan.Col); ok {
				c.agg.arg = string(ac)
			}
			m.part.As = c.name
			nb.aggs = append(nb.aggs, m.part)
			i = len(nb.aggs) - 1
		}
		as := nb.aggs[i].As
		j := slices.IndexFunc(nb.outs, func(o output) bool { return o.name == as })
		if j < 0 {
			nb.outs = append(nb.outs, output{sql: as, name: as, e: bexpr{e: plan.Col(as), t: p.cols[as].t}})
			j = len(nb.outs) - 1
		}
		parts = append(parts, nb.outs[j].name)
	}
	d := p.derivedRel(&nb, relInner, s.pos, "in")
	byName := map[string]string{}
	for j, o := range nb.outs {
		byName[o.name] = d.out[j].name
	}
	dk := d.out[0].name
	aggs := slices.Clone(blk.aggs)
	for j, m := range ms {
		aggs[m.i] = plan.Agg{Fn: m.fn, Arg: plan.Col(byName[parts[j]]), As: blk.aggs[m.i].As}
	}
	var conds []bexpr
	for _, c := range blk.conds {
		var keep []plan.Expr
		for _, x := range splitAnd(c.e) {
			some, all := refsT(x)
			switch {
			case !some:
				keep = append(keep, x)
			case !all:
				o, _ := otherSide(x, kt)
				keep = append(keep, plan.Eq(plan.Col(dk), plan.Col(o)))
			}
		}
		if len(keep) > 0 {
			conds = append(conds, bexpr{e: and(keep), t: c.t, pos: c.pos})
		}
	}
	var rels []*rel
	for _, r := range blk.rels {
		switch r {
		case t:
			rels = append(rels, d)
		case s:
		default:
			rels = append(rels, r)
		}
	}
	blk.rels, blk.conds, blk.aggs = rels, conds, aggs
	return true
}

// otherSide returns o where x is the equality of column k with column o
// (either way round).
func otherSide(x plan.Expr, k string) (string, bool) {
	call, ok := x.(plan.Call)
	if !ok || call.Fn != plan.FnEq || len(call.Args) != 2 {
		return "", false
	}
	a, aok := call.Args[0].(plan.Col)
	b, bok := call.Args[1].(plan.Col)
	switch {
	case aok && bok && string(a) == k && string(b) != k:
		return string(b), true
	case aok && bok && string(b) == k && string(a) != k:
		return string(a), true
	}
	return "", false
}
