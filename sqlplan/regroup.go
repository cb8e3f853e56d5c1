package sqlplan

import (
	"slices"

	"gostachio/plan"
)

// An uncorrelated scalar subquery in HAVING that aggregates, with no
// grouping, exactly the rows the enclosing block groups (TPC-H's Q11:
// the same base tables, the same conditions on them, nothing else) is
// computed from the enclosing block's groups rather than from its
// tables again. The groups partition those rows (every row has exactly
// one value of the group keys: there are no NULLs), so the sum of an
// expression over all rows is the sum over the groups of its per-group
// sums, a count the sum of the per-group counts, a minimum or maximum
// the minimum or maximum of the per-group ones. The enclosing block's
// aggregated output, taken before HAVING filters it, is materialized
// once and read twice: once re-aggregated with no keys into the
// subquery's row, once cross-joined with that row and filtered. With no
// groups at all the subquery's value differs (a sum over no rows is
// NULL, here over no groups too) but nothing is joined with it, so the
// result, empty, is the same.

// scalarFromGroups returns the subquery r's stream computed from the
// aggregated s (and moves s onto the materialized output), or false
// where the rules above do not hold (s untouched).
func (l *lowering) scalarFromGroups(s *stream, r *rel) (*stream, bool) {
	p, blk, sb := l.p, l.blk, r.sub
	if sb == nil || !sb.grouped || len(sb.keys) > 0 || len(sb.having) > 0 || len(sb.havingRels) > 0 ||
		len(sb.leftJoins) > 0 || len(sb.countDistincts) > 0 || sb.magic != nil || sb.input != nil ||
		sb.distinct || sb.limit >= 0 || len(sb.order) > 0 {
		return nil, false
	}
	if !blk.grouped || blk.magic != nil || blk.input != nil || len(blk.leftJoins) > 0 ||
		len(blk.countDistincts) > 0 || len(blk.rels) != len(sb.rels) {
		return nil, false
	}
	names, ok := sameRows(blk, sb)
	if !ok {
		return nil, false
	}
	// Each of the subquery's aggregates re-aggregates one of the block's.
	var re []plan.Agg
	var from []string
	for _, a := range sb.aggs {
		fn := a.Fn
		switch a.Fn {
		case plan.AggSum, plan.AggMin, plan.AggMax:
		case plan.AggCount:
			fn = plan.AggSum
		default:
			return nil, false
		}
		want := ""
		if a.Arg != nil {
			x, ok := renameExpr(a.Arg, names)
			if !ok {
				return nil, false
			}
			want = x.String()
		}
		i := slices.IndexFunc(blk.aggs, func(o plan.Agg) bool {
			return o.Fn == a.Fn && (o.Arg == nil) == (a.Arg == nil) && (o.Arg == nil || o.Arg.String() == want)
		})
		if i < 0 || !slices.Contains(s.cols, blk.aggs[i].As) {
			return nil, false
		}
		re = append(re, plan.Agg{Fn: fn, Arg: plan.Col(blk.aggs[i].As), As: a.As})
		if !slices.Contains(from, blk.aggs[i].As) {
			from = append(from, blk.aggs[i].As)
		}
	}
	index, rest, ok := s.p.Share()
	if !ok {
		return nil, false
	}
	t := *s
	t.cols, t.keys, t.rels = slices.Clone(s.cols), slices.Clone(s.keys), map[*rel]bool{}
	s.p = p.b.From(index).Named("groups").Apply(rest...)
	t.p = p.b.From(index).Named("groups re-aggregated").Apply(rest...)
	ts := p.keep(&t, from)
	ts = p.groupBy(ts, nil, re)
	var outs []plan.Named
	for _, o := range sb.outs {
		if !slices.ContainsFunc(outs, func(n plan.Named) bool { return n.Name == o.name }) {
			outs = append(outs, plan.As(o.name, o.e.e))
		}
	}
	return p.project(ts, outs), true
}

// sameRows reports whether blocks a and b join the same rows: the same
// base tables, inner, matched one to one so that their conditions are
// the same (equalities read either way round). names maps each of b's
// relation columns to its match's in a.
func sameRows(a, b *block) (map[string]string, bool) {
	for _, rs := range [][]*rel{a.rels, b.rels} {
		for _, r := range rs {
			if r.kind != relInner || r.table == nil {
				return nil, false
			}
		}
	}
	want, ok := condSet(a.conds, nil)
	if !ok {
		return nil, false
	}
	// Try every matching of b's relations with a's of the same table, a
	// bounded number of them.
	match := make([]*rel, len(b.rels))
	used := map[*rel]bool{}
	tries := 0
	var names map[string]string
	var try func(i int) bool
	try = func(i int) bool {
		if tries++; tries > 5000 {
			return false
		}
		if i == len(b.rels) {
			names = map[string]string{}
			for j, r := range b.rels {
				for k, c := range r.cols {
					names[c.name] = match[j].cols[k].name
				}
			}
			got, ok := condSet(b.conds, names)
			return ok && got == want
		}
		for _, o := range a.rels {
			if used[o] || o.table.Name != b.rels[i].table.Name || len(o.cols) != len(b.rels[i].cols) {
				continue
			}
			used[o], match[i] = true, o
			if try(i + 1) {
				return true
			}
			used[o] = false
		}
		return false
	}
	if !try(0) {
		return nil, false
	}
	return names, true
}

// condSet renders the conjuncts of conds, their columns renamed by names
// (kept where names is nil), an equality of two columns with its sides
// ordered, as one sorted set.
func condSet(conds []bexpr, names map[string]string) (string, bool) {
	var xs []string
	for _, c := range conds {
		for _, x := range splitAnd(c.e) {
			if names != nil {
				y, ok := renameExpr(x, names)
				if !ok {
					return "", false
				}
				x = y
			}
			if call, ok := x.(plan.Call); ok && call.Fn == plan.FnEq && len(call.Args) == 2 {
				u, uok := call.Args[0].(plan.Col)
				v, vok := call.Args[1].(plan.Col)
				if uok && vok && v < u {
					x = plan.Eq(v, u)
				}
			}
			xs = append(xs, x.String())
		}
	}
	return sortedSet(xs), true
}
