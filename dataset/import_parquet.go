package dataset

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"gostachio/dataset/arrowipc"
	"gostachio/tpch/schema"
)

// ImportParquet builds a dataset at dst from <src>/<table>.parquet files
// (as Export, DuckDB or any Arrow writer write them), in chunks of
// opts.ChunkRows rows: the tables opts.Names (or opts.Tables) names, else
// every .parquet file of src.
//
// A file named after a TPC-H table is imported with the TPC-H schema, so
// that imported and generated TPC-H data are identical: its columns are
// matched by name, case-insensitively, extra columns ignored, and the
// accepted Arrow types per column type are: identifiers int64 or int32;
// integers int32 or int64 in range; decimals decimal128 of any scale
// convertible exactly to cents, or int64 marked as our decimal; dates
// date32 or date64 (whole days); text utf8, large_utf8 or binary.
//
// Any other file keeps its own schema, every column in file order
// (parquetTable): int8, int16, uint8, uint16 and int32 become int32;
// uint32 and int64 int64; decimal128(p, s) a decimal of scale s; float64
// and float32 (widened exactly) float64; date32 and date64 a date; utf8
// and large_utf8 text. Other types are refused naming the file, the column
// and the type. Nulls are errors naming the column and row, as are values
// that do not fit and float NaNs and infinities (SQL over them would not
// order or group as other engines do).
func ImportParquet(src, dst string, opts ImportOptions, stderr io.Writer) error {
	tables, paths, err := parquetSources(src, opts)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(src)
	gen := Generator{Name: "import-parquet", Version: strconv.Itoa(FormatVersion), Params: map[string]string{"source": abs}}
	return runImport(dst, opts, gen, tables, paths, stderr, loadParquet)
}

func loadParquet(t *schema.Table, path string, c *chunker) (float64, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return 0, fmt.Errorf("dataset: open %s: %w", path, err)
	}
	defer pf.Close()
	var sf float64
	if v := pf.MetaData().KeyValueMetadata().FindValue(metaScaleFactor); v != nil {
		sf, _ = strconv.ParseFloat(*v, 64)
	}
	mem := memory.DefaultAllocator
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(c.rows)}, mem)
	if err != nil {
		return 0, fmt.Errorf("dataset: read %s: %w", path, err)
	}
	sch, err := fr.Schema()
	if err != nil {
		return 0, fmt.Errorf("dataset: read %s schema: %w", path, err)
	}
	// Map each table column to a Parquet column.
	idx := make([]int, len(t.Columns))
	for i, col := range t.Columns {
		idx[i] = -1
		for j, f := range sch.Fields() {
			if f.Name == col.Name {
				idx[i] = j
				break
			}
			if idx[i] < 0 && strings.EqualFold(f.Name, col.Name) {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return 0, fmt.Errorf("dataset: %s has no column %s", path, col.Name)
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), idx, nil)
	if err != nil {
		return 0, fmt.Errorf("dataset: read %s: %w", path, err)
	}
	defer rr.Release()
	var row int64
	for rr.Next() {
		rec := rr.RecordBatch()
		b, err := fromArrow(rec, t, row)
		if err != nil {
			return 0, fmt.Errorf("dataset: %s: %w", path, err)
		}
		if err := c.addRange(b, 0, b.Rows); err != nil {
			return 0, err
		}
		row += rec.NumRows()
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return 0, fmt.Errorf("dataset: read %s after row %d: %w", path, row, err)
	}
	return sf, nil
}

