package cpu

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"

	"gostachio/plan"
)

// Predicate evaluation by selection vectors. A selection is an ascending
// list of row numbers; nil stands for all rows 0..n-1 so that the first
// predicate over a batch loops densely without building 0..n-1. Kernels
// take the candidate rows `in` and write the survivors to `dst`, which has
// room for all candidates and may be `in` itself: a kernel reads in[j]
// before it writes dst[k], and k <= j, so filtering in place is safe. That
// lets an And narrow one buffer conjunct by conjunct.
//
// Leaves (comparisons, between, in, like) evaluate their operands first: a
// column or a literal costs nothing (the kernel loops over the candidate
// rows of the column directly: the fast path of "col op literal"); any other
// operand is computed by Eval — over the candidate rows only when they are a
// small part of the batch (the referenced columns are gathered into a
// compact batch), else over the whole batch.

// Select evaluates predicate pred on the rows sel of b (sel nil = all rows
// 0..b.Rows-1; otherwise strictly ascending row numbers of b, else an
// error) and returns, in a newly allocated slice, the rows of sel where
// pred holds, in the same order. sel is not modified. pred must be
// boolean: a comparison, between, in, not in, like, not like, and, or, not,
// a bool column or a case of bools. Errors name the offending expression or
// column (see Eval). An And tests each conjunct only on the survivors of
// the previous ones (constant ranges over one column merge into one test);
// an Or tests each arm on the rows no earlier arm accepted; a comparison of
// a column with a literal, between over a column and literals, in and like
// over a column loop over the selected rows of the column directly.
func Select(b *Batch, pred plan.Expr, sel []int32) ([]int32, error) {
	if b == nil {
		return nil, errors.New("cpu: Select over a nil batch")
	}
	n := b.Rows
	if sel != nil {
		// One cheap pass: the kernels index columns by these rows.
		prev := int32(-1)
		for j, r := range sel {
			if r <= prev || int(r) >= b.Rows {
				return nil, fmt.Errorf("cpu: Select: selection entry %d (row %d) is not ascending within the batch's %d rows", j, r, b.Rows)
			}
			prev = r
		}
		n = len(sel)
	}
	// The survivors are computed in a pooled buffer and copied out at their
	// final size: a fresh buffer for every candidate would cost a zeroing
	// pass as long as the predicate's own, for a result often far smaller.
	buf := fltGetBuf(n)
	got, err := fltSel(b, pred, sel, *buf)
	if err != nil {
		fltPutBuf(buf)
		return nil, err
	}
	out := make([]int32, len(got))
	copy(out, got)
	fltPutBuf(buf)
	return out, nil
}

// fltBufs holds scratch selection buffers (*[]int32) between calls.
var fltBufs sync.Pool

// fltGetBuf returns a scratch buffer of length n (contents undefined).
func fltGetBuf(n int) *[]int32 {
	if p, ok := fltBufs.Get().(*[]int32); ok {
		if cap(*p) >= n {
			*p = (*p)[:n]
			return p
		}
		fltBufs.Put(p)
	}
	s := make([]int32, n)
	return &s
}

// fltPutBuf returns a buffer to the pool; nothing may use it afterwards.
func fltPutBuf(p *[]int32) { fltBufs.Put(p) }

// Filter returns a batch with the rows of b where pred holds, in order; its
// Rows is the count. The result's vectors are newly gathered, except when
// every row qualifies: then they are b's own (kernels never modify inputs).
func Filter(b *Batch, pred plan.Expr) (*Batch, error) {
	sel, err := Select(b, pred, nil)
	if err != nil {
		return nil, err
	}
	out := &Batch{Names: append([]string(nil), b.Names...), Cols: make([]Vec, len(b.Cols)), Rows: len(sel)}
	if len(sel) == b.Rows {
		copy(out.Cols, b.Cols)
		return out, nil
	}
	for i := range b.Cols {
		if err := evCheckVec(b, b.Names[i], &b.Cols[i]); err != nil {
			return nil, err
		}
		out.Cols[i] = GatherVec(&b.Cols[i], sel)
	}
	return out, nil
}

// fltCount is the number of candidate rows.
func fltCount(b *Batch, in []int32) int {
	if in == nil {
		return b.Rows
	}
	return len(in)
}

// fltSel writes to dst the rows of in (nil: all of b's rows) where pred
// holds and returns that prefix of dst. dst has room for every candidate
// and may be in itself.
func fltSel(b *Batch, pred plan.Expr, in, dst []int32) ([]int32, error) {
	c, ok := pred.(plan.Call)
	if !ok {
		return fltBoolean(b, pred, in, dst)
	}
	if err := evArity(c); err != nil {
		return nil, err
	}
	switch c.Fn {
	case plan.FnAnd:
		return fltAnd(b, c, in, dst)
	case plan.FnOr:
		return fltOr(b, c, in, dst)
	case plan.FnNot:
		buf := fltGetBuf(fltCount(b, in))
		defer fltPutBuf(buf)
		got, err := fltSel(b, c.Args[0], in, *buf)
		if err != nil {
			return nil, err
		}
		return fltMinus(in, b.Rows, got, dst), nil
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe,
		plan.FnBetween, plan.FnIn, plan.FnNotIn, plan.FnLike, plan.FnNotLike:
		return fltLeaf(b, c, in, dst)
	}
	return fltBoolean(b, pred, in, dst)
}

