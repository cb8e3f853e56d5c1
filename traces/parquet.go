package traces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"gostachio/traces/event"
)

// parquetMetaKey is the file key-value metadata entry holding the Meta as
// JSON.
const parquetMetaKey = "gostachio.traces.meta"

// parquetSchema has the CSVColumns, typed: run, resource, res_kind, kind,
// op strings; meta bool; start_ns, end_ns, bytes, rows int64; the rest
// int32. No column is nullable.
func parquetSchema(md *arrow.Metadata) *arrow.Schema {
	fields := make([]arrow.Field, len(CSVColumns))
	for i, c := range CSVColumns {
		var t arrow.DataType = arrow.PrimitiveTypes.Int32
		switch c {
		case "run", "resource", "res_kind", "kind", "op":
			t = arrow.BinaryTypes.String
		case "meta":
			t = arrow.FixedWidthTypes.Boolean
		case "start_ns", "end_ns", "bytes", "rows":
			t = arrow.PrimitiveTypes.Int64
		}
		fields[i] = arrow.Field{Name: c, Type: t}
	}
	return arrow.NewSchema(fields, md)
}

// WriteParquet writes events as one Parquet file (Snappy, one row group
// per 1M events) with the CSVColumns as typed columns (see ReadParquet)
// and meta as JSON in the file's key-value metadata. Errors are w's or
// the encoder's.
func WriteParquet(w io.Writer, events []Event, meta Meta) error {
	mj, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	md := arrow.NewMetadata([]string{parquetMetaKey}, []string{string(mj)})
	sch := parquetSchema(&md)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(1<<20))
	// The writer closes what it is given: hide w's Close, w is the caller's.
	pw, err := pqarrow.NewFileWriter(sch, struct{ io.Writer }{w}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("traces: parquet: %w", err)
	}
	const batch = 1 << 16
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	str := func(c int) *array.StringBuilder { return b.Field(c).(*array.StringBuilder) }
	i32 := func(c int) *array.Int32Builder { return b.Field(c).(*array.Int32Builder) }
	i64 := func(c int) *array.Int64Builder { return b.Field(c).(*array.Int64Builder) }
	for lo := 0; lo < len(events) || lo == 0; lo += batch {
		for i := lo; i < min(lo+batch, len(events)); i++ {
			e := &events[i]
			// Column order: CSVColumns.
			str(0).Append(e.Run)
			i32(1).Append(e.Node)
			i32(2).Append(e.Device)
			str(3).Append(e.Res.String())
			str(4).Append(e.Res.Kind.String())
			i32(5).Append(e.Res.Node)
			i32(6).Append(e.Res.Index)
			str(7).Append(e.Kind.String())
			str(8).Append(e.Op)
			b.Field(9).(*array.BooleanBuilder).Append(e.Meta)
			for c, v := range [...]int32{e.Pipeline, e.Unit, e.Table, e.Chunk, e.Task} {
				i32(10 + c).Append(v)
			}
			for c, v := range [...]int64{e.Start, e.End, e.Bytes, e.Rows} {
				i64(15 + c).Append(v)
			}
		}
		rec := b.NewRecordBatch()
		err := pw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			pw.Close()
			return fmt.Errorf("traces: parquet: %w", err)
		}
		if len(events) == 0 {
			break
		}
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("traces: parquet: %w", err)
	}
	return nil
}

