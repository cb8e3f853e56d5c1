package sqlplan

import (
	"math"
	"slices"

	"gostachio/plan"
)

// eagerPlan splits a grouped block's inner relations for aggregating
// before a join: fact holds every relation the aggregates read, dim
// every relation the group keys read; the fact side is aggregated on its
// columns joining dim, then joined to dim, and a second aggregation on
// the block's keys merges the first one's results (aggs).
type eagerPlan struct {
	fact, dim []*rel
	// pre are the first aggregation's aggregates; aggs the block's own,
	// rewritten to merge pre's columns under the block's names.
	pre, aggs []plan.Agg
}

// eagerSplit decides whether the grouped block aggregates its fact side
// before joining it to the relations its group keys read (eager
// aggregation). It applies when the aggregates read only relations that
// no group key reads and merge exactly from partial results (sum of
// integers or decimals, count, min, max), each side is connected by
// its own equalities and carries its own conditions, and the dimension
// side keeps about every fact row (eagerKeep: a filtering dimension is
// better joined first). It pays when the dimension's key columns are
// wide: the join and the final aggregation then carry them for the
// fact side's groups rather than its rows.
func (l *lowering) eagerSplit(inner []*rel) *eagerPlan {
	p, blk := l.p, l.blk
	if !blk.grouped || len(blk.keys) == 0 || len(blk.countDistincts) > 0 || blk.magic != nil || len(inner) < 2 || len(inner) != len(blk.rels) {
		return nil
	}
	dim0 := map[*rel]bool{}
	var keyCols []string
	for _, k := range blk.keys {
		keyCols = colsOf(k.E, keyCols)
		for r := range p.relsOf(k.E) {
			dim0[r] = true
		}
	}
	if len(dim0) == 0 {
		return nil
	}
	agg0 := map[*rel]bool{}
	for _, a := range blk.aggs {
		switch a.Fn {
		case plan.AggSum:
			if c := p.cols[a.As]; c == nil || !(c.t.integer() || c.t.k == kDecimal) {
				return nil
			}
		case plan.AggCount, plan.AggMin, plan.AggMax:
		default:
			return nil
		}
		if a.Arg != nil {
			for r := range p.relsOf(a.Arg) {
				if dim0[r] {
					return nil
				}
				agg0[r] = true
			}
		}
	}
	var rest []*rel
	for _, r := range inner {
		if !dim0[r] {
			rest = append(rest, r)
		}
	}
	var fact []*rel
	for _, comp := range l.components(rest) {
		if len(agg0) == 0 || slices.ContainsFunc(comp, func(r *rel) bool { return agg0[r] }) {
			if fact != nil {
				return nil
			}
			fact = comp
		}
	}
	if fact == nil {
		return nil
	}
	factSet := setOf(fact)
	var dim []*rel
	for _, r := range inner {
		if !factSet[r] {
			dim = append(dim, r)
		}
	}
	if len(l.components(dim)) != 1 {
		return nil
	}
	dimSet := setOf(dim)
	for _, c := range l.conds {
		rs := p.relsOf(c)
		inF, inD := true, true
		for r := range rs {
			inF, inD = inF && factSet[r], inD && dimSet[r]
		}
		if !inF && !inD {
			return nil
		}
	}
	fk, _ := l.keysBetween(factSet, dimSet, nil, nil)
	if len(fk) == 0 {
		return nil
	}
	// Estimates: the fact side's rows, the block's, and the fact side's
	// groups on its join keys (each key's values among its relation's
	// rows, then among the fact rows).
	factRows, allRows := l.joinRows(fact), l.joinRows(inner)
	if allRows < eagerKeep*factRows {
		return nil
	}
	groups := 1.0
	for _, k := range fk {
		d := p.distinctIn(k, math.Inf(1))
		d = drawnDistinct(d, l.rows[p.cols[k].rel])
		groups *= drawnDistinct(d, factRows)
	}
	groups = math.Min(groups, factRows)
	if len(fact) == 1 && groupedWithin(fact[0], fk) {
		// Already one row per key: nothing to aggregate.
		groups = factRows
	}
	var dimCols []string
	for _, c := range keyCols {
		if dimSet[p.cols[c].rel] {
			dimCols = append(dimCols, c)
		}
	}
	wide := float64(p.rowsWidth(dimCols))
	narrow := float64(p.rowsWidth(fk) + 8*len(blk.aggs))
	if groups*wide+factRows*narrow >= allRows*wide {
		return nil
	}
	e := &eagerPlan{fact: fact, dim: dim}
	for _, a := range blk.aggs {
		c := p.addColumn("eager_"+a.Fn.String(), p.cols[a.As].t, nil)
		e.pre = append(e.pre, plan.Agg{Fn: a.Fn, Arg: a.Arg, As: c.name})
		fn := a.Fn
		if fn == plan.AggCount {
			fn = plan.AggSum
		}
		e.aggs = append(e.aggs, plan.Agg{Fn: fn, Arg: plan.Col(c.name), As: a.As})
	}
	return e
}

