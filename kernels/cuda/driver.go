// Package cuda is the GPU side of the kernels: CUDA C sources (*.cu) of
// the engine's operators, their PTX (built with `make ptx` on a machine
// with nvcc, checked in under ptx/, embedded), and a thin binding of the
// CUDA driver API that loads libcuda.so.1 at run time.
//
// The binding declares the ~40 driver functions it uses itself (no cuda.h,
// no cgo, no link-time libcuda): a binary built anywhere runs everywhere,
// and Load tells whether this machine has a usable NVIDIA driver. Without
// one, Load returns a *LoadError whose message says the CPU is used
// instead; callers fall back to the CPU kernels.
//
// Threads. A CUDA context is current per OS thread, and goroutines move
// between threads; every method that needs a context locks its goroutine
// to its thread, makes the context current, calls, and unlocks. Objects
// (Context, Stream, Event, Module, buffers) may be used from any goroutine;
// the driver API is thread safe.
//
// Memory. DevicePtr values and HostBuffer memory belong to the driver, not
// to Go: free them explicitly (Free, HostBuffer.Free, Registered.Unregister).
// Go memory given to an async copy must stay unchanged and reachable until
// the stream has passed the copy (Stream.Synchronize or an Event).
package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// LibraryName is the driver library Load opens (the soname the NVIDIA
// driver installs; the unversioned libcuda.so is a toolkit stub).
const LibraryName = "libcuda.so.1"

// api holds the bound driver functions. Types follow cuda.h for 64-bit
// hosts: CUresult and CUdevice are 32-bit ints, size_t and CUdeviceptr
// 64-bit, handles (CUcontext, CUstream, ...) pointers held as uintptr.
type api struct {
	cuInit                    func(flags uint32) Result
	cuDriverGetVersion        func(v *int32) Result
	cuDeviceGetCount          func(n *int32) Result
	cuDeviceGet               func(dev *int32, ordinal int32) Result
	cuDeviceGetName           func(name *byte, n int32, dev int32) Result
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) Result
	cuDeviceTotalMem          func(bytes *uint64, dev int32) Result
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) Result
	cuDevicePrimaryCtxRelease func(dev int32) Result
	cuCtxSetCurrent           func(ctx uintptr) Result
	cuCtxSynchronize          func() Result
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) Result
	cuModuleUnload            func(mod uintptr) Result
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name *byte) Result
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params, extra unsafe.Pointer) Result
	cuStreamCreate            func(s *uintptr, flags uint32) Result
	cuStreamDestroy           func(s uintptr) Result
	cuStreamSynchronize       func(s uintptr) Result
	cuStreamWaitEvent         func(s, e uintptr, flags uint32) Result
	cuLaunchHostFunc          func(s, fn, user uintptr) Result
	cuEventCreate             func(e *uintptr, flags uint32) Result
	cuEventRecord             func(e, s uintptr) Result
	cuEventSynchronize        func(e uintptr) Result
	cuEventQuery              func(e uintptr) Result
	cuEventElapsedTime        func(ms *float32, start, end uintptr) Result
	cuEventDestroy            func(e uintptr) Result
	cuMemAlloc                func(p *DevicePtr, n uint64) Result
	cuMemFree                 func(p DevicePtr) Result
	cuMemAllocHost            func(p *unsafe.Pointer, n uint64) Result
	cuMemHostAlloc            func(p *unsafe.Pointer, n uint64, flags uint32) Result
	cuMemFreeHost             func(p unsafe.Pointer) Result
	cuMemHostRegister         func(p unsafe.Pointer, n uint64, flags uint32) Result
	cuMemHostUnregister       func(p unsafe.Pointer) Result
	cuMemcpyHtoDAsync         func(dst DevicePtr, src unsafe.Pointer, n uint64, s uintptr) Result
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src DevicePtr, n uint64, s uintptr) Result
	cuMemcpyDtoDAsync         func(dst, src DevicePtr, n uint64, s uintptr) Result
	cuMemsetD8Async           func(dst DevicePtr, v uint8, n uint64, s uintptr) Result
	cuMemGetInfo              func(free, total *uint64) Result
	cuGetErrorName            func(r Result, s **byte) Result
	cuGetErrorString          func(r Result, s **byte) Result
}

// symbol is one driver function to bind: the ABI names to try, in order
// (cuda.h #defines the unsuffixed API names to these versioned symbols).
type symbol struct {
	names []string
	fptr  any
}

