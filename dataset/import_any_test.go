package dataset

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"gostachio/plan"
	"gostachio/tpch/schema"
)

// writeParquet writes one record of the given fields to dir/name.parquet
// with arrow-go's pqarrow, fill appending the values to each builder.
func writeParquet(t *testing.T, dir, name string, fields []arrow.Field, fill func(bs []array.Builder)) {
	t.Helper()
	sc := arrow.NewSchema(fields, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	fill(rb.Fields())
	rec := rb.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer tbl.Release()
	f, err := os.Create(filepath.Join(dir, name+".parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pqarrow.WriteTable(tbl, f, 2, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
}

// eventsFields is a table of every importable Arrow type but the TPC-H
// ones' alternatives.
var eventsFields = []arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8}, {Name: "i16", Type: arrow.PrimitiveTypes.Int16},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8}, {Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32}, {Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 3}},
	{Name: "wide", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32}, {Name: "day64", Type: arrow.FixedWidthTypes.Date64},
	{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "ls", Type: arrow.BinaryTypes.LargeString},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64}, {Name: "f32", Type: arrow.PrimitiveTypes.Float32},
}

// The float columns of fillEvents: doubles beyond any float32 and decimal
// (a subnormal, -0, a 17-digit value), and float32 values whose float64
// widening is exact.
var (
	eventsF64 = []float64{0.1, math.Copysign(0, -1), -1.2345678901234567e300, 5e-324, 3}
	eventsF32 = []float32{0.1, -2.5, 16777217, 1e-40, 3}
)

func fillEvents(bs []array.Builder) {
	for i := range 5 {
		bs[0].(*array.Int8Builder).Append(int8(-128 + i))
		bs[1].(*array.Int16Builder).Append(int16(32767 - i))
		bs[2].(*array.Uint8Builder).Append(uint8(255 - i%2))
		bs[3].(*array.Uint16Builder).Append(uint16(65535))
		bs[4].(*array.Int32Builder).Append(int32(-7 * i))
		bs[5].(*array.Uint32Builder).Append(uint32(4_000_000_000 + i))
		bs[6].(*array.Int64Builder).Append(int64(i) << 40)
		bs[7].(*array.Decimal128Builder).Append(decimal128.FromI64(int64(12345 * i))) // 12.345·i
		bs[8].(*array.Decimal128Builder).Append(decimal128.FromI64(int64(-i)))
		bs[9].(*array.Date32Builder).Append(arrow.Date32(19000 + i))
		bs[10].(*array.Date64Builder).Append(arrow.Date64(int64(-i) * 86_400_000))
		bs[11].(*array.StringBuilder).Append(strings.Repeat("é", i))
		bs[12].(*array.LargeStringBuilder).Append([]string{"a", "bb", "a", "ccc", "a"}[i])
		bs[13].(*array.Float64Builder).Append(eventsF64[i])
		bs[14].(*array.Float32Builder).Append(eventsF32[i])
	}
}

