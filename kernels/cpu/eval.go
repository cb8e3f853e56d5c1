package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"gostachio/plan"
)

// Expression evaluation. The evaluator walks the plan.Expr tree once per
// batch and runs one vectorized kernel per node; no per-row interface call
// or allocation happens. Intermediate values are evVals: a full vector, or
// a constant held as a one-value vector (literals and their folds are never
// broadcast until a caller needs a real column). Predicates are evaluated by
// the selection machinery of filter.go (lists of row numbers) and turned
// into bool vectors only where a value is needed (Eval, case conditions).
//
// Typing (plan/expr.go's rules, made precise):
//   - int64 and int32 are "int", a decimal is an int64 with a scale, a date
//     is int32 days, float64 is "float";
//   - + and -: int op int = int64; int/decimal op decimal = decimal at the
//     larger scale (an int is a decimal of scale 0); date +/- int = date,
//     int + date = date, date - date = int64 days; any float operand makes
//     the result float64 (a decimal converts as value/10^scale);
//   - *: int * int = int64; with a decimal, decimal with the scales added
//     (at most 18); with a float, float64;
//   - /: float64 of any two numbers (x/0 gives ±Inf or NaN, as in Go);
//   - integer overflow of +, -, * or of aligning scales is an error;
//   - comparisons: int/decimal with int/decimal compare exactly by scaled
//     value, date with date or int by days, float with int/decimal/float as
//     float64, string with string bytewise; anything else (bool included)
//     is a type error;
//   - case: both branches of one type (decimal scales may differ: the larger
//     wins); int32 with int64 gives int64; int with decimal gives decimal;
//     int/decimal with float gives float64.

// Eval evaluates e (plan.Col, plan.Lit, plan.Call) over all rows of b and
// returns a vector of b.Rows values. A plan.Col returns the batch's own
// vector, which the caller must not modify; anything else returns a newly
// allocated vector. Predicates yield TBool. Errors (never panics) name an
// unknown column and the columns the batch has, or the expression whose
// operand types do not fit, or a bad argument count or literal.
func Eval(b *Batch, e plan.Expr) (Vec, error) {
	if b == nil {
		return Vec{}, errors.New("cpu: Eval over a nil batch")
	}
	x, err := evExpr(b, e)
	if err != nil {
		return Vec{}, err
	}
	if x.konst {
		return evBroadcast(&x.v, b.Rows), nil
	}
	return x.v, nil
}

// Project evaluates the named expressions of p over b and returns a batch
// of b.Rows rows with exactly those columns, in order. A plan.Col
// expression shares the input's vector (see Eval). Duplicate output names
// are an error, since names identify a batch's columns.
func Project(b *Batch, p plan.Projection) (*Batch, error) {
	if b == nil {
		return nil, errors.New("cpu: Project over a nil batch")
	}
	out := &Batch{Names: make([]string, len(p)), Cols: make([]Vec, len(p)), Rows: b.Rows}
	for i, nx := range p {
		for _, prev := range out.Names[:i] {
			if prev == nx.Name {
				return nil, fmt.Errorf("cpu: project %s: output column %q appears twice", p, nx.Name)
			}
		}
		v, err := Eval(b, nx.E)
		if err != nil {
			return nil, fmt.Errorf("cpu: project column %s: %w", nx.Name, err)
		}
		out.Names[i], out.Cols[i] = nx.Name, v
	}
	return out, nil
}

// evVal is an intermediate value: a vector of one value per row, or (konst)
// a constant stored as a one-value vector. owned marks a vector this
// evaluation allocated and nothing else references (not a batch column):
// its consumer may overwrite it, so that a chain like price*(1-disc)*(1+tax)
// allocates two vectors, not four.
type evVal struct {
	v     Vec
	konst bool
	owned bool
}