// fromArrow converts a record whose columns are t's columns in order (any
// accepted Arrow type, see ImportParquet) to a batch; firstRow numbers rows
// in errors.
func fromArrow(rec arrow.RecordBatch, t *schema.Table, firstRow int64) (*schema.Batch, error) {
	n := int(rec.NumRows())
	b := &schema.Batch{Table: t, Rows: n, Cols: make([]schema.Vector, len(t.Columns))}
	for ci, col := range t.Columns {
		a := rec.Column(ci)
		f := rec.Schema().Field(ci)
		if a.NullN() > 0 {
			for i := 0; i < n; i++ {
				if a.IsNull(i) {
					return nil, fmt.Errorf("column %s row %d: %w", col.Name, firstRow+int64(i), errNull)
				}
			}
		}
		v := &b.Cols[ci]
		bad := func(i int, format string, args ...any) error {
			return fmt.Errorf("column %s row %d: %s", col.Name, firstRow+int64(i), fmt.Sprintf(format, args...))
		}
		unsupported := fmt.Errorf("column %s: Arrow type %s cannot be stored as %s", col.Name, a.DataType(), col.Type)
		switch col.Type {
		case schema.Int64:
			switch a := a.(type) {
			case *array.Int64:
				v.I64 = append([]int64(nil), a.Int64Values()...)
			case *array.Int32:
				v.I64 = widen[int32, int64](a.Int32Values())
			case *array.Uint32:
				v.I64 = widen[uint32, int64](a.Uint32Values())
			default:
				return nil, unsupported
			}
		case schema.Int32:
			switch a := a.(type) {
			case *array.Int32:
				v.I32 = append([]int32(nil), a.Int32Values()...)
			case *array.Int16:
				v.I32 = widen[int16, int32](a.Int16Values())
			case *array.Int8:
				v.I32 = widen[int8, int32](a.Int8Values())
			case *array.Uint16:
				v.I32 = widen[uint16, int32](a.Uint16Values())
			case *array.Uint8:
				v.I32 = widen[uint8, int32](a.Uint8Values())
			case *array.Int64:
				for i, x := range a.Int64Values() {
					if x != int64(int32(x)) {
						return nil, bad(i, "%d exceeds int32", x)
					}
					v.I32 = append(v.I32, int32(x))
				}
			default:
				return nil, unsupported
			}
		case schema.Decimal:
			v.I64 = make([]int64, n)
			switch a := a.(type) {
			case *array.Decimal128:
				scale := a.DataType().(*arrow.Decimal128Type).Scale
				for i := 0; i < n; i++ {
					d := a.Value(i)
					if !d.FitsInPrecision(18) {
						return nil, bad(i, "decimal %s exceeds int64", d.ToString(scale))
					}
					c, err := rescaleDecimal(int64(d.LowBits()), scale, int32(col.Scale))
					if err != nil {
						return nil, bad(i, "%v", err)
					}
					v.I64[i] = c
				}
			case *array.Int64:
				if lt, _ := f.Metadata.GetValue(arrowipc.LogicalTypeKey); lt != schema.Decimal.String() {
					return nil, unsupported
				}
				copy(v.I64, a.Int64Values())
			default:
				return nil, unsupported
			}
		case schema.Date:
			switch a := a.(type) {
			case *array.Date32:
				for _, d := range a.Date32Values() {
					v.I32 = append(v.I32, int32(d))
				}
			case *array.Date64:
				for i, d := range a.Date64Values() {
					const msPerDay = 86_400_000
					if int64(d)%msPerDay != 0 || int64(d)/msPerDay > math.MaxInt32 || int64(d)/msPerDay < math.MinInt32 {
						return nil, bad(i, "date64 %d is not a whole day in range", d)
					}
					v.I32 = append(v.I32, int32(int64(d)/msPerDay))
				}
			default:
				return nil, unsupported
			}
		case schema.Float64:
			v.I64 = make([]int64, n)
			for i := 0; i < n; i++ {
				var x float64
				switch a := a.(type) {
				case *array.Float64:
					x = a.Value(i)
				case *array.Float32:
					x = float64(a.Value(i))
				default:
					return nil, unsupported
				}
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, bad(i, "%v is not a finite number", x)
				}
				v.I64[i] = int64(math.Float64bits(x))
			}
		case schema.String:
			v.Offsets = make([]int32, 1, n+1)
			switch a := a.(type) {
			case *array.String:
				for i := 0; i < n; i++ {
					v.Bytes = append(v.Bytes, a.Value(i)...)
					v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
				}
			case *array.LargeString:
				for i := 0; i < n; i++ {
					v.Bytes = append(v.Bytes, a.Value(i)...)
					v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
				}
			case *array.Binary:
				for i := 0; i < n; i++ {
					v.Bytes = append(v.Bytes, a.Value(i)...)
					v.Offsets = append(v.Offsets, int32(len(v.Bytes)))
				}
			default:
				return nil, unsupported
			}
		}
	}
	return b, nil
}

