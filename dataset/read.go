package dataset

import (
	"fmt"
	"io"
	"os"
	"unsafe"

	"gostachio/tpch/schema"
)

// Tables lists the dataset's table names in manifest order.
func (ds *Dataset) Tables() []string {
	names := make([]string, len(ds.Manifest.Tables))
	for i := range ds.Manifest.Tables {
		names[i] = ds.Manifest.Tables[i].Name
	}
	return names
}

// Table returns the metadata of the named table (shared; do not modify).
func (ds *Dataset) Table(name string) (*TableMeta, error) {
	i, ok := ds.byName[name]
	if !ok {
		return nil, fmt.Errorf("dataset: %s has no table %q", ds.Dir, name)
	}
	return &ds.Manifest.Tables[i], nil
}

// Chunk returns the metadata of chunk i of the named table (shared).
func (ds *Dataset) Chunk(table string, i int) (*ChunkMeta, error) {
	tm, err := ds.Table(table)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(tm.Chunks) {
		return nil, fmt.Errorf("dataset: table %s has %d chunks, no chunk %d", table, len(tm.Chunks), i)
	}
	return &tm.Chunks[i], nil
}

// ChunkPath is the absolute path of the file holding chunk i of table, and
// the stripe it lives on.
func (ds *Dataset) ChunkPath(table string, i int) (string, int, error) {
	c, err := ds.Chunk(table, i)
	if err != nil {
		return "", 0, err
	}
	tm, _ := ds.Table(table)
	return ds.filePath(tm, c.File), tm.Files[c.File].Stripe, nil
}

// Stripes returns the absolute stripe folders; stripe 0 is Dir.
func (ds *Dataset) Stripes() []string { return append([]string(nil), ds.stripes...) }

// ReadChunk reads the given columns (nil: all, in table order) of chunk i of
// table with plain positional reads. The batch's Table is the table's
// schema when all columns are read in order, else a projected table with
// just the requested columns in the requested order. String offsets are
// checked, and every buffer against its checksum where the manifest records
// them, so a file changed after Open yields ErrCorrupt, not a panic or
// other values.
// For tools and tests; the engine reads buffers itself from ChunkMeta.
func (ds *Dataset) ReadChunk(table string, i int, cols []string) (*schema.Batch, error) {
	tm, err := ds.Table(table)
	if err != nil {
		return nil, err
	}
	c, err := ds.Chunk(table, i)
	if err != nil {
		return nil, err
	}
	t, idx, err := project(tm.Schema, cols)
	if err != nil {
		return nil, err
	}
	path := ds.filePath(tm, c.File)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: read chunk %d of %s: %w", i, table, err)
	}
	defer f.Close()
	rows := int(c.Rows)
	b := &schema.Batch{Table: t, Rows: rows, Cols: make([]schema.Vector, len(idx))}
	for k, ci := range idx {
		col := tm.Schema.Columns[ci]
		bufs := c.Columns[ci].Buffers
		v := &b.Cols[k]
		var err error
		switch col.Type {
		case schema.Int64, schema.Decimal, schema.Float64:
			v.I64 = make([]int64, rows)
			err = ds.readVerified(f, bufs[1], asBytes(v.I64))
		case schema.Int32, schema.Date:
			v.I32 = make([]int32, rows)
			err = ds.readVerified(f, bufs[1], asBytes(v.I32))
		case schema.String:
			v.Offsets = make([]int32, rows+1)
			v.Bytes = make([]byte, bufs[2].Len)
			if err = ds.readVerified(f, bufs[1], asBytes(v.Offsets)); err == nil {
				err = ds.readVerified(f, bufs[2], v.Bytes)
			}
			if err == nil {
				err = checkOffsets(v.Offsets, len(v.Bytes))
			}
		}
		if err != nil {
			return nil, corrupt(path, "chunk %d column %s: %v", i, col.Name, err)
		}
	}
	return b, nil
}

// project resolves column names to indices of t and the table they form.
func project(t *schema.Table, cols []string) (*schema.Table, []int, error) {
	if cols == nil {
		idx := make([]int, len(t.Columns))
		for i := range idx {
			idx[i] = i
		}
		return t, idx, nil
	}
	p := &schema.Table{Name: t.Name, BaseRows: t.BaseRows, Scaled: t.Scaled}
	idx := make([]int, len(cols))
	for k, name := range cols {
		ci := t.Column(name)
		if ci < 0 {
			return nil, nil, fmt.Errorf("dataset: table %s has no column %q", t.Name, name)
		}
		idx[k] = ci
		p.Columns = append(p.Columns, t.Columns[ci])
	}
	if len(idx) == len(t.Columns) {
		same := true
		for k, ci := range idx {
			same = same && k == ci
		}
		if same {
			return t, idx, nil
		}
	}
	return p, idx, nil
}

// readVerified reads buffer b into dst and checks its checksum when the
// dataset records them.
func (ds *Dataset) readVerified(r io.ReaderAt, b BufferRef, dst []byte) error {
	if err := readInto(r, b, dst); err != nil {
		return err
	}
	return ds.VerifyBuffer(b, dst)
}

func readInto(r io.ReaderAt, b BufferRef, dst []byte) error {
	if int64(len(dst)) != b.Len {
		return fmt.Errorf("buffer at %d has %d bytes, want %d", b.Off, b.Len, len(dst))
	}
	n, err := r.ReadAt(dst, b.Off)
	if n == len(dst) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(dst), b.Off, err)
}

func checkOffsets(offs []int32, n int) error {
	if offs[0] != 0 {
		return fmt.Errorf("first string offset is %d", offs[0])
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return fmt.Errorf("string offset %d decreases (%d after %d)", i, offs[i], offs[i-1])
		}
	}
	if int(offs[len(offs)-1]) != n {
		return fmt.Errorf("string offsets end at %d, data has %d bytes", offs[len(offs)-1], n)
	}
	return nil
}

// asBytes views s as bytes (host is little-endian, as the files are; the
// arrowipc writer refuses to run on other hosts).
func asBytes[T int32 | int64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
