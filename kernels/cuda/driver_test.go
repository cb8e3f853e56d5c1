package cuda

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The system driver: without one, Load must say so in the agreed words.
func TestLoadSystemDriver(t *testing.T) {
	d, err := Load()
	if err == nil {
		t.Logf("CUDA driver %s, CUDA %s", d.Path(), VersionString(d.Version()))
		return
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load error %T %v, want a *LoadError", err, err)
	}
	if !errors.Is(err, ErrNoDriver) {
		// A driver is installed but unusable (no device): a clear message
		// is all that can be checked.
		if !strings.HasSuffix(err.Error(), ": running on the CPU") {
			t.Fatalf("Load error %q does not say the CPU is used", err)
		}
		t.Skipf("CUDA driver present but unusable: %v (%s)", err, le.Detail)
	}
	if got, want := err.Error(), "CUDA driver not found (libcuda.so.1): running on the CPU"; got != want {
		t.Fatalf("Load error %q, want %q", got, want)
	}
	if le.Detail == "" {
		t.Fatalf("Load error carries no dlopen detail")
	}
	// Load is cached: the same answer again.
	if _, err2 := Load(); err2 != err {
		t.Fatalf("second Load gave %v, want the cached %v", err2, err)
	}
}

func TestLoadLibraryMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := LoadLibrary(path)
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("LoadLibrary(%s) = %v, want ErrNoDriver", path, err)
	}
	if want := "CUDA driver not found (" + path + "): running on the CPU"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestErrorNames(t *testing.T) {
	for r, want := range map[Result]string{0: "CUDA_SUCCESS", 2: "CUDA_ERROR_OUT_OF_MEMORY",
		719: "CUDA_ERROR_LAUNCH_FAILED", 999: "CUDA_ERROR_UNKNOWN", 12345: "CUresult(12345)"} {
		if got := r.Name(); got != want {
			t.Errorf("Result(%d).Name() = %q, want %q", r, got, want)
		}
	}
	e := &Error{Op: "cuMemAlloc_v2(8 bytes)", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory"}
	if got, want := e.Error(), "cuda: cuMemAlloc_v2(8 bytes): CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrorOutOfMem) || errors.Is(e, ErrorNotReady) {
		t.Errorf("errors.Is by Result code is wrong")
	}
}

