package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gostachio/plan"
)

// This file holds a row-at-a-time reference evaluator written straight
// from the typing rules (no vectors, no ranges, no selections), a
// generator of random expression trees over a test batch holding every
// column type, and the tests that compare Eval with the reference.

// refV is one reference value.
type refV struct {
	t   Type
	s   int8  // decimal scale
	i   int64 // int64, int32, date, decimal (unscaled)
	f   float64
	str string
	b   bool
}

// errRefOverflow marks a reference computation leaving int64: the
// generator keeps values small, so such expressions are skipped (counted).
var errRefOverflow = errors.New("reference overflow")

func refIsInt(t Type) bool { return t == TInt64 || t == TInt32 || t == TDecimal }
func refIsNum(t Type) bool { return refIsInt(t) || t == TFloat64 }
func refScale(x refV) int8 {
	if x.t == TDecimal {
		return x.s
	}
	return 0
}

func refPow10(s int8) int64 {
	p := int64(1)
	for range s {
		p *= 10
	}
	return p
}

// refF converts a number to float64 the documented way.
func refF(x refV) float64 {
	switch x.t {
	case TFloat64:
		return x.f
	case TDecimal:
		if x.s == 0 {
			return float64(x.i)
		}
		return float64(x.i) / float64(refPow10(x.s))
	}
	return float64(x.i)
}

// refMul multiplies with an exact overflow check (big.Int beyond 2^31).
func refMul(a, b int64) (int64, error) {
	if a > -1<<31 && a < 1<<31 && b > -1<<31 && b < 1<<31 {
		return a * b, nil
	}
	var p big.Int
	p.Mul(big.NewInt(a), big.NewInt(b))
	if !p.IsInt64() {
		return 0, errRefOverflow
	}
	return p.Int64(), nil
}

func refAddSub(op plan.Fn, a, b int64) (int64, error) {
	if a > -1<<62 && a < 1<<62 && b > -1<<62 && b < 1<<62 {
		if op == plan.FnAdd {
			return a + b, nil
		}
		return a - b, nil
	}
	p := big.NewInt(a)
	if op == plan.FnAdd {
		p.Add(p, big.NewInt(b))
	} else {
		p.Sub(p, big.NewInt(b))
	}
	if !p.IsInt64() {
		return 0, errRefOverflow
	}
	return p.Int64(), nil
}

func refRescale(x refV, s int8) (int64, error) {
	if s-refScale(x) > 18 {
		return 0, errRefOverflow
	}
	return refMul(x.i, refPow10(s-refScale(x)))
}

// refClass: 1 exact, 2 float, 3 string, 0 not comparable.
func refClass(a, b Type) int {
	intOrDate := func(t Type) bool { return t == TInt64 || t == TInt32 || t == TDate }
	switch {
	case refIsInt(a) && refIsInt(b):
		return 1
	case a == TDate && intOrDate(b) || b == TDate && intOrDate(a):
		return 1
	case refIsNum(a) && refIsNum(b):
		return 2
	case a == TString && b == TString:
		return 3
	}
	return 0
}

func refTypeName(x refV) string {
	if x.t == TDecimal {
		return fmt.Sprintf("decimal(%d)", x.s)
	}
	return x.t.String()
}

// refCompare evaluates x op y. bothVec: neither side is a constant (the
// evaluator aligns two vectors' scales, which may overflow; a constant is
// compared without rescaling).
func refCompare(op plan.Fn, x, y refV, bothVec bool) (bool, error) {
	switch refClass(x.t, y.t) {
	case 1:
		s := max(refScale(x), refScale(y))
		a, err1 := refRescale(x, s)
		b, err2 := refRescale(y, s)
		if err := errors.Join(err1, err2); err != nil {
			if bothVec {
				return false, err
			}
			// Exact comparison of rationals.
			ra := new(big.Rat).SetFrac(big.NewInt(x.i), big.NewInt(refPow10(refScale(x))))
			rb := new(big.Rat).SetFrac(big.NewInt(y.i), big.NewInt(refPow10(refScale(y))))
			return refOrd(op, ra.Cmp(rb)), nil
		}
		c := 0
		if a < b {
			c = -1
		} else if a > b {
			c = 1
		}
		return refOrd(op, c), nil
	case 2:
		a, b := refF(x), refF(y)
		switch op {
		case plan.FnEq:
			return a == b, nil
		case plan.FnNe:
			return a != b, nil
		case plan.FnLt:
			return a < b, nil
		case plan.FnLe:
			return a <= b, nil
		case plan.FnGt:
			return a > b, nil
		}
		return a >= b, nil
	case 3:
		return refOrd(op, strings.Compare(x.str, y.str)), nil
	}
	return false, fmt.Errorf("cannot compare %s with %s", refTypeName(x), refTypeName(y))
}

func refOrd(op plan.Fn, c int) bool {
	switch op {
	case plan.FnEq:
		return c == 0
	case plan.FnNe:
		return c != 0
	case plan.FnLt:
		return c < 0
	case plan.FnLe:
		return c <= 0
	case plan.FnGt:
		return c > 0
	}
	return c >= 0
}

var refLikeCache sync.Map

