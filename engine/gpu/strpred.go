package gpu

import (
	"fmt"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
	"gostachio/plan"
)

// String predicates of the operator-at-a-time path (strings.cu): a string
// column compared with a string literal, in a list of string literals (of
// the whole value or of substring(col from s for n)), LIKE and NOT LIKE a
// pattern. Bytes compare as plan/expr.go and the CPU kernels say: bytewise,
// a shorter value less on a common prefix; '%' any run, '_' one byte.

// stringPredicate reports whether c is one of the string predicates above
// (its shape only: whether its column is a string is known at run time).
func stringPredicate(c plan.Call) bool {
	switch c.Fn {
	case plan.FnLike, plan.FnNotLike:
		_, col := c.Args[0].(plan.Col)
		return col && isStrLit(c.Args[1])
	case plan.FnIn, plan.FnNotIn:
		if !strOperand(c.Args[0]) {
			return false
		}
		for _, a := range c.Args[1:] {
			if !isStrLit(a) {
				return false
			}
		}
		return len(c.Args) > 1
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe:
		_, c0 := c.Args[0].(plan.Col)
		_, c1 := c.Args[1].(plan.Col)
		return (c0 && isStrLit(c.Args[1])) || (c1 && isStrLit(c.Args[0]))
	}
	return false
}

func isStrLit(e plan.Expr) bool {
	l, ok := e.(plan.Lit)
	return ok && l.Kind == plan.LitString
}

// strOperand: a column, or substring(column from s for n) with s >= 1
// and n >= 0 literals.
func strOperand(e plan.Expr) bool {
	switch e := e.(type) {
	case plan.Col:
		return true
	case plan.Call:
		_, start0, n, ok := substrArgs(e)
		return ok && start0 >= 0 && n >= 0
	}
	return false
}

// substrArgs splits substring(col from s for n) into the column, s-1 and n.
func substrArgs(c plan.Call) (col plan.Col, start0, n int64, ok bool) {
	if c.Fn != plan.FnSubstr || len(c.Args) != 3 {
		return "", 0, 0, false
	}
	col, ok1 := c.Args[0].(plan.Col)
	s, ok2 := c.Args[1].(plan.Lit)
	l, ok3 := c.Args[2].(plan.Lit)
	if !ok1 || !ok2 || !ok3 || s.Kind != plan.LitInt || l.Kind != plan.LitInt || s.I < 1 || s.I > 1<<30 || l.I > 1<<30 {
		return "", 0, 0, false
	}
	return col, s.I - 1, l.I, true
}

// strCol is the string column named name.
func (r *run) strCol(name plan.Col) (Col, error) {
	c, ok := r.cols[string(name)]
	if !ok {
		return Col{}, fmt.Errorf("no column %s", name)
	}
	if c.Type != cpu.TString {
		return Col{}, fmt.Errorf("column %s is %s, not a string", name, c.Type)
	}
	return c, nil
}

// deviceBytes copies b to device memory (at least one byte: an empty
// literal still has an address) and waits for the copy.
func (r *run) deviceBytes(b []byte) (cuda.DevicePtr, error) {
	p, err := r.arena.alloc(len(b))
	if err != nil {
		return 0, err
	}
	if err := r.s.CopyHtoD(p, b); err != nil {
		return 0, err
	}
	return p, r.s.Synchronize()
}

// strPred evaluates string predicate c (stringPredicate) into flags.
func (r *run) strPred(c plan.Call, flags cuda.DevicePtr, mode int32) error {
	n := int32(r.n)
	switch c.Fn {
	case plan.FnLike, plan.FnNotLike:
		col, err := r.strCol(c.Args[0].(plan.Col))
		if err != nil {
			return err
		}
		pat := c.Args[1].(plan.Lit).S
		dp, err := r.deviceBytes([]byte(pat))
		if err != nil {
			return err
		}
		neg := int32(0)
		if c.Fn == plan.FnNotLike {
			neg = 1
		}
		return r.launch("strings", "str_like", 0, col.Off, col.Data, n, dp, int32(len(pat)), neg, flags, mode)
	case plan.FnIn, plan.FnNotIn:
		name, start0, length := plan.Col(""), int64(0), int64(-1)
		switch e := c.Args[0].(type) {
		case plan.Col:
			name = e
		case plan.Call:
			name, start0, length, _ = substrArgs(e)
		}
		col, err := r.strCol(name)
		if err != nil {
			return err
		}
		offs := make([]int32, 1, len(c.Args))
		var data []byte
		for _, a := range c.Args[1:] {
			data = append(data, a.(plan.Lit).S...)
			offs = append(offs, int32(len(data)))
		}
		dOff, err := r.deviceBytes(bytesOf(offs))
		if err != nil {
			return err
		}
		dData, err := r.deviceBytes(data)
		if err != nil {
			return err
		}
		neg := int32(0)
		if c.Fn == plan.FnNotIn {
			neg = 1
		}
		return r.launch("strings", "str_in", 0, col.Off, col.Data, n, int32(start0), int32(length),
			dOff, dData, int32(len(c.Args)-1), neg, flags, mode)
	}
	op, _ := cmpOp(c.Fn)
	colArg, litArg := c.Args[0], c.Args[1]
	if _, ok := colArg.(plan.Col); !ok {
		colArg, litArg, op = litArg, colArg, swapped(op)
	}
	col, err := r.strCol(colArg.(plan.Col))
	if err != nil {
		return err
	}
	lit := litArg.(plan.Lit).S
	dl, err := r.deviceBytes([]byte(lit))
	if err != nil {
		return err
	}
	return r.launch("strings", "str_cmp", 0, col.Off, col.Data, n, op, dl, int32(len(lit)), flags, mode)
}
