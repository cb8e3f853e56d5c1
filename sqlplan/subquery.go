package sqlplan

import (
	"slices"

	"gostachio/plan"

	"vitess.io/vitess/go/vt/sqlparser"
)

// Subqueries are decorrelated while binding, into relations of the
// enclosing block:
//
//   - [NOT] EXISTS and [NOT] IN (subquery) with equality correlations
//     become semi (anti) joins on the correlated columns (and the IN
//     column); the subquery's other conditions stay inside it. Without
//     NULLs, NOT IN is exactly an anti join.
//   - EXISTS with one more correlation x <op> v (op not =) aggregates the
//     subquery per correlation key into min(x), max(x), count(*): some x
//     satisfies x <> v iff min <> v or max <> v, x < v iff min < v, x > v
//     iff max > v. EXISTS inner-joins the groups and tests that; NOT
//     EXISTS left-outer-joins them (a missing group has count 0) and
//     keeps count = 0 or the negated test.
//   - a scalar subquery (an aggregate without GROUP BY) compared with a
//     value: correlated by equalities, it is aggregated per correlation
//     key and inner-joined on it (a missing group is SQL's NULL, whose
//     comparison is false: the inner join drops the row too); not
//     correlated, its one row is cross-joined.

// bindCond binds one WHERE conjunct into blk.
func (p *planner) bindCond(n sqlparser.Expr, blk *block, sc *scope) error {
	switch e := n.(type) {
	case *sqlparser.ExistsExpr:
		return p.exists(e.Subquery, false, blk, sc)
	case *sqlparser.NotExpr:
		if ex, ok := e.Expr.(*sqlparser.ExistsExpr); ok {
			return p.exists(ex.Subquery, true, blk, sc)
		}
	case *sqlparser.ComparisonExpr:
		if sub, ok := e.Right.(*sqlparser.Subquery); ok && (e.Operator == sqlparser.InOp || e.Operator == sqlparser.NotInOp) {
			return p.inSubquery(e, sub, blk, sc)
		}
		_, l := e.Left.(*sqlparser.Subquery)
		_, r := e.Right.(*sqlparser.Subquery)
		if l || r {
			return p.scalarSubquery(e, blk, sc, false)
		}
	}
	b, err := (&exprBinder{p: p, sc: sc}).bind(n)
	if err != nil {
		return err
	}
	if b.t.k != kBool {
		return p.errAt(b.pos, "WHERE needs a condition, not a %s", b.t)
	}
	blk.conds = append(blk.conds, b)
	return nil
}

// bindHaving binds one HAVING conjunct (over the aggregation's output).
func (p *planner) bindHaving(n sqlparser.Expr, blk *block, sc *scope, post *exprBinder) error {
	if e, ok := n.(*sqlparser.ComparisonExpr); ok {
		_, l := e.Left.(*sqlparser.Subquery)
		_, r := e.Right.(*sqlparser.Subquery)
		if l || r {
			return p.scalarSubquery(e, blk, sc, true)
		}
	}
	b, err := post.bind(n)
	if err != nil {
		return err
	}
	if b.t.k != kBool {
		return p.errAt(b.pos, "HAVING needs a condition, not a %s", b.t)
	}
	blk.having = append(blk.having, b)
	return nil
}

// relSet is the set of relations of blk.
func relSet(blk *block) map[*rel]bool {
	m := map[*rel]bool{}
	for _, r := range blk.rels {
		m[r] = true
	}
	for _, r := range blk.leftJoins {
		m[r] = true
	}
	return m
}

// colsOf lists the column names e references.
func colsOf(e plan.Expr, out []string) []string {
	switch x := e.(type) {
	case plan.Col:
		if !slices.Contains(out, string(x)) {
			out = append(out, string(x))
		}
	case plan.Call:
		for _, a := range x.Args {
			out = colsOf(a, out)
		}
	}
	return out
}

