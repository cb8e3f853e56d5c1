package gpu

import (
	"fmt"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// run is one pipeline run over a device batch: the launches go to one
// stream; scratch memory lives in the run's arena until Partial returns.
type run struct {
	d     *Device
	s     *cuda.Stream
	batch *Batch
	n     int
	cols  map[string]Col
	arena arena
	ovf   cuda.DevicePtr // int32: set by an arithmetic kernel that overflowed
	// memo holds the arithmetic results computed over the current columns
	// by expression text (Q1 computes l_extendedprice * (1 - l_discount)
	// for two sums): a projection, which replaces the columns, clears it.
	memo map[string]value
	// launches counts the kernels launched (the trace's kernel count).
	launches int
}

// newRun starts a run of the operator path over in on stream s: in's
// columns, and the overflow flag that arithmetic kernels set. Close the
// run (also when newRun fails) once done with what it made.
func (d *Device) newRun(s *cuda.Stream, in *Batch) (*run, error) {
	r := &run{d: d, s: s, batch: in, n: in.Rows, cols: map[string]Col{}, arena: arena{d: d}}
	for i, name := range in.Names {
		r.cols[name] = in.Cols[i]
	}
	var err error
	r.ovf, err = r.scratch(1, 4)
	return r, err
}

// close waits for the run's stream and returns its device memory.
func (r *run) close() {
	r.s.Synchronize()
	r.arena.release()
}

func (r *run) launch(mod, name string, shared int, args ...any) error {
	r.launches++
	if err := r.d.launch(r.s, mod, name, r.n, shared, args...); err != nil {
		return err
	}
	return nil
}

// scratch is zeroed device memory for n values of size bytes each.
func (r *run) scratch(n, size int) (cuda.DevicePtr, error) {
	p, err := r.arena.alloc(n * size)
	if err != nil {
		return 0, err
	}
	return p, r.s.Memset8(p, 0, max(n*size, 1))
}

var pow10 = [19]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// value is an evaluated operand: a device column or a literal.
type value struct {
	col   Col
	lit   bool
	i     int64 // literal value (days for dates)
	typ   cpu.Type
	scale int8
}

func (v value) integer() bool { return integerType(v.typ) }

func litValue(l plan.Lit) (value, error) {
	switch l.Kind {
	case plan.LitInt:
		return value{lit: true, i: l.I, typ: cpu.TInt64}, nil
	case plan.LitDecimal:
		return value{lit: true, i: l.I, typ: cpu.TDecimal, scale: l.Scale}, nil
	case plan.LitDate:
		return value{lit: true, i: l.I, typ: cpu.TDate}, nil
	}
	return value{}, fmt.Errorf("literal %s: not on the GPU path yet", l)
}

// rescale multiplies x by 10^k, failing where it leaves int64.
func rescale(x int64, k int8) (int64, error) {
	if k < 0 || k > 18 {
		return 0, fmt.Errorf("decimal scale change of %d digits", k)
	}
	m := pow10[k]
	if x != 0 && (x*m/m != x) {
		return 0, fmt.Errorf("literal %d x 10^%d overflows int64", x, k)
	}
	return x * m, nil
}

// eval evaluates a value expression: columns as they are, arithmetic into
// new int64 columns (plan/expr.go's typing: + and - align scales, *
// adds them).
func (r *run) eval(e plan.Expr) (value, error) {
	switch e := e.(type) {
	case plan.Col:
		c, ok := r.cols[string(e)]
		if !ok {
			return value{}, fmt.Errorf("no column %s", e)
		}
		return value{col: c, typ: c.Type, scale: c.Scale}, nil
	case plan.Lit:
		return litValue(e)
	case plan.Call:
		if len(e.Args) != 2 {
			break
		}
		key := e.String()
		if v, ok := r.memo[key]; ok {
			return v, nil
		}
		x, err := r.eval(e.Args[0])
		if err != nil {
			return value{}, err
		}
		y, err := r.eval(e.Args[1])
		if err != nil {
			return value{}, err
		}
		switch e.Fn {
		case plan.FnAdd, plan.FnSub, plan.FnMul:
			v, err := r.arith(e, x, y)
			if err == nil {
				if r.memo == nil {
					r.memo = map[string]value{}
				}
				r.memo[key] = v
			}
			return v, err
		}
	}
	return value{}, fmt.Errorf("%s: not on the GPU path yet", e)
}

// widen converts an int32 column to a new int64 column (other values as
// they are).
func (r *run) widen(v value) (value, error) {
	if v.lit || v.col.Type != cpu.TInt32 {
		return v, nil
	}
	out, err := r.scratch(r.n, 8)
	if err != nil {
		return value{}, err
	}
	if err := r.launch("arith", "i32_to_i64", 0, v.col.Data, int32(r.n), out); err != nil {
		return value{}, err
	}
	v.col = Col{Type: cpu.TInt64, Data: out}
	v.typ = cpu.TInt64
	return v, nil
}

func (r *run) arith(c plan.Call, x, y value) (value, error) {
	if !x.integer() || !y.integer() {
		return value{}, fmt.Errorf("%s: %s %s %s is not on the GPU path yet (integer and decimal arithmetic only)", c, x.typ, c.Fn, y.typ)
	}
	if x.lit && y.lit {
		return value{}, fmt.Errorf("%s: arithmetic of two literals (fold it in the plan)", c)
	}
	var err error
	if x, err = r.widen(x); err != nil {
		return value{}, err
	}
	if y, err = r.widen(y); err != nil {
		return value{}, err
	}
	typ := cpu.TInt64
	if x.typ == cpu.TDecimal || y.typ == cpu.TDecimal {
		typ = cpu.TDecimal
	}
	out, err := r.scratch(r.n, 8)
	if err != nil {
		return value{}, err
	}
	res := value{col: Col{Type: typ, Data: out}, typ: typ}
	n := int32(r.n)
	if c.Fn == plan.FnMul {
		s := x.scale + y.scale
		if s > 18 {
			return value{}, fmt.Errorf("%s: product scale %d exceeds 18", c, s)
		}
		switch {
		case x.lit:
			err = r.launch("arith", "dec_mul_lit", 0, y.col.Data, x.i, n, out, r.ovf)
		case y.lit:
			err = r.launch("arith", "dec_mul_lit", 0, x.col.Data, y.i, n, out, r.ovf)
		default:
			err = r.launch("arith", "dec_mul", 0, x.col.Data, y.col.Data, n, out, r.ovf)
		}
		res.scale = s
	} else {
		s := max(x.scale, y.scale)
		ax, ay := pow10[s-x.scale], pow10[s-y.scale]
		sub := int32(0)
		if c.Fn == plan.FnSub {
			sub = 1
		}
		switch {
		case y.lit:
			lit, lerr := rescale(y.i, s-y.scale)
			if lerr != nil {
				return value{}, fmt.Errorf("%s: %w", c, lerr)
			}
			err = r.launch("arith", "dec_addsub_lit", 0, x.col.Data, ax, lit, n, sub, out, r.ovf)
		case x.lit:
			lit, lerr := rescale(x.i, s-x.scale)
			if lerr != nil {
				return value{}, fmt.Errorf("%s: %w", c, lerr)
			}
			op := int32(0) // lit + y
			if sub == 1 {
				op = 2 // lit - y
			}
			err = r.launch("arith", "dec_addsub_lit", 0, y.col.Data, ay, lit, n, op, out, r.ovf)
		default:
			err = r.launch("arith", "dec_addsub", 0, x.col.Data, ax, y.col.Data, ay, n, sub, out, r.ovf)
		}
		res.scale = s
	}
	if typ != cpu.TDecimal {
		res.scale = 0
	}
	res.col.Scale = res.scale
	return res, err
}

// Comparison operators as common.cuh numbers them.
func cmpOp(f plan.Fn) (int32, bool) {
	switch f {
	case plan.FnEq:
		return 0, true
	case plan.FnNe:
		return 1, true
	case plan.FnLt:
		return 2, true
	case plan.FnLe:
		return 3, true
	case plan.FnGt:
		return 4, true
	case plan.FnGe:
		return 5, true
	}
	return 0, false
}

// swapped is the operator of a comparison with its operands exchanged.
func swapped(op int32) int32 {
	switch op {
	case 2:
		return 4
	case 3:
		return 5
	case 4:
		return 2
	case 5:
		return 3
	}
	return op
}

// Flag combination modes (common.cuh).
const (
	modeSet int32 = 0
	modeAnd int32 = 1
	modeOr  int32 = 2
)

// pred evaluates predicate e into flags, combined with what flags holds by
// mode.
func (r *run) pred(e plan.Expr, flags cuda.DevicePtr, mode int32) error {
	c, ok := e.(plan.Call)
	if !ok {
		return fmt.Errorf("predicate %s: not on the GPU path yet", e)
	}
	n := int32(r.n)
	switch c.Fn {
	case plan.FnAnd, plan.FnOr:
		inner := modeAnd
		if c.Fn == plan.FnOr {
			inner = modeOr
		}
		if mode != modeSet && mode != inner {
			// (a or b) and ...: evaluate apart, then combine.
			tmp, err := r.scratch(r.n, 1)
			if err != nil {
				return err
			}
			if err := r.pred(e, tmp, modeSet); err != nil {
				return err
			}
			return r.launch("select", "flags_combine", 0, flags, tmp, n, mode)
		}
		for i, a := range c.Args {
			m := inner
			if i == 0 {
				m = mode
			}
			if err := r.pred(a, flags, m); err != nil {
				return err
			}
		}
		return nil
	case plan.FnNot:
		tmp := flags
		if mode != modeSet {
			var err error
			if tmp, err = r.scratch(r.n, 1); err != nil {
				return err
			}
		}
		if err := r.pred(c.Args[0], tmp, modeSet); err != nil {
			return err
		}
		if err := r.launch("select", "flags_not", 0, tmp, n); err != nil {
			return err
		}
		if mode != modeSet {
			return r.launch("select", "flags_combine", 0, flags, tmp, n, mode)
		}
		return nil
	}
	if stringPredicate(c) {
		return r.strPred(c, flags, mode)
	}
	switch c.Fn {
	case plan.FnBetween:
		return r.between(c, flags, mode)
	case plan.FnIn, plan.FnNotIn:
		return r.in(c, flags, mode)
	}
	op, ok := cmpOp(c.Fn)
	if !ok || len(c.Args) != 2 {
		return fmt.Errorf("predicate %s: not on the GPU path yet", c)
	}
	x, err := r.eval(c.Args[0])
	if err != nil {
		return err
	}
	y, err := r.eval(c.Args[1])
	if err != nil {
		return err
	}
	if x.lit {
		x, y, op = y, x, swapped(op)
	}
	if x.lit {
		return fmt.Errorf("predicate %s: comparison of two literals (fold it in the plan)", c)
	}
	date := func(v value) bool { return v.typ == cpu.TDate }
	switch {
	case date(x) || date(y):
		if !date(x) || !date(y) {
			return fmt.Errorf("predicate %s: compares a date with %s", c, map[bool]cpu.Type{true: y.typ, false: x.typ}[date(x)])
		}
		if y.lit {
			return r.launch("select", "pred_cmp_i32", 0, x.col.Data, n, op, y.i, flags, mode)
		}
		return r.launch("select", "pred_cmp_i32_i32", 0, x.col.Data, y.col.Data, n, op, flags, mode)
	case x.typ == cpu.TInt32 && y.typ == cpu.TInt32 && !y.lit:
		return r.launch("select", "pred_cmp_i32_i32", 0, x.col.Data, y.col.Data, n, op, flags, mode)
	case x.typ == cpu.TInt32 && y.lit && y.typ == cpu.TInt64:
		return r.launch("select", "pred_cmp_i32", 0, x.col.Data, n, op, y.i, flags, mode)
	case x.integer() && y.integer():
		if x, err = r.widen(x); err != nil {
			return err
		}
		if y, err = r.widen(y); err != nil {
			return err
		}
		s := max(x.scale, y.scale)
		ax := pow10[s-x.scale]
		if y.lit {
			lit, err := rescale(y.i, s-y.scale)
			if err != nil {
				return fmt.Errorf("predicate %s: %w", c, err)
			}
			return r.launch("select", "pred_cmp_i64", 0, x.col.Data, ax, n, op, lit, flags, mode)
		}
		return r.launch("select", "pred_cmp_i64_i64", 0, x.col.Data, ax, y.col.Data, pow10[s-y.scale], n, op, flags, mode)
	}
	return fmt.Errorf("predicate %s: %s against %s is not on the GPU path yet", c, x.typ, y.typ)
}

func (r *run) between(c plan.Call, flags cuda.DevicePtr, mode int32) error {
	x, err := r.eval(c.Args[0])
	if err != nil {
		return err
	}
	lo, err := r.eval(c.Args[1])
	if err != nil {
		return err
	}
	hi, err := r.eval(c.Args[2])
	if err != nil {
		return err
	}
	if x.lit || !lo.lit || !hi.lit {
		return fmt.Errorf("predicate %s: only column between literals runs on the GPU path yet", c)
	}
	n := int32(r.n)
	switch {
	case x.typ == cpu.TDate || x.typ == cpu.TInt32:
		if lo.typ == cpu.TDecimal || hi.typ == cpu.TDecimal || (x.typ == cpu.TDate) != (lo.typ == cpu.TDate) || (x.typ == cpu.TDate) != (hi.typ == cpu.TDate) {
			return fmt.Errorf("predicate %s: mixed types", c)
		}
		return r.launch("select", "pred_between_i32", 0, x.col.Data, n, lo.i, hi.i, flags, mode)
	case x.integer() && lo.integer() && hi.integer():
		s := max(x.scale, lo.scale, hi.scale)
		l, err := rescale(lo.i, s-lo.scale)
		if err != nil {
			return fmt.Errorf("predicate %s: %w", c, err)
		}
		h, err := rescale(hi.i, s-hi.scale)
		if err != nil {
			return fmt.Errorf("predicate %s: %w", c, err)
		}
		return r.launch("select", "pred_between_i64", 0, x.col.Data, pow10[s-x.scale], n, l, h, flags, mode)
	}
	return fmt.Errorf("predicate %s: %s between %s and %s is not on the GPU path yet", c, x.typ, lo.typ, hi.typ)
}

func (r *run) in(c plan.Call, flags cuda.DevicePtr, mode int32) error {
	x, err := r.eval(c.Args[0])
	if err != nil {
		return err
	}
	if x.lit || x.typ == cpu.TDecimal || !(x.integer() || x.typ == cpu.TDate) {
		return fmt.Errorf("predicate %s: only integer and date columns in lists run on the GPU path yet", c)
	}
	list := make([]int64, 0, len(c.Args)-1)
	for _, a := range c.Args[1:] {
		l, ok := a.(plan.Lit)
		if !ok || (l.Kind != plan.LitInt && l.Kind != plan.LitDate) || (l.Kind == plan.LitDate) != (x.typ == cpu.TDate) {
			return fmt.Errorf("predicate %s: list item %s does not match the column", c, a)
		}
		list = append(list, l.I)
	}
	dl, err := r.arena.alloc(8 * len(list))
	if err != nil {
		return err
	}
	if err := r.s.CopyHtoD(dl, bytesOf(list)); err != nil {
		return err
	}
	// The copy reads list asynchronously: wait before it goes out of scope.
	if err := r.s.Synchronize(); err != nil {
		return err
	}
	neg := int32(0)
	if c.Fn == plan.FnNotIn {
		neg = 1
	}
	kernel := "pred_in_i64"
	if x.typ == cpu.TInt32 || x.typ == cpu.TDate {
		kernel = "pred_in_i32"
	}
	return r.launch("select", kernel, 0, x.col.Data, int32(r.n), dl, int32(len(list)), neg, flags, mode)
}
