// Package querygen generates random SQL queries over a schema, for
// differential testing of the SQL path (sqlplan.Plan and a backend)
// against an independent engine.
//
// A Generator is built from the tables' statistics (plan.TableStats with
// Schema: column types, decimal scales, distinct counts, ranges), the
// foreign keys between them and samples of real column values (literal
// pools, so that equality, IN and LIKE predicates select rows). Query(seed)
// is deterministic: the same seed and configuration give the same text.
//
// The text is written in the intersection of vitess's MySQL dialect and
// DuckDB's with the same meaning in both: date literals as date 'Y-M-D',
// "/" on numbers as floating-point division, extract(year from d),
// substring(s, i, n), no NULL-producing constructs beyond what both agree
// on (scalar aggregates over empty input; LEFT JOIN only where the right
// side feeds count() per left key), integer arithmetic bounded by the
// columns' ranges so that nothing overflows, and division only by
// expressions whose range excludes zero.
package querygen
