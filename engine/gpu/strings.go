package gpu

import (
	"fmt"
	"math"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
)

// stringKernels (compiled by NVRTC once per device) put an upload's
// string columns together on the device: each chunk's offsets are copied
// as stored (a DMA from the pinned read buffer) and moved to the
// concatenation's base there, and the length range that the compiled
// pipelines specialize on is reduced there. On the host the same took a
// pass over every row and a pageable copy of the rebased offsets: 3.5
// GB/s for an upload with one string column against 45 GB/s without (H200,
// calibrate --gpu samples).
const stringKernels = `
extern "C" __global__ void str_rebase(int *off, int n, int delta) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) off[i] += delta;
}

// range[0] = min, range[1] = max of off[i+1] - off[i] over i < n (range
// starts at {INT_MAX, 0}).
extern "C" __global__ void str_lens(const int *__restrict__ off, int n, int *range) {
	int lo = 0x7fffffff, hi = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int l = off[i + 1] - off[i];
		lo = l < lo ? l : lo;
		hi = l > hi ? l : hi;
	}
	for (int d = 16; d > 0; d >>= 1) {
		int a = __shfl_down_sync(0xffffffffu, lo, d), b = __shfl_down_sync(0xffffffffu, hi, d);
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	if ((threadIdx.x & 31) == 0) {
		atomicMin(&range[0], lo);
		atomicMax(&range[1], hi);
	}
}
`

// hasStrings reports whether b has a string column.
func hasStrings(b *cpu.Batch) bool {
	for _, c := range b.Cols {
		if c.Type == cpu.TString {
			return true
		}
	}
	return false
}

// deviceStrings are the length ranges of an upload's string columns,
// reduced on the device and read back once, when the upload synchronizes.
type deviceStrings struct {
	cols   []int   // the column of each range
	last   []int32 // each column's final offset: host sources of copies in flight
	host   []int32 // {min, max} per column: the initial values, then the read-back
	ranges cuda.DevicePtr
}

// uploadStrings copies string column k of parts into out on stream s with
// mod's kernels (stringKernels), its length range reduced into dev.
func (d *Device) uploadStrings(s *cuda.Stream, out *Batch, k int, parts []*cpu.Batch, mod *cuda.Module, dev *deviceStrings) error {
	first := parts[0]
	if dev.ranges == 0 {
		n := 0
		for _, c := range first.Cols {
			if c.Type == cpu.TString {
				n++
			}
		}
		dev.host = make([]int32, 2*n)
		for i := 0; i < n; i++ {
			dev.host[2*i] = math.MaxInt32
		}
		dev.last = make([]int32, 0, n) // never grows: its elements are copy sources
		p, err := out.arena.alloc(8 * n)
		if err != nil {
			return err
		}
		if err := s.CopyHtoD(p, bytesOf(dev.host)); err != nil {
			return err
		}
		dev.ranges = p
	}
	rebase, err := mod.Function("str_rebase")
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	lens, err := mod.Function("str_lens")
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	total := 0
	for _, b := range parts {
		v := &b.Cols[k]
		if v.Type != cpu.TString {
			return fmt.Errorf("gpu: column %s is %s in one chunk and %s in another", first.Names[k], cpu.TString, v.Type)
		}
		total += int(v.Off[b.Rows] - v.Off[0])
	}
	po, err := out.arena.alloc(4 * (out.Rows + 1))
	if err != nil {
		return err
	}
	pb, err := out.arena.alloc(total)
	if err != nil {
		return err
	}
	c := &out.Cols[k]
	c.Off, c.Data = po, pb
	at, bytes := 0, 0
	for _, b := range parts {
		v := &b.Cols[k]
		if b.Rows == 0 {
			continue
		}
		if err := s.CopyHtoD(po.Add(4*at), bytesOf(v.Off[:b.Rows])); err != nil {
			return err
		}
		if delta := int32(bytes) - v.Off[0]; delta != 0 {
			if err := d.launchBlock(s, rebase, b.Rows, blockThreads, 0, po.Add(4*at), int32(b.Rows), delta); err != nil {
				return err
			}
		}
		if err := s.CopyHtoD(pb.Add(bytes), v.Str[v.Off[0]:v.Off[b.Rows]]); err != nil {
			return err
		}
		at += b.Rows
		bytes += int(v.Off[b.Rows] - v.Off[0])
	}
	slot := len(dev.cols)
	dev.last = append(dev.last, int32(bytes))
	if err := s.CopyHtoD(po.Add(4*out.Rows), bytesOf(dev.last[slot:slot+1])); err != nil {
		return err
	}
	if err := d.launchBlock(s, lens, out.Rows, blockThreads, 0, po, int32(out.Rows), dev.ranges.Add(8*slot)); err != nil {
		return err
	}
	dev.cols = append(dev.cols, k)
	out.Bytes += int64(4*(out.Rows+1) + bytes)
	return nil
}

// finish queues the read-back of the ranges on s (valid once s is
// synchronized).
func (dev *deviceStrings) finish(s *cuda.Stream, out *Batch) error {
	if dev.ranges == 0 {
		return nil
	}
	return s.CopyDtoH(bytesOf(dev.host), dev.ranges)
}

// apply sets the string columns' length ranges from the read-back.
func (dev *deviceStrings) apply(out *Batch) {
	for i, k := range dev.cols {
		lo, hi := int(dev.host[2*i]), int(dev.host[2*i+1])
		if out.Rows == 0 {
			lo, hi = 0, 0
		}
		out.Cols[k].MinLen, out.Cols[k].MaxLen = lo, hi
	}
}
