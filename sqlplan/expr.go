package sqlplan

import (
	"strconv"
	"strings"
	"time"

	"gostachio/plan"

	"vitess.io/vitess/go/mysql/datetime"
	"vitess.io/vitess/go/vt/sqlparser"
)

// aggCtx collects the aggregates of a block's select list, HAVING and
// ORDER BY: each aggregate call becomes a column of the aggregation's
// output.
type aggCtx struct {
	p    *planner
	blk  *block
	seen map[string]string // aggregate text -> output column
}

// exprBinder binds expressions in a scope; agg is nil where aggregates
// are not allowed (WHERE, GROUP BY, aggregate arguments).
type exprBinder struct {
	p   *planner
	sc  *scope
	agg *aggCtx
}

func (x *exprBinder) bind(n sqlparser.Expr) (bexpr, error) {
	p := x.p
	switch e := n.(type) {
	case *sqlparser.ColName:
		pos := p.loc.find(e)
		return p.resolve(x.sc, e.Qualifier.Name.String(), e.Name.String(), pos)
	case *sqlparser.Literal:
		return x.literal(e)
	case *sqlparser.BinaryExpr:
		var fn plan.Fn
		switch e.Operator {
		case sqlparser.PlusOp:
			fn = plan.FnAdd
		case sqlparser.MinusOp:
			fn = plan.FnSub
		case sqlparser.MultOp:
			fn = plan.FnMul
		case sqlparser.DivOp:
			fn = plan.FnDiv
		default:
			return bexpr{}, p.errNode(e, "operator %s is not supported", e.Operator.ToString())
		}
		a, err := x.bind(e.Left)
		if err != nil {
			return bexpr{}, err
		}
		b, err := x.bind(e.Right)
		if err != nil {
			return bexpr{}, err
		}
		t, err := arith(fn, a.t, b.t)
		if err != nil {
			return bexpr{}, p.errAt(a.pos, "%v", err)
		}
		return bexpr{e: plan.Call{Fn: fn, Args: []plan.Expr{a.e, b.e}}, t: t, pos: a.pos}, nil
	case *sqlparser.UnaryExpr:
		pos := p.loc.find(e)
		a, err := x.bind(e.Expr)
		if err != nil {
			return bexpr{}, err
		}
		switch e.Operator {
		case sqlparser.UPlusOp:
			return a, nil
		case sqlparser.UMinusOp:
			if l, ok := a.e.(plan.Lit); ok && (l.Kind == plan.LitInt || l.Kind == plan.LitDecimal) {
				l.I = -l.I
				return bexpr{e: l, t: a.t, pos: pos}, nil
			}
			if l, ok := a.e.(plan.Lit); ok && l.Kind == plan.LitFloat {
				l.F = -l.F
				return bexpr{e: l, t: a.t, pos: pos}, nil
			}
			if !a.t.numeric() {
				return bexpr{}, p.errAt(pos, "cannot negate %s", a.t)
			}
			t, _ := arith(plan.FnSub, typ{k: kInt}, a.t)
			return bexpr{e: plan.Sub(plan.Int(0), a.e), t: t, pos: pos}, nil
		}
		return bexpr{}, p.errAt(pos, "operator %s is not supported", e.Operator.ToString())
	case *sqlparser.AndExpr, *sqlparser.OrExpr:
		fn := plan.FnAnd
		if _, ok := e.(*sqlparser.OrExpr); ok {
			fn = plan.FnOr
		}
		var args []plan.Expr
		pos := -1
		for _, part := range flatten(n, fn == plan.FnOr) {
			a, err := x.bind(part)
			if err != nil {
				return bexpr{}, err
			}
			if a.t.k != kBool {
				return bexpr{}, p.errAt(a.pos, "%s of a %s, want a condition", fn, a.t)
			}
			if pos < 0 {
				pos = a.pos
			}
			args = append(args, a.e)
		}
		return bexpr{e: plan.Call{Fn: fn, Args: args}, t: typ{k: kBool}, pos: pos}, nil
	case *sqlparser.NotExpr:
		pos := p.loc.find(e)
		a, err := x.bind(e.Expr)
		if err != nil {
			return bexpr{}, err
		}
		if a.t.k != kBool {
			return bexpr{}, p.errAt(pos, "not of a %s, want a condition", a.t)
		}
		return bexpr{e: plan.Not(a.e), t: a.t, pos: pos}, nil
	case *sqlparser.ComparisonExpr:
		return x.comparison(e)
	case *sqlparser.BetweenExpr:
		v, err := x.bind(e.Left)
		if err != nil {
			return bexpr{}, err
		}
		lo, err := x.bindAs(e.From, v)
		if err != nil {
			return bexpr{}, err
		}
		hi, err := x.bindAs(e.To, v)
		if err != nil {
			return bexpr{}, err
		}
		for _, b := range []bexpr{lo, hi} {
			if !comparable(v.t, b.t) {
				return bexpr{}, p.errAt(b.pos, "between compares %s with %s", v.t, b.t)
			}
		}
		var out plan.Expr = plan.Between(v.e, lo.e, hi.e)
		if !e.IsBetween {
			out = plan.Not(out)
		}
		return bexpr{e: out, t: typ{k: kBool}, pos: v.pos}, nil
	case *sqlparser.CaseExpr:
		return x.caseExpr(e)
	case *sqlparser.ExtractFuncExpr:
		pos := p.loc.find(e)
		if e.IntervalType != datetime.IntervalYear {
			return bexpr{}, p.errAt(pos, "extract of %s is not supported (only year)", e.IntervalType.ToString())
		}
		a, err := x.bind(e.Expr)
		if err != nil {
			return bexpr{}, err
		}
		if a.t.k != kDate {
			return bexpr{}, p.errAt(a.pos, "extract(year from ...) of a %s, want a date", a.t)
		}
		return bexpr{e: plan.Year(a.e), t: typ{k: kInt}, pos: pos}, nil
	case *sqlparser.SubstrExpr:
		pos := p.loc.find(e)
		a, err := x.bind(e.Name)
		if err != nil {
			return bexpr{}, err
		}
		if a.t.k != kString {
			return bexpr{}, p.errAt(a.pos, "substring of a %s, want text", a.t)
		}
		from, ok1 := intLiteral(e.From)
		n, ok2 := intLiteral(e.To)
		if !ok1 || !ok2 || e.To == nil {
			return bexpr{}, p.errAt(pos, "substring needs integer literals for its start and length")
		}
		return bexpr{e: plan.Substr(a.e, from, n), t: typ{k: kString}, pos: pos}, nil
	case *sqlparser.IntervalDateExpr:
		return x.dateArith(e)
	case *sqlparser.FuncExpr:
		pos := p.loc.find(e)
		name := e.Name.Lowered()
		if (name == "substring" || name == "substr") && len(e.Exprs) == 3 {
			return x.bind(&sqlparser.SubstrExpr{Name: e.Exprs[0], From: e.Exprs[1], To: e.Exprs[2]})
		}
		return bexpr{}, p.errAt(pos, "function %s is not supported", name)
	case *sqlparser.Sum, *sqlparser.Count, *sqlparser.CountStar, *sqlparser.Avg, *sqlparser.Min, *sqlparser.Max:
		return x.aggregate(e)
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return bexpr{}, p.errNode(e, "a subquery is supported only as a condition of WHERE or HAVING (EXISTS, IN, or a comparison with a scalar subquery), not here")
	case *sqlparser.NullVal:
		return bexpr{}, p.errNode(e, "NULL is not supported: the engine has no NULLs")
	case *sqlparser.IsExpr:
		return bexpr{}, p.errNode(e, "IS [NOT] NULL/TRUE/FALSE is not supported: the engine has no NULLs")
	}
	return bexpr{}, p.errNode(n, "expression %q is not supported", sqlparser.String(n))
}

