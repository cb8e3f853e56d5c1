package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	// Force allows replacing an existing non-empty outDir (a complete
	// export or not).
	Force bool
}

// ExportMarkerName is the file that makes a folder a complete export. It
// is written last, inside the temporary folder that is then renamed into
// place, so a folder holding it holds every table it lists.
const ExportMarkerName = "export.json"

// ExportMarker is the content of export.json: what was exported from which
// dataset.
type ExportMarker struct {
	Format      string  `json:"format"`
	Dataset     string  `json:"dataset"`
	Name        string  `json:"name"`
	ScaleFactor float64 `json:"scale_factor"`
	// ManifestDigest is the source manifest's digest ("" for a dataset
	// written before digests): an export of other data has another.
	ManifestDigest string        `json:"manifest_digest,omitempty"`
	Tables         []ExportTable `json:"tables"`
}

// ExportTable is one exported table.
type ExportTable struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// ReadExport returns the marker of the complete export in dir, or an error
// saying why dir is not one: it does not exist (wrapping os.ErrNotExist),
// it has no export.json (an interrupted export, or another folder), or a
// file the marker lists is missing or has another size.
func ReadExport(dir string) (*ExportMarker, error) {
	data, err := os.ReadFile(filepath.Join(dir, ExportMarkerName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(dir); serr != nil {
				return nil, fmt.Errorf("dataset: export %s: %w", dir, serr)
			}
			return nil, fmt.Errorf("dataset: %s is not a complete export: it has no %s (an interrupted export, or another folder)%s",
				dir, ExportMarkerName, listing(dir))
		}
		return nil, fmt.Errorf("dataset: export %s: %w", dir, err)
	}
	m := &ExportMarker{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("dataset: %s: %w: invalid JSON: %v", filepath.Join(dir, ExportMarkerName), ErrCorrupt, err)
	}
	for _, t := range m.Tables {
		st, err := os.Stat(filepath.Join(dir, t.File))
		if err != nil {
			return nil, fmt.Errorf("dataset: export %s: table %s: %w", dir, t.Name, err)
		}
		if st.Size() != t.Bytes {
			return nil, fmt.Errorf("dataset: export %s: table %s: %w: %s has %d bytes, %s says %d",
				dir, t.Name, ErrCorrupt, t.File, st.Size(), ExportMarkerName, t.Bytes)
		}
	}
	return m, nil
}

// listing names up to five entries of dir, for messages.
func listing(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return ""
	}
	var names []string
	for _, e := range ents[:min(len(ents), 5)] {
		names = append(names, e.Name())
	}
	more := ""
	if len(ents) > 5 {
		more = fmt.Sprintf(" and %d more", len(ents)-5)
	}
	return fmt.Sprintf("; it holds %s%s", strings.Join(names, ", "), more)
}

// Export writes one Parquet file per table, <outDir>/<table>.parquet, with
// one row group per chunk, snappy-compressed, all columns REQUIRED:
// decimals as DECIMAL(15,2) stored as INT64 (so DuckDB and pyarrow read
// decimals), dates as DATE, strings as STRING, integers as INT32/INT64.
// The scale factor and generator go into each file's key-value metadata,
// and export.json (ExportMarker) lists what was exported. Everything is
// written into a temporary folder beside outDir and renamed into place
// whole, so an interrupted export leaves no folder that looks complete;
// the temporary folders of interrupted exports are removed by the next.
// An existing non-empty outDir is replaced only with Force; without it
// the error says whether it holds a complete export. Files get the mode
// of the dataset's files. Progress goes to stderr (may be nil).
func Export(ds *Dataset, outDir string, opts ExportOptions, stderr io.Writer) (err error) {
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
	for _, name := range tables {
		if _, err := ds.Table(name); err != nil {
			return err
		}
	}
	abs, err := filepath.Abs(outDir)
	if err != nil {
		return fmt.Errorf("dataset: export to %s: %w", outDir, err)
	}
	if err := checkExportTarget(abs, opts.Force); err != nil {
		return err
	}
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("dataset: export to %s: %w", outDir, err)
	}
	removed, err := removeStale(parent, base)
	if err != nil {
		return err
	}
	for _, r := range removed {
		fmt.Fprintf(stderr, "removed %s, left by an interrupted export\n", r)
	}
	tmp, err := makeTempDir(parent, base)
	if err != nil {
		return fmt.Errorf("dataset: export to %s: %w", outDir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	marker := ExportMarker{Format: "parquet", Dataset: ds.Dir, Name: ds.Manifest.Name,
		ScaleFactor: ds.Manifest.ScaleFactor, ManifestDigest: ds.Manifest.Digest}
	for _, name := range tables {
		tm, _ := ds.Table(name)
		file := name + ".parquet"
		n, err := exportTable(ds, tm, filepath.Join(tmp, file))
		if err != nil {
			return err
		}
		marker.Tables = append(marker.Tables, ExportTable{Name: name, File: file, Rows: tm.Rows, Bytes: n})
		fmt.Fprintf(stderr, "export %s: %d rows, %d chunks -> %s\n", name, tm.Rows, len(tm.Chunks), filepath.Join(abs, file))
	}
	data, err := json.MarshalIndent(&marker, "", "  ")
	if err != nil {
		return fmt.Errorf("dataset: export %s: %w", outDir, err)
	}
	if err := writeFileAtomic(filepath.Join(tmp, ExportMarkerName), append(data, '\n')); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(tmp, ownerFile)); err != nil {
		return fmt.Errorf("dataset: export %s: %w", outDir, err)
	}
	return replaceDir(tmp, abs, opts.Force)
}