// TestImportParquetAnySchema imports a table of every supported Arrow
// type written by pqarrow, reads it back, and checks the values, the
// stored schema (widened integers, decimal scales) and the statistics a
// planner gets, against the values the test wrote.
func TestImportParquetAnySchema(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	os.Mkdir(src, 0o755)
	writeParquet(t, src, "events", eventsFields, fillEvents)
	dst := filepath.Join(root, "dst")
	if err := ImportParquet(src, dst, ImportOptions{ChunkRows: 3}, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := ds.Table("events")
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []schema.Type{schema.Int32, schema.Int32, schema.Int32, schema.Int32, schema.Int32, schema.Int64,
		schema.Int64, schema.Decimal, schema.Decimal, schema.Date, schema.Date, schema.String, schema.String,
		schema.Float64, schema.Float64}
	for i, c := range tm.Schema.Columns {
		if c.Name != eventsFields[i].Name || c.Type != wantTypes[i] {
			t.Errorf("column %d: %s %v, want %s %v", i, c.Name, c.Type, eventsFields[i].Name, wantTypes[i])
		}
	}
	if a, w := tm.Schema.Columns[7], tm.Schema.Columns[8]; a.Precision != 10 || a.Scale != 3 || w.Precision != 18 || w.Scale != 0 {
		t.Errorf("decimals %d,%d and %d,%d; want 10,3 and 18,0", a.Precision, a.Scale, w.Precision, w.Scale)
	}
	if len(tm.Chunks) != 2 {
		t.Errorf("%d chunks of 3 rows for 5 rows", len(tm.Chunks))
	}
	b := readAll(t, ds, "events")
	want := [][]int64{
		{-128, -127, -126, -125, -124}, {32767, 32766, 32765, 32764, 32763}, {255, 254, 255, 254, 255},
		{65535, 65535, 65535, 65535, 65535}, {0, -7, -14, -21, -28},
		{4_000_000_000, 4_000_000_001, 4_000_000_002, 4_000_000_003, 4_000_000_004},
		{0, 1 << 40, 2 << 40, 3 << 40, 4 << 40}, {0, 12345, 24690, 37035, 49380}, {0, -1, -2, -3, -4},
		{19000, 19001, 19002, 19003, 19004}, {0, -1, -2, -3, -4},
	}
	for ci, w := range want {
		v := &b.Cols[ci]
		var got []int64
		for i := range b.Rows {
			if v.I64 != nil {
				got = append(got, v.I64[i])
			} else {
				got = append(got, int64(v.I32[i]))
			}
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: read back %v, want %v", eventsFields[ci].Name, got, w)
		}
	}
	var s, ls []string
	for i := range b.Rows {
		s, ls = append(s, b.Cols[11].Str(i)), append(ls, b.Cols[12].Str(i))
	}
	if !reflect.DeepEqual(s, []string{"", "é", "éé", "ééé", "éééé"}) || !reflect.DeepEqual(ls, []string{"a", "bb", "a", "ccc", "a"}) {
		t.Errorf("text read back %q %q", s, ls)
	}
	for i := range b.Rows {
		if got, w := uint64(b.Cols[13].I64[i]), math.Float64bits(eventsF64[i]); got != w {
			t.Errorf("f64 row %d: bits %#x, want %#x (%v)", i, got, w, eventsF64[i])
		}
		if got, w := uint64(b.Cols[14].I64[i]), math.Float64bits(float64(eventsF32[i])); got != w {
			t.Errorf("f32 row %d: bits %#x, want %#x (%v)", i, got, w, eventsF32[i])
		}
	}

	ts := ds.PlanStats()[0]
	checks := map[string]plan.ColumnStats{
		"i8":     {Type: plan.TypeInt32, Distinct: 5, Range: plan.MinMax{Valid: true, Min: -128, Max: -124}},
		"u8":     {Type: plan.TypeInt32, Distinct: 2, Range: plan.MinMax{Valid: true, Min: 254, Max: 255}},
		"u32":    {Type: plan.TypeInt64, Distinct: 5, Range: plan.MinMax{Valid: true, Min: 4_000_000_000, Max: 4_000_000_004}},
		"amount": {Type: plan.TypeDecimal, Scale: 3, Distinct: 5, Range: plan.MinMax{Valid: true, Min: 0, Max: 49380}},
		"day64":  {Type: plan.TypeDate, Distinct: 5, Range: plan.MinMax{Valid: true, Min: -4, Max: 0}},
		"s":      {Type: plan.TypeString, Distinct: 5, AvgLen: 4}, // 0+2+4+6+8 bytes over 5 rows
		"ls":     {Type: plan.TypeString, Distinct: 3, AvgLen: 1.6},
		"f64":    {Type: plan.TypeFloat64, Distinct: 5},
		"f32":    {Type: plan.TypeFloat64, Distinct: 5},
	}
	for name, w := range checks {
		if got := ts.Schema[ts.Column(name)]; got != w {
			t.Errorf("%s: statistics %+v, want %+v", name, got, w)
		}
	}
}

// TestImportParquetRefusals checks that a column of a type the dataset
// cannot store and a null are refused naming the file, the column and the
// type or row, and that nothing is left at the destination.
func TestImportParquetRefusals(t *testing.T) {
	root := t.TempDir()
	cases := []struct {
		name   string
		fields []arrow.Field
		fill   func([]array.Builder)
		want   []string
	}{
		{"nans", []arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "ratio", Type: arrow.PrimitiveTypes.Float64}},
			func(bs []array.Builder) {
				bs[0].(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
				bs[1].(*array.Float64Builder).AppendValues([]float64{0.5, math.NaN()}, nil)
			}, []string{"nans.parquet", "column ratio row 1", "NaN", "not a finite number"}},
		{"infs", []arrow.Field{{Name: "ratio", Type: arrow.PrimitiveTypes.Float32}},
			func(bs []array.Builder) {
				bs[0].(*array.Float32Builder).AppendValues([]float32{1, 2, float32(math.Inf(-1))}, nil)
			}, []string{"infs.parquet", "column ratio row 2", "-Inf"}},
		{"floatholes", []arrow.Field{{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true}},
			func(bs []array.Builder) {
				bs[0].(*array.Float64Builder).AppendValues([]float64{1, 0}, []bool{true, false})
			}, []string{"floatholes.parquet", "column ratio row 1", "null"}},
		{"flags", []arrow.Field{{Name: "ok", Type: arrow.FixedWidthTypes.Boolean}},
			func(bs []array.Builder) { bs[0].(*array.BooleanBuilder).Append(true) },
			[]string{"flags.parquet", "column ok", "bool"}},
		{"stamps", []arrow.Field{{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_us}},
			func(bs []array.Builder) { bs[0].(*array.TimestampBuilder).Append(1) },
			[]string{"stamps.parquet", "column at", "timestamp"}},
		{"holes", []arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}},
			func(bs []array.Builder) {
				bs[0].(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
				bs[1].(*array.Int64Builder).AppendValues([]int64{7, 0, 9}, []bool{true, false, true})
			}, []string{"holes.parquet", "column v row 1", "null"}},
		{"toowide", []arrow.Field{{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}}},
			func(bs []array.Builder) {
				bs[0].(*array.Decimal128Builder).Append(decimal128.New(1, 0)) // 2^64
			}, []string{"toowide.parquet", "column big row 0", "exceeds int64"}},
	}
	for _, c := range cases {
		src := filepath.Join(root, c.name)
		os.Mkdir(src, 0o755)
		writeParquet(t, src, c.name, c.fields, c.fill)
		writeParquet(t, src, "events", eventsFields, fillEvents)
		dst := filepath.Join(root, c.name+".out")
		err := ImportParquet(src, dst, ImportOptions{}, nil)
		if err == nil {
			t.Errorf("%s: imported", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
		if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: failed import left %s (%v)", c.name, dst, err)
		}
		// The good table alone still imports.
		if err := ImportParquet(src, dst, ImportOptions{Names: []string{"events"}}, nil); err != nil {
			t.Errorf("%s: events alone: %v", c.name, err)
		}
	}
}