// correlation splits a subquery's conditions into its own and its
// equality correlations (inner = outer columns) and other correlations.
type correlation struct {
	innerKeys, outerKeys []string
	other                []bexpr
}

func (p *planner) correlate(sb *block, blk *block) (*correlation, error) {
	own := relSet(sb)
	outer := relSet(blk)
	co := &correlation{}
	var keep []bexpr
	for _, c := range sb.conds {
		inner, out := false, false
		for _, name := range colsOf(c.e, nil) {
			col := p.cols[name]
			switch {
			case col == nil || col.rel == nil || own[col.rel]:
				inner = true
			case outer[col.rel]:
				out = true
			default:
				return nil, p.errAt(c.pos, "correlation with a query two levels out (%s) is not supported", p.sqlName(name))
			}
		}
		if !out {
			keep = append(keep, c)
			continue
		}
		if call, ok := c.e.(plan.Call); ok && call.Fn == plan.FnEq && len(call.Args) == 2 {
			a, aok := call.Args[0].(plan.Col)
			b, bok := call.Args[1].(plan.Col)
			if aok && bok {
				ca, cb := p.cols[string(a)], p.cols[string(b)]
				if own[cb.rel] {
					a, b, ca, cb = b, a, cb, ca
				}
				// Integer keys of either width hash and compare alike.
				if own[ca.rel] && outer[cb.rel] && (ca.t == cb.t || ca.t.integer() && cb.t.integer()) {
					co.innerKeys = append(co.innerKeys, string(a))
					co.outerKeys = append(co.outerKeys, string(b))
					continue
				}
			}
		}
		_ = inner
		co.other = append(co.other, c)
	}
	sb.conds = keep
	return co, nil
}

// attach makes sb (its correlations removed) a semi, anti or left outer
// relation of blk joined on outerKeys = the subquery's innerKeys.
func (p *planner) derivedRel(sb *block, kind relKind, pos int, hint string) *rel {
	p.nrel++
	r := &rel{id: p.nrel, alias: hint, kind: kind, sub: sb, pos: pos}
	for _, o := range sb.outs {
		c := p.addColumn(o.sql, o.e.t, r)
		c.distinct, c.width = p.exprDistinct(o.e.e), p.exprWidth(o.e)
		c.agg = p.aggOf(o.e.e)
		r.out = append(r.out, c)
	}
	return r
}

func names(cs []*column) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// keyOutputs sets sb's outputs to its key columns (plain columns).
func keyOutputs(sb *block, keys []string, types func(string) typ) {
	sb.outs = nil
	sb.hiddenOuts = 0
	for _, k := range keys {
		sb.outs = append(sb.outs, output{sql: k, name: k, e: bexpr{e: plan.Col(k), t: types(k)}})
	}
}

func (p *planner) colType(name string) typ { return p.cols[name].t }

func (p *planner) exists(sub *sqlparser.Subquery, not bool, blk *block, sc *scope) error {
	pos := p.loc.find(sub)
	sel, ok := sub.Select.(*sqlparser.Select)
	if !ok {
		return p.errAt(pos, "only a plain SELECT is supported in EXISTS")
	}
	sb, err := p.bindSelect(sel, sc)
	if err != nil {
		return err
	}
	if sb.grouped || sb.limit >= 0 {
		return p.errAt(pos, "EXISTS over an aggregating or limited subquery is not supported")
	}
	co, err := p.correlate(sb, blk)
	if err != nil {
		return err
	}
	if len(co.innerKeys) == 0 {
		return p.errAt(pos, "EXISTS needs an equality correlation with the enclosing query (an uncorrelated EXISTS is not supported)")
	}
	return p.attachCorrelated(sb, co, not, blk, pos)
}