// checkExportTarget refuses an existing outDir that is not an empty folder
// unless force, saying what it holds.
func checkExportTarget(abs string, force bool) error {
	st, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dataset: export to %s: %w", abs, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("dataset: export to %s: it exists and is not a folder", abs)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("dataset: export to %s: %w", abs, err)
	}
	if len(ents) == 0 || force {
		return nil
	}
	if m, err := ReadExport(abs); err == nil {
		return fmt.Errorf("dataset: export to %s: %w: it holds a complete export of %s (%d tables); --force replaces it",
			abs, os.ErrExist, m.Dataset, len(m.Tables))
	} else {
		return fmt.Errorf("dataset: export to %s: %w: %v; remove it or pass --force", abs, os.ErrExist, err)
	}
}

// parquetSchema is t's Arrow schema for Parquet: decimals as Decimal128.
func parquetSchema(t *schema.Table, md arrow.Metadata) *arrow.Schema {
	base := ArrowSchema(t)
	fields := base.Fields()
	for i, c := range t.Columns {
		fields[i].Metadata = arrow.Metadata{}
		if c.Type == schema.Decimal {
			fields[i].Type = &arrow.Decimal128Type{Precision: int32(c.Precision), Scale: int32(c.Scale)}
		}
	}
	return arrow.NewSchema(fields, &md)
}

// exportTable writes table tm to path (inside the export's temporary
// folder) and returns the file's size. The file gets the mode of the
// table's first data file.
func exportTable(ds *Dataset, tm *TableMeta, path string) (int64, error) {
	gen, _ := json.Marshal(ds.Manifest.Generator)
	md := arrow.NewMetadata([]string{metaScaleFactor, metaGenerator},
		[]string{strconv.FormatFloat(ds.Manifest.ScaleFactor, 'g', -1, 64), string(gen)})
	sch := parquetSchema(tm.Schema, md)
	mode := os.FileMode(0o644)
	if len(tm.Files) > 0 {
		if st, err := os.Stat(ds.filePath(tm, 0)); err == nil {
			mode = st.Mode().Perm()
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, fmt.Errorf("dataset: export %s: %w", path, err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true),
		parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<30))
	// The writer is handed f without its Close method so that f stays open
	// for the fsync below.
	pw, err := pqarrow.NewFileWriter(sch, struct{ io.Writer }{f}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return 0, fmt.Errorf("dataset: export %s: %w", path, err)
	}
	mem := memory.DefaultAllocator
	for ci := range tm.Chunks {
		b, err := ds.ReadChunk(tm.Name, ci, nil)
		if err != nil {
			return 0, err
		}
		rec := parquetRecord(b, sch, mem)
		err = pw.Write(rec)
		rec.Release()
		if err != nil {
			return 0, fmt.Errorf("dataset: export %s chunk %d: %w", path, ci, err)
		}
	}
	if err := pw.Close(); err != nil {
		return 0, fmt.Errorf("dataset: export %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil { // the umask may have narrowed it
		return 0, fmt.Errorf("dataset: export %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("dataset: export %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("dataset: export %s: %w", path, err)
	}
	return st.Size(), nil
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

var errNull = errors.New("null value (stored columns are NOT NULL)")
