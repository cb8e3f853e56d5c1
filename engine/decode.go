package engine

import (
	"fmt"
	"unsafe"

	"gostachio/dataset"
	"gostachio/kernels/cpu"
	"gostachio/scheduler"
	"gostachio/tpch/schema"
)

// copyIn is a scan unit's h2d on the CPU: it turns the unit's I/O buffers
// (pinned host memory on a GPU) into the column vectors the kernels read
// (device memory), one batch per stored chunk, and releases the I/O
// buffers (see decodeUnit: views of Heap buffers, copies of pooled ones).
// String offsets are checked, so a file changed behind the manifest fails
// the query instead of crashing it, and, unless the run skips it
// (BackendOptions.NoVerify), every buffer's checksum, so such a file
// cannot give a wrong answer either.
func (d *runData) copyIn(t *scheduler.Task) error {
	pl := &d.plan.Pipelines[t.Pipeline]
	table := d.plan.Tables[t.Table].Name
	u := d.unit(t)
	d.mu.Lock()
	reads := u.reads
	u.reads = nil
	d.mu.Unlock()
	defer func() {
		for _, r := range reads {
			r.buf.Release()
		}
	}()
	tm, err := d.ds.Table(table)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	cols := pl.Ops[0].Out
	// A GPU unit is uploaded before the read buffers are released, so its
	// vectors may be views of any buffer (pinned ones upload as DMA).
	gpuUnit := d.pipes[t.Pipeline].gpu
	var ds *dataset.Dataset
	if d.verify {
		ds = d.ds
	}
	bs, err := decodeUnit(ds, tm, int(t.Chunk), int(t.Chunks), cols, reads, gpuUnit)
	if err != nil {
		return fmt.Errorf("engine: %s unit %d of %s: %w", d.plan.Name, t.Unit, table, err)
	}
	if gpuUnit {
		return d.uploadUnit(t, tm, u, bs)
	}
	var n int64
	for _, b := range bs {
		n += b.Bytes()
	}
	d.mu.Lock()
	u.in, u.inBytes = bs, n
	d.mu.Unlock()
	return d.track(n)
}