func (p *planner) attachCorrelated(sb *block, co *correlation, not bool, blk *block, pos int) error {
	sb.order, sb.distinct = nil, false
	switch len(co.other) {
	case 0:
		keyOutputs(sb, co.innerKeys, p.colType)
		kind := relSemi
		if not {
			kind = relAnti
		}
		r := p.derivedRel(sb, kind, pos, "exists")
		r.outerKeys, r.buildKeys = co.outerKeys, names(r.out)
		blk.rels = append(blk.rels, r)
		return nil
	case 1:
	default:
		return p.errAt(co.other[1].pos, "a subquery with more than one non-equality correlation is not supported")
	}
	c := co.other[0]
	call, ok := c.e.(plan.Call)
	own := relSet(sb)
	var x string
	var v plan.Expr
	fn := plan.FnInvalid
	if ok && len(call.Args) == 2 {
		flip := map[plan.Fn]plan.Fn{plan.FnNe: plan.FnNe, plan.FnLt: plan.FnGt, plan.FnLe: plan.FnGe, plan.FnGt: plan.FnLt, plan.FnGe: plan.FnLe}
		if _, cmp := flip[call.Fn]; cmp {
			if a, ok := call.Args[0].(plan.Col); ok && own[p.cols[string(a)].rel] && !p.refsAny(call.Args[1], own) {
				x, v, fn = string(a), call.Args[1], call.Fn
			} else if b, ok := call.Args[1].(plan.Col); ok && own[p.cols[string(b)].rel] && !p.refsAny(call.Args[0], own) {
				x, v, fn = string(b), call.Args[0], flip[call.Fn]
			}
		}
	}
	if fn == plan.FnInvalid {
		return p.errAt(c.pos, "correlated condition %s is not supported (equalities, and one inner column compared with an outer value, are)", c.e)
	}
	// Aggregate per correlation key: min, max and count of x.
	sb.grouped = true
	sb.keys = nil
	for _, k := range co.innerKeys {
		sb.keys = append(sb.keys, plan.As(k, plan.Col(k)))
	}
	xt := p.cols[x].t
	mn := p.addColumn("min_"+p.sqlName(x), xt, nil)
	mx := p.addColumn("max_"+p.sqlName(x), xt, nil)
	cnt := p.addColumn("count", typ{k: kInt}, nil)
	sb.aggs = []plan.Agg{plan.Min(mn.name, plan.Col(x)), plan.Max(mx.name, plan.Col(x)), plan.Count(cnt.name)}
	keyOutputs(sb, co.innerKeys, p.colType)
	for _, a := range []*column{mn, mx, cnt} {
		sb.outs = append(sb.outs, output{sql: a.name, name: a.name, e: bexpr{e: plan.Col(a.name), t: a.t}})
	}
	kind := relInner
	if not {
		kind = relLeftOuter
	}
	r := p.derivedRel(sb, kind, pos, "exists")
	nk := len(co.innerKeys)
	rmn, rmx, rcnt := plan.Col(r.out[nk].name), plan.Col(r.out[nk+1].name), plan.Col(r.out[nk+2].name)
	var test plan.Expr
	switch fn {
	case plan.FnNe:
		test = plan.Or(plan.Ne(rmn, v), plan.Ne(rmx, v))
	case plan.FnLt:
		test = plan.Lt(rmn, v)
	case plan.FnLe:
		test = plan.Le(rmn, v)
	case plan.FnGt:
		test = plan.Gt(rmx, v)
	case plan.FnGe:
		test = plan.Ge(rmx, v)
	}
	b := bexpr{t: typ{k: kBool}, pos: c.pos}
	if not {
		r.outerKeys, r.buildKeys = co.outerKeys, names(r.out[:nk])
		r.carry = names(r.out[nk:])
		b.e = plan.Or(plan.Eq(rcnt, plan.Int(0)), plan.Not(test))
	} else {
		for i, k := range co.outerKeys {
			blk.conds = append(blk.conds, bexpr{e: plan.Eq(plan.Col(k), plan.Col(r.out[i].name)), t: typ{k: kBool}, pos: pos})
		}
		b.e = test
	}
	blk.rels = append(blk.rels, r)
	blk.conds = append(blk.conds, b)
	return nil
}

