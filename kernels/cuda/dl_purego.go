//go:build linux && (amd64 || arm64)

package cuda

import "github.com/ebitengine/purego"

// The binding reaches libcuda through purego: dlopen and dlsym, and calls
// through RegisterFunc, with no cgo and no link-time dependency, so the
// binary builds (CGO_ENABLED=0 included) and starts on machines without
// an NVIDIA driver. CUDA's driver ships for linux/amd64 and linux/arm64.

const bindingSupported = true

// openLibrary dlopens path (RTLD_NOW: a missing symbol fails at bind time
// anyway; RTLD_LOCAL: libcuda's symbols stay out of the global namespace).
func openLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// lookupSymbol returns the address of name in lib, or an error.
func lookupSymbol(lib uintptr, name string) (uintptr, error) {
	return purego.Dlsym(lib, name)
}

// bindFunc makes *fptr (a pointer to a func variable) call the C function
// at addr.
func bindFunc(fptr any, addr uintptr) { purego.RegisterFunc(fptr, addr) }

// newCallback returns a C function pointer that calls fn (purego allows a
// process a few thousand; the binding makes one).
func newCallback(fn func(uintptr)) uintptr { return purego.NewCallback(fn) }