// evSame reports whether two slices share their first element.
func evSame[T any](a, b []T) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// evExpr evaluates e over b.
func evExpr(b *Batch, e plan.Expr) (evVal, error) {
	switch e := e.(type) {
	case plan.Col:
		v, err := evColumn(b, string(e))
		if err != nil {
			return evVal{}, err
		}
		return evVal{v: *v}, nil
	case plan.Lit:
		return evLit(e)
	case plan.Call:
		return evCall(b, e)
	case nil:
		return evVal{}, errors.New("cpu: nil expression")
	}
	return evVal{}, fmt.Errorf("cpu: cannot evaluate %T expression %s", e, e)
}

// evColumn returns the named column after checking its length against the
// batch (a malformed batch must give an error, not an index panic).
func evColumn(b *Batch, name string) (*Vec, error) {
	v, err := b.Column(name)
	if err != nil {
		return nil, err
	}
	return v, evCheckVec(b, name, v)
}

// evCheckVec checks, in constant time, that column v of b fits the batch.
func evCheckVec(b *Batch, name string, v *Vec) error {
	if n := v.Len(); n != b.Rows {
		return fmt.Errorf("cpu: column %s has %d values, batch %d rows", name, n, b.Rows)
	}
	if v.Type == TString && b.Rows > 0 && (v.Off[0] != 0 || int(v.Off[b.Rows]) != len(v.Str)) {
		return fmt.Errorf("cpu: column %s: string offsets do not span its %d bytes", name, len(v.Str))
	}
	if v.Type == TInvalid || v.Type > TBool {
		return fmt.Errorf("cpu: column %s has invalid type %s", name, v.Type)
	}
	if v.Type == TDecimal && (v.Scale < 0 || v.Scale > evMaxScale) {
		return fmt.Errorf("cpu: column %s has decimal scale %d outside 0..%d", name, v.Scale, evMaxScale)
	}
	return nil
}

// evLit turns a literal into a constant.
func evLit(l plan.Lit) (evVal, error) {
	var v Vec
	switch l.Kind {
	case plan.LitInt:
		v = Vec{Type: TInt64, I64: []int64{l.I}}
	case plan.LitDecimal:
		if l.Scale < 0 || l.Scale > evMaxScale {
			return evVal{}, fmt.Errorf("cpu: literal %s: decimal scale %d outside 0..%d", l, l.Scale, evMaxScale)
		}
		v = Vec{Type: TDecimal, Scale: l.Scale, I64: []int64{l.I}}
	case plan.LitDate:
		if l.I < math.MinInt32 || l.I > math.MaxInt32 {
			return evVal{}, fmt.Errorf("cpu: date literal of %d days is out of the int32 range", l.I)
		}
		v = Vec{Type: TDate, I32: []int32{int32(l.I)}}
	case plan.LitString:
		v = Vec{Type: TString, Off: []int32{0, int32(len(l.S))}, Str: []byte(l.S)}
	case plan.LitFloat:
		v = Vec{Type: TFloat64, F64: []float64{l.F}}
	default:
		return evVal{}, fmt.Errorf("cpu: literal of unknown kind %d", l.Kind)
	}
	return evVal{v: v, konst: true}, nil
}

// evMaxScale is the largest decimal scale: 10^18 is the largest power of
// ten an int64 holds.
const evMaxScale = 18

var evPow10 = [evMaxScale + 1]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// evArity checks c's argument count (and that no argument is nil) before
// anything calls c.String(), which indexes the arguments.
func evArity(c plan.Call) error {
	lo, hi := 0, 0
	switch c.Fn {
	case plan.FnAnd, plan.FnOr:
		lo, hi = 1, math.MaxInt
	case plan.FnNot, plan.FnYear:
		lo, hi = 1, 1
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe,
		plan.FnAdd, plan.FnSub, plan.FnMul, plan.FnDiv, plan.FnLike, plan.FnNotLike:
		lo, hi = 2, 2
	case plan.FnBetween, plan.FnSubstr, plan.FnCase:
		lo, hi = 3, 3
	case plan.FnIn, plan.FnNotIn:
		lo, hi = 2, math.MaxInt
	default:
		return fmt.Errorf("cpu: unknown function %s in %s", c.Fn, evDescribe(c))
	}
	if len(c.Args) < lo || len(c.Args) > hi {
		want := fmt.Sprint(lo)
		switch {
		case hi == math.MaxInt:
			want = fmt.Sprintf("at least %d", lo)
		case hi != lo:
			want = fmt.Sprintf("%d to %d", lo, hi)
		}
		return fmt.Errorf("cpu: %s takes %s arguments, got %d: %s", c.Fn, want, len(c.Args), evDescribe(c))
	}
	for i, a := range c.Args {
		if a == nil {
			return fmt.Errorf("cpu: argument %d of %s is nil: %s", i+1, c.Fn, evDescribe(c))
		}
	}
	return nil
}

