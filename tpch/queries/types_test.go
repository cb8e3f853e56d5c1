package queries

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// This file types and evaluates the plan package's expression trees the
// way docs/design.md and plan/expr.go describe, independently of the
// engine: the static checker (check_test.go) uses the typing, the
// reference interpreter (interp_test.go) the evaluation.

// kind is the logical type of a column.
type kind uint8

const (
	kInt   kind = iota + 1 // int64 or int32 (typ.bits)
	kDate                  // days since 1970-01-01
	kDec                   // int64 scaled by 10^typ.scale
	kFloat                 // float64
	kStr                   // string
	kBool                  // predicate result
)

// typ is a column type. An integer literal has bits 0: it adapts to the
// integer column it meets.
type typ struct {
	k     kind
	scale int8 // kDec
	bits  int8 // kInt: 64, 32, or 0 for a literal
}

func (t typ) String() string {
	switch t.k {
	case kInt:
		if t.bits == 0 {
			return "int literal"
		}
		return fmt.Sprintf("int%d", t.bits)
	case kDate:
		return "date"
	case kDec:
		return fmt.Sprintf("decimal(%d)", t.scale)
	case kFloat:
		return "float64"
	case kStr:
		return "string"
	case kBool:
		return "bool"
	}
	return "invalid"
}

var (
	tInt64 = typ{k: kInt, bits: 64}
	tFloat = typ{k: kFloat}
	tBool  = typ{k: kBool}
	tStr   = typ{k: kStr}
	tDate  = typ{k: kDate}
)

// norm turns an integer literal's type into int64 (a computed column).
func (t typ) norm() typ {
	if t.k == kInt && t.bits == 0 {
		return tInt64
	}
	return t
}

func isNum(t typ) bool { return t.k == kInt || t.k == kDec || t.k == kFloat }

// comparable reports whether values of a and b can be compared.
func comparable(a, b typ) bool {
	if isNum(a) && isNum(b) {
		return true
	}
	return a.k == b.k && (a.k == kDate || a.k == kStr)
}

// sameType is the strict equality join keys, shuffle keys and unioned
// inputs need (a literal matches any integer width).
func sameType(a, b typ) bool {
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kDec:
		return a.scale == b.scale
	case kInt:
		return a.bits == b.bits || a.bits == 0 || b.bits == 0
	}
	return true
}

func schemaType(c schema.Column) typ {
	switch c.Type {
	case schema.Int64:
		return tInt64
	case schema.Int32:
		return typ{k: kInt, bits: 32}
	case schema.Decimal:
		return typ{k: kDec, scale: 2}
	case schema.Date:
		return tDate
	}
	return tStr
}

// value is one cell: i for integers, dates, decimals (scaled) and bools,
// f for floats, s for strings.
type value struct {
	i int64
	f float64
	s string
}

func pow10(n int8) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

func scaleOf(t typ) int8 {
	if t.k == kDec {
		return t.scale
	}
	return 0
}

func toFloat(v value, t typ) float64 {
	switch t.k {
	case kFloat:
		return v.f
	case kDec:
		return float64(v.i) / float64(pow10(t.scale))
	}
	return float64(v.i)
}

// cmpValues orders a (of type ta) and b (of type tb); the types must be
// comparable.
func cmpValues(a value, ta typ, b value, tb typ) int {
	switch {
	case ta.k == kStr:
		return strings.Compare(a.s, b.s)
	case ta.k == kFloat || tb.k == kFloat:
		x, y := toFloat(a, ta), toFloat(b, tb)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	x, y := a.i, b.i
	if sa, sb := scaleOf(ta), scaleOf(tb); sa < sb {
		x *= pow10(sb - sa)
	} else if sb < sa {
		y *= pow10(sa - sb)
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// evaluator computes an expression over one row.
type evaluator func(row []value) value

// column is a named, typed column of a batch.
type column struct {
	name string
	t    typ
}

// cols is a batch's schema.
type cols []column

func (s cols) index(name string) int {
	for i, c := range s {
		if c.name == name {
			return i
		}
	}
	return -1
}

func (s cols) names() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.name
	}
	return out
}

// find resolves names to indices, failing on an unknown one.
func (s cols) find(what string, names []string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		j := s.index(n)
		if j < 0 {
			return nil, fmt.Errorf("%s: unknown column %q (have %s)", what, n, strings.Join(s.names(), ", "))
		}
		out[i] = j
	}
	return out, nil
}

// unique fails on a repeated column name.
func (s cols) unique() error {
	seen := map[string]bool{}
	for _, c := range s {
		if seen[c.name] {
			return fmt.Errorf("duplicate column %q in (%s)", c.name, strings.Join(s.names(), ", "))
		}
		seen[c.name] = true
	}
	return nil
}

