// Command duckdb-tpch runs TPC-H queries in DuckDB over gostachio's Parquet
// export (`gostachio export`), as a correctness and speed baseline.
//
//	duckdb-tpch --parquet DIR [--query q1|q1,q6|all] [--repeat N] [--threads N] [--json]
//	duckdb-tpch differential (--data DIR --parquet DIR | --sf SF) [--queries N] [--seed S] [--timeout D] [--json]
//
// Without --json it prints each query's result to stdout as '|'-separated
// text with a header (the tpch/answers format, cells formatted like
// gostachio's engine), preceded by a "-- qN" line when several queries run.
// With --json it prints one JSON object of per-query timings instead.
// Progress and timings go to stderr.
//
// The differential subcommand generates random SQL queries
// (sqlplan/querygen) over the dataset, runs each through gostachio's SQL
// path (sqlplan.Plan, the CPU engine) and in DuckDB over the Parquet
// export, and prints a summary: queries run, matched, mismatches by class,
// and every mismatch with its seed and SQL. It exits with status 2 when
// any query mismatched.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	peer "gostachio/experiments/peers/duckdb"
	"gostachio/tpch/verify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "duckdb-tpch:", err)
		}
		os.Exit(2)
	}
}

// report is the --json output.
type report struct {
	Parquet string        `json:"parquet"`
	Threads int           `json:"threads,omitempty"` // 0: DuckDB's default (all cores)
	Repeat  int           `json:"repeat"`
	Queries []queryReport `json:"queries"`
}

type queryReport struct {
	Query    string    `json:"query"`
	Rows     int       `json:"rows"`
	RunsMs   []float64 `json:"runs_ms"`
	BestMs   float64   `json:"best_ms"`
	MedianMs float64   `json:"median_ms"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "differential" {
		return runDifferential(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("duckdb-tpch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("parquet", "", "folder of <table>.parquet files (gostachio export)")
	query := fs.String("query", "all", "query to run: q1..q22, a comma-separated list, or all")
	repeat := fs.Int("repeat", 1, "runs per query (timings report each; results print once)")
	threads := fs.Int("threads", 0, "DuckDB worker threads (0: DuckDB's default, every core)")
	asJSON := fs.Bool("json", false, "print per-query timings as JSON instead of results")
	cold := fs.Bool("cold", false, "drop the Parquet files from the page cache (posix_fadvise DONTNEED) before every run")
	sf := fs.Float64("sf", 1, "scale factor of the data (Q11's FRACTION is 0.0001/SF)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *dir == "" {
		return errors.New("no --parquet folder")
	}
	if *repeat < 1 {
		return fmt.Errorf("--repeat %d: must be at least 1", *repeat)
	}
	if *threads < 0 {
		return fmt.Errorf("--threads %d: must be at least 0", *threads)
	}
	names, err := queryList(*query)
	if err != nil {
		return err
	}
	db, err := peer.Open(*dir)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetScaleFactor(*sf)
	if *threads > 0 {
		if err := db.SetThreads(*threads); err != nil {
			return err
		}
	}
	rep := report{Parquet: *dir, Threads: *threads, Repeat: *repeat}
	for i, name := range names {
		var res *verify.Table
		qr := queryReport{Query: name}
		for r := 0; r < *repeat; r++ {
			if *cold {
				if err := peer.DropCache(*dir); err != nil {
					return err
				}
			}
			t, d, err := db.Query(ctx, name)
			if err != nil {
				return err
			}
			res = t
			qr.RunsMs = append(qr.RunsMs, float64(d.Nanoseconds())/1e6)
		}
		qr.Rows = len(res.Rows)
		sorted := slices.Clone(qr.RunsMs)
		slices.Sort(sorted)
		qr.BestMs = sorted[0]
		qr.MedianMs = sorted[len(sorted)/2]
		if len(sorted)%2 == 0 {
			qr.MedianMs = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
		}
		rep.Queries = append(rep.Queries, qr)
		fmt.Fprintf(stderr, "%s: %d rows, best %.2f ms, median %.2f ms over %d runs\n",
			name, qr.Rows, qr.BestMs, qr.MedianMs, *repeat)
		if *asJSON {
			continue
		}
		if len(names) > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "-- %s\n", name)
		}
		if err := writeTable(stdout, res); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return nil
}

// queryList expands --query.
func queryList(s string) ([]string, error) {
	if s == "all" {
		return peer.QueryNames(), nil
	}
	var names []string
	for _, q := range strings.Split(s, ",") {
		q = strings.TrimSpace(q)
		if _, err := peer.SQL(q); err != nil {
			return nil, err
		}
		names = append(names, q)
	}
	return names, nil
}

// writeTable prints t as '|'-separated lines with a header.
func writeTable(w io.Writer, t *verify.Table) error {
	var b strings.Builder
	b.WriteString(strings.Join(t.Header, "|"))
	b.WriteByte('\n')
	for _, r := range t.Rows {
		b.WriteString(strings.Join(r, "|"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
