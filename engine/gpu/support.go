package gpu

import (
	"fmt"

	"gostachio/plan"
)

// Supported reports whether the streaming ops of a scan pipeline (ops as
// the scheduler's kernel tasks carry them: scan, filters, projections, a
// partial aggregate, then the pipeline's exchange) run on the GPU path,
// and otherwise names the first operator or expression that does not. It
// looks at the plan only: column types are checked when the pipeline runs.
func Supported(ops []plan.Op) error {
	agg := false
	for i := range ops {
		op := &ops[i]
		if agg {
			switch op.Kind {
			case plan.OpGather, plan.OpShuffle, plan.OpBroadcast:
				// The partial state is routed by the host.
				continue
			}
			return unsupported(op, "after a partial aggregate")
		}
		switch op.Kind {
		case plan.OpScan:
		case plan.OpFilter:
			if err := predicateSupported(op.Expr, false); err != nil {
				return fmt.Errorf("%s %q: %w", op.Kind, op.Label, err)
			}
		case plan.OpProject:
			proj, ok := op.Expr.(plan.Projection)
			if !ok {
				return unsupported(op, "without a projection list")
			}
			for _, n := range proj {
				if err := valueSupported(n.E); err != nil {
					return fmt.Errorf("%s %q: %s: %w", op.Kind, op.Label, n.Name, err)
				}
			}
		case plan.OpAggPartial:
			aggs, ok := op.Expr.(plan.Aggs)
			if !ok {
				return unsupported(op, "without an aggregate list")
			}
			for _, a := range aggs {
				switch a.Fn {
				case plan.AggSum, plan.AggAvg, plan.AggMin, plan.AggMax, plan.AggCount:
				default:
					return fmt.Errorf("%s %q: aggregate %s: not on the GPU path yet", op.Kind, op.Label, a)
				}
				if a.Arg != nil {
					if err := valueSupported(a.Arg); err != nil {
						return fmt.Errorf("%s %q: %s: %w", op.Kind, op.Label, a.As, err)
					}
				}
			}
			agg = true
		default:
			return unsupported(op, "")
		}
	}
	if !agg {
		return fmt.Errorf("pipeline does not end in a partial aggregate: the GPU path returns aggregate states only")
	}
	return nil
}

func unsupported(op *plan.Op, where string) error {
	if where != "" {
		where = " " + where
	}
	return fmt.Errorf("operator %s %q%s: not on the GPU path yet (it runs scan, filter, project and partial aggregates)", op.Kind, op.Label, where)
}

// predicateSupported: and/or/not of comparisons, between and in over
// integer, decimal and date values; with strings (the operator-at-a-time
// path: the row path) also the string predicates of strpred.go.
func predicateSupported(e plan.Expr, strings bool) error {
	c, ok := e.(plan.Call)
	if !ok {
		return fmt.Errorf("predicate %s: not a comparison", e)
	}
	if strings && stringPredicate(c) {
		return nil
	}
	switch c.Fn {
	case plan.FnAnd, plan.FnOr, plan.FnNot:
		for _, a := range c.Args {
			if err := predicateSupported(a, strings); err != nil {
				return err
			}
		}
		return nil
	case plan.FnEq, plan.FnNe, plan.FnLt, plan.FnLe, plan.FnGt, plan.FnGe, plan.FnBetween:
		for _, a := range c.Args {
			if err := valueSupported(a); err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
		}
		return nil
	case plan.FnIn, plan.FnNotIn:
		if err := valueSupported(c.Args[0]); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		for _, a := range c.Args[1:] {
			if l, ok := a.(plan.Lit); !ok || (l.Kind != plan.LitInt && l.Kind != plan.LitDate) {
				return fmt.Errorf("%s: only lists of integers and dates run on the GPU path yet", c)
			}
		}
		return nil
	}
	return fmt.Errorf("%s: %s is not on the GPU path yet", c, c.Fn)
}

// valueSupported: columns, integer/decimal/date literals, and + - * of
// integer and decimal values.
func valueSupported(e plan.Expr) error {
	switch e := e.(type) {
	case plan.Col:
		return nil
	case plan.Lit:
		switch e.Kind {
		case plan.LitInt, plan.LitDecimal, plan.LitDate:
			return nil
		}
		return fmt.Errorf("literal %s: only integer, decimal and date literals run on the GPU path yet", e)
	case plan.Call:
		switch e.Fn {
		case plan.FnAdd, plan.FnSub, plan.FnMul:
			for _, a := range e.Args {
				if err := valueSupported(a); err != nil {
					return err
				}
			}
			return nil
		}
		return fmt.Errorf("%s: %s is not on the GPU path yet", e, e.Fn)
	}
	return fmt.Errorf("expression %v: not on the GPU path yet", e)
}