// refsAny reports whether e references a column of a relation in set.
func (p *planner) refsAny(e plan.Expr, set map[*rel]bool) bool {
	for _, n := range colsOf(e, nil) {
		if c := p.cols[n]; c != nil && set[c.rel] {
			return true
		}
	}
	return false
}

func (p *planner) inSubquery(e *sqlparser.ComparisonExpr, sub *sqlparser.Subquery, blk *block, sc *scope) error {
	lhs, err := (&exprBinder{p: p, sc: sc}).bind(e.Left)
	if err != nil {
		return err
	}
	pos := p.loc.find(sub)
	sel, ok := sub.Select.(*sqlparser.Select)
	if !ok {
		return p.errAt(pos, "only a plain SELECT is supported in IN (subquery)")
	}
	sb, err := p.bindSelect(sel, sc)
	if err != nil {
		return err
	}
	if len(sb.outs)-sb.hiddenOuts != 1 {
		return p.errAt(pos, "IN (subquery) needs a subquery of one column, not %d", len(sb.outs)-sb.hiddenOuts)
	}
	lc, ok := lhs.e.(plan.Col)
	if !ok {
		return p.errAt(lhs.pos, "IN (subquery) needs a column on its left, not %s", lhs.e)
	}
	out := sb.outs[0]
	// Integer keys of either width hash and compare alike in the join.
	if out.e.t != lhs.t && !(out.e.t.integer() && lhs.t.integer()) {
		return p.errAt(lhs.pos, "IN (subquery) compares %s with %s: the two must have one type", lhs.t, out.e.t)
	}
	not := e.Operator == sqlparser.NotInOp
	co, err := p.correlate(sb, blk)
	if err != nil {
		return err
	}
	if sb.grouped || sb.distinct {
		if len(co.innerKeys)+len(co.other) > 0 {
			return p.errAt(pos, "a correlated IN over an aggregating subquery is not supported")
		}
		sb.outs, sb.hiddenOuts, sb.order = sb.outs[:1], 0, nil
		kind := relSemi
		if not {
			kind = relAnti
		}
		r := p.derivedRel(sb, kind, pos, "in")
		r.outerKeys, r.buildKeys = []string{string(lc)}, names(r.out)
		blk.rels = append(blk.rels, r)
		return nil
	}
	oc, ok := out.e.e.(plan.Col)
	if !ok {
		return p.errAt(pos, "IN (subquery) needs the subquery to select a column, not %s", out.e.e)
	}
	co.innerKeys = append([]string{string(oc)}, co.innerKeys...)
	co.outerKeys = append([]string{string(lc)}, co.outerKeys...)
	return p.attachCorrelated(sb, co, not, blk, pos)
}

