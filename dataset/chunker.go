package dataset

import (
	"gostachio/tpch/schema"
)

// DefaultChunkRows is the chunk size gen and the importers use when none is
// given: 1 MiB per 8-byte column (the storage reader's request size), about
// 19 MB per lineitem chunk, far below arrow-go's 256 MiB record-batch limit.
const DefaultChunkRows = 1 << 17

// chunker accumulates rows of one table and emits exactly rows-sized
// chunks (the last one may be shorter) to a TableWriter.
type chunker struct {
	tw   *TableWriter
	rows int
	cur  *schema.Batch
	// chunks counts the chunks emitted so far.
	chunks int
}

func newChunker(tw *TableWriter, rows int) *chunker {
	if rows <= 0 {
		rows = DefaultChunkRows
	}
	c := &chunker{tw: tw, rows: rows}
	c.reset()
	return c
}

func (c *chunker) reset() {
	t := c.tw.table
	c.cur = &schema.Batch{Table: t, Cols: make([]schema.Vector, len(t.Columns))}
	for i, col := range t.Columns {
		if col.Type == schema.String {
			c.cur.Cols[i].Offsets = []int32{0}
		}
	}
}

// room is how many rows fit before the current chunk is full.
func (c *chunker) room() int { return c.rows - c.cur.Rows }

// rowDone records that one row was appended to every column of cur and
// flushes a full chunk.
func (c *chunker) rowDone() error {
	c.cur.Rows++
	if c.cur.Rows == c.rows {
		return c.flush()
	}
	return nil
}

// addRange appends rows [lo, hi) of b (b has the chunker's column layout)
// and flushes full chunks.
func (c *chunker) addRange(b *schema.Batch, lo, hi int) error {
	for lo < hi {
		n := min(hi-lo, c.room())
		for i, col := range c.tw.table.Columns {
			src, dst := &b.Cols[i], &c.cur.Cols[i]
			switch col.Type {
			case schema.Int64, schema.Decimal, schema.Float64:
				dst.I64 = append(dst.I64, src.I64[lo:lo+n]...)
			case schema.Int32, schema.Date:
				dst.I32 = append(dst.I32, src.I32[lo:lo+n]...)
			default:
				base := int32(len(dst.Bytes)) - src.Offsets[lo]
				for _, off := range src.Offsets[lo+1 : lo+n+1] {
					dst.Offsets = append(dst.Offsets, base+off)
				}
				dst.Bytes = append(dst.Bytes, src.Bytes[src.Offsets[lo]:src.Offsets[lo+n]]...)
			}
		}
		c.cur.Rows += n
		lo += n
		if c.cur.Rows == c.rows {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the current chunk, if any.
func (c *chunker) flush() error {
	if c.cur.Rows == 0 {
		return nil
	}
	if err := c.tw.Append(c.cur); err != nil {
		return err
	}
	c.chunks++
	c.reset()
	return nil
}