// fltAnd narrows the candidates conjunct by conjunct: each only looks at
// the survivors of the previous ones. Constant ranges over one column
// ("d >= date '1994-01-01' and d < date '1995-01-01'", between) are merged
// into one range, tested in one pass at the first one's place. Every
// conjunct runs, even over no rows, so that an ill-typed predicate fails on
// every batch alike.
func fltAnd(b *Batch, c plan.Call, in, dst []int32) ([]int32, error) {
	type step struct {
		e   plan.Expr // a conjunct, or nil for a (merged) range r over col
		col *Vec
		r   fltRng
	}
	steps := make([]step, 0, len(c.Args))
next:
	for _, a := range c.Args {
		if len(c.Args) > 1 {
			if col, r, ok := fltColRange(b, a); ok {
				for i := range steps {
					if s := &steps[i]; s.e == nil && s.col == col && s.r.cls == r.cls {
						s.r.intersect(&r)
						continue next
					}
				}
				steps = append(steps, step{col: col, r: r})
				continue
			}
		}
		steps = append(steps, step{e: a})
	}
	cur := in
	for i := range steps {
		s := &steps[i]
		if s.e == nil {
			cur = s.r.apply(s.col, cur, b.Rows, dst)
			continue
		}
		out, err := fltSel(b, s.e, cur, dst)
		if err != nil {
			return nil, err
		}
		cur = out
	}
	return cur, nil
}

// fltColRange recognizes a predicate that accepts a range of one column's
// values: column = < <= > >= literal (either way round) or column between
// two literals. Anything else, ill-typed ones included, is left to fltSel.
func fltColRange(b *Batch, e plan.Expr) (*Vec, fltRng, bool) {
	c, ok := e.(plan.Call)
	if !ok || evArity(c) != nil {
		return nil, fltRng{}, false
	}
	colLit := func(x, y plan.Expr) (*Vec, *Vec, bool) {
		name, ok1 := x.(plan.Col)
		l, ok2 := y.(plan.Lit)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		v, err := evColumn(b, string(name))
		if err != nil {
			return nil, nil, false
		}
		k, err := evLit(l)
		if err != nil {
			return nil, nil, false
		}
		return v, &k.v, true
	}
	switch c.Fn {
	case plan.FnEq, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
		x, y, op := c.Args[0], c.Args[1], c.Fn
		if _, lit := x.(plan.Lit); lit {
			x, y, op = y, x, fltFlip(op)
		}
		v, k, ok := colLit(x, y)
		if !ok {
			return nil, fltRng{}, false
		}
		r, err := fltRangeOf(c, op, v, k)
		return v, r, err == nil
	case plan.FnBetween:
		v, lo, ok1 := colLit(c.Args[0], c.Args[1])
		_, hi, ok2 := colLit(c.Args[0], c.Args[2])
		if !ok1 || !ok2 {
			return nil, fltRng{}, false
		}
		r, err1 := fltRangeOf(c, plan.FnGe, v, lo)
		r2, err2 := fltRangeOf(c, plan.FnLe, v, hi)
		if err1 != nil || err2 != nil || r.cls != r2.cls {
			return nil, fltRng{}, false
		}
		r.intersect(&r2)
		return v, r, true
	}
	return nil, fltRng{}, false
}

// fltOr unions its arms. Each arm only looks at the rows no earlier arm
// accepted, so the arms' results are disjoint and a merge unions them.
func fltOr(b *Batch, c plan.Call, in, dst []int32) ([]int32, error) {
	rest := in
	var scratch []int32
	parts := make([][]int32, 0, len(c.Args))
	for j, a := range c.Args {
		buf := fltGetBuf(fltCount(b, rest))
		defer fltPutBuf(buf)
		got, err := fltSel(b, a, rest, *buf)
		if err != nil {
			return nil, err
		}
		parts = append(parts, got)
		if j < len(c.Args)-1 && len(got) > 0 {
			if scratch == nil {
				sb := fltGetBuf(fltCount(b, in))
				defer fltPutBuf(sb)
				scratch = *sb
			}
			rest = fltMinus(rest, b.Rows, got, scratch)
		}
	}
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total < fltCount(b, in)/16 {
		return fltMerge(parts, dst), nil
	}
	// Many rows: keep the candidates marked in a bitmap of all arms.
	bits := fltBitmap(b.Rows, nil)
	for _, p := range parts {
		for _, r := range p {
			bits[r>>6] |= 1 << (r & 63)
		}
	}
	k := 0
	if in == nil {
		dst = dst[:b.Rows]
		for i := range dst {
			dst[k] = int32(i)
			k += int(bits[i>>6] >> (i & 63) & 1)
		}
		return dst[:k], nil
	}
	for _, r := range in {
		dst[k] = r
		k += int(bits[r>>6] >> (r & 63) & 1)
	}
	return dst[:k], nil
}

