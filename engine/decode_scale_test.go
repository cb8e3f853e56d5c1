package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gostachio/dataset"
	"gostachio/kernels/cpu"
	"gostachio/tpch/schema"
)

// TestDecodeDecimalScale writes a table whose decimal has three digits
// after the point and checks that decoding gives vectors of that scale
// (and TPC-H's two for a TPC-H decimal), so that arithmetic and printing
// read 1.234 as 1.234, not 12.34.
func TestDecodeDecimalScale(t *testing.T) {
	tbl := &schema.Table{Name: "prices", Columns: []schema.Column{
		{Name: "milli", Type: schema.Decimal, Precision: 10, Scale: 3},
		{Name: "cents", Type: schema.Decimal, Precision: 15, Scale: 2},
	}}
	dir := filepath.Join(t.TempDir(), "ds")
	w, err := dataset.Create(dir, dataset.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := w.Table(tbl)
	if err != nil {
		t.Fatal(err)
	}
	b := &schema.Batch{Table: tbl, Rows: 3, Cols: []schema.Vector{{I64: []int64{1234, -5, 0}}, {I64: []int64{100, 250, -1}}}}
	if err := tw.Append(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := ds.Table("prices")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, tm.Files[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeUnit(nil, tm, 0, 1, []string{"milli", "cents"}, []readPiece{{off: 0, data: data}}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []cpu.Vec{{Type: cpu.TDecimal, Scale: 3, I64: []int64{1234, -5, 0}}, {Type: cpu.TDecimal, Scale: 2, I64: []int64{100, 250, -1}}}
	for k, w := range want {
		if v := out[0].Cols[k]; v.Type != w.Type || v.Scale != w.Scale || !reflect.DeepEqual(v.I64[:3], w.I64) {
			t.Errorf("column %d decoded as %v scale %d %v, want scale %d %v", k, v.Type, v.Scale, v.I64, w.Scale, w.I64)
		}
	}
}