// evDescribe renders a call whose arguments may not fit its function.
func evDescribe(c plan.Call) string {
	parts := make([]string, len(c.Args))
	for i, a := range c.Args {
		if a == nil {
			parts[i] = "<nil>"
		} else {
			parts[i] = a.String()
		}
	}
	return fmt.Sprintf("%s(%s)", c.Fn, strings.Join(parts, ", "))
}

// evTypeName names a vector's type in errors, with a decimal's scale.
func evTypeName(v *Vec) string {
	if v.Type == TDecimal {
		return fmt.Sprintf("decimal(%d)", v.Scale)
	}
	return v.Type.String()
}

// evCall evaluates a function call.
func evCall(b *Batch, c plan.Call) (evVal, error) {
	if err := evArity(c); err != nil {
		return evVal{}, err
	}
	switch c.Fn {
	case plan.FnAdd, plan.FnSub, plan.FnMul, plan.FnDiv:
		x, err := evExpr(b, c.Args[0])
		if err != nil {
			return evVal{}, err
		}
		y, err := evExpr(b, c.Args[1])
		if err != nil {
			return evVal{}, err
		}
		return evArith(c, x, y)
	case plan.FnSubstr:
		return evSubstr(b, c)
	case plan.FnYear:
		return evYear(b, c)
	case plan.FnCase:
		return evCase(b, c)
	}
	return evPredicate(b, c)
}

// evPredicate evaluates a predicate call into a bool vector by selecting
// the rows where it holds. A predicate over literals only (no column) is
// folded into a constant on a one-row batch.
func evPredicate(b *Batch, c plan.Call) (evVal, error) {
	if !evHasCol(c) {
		one := &Batch{Rows: 1}
		sel, err := fltSel(one, c, nil, make([]int32, 1))
		if err != nil {
			return evVal{}, err
		}
		return evVal{v: Vec{Type: TBool, B: []bool{len(sel) == 1}}, konst: true}, nil
	}
	buf := fltGetBuf(b.Rows)
	defer fltPutBuf(buf)
	sel, err := fltSel(b, c, nil, *buf)
	if err != nil {
		return evVal{}, err
	}
	out := make([]bool, b.Rows)
	for _, i := range sel {
		out[i] = true
	}
	return evVal{v: Vec{Type: TBool, B: out}}, nil
}

// evHasCol reports whether e references a column.
func evHasCol(e plan.Expr) bool {
	switch e := e.(type) {
	case plan.Col:
		return true
	case plan.Call:
		for _, a := range e.Args {
			if evHasCol(a) {
				return true
			}
		}
	}
	return false
}

// evCols adds the columns e references to set, in first-reference order.
func evCols(e plan.Expr, set []string) []string {
	switch e := e.(type) {
	case plan.Col:
		for _, s := range set {
			if s == string(e) {
				return set
			}
		}
		return append(set, string(e))
	case plan.Call:
		for _, a := range e.Args {
			set = evCols(a, set)
		}
	}
	return set
}

// evLen is the number of values of x (1 for a constant).
func evLen(x *evVal) int { return x.v.Len() }