// refLike matches with a regexp translation of the pattern.
func refLike(s, pattern string) bool {
	re, ok := refLikeCache.Load(pattern)
	if !ok {
		var sb strings.Builder
		sb.WriteString(`^(?s)`)
		for _, c := range []byte(pattern) {
			switch c {
			case '%':
				sb.WriteString(`.*`)
			case '_':
				sb.WriteString(`.`)
			default:
				sb.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		sb.WriteString(`$`)
		re, _ = refLikeCache.LoadOrStore(pattern, regexp.MustCompile(sb.String()))
	}
	return re.(*regexp.Regexp).MatchString(s)
}

// refIsConst reports an expression without columns.
func refIsConst(e plan.Expr) bool {
	switch e := e.(type) {
	case plan.Col:
		return false
	case plan.Call:
		for _, a := range e.Args {
			if !refIsConst(a) {
				return false
			}
		}
	}
	return true
}

// refEval evaluates e at one row of b; row -1 only derives types (values
// are zero), so that type errors show on batches without rows.
func refEval(b *Batch, e plan.Expr, row int) (refV, error) {
	switch e := e.(type) {
	case plan.Col:
		i := b.Col(string(e))
		if i < 0 {
			return refV{}, fmt.Errorf("no column %s", e)
		}
		v := &b.Cols[i]
		r := refV{t: v.Type, s: v.Scale}
		if row < 0 {
			return r, nil
		}
		switch v.Type {
		case TInt64, TDecimal:
			r.i = v.I64[row]
		case TInt32, TDate:
			r.i = int64(v.I32[row])
		case TFloat64:
			r.f = v.F64[row]
		case TString:
			r.str = string(v.StrAt(row))
		case TBool:
			r.b = v.B[row]
		}
		return r, nil
	case plan.Lit:
		switch e.Kind {
		case plan.LitInt:
			return refV{t: TInt64, i: e.I}, nil
		case plan.LitDecimal:
			return refV{t: TDecimal, s: e.Scale, i: e.I}, nil
		case plan.LitDate:
			return refV{t: TDate, i: e.I}, nil
		case plan.LitString:
			return refV{t: TString, str: e.S}, nil
		case plan.LitFloat:
			return refV{t: TFloat64, f: e.F}, nil
		}
		return refV{}, errors.New("bad literal")
	case plan.Call:
		return refCall(b, e, row)
	}
	return refV{}, fmt.Errorf("cannot evaluate %T", e)
}

var refNargs = map[plan.Fn][2]int{plan.FnAnd: {1, 99}, plan.FnOr: {1, 99}, plan.FnNot: {1, 1}, plan.FnYear: {1, 1},
	plan.FnBetween: {3, 3}, plan.FnSubstr: {3, 3}, plan.FnCase: {3, 3}, plan.FnIn: {2, 99}, plan.FnNotIn: {2, 99}}

func refCall(b *Batch, c plan.Call, row int) (refV, error) {
	lim, ok := refNargs[c.Fn]
	if !ok {
		lim = [2]int{2, 2}
	}
	if len(c.Args) < lim[0] || len(c.Args) > lim[1] {
		return refV{}, errors.New("argument count")
	}
	nval := len(c.Args)
	switch c.Fn {
	case plan.FnIn, plan.FnNotIn, plan.FnLike, plan.FnNotLike, plan.FnSubstr:
		nval = 1 // the rest are literals, read below
	}
	var buf [3]refV
	args := buf[:0]
	if nval > len(buf) {
		args = make([]refV, 0, nval)
	}
	args = args[:nval]
	for i := range args {
		v, err := refEval(b, c.Args[i], row)
		if err != nil {
			return refV{}, err
		}
		args[i] = v
	}
	boolean := func(v bool) (refV, error) { return refV{t: TBool, b: v}, nil }
	switch c.Fn {
	case plan.FnAnd, plan.FnOr:
		res := c.Fn == plan.FnAnd
		for _, a := range args {
			if a.t != TBool {
				return refV{}, errors.New("not bool")
			}
			if c.Fn == plan.FnAnd {
				res = res && a.b
			} else {
				res = res || a.b
			}
		}
		return boolean(res)
	case plan.FnNot:
		if args[0].t != TBool {
			return refV{}, errors.New("not bool")
		}
		return boolean(!args[0].b)
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
		r, err := refCompare(c.Fn, args[0], args[1], !refIsConst(c.Args[0]) && !refIsConst(c.Args[1]))
		if err != nil {
			return refV{}, err
		}
		return boolean(r)
	case plan.FnBetween:
		vec := !refIsConst(c.Args[0])
		lo, err := refCompare(plan.FnGe, args[0], args[1], vec && !refIsConst(c.Args[1]))
		if err != nil {
			return refV{}, err
		}
		hi, err := refCompare(plan.FnLe, args[0], args[2], vec && !refIsConst(c.Args[2]))
		if err != nil {
			return refV{}, err
		}
		return boolean(lo && hi)
	case plan.FnIn, plan.FnNotIn:
		found := false
		for _, a := range c.Args[1:] {
			l, ok := a.(plan.Lit)
			if !ok {
				return refV{}, errors.New("list item not a literal")
			}
			lv, _ := refEval(b, l, row)
			eq, err := refCompare(plan.FnEq, args[0], lv, false)
			if err != nil {
				return refV{}, err
			}
			found = found || eq
		}
		return boolean(found != (c.Fn == plan.FnNotIn))
	case plan.FnLike, plan.FnNotLike:
		l, ok := c.Args[1].(plan.Lit)
		if !ok || l.Kind != plan.LitString || args[0].t != TString {
			return refV{}, errors.New("like types")
		}
		return boolean(refLike(args[0].str, l.S) != (c.Fn == plan.FnNotLike))
	case plan.FnAdd, plan.FnSub, plan.FnMul, plan.FnDiv:
		return refArith(c.Fn, args[0], args[1])
	case plan.FnSubstr:
		st, ok1 := c.Args[1].(plan.Lit)
		n, ok2 := c.Args[2].(plan.Lit)
		if !ok1 || !ok2 || st.Kind != plan.LitInt || n.Kind != plan.LitInt || n.I < 0 || args[0].t != TString {
			return refV{}, errors.New("substring arguments")
		}
		var out []byte
		for p := int64(1); p <= int64(len(args[0].str)); p++ {
			if p >= st.I && p < st.I+n.I {
				out = append(out, args[0].str[p-1])
			}
		}
		return refV{t: TString, str: string(out)}, nil
	case plan.FnYear:
		if args[0].t != TDate {
			return refV{}, errors.New("year of non-date")
		}
		return refV{t: TInt64, i: int64(time.Unix(args[0].i*86400, 0).UTC().Year())}, nil
	case plan.FnCase:
		if args[0].t != TBool {
			return refV{}, errors.New("case condition")
		}
		x, y := args[1], args[2]
		var t Type
		var s int8
		switch {
		case x.t == y.t && x.t != TDecimal:
			t = x.t
		case x.t == TFloat64 && refIsNum(y.t) || y.t == TFloat64 && refIsNum(x.t):
			t = TFloat64
		case (x.t == TDecimal || y.t == TDecimal) && refIsInt(x.t) && refIsInt(y.t):
			t, s = TDecimal, max(refScale(x), refScale(y))
		case refIsInt(x.t) && refIsInt(y.t):
			t = TInt64
		default:
			return refV{}, errors.New("case branches")
		}
		conv := func(v refV) (refV, error) {
			switch {
			case v.t == t && (t != TDecimal || v.s == s):
				return v, nil
			case t == TFloat64:
				return refV{t: t, f: refF(v)}, nil
			case t == TInt64:
				return refV{t: t, i: v.i}, nil
			}
			i, err := refRescale(v, s)
			return refV{t: t, s: s, i: i}, err
		}
		// The evaluator converts both branches (whole vectors).
		cx, err := conv(x)
		if err != nil {
			return refV{}, err
		}
		cy, err := conv(y)
		if err != nil {
			return refV{}, err
		}
		if args[0].b {
			return cx, nil
		}
		return cy, nil
	}
	return refV{}, errors.New("unknown function")
}

func refArith(op plan.Fn, x, y refV) (refV, error) {
	switch {
	case refIsNum(x.t) && refIsNum(y.t) && (op == plan.FnDiv || x.t == TFloat64 || y.t == TFloat64):
		a, b := refF(x), refF(y)
		var r float64
		switch op {
		case plan.FnAdd:
			r = a + b
		case plan.FnSub:
			r = a - b
		case plan.FnMul:
			r = a * b
		default:
			r = a / b
		}
		return refV{t: TFloat64, f: r}, nil
	case refIsInt(x.t) && refIsInt(y.t):
		t, s := TInt64, int8(0)
		if x.t == TDecimal || y.t == TDecimal {
			t = TDecimal
		}
		var r int64
		var err error
		if op == plan.FnMul {
			s = refScale(x) + refScale(y)
			if s > 18 {
				return refV{}, errors.New("scale too large")
			}
			r, err = refMul(x.i, y.i)
		} else {
			s = max(refScale(x), refScale(y))
			a, err1 := refRescale(x, s)
			b, err2 := refRescale(y, s)
			if err = errors.Join(err1, err2); err == nil {
				r, err = refAddSub(op, a, b)
			}
		}
		if t == TInt64 {
			s = 0
		}
		return refV{t: t, s: s, i: r}, err
	case x.t == TDate || y.t == TDate:
		isInt := func(t Type) bool { return t == TInt64 || t == TInt32 }
		switch {
		case op == plan.FnAdd && (x.t == TDate && isInt(y.t) || isInt(x.t) && y.t == TDate),
			op == plan.FnSub && x.t == TDate && isInt(y.t):
			r, err := refAddSub(op, x.i, y.i)
			if err == nil && (r < math.MinInt32 || r > math.MaxInt32) {
				err = errRefOverflow
			}
			return refV{t: TDate, i: r}, err
		case op == plan.FnSub && x.t == TDate && y.t == TDate:
			return refV{t: TInt64, i: x.i - y.i}, nil
		}
	}
	return refV{}, fmt.Errorf("arith %s %s", refTypeName(x), refTypeName(y))
}

// refSame compares value i of v with a reference value.
func refSame(v *Vec, i int, want refV) bool {
	if v.Type != want.t || v.Type == TDecimal && v.Scale != want.s {
		return false
	}
	switch v.Type {
	case TInt64, TDecimal:
		return v.I64[i] == want.i
	case TInt32, TDate:
		return int64(v.I32[i]) == want.i
	case TFloat64:
		g := v.F64[i]
		return g == want.f && math.Signbit(g) == math.Signbit(want.f) || math.IsNaN(g) && math.IsNaN(want.f)
	case TString:
		return string(v.StrAt(i)) == want.str
	case TBool:
		return v.B[i] == want.b
	}
	return false
}

func refString(x refV) string {
	switch x.t {
	case TFloat64:
		return fmt.Sprint(x.f)
	case TString:
		return fmt.Sprintf("%q", x.str)
	case TBool:
		return fmt.Sprint(x.b)
	}
	return fmt.Sprintf("%d(%s)", x.i, refTypeName(x))
}

// Test data: one column of every type; small value ranges so that
// comparisons hit equality and the generator's arithmetic stays in int64.

const testAlphabet = "abc"

func testString(r *rand.Rand, maxLen int) string {
	b := make([]byte, r.IntN(maxLen+1))
	for i := range b {
		b[i] = testAlphabet[r.IntN(len(testAlphabet))]
	}
	return string(b)
}

func testStrVec(ss []string) Vec {
	v := Vec{Type: TString, Off: make([]int32, 1, len(ss)+1)}
	for _, s := range ss {
		v.Str = append(v.Str, s...)
		v.Off = append(v.Off, int32(len(v.Str)))
	}
	return v
}

func testFloat(r *rand.Rand) float64 {
	switch r.IntN(100) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	case 2:
		return math.Copysign(0, -1)
	}
	return float64(r.IntN(401)-200) / 4
}

// testBatch builds n rows of the test columns.
func testBatch(r *rand.Rand, n int) *Batch {
	i64 := make([]int64, n)
	i32 := make([]int32, n)
	d2 := make([]int64, n)
	d4 := make([]int64, n)
	dt := make([]int32, n)
	dt2 := make([]int32, n)
	f := make([]float64, n)
	s := make([]string, n)
	s2 := make([]string, n)
	bl := make([]bool, n)
	for i := 0; i < n; i++ {
		i64[i] = r.Int64N(101) - 50
		i32[i] = r.Int32N(101) - 50
		d2[i] = r.Int64N(10001) - 5000
		if r.IntN(2) == 0 {
			d4[i] = (r.Int64N(10001) - 5000) * 100
		} else {
			d4[i] = r.Int64N(1000001) - 500000
		}
		dt[i] = 8000 + r.Int32N(61)
		dt2[i] = 8000 + r.Int32N(61)
		f[i] = testFloat(r)
		s[i] = testString(r, 4)
		s2[i] = testString(r, 4)
		bl[i] = r.IntN(2) == 0
	}
	return &Batch{
		Names: []string{"i64", "i32", "d2", "d4", "dt", "dt2", "f", "s", "s2", "bl"},
		Cols: []Vec{
			{Type: TInt64, I64: i64},
			{Type: TInt32, I32: i32},
			{Type: TDecimal, Scale: 2, I64: d2},
			{Type: TDecimal, Scale: 4, I64: d4},
			{Type: TDate, I32: dt},
			{Type: TDate, I32: dt2},
			{Type: TFloat64, F64: f},
			testStrVec(s),
			testStrVec(s2),
			{Type: TBool, B: bl},
		},
		Rows: n,
	}
}

// exprGen generates random expression trees, mostly well typed: a small
// share of arguments is of a random other kind, to exercise type errors.
type exprGen struct {
	r     *rand.Rand
	noMul int // > 0 inside a multiplication: no nested products, no overflow
}

type genKind int

const (
	kNum genKind = iota
	kInt
	kDate
	kStr
	kBool
	nKinds
)

func (g *exprGen) expr(k genKind, d int) plan.Expr {
	if g.r.IntN(40) == 0 {
		k = genKind(g.r.IntN(int(nKinds)))
	}
	switch k {
	case kNum:
		return g.num(d)
	case kInt:
		return g.intExpr(d)
	case kDate:
		return g.date(d)
	case kStr:
		return g.str(d)
	}
	return g.boolean(d)
}

func (g *exprGen) lit(k genKind) plan.Lit {
	r := g.r
	switch k {
	case kNum:
		switch r.IntN(3) {
		case 0:
			return plan.Int(r.Int64N(101) - 50)
		case 1:
			return plan.Lit{Kind: plan.LitDecimal, I: r.Int64N(2001) - 1000, Scale: int8(r.IntN(4))}
		}
		return plan.Float(testFloat(r))
	case kInt:
		return plan.Int(r.Int64N(101) - 50)
	case kDate:
		return plan.Lit{Kind: plan.LitDate, I: 8000 + r.Int64N(61)}
	case kStr:
		return plan.Str(testString(r, 3))
	}
	return plan.Int(1)
}

func (g *exprGen) pick(cols ...string) plan.Expr { return plan.Col(cols[g.r.IntN(len(cols))]) }

func (g *exprGen) num(d int) plan.Expr {
	r := g.r
	if d <= 0 || r.IntN(4) == 0 {
		if r.IntN(3) == 0 {
			return g.lit(kNum)
		}
		return g.pick("i64", "i32", "d2", "d4", "f")
	}
	switch r.IntN(9) {
	case 0, 1:
		return plan.Call{Fn: []plan.Fn{plan.FnAdd, plan.FnSub}[r.IntN(2)], Args: []plan.Expr{g.expr(kNum, d-1), g.expr(kNum, d-1)}}
	case 2:
		if g.noMul == 0 {
			g.noMul++
			e := plan.Mul(g.expr(kNum, d-1), g.expr(kNum, d-1))
			g.noMul--
			return e
		}
		return g.num(d - 1)
	case 3:
		return plan.Div(g.expr(kNum, d-1), g.expr(kNum, d-1))
	case 4:
		return plan.Case(g.expr(kBool, d-1), g.expr(kNum, d-1), g.expr(kNum, d-1))
	case 5:
		return g.intExpr(d)
	}
	return g.num(d - 1)
}

func (g *exprGen) intExpr(d int) plan.Expr {
	r := g.r
	if d <= 0 || r.IntN(3) == 0 {
		if r.IntN(3) == 0 {
			return g.lit(kInt)
		}
		return g.pick("i64", "i32")
	}
	switch r.IntN(4) {
	case 0:
		return plan.Year(g.expr(kDate, d-1))
	case 1:
		return plan.Sub(g.expr(kDate, d-1), g.expr(kDate, d-1))
	case 2:
		return plan.Add(g.expr(kInt, d-1), g.expr(kInt, d-1))
	}
	return plan.Case(g.expr(kBool, d-1), g.expr(kInt, d-1), g.expr(kInt, d-1))
}

func (g *exprGen) date(d int) plan.Expr {
	r := g.r
	if d <= 0 || r.IntN(3) == 0 {
		if r.IntN(3) == 0 {
			return g.lit(kDate)
		}
		return g.pick("dt", "dt2")
	}
	switch r.IntN(4) {
	case 0:
		return plan.Add(g.expr(kDate, d-1), g.expr(kInt, d-1))
	case 1:
		return plan.Add(g.expr(kInt, d-1), g.expr(kDate, d-1))
	case 2:
		return plan.Sub(g.expr(kDate, d-1), g.expr(kInt, d-1))
	}
	return plan.Case(g.expr(kBool, d-1), g.expr(kDate, d-1), g.expr(kDate, d-1))
}

func (g *exprGen) str(d int) plan.Expr {
	r := g.r
	if d <= 0 || r.IntN(3) == 0 {
		if r.IntN(3) == 0 {
			return g.lit(kStr)
		}
		return g.pick("s", "s2")
	}
	if r.IntN(2) == 0 {
		return plan.Substr(g.expr(kStr, d-1), r.Int64N(9)-2, r.Int64N(6))
	}
	return plan.Case(g.expr(kBool, d-1), g.expr(kStr, d-1), g.expr(kStr, d-1))
}

func (g *exprGen) pattern() string {
	b := make([]byte, g.r.IntN(6))
	for i := range b {
		b[i] = "ab%_c"[g.r.IntN(5)]
	}
	return string(b)
}

var genCmps = []plan.Fn{plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe}

func (g *exprGen) boolean(d int) plan.Expr {
	r := g.r
	kinds := []genKind{kNum, kInt, kDate, kStr}
	if d <= 0 {
		if r.IntN(4) == 0 {
			return plan.Col("bl")
		}
		k := kinds[r.IntN(len(kinds))]
		return plan.Call{Fn: genCmps[r.IntN(6)], Args: []plan.Expr{g.expr(k, 0), g.lit(k)}}
	}
	switch r.IntN(12) {
	case 0, 1:
		args := make([]plan.Expr, 1+r.IntN(3))
		for i := range args {
			args[i] = g.expr(kBool, d-1)
		}
		if r.IntN(2) == 0 {
			return plan.And(args...)
		}
		return plan.Or(args...)
	case 2:
		return plan.Not(g.expr(kBool, d-1))
	case 3, 4:
		k := kinds[r.IntN(len(kinds))]
		k2 := k
		if k == kDate && r.IntN(3) == 0 {
			k2 = kInt
		}
		x, y := g.expr(k, d-1), g.expr(k2, d-1)
		if r.IntN(2) == 0 {
			y = g.lit(k2)
		}
		if r.IntN(4) == 0 {
			x, y = y, x
		}
		return plan.Call{Fn: genCmps[r.IntN(6)], Args: []plan.Expr{x, y}}
	case 5:
		k := kinds[r.IntN(len(kinds))]
		lo, hi := plan.Expr(g.lit(k)), plan.Expr(g.lit(k))
		if r.IntN(4) == 0 {
			lo = g.expr(k, d-1)
		}
		return plan.Between(g.expr(k, d-1), lo, hi)
	case 6:
		k := kinds[r.IntN(len(kinds))]
		list := make([]plan.Lit, 1+r.IntN(12))
		for i := range list {
			list[i] = g.lit(k)
		}
		if r.IntN(2) == 0 {
			return plan.In(g.expr(k, d-1), list...)
		}
		return plan.NotIn(g.expr(k, d-1), list...)
	case 7:
		if r.IntN(2) == 0 {
			return plan.Like(g.expr(kStr, d-1), g.pattern())
		}
		return plan.NotLike(g.expr(kStr, d-1), g.pattern())
	case 8:
		return plan.Case(g.expr(kBool, d-1), g.expr(kBool, d-1), g.expr(kBool, d-1))
	}
	return g.boolean(d - 1)
}

// refCheckEval compares Eval(b, e) with the reference on every row. It
// reports whether the case was skipped (reference overflow).
func refCheckEval(t *testing.T, b *Batch, e plan.Expr) (skipped bool) {
	t.Helper()
	got, err := Eval(b, e)
	_, terr := refEval(b, e, -1)
	if terr != nil {
		if err == nil {
			t.Fatalf("Eval(%s) = ok, reference: %v", e, terr)
		}
		return false
	}
	want := make([]refV, b.Rows)
	for i := range want {
		w, rerr := refEval(b, e, i)
		if errors.Is(rerr, errRefOverflow) {
			return true
		}
		if rerr != nil {
			t.Fatalf("reference failed on row %d of %s: %v", i, e, rerr)
		}
		want[i] = w
	}
	if err != nil {
		t.Fatalf("Eval(%s): %v", e, err)
	}
	if got.Len() != b.Rows {
		t.Fatalf("Eval(%s): %d values for %d rows", e, got.Len(), b.Rows)
	}
	for i := range want {
		if !refSame(&got, i, want[i]) {
			t.Fatalf("Eval(%s) row %d: got %s (%s), want %s", e, i, got.Format(i), evTypeName(&got), refString(want[i]))
		}
	}
	return false
}

var testSizes = []int{0, 1, 7, 1000, 65536}

// TestEvalRandom compares Eval with the reference over random expressions.
func TestEvalRandom(t *testing.T) {
	g := &exprGen{r: rand.New(rand.NewPCG(1, 2))}
	skipped, total := 0, 0
	for _, n := range testSizes {
		b := testBatch(rand.New(rand.NewPCG(uint64(n), 7)), n)
		orig := testBatch(rand.New(rand.NewPCG(uint64(n), 7)), n)
		count := 300
		if n >= 65536 {
			count = 12
		}
		for range count {
			k := genKind(g.r.IntN(int(nKinds)))
			e := g.expr(k, 1+g.r.IntN(3))
			total++
			if refCheckEval(t, b, e) {
				skipped++
			}
		}
		// Evaluation never writes to its input.
		for c := range b.Cols {
			for i := 0; i < n; i++ {
				if b.Cols[c].Format(i) != orig.Cols[c].Format(i) {
					t.Fatalf("column %s row %d modified", b.Names[c], i)
				}
			}
		}
	}
	if skipped > total/50 {
		t.Errorf("%d of %d cases skipped for reference overflow", skipped, total)
	}
}

// TestEvalFunctions runs every function over every pairing of operand
// types (column or literal on each side) against the reference.
func TestEvalFunctions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	operands := []plan.Expr{
		plan.Col("i64"), plan.Col("i32"), plan.Col("d2"), plan.Col("d4"), plan.Col("dt"), plan.Col("f"),
		plan.Col("s"), plan.Col("bl"),
		plan.Int(7), plan.Dec("-1.5"), plan.Dec("0.25"), plan.Lit{Kind: plan.LitDate, I: 8030}, plan.Float(2.5), plan.Str("ab"),
	}
	// 65536 rows are in the random tests: the full cross product here
	// would take minutes with the row-at-a-time reference.
	for _, n := range testSizes[:4] {
		b := testBatch(r, n)
		for _, x := range operands {
			for _, y := range operands {
				for _, fn := range []plan.Fn{plan.FnAdd, plan.FnSub, plan.FnMul, plan.FnDiv,
					plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe} {
					refCheckEval(t, b, plan.Call{Fn: fn, Args: []plan.Expr{x, y}})
				}
				refCheckEval(t, b, plan.Case(plan.Col("bl"), x, y))
				refCheckEval(t, b, plan.Between(x, y, plan.Int(20)))
				refCheckEval(t, b, plan.Between(x, plan.Dec("-10.5"), y))
			}
			refCheckEval(t, b, plan.In(x, plan.Int(3), plan.Dec("0.5"), plan.Str("a")))
			refCheckEval(t, b, plan.In(x, plan.Int(3), plan.Dec("-0.5"), plan.Dec("12.50")))
			refCheckEval(t, b, plan.NotIn(x, plan.Strs("a", "b", "ab", "", "abc", "c", "ca", "cc", "bb", "ba")...))
			refCheckEval(t, b, plan.In(x, plan.Ints(-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7)...))
			refCheckEval(t, b, plan.In(x, plan.Float(0.25), plan.Int(1)))
			refCheckEval(t, b, plan.In(x, plan.Lit{Kind: plan.LitDate, I: 8030}, plan.Lit{Kind: plan.LitDate, I: 8031}))
			refCheckEval(t, b, plan.Like(x, "a%b"))
			refCheckEval(t, b, plan.NotLike(x, "%a_"))
			refCheckEval(t, b, plan.Substr(x, 2, 2))
			refCheckEval(t, b, plan.Year(x))
			refCheckEval(t, b, plan.Not(x))
			refCheckEval(t, b, plan.And(x, plan.Col("bl")))
			refCheckEval(t, b, plan.Or(plan.Col("bl"), x))
			refCheckEval(t, b, x)
		}
	}
}

