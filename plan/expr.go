package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The expression tree below is what executable plans put in Op.Expr:
// predicates (Filter), named expression lists (Project), aggregate lists
// (AggPartial / AggFinal) and join specifications (HashProbe). It is pure
// data, typed only by the columns it names: the CPU kernels evaluate it
// vector at a time, a GPU backend compiles the same tree, and the scheduler
// and the simulator only print it.
//
// Typing rules the evaluators follow (TPC-H needs no more):
//   - integer columns are int64 or int32; dates are date32 (days since
//     1970-01-01); decimals are scaled int64 (Scale digits after the point;
//     stored TPC-H decimals have scale 2);
//   - + and - align decimal scales; * adds them (exact); / yields float64;
//     an integer operand of a decimal operation is a decimal of scale 0;
//   - comparisons align scales (a float operand compares as float64);
//   - string functions (Like, Substr, In over strings) work on bytes.

// Col is a reference to a column by name. Column names are unique within
// a batch (TPC-H column names are unique across tables; a query that needs
// a table twice renames with Project).
type Col string

func (c Col) String() string { return string(c) }

// LitKind is the type of a literal.
type LitKind uint8

const (
	LitInt     LitKind = iota + 1 // I
	LitDecimal                    // I x 10^-Scale
	LitDate                       // I days since 1970-01-01
	LitString                     // S
	LitFloat                      // F
)

// Lit is a constant.
type Lit struct {
	Kind  LitKind
	I     int64
	Scale int8
	F     float64
	S     string
}

func (l Lit) String() string {
	switch l.Kind {
	case LitInt:
		return strconv.FormatInt(l.I, 10)
	case LitDecimal:
		return FormatDecimal(l.I, int(l.Scale), int(l.Scale))
	case LitDate:
		return "date '" + FormatDate(l.I) + "'"
	case LitString:
		return "'" + strings.ReplaceAll(l.S, "'", "''") + "'"
	case LitFloat:
		return strconv.FormatFloat(l.F, 'g', -1, 64)
	}
	return "?"
}

// Int is an integer literal.
func Int(v int64) Lit { return Lit{Kind: LitInt, I: v} }

// Float is a float64 literal.
func Float(v float64) Lit { return Lit{Kind: LitFloat, F: v} }

// Str is a string literal.
func Str(s string) Lit { return Lit{Kind: LitString, S: s} }

// Dec is a decimal literal written in base 10 ("0.05", "-12.5", "100.00");
// its scale is the number of digits after the point. It panics on text that
// is not a decimal number (literals are written by programmers, in plans).
func Dec(s string) Lit {
	v, scale, err := ParseDecimal(s)
	if err != nil {
		panic(fmt.Sprintf("plan.Dec(%q): %v", s, err))
	}
	return Lit{Kind: LitDecimal, I: v, Scale: int8(scale)}
}

// Day is a date as date32: days since 1970-01-01.
func Day(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// Date is a date literal "YYYY-MM-DD". It panics on a malformed date.
func Date(s string) Lit {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(fmt.Sprintf("plan.Date(%q): %v", s, err))
	}
	return Lit{Kind: LitDate, I: t.Unix() / 86400}
}

// DateAdd is a date literal s plus years, months and days (the spec's
// "date 'D' + interval 'N' month", evaluated when the plan is built).
func DateAdd(s string, years, months, days int) Lit {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(fmt.Sprintf("plan.DateAdd(%q): %v", s, err))
	}
	return Lit{Kind: LitDate, I: t.AddDate(years, months, days).Unix() / 86400}
}

// ParseDecimal parses base-10 text into a scaled integer and its scale.
func ParseDecimal(s string) (v int64, scale int, err error) {
	t := s
	neg := strings.HasPrefix(t, "-")
	if neg {
		t = t[1:]
	}
	ip, fp, _ := strings.Cut(t, ".")
	if ip == "" && fp == "" || strings.ContainsAny(ip+fp, "+-") {
		return 0, 0, fmt.Errorf("not a decimal number")
	}
	if ip == "" {
		ip = "0"
	}
	u, err := strconv.ParseInt(ip+fp, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("not a decimal number: %w", err)
	}
	if neg {
		u = -u
	}
	return u, len(fp), nil
}