func (a *api) symbols() []symbol {
	s := func(fptr any, names ...string) symbol { return symbol{names: names, fptr: fptr} }
	return []symbol{
		s(&a.cuInit, "cuInit"),
		s(&a.cuDriverGetVersion, "cuDriverGetVersion"),
		s(&a.cuDeviceGetCount, "cuDeviceGetCount"),
		s(&a.cuDeviceGet, "cuDeviceGet"),
		s(&a.cuDeviceGetName, "cuDeviceGetName"),
		s(&a.cuDeviceGetAttribute, "cuDeviceGetAttribute"),
		s(&a.cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
		s(&a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		s(&a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
		s(&a.cuCtxSetCurrent, "cuCtxSetCurrent"),
		// The bare name on purpose: newer drivers also export a
		// cuCtxSynchronize_v2 that takes a CUcontext argument.
		s(&a.cuCtxSynchronize, "cuCtxSynchronize"),
		s(&a.cuModuleLoadData, "cuModuleLoadData"),
		s(&a.cuModuleUnload, "cuModuleUnload"),
		s(&a.cuModuleGetFunction, "cuModuleGetFunction"),
		s(&a.cuLaunchKernel, "cuLaunchKernel"),
		s(&a.cuStreamCreate, "cuStreamCreate"),
		s(&a.cuStreamDestroy, "cuStreamDestroy_v2"),
		s(&a.cuStreamSynchronize, "cuStreamSynchronize"),
		s(&a.cuStreamWaitEvent, "cuStreamWaitEvent"),
		// Not cuLaunchHostFunc_v2 (CUDA 13), which adds a sync-mode argument.
		s(&a.cuLaunchHostFunc, "cuLaunchHostFunc"),
		s(&a.cuEventCreate, "cuEventCreate"),
		s(&a.cuEventRecord, "cuEventRecord"),
		s(&a.cuEventSynchronize, "cuEventSynchronize"),
		s(&a.cuEventQuery, "cuEventQuery"),
		// CUDA 12.8 added cuEventElapsedTime_v2 (same signature) and CUDA
		// 13's cuda.h maps cuEventElapsedTime to it, dropping the old
		// declaration; drivers older than 12.8 export only the old symbol.
		s(&a.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
		s(&a.cuEventDestroy, "cuEventDestroy_v2"),
		s(&a.cuMemAlloc, "cuMemAlloc_v2"),
		s(&a.cuMemFree, "cuMemFree_v2"),
		s(&a.cuMemAllocHost, "cuMemAllocHost_v2"),
		s(&a.cuMemHostAlloc, "cuMemHostAlloc"),
		s(&a.cuMemFreeHost, "cuMemFreeHost"),
		s(&a.cuMemHostRegister, "cuMemHostRegister_v2"),
		s(&a.cuMemHostUnregister, "cuMemHostUnregister"),
		s(&a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
		s(&a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
		s(&a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
		s(&a.cuMemsetD8Async, "cuMemsetD8Async"),
		s(&a.cuMemGetInfo, "cuMemGetInfo_v2"),
		s(&a.cuGetErrorName, "cuGetErrorName"),
		s(&a.cuGetErrorString, "cuGetErrorString"),
	}
}

// Driver is a loaded libcuda with cuInit done. It is safe for concurrent
// use and lives as long as the process (libcuda is never unloaded).
type Driver struct {
	path    string
	lib     uintptr
	version int
	// bound maps each function to the symbol it was bound to (for Symbols).
	bound map[string]string
	api   api
}

var loaded struct {
	once sync.Once
	d    *Driver
	err  error
}

// Load opens the system's CUDA driver (libcuda.so.1) once per process and
// returns it, or a *LoadError: without the library its message is exactly
// ErrNoDriver's ("CUDA driver not found (libcuda.so.1): running on the
// CPU") and errors.Is(err, ErrNoDriver) holds; a driver that lacks a
// function, or whose cuInit fails (no device, driver/kernel mismatch),
// gives a message naming that, also ending in ": running on the CPU".
func Load() (*Driver, error) {
	loaded.once.Do(func() { loaded.d, loaded.err = LoadLibrary(LibraryName) })
	return loaded.d, loaded.err
}

// LoadLibrary is Load for a driver library at path (a file name searched
// as dlopen does, or a path), opened anew on every call; tests use it to
// load a stand-in driver. Errors are as Load's, the library named by path.
func LoadLibrary(path string) (*Driver, error) {
	lib, err := openLibrary(path)
	if err != nil {
		msg := ErrNoDriver.Error()
		if path != LibraryName {
			msg = fmt.Sprintf("CUDA driver not found (%s): running on the CPU", path)
		}
		return nil, &LoadError{Msg: msg, Detail: err.Error(), Err: ErrNoDriver}
	}
	d := &Driver{path: path, lib: lib, bound: map[string]string{}}
	for _, s := range d.api.symbols() {
		var addr uintptr
		for _, name := range s.names {
			if addr, err = lookupSymbol(lib, name); err == nil && addr != 0 {
				d.bound[s.names[len(s.names)-1]] = name
				break
			}
		}
		if addr == 0 {
			// The handle stays open: libcuda does not support unloading.
			return nil, &LoadError{
				Msg:    fmt.Sprintf("CUDA driver %s lacks %s (it is older than this binding needs): running on the CPU", path, strings.Join(s.names, " / ")),
				Detail: fmt.Sprint(err),
			}
		}
		bindFunc(s.fptr, addr)
	}
	if r := d.api.cuInit(0); r != Success {
		e := d.errorf(r, "cuInit")
		what := "cuInit failed"
		if r == ErrorNoDevice {
			what = "no CUDA device"
		}
		return nil, &LoadError{Msg: fmt.Sprintf("CUDA driver %s found but %s: %s: running on the CPU", path, what, e.Name), Detail: e.Error(), Err: e}
	}
	var v int32
	if r := d.api.cuDriverGetVersion(&v); r != Success {
		e := d.errorf(r, "cuDriverGetVersion")
		return nil, &LoadError{Msg: fmt.Sprintf("CUDA driver %s: %v: running on the CPU", path, e), Detail: e.Error(), Err: e}
	}
	d.version = int(v)
	return d, nil
}

// Path is the library the driver was loaded from.
func (d *Driver) Path() string { return d.path }

// Version is the CUDA version the driver supports, as cuDriverGetVersion
// gives it (12040 for 12.4).
func (d *Driver) Version() int { return d.version }

// VersionString renders a cuDriverGetVersion value: 12040 -> "12.4".
func VersionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// Symbols maps each bound function's last-resort name to the symbol the
// library provided (they differ where a newer ABI name was found first:
// "cuEventElapsedTime" -> "cuEventElapsedTime_v2").
func (d *Driver) Symbols() map[string]string {
	out := make(map[string]string, len(d.bound))
	for k, v := range d.bound {
		out[k] = v
	}
	return out
}

// errorf makes the *Error of a failed call, named by the driver when it
// can (cuGetErrorName / cuGetErrorString), else by the built-in table.
func (d *Driver) errorf(r Result, format string, args ...any) *Error {
	e := &Error{Op: fmt.Sprintf(format, args...), Code: r, Name: r.Name()}
	var p *byte
	if d.api.cuGetErrorName != nil && d.api.cuGetErrorName(r, &p) == Success && p != nil {
		e.Name = cString(p)
	}
	p = nil
	if d.api.cuGetErrorString != nil && d.api.cuGetErrorString(r, &p) == Success && p != nil {
		e.Desc = cString(p)
	}
	return e
}

// ErrorName returns the driver's name for code r (cuGetErrorName), or the
// built-in table's.
func (d *Driver) ErrorName(r Result) string { return d.errorf(r, "").Name }

// cString copies a NUL-terminated C string (at most 4 KiB of it).
func cString(p *byte) string {
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cBytes returns s with a terminating NUL, for char* arguments.
func cBytes(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// DeviceCount is the number of CUDA devices the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if r := d.api.cuDeviceGetCount(&n); r != Success {
		return 0, d.errorf(r, "cuDeviceGetCount")
	}
	return int(n), nil
}

// Device attributes (CUdevice_attribute values of cuda.h) that Info reads.
const (
	attrMaxThreadsPerBlock     = 1
	attrMaxSharedPerBlock      = 8
	attrWarpSize               = 10
	attrClockRate              = 13 // kHz; deprecated in CUDA 13, may read 0
	attrMultiprocessorCount    = 16
	attrPCIBusID               = 33
	attrPCIDeviceID            = 34
	attrMemoryClockRate        = 36 // kHz; deprecated in CUDA 13, may read 0
	attrGlobalMemoryBusWidth   = 37
	attrL2CacheSize            = 38
	attrAsyncEngineCount       = 40
	attrUnifiedAddressing      = 41
	attrPCIDomainID            = 50
	attrComputeCapMajor        = 75
	attrComputeCapMinor        = 76
	attrMaxSharedPerSM         = 81
	attrMaxSharedPerBlockOptin = 97
)

// DeviceInfo describes one device, as `gostachio gpu info` prints it.
type DeviceInfo struct {
	Ordinal  int    `json:"ordinal"`
	Name     string `json:"name"`
	TotalMem uint64 `json:"total_mem_bytes"`
	// Major.Minor is the compute capability (9.0 for an H100).
	Major int `json:"cc_major"`
	Minor int `json:"cc_minor"`
	SMs   int `json:"sms"`
	// ClockKHz and MemClockKHz are 0 where the driver no longer reports
	// them (CUDA 13 deprecates both attributes).
	ClockKHz            int    `json:"clock_khz"`
	MemClockKHz         int    `json:"mem_clock_khz"`
	MemBusBits          int    `json:"mem_bus_bits"`
	L2Bytes             int    `json:"l2_bytes"`
	WarpSize            int    `json:"warp_size"`
	MaxThreadsPerBlock  int    `json:"max_threads_per_block"`
	SharedPerBlock      int    `json:"shared_per_block_bytes"`
	SharedPerBlockOptin int    `json:"shared_per_block_optin_bytes"`
	SharedPerSM         int    `json:"shared_per_sm_bytes"`
	CopyEngines         int    `json:"copy_engines"`
	UnifiedAddressing   bool   `json:"unified_addressing"`
	PCI                 string `json:"pci_bus_id"` // "0000:3b:00.0"
}

// ComputeCapability renders Major.Minor ("9.0").
func (i DeviceInfo) ComputeCapability() string { return fmt.Sprintf("%d.%d", i.Major, i.Minor) }

// Info describes every device. It needs no context (creating one costs
// hundreds of milliseconds and device memory); Context.MemInfo gives the
// free memory. Attributes a driver does not report read as 0.
func (d *Driver) Info() ([]DeviceInfo, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, n)
	for ord := 0; ord < n; ord++ {
		var dev int32
		if r := d.api.cuDeviceGet(&dev, int32(ord)); r != Success {
			return nil, d.errorf(r, "cuDeviceGet(%d)", ord)
		}
		name := make([]byte, 256)
		if r := d.api.cuDeviceGetName(&name[0], int32(len(name)), dev); r != Success {
			return nil, d.errorf(r, "cuDeviceGetName(device %d)", ord)
		}
		var mem uint64
		if r := d.api.cuDeviceTotalMem(&mem, dev); r != Success {
			return nil, d.errorf(r, "cuDeviceTotalMem_v2(device %d)", ord)
		}
		attr := func(a int32) int {
			var v int32
			if d.api.cuDeviceGetAttribute(&v, a, dev) != Success {
				return 0
			}
			return int(v)
		}
		info := DeviceInfo{
			Ordinal: ord, Name: cString(&name[0]), TotalMem: mem,
			Major: attr(attrComputeCapMajor), Minor: attr(attrComputeCapMinor),
			SMs: attr(attrMultiprocessorCount), ClockKHz: attr(attrClockRate),
			MemClockKHz: attr(attrMemoryClockRate), MemBusBits: attr(attrGlobalMemoryBusWidth),
			L2Bytes: attr(attrL2CacheSize), WarpSize: attr(attrWarpSize),
			MaxThreadsPerBlock: attr(attrMaxThreadsPerBlock), SharedPerBlock: attr(attrMaxSharedPerBlock),
			SharedPerBlockOptin: attr(attrMaxSharedPerBlockOptin), SharedPerSM: attr(attrMaxSharedPerSM),
			CopyEngines: attr(attrAsyncEngineCount), UnifiedAddressing: attr(attrUnifiedAddressing) != 0,
			PCI: fmt.Sprintf("%04x:%02x:%02x.0", attr(attrPCIDomainID), attr(attrPCIBusID), attr(attrPCIDeviceID)),
		}
		if info.Major == 0 {
			return nil, fmt.Errorf("cuda: device %d (%s) reports no compute capability", ord, info.Name)
		}
		out = append(out, info)
	}
	return out, nil
}

// Context is a device's primary context, retained by Primary. Release it
// once when done; the driver destroys it when the last retain is released.
type Context struct {
	d       *Driver
	ordinal int
	dev     int32
	h       uintptr
	mu      sync.Mutex
	done    bool
}

// Primary retains the primary context of device ordinal (0-based).
func (d *Driver) Primary(ordinal int) (*Context, error) {
	var dev int32
	if r := d.api.cuDeviceGet(&dev, int32(ordinal)); r != Success {
		return nil, d.errorf(r, "cuDeviceGet(%d)", ordinal)
	}
	var h uintptr
	if r := d.api.cuDevicePrimaryCtxRetain(&h, dev); r != Success {
		return nil, d.errorf(r, "cuDevicePrimaryCtxRetain(device %d)", ordinal)
	}
	return &Context{d: d, ordinal: ordinal, dev: dev, h: h}, nil
}

// Driver is the driver the context came from.
func (c *Context) Driver() *Driver { return c.d }

// Ordinal is the context's device.
func (c *Context) Ordinal() int { return c.ordinal }

// Release releases the retain Primary made; later calls do nothing.
// Everything made in the context must be freed before.
func (c *Context) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	c.done = true
	if r := c.d.api.cuDevicePrimaryCtxRelease(c.dev); r != Success {
		return c.d.errorf(r, "cuDevicePrimaryCtxRelease_v2(device %d)", c.ordinal)
	}
	return nil
}

// enter locks the goroutine to its OS thread and makes c current there;
// leave unlocks. Every call between them runs in c.
func (c *Context) enter() error {
	runtime.LockOSThread()
	if r := c.d.api.cuCtxSetCurrent(c.h); r != Success {
		runtime.UnlockOSThread()
		return c.d.errorf(r, "cuCtxSetCurrent(device %d)", c.ordinal)
	}
	return nil
}

func (c *Context) leave() { runtime.UnlockOSThread() }

// Synchronize waits until all work of the context has finished.
func (c *Context) Synchronize() error {
	if err := c.enter(); err != nil {
		return err
	}
	r := c.d.api.cuCtxSynchronize()
	c.leave()
	if r != Success {
		return c.d.errorf(r, "cuCtxSynchronize(device %d)", c.ordinal)
	}
	return nil
}

// MemInfo returns the device's free and total memory in bytes.
func (c *Context) MemInfo() (free, total uint64, err error) {
	if err := c.enter(); err != nil {
		return 0, 0, err
	}
	r := c.d.api.cuMemGetInfo(&free, &total)
	c.leave()
	if r != Success {
		return 0, 0, c.d.errorf(r, "cuMemGetInfo_v2(device %d)", c.ordinal)
	}
	return free, total, nil
}

// DevicePtr is a device memory address (CUdeviceptr).
type DevicePtr uint64

// Add returns p advanced by off bytes.
func (p DevicePtr) Add(off int) DevicePtr { return p + DevicePtr(off) }

// Alloc allocates n > 0 bytes of device memory (cuMemAlloc_v2: aligned to
// at least 256 bytes). Free it with Free.
func (c *Context) Alloc(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: Alloc of %d bytes on device %d", n, c.ordinal)
	}
	if err := c.enter(); err != nil {
		return 0, err
	}
	var p DevicePtr
	r := c.d.api.cuMemAlloc(&p, uint64(n))
	c.leave()
	if r != Success {
		return 0, c.d.errorf(r, "cuMemAlloc_v2(%d bytes on device %d)", n, c.ordinal)
	}
	return p, nil
}

// Free frees device memory from Alloc (implicitly synchronizing: work
// still using it must be done or ordered before).
func (c *Context) Free(p DevicePtr) error {
	if err := c.enter(); err != nil {
		return err
	}
	r := c.d.api.cuMemFree(p)
	c.leave()
	if r != Success {
		return c.d.errorf(r, "cuMemFree_v2(%#x on device %d)", uint64(p), c.ordinal)
	}
	return nil
}

// HostFlags are cuMemHostAlloc flags.
type HostFlags uint32

const (
	HostPortable      HostFlags = 1 // pinned for every context, not only this one
	HostDeviceMap     HostFlags = 2 // mapped into the device address space
	HostWriteCombined HostFlags = 4 // write-combined: fast host writes and H2D reads, slow host reads
)

// HostBuffer is page-locked (pinned) host memory from AllocHost: copies
// from and to it are truly asynchronous and run at full PCIe speed.
type HostBuffer struct {
	c *Context
	p unsafe.Pointer
	n int
}

// AllocHost allocates n > 0 bytes of pinned host memory (cuMemAllocHost_v2
// for flags 0, else cuMemHostAlloc). Free it with Free.
func (c *Context) AllocHost(n int, flags HostFlags) (*HostBuffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: AllocHost of %d bytes", n)
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	var r Result
	op := "cuMemAllocHost_v2"
	if flags == 0 {
		r = c.d.api.cuMemAllocHost(&p, uint64(n))
	} else {
		op = "cuMemHostAlloc"
		r = c.d.api.cuMemHostAlloc(&p, uint64(n), uint32(flags))
	}
	c.leave()
	if r != Success {
		return nil, c.d.errorf(r, "%s(%d bytes, flags %#x)", op, n, uint32(flags))
	}
	return &HostBuffer{c: c, p: p, n: n}, nil
}

// Bytes is the buffer as a byte slice; it is invalid after Free.
func (b *HostBuffer) Bytes() []byte { return unsafe.Slice((*byte)(b.p), b.n) }

// Len is the buffer's size in bytes.
func (b *HostBuffer) Len() int { return b.n }

// Free frees the buffer; later calls do nothing.
func (b *HostBuffer) Free() error {
	if b.p == nil {
		return nil
	}
	if err := b.c.enter(); err != nil {
		return err
	}
	r := b.c.d.api.cuMemFreeHost(b.p)
	b.c.leave()
	if r != Success {
		return b.c.d.errorf(r, "cuMemFreeHost(%d bytes)", b.n)
	}
	b.p, b.n = nil, 0
	return nil
}

// RegisterFlags are cuMemHostRegister flags.
type RegisterFlags uint32

const (
	RegisterPortable  RegisterFlags = 1
	RegisterDeviceMap RegisterFlags = 2
	RegisterIOMemory  RegisterFlags = 4
	RegisterReadOnly  RegisterFlags = 8
)

// Registered is existing host memory page-locked by RegisterHost.
type Registered struct {
	c   *Context
	buf []byte // keeps Go memory reachable while registered
}

// RegisterHost page-locks buf (cuMemHostRegister_v2), so that copies from
// and to it are asynchronous DMA. buf should be page aligned and a whole
// number of pages (the engine's O_DIRECT buffers are); it must stay
// unchanged in place until Unregister, which the Registered value ensures
// for Go memory by referencing it.
func (c *Context) RegisterHost(buf []byte, flags RegisterFlags) (*Registered, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("cuda: RegisterHost of an empty buffer")
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	r := c.d.api.cuMemHostRegister(unsafe.Pointer(&buf[0]), uint64(len(buf)), uint32(flags))
	c.leave()
	if r != Success {
		return nil, c.d.errorf(r, "cuMemHostRegister_v2(%p, %d bytes, flags %#x)", &buf[0], len(buf), uint32(flags))
	}
	return &Registered{c: c, buf: buf}, nil
}

// Unregister undoes RegisterHost; later calls do nothing.
func (g *Registered) Unregister() error {
	if g.buf == nil {
		return nil
	}
	if err := g.c.enter(); err != nil {
		return err
	}
	r := g.c.d.api.cuMemHostUnregister(unsafe.Pointer(&g.buf[0]))
	g.c.leave()
	if r != Success {
		return g.c.d.errorf(r, "cuMemHostUnregister(%p)", &g.buf[0])
	}
	g.buf = nil
	return nil
}

// Module is loaded device code (PTX, JIT-compiled by the driver for the
// device, or a cubin).
type Module struct {
	c    *Context
	h    uintptr
	name string
}

// LoadModule loads a PTX (or cubin/fatbin) image into the context
// (cuModuleLoadData); name labels errors ("filter.ptx"). PTX is compiled
// for the device here, which takes milliseconds per kernel.
func (c *Context) LoadModule(name string, image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: module %s is empty", name)
	}
	// PTX is text the driver reads up to a NUL.
	img := make([]byte, len(image)+1)
	copy(img, image)
	if err := c.enter(); err != nil {
		return nil, err
	}
	var h uintptr
	r := c.d.api.cuModuleLoadData(&h, unsafe.Pointer(&img[0]))
	c.leave()
	runtime.KeepAlive(img)
	if r != Success {
		return nil, c.d.errorf(r, "cuModuleLoadData(%s, %d bytes, device %d)", name, len(image), c.ordinal)
	}
	return &Module{c: c, h: h, name: name}, nil
}

// Unload unloads the module; its Functions become invalid.
func (m *Module) Unload() error {
	if m.h == 0 {
		return nil
	}
	if err := m.c.enter(); err != nil {
		return err
	}
	r := m.c.d.api.cuModuleUnload(m.h)
	m.c.leave()
	if r != Success {
		return m.c.d.errorf(r, "cuModuleUnload(%s)", m.name)
	}
	m.h = 0
	return nil
}

// Function is a kernel of a module.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Function looks a kernel up by its (extern "C", unmangled) name.
func (m *Module) Function(name string) (*Function, error) {
	cname := cBytes(name)
	if err := m.c.enter(); err != nil {
		return nil, err
	}
	var h uintptr
	r := m.c.d.api.cuModuleGetFunction(&h, m.h, &cname[0])
	m.c.leave()
	if r != Success {
		return nil, m.c.d.errorf(r, "cuModuleGetFunction(%s in %s)", name, m.name)
	}
	return &Function{m: m, h: h, name: name}, nil
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// Dim3 is a grid or block shape; every component must be at least 1.
type Dim3 struct{ X, Y, Z uint32 }

// Grid1D returns the 1-D grid and block that cover n threads with blocks
// of block threads (at least one block).
func Grid1D(n, block int) (grid, blk Dim3) {
	g := (n + block - 1) / block
	if g < 1 {
		g = 1
	}
	return Dim3{uint32(g), 1, 1}, Dim3{uint32(block), 1, 1}
}

// Launch enqueues the kernel on stream s (cuLaunchKernel) with dynamic
// shared memory of sharedMem bytes. args are the kernel's parameters in
// order, each a DevicePtr, int32, uint32, int64, uint64, float32 or
// float64 matching the kernel's C parameter type (the driver copies them
// at launch; no type check is possible against PTX here).
func (f *Function) Launch(grid, block Dim3, sharedMem int, s *Stream, args ...any) error {
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 || block.X == 0 || block.Y == 0 || block.Z == 0 {
		return fmt.Errorf("cuda: launch %s: grid %v and block %v must have every dimension >= 1", f.name, grid, block)
	}
	if sharedMem < 0 {
		return fmt.Errorf("cuda: launch %s: negative shared memory %d", f.name, sharedMem)
	}
	// Each argument gets an 8-byte slot; params[i] points at slot i. The
	// driver reads sizeof(param) bytes from each (little-endian: a 4-byte
	// parameter is the slot's first 4 bytes).
	slots := make([]uint64, len(args)+1)
	params := make([]unsafe.Pointer, len(args)+1)
	for i, a := range args {
		switch v := a.(type) {
		case DevicePtr:
			slots[i] = uint64(v)
		case int64:
			slots[i] = uint64(v)
		case uint64:
			slots[i] = v
		case int32:
			*(*int32)(unsafe.Pointer(&slots[i])) = v
		case uint32:
			*(*uint32)(unsafe.Pointer(&slots[i])) = v
		case float32:
			*(*float32)(unsafe.Pointer(&slots[i])) = v
		case float64:
			*(*float64)(unsafe.Pointer(&slots[i])) = v
		default:
			return fmt.Errorf("cuda: launch %s: argument %d has type %T (want DevicePtr, int32, uint32, int64, uint64, float32 or float64)", f.name, i, a)
		}
		params[i] = unsafe.Pointer(&slots[i])
	}
	c := f.m.c
	if err := c.enter(); err != nil {
		return err
	}
	r := c.d.api.cuLaunchKernel(f.h, grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z, uint32(sharedMem),
		s.handle(), unsafe.Pointer(&params[0]), nil)
	c.leave()
	runtime.KeepAlive(slots)
	runtime.KeepAlive(params)
	if r != Success {
		return c.d.errorf(r, "cuLaunchKernel(%s, grid %v, block %v, %d B shared)", f.name, grid, block, sharedMem)
	}
	return nil
}

// Stream is an ordered queue of device work.
type Stream struct {
	c *Context
	h uintptr
}

// StreamNonBlocking (CU_STREAM_NON_BLOCKING): the stream does not
// synchronize with the legacy default stream.
const StreamNonBlocking = 1

// NewStream creates a stream with flags (0 or StreamNonBlocking).
func (c *Context) NewStream(flags uint32) (*Stream, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	var h uintptr
	r := c.d.api.cuStreamCreate(&h, flags)
	c.leave()
	if r != Success {
		return nil, c.d.errorf(r, "cuStreamCreate(device %d)", c.ordinal)
	}
	return &Stream{c: c, h: h}, nil
}

// DefaultStream is the context's legacy default stream (handle 0): it
// cannot be destroyed, and it orders against every blocking stream.
func (c *Context) DefaultStream() *Stream { return &Stream{c: c} }

func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Destroy destroys the stream once its queued work is done; later calls
// (and calls on the default stream) do nothing.
func (s *Stream) Destroy() error {
	if s.h == 0 {
		return nil
	}
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuStreamDestroy(s.h)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuStreamDestroy_v2")
	}
	s.h = 0
	return nil
}

// Synchronize waits until the stream's queued work is done; it returns
// the error of a failed kernel or copy among them.
func (s *Stream) Synchronize() error {
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuStreamSynchronize(s.h)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuStreamSynchronize")
	}
	return nil
}

// WaitEvent makes work queued on s after this call wait for e's last
// Record (the cross-stream dependency of the scheduler's tasks).
func (s *Stream) WaitEvent(e *Event) error {
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuStreamWaitEvent(s.h, e.h, 0)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuStreamWaitEvent")
	}
	return nil
}

// hostFns dispatches cuLaunchHostFunc callbacks: one C-callable trampoline
// for the process (purego callbacks are a limited resource), the Go
// function chosen by the user-data word.
var hostFns struct {
	once sync.Once
	ptr  uintptr
	mu   sync.Mutex
	next uintptr
	fns  map[uintptr]func()
}

func hostFnTrampoline(id uintptr) {
	hostFns.mu.Lock()
	fn := hostFns.fns[id]
	delete(hostFns.fns, id)
	hostFns.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// HostFunc enqueues fn to run on a driver thread once the stream's work
// queued before it is done; work queued after waits for fn to return.
// fn must not call the CUDA driver (the driver forbids it) and should be
// short (a channel send): it holds up the stream.
func (s *Stream) HostFunc(fn func()) error {
	hostFns.once.Do(func() {
		hostFns.fns = map[uintptr]func(){}
		hostFns.ptr = newCallback(hostFnTrampoline)
	})
	hostFns.mu.Lock()
	hostFns.next++
	id := hostFns.next
	hostFns.fns[id] = fn
	hostFns.mu.Unlock()
	err := s.c.enter()
	var r Result
	if err == nil {
		r = s.c.d.api.cuLaunchHostFunc(s.h, hostFns.ptr, id)
		s.c.leave()
		if r != Success {
			err = s.c.d.errorf(r, "cuLaunchHostFunc")
		}
	}
	if err != nil {
		hostFns.mu.Lock()
		delete(hostFns.fns, id)
		hostFns.mu.Unlock()
	}
	return err
}

// CopyHtoD enqueues a copy of src to device address dst. From pinned
// memory (HostBuffer, RegisterHost) it is asynchronous: src must stay
// unchanged until the stream passes it. From other memory the driver
// stages it before returning.
func (s *Stream) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuMemcpyHtoDAsync(dst, unsafe.Pointer(&src[0]), uint64(len(src)), s.h)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuMemcpyHtoDAsync_v2(%d bytes to %#x)", len(src), uint64(dst))
	}
	return nil
}

// CopyDtoH enqueues a copy of len(dst) bytes at device address src into
// dst. Into pinned memory it is asynchronous (read dst after the stream
// passes it); into other memory it returns once the copy is done.
func (s *Stream) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src, uint64(len(dst)), s.h)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuMemcpyDtoHAsync_v2(%d bytes from %#x)", len(dst), uint64(src))
	}
	return nil
}