// fltMinus writes the rows of in (nil: 0..n-1) that are not in sub (an
// ascending subset of in, rows below n) to dst, which may be in. A bitmap
// of sub keeps the loop free of data-dependent branches.
func fltMinus(in []int32, n int, sub, dst []int32) []int32 {
	if len(sub) == 0 {
		return fltAll(in, n, dst)
	}
	bits := fltBitmap(n, sub)
	k := 0
	if in == nil {
		dst = dst[:n]
		for i := range dst {
			dst[k] = int32(i)
			k += int(^bits[i>>6] >> (i & 63) & 1)
		}
		return dst[:k]
	}
	for _, r := range in {
		dst[k] = r
		k += int(^bits[r>>6] >> (r & 63) & 1)
	}
	return dst[:k]
}

// fltBitmap is the set of rows (below n) as a bitmap.
func fltBitmap(n int, rows []int32) []uint64 {
	bits := make([]uint64, (n+63)/64)
	for _, r := range rows {
		bits[r>>6] |= 1 << (r & 63)
	}
	return bits
}

// fltMerge merges disjoint ascending lists into dst.
func fltMerge(parts [][]int32, dst []int32) []int32 {
	live := parts[:0]
	for _, p := range parts {
		if len(p) > 0 {
			live = append(live, p)
		}
	}
	parts = live
	switch len(parts) {
	case 0:
		return dst[:0]
	case 1:
		return dst[:copy(dst, parts[0])]
	}
	k := 0
	for len(parts) > 0 {
		best := 0
		for p := 1; p < len(parts); p++ {
			if parts[p][0] < parts[best][0] {
				best = p
			}
		}
		// Copy the run of the best list below every other list's head.
		limit := int32(math.MaxInt32)
		for p := range parts {
			if p != best {
				limit = min(limit, parts[p][0])
			}
		}
		src := parts[best]
		m := 0
		for m < len(src) && src[m] < limit {
			m++
		}
		k += copy(dst[k:], src[:m])
		if parts[best] = src[m:]; len(parts[best]) == 0 {
			parts = append(parts[:best], parts[best+1:]...)
		}
	}
	return dst[:k]
}

// fltAll selects every candidate.
func fltAll(in []int32, n int, dst []int32) []int32 {
	if in == nil {
		dst = dst[:n]
		for i := range dst {
			dst[i] = int32(i)
		}
		return dst
	}
	return dst[:copy(dst, in)]
}

// fltKernel selects from the candidates in (nil: 0..n-1) given evaluated
// operands (vectors indexed by row number, or constants).
type fltKernel func(vals []evVal, in []int32, n int, dst []int32) ([]int32, error)

// fltOperands evaluates args and runs k over them. Columns and literals are
// used in place. Computed operands are evaluated over the whole batch, or,
// when the candidates are at most half of it, over a compact batch of just
// the candidate rows of the referenced columns; k then runs over positions
// 0..len(in)-1 of that batch, mapped back to row numbers.
func fltOperands(b *Batch, args []plan.Expr, in, dst []int32, k fltKernel) ([]int32, error) {
	trivial := true
	for _, a := range args {
		switch a.(type) {
		case plan.Col, plan.Lit:
		default:
			trivial = false
		}
	}
	src := b
	compact := !trivial && in != nil && 2*len(in) <= b.Rows
	if compact {
		var err error
		if src, err = fltCompact(b, args, in); err != nil {
			return nil, err
		}
	}
	var buf [3]evVal
	vals := buf[:0]
	for _, a := range args {
		x, err := evExpr(src, a)
		if err != nil {
			return nil, err
		}
		vals = append(vals, x)
	}
	if !compact {
		return k(vals, in, b.Rows, dst)
	}
	pb := fltGetBuf(len(in))
	defer fltPutBuf(pb)
	pos, err := k(vals, nil, len(in), *pb)
	if err != nil {
		return nil, err
	}
	// pos is ascending, so pos[j] >= j: in[pos[j]] is read before any
	// write to that slot even when dst is in.
	for j, p := range pos {
		dst[j] = in[p]
	}
	return dst[:len(pos)], nil
}

// fltCompact gathers the rows in of the columns that args reference.
func fltCompact(b *Batch, args []plan.Expr, in []int32) (*Batch, error) {
	var names []string
	for _, a := range args {
		names = evCols(a, names)
	}
	sub := &Batch{Names: names, Cols: make([]Vec, len(names)), Rows: len(in)}
	for i, name := range names {
		v, err := evColumn(b, name)
		if err != nil {
			return nil, err
		}
		sub.Cols[i] = GatherVec(v, in)
	}
	return sub, nil
}

// fltBoolean selects where a bool-valued expression (a bool column, a case
// of bools) is true.
func fltBoolean(b *Batch, pred plan.Expr, in, dst []int32) ([]int32, error) {
	return fltOperands(b, []plan.Expr{pred}, in, dst, func(vals []evVal, in []int32, n int, dst []int32) ([]int32, error) {
		x := &vals[0]
		if x.v.Type != TBool {
			return nil, fmt.Errorf("cpu: predicate %s is %s, not bool", pred, evTypeName(&x.v))
		}
		if x.konst {
			if x.v.B[0] {
				return fltAll(in, n, dst), nil
			}
			return dst[:0], nil
		}
		v, k := x.v.B, 0
		if in == nil {
			dst = dst[:n]
			for i, t := range v[:n] {
				dst[k] = int32(i)
				k += evB2I(t)
			}
			return dst[:k], nil
		}
		for _, i := range in {
			dst[k] = i
			k += evB2I(v[i])
		}
		return dst[:k], nil
	})
}

