package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/plan"
	"gostachio/sqlplan"
	"gostachio/sqlplan/querygen"
	"gostachio/tpch/verify"
)

// Mismatch classes: what went wrong with one generated query.
const (
	// ClassPlan: sqlplan.Plan refused or failed on the query (the
	// generator emits only constructs the planner is meant to take).
	ClassPlan = "plan"
	// ClassEngine: the engine failed to run the plan.
	ClassEngine = "engine"
	// ClassDuckDB: DuckDB rejected the query (a generator bug: its text
	// must be valid in both dialects).
	ClassDuckDB = "duckdb"
	// ClassResult: both ran, the results differ.
	ClassResult = "result"
	// ClassPanic: planning or running panicked.
	ClassPanic = "panic"
)

// DifferentialOptions configure Differential.
type DifferentialOptions struct {
	// Queries is how many queries to generate and run; query i uses seed
	// Seed+i.
	Queries int
	Seed    uint64
	// Timeout bounds each query in each engine (0: one minute).
	Timeout time.Duration
	// Progress receives one line per query (nil: none); with Verbose,
	// also each query's text before it runs (what a crash of the process
	// leaves to reproduce it with).
	Progress io.Writer
	Verbose  bool
	// Skip names seeds not to run (queries known to crash the process:
	// a panic in an engine worker cannot be recovered).
	Skip map[uint64]bool
}

// Mismatch is one query on which the SQL path and DuckDB disagree.
type Mismatch struct {
	Seed  uint64 `json:"seed"`
	Class string `json:"class"`
	SQL   string `json:"sql"`
	// Detail is the error, or for ClassResult verify.Compare's account
	// (sizes and the first differing rows).
	Detail string `json:"detail"`
	// EngineRows and DuckDBRows are the results' sizes (-1: no result).
	EngineRows int    `json:"engine_rows"`
	DuckDBRows int    `json:"duckdb_rows"`
	Run        string `json:"run,omitempty"` // the engine's policy and devices
}

// DifferentialReport summarises a Differential run.
type DifferentialReport struct {
	// Queries counts the queries run; Skipped those not run (Skip).
	Queries    int            `json:"queries"`
	Skipped    int            `json:"skipped,omitempty"`
	Matched    int            `json:"matched"`
	ByClass    map[string]int `json:"mismatches_by_class"`
	Mismatches []Mismatch     `json:"mismatches"`
	Seconds    float64        `json:"seconds"`
}

// GeneratorConfig describes ds for querygen: its plan statistics (the
// manifest's column types, ranges and distinct counts); TPC-H's foreign
// keys; and per column up to 40 sampled values, the
// distinct values in order taken at even steps (a deterministic query).
// It returns the statistics to plan with, too.
func GeneratorConfig(ctx context.Context, ds *dataset.Dataset, db *DB) (querygen.Config, []plan.TableStats, error) {
	stats := ds.PlanStats()
	cfg := querygen.Config{FKs: querygen.TPCHForeignKeys(), Samples: map[string][]string{}}
	for ti := range stats {
		ts := &stats[ti]
		if ts.Schema == nil {
			return cfg, nil, fmt.Errorf("peer: table %s has no column statistics in its manifest", ts.Name)
		}
		for _, c := range ts.Columns {
			s, err := sampleColumn(ctx, db, ts.Name, c, 40)
			if err != nil {
				return cfg, nil, err
			}
			cfg.Samples[ts.Name+"."+c] = s
		}
	}
	cfg.Tables = stats
	return cfg, stats, nil
}

// sampleColumn returns up to n distinct values of table.column, evenly
// spaced in the column's order, formatted as QuerySQL formats cells.
func sampleColumn(ctx context.Context, db *DB, table, column string, n int) ([]string, error) {
	q := fmt.Sprintf(`select v from (
  select v, row_number() over (order by v) - 1 as i, count(*) over () as k
  from (select distinct %s as v from %s)
) where i %% greatest(k // %d, 1) = 0 order by v limit %d`, column, table, n, n)
	t, _, err := db.QuerySQL(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("peer: samples of %s.%s: %w", table, column, err)
	}
	out := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = r[0]
	}
	return out, nil
}

