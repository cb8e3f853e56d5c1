package sqlplan

import (
	"fmt"

	"gostachio/plan"
)

// kind is the type of a bound expression, following plan/expr.go's typing
// rules (what the engine's kernels evaluate).
type kind uint8

const (
	kInvalid kind = iota
	kInt          // int64
	kInt32        // int32
	kDecimal      // int64 scaled by 10^scale
	kDate         // date32
	kString       // utf8
	kFloat        // float64
	kBool         // predicates
)

var kindNames = [...]string{"invalid", "bigint", "integer", "decimal", "date", "text", "double", "boolean"}

// typ is a type with its decimal scale.
type typ struct {
	k     kind
	scale int
}

func (t typ) String() string {
	if t.k == kDecimal {
		return fmt.Sprintf("decimal(scale %d)", t.scale)
	}
	if int(t.k) < len(kindNames) {
		return kindNames[t.k]
	}
	return "invalid"
}

func (t typ) integer() bool { return t.k == kInt || t.k == kInt32 }
func (t typ) numeric() bool { return t.integer() || t.k == kDecimal || t.k == kFloat }

// typeOf maps a stored column type.
func typeOf(c plan.ColumnStats) (typ, bool) {
	switch c.Type {
	case plan.TypeInt64:
		return typ{k: kInt}, true
	case plan.TypeInt32:
		return typ{k: kInt32}, true
	case plan.TypeDecimal:
		return typ{k: kDecimal, scale: c.Scale}, true
	case plan.TypeDate:
		return typ{k: kDate}, true
	case plan.TypeString:
		return typ{k: kString}, true
	case plan.TypeFloat64:
		return typ{k: kFloat}, true
	}
	return typ{}, false
}

// arith types a + b, a - b, a * b and a / b, or says why not.
func arith(op plan.Fn, a, b typ) (typ, error) {
	switch {
	case a.numeric() && b.numeric():
		if op == plan.FnDiv || a.k == kFloat || b.k == kFloat {
			return typ{k: kFloat}, nil
		}
		if a.k == kDecimal || b.k == kDecimal {
			if op == plan.FnMul {
				return typ{k: kDecimal, scale: a.scale + b.scale}, nil
			}
			return typ{k: kDecimal, scale: max(a.scale, b.scale)}, nil
		}
		return typ{k: kInt}, nil
	case a.k == kDate && b.integer() && (op == plan.FnAdd || op == plan.FnSub):
		return typ{k: kDate}, nil
	case a.integer() && b.k == kDate && op == plan.FnAdd:
		return typ{k: kDate}, nil
	case a.k == kDate && b.k == kDate && op == plan.FnSub:
		return typ{k: kInt}, nil
	}
	return typ{}, fmt.Errorf("cannot apply %s to %s and %s", op, a, b)
}

// comparable reports whether values of a and b may be compared.
func comparable(a, b typ) bool {
	switch {
	case a.numeric() && b.numeric():
		return true
	case a.k == b.k:
		return a.k != kBool
	}
	return false
}

// width is the estimated bytes of one value of t: 8 for 64-bit numbers, 4
// for int32 and dates, the average length plus an offset for text
// (defaultTextLen where unknown), 1 for a predicate.
func width(t typ, avgLen float64) int {
	switch t.k {
	case kInt32, kDate:
		return 4
	case kString:
		if avgLen <= 0 {
			avgLen = defaultTextLen
		}
		return int(avgLen+0.5) + textOffsetBytes
	case kBool:
		return 1
	}
	return 8
}