// evRows is the row count of an operation over xs: that of any vector
// operand, or 1 when all are constants.
func evRows(xs ...*evVal) int {
	for _, x := range xs {
		if !x.konst {
			return evLen(x)
		}
	}
	return 1
}

// evIsInt reports an integer-coded number: int64, int32 or decimal.
func evIsInt(t Type) bool { return t == TInt64 || t == TInt32 || t == TDecimal }

// evIsNum reports a number: integer-coded or float64.
func evIsNum(t Type) bool { return evIsInt(t) || t == TFloat64 }

// evScale is the decimal scale of an integer-coded value (0 for ints and
// dates).
func evScale(v *Vec) int8 {
	if v.Type == TDecimal {
		return v.Scale
	}
	return 0
}

// evToI64 returns the integer-coded values of x (int, decimal or date) as
// int64 at decimal scale s >= x's scale. The result may be x's own slice
// (read only) when no conversion is needed.
func evToI64(x *Vec, s int8) ([]int64, error) {
	from := evScale(x)
	if s < from {
		return nil, fmt.Errorf("cpu: internal: narrowing scale %d to %d", from, s)
	}
	if s-from > evMaxScale {
		return nil, fmt.Errorf("decimal scale %d exceeds %d", s, evMaxScale)
	}
	m := evPow10[s-from]
	switch x.Type {
	case TInt64, TDecimal:
		if m == 1 {
			return x.I64, nil
		}
		out := make([]int64, len(x.I64))
		var bad uint64
		for i, a := range x.I64 {
			r, o := evMulOvf(a, m)
			out[i], bad = r, bad|o
		}
		if bad != 0 {
			return nil, fmt.Errorf("int64 overflow aligning scale %d to %d", from, s)
		}
		return out, nil
	case TInt32, TDate:
		// |int32| * 10^9 fits, but 10^18 does not: check all the same.
		out := make([]int64, len(x.I32))
		var bad uint64
		for i, a := range x.I32 {
			r, o := evMulOvf(int64(a), m)
			out[i], bad = r, bad|o
		}
		if bad != 0 {
			return nil, fmt.Errorf("int64 overflow aligning scale %d to %d", from, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("cpu: internal: %s is not integer-coded", evTypeName(x))
}

// evToF64 returns the numeric values of x as float64: a decimal v of scale
// s converts as float64(v)/10^s (correctly rounded for |v| < 2^53). The
// result may be x's own slice (read only).
func evToF64(x *Vec) []float64 {
	switch x.Type {
	case TFloat64:
		return x.F64
	case TInt64, TDecimal:
		out := make([]float64, len(x.I64))
		if s := evScale(x); s > 0 {
			d := float64(evPow10[s])
			for i, a := range x.I64 {
				out[i] = float64(a) / d
			}
		} else {
			for i, a := range x.I64 {
				out[i] = float64(a)
			}
		}
		return out
	case TInt32, TDate:
		out := make([]float64, len(x.I32))
		for i, a := range x.I32 {
			out[i] = float64(a)
		}
		return out
	}
	return nil
}

// evMulOvf is a*b and, non-zero, whether it overflowed int64: the 128-bit
// product must be the sign extension of its low half. Branch free, so that
// loops can OR the flags and test once.
func evMulOvf(a, b int64) (int64, uint64) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	// Signed high word from the unsigned one.
	hi -= uint64(a>>63)&uint64(b) + uint64(b>>63)&uint64(a)
	return int64(lo), hi ^ uint64(int64(lo)>>63)
}

// evMask is the index mask of an operand in a loop over rows: a constant
// always reads value 0 (i & 0), a vector value i (i & -1).
func evMask(x *evVal) int {
	if x.konst {
		return 0
	}
	return -1
}

// evArith evaluates + - * / per the typing rules above.
func evArith(c plan.Call, x, y evVal) (evVal, error) {
	tx, ty := x.v.Type, y.v.Type
	n := evRows(&x, &y)
	konst := x.konst && y.konst
	mismatch := func() (evVal, error) {
		return evVal{}, fmt.Errorf("cpu: type mismatch in %s: %s %s %s", c, evTypeName(&x.v), c.Fn, evTypeName(&y.v))
	}
	fail := func(err error) (evVal, error) { return evVal{}, fmt.Errorf("cpu: %s: %w", c, err) }
	switch {
	case evIsNum(tx) && evIsNum(ty) && (c.Fn == plan.FnDiv || tx == TFloat64 || ty == TFloat64):
		return evVal{v: Vec{Type: TFloat64, F64: evArithF64(c.Fn, &x, &y, n)}, konst: konst, owned: !konst}, nil
	case evIsInt(tx) && evIsInt(ty):
		sx, sy := evScale(&x.v), evScale(&y.v)
		typ, s := TInt64, int8(0)
		if tx == TDecimal || ty == TDecimal {
			typ = TDecimal
		}
		ax, ay := max(sx, sy), max(sx, sy)
		if c.Fn == plan.FnMul {
			// Multiplication adds scales; operands keep theirs.
			ax, ay = sx, sy
			if int(sx)+int(sy) > evMaxScale {
				return fail(fmt.Errorf("product scale %d exceeds %d", int(sx)+int(sy), evMaxScale))
			}
			s = sx + sy
		} else {
			s = ax
		}
		a, err := evToI64(&x.v, ax)
		if err != nil {
			return fail(err)
		}
		bb, err := evToI64(&y.v, ay)
		if err != nil {
			return fail(err)
		}
		r, bad := evArithI64(c.Fn, a, x.konst, bb, y.konst, n, evReuse(&x, a, &y, bb))
		if bad {
			return fail(errors.New("int64 overflow"))
		}
		if typ != TDecimal {
			s = 0
		}
		return evVal{v: Vec{Type: typ, Scale: s, I64: r}, konst: konst, owned: !konst}, nil
	case tx == TDate || ty == TDate:
		intOrDate := func(t Type) bool { return t == TInt64 || t == TInt32 || t == TDate }
		if !intOrDate(tx) || !intOrDate(ty) {
			return mismatch()
		}
		var typ Type
		switch {
		case c.Fn == plan.FnAdd && (tx == TDate) != (ty == TDate):
			typ = TDate
		case c.Fn == plan.FnSub && tx == TDate && ty != TDate:
			typ = TDate
		case c.Fn == plan.FnSub && tx == TDate && ty == TDate:
			typ = TInt64
		default:
			return mismatch()
		}
		a, _ := evToI64(&x.v, 0)
		bb, _ := evToI64(&y.v, 0)
		r, bad := evArithI64(c.Fn, a, x.konst, bb, y.konst, n, evReuse(&x, a, &y, bb))
		if bad {
			return fail(errors.New("int64 overflow"))
		}
		if typ == TInt64 {
			return evVal{v: Vec{Type: TInt64, I64: r}, konst: konst, owned: !konst}, nil
		}
		d := make([]int32, len(r))
		for i, v := range r {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return fail(fmt.Errorf("date of %d days is out of the int32 range", v))
			}
			d[i] = int32(v)
		}
		return evVal{v: Vec{Type: TDate, I32: d}, konst: konst, owned: !konst}, nil
	}
	return mismatch()
}

// evReuse picks the output of an int64 operation on x and y, whose values
// are a and b: an operand vector that is an intermediate (owned) or was
// converted (a fresh copy) is overwritten; nil means allocate.
func evReuse(x *evVal, a []int64, y *evVal, b []int64) []int64 {
	switch {
	case !x.konst && (x.owned || !evSame(a, x.v.I64)):
		return a
	case !y.konst && (y.owned || !evSame(b, y.v.I64)):
		return b
	}
	return nil
}

// evArithI64 computes a op b (op + - *) for n rows into out (allocated when
// nil; it may be a or b: each row reads both before writing); a constant
// operand (ca, cb) holds one value. bad reports an int64 overflow in any
// row. The constant shapes get their own loops: "1 - l_discount" is the
// common case.
func evArithI64(op plan.Fn, a []int64, ca bool, b []int64, cb bool, n int, out []int64) ([]int64, bool) {
	if out == nil {
		out = make([]int64, n)
	}
	out = out[:n]
	var ovf uint64
	switch {
	case ca && !cb:
		k := a[0]
		b = b[:n]
		switch op {
		case plan.FnAdd:
			for i, y := range b {
				r := k + y
				out[i], ovf = r, ovf|uint64((k^r)&(y^r))
			}
		case plan.FnSub:
			for i, y := range b {
				r := k - y
				out[i], ovf = r, ovf|uint64((k^y)&(k^r))
			}
		case plan.FnMul:
			for i, y := range b {
				r, o := evMulOvf(k, y)
				out[i], ovf = r, ovf|o
			}
		}
	case !ca && cb:
		k := b[0]
		a = a[:n]
		switch op {
		case plan.FnAdd:
			for i, x := range a {
				r := x + k
				out[i], ovf = r, ovf|uint64((x^r)&(k^r))
			}
		case plan.FnSub:
			for i, x := range a {
				r := x - k
				out[i], ovf = r, ovf|uint64((x^k)&(x^r))
			}
		case plan.FnMul:
			for i, x := range a {
				r, o := evMulOvf(x, k)
				out[i], ovf = r, ovf|o
			}
		}
	default:
		// Both vectors, or both constants (n == 1).
		a, b = a[:n], b[:n]
		switch op {
		case plan.FnAdd:
			for i, x := range a {
				y := b[i]
				r := x + y
				out[i], ovf = r, ovf|uint64((x^r)&(y^r))
			}
		case plan.FnSub:
			for i, x := range a {
				y := b[i]
				r := x - y
				out[i], ovf = r, ovf|uint64((x^y)&(x^r))
			}
		case plan.FnMul:
			for i, x := range a {
				r, o := evMulOvf(x, b[i])
				out[i], ovf = r, ovf|o
			}
		}
	}
	// Add and sub flag overflow in the sign bit; mul in any bit.
	if op == plan.FnMul {
		return out, ovf != 0
	}
	return out, int64(ovf) < 0
}

// evArithF64 computes a op b (op + - * /) in float64 for n rows, over an
// operand's vector when it is an intermediate or was converted.
func evArithF64(op plan.Fn, x, y *evVal, n int) []float64 {
	a, b := evToF64(&x.v), evToF64(&y.v)
	ma, mb := evMask(x), evMask(y)
	var out []float64
	switch {
	case !x.konst && (x.owned || !evSame(a, x.v.F64)):
		out = a[:n]
	case !y.konst && (y.owned || !evSame(b, y.v.F64)):
		out = b[:n]
	default:
		out = make([]float64, n)
	}
	switch op {
	case plan.FnAdd:
		for i := range out {
			out[i] = a[i&ma] + b[i&mb]
		}
	case plan.FnSub:
		for i := range out {
			out[i] = a[i&ma] - b[i&mb]
		}
	case plan.FnMul:
		for i := range out {
			out[i] = a[i&ma] * b[i&mb]
		}
	case plan.FnDiv:
		for i := range out {
			out[i] = a[i&ma] / b[i&mb]
		}
	}
	return out
}

// evIntLit returns the value of an integer literal argument.
func evIntLit(c plan.Call, i int, what string) (int64, error) {
	l, ok := c.Args[i].(plan.Lit)
	if !ok || l.Kind != plan.LitInt {
		return 0, fmt.Errorf("cpu: %s: the %s must be an integer literal, not %s", c, what, c.Args[i])
	}
	return l.I, nil
}

// evSubstr is substring(s from start for n): the bytes at 1-based positions
// start..start+n-1 that exist (SQL semantics, counted in bytes).
func evSubstr(b *Batch, c plan.Call) (evVal, error) {
	start, err := evIntLit(c, 1, "start")
	if err != nil {
		return evVal{}, err
	}
	length, err := evIntLit(c, 2, "length")
	if err != nil {
		return evVal{}, err
	}
	if length < 0 {
		return evVal{}, fmt.Errorf("cpu: %s: negative substring length", c)
	}
	x, err := evExpr(b, c.Args[0])
	if err != nil {
		return evVal{}, err
	}
	if x.v.Type != TString {
		return evVal{}, fmt.Errorf("cpu: type mismatch in %s: substring of %s", c, evTypeName(&x.v))
	}
	// 0-based half-open window [lo, hi), saturating instead of overflowing.
	lo := start - 1
	if start == math.MinInt64 {
		lo = math.MinInt64
	}
	hi := lo + length
	if hi < lo {
		hi = math.MaxInt64
	}
	clip := func(l int64) (int64, int64) {
		return min(max(lo, 0), l), min(max(hi, 0), l)
	}
	v := &x.v
	n := v.Len()
	off := make([]int32, n+1)
	var total int64
	for i := 0; i < n; i++ {
		l := int64(v.Off[i+1] - v.Off[i])
		p, q := clip(l)
		total += max(q-p, 0)
		off[i+1] = int32(total)
	}
	str := make([]byte, total)
	for i := 0; i < n; i++ {
		s := v.Str[v.Off[i]:v.Off[i+1]]
		p, q := clip(int64(len(s)))
		if q > p {
			copy(str[off[i]:], s[p:q])
		}
	}
	return evVal{v: Vec{Type: TString, Off: off, Str: str}, konst: x.konst}, nil
}

// evYear is extract(year from date).
func evYear(b *Batch, c plan.Call) (evVal, error) {
	x, err := evExpr(b, c.Args[0])
	if err != nil {
		return evVal{}, err
	}
	if x.v.Type != TDate {
		return evVal{}, fmt.Errorf("cpu: type mismatch in %s: year of %s", c, evTypeName(&x.v))
	}
	out := make([]int64, len(x.v.I32))
	for i, d := range x.v.I32 {
		out[i] = evYearOf(int64(d))
	}
	return evVal{v: Vec{Type: TInt64, I64: out}, konst: x.konst, owned: !x.konst}, nil
}

// evYearOf is the proleptic Gregorian year of a day count since 1970-01-01
// (H. Hinnant's civil_from_days, without a per-row time.Time).
func evYearOf(days int64) int64 {
	z := days + 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365], from March 1
	y := yoe + era*400
	if mp := (5*doy + 2) / 153; mp >= 10 { // January or February
		y++
	}
	return y
}

