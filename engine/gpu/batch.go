package gpu

import (
	"fmt"
	"runtime"
	"unsafe"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
)

// Col is one column in device memory, in kernels/cpu's layout: int64 and
// decimal values as int64, int32 and date as int32, strings as n+1 int32
// offsets (Off) and their bytes (Data).
type Col struct {
	Type  cpu.Type
	Scale int8
	Data  cuda.DevicePtr
	Off   cuda.DevicePtr
	// MaxLen and MinLen are a string column's longest and shortest value
	// in bytes (measured at upload: group keys of short strings are packed
	// by MaxLen; where they agree, compiled pipelines find value i at
	// i*MaxLen without reading the offsets).
	MaxLen, MinLen int
	// Lo and Hi, where Bounded, hold every value of an integer, decimal or
	// date column (Batch.Bound; bounds.go).
	Lo, Hi  int64
	Bounded bool
}

// Batch is columns of Rows rows in device memory. The batch owns its
// blocks: Free returns them to the device's pool.
type Batch struct {
	Names []string
	Cols  []Col
	Rows  int
	// Bytes is what the upload moved over PCIe.
	Bytes int64
	arena arena
}

// Free returns the batch's device memory to the pool; the caller must know
// that no queued work still reads it. A second call does nothing.
func (b *Batch) Free() {
	if b != nil {
		b.arena.release()
	}
}

// arena is a list of pooled device blocks freed together.
type arena struct {
	d      *Device
	blocks []block
}

type block struct {
	p cuda.DevicePtr
	n int
}

func (a *arena) alloc(n int) (cuda.DevicePtr, error) {
	p, err := a.d.Alloc(max(n, 1))
	if err != nil {
		return 0, err
	}
	a.blocks = append(a.blocks, block{p, max(n, 1)})
	return p, nil
}

func (a *arena) release() {
	for _, b := range a.blocks {
		a.d.Release(b.p, b.n)
	}
	a.blocks = nil
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Upload copies the batches (one per stored chunk, same columns) into one
// device batch on stream s and waits for the copies: the host memory may be
// reused when it returns. String offsets are rebased to the concatenation
// on the device where pipelines are compiled (uploadStrings), otherwise on
// the host.
func (d *Device) Upload(s *cuda.Stream, parts []*cpu.Batch) (*Batch, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("gpu: upload of no batches")
	}
	first := parts[0]
	out := &Batch{Names: append([]string(nil), first.Names...), Cols: make([]Col, len(first.Cols)), arena: arena{d: d}}
	for _, p := range parts {
		if len(p.Cols) != len(first.Cols) {
			return nil, fmt.Errorf("gpu: upload of batches with %d and %d columns", len(first.Cols), len(p.Cols))
		}
		out.Rows += p.Rows
	}
	var keep [][]int32 // rebased offsets, alive until the copies finished
	// Strings are rebased and measured on the device where pipelines are
	// compiled (NVRTC): the host then does no work per row.
	var strMod *cuda.Module
	var dev deviceStrings
	if d.jitOn() && hasStrings(first) {
		var err error
		if strMod, err = d.jitModule(stringKernels); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Batch, error) {
		s.Synchronize()
		out.Free()
		return nil, err
	}
	for k := range first.Cols {
		typ, scale := first.Cols[k].Type, first.Cols[k].Scale
		c := &out.Cols[k]
		c.Type, c.Scale = typ, scale
		width := 0
		switch typ {
		case cpu.TInt64, cpu.TDecimal:
			width = 8
		case cpu.TInt32, cpu.TDate:
			width = 4
		case cpu.TString:
		default:
			return fail(fmt.Errorf("gpu: column %s: %s columns are not uploaded", first.Names[k], typ))
		}
		if width > 0 {
			p, err := out.arena.alloc(out.Rows * width)
			if err != nil {
				return fail(err)
			}
			c.Data = p
			at := 0
			for _, b := range parts {
				v := &b.Cols[k]
				if v.Type != typ || v.Scale != scale {
					return fail(fmt.Errorf("gpu: column %s is %s in one chunk and %s in another", first.Names[k], typ, v.Type))
				}
				var src []byte
				if width == 8 {
					src = bytesOf(v.I64[:b.Rows])
				} else {
					src = bytesOf(v.I32[:b.Rows])
				}
				if err := s.CopyHtoD(p.Add(at), src); err != nil {
					return fail(err)
				}
				at += len(src)
				out.Bytes += int64(len(src))
			}
			continue
		}
		if strMod != nil {
			if err := d.uploadStrings(s, out, k, parts, strMod, &dev); err != nil {
				return fail(err)
			}
			continue
		}
		// Strings, on the host: offsets rebased to the concatenation,
		// bytes appended.
		off := make([]int32, 0, out.Rows+1)
		total, maxLen, minLen := 0, 0, -1
		for _, b := range parts {
			v := &b.Cols[k]
			if v.Type != cpu.TString {
				return fail(fmt.Errorf("gpu: column %s is %s in one chunk and %s in another", first.Names[k], typ, v.Type))
			}
			base := v.Off[0]
			for i := 0; i < b.Rows; i++ {
				off = append(off, int32(total)+v.Off[i]-base)
				l := int(v.Off[i+1] - v.Off[i])
				maxLen = max(maxLen, l)
				if minLen < 0 || l < minLen {
					minLen = l
				}
			}
			total += int(v.Off[b.Rows] - base)
		}
		off = append(off, int32(total))
		keep = append(keep, off)
		po, err := out.arena.alloc(4 * len(off))
		if err != nil {
			return fail(err)
		}
		pb, err := out.arena.alloc(total)
		if err != nil {
			return fail(err)
		}
		c.Off, c.Data, c.MaxLen, c.MinLen = po, pb, maxLen, max(minLen, 0)
		if err := s.CopyHtoD(po, bytesOf(off)); err != nil {
			return fail(err)
		}
		out.Bytes += int64(4 * len(off))
		at := 0
		for _, b := range parts {
			v := &b.Cols[k]
			src := v.Str[v.Off[0]:v.Off[b.Rows]]
			if err := s.CopyHtoD(pb.Add(at), src); err != nil {
				return fail(err)
			}
			at += len(src)
			out.Bytes += int64(len(src))
		}
	}
	if err := dev.finish(s, out); err != nil {
		return fail(err)
	}
	if err := s.Synchronize(); err != nil {
		return fail(err)
	}
	runtime.KeepAlive(keep)
	runtime.KeepAlive(dev.host)
	dev.apply(out)
	return out, nil
}

// col returns the batch's column name.
func (b *Batch) col(name string) (Col, bool) {
	for i, n := range b.Names {
		if n == name {
			return b.Cols[i], true
		}
	}
	return Col{}, false
}