// ReadParquet reads a Parquet file of size bytes from r: one event per
// row, columns found by name (CSVColumns; others ignored). Integer
// columns may be int32 or int64 (as pandas writes them), strings string or
// large_string. The Meta is the one WriteParquet stored (empty if none).
// Errors name the column and row.
func ReadParquet(r io.ReaderAt, size int64) ([]Event, Meta, error) {
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, Meta{}, fmt.Errorf("traces: parquet: %w", err)
	}
	defer pf.Close()
	var meta Meta
	if v := pf.MetaData().KeyValueMetadata().FindValue(parquetMetaKey); v != nil {
		if err := json.Unmarshal([]byte(*v), &meta); err != nil {
			return nil, Meta{}, fmt.Errorf("traces: parquet: metadata %s: %w", parquetMetaKey, err)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("traces: parquet: %w", err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("traces: parquet: %w", err)
	}
	defer rr.Release()
	idx := make([]int, len(CSVColumns))
	for i, c := range CSVColumns {
		f := rr.Schema().FieldIndices(c)
		if len(f) == 0 {
			return nil, Meta{}, fmt.Errorf("traces: parquet: no column %q", c)
		}
		idx[i] = f[0]
	}
	var events []Event
	row := int64(0)
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := make([]arrow.Array, len(CSVColumns))
		for i := range CSVColumns {
			cols[i] = rec.Column(idx[i])
		}
		for j := 0; j < int(rec.NumRows()); j++ {
			p := pqRow{cols: cols, j: j, row: row}
			e := Event{Run: p.str(0), Node: p.i32(1), Device: p.i32(2)}
			rk, ok := parseResKind(p.str(4))
			if !ok {
				p.fail(4, fmt.Sprintf("unknown resource kind %q", p.str(4)))
			}
			e.Res = event.Resource{Kind: rk, Node: p.i32(5), Index: p.i32(6)}
			if p.err == nil && e.Res.String() != p.str(3) {
				p.fail(3, fmt.Sprintf("%q disagrees with res_kind/res_node/res_index (%s)", p.str(3), e.Res))
			}
			k, ok := parseTaskKind(p.str(7))
			if !ok {
				p.fail(7, fmt.Sprintf("unknown task kind %q", p.str(7)))
			}
			e.Kind, e.Op, e.Meta = k, p.str(8), p.bool(9)
			e.Pipeline, e.Unit, e.Table, e.Chunk, e.Task = p.i32(10), p.i32(11), p.i32(12), p.i32(13), p.i32(14)
			e.Start, e.End, e.Bytes, e.Rows = p.i64(15), p.i64(16), p.i64(17), p.i64(18)
			if p.err != nil {
				return nil, Meta{}, p.err
			}
			events = append(events, e)
			row++
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, Meta{}, fmt.Errorf("traces: parquet: %w", err)
	}
	return events, meta, nil
}

// pqRow reads row j of a batch's columns, keeping the first error.
type pqRow struct {
	cols []arrow.Array
	j    int
	row  int64
	err  error
}

func (p *pqRow) fail(c int, msg string) {
	if p.err == nil {
		p.err = fmt.Errorf("traces: parquet: row %d, column %s: %s", p.row, CSVColumns[c], msg)
	}
}

func (p *pqRow) null(c int) bool {
	if p.cols[c].IsNull(p.j) {
		p.fail(c, "null")
		return true
	}
	return false
}

func (p *pqRow) str(c int) string {
	if p.null(c) {
		return ""
	}
	switch a := p.cols[c].(type) {
	case *array.String:
		return a.Value(p.j)
	case *array.LargeString:
		return a.Value(p.j)
	}
	p.fail(c, fmt.Sprintf("type %s, want a string", p.cols[c].DataType()))
	return ""
}

func (p *pqRow) i64(c int) int64 {
	if p.null(c) {
		return 0
	}
	switch a := p.cols[c].(type) {
	case *array.Int64:
		return a.Value(p.j)
	case *array.Int32:
		return int64(a.Value(p.j))
	}
	p.fail(c, fmt.Sprintf("type %s, want an integer", p.cols[c].DataType()))
	return 0
}

func (p *pqRow) i32(c int) int32 {
	v := p.i64(c)
	if int64(int32(v)) != v {
		p.fail(c, fmt.Sprintf("%d does not fit in 32 bits", v))
	}
	return int32(v)
}

func (p *pqRow) bool(c int) bool {
	if p.null(c) {
		return false
	}
	if a, ok := p.cols[c].(*array.Boolean); ok {
		return a.Value(p.j)
	}
	p.fail(c, fmt.Sprintf("type %s, want a boolean", p.cols[c].DataType()))
	return false
}
