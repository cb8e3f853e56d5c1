//go:build linux && (amd64 || arm64)

package cuda

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// The binding reaches libcuda through purego: dlopen and dlsym, and calls
// through RegisterFunc, with no cgo and no link-time dependency, so the
// binary builds (CGO_ENABLED=0 included) and starts on machines without
// an NVIDIA driver. CUDA's driver ships for linux/amd64 and linux/arm64.

const bindingSupported = true

// openLibrary dlopens path (RTLD_NOW: a missing symbol fails at bind time
// anyway; RTLD_LOCAL: libcuda's symbols stay out of the global namespace).
// The thread is locked: purego reads dlerror in a second call, and
// dlerror's message belongs to the thread that failed — on another thread
// it is empty (a failed load then said nothing of why, seen in the tests).
func openLibrary(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// lookupSymbol returns the address of name in lib, or an error (on a
// locked thread, as openLibrary).
func lookupSymbol(lib uintptr, name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlsym(lib, name)
}

// bindFunc makes *fptr (a pointer to a func variable) call the C function
// at addr.
func bindFunc(fptr any, addr uintptr) { purego.RegisterFunc(fptr, addr) }

// newCallback returns a C function pointer that calls fn (purego allows a
// process a few thousand; the binding makes one).
func newCallback(fn func(uintptr)) uintptr { return purego.NewCallback(fn) }