// fltLeaf selects where a comparison, between, in or like holds.
func fltLeaf(b *Batch, c plan.Call, in, dst []int32) ([]int32, error) {
	args := c.Args
	var lits []plan.Lit
	var m *Matcher
	switch c.Fn {
	case plan.FnIn, plan.FnNotIn:
		lits = make([]plan.Lit, len(c.Args)-1)
		for i, a := range c.Args[1:] {
			l, ok := a.(plan.Lit)
			if !ok {
				return nil, fmt.Errorf("cpu: %s: list item %s is not a literal", c, a)
			}
			lits[i] = l
		}
		args = c.Args[:1]
	case plan.FnLike, plan.FnNotLike:
		l, ok := c.Args[1].(plan.Lit)
		if !ok || l.Kind != plan.LitString {
			return nil, fmt.Errorf("cpu: %s: the pattern must be a string literal, not %s", c, c.Args[1])
		}
		m = lkMatcher(l.S)
		args = c.Args[:1]
	}
	return fltOperands(b, args, in, dst, func(vals []evVal, in []int32, n int, dst []int32) ([]int32, error) {
		switch c.Fn {
		case plan.FnBetween:
			return fltBetween(c, &vals[0], &vals[1], &vals[2], in, n, dst)
		case plan.FnIn, plan.FnNotIn:
			return fltIn(c, &vals[0], lits, c.Fn == plan.FnNotIn, in, n, dst)
		case plan.FnLike, plan.FnNotLike:
			return fltLike(c, &vals[0], m, c.Fn == plan.FnNotLike, in, n, dst)
		}
		return fltCmp(c, c.Fn, &vals[0], &vals[1], in, n, dst)
	})
}

// fltConst runs a kernel k on constant operands (a one-row problem) and
// selects all candidates or none by its answer.
func fltConst(in []int32, n int, dst []int32, k func(dst []int32) ([]int32, error)) ([]int32, error) {
	var one [1]int32
	got, err := k(one[:])
	if err != nil {
		return nil, err
	}
	if len(got) == 1 {
		return fltAll(in, n, dst), nil
	}
	return dst[:0], nil
}

// Comparison classes of two operand types (0: not comparable).
const (
	fltClsInt   = iota + 1 // exact: ints, decimals, dates, by scaled value
	fltClsFloat            // as float64
	fltClsStr              // bytewise
)

// fltClass is how values of types a and b compare.
func fltClass(a, b Type) int {
	isIntOrDate := func(t Type) bool { return t == TInt64 || t == TInt32 || t == TDate }
	switch {
	case evIsInt(a) && evIsInt(b):
		return fltClsInt
	case a == TDate && isIntOrDate(b), b == TDate && isIntOrDate(a):
		return fltClsInt
	case evIsNum(a) && evIsNum(b):
		return fltClsFloat
	case a == TString && b == TString:
		return fltClsStr
	}
	return 0
}

// fltFlip is the comparison with its operands swapped (k < x is x > k).
func fltFlip(op plan.Fn) plan.Fn {
	switch op {
	case plan.FnLt:
		return plan.FnGt
	case plan.FnLe:
		return plan.FnGe
	case plan.FnGt:
		return plan.FnLt
	case plan.FnGe:
		return plan.FnLe
	}
	return op
}

// fltCmp selects where x op y holds.
func fltCmp(c plan.Call, op plan.Fn, x, y *evVal, in []int32, n int, dst []int32) ([]int32, error) {
	if x.konst && !y.konst {
		x, y, op = y, x, fltFlip(op)
	}
	if x.konst {
		return fltConst(in, n, dst, func(one []int32) ([]int32, error) {
			return fltCmp(c, op, &evVal{v: x.v}, y, nil, 1, one)
		})
	}
	if y.konst {
		r, err := fltRangeOf(c, op, &x.v, &y.v)
		if err != nil {
			return nil, err
		}
		return r.apply(&x.v, in, n, dst), nil
	}
	return fltCmpVV(c, op, &x.v, &y.v, in, n, dst)
}

// fltBetween selects where lo <= x <= hi. With constant bounds of one
// comparison class the two bounds become one range (one pass).
func fltBetween(c plan.Call, x, lo, hi *evVal, in []int32, n int, dst []int32) ([]int32, error) {
	if !x.konst && lo.konst && hi.konst {
		r, err := fltRangeOf(c, plan.FnGe, &x.v, &lo.v)
		if err != nil {
			return nil, err
		}
		r2, err := fltRangeOf(c, plan.FnLe, &x.v, &hi.v)
		if err != nil {
			return nil, err
		}
		if r.cls == r2.cls {
			r.intersect(&r2)
			return r.apply(&x.v, in, n, dst), nil
		}
	}
	got, err := fltCmp(c, plan.FnGe, x, lo, in, n, dst)
	if err != nil {
		return nil, err
	}
	return fltCmp(c, plan.FnLe, x, hi, got, n, dst)
}