// decodeUnit returns columns cols of chunks [first, first+n) of table tm,
// one batch per chunk, from the read pieces. Where a column's bytes lie in
// a Heap buffer (whose memory the GC keeps alive as long as a vector
// points into it), the vectors are views of the read data: the copy to the
// "device" costs nothing on the CPU. Otherwise (pooled buffers, recycled
// after Release) the values are copied out, unless views is set: the
// caller is done with the vectors before it releases the buffers. With
// verify set, every buffer decoded is checked against the checksum verify's
// manifest recorded (Dataset.VerifyBuffer) first.
func decodeUnit(verify *dataset.Dataset, tm *dataset.TableMeta, first, n int, cols []string, reads []readPiece, views bool) ([]*cpu.Batch, error) {
	if first < 0 || n <= 0 || first+n > len(tm.Chunks) {
		return nil, fmt.Errorf("chunks [%d, %d) outside the table's %d", first, first+n, len(tm.Chunks))
	}
	zeroCopy := len(reads) > 0
	for _, r := range reads {
		if views {
			break
		}
		zeroCopy = zeroCopy && r.buf.IsHeap()
	}
	idx := make([]int, len(cols))
	for k, name := range cols {
		if idx[k] = tm.Schema.Column(name); idx[k] < 0 {
			return nil, fmt.Errorf("no column %q", name)
		}
	}
	out := make([]*cpu.Batch, 0, n)
	for c := first; c < first+n; c++ {
		ch := &tm.Chunks[c]
		r := ch.Rows
		b := &cpu.Batch{Names: append([]string(nil), cols...), Cols: make([]cpu.Vec, len(cols)), Rows: int(r)}
		for k, ci := range idx {
			v := &b.Cols[k]
			bufs := ch.Columns[ci].Buffers
			fail := func(what string, err error) error {
				return fmt.Errorf("chunk %d column %s%s: %w", c, cols[k], what, err)
			}
			if verify != nil {
				if err := verifyColumn(verify, reads, bufs); err != nil {
					return nil, fmt.Errorf("%s: chunk %d column %s: %w", tm.Files[ch.File].Path, c, cols[k], err)
				}
			}
			switch typ := tm.Schema.Columns[ci].Type; typ {
			case schema.Int64, schema.Decimal:
				src, err := find(reads, bufs[1], 8*r)
				if err != nil {
					return nil, fail("", err)
				}
				v.Type, v.I64 = cpu.TInt64, viewOrCopy[int64](src, r, zeroCopy)
				if typ == schema.Decimal {
					v.Type, v.Scale = cpu.TDecimal, int8(tm.Columns[ci].Scale)
				}
			case schema.Float64:
				src, err := find(reads, bufs[1], 8*r)
				if err != nil {
					return nil, fail("", err)
				}
				v.Type, v.F64 = cpu.TFloat64, viewOrCopy[float64](src, r, zeroCopy)
			case schema.Int32, schema.Date:
				src, err := find(reads, bufs[1], 4*r)
				if err != nil {
					return nil, fail("", err)
				}
				v.Type, v.I32 = cpu.TInt32, viewOrCopy[int32](src, r, zeroCopy)
				if typ == schema.Date {
					v.Type = cpu.TDate
				}
			case schema.String:
				offb, err := find(reads, bufs[1], 4*(r+1))
				if err != nil {
					return nil, fail(" offsets", err)
				}
				data, err := find(reads, bufs[2], bufs[2].Len)
				if err != nil {
					return nil, fail(" data", err)
				}
				offs := viewOrCopy[int32](offb, r+1, zeroCopy)
				if offs[0] != 0 || int64(offs[r]) != int64(len(data)) {
					return nil, fail("", fmt.Errorf("string offsets do not span the data (corrupt file?)"))
				}
				for i := int64(1); i <= r; i++ {
					if offs[i] < offs[i-1] {
						return nil, fail("", fmt.Errorf("string offset %d decreases (corrupt file?)", i))
					}
				}
				v.Type, v.Off = cpu.TString, offs
				if zeroCopy {
					v.Str = data[:len(data):len(data)]
				} else {
					v.Str = append([]byte(nil), data...)
				}
			default:
				return nil, fmt.Errorf("column %s has unsupported type %v", cols[k], typ)
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// verifyColumn checks a column chunk's buffers against their checksums.
func verifyColumn(ds *dataset.Dataset, reads []readPiece, bufs []dataset.BufferRef) error {
	for _, ref := range bufs {
		data, err := find(reads, ref, ref.Len)
		if err != nil {
			return err
		}
		if err := ds.VerifyBuffer(ref, data); err != nil {
			return err
		}
	}
	return nil
}

// viewOrCopy returns the n values of type T in src: a view of src's
// memory, or a copy.
func viewOrCopy[T int32 | int64 | float64](src []byte, n int64, view bool) []T {
	if n == 0 {
		return []T{}
	}
	if view {
		return unsafe.Slice((*T)(unsafe.Pointer(&src[0])), n)
	}
	dst := make([]T, n)
	copy(asBytes(dst), src)
	return dst
}

// find returns the bytes of buffer ref (want bytes of it) inside the read
// pieces.
func find(reads []readPiece, ref dataset.BufferRef, want int64) ([]byte, error) {
	if ref.Len < want {
		return nil, fmt.Errorf("buffer at %d holds %d bytes, want %d (corrupt manifest?)", ref.Off, ref.Len, want)
	}
	if want == 0 {
		return nil, nil
	}
	for _, r := range reads {
		if ref.Off >= r.off && ref.Off+want <= r.off+int64(len(r.data)) {
			return r.data[ref.Off-r.off : ref.Off-r.off+want], nil
		}
	}
	return nil, fmt.Errorf("no read covers bytes [%d, %d)", ref.Off, ref.Off+want)
}

func asBytes[T int32 | int64 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
