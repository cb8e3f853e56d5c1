package tpch

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gostachio/dataset"
	"gostachio/tpch/schema"
)

// specRowsSF001 are the TPC-H row counts at SF0.01 (spec clause 4.2.5 with
// dbgen's fractional scaling; lineitem as official dbgen writes it).
var specRowsSF001 = map[string]int64{
	"part": 2000, "partsupp": 8000, "supplier": 100, "customer": 1500,
	"orders": 15000, "lineitem": 60175, "nation": 25, "region": 5,
}

func genSmall(t *testing.T, dir string, opts GenOptions) {
	t.Helper()
	opts.ScaleFactor, opts.Out = 0.01, dir
	if opts.ChunkRows == 0 {
		opts.ChunkRows = 2048
	}
	if err := Gen(context.Background(), opts, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}

func TestGenSF001RowCountsAndChunking(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sf0.01")
	genSmall(t, dir, GenOptions{})
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Manifest.ScaleFactor; got != 0.01 {
		t.Errorf("manifest scale factor %v, want 0.01", got)
	}
	for _, name := range ds.Tables() {
		tm, _ := ds.Table(name)
		if want := specRowsSF001[name]; tm.Rows != want {
			t.Errorf("%s: %d rows, want %d", name, tm.Rows, want)
		}
		var sum int64
		for _, c := range tm.Chunks {
			sum += c.Rows
		}
		if sum != tm.Rows {
			t.Errorf("%s: chunks hold %d rows, table says %d", name, sum, tm.Rows)
		}
	}
	// Orders and lineitem are co-chunked: chunk i of lineitem holds exactly
	// the lines of the orders in chunk i of orders.
	orders, _ := ds.Table("orders")
	lines, _ := ds.Table("lineitem")
	if len(orders.Chunks) != len(lines.Chunks) || len(orders.Chunks) < 2 {
		t.Fatalf("orders has %d chunks, lineitem %d: want equal and > 1", len(orders.Chunks), len(lines.Chunks))
	}
	for i := range orders.Chunks {
		o, err := ds.ReadChunk("orders", i, []string{"o_orderkey"})
		if err != nil {
			t.Fatal(err)
		}
		l, err := ds.ReadChunk("lineitem", i, []string{"l_orderkey"})
		if err != nil {
			t.Fatal(err)
		}
		keys := map[int64]bool{}
		for _, k := range o.Cols[0].I64 {
			keys[k] = true
		}
		for _, k := range l.Cols[0].I64 {
			if !keys[k] {
				t.Fatalf("lineitem chunk %d holds order %d, which is not in orders chunk %d", i, k, i)
			}
		}
	}
}

// TestGenChunkingDoesNotChangeData: the same scale factor generated with two
// chunk sizes and worker counts gives the same rows (parallel generation
// skips dbgen's random streams ahead exactly).
func TestGenChunkingDoesNotChangeData(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	genSmall(t, a, GenOptions{ChunkRows: 1000, Workers: 2})
	genSmall(t, b, GenOptions{ChunkRows: 100000, Workers: 1})
	da, err := dataset.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := dataset.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tab := range schema.Tables {
		ra, rb := readAll(t, da, tab), readAll(t, db, tab)
		if ra.Rows != rb.Rows {
			t.Fatalf("%s: %d vs %d rows", tab.Name, ra.Rows, rb.Rows)
		}
		for c := range tab.Columns {
			for i := 0; i < ra.Rows; i++ {
				if va, vb := cell(ra, c, i), cell(rb, c, i); va != vb {
					t.Fatalf("%s.%s row %d: %q vs %q", tab.Name, tab.Columns[c].Name, i, va, vb)
				}
			}
		}
	}
}

func readAll(t *testing.T, ds *dataset.Dataset, tab *schema.Table) *schema.Batch {
	t.Helper()
	tm, err := ds.Table(tab.Name)
	if err != nil {
		t.Fatal(err)
	}
	var bs []*schema.Batch
	for ci := range tm.Chunks {
		b, err := ds.ReadChunk(tab.Name, ci, nil)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	return schema.Concat(bs)
}

func cell(b *schema.Batch, c, i int) string {
	v := &b.Cols[c]
	switch b.Table.Columns[c].Type {
	case schema.String:
		return v.Str(i)
	case schema.Int64, schema.Decimal:
		return strconv.FormatInt(v.I64[i], 10)
	default:
		return strconv.FormatInt(int64(v.I32[i]), 10)
	}
}

func TestGenBadInput(t *testing.T) {
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	roDir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(roDir, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts GenOptions
		want string
	}{
		{"zero sf", GenOptions{ScaleFactor: 0, Out: t.TempDir()}, "must be a positive number"},
		{"negative sf", GenOptions{ScaleFactor: -1, Out: t.TempDir()}, "must be a positive number"},
		{"no out", GenOptions{ScaleFactor: 0.01}, "no output folder"},
		{"tiny chunks", GenOptions{ScaleFactor: 0.01, Out: filepath.Join(t.TempDir(), "x"), ChunkRows: 2}, "chunk rows"},
		{"non-empty without force", GenOptions{ScaleFactor: 0.01, Out: nonEmpty}, nonEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Gen(context.Background(), tc.opts, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Gen: %v; want an error containing %q", err, tc.want)
			}
		})
	}
	if os.Geteuid() != 0 { // root writes into read-only folders anyway
		err := Gen(context.Background(), GenOptions{ScaleFactor: 0.01, Out: filepath.Join(roDir, "ds")}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), roDir) {
			t.Fatalf("Gen into a read-only folder: %v; want an error naming it", err)
		}
	}
	// The non-empty folder is untouched.
	if _, err := os.Stat(filepath.Join(nonEmpty, "keep.txt")); err != nil {
		t.Fatalf("existing folder was modified: %v", err)
	}
}