// CopyDtoD enqueues a device-to-device copy of n bytes.
func (s *Stream) CopyDtoD(dst, src DevicePtr, n int) error {
	if n <= 0 {
		return nil
	}
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuMemcpyDtoDAsync(dst, src, uint64(n), s.h)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuMemcpyDtoDAsync_v2(%d bytes %#x -> %#x)", n, uint64(src), uint64(dst))
	}
	return nil
}

// Memset8 enqueues setting n bytes at dst to v.
func (s *Stream) Memset8(dst DevicePtr, v byte, n int) error {
	if n <= 0 {
		return nil
	}
	if err := s.c.enter(); err != nil {
		return err
	}
	r := s.c.d.api.cuMemsetD8Async(dst, v, uint64(n), s.h)
	s.c.leave()
	if r != Success {
		return s.c.d.errorf(r, "cuMemsetD8Async(%d bytes at %#x)", n, uint64(dst))
	}
	return nil
}

// EventFlags are cuEventCreate flags.
type EventFlags uint32

const (
	EventDefault       EventFlags = 0
	EventBlockingSync  EventFlags = 1 // Synchronize sleeps instead of spinning
	EventDisableTiming EventFlags = 2 // cheaper; Elapsed fails on it
)

// Event marks a point in a stream.
type Event struct {
	c *Context
	h uintptr
}