// compileExpr types e over schema s and returns its evaluator.
func compileExpr(e plan.Expr, s cols) (evaluator, typ, error) {
	switch x := e.(type) {
	case plan.Col:
		i := s.index(string(x))
		if i < 0 {
			return nil, typ{}, fmt.Errorf("unknown column %q (have %s)", string(x), strings.Join(s.names(), ", "))
		}
		return func(r []value) value { return r[i] }, s[i].t, nil
	case plan.Lit:
		v, t, err := litValue(x)
		if err != nil {
			return nil, typ{}, err
		}
		return func([]value) value { return v }, t, nil
	case plan.Call:
		return compileCall(x, s)
	}
	return nil, typ{}, fmt.Errorf("%T %q is not a scalar expression", e, e)
}

func litValue(l plan.Lit) (value, typ, error) {
	switch l.Kind {
	case plan.LitInt:
		return value{i: l.I}, typ{k: kInt}, nil
	case plan.LitDecimal:
		return value{i: l.I}, typ{k: kDec, scale: l.Scale}, nil
	case plan.LitDate:
		return value{i: l.I}, tDate, nil
	case plan.LitString:
		return value{s: l.S}, tStr, nil
	case plan.LitFloat:
		return value{f: l.F}, tFloat, nil
	}
	return value{}, typ{}, fmt.Errorf("literal of unknown kind %d", l.Kind)
}