// flatten lists the operands of a chain of AND (or OR) expressions.
func flatten(n sqlparser.Expr, or bool) []sqlparser.Expr {
	switch e := n.(type) {
	case *sqlparser.AndExpr:
		if !or {
			return append(flatten(e.Left, or), flatten(e.Right, or)...)
		}
	case *sqlparser.OrExpr:
		if or {
			return append(flatten(e.Left, or), flatten(e.Right, or)...)
		}
	}
	return []sqlparser.Expr{n}
}

func intLiteral(n sqlparser.Expr) (int64, bool) {
	l, ok := n.(*sqlparser.Literal)
	if !ok || l.Type != sqlparser.IntVal {
		return 0, false
	}
	v, err := strconv.ParseInt(l.Val, 10, 64)
	return v, err == nil
}

func (x *exprBinder) literal(l *sqlparser.Literal) (bexpr, error) {
	p := x.p
	pos := p.loc.find(l)
	switch l.Type {
	case sqlparser.IntVal:
		v, err := strconv.ParseInt(l.Val, 10, 64)
		if err != nil {
			return bexpr{}, p.errAt(pos, "integer %s out of range", l.Val)
		}
		return bexpr{e: plan.Int(v), t: typ{k: kInt}, pos: pos}, nil
	case sqlparser.DecimalVal:
		v, scale, err := plan.ParseDecimal(l.Val)
		if err != nil || scale > 18 {
			return bexpr{}, p.errAt(pos, "decimal %s cannot be represented", l.Val)
		}
		return bexpr{e: plan.Lit{Kind: plan.LitDecimal, I: v, Scale: int8(scale)}, t: typ{k: kDecimal, scale: scale}, pos: pos}, nil
	case sqlparser.FloatVal:
		v, err := strconv.ParseFloat(l.Val, 64)
		if err != nil {
			return bexpr{}, p.errAt(pos, "number %s cannot be represented", l.Val)
		}
		return bexpr{e: plan.Float(v), t: typ{k: kFloat}, pos: pos}, nil
	case sqlparser.StrVal:
		return bexpr{e: plan.Str(l.Val), t: typ{k: kString}, pos: pos}, nil
	case sqlparser.DateVal:
		d, err := parseDate(l.Val)
		if err != nil {
			return bexpr{}, p.errAt(pos, "date '%s' is not a date (want YYYY-MM-DD)", l.Val)
		}
		return bexpr{e: plan.Lit{Kind: plan.LitDate, I: d}, t: typ{k: kDate}, pos: pos}, nil
	}
	return bexpr{}, p.errAt(pos, "literal %s is not supported", sqlparser.String(l))
}

