package sqlplan

import (
	"gostachio/plan"
)

// column is one named column a pipeline may carry: a stored column of a
// relation instance, a computed group key, an aggregate's result or a
// subquery's output. Names are unique within a statement, so one registry
// types every batch column of the plan.
type column struct {
	name string
	t    typ
	// rel is the relation producing the column (nil for columns computed
	// after an aggregation).
	rel *rel
	// src is the stored column's name (base relations).
	src string
	// distinct estimates the column's distinct values (0: unknown);
	// rng is its integer-coded range, when known.
	distinct float64
	rng      plan.MinMax
	width    int
	// agg describes an aggregate's output column (nil for others): what
	// the estimates of conditions on it read.
	agg *aggStat
}

// aggStat is an aggregate output's estimate inputs: the function, its
// argument column ("" for count(*) or an expression) and the estimated
// input rows per group (0 until the aggregation is estimated). Columns
// that carry the output out of a derived table share it.
type aggStat struct {
	fn       plan.AggFn
	arg      string
	perGroup float64
}

// relKind says how a relation joins its block.
type relKind uint8

const (
	relInner     relKind = iota // a FROM item or a decorrelated subquery joined by equalities
	relSemi                     // EXISTS / IN: probe rows with a match
	relAnti                     // NOT EXISTS / NOT IN: probe rows without a match
	relLeftOuter                // counts of a left join's right side, zero-filled
)

// rel is a relation of a block: a base table instance, or a derived
// one (a subquery planned into its own pipelines).
type rel struct {
	id    int
	alias string
	kind  relKind
	// table is the stored table of a base relation; cols parallels its
	// columns.
	table *plan.TableStats
	cols  []*column
	// sub is a derived relation's block; out its output columns.
	sub *block
	out []*column
	// outerKeys and buildKeys join an attached (semi, anti, left outer)
	// relation: outer columns of the block and its own output columns;
	// carry are the outputs a left outer join brings.
	outerKeys, buildKeys []string
	carry                []string
	pos                  int
}

// bexpr is a bound expression: a plan expression over registered columns,
// its type and where it starts in the text.
type bexpr struct {
	e   plan.Expr
	t   typ
	pos int
}

// output is a select-list item: its SQL name and the column computing it.
type output struct {
	sql  string
	name string
	e    bexpr
}

// sortKey is an ORDER BY item over a column of the block's result.
type sortKey struct {
	name string
	desc bool
}

// block is one bound SELECT: relations joined by conditions, then an
// optional aggregation, then its outputs.
type block struct {
	rels  []*rel
	conds []bexpr
	// grouped blocks aggregate: keys (computed group keys) and aggs over
	// the joined rows; having, outs and order are over keys and aggs.
	grouped bool
	keys    []plan.Named
	aggs    []plan.Agg
	having  []bexpr
	// havingRels are uncorrelated scalar subqueries HAVING compares with:
	// cross-joined after the aggregation.
	havingRels []*rel
	outs       []output
	// hiddenOuts is how many of outs (the last ones) only sort.
	hiddenOuts int
	distinct   bool
	order      []sortKey
	limit      int
	// leftJoins are left-joined relations awaiting the rewrite into
	// counts (their ON conditions in onConds).
	leftJoins []*rel
	onConds   map[*rel][]bexpr
	// countDistincts are the block's count(DISTINCT x), one per argument.
	countDistincts []*distinctCount
	// magic restricts the block's input to the keys its enclosing block
	// joins it on (set while lowering the enclosing block).
	magic *magicSet
	// input, when set, is the enclosing block's stream its rows are read
	// from (share.go) instead of its own joins.
	input *sharedInput
	pos   int
}

// magicSet is a hash table of the keys an enclosing block keeps: rel's
// rows (a base relation of the block) whose columns cols are not in it
// cannot reach the enclosing block's join, and are dropped by a semi
// join right after its scan; sel is the estimated share kept.
type magicSet struct {
	build int
	rel   *rel
	cols  []string
	sel   float64
}

// distinctCount is a block's count(DISTINCT arg): rows are first grouped
// on the keys and arg, then counted per keys.
type distinctCount struct {
	arg bexpr
	as  string
}