// gpu returns a context on device 0 of the system driver, or skips.
func gpu(t *testing.T) *Context {
	t.Helper()
	d, err := Load()
	if err != nil {
		t.Skip("no CUDA driver: ", err)
	}
	n, err := d.DeviceCount()
	if err != nil || n == 0 {
		t.Skip("no CUDA device: ", err)
	}
	c, err := d.Primary(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Release(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestGPUInfo(t *testing.T) {
	c := gpu(t)
	infos, err := c.Driver().Info()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) == 0 || infos[0].Name == "" || infos[0].TotalMem == 0 || infos[0].SMs == 0 {
		t.Fatalf("implausible device info %+v", infos)
	}
	free, total, err := c.MemInfo()
	if err != nil || free == 0 || free > total || total != infos[0].TotalMem {
		t.Fatalf("MemInfo = %d, %d, %v (device total %d)", free, total, err, infos[0].TotalMem)
	}
}

func TestGPURoundTrip(t *testing.T) { roundTrip(t, gpu(t)) }

// roundTrip moves random bytes host -> device -> device -> host through
// pinned buffers with async copies, a memset, events and a host function,
// and checks every byte; then the same through registered Go memory.
func roundTrip(t *testing.T, c *Context) {
	const n = 1<<20 + 13
	src, err := c.AllocHost(n, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	dst, err := c.AllocHost(n, HostPortable)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Free()
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	copy(src.Bytes(), want)
	for i := 100; i < 150; i++ {
		want[i] = 0xab
	}
	d1, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(d1)
	d2, err := c.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(d2)
	s, err := c.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	start, err := c.NewEvent(EventDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	end, err := c.NewEvent(EventBlockingSync)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Destroy()
	ran := make(chan struct{})
	steps := []error{
		start.Record(s),
		s.CopyHtoD(d1, src.Bytes()),
		s.CopyDtoD(d2, d1, n),
		s.Memset8(d2.Add(100), 0xab, 50),
		s.CopyDtoH(dst.Bytes(), d2),
		end.Record(s),
		s.HostFunc(func() { close(ran) }),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if done, err := end.Done(); err != nil || !done {
		t.Fatalf("event after Synchronize: done %v, %v", done, err)
	}
	if !bytes.Equal(dst.Bytes(), want) {
		t.Fatalf("bytes differ after the round trip")
	}
	el, err := Elapsed(start, end)
	if err != nil || el < 0 {
		t.Fatalf("Elapsed = %v, %v", el, err)
	}
	// A second stream ordered after the first by the event.
	s2, err := c.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Destroy()
	if err := s2.WaitEvent(end); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("host function did not run")
	}

	// Registered Go memory (a large allocation is page aligned).
	buf := make([]byte, 1<<16)
	copy(buf, want)
	reg, err := c.RegisterHost(buf, RegisterPortable)
	if err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(buf))
	if err := s2.CopyHtoD(d1, buf); err != nil {
		t.Fatal(err)
	}
	if err := s2.CopyDtoH(back, d1); err != nil {
		t.Fatal(err)
	}
	if err := s2.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, buf) {
		t.Fatalf("registered round trip differs")
	}
	if err := c.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// fakeDriver compiles testdata/fakecuda.c with flags and loads it, or
// skips without a C compiler.
func fakeDriver(t *testing.T, flags ...string) (*Driver, error) {
	t.Helper()
	if !bindingSupported {
		t.Skip("no CUDA binding on this platform")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the stand-in driver", cc)
	}
	so := filepath.Join(t.TempDir(), "libfakecuda.so")
	args := append([]string{"-shared", "-fPIC", "-O1", "-pthread", "-o", so, "testdata/fakecuda.c"}, flags...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return LoadLibrary(so)
}

func TestFakeDriver(t *testing.T) {
	d, err := fakeDriver(t)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version() != 12080 || VersionString(d.Version()) != "12.8" {
		t.Fatalf("version %d (%s)", d.Version(), VersionString(d.Version()))
	}
	if got := d.Symbols()["cuEventElapsedTime"]; got != "cuEventElapsedTime_v2" {
		t.Fatalf("cuEventElapsedTime bound to %q, want the _v2 symbol", got)
	}
	infos, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	want := DeviceInfo{Ordinal: 0, Name: "Fake GPU", TotalMem: 80 << 30, Major: 9, Minor: 0, SMs: 132,
		ClockKHz: 0, MemClockKHz: 1, MemBusBits: 1, L2Bytes: 1, WarpSize: 32, MaxThreadsPerBlock: 1,
		SharedPerBlock: 1, SharedPerBlockOptin: 1, SharedPerSM: 1, CopyEngines: 1, UnifiedAddressing: true,
		PCI: "0000:3b:00.0"}
	if len(infos) != 1 || infos[0] != want {
		t.Fatalf("Info = %+v\nwant %+v", infos, want)
	}
	c, err := d.Primary(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Primary(1); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_DEVICE") {
		t.Fatalf("Primary(1) = %v, want CUDA_ERROR_INVALID_DEVICE", err)
	}
	free, total, err := c.MemInfo()
	if err != nil || free != 79<<30 || total != 80<<30 {
		t.Fatalf("MemInfo = %d, %d, %v", free, total, err)
	}
	roundTrip(t, c)

	// Errors carry the call, the driver's name and its description.
	_, err = c.Alloc(1 << 41)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != ErrorOutOfMem || !errors.Is(err, ErrorOutOfMem) {
		t.Fatalf("huge Alloc = %v, want CUDA_ERROR_OUT_OF_MEMORY", err)
	}
	if want := "cuda: cuMemAlloc_v2(2199023255552 bytes on device 0): CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if _, err := c.Alloc(0); err == nil {
		t.Fatal("Alloc(0) succeeded")
	}

	// Elapsed reads the _v2 function: 1.5 ms per record between.
	e1, _ := c.NewEvent(EventDefault)
	e2, _ := c.NewEvent(EventDefault)
	e1.Record(nil)
	e2.Record(nil)
	if el, err := Elapsed(e1, e2); err != nil || el != 1500*time.Microsecond {
		t.Fatalf("Elapsed = %v, %v; want 1.5ms", el, err)
	}
	e3, _ := c.NewEvent(EventDisableTiming)
	e3.Record(nil)
	if _, err := Elapsed(e1, e3); err == nil || !strings.Contains(err.Error(), "cuEventElapsedTime_v2") {
		t.Fatalf("Elapsed with a timing-disabled event = %v", err)
	}
	for _, e := range []*Event{e1, e2, e3} {
		if err := e.Destroy(); err != nil {
			t.Fatal(err)
		}
	}

	// Modules and the 11-argument launch.
	if _, err := c.LoadModule("bad.ptx", []byte(".version 8.0")); err == nil ||
		!strings.Contains(err.Error(), "CUDA_ERROR_INVALID_PTX") || !strings.Contains(err.Error(), "bad.ptx") {
		t.Fatalf("LoadModule of a bad image = %v", err)
	}
	m, err := c.LoadModule("fake.ptx", []byte("// fake module"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("nope"); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") {
		t.Fatalf("Function(nope) = %v", err)
	}
	echo, err := m.Function("fake_echo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.AllocHost(12*8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	dOut, err := c.Alloc(12 * 8)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.Launch(Dim3{3, 5, 7}, Dim3{128, 2, 1}, 4096, s, dOut, int32(-42), int64(-1)<<40, uint32(0xfffffff0), 2.5); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDtoH(out.Bytes(), dOut); err != nil {
		t.Fatal(err)
	}
	got := make([]int64, 12)
	for i := range got {
		got[i] = int64(binary.LittleEndian.Uint64(out.Bytes()[8*i:]))
	}
	wantArgs := []int64{3, 5, 7, 128, 2, 1, 4096, -42, -1 << 40, 0xfffffff0, 2500}
	for i, w := range wantArgs {
		if got[i] != w {
			t.Fatalf("launch argument %d arrived as %d, want %d (all: %v)", i, got[i], w, got)
		}
	}
	if got[11] == 0 {
		t.Fatalf("launch on a created stream passed the default stream")
	}
	if err := echo.Launch(Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, dOut, 7); err == nil || !strings.Contains(err.Error(), "argument 1 has type int") {
		t.Fatalf("launch with an int argument = %v", err)
	}
	if err := echo.Launch(Dim3{0, 1, 1}, Dim3{1, 1, 1}, 0, nil, dOut); err == nil {
		t.Fatal("launch with an empty grid succeeded")
	}

	// Concurrent use from many goroutines (so many OS threads): each call
	// must make the context current on its own thread.
	add, err := m.Function("fake_add")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- addOnDevice(c, add, int64(g))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// Double registration is the driver's error, named.
	buf := make([]byte, 1<<16)
	reg, err := c.RegisterHost(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterHost(buf, 0); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED") {
		t.Fatalf("second RegisterHost = %v", err)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}

	for _, err := range []error{s.Destroy(), c.Free(dOut), m.Unload(), m.Unload(), c.Release(), c.Release()} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// addOnDevice copies 1000 values to the device, runs fake_add with add,
// copies back and checks.
func addOnDevice(c *Context, add *Function, k int64) error {
	const n = 1000
	in := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(in[8*i:], uint64(int64(i)*k))
	}
	dIn, err := c.Alloc(len(in))
	if err != nil {
		return err
	}
	defer c.Free(dIn)
	dOut, err := c.Alloc(len(in))
	if err != nil {
		return err
	}
	defer c.Free(dOut)
	s, err := c.NewStream(StreamNonBlocking)
	if err != nil {
		return err
	}
	defer s.Destroy()
	if err := s.CopyHtoD(dIn, in); err != nil {
		return err
	}
	grid, block := Grid1D(n, 256)
	if err := add.Launch(grid, block, 0, s, dOut, dIn, k, int32(n)); err != nil {
		return err
	}
	out := make([]byte, len(in))
	if err := s.CopyDtoH(out, dOut); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	for i := range n {
		if got, want := int64(binary.LittleEndian.Uint64(out[8*i:])), int64(i)*k+k; got != want {
			return errors.New("fake_add: wrong sum")
		}
	}
	return nil
}

func TestFakeDriverFailures(t *testing.T) {
	_, err := fakeDriver(t, "-DFAKE_NO_DEVICE")
	var le *LoadError
	if !errors.As(err, &le) || errors.Is(err, ErrNoDriver) || !errors.Is(err, ErrorNoDevice) ||
		!strings.Contains(err.Error(), "no CUDA device: CUDA_ERROR_NO_DEVICE: running on the CPU") {
		t.Fatalf("driver without a device: %v", err)
	}
	_, err = fakeDriver(t, "-DFAKE_OMIT_MEMSET")
	if err == nil || !strings.Contains(err.Error(), "lacks cuMemsetD8Async") || !strings.HasSuffix(err.Error(), "running on the CPU") {
		t.Fatalf("driver without cuMemsetD8Async: %v", err)
	}
}

func TestWriteInfoWithoutDriver(t *testing.T) {
	if _, err := Load(); err == nil || !errors.Is(err, ErrNoDriver) {
		t.Skip("a CUDA driver is installed")
	}
	var b strings.Builder
	if err := WriteInfo(&b, false); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), ErrNoDriver.Error()+"\n"; got != want {
		t.Fatalf("gpu info printed %q, want %q", got, want)
	}
	b.Reset()
	if err := WriteInfo(&b, true); err != nil {
		t.Fatal(err)
	}
	wants := []string{`"available": false`, `"message": "CUDA driver not found (libcuda.so.1): running on the CPU"`}
	var info struct {
		Modules []string `json:"ptx_modules"`
	}
	if err := json.Unmarshal([]byte(b.String()), &info); err != nil {
		t.Fatalf("gpu info --json printed %s: %v", b.String(), err)
	}
	sources, _ := filepath.Glob("*.cu")
	if got, want := strings.Join(info.Modules, ","), strings.Join(PTXNames(), ","); got != want || len(info.Modules) != len(sources) {
		t.Errorf("gpu info --json lists PTX modules %q, want the embedded ones %q, one per source (%d)", got, want, len(sources))
	}
	for _, want := range wants {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("gpu info --json printed %s, missing %s", b.String(), want)
		}
	}
}
