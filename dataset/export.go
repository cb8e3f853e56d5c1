package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"gostachio/tpch/schema"
)

// Parquet key-value metadata written by Export and read by ImportParquet.
const (
	metaScaleFactor = "gostachio.scale_factor"
	metaGenerator   = "gostachio.generator"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// Format is the output format; only "parquet" (the default) exists.
	Format string
	// Tables limits the export to these tables (nil: all).
	Tables []string
	// Force allows overwriting existing <table>.parquet files in outDir.
	Force bool
}

// Export writes one Parquet file per table, <outDir>/<table>.parquet, with
// one row group per chunk, snappy-compressed, all columns REQUIRED:
// decimals as DECIMAL(15,2) stored as INT64 (so DuckDB and pyarrow read
// decimals), dates as DATE, strings as STRING, integers as INT32/INT64.
// The scale factor and generator go into the file's key-value metadata.
// Each file is written to a temporary name and renamed when complete.
// Progress goes to stderr (may be nil).
func Export(ds *Dataset, outDir string, opts ExportOptions, stderr io.Writer) error {
	if opts.Format != "" && opts.Format != "parquet" {
		return fmt.Errorf("dataset: export format %q: only parquet is supported", opts.Format)
	}
	if stderr == nil {
		stderr = io.Discard
	}
	tables := opts.Tables
	if tables == nil {
		tables = ds.Tables()
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("dataset: export to %s: %w", outDir, err)
	}
	for _, name := range tables {
		tm, err := ds.Table(name)
		if err != nil {
			return err
		}
		path := filepath.Join(outDir, name+".parquet")
		if _, err := os.Stat(path); err == nil && !opts.Force {
			return fmt.Errorf("dataset: export %s: %w", path, os.ErrExist)
		}
		if err := exportTable(ds, tm, path); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "export %s: %d rows, %d chunks -> %s\n", name, tm.Rows, len(tm.Chunks), path)
	}
	return nil
}

// parquetSchema is t's Arrow schema for Parquet: decimals as Decimal128.
func parquetSchema(t *schema.Table, md arrow.Metadata) *arrow.Schema {
	base := ArrowSchema(t)
	fields := base.Fields()
	for i, c := range t.Columns {
		fields[i].Metadata = arrow.Metadata{}
		if c.Type == schema.Decimal {
			fields[i].Type = &arrow.Decimal128Type{Precision: schema.DecimalPrecision, Scale: 2}
		}
	}
	return arrow.NewSchema(fields, &md)
}

func exportTable(ds *Dataset, tm *TableMeta, path string) (err error) {
	gen, _ := json.Marshal(ds.Manifest.Generator)
	md := arrow.NewMetadata([]string{metaScaleFactor, metaGenerator},
		[]string{strconv.FormatFloat(ds.Manifest.ScaleFactor, 'g', -1, 64), string(gen)})
	sch := parquetSchema(tm.Schema, md)
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("dataset: export %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	props := parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true),
		parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<30))
	// The writer is handed f without its Close method so that f stays open
	// for the fsync below.
	pw, err := pqarrow.NewFileWriter(sch, struct{ io.Writer }{f}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("dataset: export %s: %w", path, err)
	}
	mem := memory.DefaultAllocator
	for ci := range tm.Chunks {
		b, err := ds.ReadChunk(tm.Name, ci, nil)
		if err != nil {
			return err
		}
		rec := parquetRecord(b, sch, mem)
		err = pw.Write(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("dataset: export %s chunk %d: %w", path, ci, err)
		}
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("dataset: export %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("dataset: export %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("dataset: export %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("dataset: export %s: %w", path, err)
	}
	return nil
}

// parquetRecord converts b to a record of sch (ToArrow, with decimal
// columns rebuilt as Decimal128 of the same unscaled value).
func parquetRecord(b *schema.Batch, sch *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	rec := ToArrow(b, mem)
	defer rec.Release()
	cols := make([]arrow.Array, len(b.Cols))
	for i, c := range b.Table.Columns {
		if c.Type != schema.Decimal {
			cols[i] = rec.Column(i)
			cols[i].Retain()
			continue
		}
		bld := array.NewDecimal128Builder(mem, sch.Field(i).Type.(*arrow.Decimal128Type))
		bld.Reserve(b.Rows)
		for _, v := range b.Cols[i].I64[:b.Rows] {
			bld.UnsafeAppend(decimal128.FromI64(v))
		}
		cols[i] = bld.NewArray()
		bld.Release()
	}
	out := array.NewRecordBatch(sch, cols, int64(b.Rows))
	for _, c := range cols {
		c.Release()
	}
	return out
}

var errNull = errors.New("null value (TPC-H columns are NOT NULL)")