// fltRng is the set of values a constant comparison accepts: lo..hi of
// the comparison class (inclusive; for strings each bound may be absent or
// exclusive), or its complement when neg (for <>).
type fltRng struct {
	cls      int
	none     bool // the range is empty
	neg      bool // accept the values outside the range
	lo, hi   int64
	flo, fhi float64
	slo, shi []byte
	// String bounds: present (on) and inclusive (in).
	sloOn, shiOn, sloIn, shiIn bool
}

// fltRangeOf is the range of values of x (a vector's type) for which
// x op k holds, k a constant.
func fltRangeOf(c plan.Call, op plan.Fn, x, k *Vec) (fltRng, error) {
	switch fltClass(x.Type, k.Type) {
	case fltClsInt:
		return fltIntRange(op, k.Int(0), evScale(k), evScale(x)), nil
	case fltClsFloat:
		return fltF64Range(op, evToF64(k)[0]), nil
	case fltClsStr:
		return fltStrRange(op, k.StrAt(0)), nil
	}
	return fltRng{}, fltMismatch(c, x, k)
}

func fltMismatch(c plan.Call, x, y *Vec) error {
	return fmt.Errorf("cpu: type mismatch in %s: cannot compare %s with %s", c, evTypeName(x), evTypeName(y))
}

// fltIntBound converts the constant k of scale ks to scale xs, rounding down
// (or up, when up) to an integer. sat is -1 or +1 when the value lies below
// or above the int64 range; exact reports that no rounding happened.
func fltIntBound(k int64, ks, xs int8, up bool) (v int64, sat int, exact bool) {
	if ks <= xs {
		r, o := evMulOvf(k, evPow10[xs-ks])
		if o != 0 {
			if k < 0 {
				return 0, -1, false
			}
			return 0, 1, false
		}
		return r, 0, true
	}
	m := evPow10[ks-xs]
	q, rem := k/m, k%m // truncated toward zero
	if up && rem > 0 {
		q++
	}
	if !up && rem < 0 {
		q--
	}
	return q, 0, rem == 0
}

// fltIntRange is the range of integer-coded x (scale xs) with x op k.
func fltIntRange(op plan.Fn, k int64, ks, xs int8) fltRng {
	r := fltRng{cls: fltClsInt, lo: math.MinInt64, hi: math.MaxInt64}
	switch op {
	case plan.FnEq, plan.FnNe:
		v, sat, exact := fltIntBound(k, ks, xs, false)
		r.neg = op == plan.FnNe
		if sat != 0 || !exact {
			r.none = true
		} else {
			r.lo, r.hi = v, v
		}
	case plan.FnLt: // x < k  <=>  x <= ceil(k)-1
		v, sat, _ := fltIntBound(k, ks, xs, true)
		switch {
		case sat > 0:
		case sat < 0 || v == math.MinInt64:
			r.none = true
		default:
			r.hi = v - 1
		}
	case plan.FnLe: // x <= floor(k)
		v, sat, _ := fltIntBound(k, ks, xs, false)
		switch {
		case sat > 0:
		case sat < 0:
			r.none = true
		default:
			r.hi = v
		}
	case plan.FnGt: // x > k  <=>  x >= floor(k)+1
		v, sat, _ := fltIntBound(k, ks, xs, false)
		switch {
		case sat < 0:
		case sat > 0 || v == math.MaxInt64:
			r.none = true
		default:
			r.lo = v + 1
		}
	case plan.FnGe: // x >= ceil(k)
		v, sat, _ := fltIntBound(k, ks, xs, true)
		switch {
		case sat < 0:
		case sat > 0:
			r.none = true
		default:
			r.lo = v
		}
	}
	return r
}

// fltF64Range is the range of float x with x op k. Strict bounds step to
// the adjacent float; NaN compares false (so x <> NaN holds everywhere).
func fltF64Range(op plan.Fn, k float64) fltRng {
	r := fltRng{cls: fltClsFloat, flo: math.Inf(-1), fhi: math.Inf(1)}
	if math.IsNaN(k) {
		r.none, r.neg = true, op == plan.FnNe
		return r
	}
	switch op {
	case plan.FnEq, plan.FnNe:
		r.flo, r.fhi, r.neg = k, k, op == plan.FnNe
	case plan.FnLt:
		r.fhi = math.Nextafter(k, math.Inf(-1))
		r.none = math.IsInf(k, -1)
	case plan.FnLe:
		r.fhi = k
	case plan.FnGt:
		r.flo = math.Nextafter(k, math.Inf(1))
		r.none = math.IsInf(k, 1)
	case plan.FnGe:
		r.flo = k
	}
	return r
}

