package querygen

import (
	"strconv"
	"strings"
)

// link is a foreign key between a table of the outer query (outer) and
// another table the subquery reads (inner, either side of the key).
type link struct {
	outer *ref
	fk    *FK
	// outerIsChild: outer holds the referencing columns.
	outerIsChild bool
}

func (q *gen) links(scope []*ref, single bool) []link {
	var out []link
	for _, r := range scope {
		for _, fk := range r.t.up {
			if !single || len(fk.ChildCols) == 1 {
				out = append(out, link{r, fk, true})
			}
		}
		for _, fk := range r.t.down {
			if !single || len(fk.ChildCols) == 1 {
				out = append(out, link{r, fk, false})
			}
		}
	}
	return out
}

// innerRef opens the subquery's table of l and returns the correlation
// (outer = inner on the key).
func (q *gen) innerRef(l link) (*ref, string) {
	if l.outerIsChild {
		in := q.newRef(q.g.byName[l.fk.Parent])
		return in, q.fkCond(l.outer, l.fk, in)
	}
	in := q.newRef(q.g.byName[l.fk.Child])
	return in, q.fkCond(in, l.fk, l.outer)
}

// noteSelf marks a table read both outside and inside a subquery.
func (q *gen) noteSelf(scope []*ref, in *ref) {
	for _, r := range scope {
		if r.t == in.t {
			q.feats.add(FeatSelfReference)
		}
	}
}

// subquery draws a predicate with a subquery over scope's tables:
// [NOT] EXISTS or a scalar comparison correlated on a foreign key, [NOT]
// IN over a key, or a comparison with an uncorrelated scalar aggregate.
func (q *gen) subquery(scope []*ref) string {
	for range 3 {
		var p string
		switch q.r.IntN(4) {
		case 0:
			p = q.exists(scope)
		case 1:
			p = q.inSubquery(scope)
		case 2:
			p = q.scalar(scope)
		case 3:
			p = q.correlatedScalar(scope)
		}
		if p != "" {
			return p
		}
	}
	return ""
}

// innerWhere is the subquery's own filtering: 0-2 predicates, and maybe
// a table the inner one references, joined on its key.
func (q *gen) innerFrom(in *ref) (from string, where []string, scope []*ref) {
	scope = []*ref{in}
	from = fromSQL(in)
	if len(in.t.up) > 0 && q.chance(0.3) {
		fk := pick(q, in.t.up)
		p := q.newRef(q.g.byName[fk.Parent])
		from += ", " + fromSQL(p)
		where = append(where, q.fkCond(in, fk, p))
		scope = append(scope, p)
	}
	for range pick(q, []int{0, 1, 1, 2}) {
		if p := q.pred(scope, 1); p != "" {
			where = append(where, p)
		}
	}
	return from, where, scope
}

func sub(sel, from string, where []string) string {
	s := "(select " + sel + " from " + from
	if len(where) > 0 {
		s += " where " + strings.Join(where, " and ")
	}
	return s + ")"
}

// correlated picks a foreign-key link out of scope and the inner table
// of a subquery correlated through it: the table, the subquery's FROM and
// its WHERE conditions, the correlation first. ok is false where scope has
// no link.
func (q *gen) correlated(scope []*ref) (in *ref, from string, where []string, ok bool) {
	ls := q.links(scope, false)
	if len(ls) == 0 {
		return nil, "", nil, false
	}
	l := pick(q, ls)
	in, corr := q.innerRef(l)
	q.noteSelf(scope, in)
	from, where, _ = q.innerFrom(in)
	return in, from, append([]string{corr}, where...), true
}

func (q *gen) exists(scope []*ref) string {
	_, from, where, ok := q.correlated(scope)
	if !ok {
		return ""
	}
	q.r.Shuffle(len(where), func(i, j int) { where[i], where[j] = where[j], where[i] })
	s := "exists " + sub(pick(q, []string{"*", "1"}), from, where)
	if q.chance(0.4) {
		q.feats.add(FeatNotExists)
		return "not " + s
	}
	q.feats.add(FeatExists)
	return s
}