// Differential generates opts.Queries queries over ds (seeds Seed,
// Seed+1, ...), plans each with sqlplan.Plan over stats, runs it on the
// CPU engine (alternating 1, 2 and 3 devices and the overlap and serial
// policies) and in DuckDB (db, over ds's Parquet export), and compares
// the results with verify.Compare: in order when the query orders by
// every output column, else as multisets. Every query that fails to plan,
// to run, or to match is a Mismatch. The error is only for a cancelled
// context.
func Differential(ctx context.Context, ds *dataset.Dataset, db *DB, g *querygen.Generator, stats []plan.TableStats, opts DifferentialOptions) (*DifferentialReport, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	start := time.Now()
	rep := &DifferentialReport{ByClass: map[string]int{}}
	for i := 0; i < opts.Queries; i++ {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		q := g.Query(opts.Seed + uint64(i))
		if opts.Skip[q.Seed] {
			rep.Skipped++
			continue
		}
		if opts.Verbose && opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "-- seed %d\n%s;\n", q.Seed, q.SQL)
		}
		run := []engine.QueryOptions{
			{Policy: "overlap", Devices: 2, Set: "chunk=256KiB"},
			{Policy: "serial", Devices: 3},
			{Policy: "overlap", Devices: 1},
			{Policy: "serial", Devices: 2},
			{Policy: "overlap", Devices: 3, Set: "chunk=256KiB"},
			{Policy: "serial", Devices: 1},
		}[i%6]
		m := checkQuery(ctx, ds, db, stats, q, run, opts.Timeout)
		rep.Queries++
		status := "ok"
		if m == nil {
			rep.Matched++
		} else {
			rep.ByClass[m.Class]++
			rep.Mismatches = append(rep.Mismatches, *m)
			status = m.Class
			if opts.Verbose && opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "-- %s: %s\n", m.Class, strings.ReplaceAll(m.Detail, "\n", "\n-- "))
			}
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "[%d/%d] seed %d: %s (%s)\n", i+1, opts.Queries, q.Seed, status, time.Since(start).Round(time.Millisecond))
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// checkQuery runs one query both ways; nil when the results match.
func checkQuery(ctx context.Context, ds *dataset.Dataset, db *DB, stats []plan.TableStats, q querygen.Query, run engine.QueryOptions, timeout time.Duration) *Mismatch {
	m := &Mismatch{Seed: q.Seed, SQL: q.SQL, EngineRows: -1, DuckDBRows: -1,
		Run: fmt.Sprintf("%s, %d devices", run.Policy, run.Devices)}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	want, _, err := db.QuerySQL(dctx, q.SQL)
	cancel()
	if err != nil {
		m.Class, m.Detail = ClassDuckDB, err.Error()
		return m
	}
	m.DuckDBRows = len(want.Rows)
	got, class, err := runEngine(ctx, ds, stats, q, run, timeout)
	if err != nil {
		m.Class, m.Detail = class, err.Error()
		return m
	}
	m.EngineRows = len(got.Rows)
	if !q.Ordered {
		sortRows(got)
		sortRows(want)
	}
	if err := verify.Compare(got, want, false); err != nil {
		m.Class, m.Detail = ClassResult, err.Error()
		return m
	}
	return nil
}

// runEngine plans q and runs it on the CPU engine, turning a panic into
// an error of ClassPanic.
func runEngine(ctx context.Context, ds *dataset.Dataset, stats []plan.TableStats, q querygen.Query, run engine.QueryOptions, timeout time.Duration) (t *verify.Table, class string, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, class, err = nil, ClassPanic, fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	name := fmt.Sprintf("seed%d", q.Seed)
	p, err := sqlplan.Plan(name, q.SQL, stats, sqlplan.Options{Workers: run.Devices})
	if err != nil {
		return nil, ClassPlan, err
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := engine.Query(ectx, ds, p, run)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no result within %s: %w", timeout, err)
		}
		return nil, ClassEngine, err
	}
	return &verify.Table{Header: r.Columns, Rows: r.Rows()}, "", nil
}

// sortRows orders a table's rows by their cells, for comparing multisets.
func sortRows(t *verify.Table) {
	slices.SortFunc(t.Rows, func(a, b []string) int { return slices.Compare(a, b) })
}

// Summary writes the report as text: counts, then every mismatch with its
// seed, class, sizes, SQL and detail.
func (r *DifferentialReport) Summary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "queries %d, matched %d, mismatched %d in %.1f s", r.Queries, r.Matched, r.Queries-r.Matched, r.Seconds)
	if r.Skipped > 0 {
		fmt.Fprintf(&b, " (%d skipped)", r.Skipped)
	}
	b.WriteString("\n")
	classes := make([]string, 0, len(r.ByClass))
	for c := range r.ByClass {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for _, c := range classes {
		fmt.Fprintf(&b, "  %s: %d\n", c, r.ByClass[c])
	}
	for _, m := range r.Mismatches {
		fmt.Fprintf(&b, "\n-- seed %d: %s (engine %d rows, duckdb %d rows; %s)\n%s;\n-- %s\n", m.Seed, m.Class, m.EngineRows, m.DuckDBRows, m.Run,
			m.SQL, strings.ReplaceAll(m.Detail, "\n", "\n-- "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
