package cluster

import (
	"fmt"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// The queries' own operators as co-location work: the loop's 8 MiB
// table sits where four processes lose the most (the eighth session's
// sizes: 28–39% at 8 MiB, nothing at 32 KiB or 64 MiB), while the
// queries' scan pipelines stream filters and projections over columns
// and fold into tables of many sizes. So a peer can run instead the
// leading operators of the queries' scan pipelines — as the engine's
// kernels run them, on the first chunks of their tables — and count the
// rows it put through them. It is not bench-sim's default: on the dev VM
// these operators kept 0.77–0.90 of one process's speed where the loop
// kept 0.60–0.63, and priced with it the simulator under-predicted the
// cluster by 14–23% at 1 and 10 Gbit/s, where the loop's figure was
// within 10% (README, issue 9, twelfth session): the workers lose to
// their I/O, exchanges and collector too, which the loop's larger loss
// stands for.

// queryOpsRows is about how many rows of its table each pipeline's input
// holds (whole chunks: lineitem's first, at the default chunking).
const queryOpsRows = 128 << 10

// queryOpsPipe is one scan pipeline's leading operators and their input.
type queryOpsPipe struct {
	name string
	ops  []plan.Op
	in   *cpu.Batch
}

// queryOpsStep loads the inputs of work.Queries' scan pipelines from
// work.Data and returns a step that runs one pipeline's leading operators
// (filters, projections, and a partial aggregate or shuffle that ends
// them) over its input, the pipelines in turn (each thread from its own
// place in the turn), and returns the input's rows.
func queryOpsStep(work ColocationWork) (func(thread, i int) (int64, error), error) {
	ds, err := dataset.Open(work.Data)
	if err != nil {
		return nil, err
	}
	inputs := map[string]*cpu.Batch{}
	var pipes []queryOpsPipe
	for _, q := range work.Queries {
		p, err := engine.BuildQuery(ds, work.Catalog, q)
		if err != nil {
			return nil, err
		}
		for pi := range p.Pipelines {
			pl := &p.Pipelines[pi]
			if pl.Source.Kind != plan.SourceScan || len(pl.Ops) < 2 {
				continue
			}
			ops := leadingOps(pl.Ops[1:])
			if len(ops) == 0 {
				continue
			}
			table := p.Tables[pl.Source.Table].Name
			in, err := firstRows(ds, inputs, table, pl.Ops[0].Out)
			if err != nil {
				return nil, err
			}
			pipes = append(pipes, queryOpsPipe{name: fmt.Sprintf("%s pipeline %d", q, pi), ops: ops, in: in})
		}
	}
	if len(pipes) == 0 {
		return nil, fmt.Errorf("queries %v have no scan pipeline that starts with a filter, projection, partial aggregate or shuffle", work.Queries)
	}
	const devices = 4 // a shuffle's partitions
	return func(thread, i int) (int64, error) {
		pp := &pipes[(thread*len(pipes)/2+i)%len(pipes)]
		if err := runLeadingOps(pp.ops, pp.in, devices); err != nil {
			return 0, fmt.Errorf("%s: %w", pp.name, err)
		}
		return int64(pp.in.Rows), nil
	}, nil
}

// leadingOps are the streaming operators that start ops, up to and
// including the first partial aggregate or shuffle.
func leadingOps(ops []plan.Op) []plan.Op {
	for i, op := range ops {
		switch op.Kind {
		case plan.OpFilter, plan.OpProject:
		case plan.OpAggPartial, plan.OpShuffle:
			return ops[:i+1]
		default:
			return ops[:i]
		}
	}
	return ops
}

// firstRows is the given columns of table's first chunks, at least
// queryOpsRows rows (or the whole table), cached by table and columns.
func firstRows(ds *dataset.Dataset, cache map[string]*cpu.Batch, table string, cols []string) (*cpu.Batch, error) {
	key := fmt.Sprint(table, cols)
	if b, ok := cache[key]; ok {
		return b, nil
	}
	tm, err := ds.Table(table)
	if err != nil {
		return nil, err
	}
	var parts []*cpu.Batch
	rows := 0
	for c := 0; c < len(tm.Chunks) && rows < queryOpsRows; c++ {
		sb, err := ds.ReadChunk(table, c, cols)
		if err != nil {
			return nil, err
		}
		parts = append(parts, engine.ChunkBatch(sb))
		rows += sb.Rows
	}
	b, err := cpu.Concat(parts)
	if err != nil {
		return nil, err
	}
	cache[key] = b
	return b, nil
}

// runLeadingOps runs ops over in as the engine's kernels do: filters and
// projections batch to batch, then a partial aggregate folded into a new
// state or a shuffle into devices partitions.
func runLeadingOps(ops []plan.Op, in *cpu.Batch, devices int) error {
	b := in
	for i := range ops {
		op := &ops[i]
		var err error
		switch op.Kind {
		case plan.OpFilter:
			b, err = cpu.Filter(b, op.Expr)
		case plan.OpProject:
			b, err = cpu.Project(b, op.Expr.(plan.Projection))
		case plan.OpAggPartial:
			err = foldPartial(op, b)
		case plan.OpShuffle:
			_, err = cpu.Partition(b, op.Keys, devices)
		}
		if err != nil {
			return err
		}
		if b.Rows == 0 {
			return nil
		}
	}
	return nil
}

// foldPartial folds b into a new partial aggregate state of op.
func foldPartial(op *plan.Op, b *cpu.Batch) error {
	aggs := op.Expr.(plan.Aggs)
	args, err := cpu.AggArgs(b, aggs)
	if err != nil {
		return err
	}
	return cpu.NewAggregator(op.Keys, aggs, false).Update(b, args)
}