// fltStrRange is the range of string x with x op k.
func fltStrRange(op plan.Fn, k []byte) fltRng {
	r := fltRng{cls: fltClsStr}
	switch op {
	case plan.FnEq, plan.FnNe:
		r.slo, r.shi, r.neg = k, k, op == plan.FnNe
		r.sloOn, r.shiOn, r.sloIn, r.shiIn = true, true, true, true
	case plan.FnLt, plan.FnLe:
		r.shi, r.shiOn, r.shiIn = k, true, op == plan.FnLe
	case plan.FnGt, plan.FnGe:
		r.slo, r.sloOn, r.sloIn = k, true, op == plan.FnGe
	}
	return r
}

// intersect narrows r to the values o also accepts. Both are ranges of one
// class without neg (between's two bounds).
func (r *fltRng) intersect(o *fltRng) {
	r.none = r.none || o.none
	switch r.cls {
	case fltClsInt:
		r.lo, r.hi = max(r.lo, o.lo), min(r.hi, o.hi)
		r.none = r.none || r.lo > r.hi
	case fltClsFloat:
		// No bound is NaN (a NaN constant made the range none).
		r.flo, r.fhi = max(r.flo, o.flo), min(r.fhi, o.fhi)
		r.none = r.none || r.flo > r.fhi
	case fltClsStr:
		if o.sloOn {
			if d := bytes.Compare(o.slo, r.slo); !r.sloOn || d > 0 || d == 0 && !o.sloIn {
				r.slo, r.sloOn, r.sloIn = o.slo, true, o.sloIn
			}
		}
		if o.shiOn {
			if d := bytes.Compare(o.shi, r.shi); !r.shiOn || d < 0 || d == 0 && !o.shiIn {
				r.shi, r.shiOn, r.shiIn = o.shi, true, o.shiIn
			}
		}
	}
}

// apply selects the candidates whose value of x the range accepts.
func (r *fltRng) apply(x *Vec, in []int32, n int, dst []int32) []int32 {
	if r.none {
		if r.neg {
			return fltAll(in, n, dst)
		}
		return dst[:0]
	}
	switch r.cls {
	case fltClsInt:
		if x.Type == TInt64 || x.Type == TDecimal {
			return fltRangeInt(x.I64, r.lo, r.hi, r.neg, in, n, dst)
		}
		lo, hi := max(r.lo, math.MinInt32), min(r.hi, math.MaxInt32)
		if lo > hi {
			if r.neg {
				return fltAll(in, n, dst)
			}
			return dst[:0]
		}
		return fltRangeInt(x.I32, int32(lo), int32(hi), r.neg, in, n, dst)
	case fltClsFloat:
		return fltRangeF64(evToF64(x), r.flo, r.fhi, r.neg, in, n, dst)
	}
	if r.sloOn && r.shiOn && r.sloIn && r.shiIn && bytes.Equal(r.slo, r.shi) {
		return fltStrEq(x, r.slo, r.neg, in, n, dst)
	}
	return fltStrBounds(x, r, in, n, dst)
}

