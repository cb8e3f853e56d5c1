// Package alloc provides page-aligned host buffers for O_DIRECT reads: mmap'd memory, pooled by
// power-of-two size class, reference counted (Retain/Release), optionally carved out of one
// preallocated arena that an io_uring ring can register as a fixed buffer.
//
// Why mmap rather than make([]byte): O_DIRECT needs the destination address aligned to the
// device's logical block size, the Go heap gives no such guarantee, and memory the kernel (or a
// future cuMemHostRegister) holds on to must never be moved or freed by the garbage collector.
package alloc

import (
	"fmt"
	"sync/atomic"
)

// Buffer is one aligned host buffer. It starts with one reference, owned by whoever called
// Alloc. Every Retain must be matched by a Release; the last Release returns the memory to its
// pool. Using Bytes after the last Release is a programmer error (the memory is reused).
type Buffer struct {
	data   []byte // whole size-class block, page aligned
	n      int    // requested size: Bytes() is data[:n]
	refs   atomic.Int32
	class  int  // size-class index, or -1 for a dedicated mapping
	arena  bool // carved from the pool's arena (registrable as fixed buffer 0)
	pool   *Pool
	heap   *Heap         // set instead of pool for Heap buffers
	onFree func(*Buffer) // set by Checked to observe the last Release
}

// Bytes returns the buffer's usable bytes (the size asked of Alloc). Valid until the last Release.
func (b *Buffer) Bytes() []byte { return b.data[:b.n] }

// Len is the size asked of Alloc.
func (b *Buffer) Len() int { return b.n }

// Cap is the size of the underlying block (the size class), ≥ Len.
func (b *Buffer) Cap() int { return len(b.data) }

// InArena reports whether the buffer lies in its pool's arena, i.e. whether an io_uring that
// registered Pool.Arena() as fixed buffer 0 may read into it with READ_FIXED.
func (b *Buffer) InArena() bool { return b.arena }

// Refs returns the current reference count (for tests and diagnostics).
func (b *Buffer) Refs() int { return int(b.refs.Load()) }

// Retain adds a reference; the buffer stays valid until the matching Release.
func (b *Buffer) Retain() {
	if b.refs.Add(1) <= 1 {
		panic("engine/storage/alloc: Retain on a released buffer")
	}
}

// Release drops a reference; the last one gives the memory back to the pool. Releasing more often
// than retained is a programmer error and panics (it would hand the same memory out twice).
func (b *Buffer) Release() {
	r := b.refs.Add(-1)
	switch {
	case r > 0:
		return
	case r < 0:
		panic(fmt.Sprintf("engine/storage/alloc: Release of an already released buffer (%d bytes)", b.n))
	}
	if b.onFree != nil {
		f := b.onFree
		b.onFree = nil
		f(b)
	}
	if b.heap != nil {
		b.heap.put(b)
		return
	}
	b.pool.put(b)
}