// evCommon is the result type of case over branches of types a and b.
func evCommon(a, b *Vec) (Type, int8, bool) {
	ta, tb := a.Type, b.Type
	switch {
	case ta == tb && ta != TDecimal:
		return ta, 0, true
	case ta == TFloat64 && evIsNum(tb), tb == TFloat64 && evIsNum(ta):
		return TFloat64, 0, true
	case ta == TDecimal && evIsInt(tb), tb == TDecimal && evIsInt(ta):
		return TDecimal, max(evScale(a), evScale(b)), true
	case evIsInt(ta) && evIsInt(tb): // int32 with int64
		return TInt64, 0, true
	}
	return TInvalid, 0, false
}

// evConvert converts x to type t (scale s), a target evCommon chose.
func evConvert(x *evVal, t Type, s int8) (evVal, error) {
	if x.v.Type == t && (t != TDecimal || x.v.Scale == s) {
		return *x, nil
	}
	switch t {
	case TFloat64:
		return evVal{v: Vec{Type: TFloat64, F64: evToF64(&x.v)}, konst: x.konst, owned: !x.konst}, nil
	case TInt64, TDecimal:
		v, err := evToI64(&x.v, s)
		if err != nil {
			return evVal{}, err
		}
		return evVal{v: Vec{Type: t, Scale: s, I64: v}, konst: x.konst, owned: !x.konst && (x.owned || !evSame(v, x.v.I64))}, nil
	}
	return evVal{}, fmt.Errorf("cpu: internal: converting %s to %s", evTypeName(&x.v), t)
}