// widen converts integers to a wider type that holds every value.
func widen[From, To int8 | int16 | int32 | int64 | uint8 | uint16 | uint32](xs []From) []To {
	out := make([]To, len(xs))
	for i, x := range xs {
		out[i] = To(x)
	}
	return out
}

// parquetSources resolves which tables ImportParquet imports from src:
// opts.Names, or the names of opts.Tables, each from <src>/<name>.parquet
// (which must exist), or by default every regular .parquet file of src in
// name order (at least one). A TPC-H name takes the TPC-H schema; any
// other name the schema of its file (parquetTable).
func parquetSources(src string, opts ImportOptions) ([]*schema.Table, []string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: import from %s: %w", src, err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("dataset: import from %s: not a folder", src)
	}
	names := opts.Names
	for _, t := range opts.Tables {
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		ents, err := os.ReadDir(src)
		if err != nil {
			return nil, nil, fmt.Errorf("dataset: import from %s: %w", src, err)
		}
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".parquet"); ok && e.Type().IsRegular() && name != "" {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return nil, nil, fmt.Errorf("dataset: import from %s: no <table>.parquet file", src)
		}
	}
	var tables []*schema.Table
	var paths []string
	seen := map[string]bool{}
	for _, name := range names {
		if !validName(name) || seen[name] {
			return nil, nil, fmt.Errorf("dataset: import from %s: invalid or repeated table name %q", src, name)
		}
		seen[name] = true
		p := filepath.Join(src, name+".parquet")
		if _, err := os.Stat(p); err != nil {
			return nil, nil, fmt.Errorf("dataset: import table %s: %w", name, err)
		}
		t, err := schema.Lookup(name)
		if err != nil {
			if t, err = parquetTable(name, p); err != nil {
				return nil, nil, err
			}
		}
		tables = append(tables, t)
		paths = append(paths, p)
	}
	return tables, paths, nil
}

// parquetTable is the table a Parquet file holds under its own schema:
// every top-level column in file order, typed as ImportParquet says. It
// fails on a column of a type the dataset cannot store, naming the file,
// the column and the type.
func parquetTable(name, path string) (*schema.Table, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("dataset: open %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("dataset: read %s: %w", path, err)
	}
	sch, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("dataset: read %s schema: %w", path, err)
	}
	t := &schema.Table{Name: name}
	seen := map[string]bool{}
	for _, f := range sch.Fields() {
		if f.Name == "" || seen[f.Name] {
			return nil, fmt.Errorf("dataset: %s: empty or repeated column name %q", path, f.Name)
		}
		seen[f.Name] = true
		c := schema.Column{Name: f.Name}
		switch dt := f.Type.(type) {
		case *arrow.Int8Type, *arrow.Int16Type, *arrow.Uint8Type, *arrow.Uint16Type, *arrow.Int32Type:
			c.Type = schema.Int32
		case *arrow.Uint32Type, *arrow.Int64Type:
			c.Type = schema.Int64
		case *arrow.Decimal128Type:
			if dt.Scale < 0 || dt.Scale > schema.MaxDecimalPrecision {
				return nil, fmt.Errorf("dataset: %s column %s: %s: scale outside 0..%d", path, f.Name, dt, schema.MaxDecimalPrecision)
			}
			// Wider decimals are kept while their values fit an int64
			// (checked row by row on import).
			c.Type, c.Precision, c.Scale = schema.Decimal, min(int(dt.Precision), schema.MaxDecimalPrecision), int(dt.Scale)
			c.Precision = max(c.Precision, c.Scale)
		case *arrow.Date32Type, *arrow.Date64Type:
			c.Type = schema.Date
		case *arrow.StringType, *arrow.LargeStringType:
			c.Type = schema.String
		case *arrow.Float32Type, *arrow.Float64Type:
			c.Type = schema.Float64
		default:
			return nil, fmt.Errorf("dataset: %s column %s: type %s is not importable (want an integer, decimal128, float32/float64, date32/date64 or utf8 column)", path, f.Name, f.Type)
		}
		t.Columns = append(t.Columns, c)
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("dataset: %s has no columns", path)
	}
	return t, nil
}
