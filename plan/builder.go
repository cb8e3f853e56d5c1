package plan

import (
	"errors"
	"fmt"
)

// Builder assembles a Plan pipeline by pipeline:
//
//	b := plan.NewBuilder("q6", tables)
//	agg := b.Scan("lineitem", "l_shipdate", "l_discount", "l_quantity", "l_extendedprice").
//		Prune("l_shipdate", lo, hi).
//		Filter("l_shipdate in [1994,1995) and ...", 0.019).
//		AggPartial("sum(l_extendedprice*l_discount)", 1, 8).
//		Gather()
//	b.From(agg).AggFinal("sum", 1, 8).Result()
//	p, err := b.Build()
//
// Errors (unknown table or column) are kept and returned by Build, so a
// query reads as one chain.
type Builder struct {
	p   Plan
	err error
	// text holds the plan's text columns by name; isText says which table
	// columns are text (textcols.go).
	text   map[string]bool
	isText func(table, column string) bool
}

// NewBuilder starts plan name over the given tables (the plan keeps the
// slice; Scan finds tables by name in it).
func NewBuilder(name string, tables []TableStats) *Builder {
	return &Builder{p: Plan{Name: name, Tables: tables}}
}

// Pipe is a pipeline being built. Streaming operators append and return the
// same Pipe; a breaker that must end the pipeline (hash build, exchange,
// result) appends it and returns the pipeline's index; Done ends a pipeline
// whose last op is already a breaker (agg-final, sort, top-k).
type Pipe struct {
	b  *Builder
	pl Pipeline
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Scan starts a pipeline over table, projecting cols. The scan's output
// width is the columns' average stored bytes per row.
func (b *Builder) Scan(table string, cols ...string) *Pipe {
	pp := &Pipe{b: b}
	ti := -1
	for i := range b.p.Tables {
		if b.p.Tables[i].Name == table {
			ti = i
		}
	}
	if ti < 0 {
		b.fail(fmt.Errorf("plan %s: scan of unknown table %q", b.p.Name, table))
		return pp
	}
	t := &b.p.Tables[ti]
	idx, err := t.ColumnIndexes(cols)
	if err != nil {
		b.fail(fmt.Errorf("plan %s: %w", b.p.Name, err))
		return pp
	}
	width := 0
	if rows := t.Rows(); rows > 0 {
		width = int((t.Bytes(idx) + rows - 1) / rows)
	}
	pp.pl.Source = Source{Kind: SourceScan, Table: ti}
	pp.pl.Name = "scan " + table
	pp.pl.Ops = append(pp.pl.Ops, Op{Kind: OpScan, Label: table, Out: append([]string(nil), cols...), Selectivity: 1, OutWidth: width})
	b.noteScanText(table, cols)
	return pp
}

// From starts a pipeline over the materialized outputs of earlier pipelines
// (it waits for them).
func (b *Builder) From(inputs ...int) *Pipe {
	pp := &Pipe{b: b}
	pp.pl.Source = Source{Kind: SourceInputs, Inputs: append([]int(nil), inputs...)}
	pp.pl.Name = fmt.Sprintf("from %v", inputs)
	return pp
}

// Named sets the pipeline's name (for traces).
func (pp *Pipe) Named(name string) *Pipe { pp.pl.Name = name; return pp }

// After makes the pipeline wait for pipelines ps.
func (pp *Pipe) After(ps ...int) *Pipe { pp.pl.After = append(pp.pl.After, ps...); return pp }

// Prune adds a min/max pruning range to the scan (the first op).
func (pp *Pipe) Prune(col string, lo, hi int64) *Pipe {
	if len(pp.pl.Ops) == 0 || pp.pl.Ops[0].Kind != OpScan {
		pp.b.fail(fmt.Errorf("plan %s: prune on a pipeline without a scan", pp.b.p.Name))
		return pp
	}
	pp.pl.Ops[0].Prune = append(pp.pl.Ops[0].Prune, Range{Column: col, Lo: lo, Hi: hi})
	return pp
}

func (pp *Pipe) add(op Op) *Pipe {
	pp.b.typeText(&op)
	pp.pl.Ops = append(pp.pl.Ops, op)
	return pp
}

// Filter keeps the fraction sel of the rows (predicate text in label).
func (pp *Pipe) Filter(label string, sel float64) *Pipe {
	return pp.add(Op{Kind: OpFilter, Label: label, Expr: SQL(label), Selectivity: sel})
}

// Project computes the columns out, width bytes per row.
func (pp *Pipe) Project(label string, width int, out ...string) *Pipe {
	return pp.add(Op{Kind: OpProject, Label: label, Expr: SQL(label), Out: out, Selectivity: 1, OutWidth: width})
}

// Probe probes the hash table of pipeline build on keys: sel output rows
// per input row, width bytes per output row. It makes the pipeline wait for
// build.
func (pp *Pipe) Probe(build int, sel float64, width int, keys ...string) *Pipe {
	pp.After(build)
	return pp.add(Op{Kind: OpHashProbe, Label: fmt.Sprintf("probe %v", keys), Keys: keys, Build: build, Selectivity: sel, OutWidth: width})
}

// AggPartial aggregates per device into at most groups groups of width
// bytes (label: the aggregate list).
func (pp *Pipe) AggPartial(label string, groups int64, width int, keys ...string) *Pipe {
	return pp.add(Op{Kind: OpAggPartial, Label: label, Expr: SQL(label), Keys: keys, Groups: groups, OutWidth: width})
}

// AggFinal merges partial aggregates into at most groups groups.
func (pp *Pipe) AggFinal(label string, groups int64, width int, keys ...string) *Pipe {
	return pp.add(Op{Kind: OpAggFinal, Label: label, Expr: SQL(label), Keys: keys, Groups: groups, OutWidth: width})
}

// Sort sorts on keys.
func (pp *Pipe) Sort(keys ...string) *Pipe {
	return pp.add(Op{Kind: OpSort, Label: fmt.Sprintf("sort %v", keys), Keys: keys, Selectivity: 1})
}

// TopK keeps the first limit rows in keys order.
func (pp *Pipe) TopK(limit int, keys ...string) *Pipe {
	return pp.add(Op{Kind: OpTopK, Label: fmt.Sprintf("top %d %v", limit, keys), Keys: keys, Limit: limit, Selectivity: 1})
}

// Done ends the pipeline (its last op must be a breaker) and returns its
// index.
func (pp *Pipe) Done() int {
	b := pp.b
	b.p.Pipelines = append(b.p.Pipelines, pp.pl)
	return len(b.p.Pipelines) - 1
}

// HashBuild ends the pipeline with a hash table on keys.
func (pp *Pipe) HashBuild(keys ...string) int {
	return pp.HashBuildRepeating(0, keys...)
}

// HashBuildRepeating is HashBuild on keys that repeat: distinct keys per
// input row (Op.Distinct; 0 or 1: every key distinct).
func (pp *Pipe) HashBuildRepeating(distinct float64, keys ...string) int {
	return pp.add(Op{Kind: OpHashBuild, Label: fmt.Sprintf("build %v", keys), Keys: keys, Selectivity: 1, Distinct: distinct}).Done()
}

// Shuffle ends the pipeline by hash-partitioning on keys over all workers.
func (pp *Pipe) Shuffle(keys ...string) int {
	return pp.add(Op{Kind: OpShuffle, Label: fmt.Sprintf("shuffle %v", keys), Keys: keys, Selectivity: 1}).Done()
}

// Broadcast ends the pipeline by sending its output to every worker.
func (pp *Pipe) Broadcast() int {
	return pp.add(Op{Kind: OpBroadcast, Label: "broadcast", Selectivity: 1}).Done()
}

// Gather ends the pipeline by sending its output to worker 0.
func (pp *Pipe) Gather() int {
	return pp.add(Op{Kind: OpGather, Label: "gather", Selectivity: 1}).Done()
}

// Result ends the pipeline with the query result.
func (pp *Pipe) Result() int {
	return pp.add(Op{Kind: OpResult, Label: "result", Selectivity: 1}).Done()
}

// ErrEmpty is returned by Build for a plan without pipelines.
var ErrEmpty = errors.New("plan: no pipelines")

// Build validates and returns the plan.
func (b *Builder) Build() (*Plan, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.p.Pipelines) == 0 {
		return nil, fmt.Errorf("plan %s: %w", b.p.Name, ErrEmpty)
	}
	p := b.p
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// The methods below build executable operators: their Expr is an
// expression tree (expr.go) the engine's kernels evaluate, not just text.

// Where keeps the rows satisfying pred (estimated fraction sel).
func (pp *Pipe) Where(pred Expr, sel float64) *Pipe {
	return pp.add(Op{Kind: OpFilter, Label: pred.String(), Expr: pred, Selectivity: sel})
}

// Select replaces the columns by cols, computed from the input (width:
// estimated bytes per output row).
func (pp *Pipe) Select(width int, cols ...Named) *Pipe {
	p := Projection(cols)
	return pp.add(Op{Kind: OpProject, Label: p.String(), Expr: p, Out: p.Names(), Selectivity: 1, OutWidth: width})
}

// Join probes the hash table of pipeline build (see plan.Join) on keys
// (nil: cross join), carrying the build columns carry; sel output rows per
// probe row, width bytes per output row. It makes the pipeline wait for
// build.
func (pp *Pipe) Join(kind JoinKind, build int, keys []string, carry []string, sel float64, width int) *Pipe {
	pp.After(build)
	j := Join{Kind: kind, Carry: append([]string(nil), carry...)}
	return pp.add(Op{Kind: OpHashProbe, Label: fmt.Sprintf("%s on %v", j, keys), Keys: append([]string(nil), keys...),
		Out: j.Carry, Expr: j, Build: build, Selectivity: sel, OutWidth: width})
}

// Partial aggregates per device into at most groups groups of width bytes,
// grouping on keys (none: one group).
func (pp *Pipe) Partial(groups int64, width int, keys []string, aggs ...Agg) *Pipe {
	a := Aggs(aggs)
	return pp.add(Op{Kind: OpAggPartial, Label: "partial " + a.String(), Expr: a, Keys: append([]string(nil), keys...),
		Groups: groups, OutWidth: width})
}

// Final merges the partial states of the same aggregates into at most
// groups groups.
func (pp *Pipe) Final(groups int64, width int, keys []string, aggs ...Agg) *Pipe {
	a := Aggs(aggs)
	return pp.add(Op{Kind: OpAggFinal, Label: "final " + a.String(), Expr: a, Keys: append([]string(nil), keys...),
		Groups: groups, OutWidth: width})
}

// Output ends the pipeline with the query result: columns cols, in order.
func (pp *Pipe) Output(cols ...string) int {
	return pp.add(Op{Kind: OpResult, Label: "result", In: append([]string(nil), cols...), Out: append([]string(nil), cols...), Selectivity: 1}).Done()
}

// Share ends the pipeline at its last breaker that may stand before other
// operators (agg-final, sort, top-k), so that several pipelines can read
// its output, and returns its index and the streaming operators that
// followed that breaker: each reader applies them itself (Apply). ok is
// false, and nothing is ended, when the pipeline has no such breaker.
func (pp *Pipe) Share() (index int, rest []Op, ok bool) {
	for j := len(pp.pl.Ops) - 1; j >= 0; j-- {
		switch pp.pl.Ops[j].Kind {
		case OpAggFinal, OpSort, OpTopK:
			rest = append([]Op(nil), pp.pl.Ops[j+1:]...)
			pp.pl.Ops = pp.pl.Ops[:j+1]
			return pp.Done(), rest, true
		}
		if pp.pl.Ops[j].Kind.IsBreaker() {
			return -1, nil, false
		}
	}
	return -1, nil, false
}

// Apply appends streaming operators (from Share) to the pipeline; a probe
// makes it wait for its build.
func (pp *Pipe) Apply(ops ...Op) *Pipe {
	for _, op := range ops {
		if op.Kind == OpHashProbe {
			pp.After(op.Build)
		}
		pp.add(op)
	}
	return pp
}
