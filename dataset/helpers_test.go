package dataset

import (
	"bytes"
	"testing"

	"gostachio/dataset/internal/synth"
	"gostachio/tpch/schema"
)

// allTypes is a non-TPC-H table with every column type, to show the
// package is generic over schema.Table.
var allTypes = schema.Table{Name: "alltypes", Columns: []schema.Column{
	{Name: "k", Type: schema.Int64}, {Name: "price", Type: schema.Decimal, Precision: 15, Scale: 2},
	{Name: "n", Type: schema.Int32}, {Name: "day", Type: schema.Date},
	{Name: "s", Type: schema.String}, {Name: "empty", Type: schema.String},
	{Name: "ratio", Type: schema.Float64},
}}

// tableData is what a test writes for one table: its chunks in order.
type tableData struct {
	table  *schema.Table
	chunks []*schema.Batch
}

// sampleData returns lineitem in three chunks, nation in one, region with
// no rows, and alltypes in two chunks (one column of only empty strings).
func sampleData() []tableData {
	at1 := synth.Random(&allTypes, 40, 11)
	at2 := synth.Random(&allTypes, 9, 12)
	at1.Cols[5] = schema.Vector{Offsets: make([]int32, 41)}
	at2.Cols[5] = schema.Vector{Offsets: make([]int32, 10)}
	return []tableData{
		{&schema.Lineitem, []*schema.Batch{
			synth.Random(&schema.Lineitem, 700, 1),
			synth.Random(&schema.Lineitem, 1, 2),
			synth.Random(&schema.Lineitem, 2100, 3),
		}},
		{&schema.Nation, []*schema.Batch{synth.Random(&schema.Nation, 25, 4)}},
		{&schema.Region, nil},
		{&allTypes, []*schema.Batch{at1, at2}},
	}
}

// writeDataset writes data to dir and commits.
func writeDataset(t testing.TB, dir string, opts CreateOptions, data []tableData) {
	t.Helper()
	w, err := Create(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range data {
		tw, err := w.Table(td.table)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range td.chunks {
			if err := tw.Append(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// concat glues batches of one table into one (test-side reference).
func concat(t *schema.Table, bs []*schema.Batch) *schema.Batch {
	out := &schema.Batch{Table: t, Cols: make([]schema.Vector, len(t.Columns))}
	for ci := range out.Cols {
		if t.Columns[ci].Type == schema.String {
			out.Cols[ci].Offsets = []int32{0}
		}
	}
	for _, b := range bs {
		for ci, c := range t.Columns {
			v, o := &b.Cols[ci], &out.Cols[ci]
			switch c.Type {
			case schema.Int64, schema.Decimal, schema.Float64:
				o.I64 = append(o.I64, v.I64...)
			case schema.Int32, schema.Date:
				o.I32 = append(o.I32, v.I32...)
			default:
				base := int32(len(o.Bytes))
				for _, off := range v.Offsets[1:] {
					o.Offsets = append(o.Offsets, base+off)
				}
				o.Bytes = append(o.Bytes, v.Bytes...)
			}
		}
		out.Rows += b.Rows
	}
	return out
}

// readAll reads every chunk of table from ds into one batch.
func readAll(t testing.TB, ds *Dataset, table string) *schema.Batch {
	t.Helper()
	tm, err := ds.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	var bs []*schema.Batch
	for i := range tm.Chunks {
		b, err := ds.ReadChunk(table, i, nil)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	return concat(tm.Schema, bs)
}

// minMax computes a column's extremes independently of stats.go, by
// rendering values as sortable keys.
func minMax(c schema.Column, v *schema.Vector, rows int) (lo, hi Value) {
	if c.Type == schema.Float64 {
		return Value{}, Value{} // float columns carry no statistics
	}
	for i := 0; i < rows; i++ {
		var x Value
		switch c.Type {
		case schema.Int64, schema.Decimal:
			x = Value{Int: v.I64[i]}
		case schema.Int32, schema.Date:
			x = Value{Int: int64(v.I32[i])}
		default:
			x = Value{Str: v.Str(i), IsStr: true}
		}
		less := func(a, b Value) bool {
			if a.IsStr {
				return bytes.Compare([]byte(a.Str), []byte(b.Str)) < 0
			}
			return a.Int < b.Int
		}
		if i == 0 || less(x, lo) {
			lo = x
		}
		if i == 0 || less(hi, x) {
			hi = x
		}
	}
	return lo, hi
}
