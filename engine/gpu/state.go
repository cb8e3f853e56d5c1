package gpu

import (
	"fmt"
	"sort"
	"strings"

	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// StateRows renders an aggregate state as sorted rows of
// "name=type:value" cells: two states are equal as sets of groups (the
// order of groups is not part of a state) when their rows are. A nil
// state has none.
func StateRows(b *cpu.Batch) []string {
	if b == nil {
		return nil
	}
	rows := make([]string, 0, b.Rows)
	for i := 0; i < b.Rows; i++ {
		cells := make([]string, len(b.Names))
		for k, n := range b.Names {
			cells[k] = fmt.Sprintf("%s=%s:%s", n, b.Cols[k].Type, b.Cols[k].Format(i))
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	sort.Strings(rows)
	return rows
}

// CPUState is the CPU engine's partial aggregate state of ops (a scan
// pipeline's, as Partial takes them) over all parts: the reference the
// GPU path is checked against.
func CPUState(parts []*cpu.Batch, ops []plan.Op) (*cpu.Batch, error) {
	var agg *cpu.Aggregator
	for _, b := range parts {
		var err error
		for i := range ops {
			op := &ops[i]
			switch op.Kind {
			case plan.OpFilter:
				b, err = cpu.Filter(b, op.Expr)
			case plan.OpProject:
				b, err = cpu.Project(b, op.Expr.(plan.Projection))
			case plan.OpAggPartial:
				aggs := op.Expr.(plan.Aggs)
				if agg == nil {
					agg = cpu.NewAggregator(op.Keys, aggs, false)
				}
				args := make([]*cpu.Vec, len(aggs))
				for j, a := range aggs {
					if a.Arg != nil {
						v, err := cpu.Eval(b, a.Arg)
						if err != nil {
							return nil, err
						}
						args[j] = &v
					}
				}
				err = agg.Update(b, args)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if agg == nil {
		return nil, nil
	}
	return agg.Emit(false)
}
