package engine

import (
	"syscall"
	"unsafe"
)

// madvHugepage is MADV_HUGEPAGE (linux/mman.h).
const madvHugepage = 14

// adviseHuge marks the 2 MiB-aligned interior of b for transparent huge
// pages. b must not have been touched (the kernel backs a page when it is
// first written).
func adviseHuge(b []byte) {
	const huge = 2 << 20
	if len(b) < 2*huge {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + huge - 1) &^ (huge - 1)
	hi := (start + uintptr(len(b))) &^ (huge - 1)
	if hi <= lo {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugepage)
}