// TestEvalTypes pins the documented result types.
func TestEvalTypes(t *testing.T) {
	b := testBatch(rand.New(rand.NewPCG(5, 6)), 3)
	cases := []struct {
		e     plan.Expr
		typ   Type
		scale int8
	}{
		{plan.Col("i32"), TInt32, 0},
		{plan.Add(plan.Col("i32"), plan.Col("i32")), TInt64, 0},
		{plan.Add(plan.Col("i64"), plan.Col("d2")), TDecimal, 2},
		{plan.Sub(plan.Col("d4"), plan.Col("d2")), TDecimal, 4},
		{plan.Mul(plan.Col("d4"), plan.Col("d2")), TDecimal, 6},
		{plan.Mul(plan.Col("i64"), plan.Col("d2")), TDecimal, 2},
		{plan.Mul(plan.Col("i64"), plan.Col("i32")), TInt64, 0},
		{plan.Div(plan.Col("i64"), plan.Col("i32")), TFloat64, 0},
		{plan.Add(plan.Col("f"), plan.Col("d2")), TFloat64, 0},
		{plan.Add(plan.Col("dt"), plan.Int(3)), TDate, 0},
		{plan.Add(plan.Int(3), plan.Col("dt")), TDate, 0},
		{plan.Sub(plan.Col("dt"), plan.Col("i32")), TDate, 0},
		{plan.Sub(plan.Col("dt"), plan.Col("dt2")), TInt64, 0},
		{plan.Year(plan.Col("dt")), TInt64, 0},
		{plan.Substr(plan.Col("s"), 1, 2), TString, 0},
		{plan.Lt(plan.Col("d2"), plan.Col("i64")), TBool, 0},
		{plan.Case(plan.Col("bl"), plan.Col("d2"), plan.Int(0)), TDecimal, 2},
		{plan.Case(plan.Col("bl"), plan.Col("d2"), plan.Col("d4")), TDecimal, 4},
		{plan.Case(plan.Col("bl"), plan.Col("i32"), plan.Col("i64")), TInt64, 0},
		{plan.Case(plan.Col("bl"), plan.Col("i32"), plan.Col("i32")), TInt32, 0},
		{plan.Case(plan.Col("bl"), plan.Col("f"), plan.Col("d2")), TFloat64, 0},
		{plan.Int(3), TInt64, 0},
		{plan.Dec("1.250"), TDecimal, 3},
		{plan.Date("1998-12-01"), TDate, 0},
		{plan.Str("x"), TString, 0},
		{plan.Float(1), TFloat64, 0},
		{plan.Sub(plan.Int(1), plan.Col("d2")), TDecimal, 2},
	}
	for _, c := range cases {
		v, err := Eval(b, c.e)
		if err != nil {
			t.Errorf("Eval(%s): %v", c.e, err)
			continue
		}
		if v.Type != c.typ || v.Type == TDecimal && v.Scale != c.scale || v.Len() != 3 {
			t.Errorf("Eval(%s) = %s with %d values, want %s scale %d", c.e, evTypeName(&v), v.Len(), c.typ, c.scale)
		}
	}
}

