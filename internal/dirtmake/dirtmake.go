// Package dirtmake allocates slices whose memory the runtime does not zero,
// for buffers that are overwritten whole before they are read: storage
// read buffers, received columns, kernel outputs that write every element.
//
// make zeroes a large allocation that reuses freed heap memory, a full pass
// over it; when the next thing to happen is a read(2) or a copy into all of
// it, that pass is wasted (on the CPU engine's TPC-H runs, a third of the
// bytes allocated were read buffers). The allocation goes through
// runtime.mallocgc with needzero false, the runtime's own entry point that
// CockroachDB, Pebble and bytedance/gopkg call the same way (the runtime
// keeps its signature for them: go.dev/issue/67401). The memory is
// ordinary garbage-collected heap memory without pointers.
package dirtmake

import "unsafe"

//go:linkname mallocgc runtime.mallocgc
//go:noescape
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

// Bytes returns a slice of length and capacity n with undefined contents
// (possibly earlier data of this process): the caller must write every
// byte before reading it. It panics if n < 0.
func Bytes(n int) []byte {
	if n < 0 {
		panic("dirtmake: negative length")
	}
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(mallocgc(uintptr(n), nil, false)), n)
}

// Fixed are the pointer-free element types Slice allocates.
type Fixed interface {
	int | int64 | int32 | float64 | uint64 | uint32 | bool | byte
}

// Slice is Bytes for n values of a pointer-free fixed-size type. It panics
// if n < 0.
func Slice[T Fixed](n int) []T {
	if n < 0 {
		panic("dirtmake: negative length")
	}
	if n == 0 {
		return []T{}
	}
	var zero T
	return unsafe.Slice((*T)(mallocgc(uintptr(n)*unsafe.Sizeof(zero), nil, false)), n)
}
