package queries

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"

	ds "gostachio/dataset"
	"gostachio/engine"
	"gostachio/sqlplan"
	"gostachio/tpch"
)

// TestSQLEngine runs every SQL-planned query on the CPU engine over a
// generated SF0.01 dataset, on 1 and 3 devices, and compares with the
// official answers.
func TestSQLEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a dataset and runs the engine")
	}
	const sf = 0.01
	dir := filepath.Join(t.TempDir(), "data")
	if err := tpch.Gen(context.Background(), tpch.GenOptions{ScaleFactor: sf, Out: dir}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	store, err := ds.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The manifest's layout and the statistics gen recorded in it.
	tables := store.PlanStats()
	data := loadData(t, sf)
	for _, q := range Names() {
		t.Run(q, func(t *testing.T) {
			text := answerSQL(t, q, sf)
			header, want := answerFile(t, "sf0.01", q)
			if q == "q13" {
				want = q13Brute(t, data)
			}
			skip := map[int]bool{}
			for _, name := range textDiffers[q] {
				skip[slices.Index(header, name)] = true
			}
			for _, w := range []int{1, 3} {
				p, err := sqlplan.Plan(q, text, tables, sqlplan.Options{Workers: w})
				if err != nil {
					t.Fatal(err)
				}
				r, err := engine.Query(context.Background(), store, p, engine.QueryOptions{Policy: "serial", Devices: w, Set: "chunk=64KiB"})
				if err != nil {
					t.Fatalf("%d devices: %v", w, err)
				}
				compareRows(t, fmt.Sprintf("engine, %d devices", w), header, r.Rows(), want, skip)
			}
		})
	}
}
