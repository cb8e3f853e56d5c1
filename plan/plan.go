// Package plan holds backend-neutral physical query plans: pipelines of
// operators over chunked tables, with pipeline breakers explicit. A plan is
// pure data: both the scheduler (which turns it into tasks) and the backends
// (the simulator's cost model, the engine's kernels) read it, and nothing in
// it depends on the hardware it will run on.
//
// Shape. A Plan is a list of Pipelines in a topological order. A pipeline
// reads a Source (a table scan, or the materialized outputs of earlier
// pipelines), streams every unit of it through its streaming operators
// (filter, project, probe, partial aggregate, ...), and ends in exactly one
// Sink, the pipeline breaker (hash build, final aggregate, sort, top-k,
// exchange, result). A pipeline may start only when every pipeline in its
// After list has finished (e.g. a probe pipeline waits for its build).
//
// Estimates. Every operator carries an estimated selectivity (output rows /
// input rows) and output row width in bytes; the scheduler reserves memory
// from them and the simulator derives the work of each task from them.
// Executions report the real figures, which override the estimates as the
// query runs.
package plan

import "fmt"

// OpKind is the kind of an operator: the key the cost model prices on.
type OpKind uint8

const (
	OpInvalid    OpKind = iota
	OpScan              // decode projected columns of a chunk (source of scan pipelines)
	OpFilter            // predicate; Selectivity = surviving fraction
	OpProject           // computes new columns; Selectivity 1
	OpHashBuild         // breaker: inserts the input into a hash table keyed on Keys
	OpHashProbe         // streaming: probes the hash table built by pipeline Build
	OpAggPartial        // streaming: per-device partial hash aggregate on Keys
	OpAggFinal          // breaker: merges partial aggregates into the final groups
	OpSort              // breaker: full sort on Keys
	OpTopK              // breaker: the first Limit rows in Keys order
	OpShuffle           // breaker: hash-partitions the output over all workers by Keys
	OpBroadcast         // breaker: sends the whole output to every worker
	OpGather            // breaker: sends the whole output to worker 0 (node 0, device 0)
	OpResult            // breaker: the query's result, copied to the host of node 0
	numOpKinds
)

var opKindNames = [...]string{
	OpInvalid: "invalid", OpScan: "scan", OpFilter: "filter", OpProject: "project",
	OpHashBuild: "hash-build", OpHashProbe: "hash-probe", OpAggPartial: "agg-partial",
	OpAggFinal: "agg-final", OpSort: "sort", OpTopK: "top-k", OpShuffle: "shuffle",
	OpBroadcast: "broadcast", OpGather: "gather", OpResult: "result",
}

// NumOpKinds is the number of defined kinds (for tables indexed by OpKind).
const NumOpKinds = int(numOpKinds)

func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// ParseOpKind is the inverse of OpKind.String.
func ParseOpKind(s string) (OpKind, error) {
	for k := OpScan; k < numOpKinds; k++ {
		if opKindNames[k] == s {
			return k, nil
		}
	}
	return OpInvalid, fmt.Errorf("plan: unknown operator kind %q", s)
}

// IsBreaker reports whether an operator of kind k ends a pipeline: it needs
// all of its input before it can produce output, or it moves data between
// workers.
func (k OpKind) IsBreaker() bool {
	switch k {
	case OpHashBuild, OpAggFinal, OpSort, OpTopK, OpShuffle, OpBroadcast, OpGather, OpResult:
		return true
	}
	return false
}

// IsExchange reports whether k moves data between workers (a network step).
func (k OpKind) IsExchange() bool {
	return k == OpShuffle || k == OpBroadcast || k == OpGather
}

// Expr is an opaque, typed expression slot: predicates, projections and
// aggregate functions. The plan carries it for the kernels and for
// display; the scheduler and the simulator never look inside.
type Expr interface {
	// String renders the expression in SQL-like text, for plans and traces.
	String() string
}

