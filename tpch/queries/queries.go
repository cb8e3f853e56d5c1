// Package queries holds the 22 TPC-H queries as executable plans (plan
// package operators whose expressions the engine evaluates), with the
// specification's validation parameters (qgen defaults, clause 2.4).
//
// Every plan follows the execution contract of plans (docs/design.md,
// "Plans and their execution contract"): small dimension tables and filtered subsets
// are broadcast and built on every device; fact-fact joins are
// co-partitioned by shuffling both sides on the join key; aggregates run as
// a per-device Partial ending in a Gather (few groups) or a Shuffle on
// (a subset of) the group keys, merged by a Final in a From pipeline; the
// result pipeline runs on device 0 after a Gather. Subqueries are
// decorrelated into joins and aggregates (see each query's comment).
//
// Estimates (selectivities, group counts, widths) are the fractions the
// validation parameters select in dbgen data, group counts scaled with the
// scale factor where the answer sizes scale; they steer memory reservations
// and the simulator, never the results.
package queries

import (
	"fmt"
	"math"

	"gostachio/plan"
)

// query is one TPC-H query: its result columns (the spec's select list, as
// named in the answer files) and the function adding its pipelines.
type query struct {
	cols  []string
	build func(b *plan.Builder, sf float64)
}

var queries = map[string]query{
	"q1": {q01Cols, q01}, "q2": {q02Cols, q02}, "q3": {q03Cols, q03}, "q4": {q04Cols, q04},
	"q5": {q05Cols, q05}, "q6": {q06Cols, q06}, "q7": {q07Cols, q07}, "q8": {q08Cols, q08},
	"q9": {q09Cols, q09}, "q10": {q10Cols, q10}, "q11": {q11Cols, q11}, "q12": {q12Cols, q12},
	"q13": {q13Cols, q13}, "q14": {q14Cols, q14}, "q15": {q15Cols, q15}, "q16": {q16Cols, q16},
	"q17": {q17Cols, q17}, "q18": {q18Cols, q18}, "q19": {q19Cols, q19}, "q20": {q20Cols, q20},
	"q21": {q21Cols, q21}, "q22": {q22Cols, q22},
}

// Names lists "q1".."q22" in order.
func Names() []string {
	out := make([]string, 22)
	for i := range out {
		out[i] = fmt.Sprintf("q%d", i+1)
	}
	return out
}

// Build builds query name over tables (plan.TableStats from a dataset
// manifest or Stats) at scale factor sf, which only scales the
// estimates (group counts) and Q11's threshold fraction 0.0001/SF. It fails
// on an unknown name, a scale factor that is not a positive finite number,
// or tables lacking a TPC-H table or column the query reads.
func Build(name string, sf float64, tables []plan.TableStats) (*plan.Plan, error) {
	q, ok := queries[name]
	if !ok {
		return nil, fmt.Errorf("tpch/queries: no query %q (have q1..q22)", name)
	}
	if !(sf > 0) || math.IsInf(sf, 0) {
		return nil, fmt.Errorf("tpch/queries: %s: scale factor %v must be a positive number", name, sf)
	}
	b := plan.NewBuilder(name, tables).TextColumns(IsText)
	q.build(b, sf)
	return b.Build()
}

// Columns returns the result column names of query name in the spec's
// order (what its Output gets; the header of the answer files), or nil for
// an unknown name. The caller owns the returned slice.
func Columns(name string) []string {
	q, ok := queries[name]
	if !ok {
		return nil
	}
	return append([]string(nil), q.cols...)
}

// col is a column reference.
func col(name string) plan.Col { return plan.Col(name) }

// keys is a list of column names (join, group or build keys).
func keys(names ...string) []string { return names }

// day is the date32 value of a date literal (for Prune ranges).
func day(l plan.Lit) int64 { return l.I }

// Open ends of Prune ranges on date columns (date32).
const (
	minDay = math.MinInt32
	maxDay = math.MaxInt32
)

// scaled is an estimate of n at SF1 scaled to sf, at least 1.
func scaled(n float64, sf float64) int64 { return max(1, int64(math.Round(n*sf))) }

// frac is an estimate of n rows at SF1 out of m rows per SF (a
// selectivity that shrinks as the table grows), at most 1.
func frac(n, m, sf float64) float64 { return min(1, n/(m*sf)) }

// discPrice is l_extendedprice * (1 - l_discount) (decimal, scale 4).
func discPrice() plan.Expr {
	return plan.Mul(col("l_extendedprice"), plan.Sub(plan.Int(1), col("l_discount")))
}

// broadcastBuild ends p with a Broadcast and builds a hash table on keys
// from the copy every device receives: the way a small build side reaches
// every probing device.
func broadcastBuild(b *plan.Builder, p *plan.Pipe, name string, keys ...string) int {
	bc := p.Broadcast()
	return b.From(bc).Named(name).HashBuild(keys...)
}

// shuffleBuild ends p with a Shuffle on keys and builds a hash table on
// them from each device's partition: the build side of a co-partitioned
// join, whose probe side must be shuffled on its matching keys.
func shuffleBuild(b *plan.Builder, p *plan.Pipe, name string, keys ...string) int {
	return shuffleBuildRepeating(b, p, name, 0, keys...)
}

// shuffleBuildRepeating is shuffleBuild on keys that repeat, distinct keys
// per row (plan.Op.Distinct).
func shuffleBuildRepeating(b *plan.Builder, p *plan.Pipe, name string, distinct float64, keys ...string) int {
	sh := p.Shuffle(keys...)
	return b.From(sh).Named(name).HashBuildRepeating(distinct, keys...)
}

// keep passes column name through a Select under its own name.
func keep(name string) plan.Named { return plan.As(name, col(name)) }

// Catalog is the 22 queries as a plan.Catalog: what commands that take
// query names hand the engine and the cluster.
func Catalog() plan.Catalog {
	return plan.Catalog{Names: Names(), Build: Build, ScaleFactor: ScaleFactor}
}