func parseDate(s string) (int64, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, err
	}
	return t.Unix() / 86400, nil
}

// bindAs binds n, reading a string literal compared with a date as a
// date (SQL's implicit cast, how l_shipdate >= '1994-01-01' reads).
func (x *exprBinder) bindAs(n sqlparser.Expr, other bexpr) (bexpr, error) {
	b, err := x.bind(n)
	if err != nil {
		return b, err
	}
	return x.p.coerce(b, other)
}

// coerce reads a string literal b compared with a date as a date.
func (p *planner) coerce(b, other bexpr) (bexpr, error) {
	if other.t.k == kDate && b.t.k == kString {
		if l, ok := b.e.(plan.Lit); ok {
			d, err := parseDate(l.S)
			if err != nil {
				return b, p.errAt(b.pos, "cannot compare a date with text %s, which is not a date", l)
			}
			return bexpr{e: plan.Lit{Kind: plan.LitDate, I: d}, t: typ{k: kDate}, pos: b.pos}, nil
		}
	}
	return b, nil
}

func (x *exprBinder) comparison(e *sqlparser.ComparisonExpr) (bexpr, error) {
	p := x.p
	a, err := x.bind(e.Left)
	if err != nil {
		return bexpr{}, err
	}
	switch e.Operator {
	case sqlparser.InOp, sqlparser.NotInOp:
		tuple, ok := e.Right.(sqlparser.ValTuple)
		if !ok {
			return bexpr{}, p.errNode(e.Right, "IN needs a list of literals or a subquery")
		}
		args := []plan.Expr{a.e}
		for _, item := range tuple {
			b, err := x.bindAs(item, a)
			if err != nil {
				return bexpr{}, err
			}
			l, ok := b.e.(plan.Lit)
			if !ok {
				return bexpr{}, p.errAt(b.pos, "IN lists take literals only")
			}
			if !comparable(a.t, b.t) {
				return bexpr{}, p.errAt(b.pos, "IN compares %s with %s", a.t, b.t)
			}
			args = append(args, l)
		}
		fn := plan.FnIn
		if e.Operator == sqlparser.NotInOp {
			fn = plan.FnNotIn
		}
		return bexpr{e: plan.Call{Fn: fn, Args: args}, t: typ{k: kBool}, pos: a.pos}, nil
	case sqlparser.LikeOp, sqlparser.NotLikeOp:
		b, err := x.bind(e.Right)
		if err != nil {
			return bexpr{}, err
		}
		l, ok := b.e.(plan.Lit)
		if !ok || l.Kind != plan.LitString || a.t.k != kString {
			return bexpr{}, p.errAt(a.pos, "LIKE matches text with a string literal pattern, not %s with %s", a.t, b.t)
		}
		if e.Escape != nil {
			return bexpr{}, p.errNode(e.Escape, "LIKE ... ESCAPE is not supported")
		}
		if e.Operator == sqlparser.LikeOp {
			return bexpr{e: plan.Like(a.e, l.S), t: typ{k: kBool}, pos: a.pos}, nil
		}
		return bexpr{e: plan.NotLike(a.e, l.S), t: typ{k: kBool}, pos: a.pos}, nil
	}
	fn, ok := map[sqlparser.ComparisonExprOperator]plan.Fn{
		sqlparser.EqualOp: plan.FnEq, sqlparser.NotEqualOp: plan.FnNe, sqlparser.LessThanOp: plan.FnLt,
		sqlparser.LessEqualOp: plan.FnLe, sqlparser.GreaterThanOp: plan.FnGt, sqlparser.GreaterEqualOp: plan.FnGe,
	}[e.Operator]
	if !ok || e.Modifier != sqlparser.Missing {
		return bexpr{}, p.errNode(e, "comparison %s is not supported", e.Operator.ToString())
	}
	b, err := x.bindAs(e.Right, a)
	if err != nil {
		return bexpr{}, err
	}
	if a, err = p.coerce(a, b); err != nil {
		return bexpr{}, err
	}
	if !comparable(a.t, b.t) {
		return bexpr{}, p.errAt(a.pos, "cannot compare %s with %s", a.t, b.t)
	}
	return bexpr{e: plan.Call{Fn: fn, Args: []plan.Expr{a.e, b.e}}, t: typ{k: kBool}, pos: a.pos}, nil
}