// SQL is the simplest Expr: expression text kept verbatim.
type SQL string

func (s SQL) String() string { return string(s) }

var _ Expr = SQL("")

// Range is a closed interval [Lo, Hi] on an integer-coded column (int32,
// int64, decimal cents, date32 days) that a scan's predicate implies: a chunk
// whose [min, max] for Column misses it cannot contain a matching row and is
// pruned before any I/O.
type Range struct {
	Column string
	Lo, Hi int64
}

// Op is one operator of a pipeline.
type Op struct {
	Kind OpKind
	// Label names the operator in plans and traces ("l_shipdate <= ...").
	Label string
	// In are the columns the operator reads; Out the columns it produces
	// (for a scan: the projected columns, in table order).
	In, Out []string
	// Selectivity is the estimated output rows per input row (1 for
	// project and scan; the match fraction for a filter; groups/rows for an
	// aggregate; fan-out for a probe).
	Selectivity float64
	// OutWidth is the estimated bytes per output row (sum of Out widths).
	OutWidth int
	// Keys are the hash / sort / partition keys.
	Keys []string
	// Expr is the predicate, projection list or aggregate list.
	Expr Expr
	// Prune is the scan's min/max pruning ranges (OpScan only).
	Prune []Range
	// Build is the pipeline index whose hash table an OpHashProbe probes.
	Build int
	// Limit is the row limit of an OpTopK.
	Limit int
	// Groups is the estimated number of groups of an aggregate (bounds the
	// size of partial and final aggregation state).
	Groups int64
	// Distinct is the estimated distinct keys per input row of an
	// OpHashBuild whose keys repeat (0: every key distinct): the engine
	// sizes a table by its distinct keys, so its working set is that share
	// of the build's input.
	Distinct float64
	// StrKeys is how many of Keys are text, plus, for a probe, how many of
	// the build columns it carries (set by the Builder from the text
	// columns its caller declares and the projections): a text key hashes
	// and compares byte by byte, a carried text column gathers its bytes.
	// StrTerms counts them.
	StrKeys int
}

// SourceKind says where a pipeline's units come from.
type SourceKind uint8

const (
	// SourceScan: units are chunks of table Plan.Tables[Source.Table].
	SourceScan SourceKind = iota + 1
	// SourceInputs: units are the materialized outputs of the pipelines in
	// Source.Inputs on each worker (received exchange partitions, final
	// aggregate state, ...).
	SourceInputs
)

// Source is the input of a pipeline.
type Source struct {
	Kind   SourceKind
	Table  int   // SourceScan: index into Plan.Tables
	Inputs []int // SourceInputs: pipeline indices
}

// Pipeline is a source, streaming operators, and one breaker (the last op).
type Pipeline struct {
	Name   string
	Source Source
	// Ops are applied in order to every unit; Ops[0] is OpScan for a scan
	// source; the last op is the pipeline's breaker (IsBreaker).
	Ops []Op
	// After lists the pipelines that must finish before this one starts.
	After []int
	// OnHost places a scan pipeline's units on the host's CPU kernels in a
	// run whose other scan pipelines run on a GPU (a hybrid GPU run:
	// engine.PlaceGPU sets it where the GPU path cannot run the pipeline;
	// the simulator's GPU-backend profiles price it on the host). It means
	// nothing without a GPU.
	OnHost bool
	// HostFrom, where positive, splits a scan pipeline of a hybrid GPU run:
	// its ops before HostFrom (the scan, filters, projections) run on the
	// GPU and the rows that pass come back for the host to run the rest.
	HostFrom int
}

// Sink is the pipeline's breaker (its last operator).
func (p *Pipeline) Sink() *Op { return &p.Ops[len(p.Ops)-1] }

// Plan is a physical plan: tables it scans and pipelines in topological order.
type Plan struct {
	Name      string
	Tables    []TableStats
	Pipelines []Pipeline
}
