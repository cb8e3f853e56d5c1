package alloc

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"gostachio/internal/dirtmake"
)

// Heap is an Allocator of page-aligned buffers on the Go heap. The last
// Release only drops the buffer: the memory is reclaimed by the garbage
// collector once nothing refers to it any more, so slices of a Heap buffer
// may outlive its Release (the CPU engine's zero-copy path keeps column
// vectors that point into the buffers it read). The GC never moves heap
// objects, so the memory stays put while a read is in flight. No arena:
// rings read into Heap buffers without fixed-buffer registration.
type Heap struct {
	out      atomic.Int64
	outBytes atomic.Int64
}

var _ Allocator = (*Heap)(nil)

// NewHeap returns a Heap allocator.
func NewHeap() *Heap { return &Heap{} }

// Alloc implements Allocator: size bytes, aligned to PageSize. The memory
// is not zeroed (the Allocator contract): a read overwrites it, and
// zeroing it first was a full pass over every byte the engine reads.
func (h *Heap) Alloc(size int) (*Buffer, error) {
	if size < 0 {
		return nil, fmt.Errorf("engine/storage/alloc: alloc %d bytes: %w", size, ErrTooLarge)
	}
	n := int(roundUp(int64(max(size, 1)), PageSize))
	raw := dirtmake.Bytes(n + PageSize)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) % PageSize); r != 0 {
		off = PageSize - r
	}
	b := &Buffer{data: raw[off : off+n : off+n], n: size, class: -2, heap: h}
	b.refs.Store(1)
	h.out.Add(1)
	h.outBytes.Add(int64(n))
	return b, nil
}

// Arena implements Allocator: none.
func (h *Heap) Arena() []byte { return nil }

// Stats implements Allocator (outstanding = not yet released).
func (h *Heap) Stats() Stats {
	return Stats{OutstandingBuffers: int(h.out.Load()), OutstandingBytes: h.outBytes.Load()}
}

// IsHeap reports whether b came from a Heap allocator (its memory stays
// valid after Release for as long as it is referenced).
func (b *Buffer) IsHeap() bool { return b.heap != nil }

func (h *Heap) put(b *Buffer) {
	h.out.Add(-1)
	h.outBytes.Add(-int64(len(b.data)))
}
