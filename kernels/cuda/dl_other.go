//go:build !(linux && (amd64 || arm64))

package cuda

import (
	"fmt"
	"runtime"
)

// NVIDIA's driver API exists for linux/amd64 and linux/arm64 only (for
// this binding's purposes): elsewhere Load reports the CPU fallback.

const bindingSupported = false

func openLibrary(path string) (uintptr, error) {
	return 0, fmt.Errorf("the CUDA binding is built for linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
}

func lookupSymbol(lib uintptr, name string) (uintptr, error) {
	return 0, fmt.Errorf("no dynamic loader on %s/%s", runtime.GOOS, runtime.GOARCH)
}

func bindFunc(fptr any, addr uintptr) {}

func newCallback(fn func(uintptr)) uintptr { return 0 }
