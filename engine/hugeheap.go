package engine

import (
	"os"
	"runtime"
	"sync"
)

// Huge pages for the heap. On a paravirtualized guest every first touch of
// a 4 KiB page costs a fault of ~12–16 µs (a third of a cold query's CPU on
// the 2-core development VM, 2026-11), and the Go heap grows onto such pages. With
// transparent huge pages in "madvise" mode (the common default) a 2 MiB
// page faults once, for about a quarter of the time per byte: touching
// 2 GiB took 8.4 s in 4 KiB pages and 3.5 s in huge ones here. The Go
// runtime does not advise its heap, so AdviseHeap does it for the address
// range the heap grows into first: it allocates one large object on fresh
// memory (untouched: it costs nothing until written), marks its range
// MADV_HUGEPAGE and frees it at once; later allocations reuse that range
// and fault it in by 2 MiB pages. GOSTACHIO_THP=0 turns it off.

// heapAdviseBytes is the heap range TuneGC advises: virtual address space
// only, above any SF1 query's heap (1.2 GB) and the calibration harness's
// (~2 GB).
const heapAdviseBytes = 4 << 30

var heapAdvised sync.Once

// AdviseHeap advises the first size bytes of heap address space for huge
// pages. Only the first call in a process acts: it must run before the
// heap has grown (a later large allocation lands on used memory, which the
// runtime zeroes — touching it all), so TuneGC calls it with
// heapAdviseBytes. It runs a collection. Errors are ignored: without THP
// support the heap stays as it was.
func AdviseHeap(size int64) {
	if os.Getenv("GOSTACHIO_THP") == "0" || size <= 0 {
		return
	}
	heapAdvised.Do(func() {
		// Only where the advice changes anything, and never an allocation
		// the kernel could refuse (the runtime would abort): under strict
		// overcommit, or past half the machine's memory (the heuristic
		// mode refuses a mapping larger than memory and swap).
		size = min(size, adviseHeapLimit())
		if size <= 0 {
			return
		}
		b := make([]byte, size)
		adviseHuge(b)
		runtime.KeepAlive(b)
		b = nil
		// Free it now: until the next collection the object would count
		// as live and push the heap goal up by its size.
		runtime.GC()
	})
}
