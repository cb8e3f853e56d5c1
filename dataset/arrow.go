package dataset

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"gostachio/dataset/arrowipc"
	"gostachio/tpch/schema"
)

// ArrowSchema is the arrow-go schema of t as stored in our IPC files:
// Int64 (decimals too, with field metadata arrowipc.LogicalTypeKey), Int32,
// Date32, Float64, Utf8; all non-nullable.
func ArrowSchema(t *schema.Table) *arrow.Schema {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		f := arrow.Field{Name: c.Name}
		switch c.Type {
		case schema.Int64:
			f.Type = arrow.PrimitiveTypes.Int64
		case schema.Decimal:
			f.Type = arrow.PrimitiveTypes.Int64
			f.Metadata = arrow.NewMetadata([]string{arrowipc.LogicalTypeKey}, []string{schema.Decimal.String()})
		case schema.Int32:
			f.Type = arrow.PrimitiveTypes.Int32
		case schema.Date:
			f.Type = arrow.FixedWidthTypes.Date32
		case schema.Float64:
			f.Type = arrow.PrimitiveTypes.Float64
		default:
			f.Type = arrow.BinaryTypes.String
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil)
}

// ToArrow copies b into an arrow-go record with ArrowSchema(b.Table). The
// caller releases the record.
func ToArrow(b *schema.Batch, mem memory.Allocator) arrow.RecordBatch {
	sch := ArrowSchema(b.Table)
	cols := make([]arrow.Array, len(b.Cols))
	for i, c := range b.Table.Columns {
		v := &b.Cols[i]
		switch c.Type {
		case schema.Int64, schema.Decimal:
			bld := array.NewInt64Builder(mem)
			bld.AppendValues(v.I64[:b.Rows], nil)
			cols[i] = bld.NewArray()
			bld.Release()
		case schema.Int32:
			bld := array.NewInt32Builder(mem)
			bld.AppendValues(v.I32[:b.Rows], nil)
			cols[i] = bld.NewArray()
			bld.Release()
		case schema.Date:
			bld := array.NewDate32Builder(mem)
			bld.Reserve(b.Rows)
			for _, d := range v.I32[:b.Rows] {
				bld.UnsafeAppend(arrow.Date32(d))
			}
			cols[i] = bld.NewArray()
			bld.Release()
		case schema.Float64:
			bld := array.NewFloat64Builder(mem)
			bld.Reserve(b.Rows)
			for _, x := range v.I64[:b.Rows] {
				bld.UnsafeAppend(math.Float64frombits(uint64(x)))
			}
			cols[i] = bld.NewArray()
			bld.Release()
		default:
			bld := array.NewStringBuilder(mem)
			bld.Reserve(b.Rows)
			bld.ReserveData(len(v.Bytes))
			for r := 0; r < b.Rows; r++ {
				bld.BinaryBuilder.Append(v.Bytes[v.Offsets[r]:v.Offsets[r+1]])
			}
			cols[i] = bld.NewArray()
			bld.Release()
		}
	}
	rec := array.NewRecordBatch(sch, cols, int64(b.Rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// Arrow reads columns cols (nil: all) of chunk i of table as an arrow-go
// record (see ReadChunk). The caller releases it.
func (ds *Dataset) Arrow(table string, i int, cols []string, mem memory.Allocator) (arrow.RecordBatch, error) {
	b, err := ds.ReadChunk(table, i, cols)
	if err != nil {
		return nil, err
	}
	return ToArrow(b, mem), nil
}

// rescaleDecimal converts an unscaled decimal of the given scale to one of
// scale to, exactly: more digits are added as zeros (refused where the
// int64 would overflow), fewer are dropped only when they are zeros.
func rescaleDecimal(unscaled int64, scale, to int32) (int64, error) {
	x := unscaled
	for s := scale; s < to; s++ {
		if x > (1<<63-1)/10 || x < -(1<<63-1)/10 {
			return 0, fmt.Errorf("decimal %d (scale %d) overflows int64 at scale %d", unscaled, scale, to)
		}
		x *= 10
	}
	for s := scale; s > to; s-- {
		if x%10 != 0 {
			return 0, fmt.Errorf("decimal %d (scale %d) has more than %d fractional digits", unscaled, scale, to)
		}
		x /= 10
	}
	return x, nil
}