// NewEvent creates an event.
func (c *Context) NewEvent(flags EventFlags) (*Event, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	var h uintptr
	r := c.d.api.cuEventCreate(&h, uint32(flags))
	c.leave()
	if r != Success {
		return nil, c.d.errorf(r, "cuEventCreate(flags %#x)", uint32(flags))
	}
	return &Event{c: c, h: h}, nil
}

// Record marks the current end of stream s's queue.
func (e *Event) Record(s *Stream) error {
	if err := e.c.enter(); err != nil {
		return err
	}
	r := e.c.d.api.cuEventRecord(e.h, s.handle())
	e.c.leave()
	if r != Success {
		return e.c.d.errorf(r, "cuEventRecord")
	}
	return nil
}

// Synchronize waits until the work before the last Record is done.
func (e *Event) Synchronize() error {
	if err := e.c.enter(); err != nil {
		return err
	}
	r := e.c.d.api.cuEventSynchronize(e.h)
	e.c.leave()
	if r != Success {
		return e.c.d.errorf(r, "cuEventSynchronize")
	}
	return nil
}

// Done reports whether the work before the last Record is done, without
// waiting.
func (e *Event) Done() (bool, error) {
	if err := e.c.enter(); err != nil {
		return false, err
	}
	r := e.c.d.api.cuEventQuery(e.h)
	e.c.leave()
	switch r {
	case Success:
		return true, nil
	case ErrorNotReady:
		return false, nil
	}
	return false, e.c.d.errorf(r, "cuEventQuery")
}

// Destroy destroys the event; later calls do nothing.
func (e *Event) Destroy() error {
	if e.h == 0 {
		return nil
	}
	if err := e.c.enter(); err != nil {
		return err
	}
	r := e.c.d.api.cuEventDestroy(e.h)
	e.c.leave()
	if r != Success {
		return e.c.d.errorf(r, "cuEventDestroy_v2")
	}
	e.h = 0
	return nil
}

// Elapsed is the device time between two completed, timing-enabled events
// of one context (resolution about half a microsecond).
func Elapsed(start, end *Event) (time.Duration, error) {
	c := start.c
	if err := c.enter(); err != nil {
		return 0, err
	}
	var ms float32
	r := c.d.api.cuEventElapsedTime(&ms, start.h, end.h)
	c.leave()
	if r != Success {
		return 0, c.d.errorf(r, "%s", c.d.bound["cuEventElapsedTime"])
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