func compileCall(c plan.Call, s cols) (evaluator, typ, error) {
	arity := map[plan.Fn]int{plan.FnNot: 1, plan.FnEq: 2, plan.FnNe: 2, plan.FnLt: 2, plan.FnLe: 2, plan.FnGt: 2,
		plan.FnGe: 2, plan.FnAdd: 2, plan.FnSub: 2, plan.FnMul: 2, plan.FnDiv: 2, plan.FnBetween: 3,
		plan.FnLike: 2, plan.FnNotLike: 2, plan.FnSubstr: 3, plan.FnYear: 1, plan.FnCase: 3}
	if n, ok := arity[c.Fn]; ok && len(c.Args) != n {
		return nil, typ{}, fmt.Errorf("%s takes %d arguments, has %d", c.Fn, n, len(c.Args))
	}
	if len(c.Args) == 0 {
		return nil, typ{}, fmt.Errorf("%s without arguments", c.Fn)
	}
	args := make([]evaluator, len(c.Args))
	ts := make([]typ, len(c.Args))
	for i, a := range c.Args {
		if (c.Fn == plan.FnIn || c.Fn == plan.FnNotIn || c.Fn == plan.FnLike || c.Fn == plan.FnNotLike || c.Fn == plan.FnSubstr) && i > 0 {
			if _, ok := a.(plan.Lit); !ok {
				return nil, typ{}, fmt.Errorf("%s: argument %d must be a literal, is %s", c.Fn, i+1, a)
			}
		}
		var err error
		if args[i], ts[i], err = compileExpr(a, s); err != nil {
			return nil, typ{}, err
		}
	}
	bad := func() (evaluator, typ, error) {
		return nil, typ{}, fmt.Errorf("%s: bad argument types %v in %s", c.Fn, ts, c)
	}
	b2i := func(b bool) value {
		if b {
			return value{i: 1}
		}
		return value{}
	}
	switch c.Fn {
	case plan.FnAnd, plan.FnOr:
		for _, t := range ts {
			if t.k != kBool {
				return bad()
			}
		}
		and := c.Fn == plan.FnAnd
		return func(r []value) value {
			for _, a := range args {
				if (a(r).i != 0) != and {
					return b2i(!and)
				}
			}
			return b2i(and)
		}, tBool, nil
	case plan.FnNot:
		if ts[0].k != kBool {
			return bad()
		}
		return func(r []value) value { return b2i(args[0](r).i == 0) }, tBool, nil
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
		if !comparable(ts[0], ts[1]) {
			return bad()
		}
		test := map[plan.Fn]func(int) bool{
			plan.FnEq: func(c int) bool { return c == 0 }, plan.FnNe: func(c int) bool { return c != 0 },
			plan.FnLt: func(c int) bool { return c < 0 }, plan.FnLe: func(c int) bool { return c <= 0 },
			plan.FnGt: func(c int) bool { return c > 0 }, plan.FnGe: func(c int) bool { return c >= 0 },
		}[c.Fn]
		a, b, ta, tb := args[0], args[1], ts[0], ts[1]
		return func(r []value) value { return b2i(test(cmpValues(a(r), ta, b(r), tb))) }, tBool, nil
	case plan.FnBetween:
		if !comparable(ts[0], ts[1]) || !comparable(ts[0], ts[2]) {
			return bad()
		}
		return func(r []value) value {
			v := args[0](r)
			return b2i(cmpValues(v, ts[0], args[1](r), ts[1]) >= 0 && cmpValues(v, ts[0], args[2](r), ts[2]) <= 0)
		}, tBool, nil
	case plan.FnIn, plan.FnNotIn:
		for _, t := range ts[1:] {
			if !comparable(ts[0], t) {
				return bad()
			}
		}
		in := c.Fn == plan.FnIn
		return func(r []value) value {
			v := args[0](r)
			for i, a := range args[1:] {
				if cmpValues(v, ts[0], a(r), ts[i+1]) == 0 {
					return b2i(in)
				}
			}
			return b2i(!in)
		}, tBool, nil
	case plan.FnAdd, plan.FnSub, plan.FnMul, plan.FnDiv:
		ta, tb := ts[0], ts[1]
		if !isNum(ta) || !isNum(tb) {
			return bad()
		}
		a, b := args[0], args[1]
		if c.Fn == plan.FnDiv || ta.k == kFloat || tb.k == kFloat {
			op := map[plan.Fn]func(x, y float64) float64{
				plan.FnAdd: func(x, y float64) float64 { return x + y }, plan.FnSub: func(x, y float64) float64 { return x - y },
				plan.FnMul: func(x, y float64) float64 { return x * y }, plan.FnDiv: func(x, y float64) float64 { return x / y },
			}[c.Fn]
			return func(r []value) value { return value{f: op(toFloat(a(r), ta), toFloat(b(r), tb))} }, tFloat, nil
		}
		dec := ta.k == kDec || tb.k == kDec
		sa, sb := scaleOf(ta), scaleOf(tb)
		if c.Fn == plan.FnMul {
			out := tInt64
			if dec {
				out = typ{k: kDec, scale: sa + sb}
			}
			return func(r []value) value { return value{i: a(r).i * b(r).i} }, out, nil
		}
		sc := max(sa, sb)
		fa, fb := pow10(sc-sa), pow10(sc-sb)
		out := tInt64
		if dec {
			out = typ{k: kDec, scale: sc}
		}
		if c.Fn == plan.FnAdd {
			return func(r []value) value { return value{i: a(r).i*fa + b(r).i*fb} }, out, nil
		}
		return func(r []value) value { return value{i: a(r).i*fa - b(r).i*fb} }, out, nil
	case plan.FnLike, plan.FnNotLike:
		if ts[0].k != kStr || ts[1].k != kStr {
			return bad()
		}
		pat := c.Args[1].(plan.Lit).S
		want := c.Fn == plan.FnLike
		return func(r []value) value { return b2i(like(args[0](r).s, pat) == want) }, tBool, nil
	case plan.FnSubstr:
		if ts[0].k != kStr || ts[1].k != kInt || ts[2].k != kInt {
			return bad()
		}
		start, n := c.Args[1].(plan.Lit).I, c.Args[2].(plan.Lit).I
		return func(r []value) value { return value{s: substr(args[0](r).s, start, n)} }, tStr, nil
	case plan.FnYear:
		if ts[0].k != kDate {
			return bad()
		}
		return func(r []value) value {
			return value{i: int64(time.Unix(args[0](r).i*86400, 0).UTC().Year())}
		}, tInt64, nil
	case plan.FnCase:
		if ts[0].k != kBool || !sameType(ts[1], ts[2]) {
			return bad()
		}
		out := ts[1]
		if out.k == kInt && out.bits == 0 {
			out = ts[2]
		}
		return func(r []value) value {
			if args[0](r).i != 0 {
				return args[1](r)
			}
			return args[2](r)
		}, out, nil
	}
	return nil, typ{}, fmt.Errorf("unknown function %s", c.Fn)
}