// TestEvalErrors checks that bad expressions fail with a useful message
// instead of panicking.
func TestEvalErrors(t *testing.T) {
	b := testBatch(rand.New(rand.NewPCG(9, 9)), 10)
	cases := []struct {
		e    plan.Expr
		want []string
	}{
		{plan.Col("nope"), []string{`"nope"`, "i64, i32"}},
		{plan.Lt(plan.Col("s"), plan.Int(1)), []string{"(s < 1)", "string", "int64"}},
		{plan.Add(plan.Col("s"), plan.Int(1)), []string{"(s + 1)", "string"}},
		{plan.Add(plan.Col("dt"), plan.Col("dt2")), []string{"(dt + dt2)"}},
		{plan.Sub(plan.Int(1), plan.Col("dt")), []string{"(1 - dt)"}},
		{plan.Add(plan.Col("dt"), plan.Col("d2")), []string{"decimal(2)"}},
		{plan.Eq(plan.Col("dt"), plan.Col("d2")), []string{"cannot compare date with decimal(2)"}},
		{plan.Eq(plan.Col("bl"), plan.Col("bl")), []string{"cannot compare bool"}},
		{plan.Call{Fn: plan.FnNot, Args: []plan.Expr{plan.Col("bl"), plan.Col("bl")}}, []string{"not takes 1 arguments, got 2"}},
		{plan.Call{Fn: plan.FnAnd}, []string{"at least 1"}},
		{plan.Call{Fn: plan.FnBetween, Args: []plan.Expr{plan.Col("i64")}}, []string{"between takes 3"}},
		{plan.Call{Fn: plan.FnEq, Args: []plan.Expr{plan.Col("i64"), nil}}, []string{"argument 2"}},
		{plan.Call{Fn: plan.Fn(200), Args: []plan.Expr{plan.Col("i64")}}, []string{"unknown function"}},
		{plan.Call{Fn: plan.FnLike, Args: []plan.Expr{plan.Col("s"), plan.Col("s2")}}, []string{"pattern must be a string literal"}},
		{plan.Like(plan.Col("i64"), "a%"), []string{"like over int64"}},
		{plan.Call{Fn: plan.FnSubstr, Args: []plan.Expr{plan.Col("s"), plan.Col("i64"), plan.Int(1)}}, []string{"start must be an integer literal"}},
		{plan.Substr(plan.Col("s"), 1, -1), []string{"negative substring length"}},
		{plan.Substr(plan.Col("i64"), 1, 1), []string{"substring of int64"}},
		{plan.Year(plan.Col("i64")), []string{"year of int64"}},
		{plan.Case(plan.Col("i64"), plan.Int(1), plan.Int(2)), []string{"condition is int64"}},
		{plan.Case(plan.Col("bl"), plan.Int(1), plan.Str("x")), []string{"branches are int64 and string"}},
		{plan.Call{Fn: plan.FnIn, Args: []plan.Expr{plan.Col("i64"), plan.Col("i32")}}, []string{"list item i32 is not a literal"}},
		{plan.In(plan.Col("s"), plan.Int(1)), []string{"cannot compare string with int64"}},
		{plan.And(plan.Col("bl"), plan.Col("i64")), []string{"predicate i64 is int64, not bool"}},
		{plan.Mul(plan.Dec("1.000000000"), plan.Dec("1.0000000000")), []string{"product scale 19"}},
		{plan.Mul(plan.Col("i64"), plan.Int(math.MaxInt64)), []string{"overflow"}},
		{plan.Add(plan.Int(math.MaxInt64), plan.Int(1)), []string{"overflow"}},
		{plan.Sub(plan.Int(math.MinInt64), plan.Col("i64")), []string{"overflow"}},
		{plan.Add(plan.Col("d2"), plan.Lit{Kind: plan.LitDecimal, I: math.MaxInt64 / 10, Scale: 1}), []string{"overflow"}},
		{plan.Lit{Kind: 99}, []string{"unknown kind"}},
		{plan.Lit{Kind: plan.LitDecimal, I: 1, Scale: 19}, []string{"scale 19"}},
		{plan.SQL("x > 1"), []string{"plan.SQL"}},
		{nil, []string{"nil expression"}},
		{plan.Add(plan.Col("dt"), plan.Int(math.MaxInt32)), []string{"out of the int32 range"}},
	}
	for _, c := range cases {
		_, err := Eval(b, c.e)
		if err == nil {
			t.Errorf("Eval(%v): no error", c.e)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Eval(%v): error %q lacks %q", c.e, err, w)
			}
		}
		// Select must fail alike (a non-bool expression fails there too).
		if _, err := Select(b, c.e, nil); err == nil {
			t.Errorf("Select(%v): no error", c.e)
		}
	}
	bad := &Batch{Names: []string{"x"}, Cols: []Vec{{Type: TInt64, I64: []int64{1}}}, Rows: 2}
	if _, err := Eval(bad, plan.Col("x")); err == nil || !strings.Contains(err.Error(), "has 1 values, batch 2 rows") {
		t.Errorf("short column: %v", err)
	}
	if _, err := Eval(nil, plan.Int(1)); err == nil {
		t.Error("nil batch: no error")
	}
}

