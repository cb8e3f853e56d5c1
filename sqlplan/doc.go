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
//     projection pruning, join order from statistics;
//   - lower: pipelines under the execution contract of plans (broadcast or
//     shuffle per join from sizes, partial and final aggregates), with every
//     estimate (selectivity, groups, widths) derived from the statistics.
//
// Errors are *Error values locating the problem in the text.
package sqlplan