// scalarSubquery binds value <op> (subquery); inHaving: over blk's
// aggregation output.
func (p *planner) scalarSubquery(e *sqlparser.ComparisonExpr, blk *block, sc *scope, inHaving bool) error {
	fn, ok := map[sqlparser.ComparisonExprOperator]plan.Fn{
		sqlparser.EqualOp: plan.FnEq, sqlparser.NotEqualOp: plan.FnNe, sqlparser.LessThanOp: plan.FnLt,
		sqlparser.LessEqualOp: plan.FnLe, sqlparser.GreaterThanOp: plan.FnGt, sqlparser.GreaterEqualOp: plan.FnGe,
	}[e.Operator]
	if !ok || e.Modifier != sqlparser.Missing {
		return p.errNode(e, "comparison %s with a subquery is not supported", e.Operator.ToString())
	}
	side, sub := e.Left, (*sqlparser.Subquery)(nil)
	flipped := false
	if s, ok := e.Left.(*sqlparser.Subquery); ok {
		side, sub, flipped = e.Right, s, true
		if _, ok := side.(*sqlparser.Subquery); ok {
			return p.errNode(e, "comparing two subqueries is not supported")
		}
	} else if sub, ok = e.Right.(*sqlparser.Subquery); !ok {
		return p.errNode(e, "comparison %s has no subquery side", e.Operator.ToString())
	}
	x := &exprBinder{p: p, sc: sc}
	if inHaving {
		x.agg = &aggCtx{p: p, blk: blk, seen: map[string]string{}}
		for _, a := range blk.aggs {
			x.agg.seen[plan.Agg{Fn: a.Fn, Arg: a.Arg}.String()] = a.As
		}
	}
	lhs, err := x.bind(side)
	if err != nil {
		return err
	}
	pos := p.loc.find(sub)
	sel, ok := sub.Select.(*sqlparser.Select)
	if !ok {
		return p.errAt(pos, "only a plain SELECT is supported as a scalar subquery")
	}
	sb, err := p.bindSelect(sel, sc)
	if err != nil {
		return err
	}
	if len(sb.outs)-sb.hiddenOuts != 1 || !sb.grouped || len(sb.keys) > 0 {
		return p.errAt(pos, "a scalar subquery must compute one aggregate value (no GROUP BY, one select item)")
	}
	co, err := p.correlate(sb, blk)
	if err != nil {
		return err
	}
	if len(co.other) > 0 {
		return p.errAt(co.other[0].pos, "a scalar subquery correlated by %s is not supported (equalities are)", co.other[0].e)
	}
	if inHaving && len(co.innerKeys) > 0 {
		return p.errAt(pos, "a correlated scalar subquery in HAVING is not supported")
	}
	val := sb.outs[0]
	if !comparable(lhs.t, val.e.t) {
		return p.errAt(lhs.pos, "cannot compare %s with %s", lhs.t, val.e.t)
	}
	sb.order, sb.hiddenOuts = nil, 0
	keyOutputs(sb, co.innerKeys, p.colType)
	for _, k := range co.innerKeys {
		sb.keys = append(sb.keys, plan.As(k, plan.Col(k)))
	}
	sb.outs = append(sb.outs, val)
	// A correlated count over an outer row without inner rows is 0, not
	// NULL: an inner join on the counted groups would lose that row, a
	// left outer join's zero fill is the count. Other aggregates are NULL
	// there, which fails the comparison as the inner join does.
	isCount := false
	if c, ok := val.e.e.(plan.Col); ok && !inHaving && len(co.innerKeys) > 0 {
		isCount = slices.ContainsFunc(sb.aggs, func(a plan.Agg) bool { return a.Fn == plan.AggCount && a.As == string(c) })
	}
	kind := relInner
	if isCount {
		kind = relLeftOuter
	}
	r := p.derivedRel(sb, kind, pos, "subquery")
	v := plan.Col(r.out[len(r.out)-1].name)
	var cmp plan.Expr = plan.Call{Fn: fn, Args: []plan.Expr{lhs.e, v}}
	if flipped {
		cmp = plan.Call{Fn: fn, Args: []plan.Expr{v, lhs.e}}
	}
	cond := bexpr{e: cmp, t: typ{k: kBool}, pos: lhs.pos}
	if inHaving {
		blk.havingRels = append(blk.havingRels, r)
		blk.having = append(blk.having, cond)
		return nil
	}
	if isCount {
		nk := len(co.innerKeys)
		r.outerKeys, r.buildKeys, r.carry = co.outerKeys, names(r.out[:nk]), names(r.out[nk:])
		blk.rels = append(blk.rels, r)
		blk.conds = append(blk.conds, cond)
		return nil
	}
	for i, k := range co.outerKeys {
		blk.conds = append(blk.conds, bexpr{e: plan.Eq(plan.Col(k), plan.Col(r.out[i].name)), t: typ{k: kBool}, pos: pos})
	}
	blk.rels = append(blk.rels, r)
	blk.conds = append(blk.conds, cond)
	return nil
}