// TestDecimalExact checks the Q1 charge l_extendedprice*(1-l_discount)*
// (1+l_tax) at scale 6 against big-integer arithmetic.
func TestDecimalExact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 1000
	price, disc, tax := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range price {
		price[i] = 90000 + r.Int64N(10_500_000) // 900.00 .. 105900.00
		disc[i] = r.Int64N(11)                  // 0.00 .. 0.10
		tax[i] = r.Int64N(9)                    // 0.00 .. 0.08
	}
	price[0], disc[0], tax[0] = math.MaxInt64/1_000_000, 0, 0 // large but exact
	b := &Batch{Names: []string{"l_extendedprice", "l_discount", "l_tax"},
		Cols: []Vec{{Type: TDecimal, Scale: 2, I64: price}, {Type: TDecimal, Scale: 2, I64: disc}, {Type: TDecimal, Scale: 2, I64: tax}},
		Rows: n}
	v, err := Eval(b, testQ1Charge)
	if err != nil {
		t.Fatal(err)
	}
	if v.Type != TDecimal || v.Scale != 6 {
		t.Fatalf("charge is %s", evTypeName(&v))
	}
	for i := range n {
		want := new(big.Int).Mul(big.NewInt(price[i]), big.NewInt(100-disc[i]))
		want.Mul(want, big.NewInt(100+tax[i]))
		if want.Cmp(big.NewInt(v.I64[i])) != 0 {
			t.Fatalf("row %d: %d, want %s", i, v.I64[i], want)
		}
	}
	price[0] = math.MaxInt64 / 1000 // overflows at scale 6
	if _, err := Eval(b, testQ1Charge); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("overflowing charge: %v", err)
	}
}