// drawnDistinct is the expected distinct values among rows drawn evenly
// from d values: d·(1 − e^(−rows/d)).
func drawnDistinct(d, rows float64) float64 {
	d = math.Max(1, d)
	return math.Max(1, d*(1-math.Exp(-rows/d)))
}

// components splits rs into the sets its equalities connect.
func (l *lowering) components(rs []*rel) [][]*rel {
	comp := map[*rel]int{}
	var out [][]*rel
	for _, r := range rs {
		if _, ok := comp[r]; ok {
			continue
		}
		comp[r] = len(out)
		cur := []*rel{r}
		for i := 0; i < len(cur); i++ {
			for _, x := range rs {
				if _, ok := comp[x]; ok {
					continue
				}
				if a, _ := l.keysBetween(map[*rel]bool{cur[i]: true}, map[*rel]bool{x: true}, nil, nil); len(a) > 0 {
					comp[x] = len(out)
					cur = append(cur, x)
				}
			}
		}
		out = append(out, cur)
	}
	return out
}

// eagerJoin joins the block's relations under e: the fact side joined
// and aggregated on its keys to the dimension side, then joined with it,
// the larger side probing. The block's aggregation then merges e.aggs.
func (l *lowering) eagerJoin(e *eagerPlan) (*stream, error) {
	p := l.p
	f, err := l.joinSet(e.fact)
	if err != nil {
		return nil, err
	}
	dimSet := setOf(e.dim)
	fk, _ := l.keysBetween(f.rels, dimSet, f.cols, nil)
	var args []string
	for _, a := range e.pre {
		if a.Arg != nil {
			args = colsOf(a.Arg, args)
		}
	}
	f = p.keep(f, f.colsIn(append(slices.Clone(fk), args...)))
	f = p.groupBy(f, fk, e.pre)
	d, err := l.joinSet(e.dim)
	if err != nil {
		return nil, err
	}
	var pre []string
	for _, a := range e.pre {
		pre = append(pre, a.As)
	}
	all := setUnion(f.rels, d.rels)
	var s *stream
	if d.rows >= f.rows {
		dk, fk2 := l.keysBetween(d.rels, f.rels, d.cols, f.cols)
		s, err = l.join(d, f, dk, fk2, plan.JoinInner, pre)
	} else {
		fk2, dk := l.keysBetween(f.rels, d.rels, f.cols, d.cols)
		direct := l.needed(d, all, false)
		carry := slices.DeleteFunc(l.needed(d, all, true), func(x string) bool {
			return slices.Contains(dk, x) && !slices.Contains(direct, x)
		})
		s, err = l.join(f, d, fk2, dk, plan.JoinInner, carry)
	}
	if err != nil {
		return nil, err
	}
	s.rels = all
	if err := l.applyReady(s); err != nil {
		return nil, err
	}
	return s, nil
}

// groupedWithin reports whether r is a derived relation grouped on
// columns all among cols, so that its rows are unique on cols.
func groupedWithin(r *rel, cols []string) bool {
	sb := r.sub
	if sb == nil || !sb.grouped || len(sb.keys) == 0 || len(sb.outs) != len(r.out) || sb.distinct {
		return false
	}
	for _, k := range sb.keys {
		j := slices.IndexFunc(sb.outs, func(o output) bool { return o.e.e.String() == plan.Col(k.Name).String() })
		if j < 0 || !slices.Contains(cols, r.out[j].name) {
			return false
		}
	}
	return true
}