// TestGenCanceledLeavesNothing: a cancelled generation leaves no dataset.
func TestGenCanceledLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Gen(ctx, GenOptions{ScaleFactor: 0.01, Out: dir}, io.Discard, io.Discard)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Gen with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := dataset.Open(dir); !errors.Is(err, dataset.ErrNoManifest) {
		t.Fatalf("after a cancelled run, Open: %v; want ErrNoManifest", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 0 {
		t.Fatalf("cancelled run left %d entries beside the dataset folder", len(entries))
	}
}

// TestExportImportRoundTrip: gen -> export parquet -> import parquet gives
// identical data.
func TestExportImportRoundTrip(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "gen")
	genSmall(t, src, GenOptions{ChunkRows: 3000})
	ds, err := dataset.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(root, "parquet")
	if err := dataset.Export(ds, pq, dataset.ExportOptions{Format: "parquet"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(root, "back")
	if err := dataset.ImportParquet(pq, back, dataset.ImportOptions{ChunkRows: 5000}, io.Discard); err != nil {
		t.Fatal(err)
	}
	db, err := dataset.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	if db.Manifest.ScaleFactor != 0.01 {
		t.Errorf("imported scale factor %v, want 0.01", db.Manifest.ScaleFactor)
	}
	for _, tab := range schema.Tables {
		a, b := readAll(t, ds, tab), readAll(t, db, tab)
		if a.Rows != b.Rows || a.Rows == 0 {
			t.Fatalf("%s: %d rows generated, %d after the round trip", tab.Name, a.Rows, b.Rows)
		}
		for c := range tab.Columns {
			for i := 0; i < a.Rows; i++ {
				if va, vb := cell(a, c, i), cell(b, c, i); va != vb {
					t.Fatalf("%s.%s row %d: %q before, %q after", tab.Name, tab.Columns[c].Name, i, va, vb)
				}
			}
		}
	}
}

// TestPlanStatsMatchManifest: the planner's view of a generated dataset has
// the spec's row counts and column spans inside the files.
func TestPlanStatsMatchManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sf0.01")
	genSmall(t, dir, GenOptions{ChunkRows: 4096})
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range ds.PlanStats() {
		if got, want := ts.Rows(), specRowsSF001[ts.Name]; got != want {
			t.Errorf("%s: %d rows, want %d", ts.Name, got, want)
		}
		tm, _ := ds.Table(ts.Name)
		for ci, ch := range ts.Chunks {
			size := tm.Files[ch.File].Size
			for c := range ts.Columns {
				if ch.Bytes[c] <= 0 || ch.Offset[c]%4096 != 0 || ch.Offset[c]+ch.Bytes[c] > size {
					t.Fatalf("%s chunk %d column %s: span [%d,+%d) not an aligned span inside the %d-byte file",
						ts.Name, ci, ts.Columns[c], ch.Offset[c], ch.Bytes[c], size)
				}
			}
		}
	}
}