var testQ1Charge = plan.Mul(plan.Mul(plan.Col("l_extendedprice"), plan.Sub(plan.Int(1), plan.Col("l_discount"))),
	plan.Add(plan.Int(1), plan.Col("l_tax")))

// TestMulOvf checks the branch-free overflow test against big integers.
func TestMulOvf(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	edge := []int64{0, 1, -1, 2, -2, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32, 3037000499, 3037000500, -3037000500}
	for range 20000 {
		var a, b int64
		switch r.IntN(3) {
		case 0:
			a, b = edge[r.IntN(len(edge))], edge[r.IntN(len(edge))]
		case 1:
			a, b = int64(r.Uint64()), int64(r.Uint64())
		default:
			a, b = int64(r.Uint64())>>r.IntN(64), int64(r.Uint64())>>r.IntN(64)
		}
		got, o := evMulOvf(a, b)
		p := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
		if (o != 0) == p.IsInt64() || o == 0 && got != p.Int64() {
			t.Fatalf("evMulOvf(%d, %d) = %d, %d; product %s", a, b, got, o, p)
		}
	}
}

// TestYearOf checks the civil calendar conversion against package time.
func TestYearOf(t *testing.T) {
	for d := int64(-800000); d <= 800000; d += 17 {
		if got, want := evYearOf(d), int64(time.Unix(d*86400, 0).UTC().Year()); got != want {
			t.Fatalf("evYearOf(%d) = %d, want %d", d, got, want)
		}
	}
	for _, s := range []string{"1992-01-01", "1992-12-31", "1996-02-29", "2000-03-01", "1969-12-31", "1970-01-01"} {
		l := plan.Date(s)
		if got := evYearOf(l.I); fmt.Sprint(got) != s[:4] {
			t.Errorf("year of %s = %d", s, got)
		}
	}
}

