// Package gpu runs query pipelines on a CUDA GPU for the engine: columns
// uploaded to device memory, predicates, decimal arithmetic and partial
// hash aggregation compiled from the plan's expression tree to the
// kernels of kernels/cuda, and the aggregate state brought back in the
// layout of the CPU engine's partial aggregates (cpu.Aggregator), so the
// rest of a query (exchange, final aggregation, sort) is shared.
//
// What runs here: scan pipelines of scan, filter, project and a partial
// aggregate (sum, count, avg, min, max over integer and decimal values,
// keys of integers, dates and strings of at most 7 bytes), TPC-H Q1 and
// Q6. Supported reports, before a run, what a pipeline uses that the GPU
// path does not yet have (joins, sorts, string predicates, float
// arithmetic), naming the operator.
//
// Nothing here needs a GPU to build: the driver is loaded at run time
// (kernels/cuda), and Open fails with the reason when none is there.
package gpu

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"gostachio/kernels/cuda"
)

// ErrNoDriver: this machine has no CUDA driver (the CPU engine runs
// without a GPU; Open cannot).
var ErrNoDriver = errors.New("gpu: no CUDA driver on this machine (libcuda.so.1 not found); without --gpu the CPU engine runs")

// modules are the kernel modules (kernels/cuda/<name>.cu) the pipelines use.
var modules = []string{"arith", "groupby", "join", "pipeline", "select", "strings"}

// Device is one GPU with the kernel modules loaded and a pool of device
// memory. Its methods are safe for concurrent use; work on one stream is
// ordered, work on different streams may overlap.
type Device struct {
	ctx  *cuda.Context
	info cuda.DeviceInfo
	mods map[string]*cuda.Module

	mu     sync.Mutex
	fns    map[string]*cuda.Function
	free   map[int][]cuda.DevicePtr // pooled blocks by size class (log2 bytes)
	inUse  int64                    // bytes handed out
	pooled int64                    // bytes allocated from the driver
	budget int64
	peak   int64
	closed bool

	// operatorAtATime turns the fused path off (SetFused); noJIT its
	// compiled form (SetJIT).
	operatorAtATime atomic.Bool
	noJIT           atomic.Bool
	acc             atomic.Int32 // Accumulators (SetAccumulators)
	noRanges        atomic.Bool  // SetRanges
	narrow          atomic.Bool  // SetNarrow
	jit             jitCache
}

// SetFused turns the fused path (one row-program kernel per pipeline,
// fused.go) on (the default) or off: off, every pipeline runs operator at
// a time, a kernel per predicate, arithmetic step and aggregate (for A/B
// runs and tests of both paths).
func (d *Device) SetFused(on bool) { d.operatorAtATime.Store(!on) }

// Open loads the CUDA driver, retains device ordinal's primary context and
// loads the kernel modules (the embedded PTX, or cuda.PTXDirEnv's). budget
// caps the device memory the pipelines take (0: 90% of the memory free at
// Open).
func Open(ordinal int, budget int64) (*Device, error) {
	drv, err := cuda.Load()
	if errors.Is(err, cuda.ErrNoDriver) {
		return nil, ErrNoDriver
	}
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("gpu: device %d does not exist (%d CUDA devices)", ordinal, n)
	}
	infos, err := drv.Info()
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	ctx, err := drv.Primary(ordinal)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	d := &Device{ctx: ctx, info: infos[ordinal], mods: map[string]*cuda.Module{}, fns: map[string]*cuda.Function{},
		free: map[int][]cuda.DevicePtr{}}
	for _, name := range modules {
		img, err := cuda.LoadPTX(name)
		if err == nil {
			d.mods[name], err = ctx.LoadModule(name+".ptx", img)
		}
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("gpu: module %s: %w", name, err)
		}
	}
	free, _, err := ctx.MemInfo()
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("gpu: %w", err)
	}
	d.budget = budget
	if budget <= 0 {
		d.budget = int64(free) / 10 * 9
	}
	return d, nil
}

// Close frees the pooled memory, unloads the modules and releases the
// context. Buffers still out are freed with the context.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var first error
	for _, ps := range d.free {
		for _, p := range ps {
			if err := d.ctx.Free(p); err != nil && first == nil {
				first = err
			}
		}
	}
	for _, m := range d.mods {
		if err := m.Unload(); err != nil && first == nil {
			first = err
		}
	}
	d.jit.mu.Lock()
	for _, m := range d.jit.mods {
		m.Unload()
	}
	d.jit.mu.Unlock()
	if err := d.ctx.Release(); err != nil && first == nil {
		first = err
	}
	return first
}