func (x *exprBinder) caseExpr(e *sqlparser.CaseExpr) (bexpr, error) {
	p := x.p
	pos := p.loc.find(e)
	if e.Expr != nil {
		return bexpr{}, p.errAt(pos, "CASE <value> WHEN is not supported: write CASE WHEN <condition>")
	}
	if e.Else == nil {
		return bexpr{}, p.errAt(pos, "CASE needs an ELSE: the engine has no NULLs")
	}
	type branch struct{ cond, val bexpr }
	var bs []branch
	for _, w := range e.Whens {
		c, err := x.bind(w.Cond)
		if err != nil {
			return bexpr{}, err
		}
		if c.t.k != kBool {
			return bexpr{}, p.errAt(c.pos, "CASE WHEN of a %s, want a condition", c.t)
		}
		v, err := x.bind(w.Val)
		if err != nil {
			return bexpr{}, err
		}
		bs = append(bs, branch{c, v})
	}
	els, err := x.bind(e.Else)
	if err != nil {
		return bexpr{}, err
	}
	// One result type: a CASE's branches must agree; integer literals
	// become decimals of the widest decimal branch. Numbers of different
	// types meet as the engine's CASE joins them (and as SQL does): ints
	// and decimals at the largest scale, any float makes it a float.
	t := els.t
	for _, b := range bs {
		if b.val.t.k == kDecimal && (t.k != kDecimal || b.val.t.scale > t.scale) {
			t = b.val.t
		}
	}
	float, numbers := false, els.t.numeric()
	for _, b := range bs {
		float = float || b.val.t.k == kFloat
		numbers = numbers && b.val.t.numeric()
	}
	if float = float || els.t.k == kFloat; float && numbers {
		t = typ{k: kFloat}
	}
	fit := func(v bexpr) (bexpr, error) {
		if v.t == t {
			return v, nil
		}
		if t.k == kFloat && v.t.numeric() || t.k == kDecimal && v.t.integer() && !isLit(v.e) ||
			t.k == kDecimal && v.t.k == kDecimal && v.t.scale <= t.scale && !isLit(v.e) {
			return v, nil
		}
		if l, ok := v.e.(plan.Lit); ok && t.k == kDecimal && (l.Kind == plan.LitInt || l.Kind == plan.LitDecimal) {
			s := 0
			if l.Kind == plan.LitDecimal {
				s = int(l.Scale)
			}
			i := l.I
			for ; s < t.scale; s++ {
				i *= 10
			}
			return bexpr{e: plan.Lit{Kind: plan.LitDecimal, I: i, Scale: int8(t.scale)}, t: t, pos: v.pos}, nil
		}
		if v.t.k == kInt32 && t.k == kInt || v.t.k == kInt && t.k == kInt32 {
			return v, nil
		}
		return v, p.errAt(v.pos, "CASE branches differ in type: %s and %s", v.t, t)
	}
	out, err := fit(els)
	if err != nil {
		return bexpr{}, err
	}
	for i := len(bs) - 1; i >= 0; i-- {
		v, err := fit(bs[i].val)
		if err != nil {
			return bexpr{}, err
		}
		out = bexpr{e: plan.Case(bs[i].cond.e, v.e, out.e), t: t, pos: pos}
	}
	out.pos = pos
	return out, nil
}