// TestProject checks names, order, passthrough sharing and broadcast.
func TestProject(t *testing.T) {
	b := testBatch(rand.New(rand.NewPCG(15, 16)), 100)
	p := plan.Projection{plan.As("x", plan.Mul(plan.Col("d2"), plan.Col("i64"))), plan.As("s", plan.Col("s")), plan.As("k", plan.Int(4))}
	out, err := Project(b, p)
	if err != nil {
		t.Fatal(err)
	}
	if out.Rows != 100 || strings.Join(out.Names, ",") != "x,s,k" {
		t.Fatalf("project: %d rows, names %v", out.Rows, out.Names)
	}
	if err := out.Validate(); err != nil {
		t.Fatal(err)
	}
	if &out.Cols[1].Off[0] != &b.Cols[7].Off[0] {
		t.Error("passthrough column was copied")
	}
	for i := 0; i < 100; i++ {
		if out.Cols[0].I64[i] != b.Cols[2].I64[i]*b.Cols[0].I64[i] || out.Cols[2].I64[i] != 4 {
			t.Fatalf("row %d wrong", i)
		}
	}
	if _, err := Project(b, plan.Projection{plan.As("a", plan.Col("i64")), plan.As("a", plan.Col("i32"))}); err == nil {
		t.Error("duplicate names: no error")
	}
	if _, err := Project(b, plan.Projection{plan.As("a", plan.Col("zz"))}); err == nil || !strings.Contains(err.Error(), "project column a") {
		t.Errorf("bad column: %v", err)
	}
	e := Empty(b)
	out, err = Project(e, plan.Projection{plan.As("c", plan.Str("lit")), plan.As("y", plan.Year(plan.Col("dt")))})
	if err != nil || out.Rows != 0 || out.Validate() != nil {
		t.Errorf("project of empty batch: %v", err)
	}
}

