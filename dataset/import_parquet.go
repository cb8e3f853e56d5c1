package dataset

import (
	"context"
	"fmt"
	"io"
	"math"
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
// (as Export or DuckDB write them), in chunks of opts.ChunkRows rows.
// Columns are matched by name, case-insensitively; extra columns are
// ignored. Accepted Arrow types per column type: identifiers int64 or
// int32; integers int32 or int64 in range; decimals decimal128 of any
// scale convertible exactly to cents, or int64 marked as our decimal;
// dates date32 or date64 (whole days); text utf8, large_utf8 or binary.
// Nulls are errors. Errors name the file and row.
func ImportParquet(src, dst string, opts ImportOptions, stderr io.Writer) error {
	tables, paths, err := importSources(src, "parquet", opts)
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
			if strings.EqualFold(f.Name, col.Name) {
				idx[i] = j
				break
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
				for _, x := range a.Int32Values() {
					v.I64 = append(v.I64, int64(x))
				}
			default:
				return nil, unsupported
			}
		case schema.Int32:
			switch a := a.(type) {
			case *array.Int32:
				v.I32 = append([]int32(nil), a.Int32Values()...)
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
					c, err := decimalCents(int64(d.LowBits()), scale)
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