// rewriteLeftJoins turns each left-joined relation whose columns only
// count(col) aggregates read, grouped by the left side, into counts per
// join key left-outer-joined (a missing key counts 0, as count over SQL's
// NULL row gives): count(col) becomes sum(counts). Other uses are
// refused: the engine fills zeros, not NULLs.
func (p *planner) rewriteLeftJoins(blk *block) error {
	for _, r := range blk.leftJoins {
		set := map[*rel]bool{r: true}
		why := func(pos int, what string) error {
			return p.errAt(pos, "LEFT JOIN %s: %s; only count(column) aggregates grouped by left-side columns may read its right side (the engine has no NULLs)", r.alias, what)
		}
		if !blk.grouped {
			return why(r.pos, "the query does not aggregate")
		}
		for _, c := range blk.conds {
			if p.refsAny(c.e, set) {
				return why(c.pos, "WHERE reads the right side")
			}
		}
		for _, k := range blk.keys {
			if p.refsAny(k.E, set) {
				return why(r.pos, "GROUP BY reads the right side")
			}
		}
		for _, cd := range blk.countDistincts {
			if p.refsAny(cd.arg.e, set) {
				return why(r.pos, "count(DISTINCT) reads the right side")
			}
		}
		sub := &block{rels: []*rel{r}, grouped: true, limit: -1, onConds: map[*rel][]bexpr{}}
		var outerKeys, innerKeys []string
		for _, c := range blk.onConds[r] {
			if call, ok := c.e.(plan.Call); ok && call.Fn == plan.FnEq {
				a, aok := call.Args[0].(plan.Col)
				b, bok := call.Args[1].(plan.Col)
				if aok && bok {
					ca, cb := p.cols[string(a)], p.cols[string(b)]
					if ca.rel == r {
						a, b, ca, cb = b, a, cb, ca
					}
					if cb.rel == r && ca.rel != r && ca.t == cb.t {
						outerKeys, innerKeys = append(outerKeys, string(a)), append(innerKeys, string(b))
						continue
					}
				}
			}
			if !p.refsOnly(c.e, set) {
				return why(c.pos, "its ON condition "+c.e.String()+" is neither an equality of the two sides nor about the right side alone")
			}
			sub.conds = append(sub.conds, c)
		}
		if len(outerKeys) == 0 {
			return why(r.pos, "ON has no equality joining the two sides")
		}
		for _, k := range innerKeys {
			sub.keys = append(sub.keys, plan.As(k, plan.Col(k)))
		}
		cnt := p.addColumn("count", typ{k: kInt}, nil)
		sub.aggs = []plan.Agg{plan.Count(cnt.name)}
		keyOutputs(sub, innerKeys, p.colType)
		sub.outs = append(sub.outs, output{sql: cnt.name, name: cnt.name, e: bexpr{e: plan.Col(cnt.name), t: cnt.t}})
		d := p.derivedRel(sub, relLeftOuter, r.pos, r.alias)
		d.outerKeys, d.buildKeys, d.carry = outerKeys, names(d.out[:len(innerKeys)]), []string{d.out[len(d.out)-1].name}
		for i, a := range blk.aggs {
			if !p.refsAny(a.Arg, set) {
				continue
			}
			if c, ok := a.Arg.(plan.Col); !ok || a.Fn != plan.AggCount || p.cols[string(c)].rel != r {
				return why(r.pos, "aggregate "+a.Fn.String()+"("+p.sqlName(a.Arg.String())+") reads it")
			}
			blk.aggs[i] = plan.Sum(a.As, plan.Col(d.carry[0]))
		}
		blk.rels = slices.DeleteFunc(blk.rels, func(x *rel) bool { return x == r })
		blk.rels = append(blk.rels, d)
	}
	blk.leftJoins = nil
	return nil
}

// refsOnly reports whether every column e references belongs to set.
func (p *planner) refsOnly(e plan.Expr, set map[*rel]bool) bool {
	for _, n := range colsOf(e, nil) {
		if c := p.cols[n]; c == nil || !set[c.rel] {
			return false
		}
	}
	return true
}