// dateArith folds date 'D' +/- interval 'N' unit at plan time.
func (x *exprBinder) dateArith(e *sqlparser.IntervalDateExpr) (bexpr, error) {
	p := x.p
	pos := p.loc.find(e)
	d, err := x.bind(e.Date)
	if err != nil {
		return bexpr{}, err
	}
	l, ok := d.e.(plan.Lit)
	if !ok || l.Kind != plan.LitDate {
		return bexpr{}, p.errAt(pos, "interval arithmetic is supported on date literals only")
	}
	var n int64
	switch iv := e.Interval.(type) {
	case *sqlparser.Literal:
		v, err := strconv.ParseInt(strings.TrimSpace(iv.Val), 10, 64)
		if err != nil {
			return bexpr{}, p.errAt(pos, "interval %q is not a whole number", iv.Val)
		}
		n = v
	default:
		return bexpr{}, p.errAt(pos, "interval needs a literal count")
	}
	switch e.Syntax {
	case sqlparser.IntervalDateExprBinarySub, sqlparser.IntervalDateExprDateSub, sqlparser.IntervalDateExprSubdate:
		n = -n
	case sqlparser.IntervalDateExprBinaryAdd, sqlparser.IntervalDateExprBinaryAddLeft, sqlparser.IntervalDateExprDateAdd, sqlparser.IntervalDateExprAdddate:
	default:
		return bexpr{}, p.errAt(pos, "interval arithmetic %s is not supported", sqlparser.String(e))
	}
	if n > 1e6 || n < -1e6 {
		return bexpr{}, p.errAt(pos, "interval %d out of range", n)
	}
	t := time.Unix(l.I*86400, 0).UTC()
	switch e.Unit {
	case datetime.IntervalDay:
		t = t.AddDate(0, 0, int(n))
	case datetime.IntervalMonth:
		t = t.AddDate(0, int(n), 0)
	case datetime.IntervalYear:
		t = t.AddDate(int(n), 0, 0)
	default:
		return bexpr{}, p.errAt(pos, "interval unit %s is not supported (day, month, year)", e.Unit.ToString())
	}
	return bexpr{e: plan.Lit{Kind: plan.LitDate, I: t.Unix() / 86400}, t: typ{k: kDate}, pos: pos}, nil
}

