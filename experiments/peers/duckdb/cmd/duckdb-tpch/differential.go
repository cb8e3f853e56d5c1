package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gostachio/dataset"
	peer "gostachio/experiments/peers/duckdb"
	"gostachio/sqlplan/querygen"
	"gostachio/tpch"
)

// runDifferential is `duckdb-tpch differential`: random SQL through
// gostachio's SQL path and DuckDB, compared.
func runDifferential(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("duckdb-tpch differential", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "gostachio TPC-H dataset folder (with --parquet: its export)")
	pqDir := fs.String("parquet", "", "folder of <table>.parquet files exported from --data")
	sf := fs.Float64("sf", 0, "generate TPC-H at this scale factor into a temporary folder instead of --data/--parquet")
	queries := fs.Int("queries", 100, "queries to generate and compare")
	seed := fs.Uint64("seed", 1, "seed of the first query (query i uses seed+i)")
	timeout := fs.Duration("timeout", time.Minute, "limit per query and engine")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	verbose := fs.Bool("verbose", false, "print each query's SQL to stderr before running it")
	skipList := fs.String("skip", "", "comma-separated seeds not to run (queries that crash the process)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("differential: unexpected arguments %q", fs.Args())
	}
	if *queries < 1 {
		return fmt.Errorf("differential: --queries %d: must be at least 1", *queries)
	}
	skip := map[uint64]bool{}
	for _, f := range strings.Split(*skipList, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return fmt.Errorf("differential: --skip %q: %w", f, err)
		}
		skip[n] = true
	}
	switch {
	case *sf > 0 && (*data != "" || *pqDir != ""):
		return errors.New("differential: give --sf, or --data with --parquet, not both")
	case *sf > 0:
		tmp, err := os.MkdirTemp("", "duckdb-tpch-differential")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*data, *pqDir = filepath.Join(tmp, "data"), filepath.Join(tmp, "parquet")
		fmt.Fprintf(stderr, "generating TPC-H SF%g in %s\n", *sf, tmp)
		if err := tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: *sf, Out: *data}, io.Discard, io.Discard); err != nil {
			return err
		}
		ds, err := dataset.Open(*data)
		if err != nil {
			return err
		}
		if err := dataset.Export(ds, *pqDir, dataset.ExportOptions{}, io.Discard); err != nil {
			return err
		}
	case *data == "" || *pqDir == "":
		return errors.New("differential: need --data and --parquet (or --sf)")
	}
	ds, err := dataset.Open(*data)
	if err != nil {
		return err
	}
	db, err := peer.Open(*pqDir)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg, stats, err := peer.GeneratorConfig(ctx, ds, db)
	if err != nil {
		return err
	}
	g, err := querygen.New(cfg)
	if err != nil {
		return err
	}
	rep, err := peer.Differential(ctx, ds, db, g, stats, peer.DifferentialOptions{
		Queries: *queries, Seed: *seed, Timeout: *timeout, Progress: stderr, Verbose: *verbose, Skip: skip})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.Summary(stdout); err != nil {
		return err
	}
	if rep.Matched != rep.Queries {
		return fmt.Errorf("differential: %d of %d queries mismatched", rep.Queries-rep.Matched, rep.Queries)
	}
	return nil
}
