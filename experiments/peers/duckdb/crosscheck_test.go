package peer

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/tpch"
	tpchqueries "gostachio/tpch/queries"
	"gostachio/tpch/verify"
)

// TestEngineMatchesDuckDB runs all 22 queries on gostachio's CPU engine
// (reading its own files through the scheduler) and in DuckDB (reading the
// Parquet export of the same data) at fractional scale factors, and
// requires equal results: the independent check for every query at scale
// factors without official answers (and for Q2, Q10, Q11, Q13, Q15, Q20 at
// SF0.01, whose answer-set files do not hold for spec parameters on dbgen
// data).
func TestEngineMatchesDuckDB(t *testing.T) {
	for _, sf := range []float64{0.01, 0.05} {
		ctx := context.Background()
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if err := tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: sf, Out: data}, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		ds, err := dataset.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		pq := filepath.Join(dir, "parquet")
		if err := dataset.Export(ds, pq, dataset.ExportOptions{}, io.Discard); err != nil {
			t.Fatal(err)
		}
		db, err := Open(pq)
		if err != nil {
			t.Fatal(err)
		}
		db.SetScaleFactor(sf)
		for i, name := range QueryNames() {
			want, _, err := db.Query(ctx, name)
			if err != nil {
				t.Fatalf("duckdb %s: %v", name, err)
			}
			// Alternate policies and device counts so both paths are checked.
			opts := engine.QueryOptions{Policy: "overlap", Devices: 2, Set: "chunk=256KiB"}
			if i%2 == 1 {
				opts = engine.QueryOptions{Policy: "serial", Devices: 3}
			}
			p, err := engine.BuildQuery(ds, tpchqueries.Catalog(), name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := engine.Query(ctx, ds, p, opts)
			if err != nil {
				t.Fatalf("engine %s at SF%g: %v", name, sf, err)
			}
			got := &verify.Table{Header: r.Columns, Rows: r.Rows()}
			if err := verify.Compare(got, want, false); err != nil {
				t.Errorf("%s at SF%g (engine %s, %d devices) differs from DuckDB: %v", name, sf, opts.Policy, opts.Devices, err)
			}
		}
		db.Close()
	}
}