// aggregate binds an aggregate call into a column of the aggregation's
// output.
func (x *exprBinder) aggregate(n sqlparser.Expr) (bexpr, error) {
	p := x.p
	pos := p.loc.find(n)
	if x.agg == nil {
		return bexpr{}, p.errAt(pos, "aggregate %s is not allowed here", sqlparser.String(n))
	}
	inner := &exprBinder{p: p, sc: x.sc}
	var fn plan.AggFn
	var arg sqlparser.Expr
	distinct := false
	switch e := n.(type) {
	case *sqlparser.Sum:
		fn, arg, distinct = plan.AggSum, e.Arg, e.Distinct
	case *sqlparser.Avg:
		fn, arg, distinct = plan.AggAvg, e.Arg, e.Distinct
	case *sqlparser.Min:
		fn, arg = plan.AggMin, e.Arg
	case *sqlparser.Max:
		fn, arg = plan.AggMax, e.Arg
	case *sqlparser.CountStar:
		fn = plan.AggCount
	case *sqlparser.Count:
		fn, distinct = plan.AggCount, e.Distinct
		if len(e.Args) != 1 {
			return bexpr{}, p.errAt(pos, "count takes one argument")
		}
		arg = e.Args[0]
	}
	var a bexpr
	if arg != nil {
		var err error
		if a, err = inner.bind(arg); err != nil {
			return bexpr{}, err
		}
	}
	t := a.t
	switch fn {
	case plan.AggSum, plan.AggAvg:
		if !a.t.numeric() {
			return bexpr{}, p.errAt(a.pos, "%s of a %s, want a number", fn, a.t)
		}
		if fn == plan.AggAvg {
			t = typ{k: kFloat}
		} else if a.t.k == kInt32 {
			t = typ{k: kInt}
		}
	case plan.AggCount:
		t = typ{k: kInt}
	case plan.AggMin, plan.AggMax:
		if a.t.k == kBool {
			return bexpr{}, p.errAt(a.pos, "%s of a condition", fn)
		}
	}
	if distinct {
		if fn != plan.AggCount {
			return bexpr{}, p.errAt(pos, "%s(DISTINCT ...) is not supported (count(DISTINCT x) is)", fn)
		}
		return x.agg.countDistinct(a, pos)
	}
	agg := plan.Agg{Fn: fn, As: ""}
	if arg != nil {
		agg.Arg = a.e
	}
	key := agg.String()
	if name, ok := x.agg.seen[key]; ok {
		return bexpr{e: plan.Col(name), t: t, pos: pos}, nil
	}
	c := p.addColumn(fn.String(), t, nil)
	c.agg = &aggStat{fn: fn}
	if ac, ok := agg.Arg.(plan.Col); ok {
		c.agg.arg = string(ac)
	}
	agg.As = c.name
	x.agg.seen[key] = c.name
	x.agg.blk.aggs = append(x.agg.blk.aggs, agg)
	return bexpr{e: plan.Col(c.name), t: t, pos: pos}, nil
}

// countDistinct records count(DISTINCT a), once per argument.
func (g *aggCtx) countDistinct(a bexpr, pos int) (bexpr, error) {
	p := g.p
	for _, cd := range g.blk.countDistincts {
		if cd.arg.e.String() == a.e.String() {
			return bexpr{e: plan.Col(cd.as), t: typ{k: kInt}, pos: pos}, nil
		}
	}
	c := p.addColumn("count", typ{k: kInt}, nil)
	g.blk.countDistincts = append(g.blk.countDistincts, &distinctCount{arg: a, as: c.name})
	return bexpr{e: plan.Col(c.name), t: typ{k: kInt}, pos: pos}, nil
}

// isLit reports whether e is a literal (CASE rescales literals itself).
func isLit(e plan.Expr) bool {
	_, ok := e.(plan.Lit)
	return ok
}
