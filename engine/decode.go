package engine

import (
	"fmt"
	"unsafe"

	"gostachio/dataset"
	"gostachio/kernels/cpu"
	"gostachio/scheduler"
	"gostachio/tpch/schema"
)

// copyIn is a scan unit's h2d on the CPU: it copies the projected columns
// out of the unit's I/O buffers (pinned host memory on a GPU) into the
// engine-owned vectors the kernels read (device memory), one batch for
// all the unit's chunks, and returns the I/O buffers to the pool. Offsets
// of strings are checked, so a file changed behind the manifest fails the
// query instead of crashing it.
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
	b, err := decodeUnit(tm, int(t.Chunk), int(t.Chunks), cols, reads)
	if err != nil {
		return fmt.Errorf("engine: %s unit %d of %s: %w", d.plan.Name, t.Unit, table, err)
	}
	d.mu.Lock()
	u.in = b
	d.mu.Unlock()
	return d.track(b.Bytes())
}

// decodeUnit copies columns cols of chunks [first, first+n) of table tm out
// of the read pieces into one batch.
func decodeUnit(tm *dataset.TableMeta, first, n int, cols []string, reads []readPiece) (*cpu.Batch, error) {
	if first < 0 || n <= 0 || first+n > len(tm.Chunks) {
		return nil, fmt.Errorf("chunks [%d, %d) outside the table's %d", first, first+n, len(tm.Chunks))
	}
	var rows int64
	for c := first; c < first+n; c++ {
		rows += tm.Chunks[c].Rows
	}
	b := &cpu.Batch{Names: append([]string(nil), cols...), Cols: make([]cpu.Vec, len(cols)), Rows: int(rows)}
	for k, name := range cols {
		ci := tm.Schema.Column(name)
		if ci < 0 {
			return nil, fmt.Errorf("no column %q", name)
		}
		v := &b.Cols[k]
		typ := tm.Schema.Columns[ci].Type
		switch typ {
		case schema.Int64:
			v.Type, v.I64 = cpu.TInt64, make([]int64, rows)
		case schema.Decimal:
			v.Type, v.Scale, v.I64 = cpu.TDecimal, 2, make([]int64, rows)
		case schema.Int32:
			v.Type, v.I32 = cpu.TInt32, make([]int32, rows)
		case schema.Date:
			v.Type, v.I32 = cpu.TDate, make([]int32, rows)
		case schema.String:
			v.Type, v.Off = cpu.TString, make([]int32, 1, rows+1)
		default:
			return nil, fmt.Errorf("column %s has unsupported type %v", name, typ)
		}
		var at int64
		for c := first; c < first+n; c++ {
			ch := &tm.Chunks[c]
			bufs := ch.Columns[ci].Buffers
			r := ch.Rows
			switch v.Type {
			case cpu.TInt64, cpu.TDecimal:
				src, err := find(reads, bufs[1], 8*r)
				if err != nil {
					return nil, fmt.Errorf("chunk %d column %s: %w", c, name, err)
				}
				copy(asBytes(v.I64[at:at+r]), src)
			case cpu.TInt32, cpu.TDate:
				src, err := find(reads, bufs[1], 4*r)
				if err != nil {
					return nil, fmt.Errorf("chunk %d column %s: %w", c, name, err)
				}
				copy(asBytes(v.I32[at:at+r]), src)
			case cpu.TString:
				offb, err := find(reads, bufs[2-1], 4*(r+1))
				if err != nil {
					return nil, fmt.Errorf("chunk %d column %s offsets: %w", c, name, err)
				}
				data, err := find(reads, bufs[2], bufs[2].Len)
				if err != nil {
					return nil, fmt.Errorf("chunk %d column %s data: %w", c, name, err)
				}
				offs := unsafe.Slice((*int32)(unsafe.Pointer(&offb[0])), r+1)
				base := int32(len(v.Str))
				if offs[0] != 0 || int64(offs[r]) != int64(len(data)) {
					return nil, fmt.Errorf("chunk %d column %s: string offsets do not span the data (corrupt file?)", c, name)
				}
				for i := int64(1); i <= r; i++ {
					if offs[i] < offs[i-1] {
						return nil, fmt.Errorf("chunk %d column %s: string offset %d decreases (corrupt file?)", c, name, i)
					}
					v.Off = append(v.Off, base+offs[i])
				}
				v.Str = append(v.Str, data...)
			}
			at += r
		}
	}
	return b, nil
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

func asBytes[T int32 | int64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
