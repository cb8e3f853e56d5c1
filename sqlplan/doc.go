// Package sqlplan turns SQL text into physical plans (plan.Plan) that both
// backends run: the simulator prices them, the engine executes them.
//
// Stages, each in its own file:
//
//   - parse: vitess's SQL parser (MySQL dialect, pure Go: the main module
//     stays cgo-free), one SELECT statement (WITH, derived tables,
//     subqueries);
//   - bind: names resolved against the tables' schemas (plan.TableStats.Schema,
//     from a dataset's manifest or a generator's specification) and typed
//     (integers, decimals, dates, text, floats);
//   - decorrelate: EXISTS / NOT EXISTS / IN / NOT IN / scalar subqueries,
//     correlated or not, into joins and aggregates;
//   - optimize: predicate pushdown (with min/max pruning ranges for scans),
//     projection pruning, join order from statistics, eager aggregation
//     of a fact side below the join with the relations the group keys
//     read (eager.go);
//   - lower: pipelines under the execution contract of plans (broadcast or
//     shuffle per join from sizes, partial and final aggregates), with every
//     estimate (selectivity, groups, widths) derived from the statistics.
//
// Semantics. Stored columns are never null, and the engine has no NULL:
// the planner keeps SQL's answers exact by construction rather than by
// null handling. NOT IN is an anti join (exact without nulls); a
// correlated scalar subquery of sum, min, max or avg joins its groups
// with an inner join (a missing group is NULL in SQL, and a comparison
// with NULL is false), one of count with a left outer join whose zero
// fill is SQL's 0; a LEFT JOIN is planned only where its right side feeds
// count() per left-side key (the zero fill is again the right answer) and
// refused elsewhere; a scalar aggregate over no rows prints NULL (empty)
// for everything but its counts, as SQL does. Integer keys of different
// widths join after the narrower is widened to int64.
//
// Not planned, each refused with an error at its place in the text:
// OFFSET, ORDER BY or LIMIT inside a subquery, a correlated IN over an
// aggregating subquery, a correlated scalar subquery in HAVING, IS NULL,
// outer joins other than the counting LEFT JOIN above, statements other
// than SELECT.
//
// Sharing (share.go): blocks that bind alike (a WITH table used twice)
// are computed once, every use reading the output; a correlated subquery
// whose aggregate is over joins the enclosing block makes too (the same
// tables, conditions and join keys; the enclosing block's other tables
// joined on the group key alone) reads the enclosing block's rows,
// shuffled once on that key; an uncorrelated scalar subquery in HAVING
// aggregating exactly the block's rows (TPC-H's Q11: sums, counts,
// minimums or maximums over the same tables and conditions) re-aggregates
// the block's groups (regroup.go); an EXISTS and a NOT EXISTS over one
// table and correlation key whose conditions nest (TPC-H's Q21) are
// aggregated in one pass (mergeexists.go); an IN subquery grouping one
// table on a key with a HAVING, the block joining that table only on
// the key under the same conditions and aggregating its other columns
// by sum, count, min or max (TPC-H's Q18), reads the table once, its
// groups carrying the block's aggregates per key (onescan.go). Other
// repetitions are computed twice.
//
// Errors are *Error values locating the problem in the text.
package sqlplan
