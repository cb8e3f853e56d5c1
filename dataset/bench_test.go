package dataset

import (
	"path/filepath"
	"sync"
	"testing"

	"gostachio/dataset/internal/synth"
	"gostachio/tpch/schema"
)

// TestConcurrentTables writes three tables from three goroutines into one
// dataset (run under -race in make race) and reads them back.
func TestConcurrentTables(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := Create(dir, CreateOptions{Stripes: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	tables := []*schema.Table{&schema.Orders, &schema.Part, &schema.Supplier}
	want := make([][]*schema.Batch, len(tables))
	var wg sync.WaitGroup
	errs := make([]error, len(tables))
	for i, tbl := range tables {
		for k := 0; k < 5; k++ {
			want[i] = append(want[i], synth.Random(tbl, 50+k*13, uint64(10*i+k)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tw, err := w.Table(tbl)
			if err != nil {
				errs[i] = err
				return
			}
			for _, b := range want[i] {
				if err := tw.Append(b); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, tbl := range tables {
		if err := synth.Equal(concat(tbl, want[i]), readAll(t, ds, tbl.Name)); err != nil {
			t.Fatalf("%s: %v", tbl.Name, err)
		}
	}
}

// lineitemChunk is a 64k-row synthetic lineitem chunk and its byte size.
func lineitemChunk() (*schema.Batch, int64) {
	b := synth.Random(&schema.Lineitem, 1<<16, 1)
	var n int64
	for i, c := range schema.Lineitem.Columns {
		n += int64(b.Rows * c.Type.Width())
		if c.Type == schema.String {
			n += int64(len(b.Cols[i].Bytes) + 4*(b.Rows+1))
		}
	}
	return b, n
}

// BenchmarkAppend measures TableWriter.Append of a 64k-row lineitem chunk
// (encoding, statistics, buffered write; no fsync) in bytes of column data.
func BenchmarkAppend(b *testing.B) {
	chunk, n := lineitemChunk()
	w, err := Create(filepath.Join(b.TempDir(), "ds"), CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	tw, err := w.Table(&schema.Lineitem)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tw.Append(chunk); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*chunk.Rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadChunk measures ReadChunk (pread of every column, offsets
// check) of a 64k-row lineitem chunk from the page cache.
func BenchmarkReadChunk(b *testing.B) {
	chunk, n := lineitemChunk()
	dir := filepath.Join(b.TempDir(), "ds")
	writeDataset(b, dir, CreateOptions{}, []tableData{{&schema.Lineitem, []*schema.Batch{chunk}}})
	ds, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ds.ReadChunk("lineitem", 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}