// evB2I is 1 for true, 0 for false; the compiler emits a flag move, so the
// selection loops below append branch-free (the cost of a predicate stays
// flat whatever its selectivity).
func evB2I(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fltRangeInt selects lo <= v[i] <= hi (or the complement, neg) with one
// unsigned comparison: v-lo wraps below lo to a large value.
func fltRangeInt[T int64 | int32](v []T, lo, hi T, neg bool, in []int32, n int, dst []int32) []int32 {
	l := int64(lo)
	span := uint64(int64(hi) - l)
	k := 0
	if in == nil {
		v, dst = v[:n], dst[:n]
		if neg {
			for i, x := range v {
				dst[k] = int32(i)
				k += evB2I(uint64(int64(x)-l) > span)
			}
		} else {
			for i, x := range v {
				dst[k] = int32(i)
				k += evB2I(uint64(int64(x)-l) <= span)
			}
		}
		return dst[:k]
	}
	dst = dst[:len(in)]
	if neg {
		for _, i := range in {
			dst[k] = i
			k += evB2I(uint64(int64(v[i])-l) > span)
		}
	} else {
		for _, i := range in {
			dst[k] = i
			k += evB2I(uint64(int64(v[i])-l) <= span)
		}
	}
	return dst[:k]
}

// fltRangeF64 selects lo <= v[i] <= hi (or the complement, neg; NaN is
// outside every range).
func fltRangeF64(v []float64, lo, hi float64, neg bool, in []int32, n int, dst []int32) []int32 {
	k := 0
	if in == nil {
		v, dst = v[:n], dst[:n]
		if neg {
			for i, x := range v {
				dst[k] = int32(i)
				k += 1 ^ (evB2I(lo <= x) & evB2I(x <= hi))
			}
		} else {
			for i, x := range v {
				dst[k] = int32(i)
				k += evB2I(lo <= x) & evB2I(x <= hi)
			}
		}
		return dst[:k]
	}
	dst = dst[:len(in)]
	if neg {
		for _, i := range in {
			x := v[i]
			dst[k] = i
			k += 1 ^ (evB2I(lo <= x) & evB2I(x <= hi))
		}
	} else {
		for _, i := range in {
			x := v[i]
			dst[k] = i
			k += evB2I(lo <= x) & evB2I(x <= hi)
		}
	}
	return dst[:k]
}

// fltStrEq selects string values equal to k (or different, neg).
func fltStrEq(x *Vec, k []byte, neg bool, in []int32, n int, dst []int32) []int32 {
	off, str := x.Off, x.Str
	j := 0
	test := func(i int32) bool {
		return bytes.Equal(str[off[i]:off[i+1]], k) != neg
	}
	if in == nil {
		for i := 0; i < n; i++ {
			dst[j] = int32(i)
			j += evB2I(test(int32(i)))
		}
		return dst[:j]
	}
	for _, i := range in {
		dst[j] = i
		j += evB2I(test(i))
	}
	return dst[:j]
}

// fltStrBounds selects string values within r's bounds (or outside, neg).
func fltStrBounds(x *Vec, r *fltRng, in []int32, n int, dst []int32) []int32 {
	off, str := x.Off, x.Str
	test := func(i int32) bool {
		s := str[off[i]:off[i+1]]
		ok := true
		if r.sloOn {
			d := bytes.Compare(s, r.slo)
			ok = d > 0 || d == 0 && r.sloIn
		}
		if ok && r.shiOn {
			d := bytes.Compare(s, r.shi)
			ok = d < 0 || d == 0 && r.shiIn
		}
		return ok != r.neg
	}
	j := 0
	if in == nil {
		for i := 0; i < n; i++ {
			dst[j] = int32(i)
			j += evB2I(test(int32(i)))
		}
		return dst[:j]
	}
	for _, i := range in {
		dst[j] = i
		j += evB2I(test(i))
	}
	return dst[:j]
}

// fltCmpVV selects where x op y holds for two vectors.
func fltCmpVV(c plan.Call, op plan.Fn, x, y *Vec, in []int32, n int, dst []int32) ([]int32, error) {
	cls := fltClass(x.Type, y.Type)
	if cls == 0 {
		return nil, fltMismatch(c, x, y)
	}
	// Only = <> < <= reach the kernels.
	if op == plan.FnGt || op == plan.FnGe {
		x, y, op = y, x, fltFlip(op)
	}
	switch cls {
	case fltClsInt:
		i32 := func(t Type) bool { return t == TInt32 || t == TDate }
		if i32(x.Type) && i32(y.Type) {
			return fltCmpVVT(op, x.I32, y.I32, in, n, dst), nil
		}
		sx, sy := evScale(x), evScale(y)
		if !i32(x.Type) && !i32(y.Type) && sx == sy {
			return fltCmpVVT(op, x.I64, y.I64, in, n, dst), nil
		}
		a, err := evToI64(x, max(sx, sy))
		if err != nil {
			return nil, fmt.Errorf("cpu: %s: %w", c, err)
		}
		b, err := evToI64(y, max(sx, sy))
		if err != nil {
			return nil, fmt.Errorf("cpu: %s: %w", c, err)
		}
		return fltCmpVVT(op, a, b, in, n, dst), nil
	case fltClsFloat:
		return fltCmpVVT(op, evToF64(x), evToF64(y), in, n, dst), nil
	}
	off1, str1, off2, str2 := x.Off, x.Str, y.Off, y.Str
	test := func(i int32) bool {
		a, b := str1[off1[i]:off1[i+1]], str2[off2[i]:off2[i+1]]
		switch op {
		case plan.FnEq:
			return bytes.Equal(a, b)
		case plan.FnNe:
			return !bytes.Equal(a, b)
		case plan.FnLt:
			return bytes.Compare(a, b) < 0
		}
		return bytes.Compare(a, b) <= 0
	}
	j := 0
	if in == nil {
		for i := 0; i < n; i++ {
			dst[j] = int32(i)
			j += evB2I(test(int32(i)))
		}
		return dst[:j], nil
	}
	for _, i := range in {
		dst[j] = i
		j += evB2I(test(i))
	}
	return dst[:j], nil
}

// fltCmpVVT selects where a[i] op b[i] (op = <> < <=).
func fltCmpVVT[T int64 | int32 | float64](op plan.Fn, a, b []T, in []int32, n int, dst []int32) []int32 {
	k := 0
	if in == nil {
		a, b, dst = a[:n], b[:n], dst[:n]
		switch op {
		case plan.FnEq:
			for i, x := range a {
				dst[k] = int32(i)
				k += evB2I(x == b[i])
			}
		case plan.FnNe:
			for i, x := range a {
				dst[k] = int32(i)
				k += evB2I(x != b[i])
			}
		case plan.FnLt:
			for i, x := range a {
				dst[k] = int32(i)
				k += evB2I(x < b[i])
			}
		case plan.FnLe:
			for i, x := range a {
				dst[k] = int32(i)
				k += evB2I(x <= b[i])
			}
		}
		return dst[:k]
	}
	dst = dst[:len(in)]
	switch op {
	case plan.FnEq:
		for _, i := range in {
			dst[k] = i
			k += evB2I(a[i] == b[i])
		}
	case plan.FnNe:
		for _, i := range in {
			dst[k] = i
			k += evB2I(a[i] != b[i])
		}
	case plan.FnLt:
		for _, i := range in {
			dst[k] = i
			k += evB2I(a[i] < b[i])
		}
	case plan.FnLe:
		for _, i := range in {
			dst[k] = i
			k += evB2I(a[i] <= b[i])
		}
	}
	return dst[:k]
}

// fltInSmall is the longest list searched linearly; longer ones use a map.
const fltInSmall = 8

// fltIn selects where x is (or, neg, is not) one of the literals.
func fltIn(c plan.Call, x *evVal, lits []plan.Lit, neg bool, in []int32, n int, dst []int32) ([]int32, error) {
	if x.konst {
		return fltConst(in, n, dst, func(one []int32) ([]int32, error) {
			return fltIn(c, &evVal{v: x.v}, lits, neg, nil, 1, one)
		})
	}
	ks := make([]Vec, len(lits))
	float := false
	for i, l := range lits {
		k, err := evLit(l)
		if err != nil {
			return nil, fmt.Errorf("cpu: %s: %w", c, err)
		}
		ks[i] = k.v
		switch fltClass(x.v.Type, k.v.Type) {
		case 0:
			return nil, fltMismatch(c, &x.v, &k.v)
		case fltClsFloat:
			float = true
		}
	}
	v := &x.v
	switch {
	case float:
		// Some item or the value is a float: all compare as float64.
		list := make([]float64, len(ks))
		for i := range ks {
			list[i] = evToF64(&ks[i])[0]
		}
		return fltInList(evToF64(v), list, neg, in, n, dst), nil
	case v.Type == TString:
		list := make([][]byte, len(ks))
		for i := range ks {
			list[i] = ks[i].StrAt(0)
		}
		return fltInStr(v, list, neg, in, n, dst), nil
	}
	// Integer-coded: items that are not exactly a value of x's scale (and
	// width) can never match and are dropped.
	var list []int64
	for i := range ks {
		if k, sat, exact := fltIntBound(ks[i].Int(0), evScale(&ks[i]), evScale(v), false); sat == 0 && exact {
			list = append(list, k)
		}
	}
	if v.Type == TInt64 || v.Type == TDecimal {
		return fltInList(v.I64, list, neg, in, n, dst), nil
	}
	var l32 []int32
	for _, k := range list {
		if k >= math.MinInt32 && k <= math.MaxInt32 {
			l32 = append(l32, int32(k))
		}
	}
	return fltInList(v.I32, l32, neg, in, n, dst), nil
}

// fltInList selects where v[i] is (neg: is not) in list.
func fltInList[T int64 | int32 | float64](v, list []T, neg bool, in []int32, n int, dst []int32) []int32 {
	var set map[T]struct{}
	if len(list) > fltInSmall {
		set = make(map[T]struct{}, len(list))
		for _, k := range list {
			set[k] = struct{}{}
		}
	}
	test := func(x T) bool {
		if set != nil {
			_, ok := set[x]
			return ok != neg
		}
		for _, k := range list {
			if x == k {
				return !neg
			}
		}
		return neg
	}
	j := 0
	if in == nil {
		for i, x := range v[:n] {
			dst[j] = int32(i)
			j += evB2I(test(x))
		}
		return dst[:j]
	}
	for _, i := range in {
		dst[j] = i
		j += evB2I(test(v[i]))
	}
	return dst[:j]
}

// fltInStr selects where string v[i] is (neg: is not) in list.
func fltInStr(v *Vec, list [][]byte, neg bool, in []int32, n int, dst []int32) []int32 {
	var set map[string]struct{}
	if len(list) > fltInSmall {
		set = make(map[string]struct{}, len(list))
		for _, k := range list {
			set[string(k)] = struct{}{}
		}
	}
	off, str := v.Off, v.Str
	test := func(i int32) bool {
		s := str[off[i]:off[i+1]]
		if set != nil {
			_, ok := set[string(s)] // no allocation: map index by converted bytes
			return ok != neg
		}
		for _, k := range list {
			if bytes.Equal(s, k) {
				return !neg
			}
		}
		return neg
	}
	j := 0
	if in == nil {
		for i := 0; i < n; i++ {
			dst[j] = int32(i)
			j += evB2I(test(int32(i)))
		}
		return dst[:j]
	}
	for _, i := range in {
		dst[j] = i
		j += evB2I(test(i))
	}
	return dst[:j]
}

// fltLike selects where string x matches m (neg: does not).
func fltLike(c plan.Call, x *evVal, m *Matcher, neg bool, in []int32, n int, dst []int32) ([]int32, error) {
	if x.v.Type != TString {
		return nil, fmt.Errorf("cpu: type mismatch in %s: like over %s", c, evTypeName(&x.v))
	}
	if x.konst {
		return fltConst(in, n, dst, func(one []int32) ([]int32, error) {
			return fltLike(c, &evVal{v: x.v}, m, neg, nil, 1, one)
		})
	}
	off, str := x.v.Off, x.v.Str
	j := 0
	if in == nil {
		for i := 0; i < n; i++ {
			dst[j] = int32(i)
			j += evB2I(m.Match(str[off[i]:off[i+1]]) != neg)
		}
		return dst[:j], nil
	}
	for _, i := range in {
		dst[j] = i
		j += evB2I(m.Match(str[off[i]:off[i+1]]) != neg)
	}
	return dst[:j], nil
}