// evCase is case when cond then a else b end.
func evCase(b *Batch, c plan.Call) (evVal, error) {
	var xs [3]evVal
	for i := range xs {
		x, err := evExpr(b, c.Args[i])
		if err != nil {
			return evVal{}, err
		}
		xs[i] = x
	}
	cond, x, y := &xs[0], &xs[1], &xs[2]
	if cond.v.Type != TBool {
		return evVal{}, fmt.Errorf("cpu: type mismatch in %s: condition is %s, not bool", c, evTypeName(&cond.v))
	}
	t, s, ok := evCommon(&x.v, &y.v)
	if !ok {
		return evVal{}, fmt.Errorf("cpu: type mismatch in %s: branches are %s and %s", c, evTypeName(&x.v), evTypeName(&y.v))
	}
	a, err := evConvert(x, t, s)
	if err != nil {
		return evVal{}, fmt.Errorf("cpu: %s: %w", c, err)
	}
	e, err := evConvert(y, t, s)
	if err != nil {
		return evVal{}, fmt.Errorf("cpu: %s: %w", c, err)
	}
	if cond.konst {
		if cond.v.B[0] {
			return a, nil
		}
		return e, nil
	}
	cb := cond.v.B
	ma, me := evMask(&a), evMask(&e)
	out := Vec{Type: t, Scale: s}
	switch t {
	case TInt64, TDecimal:
		out.I64 = evPick(cb, a.v.I64, ma, e.v.I64, me)
	case TInt32, TDate:
		out.I32 = evPick(cb, a.v.I32, ma, e.v.I32, me)
	case TFloat64:
		out.F64 = evPick(cb, a.v.F64, ma, e.v.F64, me)
	case TBool:
		out.B = evPick(cb, a.v.B, ma, e.v.B, me)
	case TString:
		out.Off = make([]int32, len(cb)+1)
		var total int64
		for i, yes := range cb {
			if yes {
				j := i & ma
				total += int64(a.v.Off[j+1] - a.v.Off[j])
			} else {
				j := i & me
				total += int64(e.v.Off[j+1] - e.v.Off[j])
			}
			if total > math.MaxInt32 {
				return evVal{}, fmt.Errorf("cpu: %s: result exceeds 2 GiB of string bytes", c)
			}
			out.Off[i+1] = int32(total)
		}
		out.Str = make([]byte, 0, total)
		for i, yes := range cb {
			if yes {
				out.Str = append(out.Str, a.v.StrAt(i&ma)...)
			} else {
				out.Str = append(out.Str, e.v.StrAt(i&me)...)
			}
		}
	}
	return evVal{v: out, owned: true}, nil
}

// evPick is cond[i] ? a[i&ma] : b[i&mb] for every row.
func evPick[T any](cond []bool, a []T, ma int, b []T, mb int) []T {
	out := make([]T, len(cond))
	for i, t := range cond {
		if t {
			out[i] = a[i&ma]
		} else {
			out[i] = b[i&mb]
		}
	}
	return out
}

// evBroadcast repeats the one value of a constant n times.
func evBroadcast(v *Vec, n int) Vec {
	out := Vec{Type: v.Type, Scale: v.Scale}
	switch v.Type {
	case TInt64, TDecimal:
		out.I64 = evRepeat(v.I64[0], n)
	case TInt32, TDate:
		out.I32 = evRepeat(v.I32[0], n)
	case TFloat64:
		out.F64 = evRepeat(v.F64[0], n)
	case TBool:
		out.B = evRepeat(v.B[0], n)
	case TString:
		s := v.StrAt(0)
		out.Off = make([]int32, n+1)
		out.Str = make([]byte, 0, len(s)*n)
		for i := 0; i < n; i++ {
			out.Str = append(out.Str, s...)
			out.Off[i+1] = int32(len(out.Str))
		}
	}
	return out
}

func evRepeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}