func (q *gen) inSubquery(scope []*ref) string {
	ls := q.links(scope, true)
	if len(ls) == 0 {
		return ""
	}
	l := pick(q, ls)
	var in *ref
	var outerCol, innerCol *column
	if l.outerIsChild {
		in = q.newRef(q.g.byName[l.fk.Parent])
		outerCol, innerCol = l.outer.t.col(l.fk.ChildCols[0]), in.t.col(l.fk.ParentCols[0])
	} else {
		in = q.newRef(q.g.byName[l.fk.Child])
		outerCol, innerCol = l.outer.t.col(l.fk.ParentCols[0]), in.t.col(l.fk.ChildCols[0])
	}
	q.noteSelf(scope, in)
	from, where, _ := q.innerFrom(in)
	s := colSQL(l.outer, outerCol)
	if q.chance(0.35) {
		q.feats.add(FeatNotInSubquery)
		s += " not in "
	} else {
		q.feats.add(FeatInSubquery)
		s += " in "
	}
	return s + sub(colSQL(in, innerCol), from, where)
}

// comparand finds an outer value to compare with an aggregate of column
// c: c itself where its table is in scope, else a column of its kind.
func (q *gen) comparand(scope []*ref, c *column) (string, bool) {
	var same, kin []string
	for _, r := range scope {
		for _, x := range r.t.cols {
			switch {
			case x == c:
				same = append(same, colSQL(r, x))
			case x.k == c.k && (x.k == kDate || computable(x)):
				kin = append(kin, colSQL(r, x))
			}
		}
	}
	if len(same) > 0 && q.chance(0.8) {
		return pick(q, same), true
	}
	if len(kin) > 0 {
		return pick(q, kin), true
	}
	return "", false
}

// aggOf draws an aggregate of an inner column for a scalar subquery: of
// numbers avg, min, max or sum (maybe scaled, as Q17's 0.2 * avg), of
// dates min or max. Returns the column aggregated.
func (q *gen) aggOf(in *ref) (string, *column, bool) {
	cands := cols([]*ref{in}, func(c *column) bool { return computable(c) || (c.k == kDate && c.ranged) })
	if len(cands) == 0 {
		return "", nil, false
	}
	rc := pick(q, cands)
	fns := []string{"avg", "min", "max", "sum"}
	if rc.c.k == kDate {
		fns = fns[1:3]
	}
	fn := pick(q, fns)
	a := fn + "(" + colSQL(rc.r, rc.c) + ")"
	if rc.c.k != kDate && q.chance(0.3) {
		a = pick(q, []string{"0.2", "0.5", "1.5", "2"}) + " * " + a
	}
	return a, rc.c, true
}

func (q *gen) scalar(scope []*ref) string {
	t := pick(q, q.g.tables)
	in := q.newRef(t)
	q.noteSelf(scope, in)
	a, c, ok := q.aggOf(in)
	if !ok {
		return ""
	}
	from, where, _ := q.innerFrom(in)
	cmp, ok := q.comparand(scope, c)
	if !ok {
		return ""
	}
	q.feats.add(FeatScalarSubquery)
	return cmp + " " + pick(q, []string{"<", "<=", ">", ">=", "="}) + " " + sub(a, from, where)
}

func (q *gen) correlatedScalar(scope []*ref) string {
	in, from, where, ok := q.correlated(scope)
	if !ok {
		return ""
	}
	q.feats.add(FeatCorrelatedScalar)
	if q.chance(0.3) || len(cols([]*ref{in}, computable)) == 0 {
		// A count is 0, not NULL, over no rows: the outer rows without
		// match take part.
		q.feats.add(FeatCountStar)
		return sub("count(*)", from, where) + " " + pick(q, cmpOps) + " " + strconv.Itoa(q.r.IntN(4))
	}
	a, c, _ := q.aggOf(in)
	cmp, ok := q.comparand(scope, c)
	if !ok {
		return sub(a, from, where) + " > " + q.literal(colVal(in, c))
	}
	return cmp + " " + pick(q, []string{"<", "<=", ">", ">=", "="}) + " " + sub(a, from, where)
}