// FormatDecimal renders v x 10^-scale with places digits after the point,
// rounding half away from zero when places < scale.
func FormatDecimal(v int64, scale, places int) string {
	if scale > places {
		// Round once (rounding digit by digit would round 0.0046 up to 0.01).
		div := int64(1)
		for i := places; i < scale; i++ {
			div *= 10
		}
		q, r := v/div, v%div
		if r >= (div+1)/2 {
			q++
		} else if r <= -(div+1)/2 {
			q--
		}
		v, scale = q, places
	}
	for scale < places {
		v *= 10
		scale++
	}
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	digits := strconv.FormatUint(u, 10)
	if places > 0 {
		for len(digits) <= places {
			digits = "0" + digits
		}
		digits = digits[:len(digits)-places] + "." + digits[len(digits)-places:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// FormatDate renders date32 days as YYYY-MM-DD.
func FormatDate(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

// Fn is a scalar function of the expression tree.
type Fn uint8

const (
	FnInvalid Fn = iota
	FnAnd        // n-ary, booleans
	FnOr         // n-ary, booleans
	FnNot        // unary
	FnEq
	FnNe
	FnLt
	FnLe
	FnGt
	FnGe
	FnAdd
	FnSub
	FnMul
	FnDiv     // float64 result
	FnBetween // Args: value, lo, hi (inclusive)
	FnIn      // Args: value, literal, literal, ...
	FnNotIn
	FnLike    // Args: string value, LitString pattern ('%' any run, '_' one byte)
	FnNotLike //
	FnSubstr  // Args: string, LitInt start (1-based), LitInt length
	FnYear    // Args: date; int64 result
	FnCase    // Args: condition, then, else (same type)
	numFns
)

var fnNames = [...]string{FnInvalid: "?", FnAnd: "and", FnOr: "or", FnNot: "not", FnEq: "=", FnNe: "<>",
	FnLt: "<", FnLe: "<=", FnGt: ">", FnGe: ">=", FnAdd: "+", FnSub: "-", FnMul: "*", FnDiv: "/",
	FnBetween: "between", FnIn: "in", FnNotIn: "not in", FnLike: "like", FnNotLike: "not like",
	FnSubstr: "substring", FnYear: "extract year from", FnCase: "case"}

func (f Fn) String() string {
	if int(f) < len(fnNames) {
		return fnNames[f]
	}
	return fmt.Sprintf("Fn(%d)", uint8(f))
}

// Call applies a function to arguments.
type Call struct {
	Fn   Fn
	Args []Expr
}

func (c Call) String() string {
	a := c.Args
	switch c.Fn {
	case FnAnd, FnOr:
		parts := make([]string, len(a))
		for i, x := range a {
			parts[i] = x.String()
		}
		return "(" + strings.Join(parts, " "+c.Fn.String()+" ") + ")"
	case FnNot:
		return "not " + a[0].String()
	case FnBetween:
		return fmt.Sprintf("%s between %s and %s", a[0], a[1], a[2])
	case FnIn, FnNotIn:
		parts := make([]string, len(a)-1)
		for i, x := range a[1:] {
			parts[i] = x.String()
		}
		return fmt.Sprintf("%s %s (%s)", a[0], c.Fn, strings.Join(parts, ", "))
	case FnSubstr:
		return fmt.Sprintf("substring(%s from %s for %s)", a[0], a[1], a[2])
	case FnYear:
		return fmt.Sprintf("extract(year from %s)", a[0])
	case FnCase:
		return fmt.Sprintf("case when %s then %s else %s end", a[0], a[1], a[2])
	}
	if len(a) == 2 {
		return fmt.Sprintf("(%s %s %s)", a[0], c.Fn, a[1])
	}
	return fmt.Sprintf("%s%v", c.Fn, a)
}

func call(f Fn, args ...Expr) Call { return Call{Fn: f, Args: args} }

// And is the conjunction of preds.
func And(preds ...Expr) Call { return call(FnAnd, preds...) }

// Or is the disjunction of preds.
func Or(preds ...Expr) Call { return call(FnOr, preds...) }

// Not negates a predicate.
func Not(p Expr) Call { return call(FnNot, p) }

// Eq is a = b; Ne, Lt, Le, Gt and Ge likewise.
func Eq(a, b Expr) Call { return call(FnEq, a, b) }
func Ne(a, b Expr) Call { return call(FnNe, a, b) }
func Lt(a, b Expr) Call { return call(FnLt, a, b) }
func Le(a, b Expr) Call { return call(FnLe, a, b) }
func Gt(a, b Expr) Call { return call(FnGt, a, b) }
func Ge(a, b Expr) Call { return call(FnGe, a, b) }

// Add is a + b; Sub, Mul and Div likewise (Div yields float64).
func Add(a, b Expr) Call { return call(FnAdd, a, b) }
func Sub(a, b Expr) Call { return call(FnSub, a, b) }
func Mul(a, b Expr) Call { return call(FnMul, a, b) }
func Div(a, b Expr) Call { return call(FnDiv, a, b) }

// Between is lo <= v <= hi.
func Between(v, lo, hi Expr) Call { return call(FnBetween, v, lo, hi) }

// In is v in (list...), list of literals of v's type.
func In(v Expr, list ...Lit) Call { return call(FnIn, append([]Expr{v}, lits(list)...)...) }

// NotIn is v not in (list...).
func NotIn(v Expr, list ...Lit) Call { return call(FnNotIn, append([]Expr{v}, lits(list)...)...) }

// Strs is a list of string literals (for In).
func Strs(ss ...string) []Lit {
	out := make([]Lit, len(ss))
	for i, s := range ss {
		out[i] = Str(s)
	}
	return out
}

// Ints is a list of integer literals (for In).
func Ints(vs ...int64) []Lit {
	out := make([]Lit, len(vs))
	for i, v := range vs {
		out[i] = Int(v)
	}
	return out
}

func lits(l []Lit) []Expr {
	out := make([]Expr, len(l))
	for i := range l {
		out[i] = l[i]
	}
	return out
}

// Like is v LIKE pattern ('%': any run of bytes, '_': one byte).
func Like(v Expr, pattern string) Call { return call(FnLike, v, Str(pattern)) }

// NotLike is v NOT LIKE pattern.
func NotLike(v Expr, pattern string) Call { return call(FnNotLike, v, Str(pattern)) }

// Substr is substring(v from start for n), start 1-based.
func Substr(v Expr, start, n int64) Call { return call(FnSubstr, v, Int(start), Int(n)) }

// Year is extract(year from d).
func Year(d Expr) Call { return call(FnYear, d) }

// Case is case when cond then a else b end.
func Case(cond, a, b Expr) Call { return call(FnCase, cond, a, b) }

// Named is an output column: its name and the expression computing it.
type Named struct {
	Name string
	E    Expr
}

// As names an expression.
func As(name string, e Expr) Named { return Named{Name: name, E: e} }

// Keep passes input columns through under their own names.
func Keep(cols ...string) []Named {
	out := make([]Named, len(cols))
	for i, c := range cols {
		out[i] = Named{Name: c, E: Col(c)}
	}
	return out
}

// Projection is a Project op's Expr: exactly these output columns, in order.
type Projection []Named

func (p Projection) String() string {
	parts := make([]string, len(p))
	for i, n := range p {
		if c, ok := n.E.(Col); ok && string(c) == n.Name {
			parts[i] = n.Name
		} else {
			parts[i] = n.E.String() + " as " + n.Name
		}
	}
	return strings.Join(parts, ", ")
}

// Names returns the output column names.
func (p Projection) Names() []string {
	out := make([]string, len(p))
	for i, n := range p {
		out[i] = n.Name
	}
	return out
}

// AggFn is an aggregate function.
type AggFn uint8

const (
	AggSum   AggFn = iota + 1 // exact for integers and decimals
	AggCount                  // count(*) when Arg is nil, else count of rows (no nulls here)
	AggAvg                    // float64 of sum / count
	AggMin
	AggMax
)

var aggNames = [...]string{"?", "sum", "count", "avg", "min", "max"}

func (f AggFn) String() string {
	if int(f) < len(aggNames) {
		return aggNames[f]
	}
	return fmt.Sprintf("AggFn(%d)", uint8(f))
}

// Agg is one aggregate: Fn over Arg, output column As.
type Agg struct {
	Fn  AggFn
	Arg Expr
	As  string
}

func (a Agg) String() string {
	arg := "*"
	if a.Arg != nil {
		arg = a.Arg.String()
	}
	return fmt.Sprintf("%s(%s) as %s", a.Fn, arg, a.As)
}

// Sum, Count, Avg, Min and Max build aggregates (Count(as): count(*)).
func Sum(as string, e Expr) Agg { return Agg{Fn: AggSum, Arg: e, As: as} }
func Count(as string) Agg       { return Agg{Fn: AggCount, As: as} }
func Avg(as string, e Expr) Agg { return Agg{Fn: AggAvg, Arg: e, As: as} }
func Min(as string, e Expr) Agg { return Agg{Fn: AggMin, Arg: e, As: as} }
func Max(as string, e Expr) Agg { return Agg{Fn: AggMax, Arg: e, As: as} }

// Aggs is an aggregate op's Expr. AggPartial evaluates each Arg over its
// input rows and emits, per group, the keys then the partial state of each
// aggregate (see PartialColumns); AggFinal merges those partial states
// (from any number of partial aggregates) and emits the keys then one
// column per aggregate named As.
type Aggs []Agg

func (a Aggs) String() string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = x.String()
	}
	return strings.Join(parts, ", ")
}

// PartialColumns names the partial-state columns of aggregate a: avg keeps
// a sum and a count ("As$sum", "As$count"), the others one column "As".
func (a Agg) PartialColumns() []string {
	if a.Fn == AggAvg {
		return []string{a.As + "$sum", a.As + "$count"}
	}
	return []string{a.As}
}

// JoinKind is the kind of a hash join.
type JoinKind uint8

const (
	// JoinInner emits, for every probe row, one row per matching build row:
	// the probe columns, then the carried build columns (Op.Out).
	JoinInner JoinKind = iota + 1
	// JoinSemi emits each probe row that has a match, once.
	JoinSemi
	// JoinAnti emits each probe row that has no match.
	JoinAnti
	// JoinLeftOuter is JoinInner plus, for a probe row without a match, one
	// row whose carried build columns hold the zero value (0, "", 0.00):
	// TPC-H's one outer join (Q13) only counts matches, so zero stands in
	// for NULL.
	JoinLeftOuter
)

var joinNames = [...]string{"?", "inner", "semi", "anti", "left outer"}

func (k JoinKind) String() string {
	if int(k) < len(joinNames) {
		return joinNames[k]
	}
	return fmt.Sprintf("JoinKind(%d)", uint8(k))
}

// Join is a HashProbe op's Expr. The probe keys are Op.Keys, the build keys
// the build pipeline's HashBuild Keys (same count, pairwise equal types);
// no keys on either side is a cross join (every probe row matches every
// build row: how a scalar subquery's one-row result is joined). Carry
// (also Op.Out) names the build columns an inner or left outer join emits.
type Join struct {
	Kind  JoinKind
	Carry []string
}

func (j Join) String() string {
	if len(j.Carry) == 0 {
		return j.Kind.String() + " join"
	}
	return fmt.Sprintf("%s join carrying %s", j.Kind, strings.Join(j.Carry, ", "))
}

// SortKey is one key of a Sort or TopK op, written in Op.Keys as "col" or
// "col desc".
type SortKey struct {
	Col  string
	Desc bool
}

// ParseSortKeys is ParseSortKey of each of keys.
func ParseSortKeys(keys []string) []SortKey {
	out := make([]SortKey, len(keys))
	for i, k := range keys {
		out[i] = ParseSortKey(k)
	}
	return out
}

// ParseSortKey splits "col" / "col desc" / "col asc".
func ParseSortKey(s string) SortKey {
	f := strings.Fields(s)
	if len(f) == 2 && strings.EqualFold(f[1], "desc") {
		return SortKey{Col: f[0], Desc: true}
	}
	if len(f) >= 1 {
		return SortKey{Col: f[0]}
	}
	return SortKey{Col: s}
}

var (
	_ Expr = Col("")
	_ Expr = Lit{}
	_ Expr = Call{}
	_ Expr = Projection{}
	_ Expr = Aggs{}
	_ Expr = Join{}
)

// Terms is the per-row work of an operator beyond moving its rows, in
// expression terms: the cost model prices an operator at
// fixed + bytes/ByteRate + rows/RowRate + rows·Terms/TermRate, so one
// fitted rate serves filters, projections and aggregates of very different
// expressions. Counted: every column reference and function call of a
// filter, projection (not plain pass-through columns) or aggregate
// argument, one per aggregate, per hash / sort / partition key (and for
// an aggregate log2 of its estimated groups), and per
// carried build column of a join; literals are free, except the items of
// an IN list, one each (the kernels compare a row with every item). Scans,
// exchanges of whole batches and results count 0.
func (op *Op) Terms() float64 {
	n := op.sumExprs(exprTerms)
	switch op.Kind {
	case OpAggPartial, OpAggFinal:
		if a, ok := op.Expr.(Aggs); ok {
			n += float64(len(a))
		}
		n += float64(len(op.Keys))
		if op.Groups > 1 && len(op.Keys) > 0 {
			// A group table that outgrows the caches costs more per row:
			// one more term per doubling of the (estimated) groups.
			n += math.Log2(float64(op.Groups))
		}
	case OpHashProbe:
		n = float64(len(op.Keys))
		if j, ok := op.Expr.(Join); ok {
			n += float64(len(j.Carry))
		}
	case OpHashBuild, OpSort, OpTopK, OpShuffle:
		n = float64(len(op.Keys))
	}
	return n
}

// sumExprs sums f over the expressions an operator evaluates per row: a
// filter's predicate, a projection's computed columns (not plain
// pass-through ones) and a partial aggregate's arguments.
func (op *Op) sumExprs(f func(Expr) float64) float64 {
	n := 0.0
	switch op.Kind {
	case OpFilter:
		n = f(op.Expr)
	case OpProject:
		if p, ok := op.Expr.(Projection); ok {
			for _, c := range p {
				if col, ok := c.E.(Col); ok && string(col) == c.Name {
					continue
				}
				n += f(c.E)
			}
		}
	case OpAggPartial:
		if a, ok := op.Expr.(Aggs); ok {
			for _, g := range a {
				if g.Arg != nil {
					n += f(g.Arg)
				}
			}
		}
	}
	return n
}

// StrTerms is the part of Terms that works on strings: LIKE, NOT LIKE and
// SUBSTRING calls, comparisons with a string literal, and an IN list of
// strings one per item. Byte-wise matching costs a row several times a
// numeric comparison (the filter micro-benchmarks' fit: R² 0.26 with one
// rate for every term, 0.40 with a second one for these), so the cost
// model prices them with a rate of their own on top of the terms rate.
// Text keys and a probe's carried text columns (StrKeys) count one each.
func (op *Op) StrTerms() float64 { return op.sumExprs(exprStrTerms) + float64(op.StrKeys) }

func exprStrTerms(e Expr) float64 {
	c, ok := e.(Call)
	if !ok {
		return 0
	}
	n := 0.0
	str := c.Fn == FnLike || c.Fn == FnNotLike || c.Fn == FnSubstr
	for _, a := range c.Args {
		if l, ok := a.(Lit); ok && l.Kind == LitString {
			str = true
		}
		n += exprStrTerms(a)
	}
	if str {
		n++
		if c.Fn == FnIn || c.Fn == FnNotIn {
			n += float64(len(c.Args) - 2)
		}
	}
	return n
}

func exprTerms(e Expr) float64 {
	switch x := e.(type) {
	case Col:
		return 1
	case Call:
		n := 1.0
		for i, a := range x.Args {
			if i > 0 && (x.Fn == FnIn || x.Fn == FnNotIn) {
				n++ // one comparison per list item
			}
			n += exprTerms(a)
		}
		return n
	}
	return 0
}