// Info describes the device.
func (d *Device) Info() cuda.DeviceInfo { return d.info }

// Context is the device's CUDA context (streams, events, copies).
func (d *Device) Context() *cuda.Context { return d.ctx }

// Peak is the most device memory the pipelines held at once, in bytes.
func (d *Device) Peak() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.peak
}

// Budget is the device memory the pipelines may hold at once.
func (d *Device) Budget() int64 { return d.budget }

// sizeClass is the power-of-two block (at least 256 bytes) that holds n
// bytes: pooling by class makes a freed block reusable by any request of
// its class, without cuMemFree (which synchronizes the whole device).
func sizeClass(n int) int {
	if n <= 256 {
		return 8
	}
	return bits.Len(uint(n - 1))
}

// Alloc takes a block of at least n bytes from the pool (new memory from
// the driver when the class's list is empty). It fails, naming the
// budget, when the blocks out would exceed it.
func (d *Device) Alloc(n int) (cuda.DevicePtr, error) {
	c := sizeClass(n)
	size := int64(1) << c
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("gpu: device closed")
	}
	if d.inUse+size > d.budget {
		return 0, fmt.Errorf("gpu: %d bytes of device memory wanted with %d of the %d-byte budget in use (a smaller --chunk or a larger --gpu-mem)", size, d.inUse, d.budget)
	}
	if ps := d.free[c]; len(ps) > 0 {
		p := ps[len(ps)-1]
		d.free[c] = ps[:len(ps)-1]
		d.take(size)
		return p, nil
	}
	p, err := d.ctx.Alloc(int(size))
	if err != nil {
		// Give the driver back what the pool holds idle, and try once more.
		for k, ps := range d.free {
			for _, q := range ps {
				d.ctx.Free(q)
				d.pooled -= int64(1) << k
			}
			delete(d.free, k)
		}
		if p, err = d.ctx.Alloc(int(size)); err != nil {
			return 0, fmt.Errorf("gpu: %w", err)
		}
	}
	d.pooled += size
	d.take(size)
	return p, nil
}

func (d *Device) take(size int64) {
	d.inUse += size
	d.peak = max(d.peak, d.inUse)
}

// Release returns a block of n bytes (as asked of Alloc) to the pool. The
// caller must know no queued work still uses it: release after the
// stream that used it synchronized.
func (d *Device) Release(p cuda.DevicePtr, n int) {
	c := sizeClass(n)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.inUse -= int64(1) << c
	d.free[c] = append(d.free[c], p)
}

// function returns kernel name of module mod (resolved once).
func (d *Device) function(mod, name string) (*cuda.Function, error) {
	key := mod + "." + name
	d.mu.Lock()
	defer d.mu.Unlock()
	if f := d.fns[key]; f != nil {
		return f, nil
	}
	m := d.mods[mod]
	if m == nil {
		return nil, fmt.Errorf("gpu: no module %s", mod)
	}
	f, err := m.Function(name)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	d.fns[key] = f
	return f, nil
}

// blockThreads is the block size of every launch here.
const blockThreads = 256

// launch runs a grid-stride kernel over n items with at most 8 blocks per
// multiprocessor (more only queue; fewer blocks also mean fewer of the
// per-warp atomics that the reduction kernels flush).
func (d *Device) launch(s *cuda.Stream, mod, name string, n, shared int, args ...any) error {
	f, err := d.function(mod, name)
	if err != nil {
		return err
	}
	return d.launchFn(s, f, n, shared, args...)
}

// launchFn is launch for a resolved function.
func (d *Device) launchFn(s *cuda.Stream, f *cuda.Function, n, shared int, args ...any) error {
	return d.launchBlock(s, f, n, blockThreads, shared, args...)
}

// launchBlock is launchFn with blocks of block threads (at most
// 8·blockThreads/block blocks per multiprocessor: the same threads in
// flight).
func (d *Device) launchBlock(s *cuda.Stream, f *cuda.Function, n, block, shared int, args ...any) error {
	blocks := (n + block - 1) / block
	if limit := 8 * blockThreads / block * max(d.info.SMs, 1); blocks > limit {
		blocks = limit
	}
	blocks = max(blocks, 1)
	return f.Launch(cuda.Dim3{X: uint32(blocks), Y: 1, Z: 1}, cuda.Dim3{X: uint32(block), Y: 1, Z: 1}, shared, s, args...)
}
