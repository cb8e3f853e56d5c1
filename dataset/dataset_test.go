package dataset

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"gostachio/dataset/arrowipc"
	"gostachio/dataset/internal/synth"
	"gostachio/tpch/schema"
)

func TestWriteOpenRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	data := sampleData()
	writeDataset(t, dir, CreateOptions{Meta: Meta{ScaleFactor: 0.01,
		Generator: Generator{Name: "synth", Version: "1", Seed: 42}}}, data)
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := ds.Manifest
	if m.FormatVersion != 1 || m.Name != "ds" || m.ScaleFactor != 0.01 || m.Generator.Seed != 42 || len(m.Tables) != len(data) {
		t.Fatalf("manifest header: %+v", m)
	}
	for _, td := range data {
		tm, err := ds.Table(td.table.Name)
		if err != nil {
			t.Fatal(err)
		}
		if td.table != &allTypes && tm.Schema != td.table {
			t.Fatalf("%s: schema is not the canonical TPC-H table", td.table.Name)
		}
		want := concat(td.table, td.chunks)
		if tm.Rows != int64(want.Rows) || len(tm.Chunks) != len(td.chunks) {
			t.Fatalf("%s: %d rows in %d chunks, want %d in %d", td.table.Name, tm.Rows, len(tm.Chunks), want.Rows, len(td.chunks))
		}
		if err := synth.Equal(want, readAll(t, ds, td.table.Name)); err != nil {
			t.Fatalf("%s: ReadChunk: %v", td.table.Name, err)
		}
		for ci, b := range td.chunks {
			ch := tm.Chunks[ci]
			for k, c := range td.table.Columns {
				lo, hi := minMax(c, &b.Cols[k], b.Rows)
				if ch.Columns[k].Min != lo || ch.Columns[k].Max != hi {
					t.Fatalf("%s chunk %d %s: min/max %v/%v, want %v/%v", td.table.Name, ci, c.Name, ch.Columns[k].Min, ch.Columns[k].Max, lo, hi)
				}
			}
		}
		// The independent reader: arrow-go opens each file and returns the
		// same values, chunk by chunk.
		if len(tm.Files) != 1 {
			t.Fatalf("%s: %d files without striping", td.table.Name, len(tm.Files))
		}
		f, err := os.Open(filepath.Join(dir, td.table.Name+".arrow"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipc.NewFileReader(f)
		if err != nil {
			t.Fatalf("arrow-go: %v", err)
		}
		if r.NumRecords() != len(td.chunks) {
			t.Fatalf("arrow-go sees %d batches in %s", r.NumRecords(), td.table.Name)
		}
		for ci, b := range td.chunks {
			rec, err := r.RecordBatch(ci)
			if err != nil {
				t.Fatal(err)
			}
			if err := synth.Equal(b, fromArrowTest(t, td.table, rec)); err != nil {
				t.Fatalf("%s chunk %d via arrow-go: %v", td.table.Name, ci, err)
			}
		}
		r.Close()
		f.Close()
	}
	// Projection: two columns in reverse order.
	b, err := ds.ReadChunk("lineitem", 2, []string{"l_comment", "l_orderkey"})
	if err != nil {
		t.Fatal(err)
	}
	src := data[0].chunks[2]
	if b.Table.Columns[0].Name != "l_comment" || b.Cols[1].I64[17] != src.Cols[0].I64[17] || b.Cols[0].Str(5) != src.Cols[15].Str(5) {
		t.Fatalf("projection mismatch")
	}
	if _, err := ds.ReadChunk("lineitem", 3, nil); err == nil {
		t.Fatal("chunk 3 of 3 read")
	}
	if _, err := ds.ReadChunk("lineitem", 0, []string{"nope"}); err == nil {
		t.Fatal("unknown column read")
	}
	// Arrow export of a chunk.
	rec, err := ds.Arrow("nation", 0, nil, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if got := rec.Column(1).(*array.String).Value(3); got != data[1].chunks[0].Cols[1].Str(3) {
		t.Fatalf("Arrow n_name[3] = %q", got)
	}
}

// fromArrowTest converts an arrow-go record of our IPC schema to a batch
// with arrow-go's typed accessors.
func fromArrowTest(t *testing.T, tbl *schema.Table, rec arrow.RecordBatch) *schema.Batch {
	t.Helper()
	b := &schema.Batch{Table: tbl, Rows: int(rec.NumRows()), Cols: make([]schema.Vector, len(tbl.Columns))}
	for ci, c := range tbl.Columns {
		v := &b.Cols[ci]
		switch c.Type {
		case schema.Int64, schema.Decimal:
			v.I64 = rec.Column(ci).(*array.Int64).Int64Values()
		case schema.Float64:
			for _, x := range rec.Column(ci).(*array.Float64).Float64Values() {
				v.I64 = append(v.I64, int64(math.Float64bits(x)))
			}
		case schema.Int32:
			v.I32 = rec.Column(ci).(*array.Int32).Int32Values()
		case schema.Date:
			for _, d := range rec.Column(ci).(*array.Date32).Date32Values() {
				v.I32 = append(v.I32, int32(d))
			}
		default:
			a := rec.Column(ci).(*array.String)
			v.Offsets = []int32{0}
			for i := 0; i < a.Len(); i++ {
				v.Bytes = append(v.Bytes, a.Value(i)...)
				v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
			}
		}
	}
	return b
}

func TestAlignmentManifestAndIPC(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{Stripes: []string{filepath.Join(t.TempDir(), "nvme1")}}, sampleData())
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	nbuf := 0
	for _, tm := range m.Tables {
		for ci, ch := range tm.Chunks {
			path, _, err := ds.ChunkPath(tm.Name, ci)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			h, err := arrowipc.ReadBatchHeader(f, ch.Block())
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, cc := range ch.Columns {
				for _, b := range cc.Buffers {
					if b.Off%4096 != 0 {
						t.Fatalf("%s chunk %d: manifest buffer at %d", tm.Name, ci, b.Off)
					}
					ipcOff := ch.Offset + int64(ch.MetaLength) + h.Buffers[k].Offset
					if ipcOff%4096 != 0 || ipcOff != b.Off || h.Buffers[k].Length != b.Len {
						t.Fatalf("%s chunk %d buffer %d: IPC says %d+%d, manifest %d+%d", tm.Name, ci, k, ipcOff, h.Buffers[k].Length, b.Off, b.Len)
					}
					k++
					nbuf++
				}
			}
		}
	}
	if nbuf < 100 {
		t.Fatalf("only %d buffers checked", nbuf)
	}
}

func TestStripingTwoFolders(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "ds")
	stripe := filepath.Join(root, "b")
	var chunks []*schema.Batch
	for i := 0; i < 5; i++ {
		chunks = append(chunks, synth.Random(&schema.Orders, 100+i, uint64(i)))
	}
	writeDataset(t, dir, CreateOptions{Stripes: []string{stripe}}, []tableData{{&schema.Orders, chunks}})
	s1 := filepath.Join(stripe, "ds.stripe1")
	for _, p := range []string{filepath.Join(dir, "orders.arrow"), filepath.Join(s1, "orders.arrow")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(stripe); len(ents) != 1 {
		t.Fatalf("stripe parent holds %d entries, want only ds.stripe1", len(ents))
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Manifest.Stripes; len(got) != 2 || got[0] != "." || got[1] != s1 {
		t.Fatalf("stripes %q", got)
	}
	for i := range chunks {
		path, st, err := ds.ChunkPath("orders", i)
		if err != nil {
			t.Fatal(err)
		}
		wantDir := dir
		if i%2 == 1 {
			wantDir = s1
		}
		if st != i%2 || filepath.Dir(path) != wantDir {
			t.Fatalf("chunk %d on stripe %d at %s", i, st, path)
		}
		// Each stripe file is a standalone IPC file: its batches are the
		// chunks of that stripe in order.
		c, _ := ds.Chunk("orders", i)
		if c.Batch != i/2 {
			t.Fatalf("chunk %d is batch %d of its file", i, c.Batch)
		}
	}
	if err := synth.Equal(concat(&schema.Orders, chunks), readAll(t, ds, "orders")); err != nil {
		t.Fatal(err)
	}
	// Truncating the file on the other stripe is detected.
	if err := os.Truncate(filepath.Join(s1, "orders.arrow"), 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), s1) {
		t.Fatalf("truncated stripe file: %v", err)
	}
}

func TestCreateExistingFolder(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An empty folder is fine.
	writeDataset(t, dir, CreateOptions{}, []tableData{{&schema.Region, []*schema.Batch{synth.Random(&schema.Region, 5, 1)}}})
	// A non-empty one needs Force.
	if _, err := Create(dir, CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a dataset without force: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeDataset(t, dir, CreateOptions{Force: true}, []tableData{{&schema.Nation, []*schema.Batch{synth.Random(&schema.Nation, 25, 1)}}})
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Tables(); len(got) != 1 || got[0] != "nation" {
		t.Fatalf("tables after force: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("old content survived a forced replace")
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Fatalf("%d entries beside the dataset after replace", len(ents))
	}
	// A file where the folder should be.
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Create(file, CreateOptions{Force: true}); err == nil {
		t.Fatal("Create over a regular file")
	}
	// An unwritable parent.
	if _, err := Create(filepath.Join(file, "sub"), CreateOptions{}); err == nil || !strings.Contains(err.Error(), "file") {
		t.Fatalf("Create under a regular file: %v", err)
	}
}

func TestInterruptedAndAbort(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ds")
	stripe := filepath.Join(root, "s")
	w, err := Create(dir, CreateOptions{Stripes: []string{stripe}})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := w.Table(&schema.Nation)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := tw.Append(synth.Random(&schema.Nation, 25, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Mid-run (as after a crash): nothing at dir, only hidden temp folders.
	if _, err := Open(dir); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("Open mid-run: %v", err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if e.Name() == "ds" {
			t.Fatal("dataset folder exists before Commit")
		}
		if e.Name() != "s" && !strings.HasPrefix(e.Name(), ".ds.tmp-") {
			t.Fatalf("unexpected entry %s", e.Name())
		}
		if strings.HasPrefix(e.Name(), ".ds.tmp-") {
			if _, err := os.Stat(filepath.Join(root, e.Name(), ManifestName)); err == nil {
				t.Fatal("temp folder has a manifest before Commit")
			}
		}
	}
	w.Abort()
	for _, d := range []string{root, stripe} {
		if ents, _ := os.ReadDir(d); (d == root && len(ents) != 1) || (d == stripe && len(ents) != 0) {
			t.Fatalf("%s keeps %d entries after Abort", d, len(ents))
		}
	}
	if err := tw.Append(synth.Random(&schema.Nation, 1, 1)); err == nil {
		t.Fatal("Append after Abort")
	}
	if err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort")
	}
	w.Abort() // idempotent
}

func TestAppendRejectsBadBatches(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "ds"), CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	tw, err := w.Table(&schema.Nation)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Table(&schema.Nation); err == nil {
		t.Fatal("table started twice")
	}
	short := synth.Random(&schema.Nation, 5, 1)
	short.Cols[0].I64 = short.Cols[0].I64[:4]
	for name, b := range map[string]*schema.Batch{
		"other table": synth.Random(&schema.Region, 5, 1),
		"short":       short,
		"nil":         nil,
	} {
		if err := tw.Append(b); err == nil {
			t.Fatalf("%s batch accepted", name)
		}
	}
	if err := tw.Append(&schema.Batch{Table: &schema.Nation, Rows: 0, Cols: make([]schema.Vector, 4)}); err == nil {
		t.Fatal("zero-row batch without string offsets accepted by Validate")
	}
}

func TestOpenCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{}, []tableData{{&schema.Region, []*schema.Batch{synth.Random(&schema.Region, 5, 1)}}})
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir + "/")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("second Open re-read the dataset")
	}
	// Rewriting the dataset (new manifest) invalidates the entry.
	writeDataset(t, dir, CreateOptions{Force: true}, []tableData{{&schema.Region, []*schema.Batch{synth.Random(&schema.Region, 3, 2)}}})
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c == a || c.Manifest.Tables[0].Rows != 3 {
		t.Fatal("stale cache entry after rewrite")
	}
	// A cached dataset whose file is truncated later still fails Open.
	if err := os.Truncate(filepath.Join(dir, "region.arrow"), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated file behind the cache: %v", err)
	}
}
