package dbgen

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"gostachio/tpch/schema"
)

// batchBytes is the in-memory size of b's values: fixed-width columns at
// their width, text columns as bytes plus int32 offsets.
func batchBytes(b *schema.Batch) int64 {
	var n int64
	for i, c := range b.Table.Columns {
		v := &b.Cols[i]
		if c.Type == schema.String {
			n += int64(len(v.Bytes)) + 4*int64(len(v.Offsets))
		} else {
			n += int64(c.Type.Width() * b.Rows)
		}
	}
	return n
}

// generateParallel generates every unit of t (and its child) in ranges of
// chunk units on GOMAXPROCS goroutines, dropping the batches; it returns
// the rows and bytes produced.
func generateParallel(g *Generator, t *schema.Table, chunk int64) (rows, bytes int64, err error) {
	units := g.Units(t)
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r, by int64
			for {
				first := next.Add(chunk) - chunk
				if first >= units {
					break
				}
				m, c, e := g.GenerateWithChild(t, first, min(chunk, units-first))
				if e != nil {
					mu.Lock()
					err = e
					mu.Unlock()
					return
				}
				for _, b := range []*schema.Batch{m, c} {
					if b != nil {
						r += int64(b.Rows)
						by += batchBytes(b)
					}
				}
			}
			mu.Lock()
			rows, bytes = rows+r, bytes+by
			mu.Unlock()
		}()
	}
	wg.Wait()
	return rows, bytes, err
}

// BenchmarkGenerateSF1 generates SF1 in memory on every core (ranges of
// 64Ki units), per driving table and all eight tables together, and reports
// rows/s and MB/s (b.SetBytes) of column data produced. The text pool is built before
// the timer starts (once per process).
//
//	go test -run '^$' -bench GenerateSF1 -benchtime 1x ./tpch/dbgen/
func BenchmarkGenerateSF1(b *testing.B) {
	g, err := New(1)
	if err != nil {
		b.Fatal(err)
	}
	groups := []struct {
		name   string
		tables []*schema.Table
	}{
		{"part+partsupp", []*schema.Table{&schema.Part}},
		{"supplier", []*schema.Table{&schema.Supplier}},
		{"customer", []*schema.Table{&schema.Customer}},
		{"orders+lineitem", []*schema.Table{&schema.Orders}},
		{"all", []*schema.Table{&schema.Part, &schema.Supplier, &schema.Customer, &schema.Orders, &schema.Nation, &schema.Region}},
	}
	for _, gr := range groups {
		b.Run(gr.name, func(b *testing.B) {
			var rows, bytes int64
			for b.Loop() {
				for _, t := range gr.tables {
					r, by, err := generateParallel(g, t, 1<<16)
					if err != nil {
						b.Fatal(err)
					}
					rows, bytes = rows+r, bytes+by
				}
			}
			s := b.Elapsed().Seconds()
			b.SetBytes(bytes / int64(b.N))
			b.ReportMetric(float64(rows)/s, "rows/s")
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
		})
	}
}