// like matches SQL LIKE on bytes: '%' any run, '_' one byte.
func like(s, p string) bool {
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '%':
			star, mark = pi, si
			pi++
		case pi < len(p) && (p[pi] == '_' || p[pi] == s[si]):
			si++
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

// substr is SQL substring(s from start for n), start 1-based.
func substr(s string, start, n int64) string {
	from, to := start-1, start-1+n
	from, to = max(from, 0), min(to, int64(len(s)))
	if from >= to {
		return ""
	}
	return s[from:to]
}

// format renders a result cell as the engine does (cpu.Vec.Format):
// decimals and floats to 2 places, dates YYYY-MM-DD.
func format(v value, t typ) string {
	switch t.k {
	case kDate:
		return plan.FormatDate(v.i)
	case kDec:
		return plan.FormatDecimal(v.i, int(t.scale), 2)
	case kFloat:
		return strconv.FormatFloat(v.f, 'f', 2, 64)
	case kStr:
		return v.s
	case kBool:
		return strconv.FormatBool(v.i != 0)
	}
	return strconv.FormatInt(v.i, 10)
}

// keyString encodes the values of columns idx of a row (for grouping,
// hash tables and shuffling: equal values give equal strings).
func keyString(r []value, idx []int, ts []typ) string {
	var sb strings.Builder
	for j, i := range idx {
		switch ts[j].k {
		case kStr:
			sb.WriteString(strconv.Itoa(len(r[i].s)))
			sb.WriteByte(':')
			sb.WriteString(r[i].s)
		case kFloat:
			sb.WriteString(strconv.FormatUint(math.Float64bits(r[i].f), 16))
		default:
			sb.WriteString(strconv.FormatInt(r[i].i, 10))
		}
		sb.WriteByte('|')
	}
	return sb.String()
}

// aggregate is a typed aggregate: its argument evaluator (Partial side),
// the types of its partial-state columns and of its final column.
type aggregate struct {
	a      plan.Agg
	arg    evaluator // nil for count(*)
	argT   typ
	states []typ
	out    typ
}

// compileAgg types aggregate a over the Partial's input schema s.
func compileAgg(a plan.Agg, s cols) (aggregate, error) {
	g := aggregate{a: a}
	if a.Arg != nil {
		var err error
		if g.arg, g.argT, err = compileExpr(a.Arg, s); err != nil {
			return g, fmt.Errorf("aggregate %s: %w", a, err)
		}
	}
	switch a.Fn {
	case plan.AggCount:
		g.out = tInt64
		g.states = []typ{tInt64}
	case plan.AggSum, plan.AggAvg:
		if a.Arg == nil || !isNum(g.argT) {
			return g, fmt.Errorf("aggregate %s over a %v", a, g.argT)
		}
		g.out = g.argT.norm()
		g.states = []typ{g.out}
		if a.Fn == plan.AggAvg {
			g.states = append(g.states, tInt64)
			g.out = tFloat
		}
	case plan.AggMin, plan.AggMax:
		if a.Arg == nil || !(isNum(g.argT) || g.argT.k == kDate || g.argT.k == kStr) {
			return g, fmt.Errorf("aggregate %s over a %v", a, g.argT)
		}
		g.out = g.argT.norm()
		g.states = []typ{g.out}
	default:
		return g, fmt.Errorf("unknown aggregate function %d", a.Fn)
	}
	return g, nil
}

// accumulator folds one aggregate's values for one group.
type accumulator struct {
	sum  value // sum (int or float by type), or min/max
	n    int64
	seen bool
}

// add folds a raw argument value (Partial) of aggregate g.
func (acc *accumulator) add(g *aggregate, row []value) {
	switch g.a.Fn {
	case plan.AggCount:
		acc.n++
	case plan.AggSum, plan.AggAvg:
		v := g.arg(row)
		if g.states[0].k == kFloat {
			acc.sum.f += toFloat(v, g.argT)
		} else {
			acc.sum.i += v.i
		}
		acc.n++
	case plan.AggMin, plan.AggMax:
		acc.minmax(g, g.arg(row), g.out)
	}
}

func (acc *accumulator) minmax(g *aggregate, v value, t typ) {
	if !acc.seen {
		acc.sum, acc.seen = v, true
		return
	}
	c := cmpValues(v, t, acc.sum, t)
	if (g.a.Fn == plan.AggMin && c < 0) || (g.a.Fn == plan.AggMax && c > 0) {
		acc.sum = v
	}
}

// merge folds partial-state values (Final) of aggregate g.
func (acc *accumulator) merge(g *aggregate, st []value) {
	switch g.a.Fn {
	case plan.AggCount:
		acc.n += st[0].i
	case plan.AggSum, plan.AggAvg:
		if g.states[0].k == kFloat {
			acc.sum.f += st[0].f
		} else {
			acc.sum.i += st[0].i
		}
		if g.a.Fn == plan.AggAvg {
			acc.n += st[1].i
		}
	case plan.AggMin, plan.AggMax:
		acc.minmax(g, st[0], g.out)
	}
}

// partial is the partial state (an empty min/max emits its zero value: a
// no-key Partial always yields one row, even on a device without input).
func (acc *accumulator) partial(g *aggregate) []value {
	switch g.a.Fn {
	case plan.AggCount:
		return []value{{i: acc.n}}
	case plan.AggAvg:
		return []value{acc.sum, {i: acc.n}}
	}
	return []value{acc.sum}
}

// final is the aggregate's result.
func (acc *accumulator) final(g *aggregate) value {
	switch g.a.Fn {
	case plan.AggCount:
		return value{i: acc.n}
	case plan.AggAvg:
		if acc.n == 0 {
			return value{}
		}
		return value{f: toFloat(acc.sum, g.states[0]) / float64(acc.n)}
	}
	return acc.sum
}