// BenchmarkEvalQ1Charge evaluates l_extendedprice*(1-l_discount)*(1+l_tax)
// over 1M rows, as one batch and as 64K-row batches (cache resident).
func BenchmarkEvalQ1Charge(bm *testing.B) {
	for _, size := range benchBatchSizes {
		bs := benchLineitem(size)
		bm.Run(fmt.Sprintf("batch=%d", size), func(bm *testing.B) {
			bm.SetBytes(benchRows * 24)
			for bm.Loop() {
				for _, b := range bs {
					if _, err := Eval(b, testQ1Charge); err != nil {
						bm.Fatal(err)
					}
				}
			}
		})
	}
}

const benchRows = 1 << 20

var benchBatchSizes = []int{benchRows, 1 << 16}

var benchLineitemOnce = sync.OnceValue(func() *Batch {
	r := rand.New(rand.NewPCG(21, 22))
	qty, price, disc, tax := make([]int64, benchRows), make([]int64, benchRows), make([]int64, benchRows), make([]int64, benchRows)
	ship := make([]int32, benchRows)
	start := plan.Date("1992-01-02").I
	for i := range benchRows {
		qty[i] = (1 + r.Int64N(50)) * 100
		price[i] = qty[i] * (900 + r.Int64N(1000))
		disc[i] = r.Int64N(11)
		tax[i] = r.Int64N(9)
		ship[i] = int32(start + r.Int64N(2526))
	}
	return &Batch{Names: []string{"l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"},
		Cols: []Vec{{Type: TDecimal, Scale: 2, I64: qty}, {Type: TDecimal, Scale: 2, I64: price},
			{Type: TDecimal, Scale: 2, I64: disc}, {Type: TDecimal, Scale: 2, I64: tax}, {Type: TDate, I32: ship}},
		Rows: benchRows}
})

// benchLineitem is 1M lineitem-like rows (TPC-H value ranges) cut into
// batches of size rows (views of one set of columns).
func benchLineitem(size int) []*Batch {
	all := benchLineitemOnce()
	var out []*Batch
	for lo := 0; lo < all.Rows; lo += size {
		hi := min(lo+size, all.Rows)
		b := &Batch{Names: all.Names, Cols: make([]Vec, len(all.Cols)), Rows: hi - lo}
		for i, v := range all.Cols {
			w := Vec{Type: v.Type, Scale: v.Scale}
			if v.I64 != nil {
				w.I64 = v.I64[lo:hi]
			} else {
				w.I32 = v.I32[lo:hi]
			}
			b.Cols[i] = w
		}
		out = append(out, b)
	}
	return out
}
