package cluster

import (
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"gostachio/internal/dirtmake"
)

// Receive buffers. The large column sections of an inbound frame are read
// into memory recycled from earlier frames rather than into fresh
// allocations: a fresh allocation is zeroed by the runtime (or faulted in
// page by page when the heap grew, about 12 µs per 4 KiB page on this kind
// of paravirtualized guest) and then overwritten by the read, which on
// loopback cost the receiver more than the copy out of the socket itself.
// Measured with `gostachio cluster bench-exchange --frame 384KiB` (the
// engine's byte-weighted median frame): about half of iperf3's throughput
// with fresh allocations, at or above it with reused memory.
//
// Ownership: the memory of one frame is a recvLease. The data plane hands
// it to its store with the frame's batches; from then on the store owns
// both, and calls Release once nothing reads the batches any more (the
// benchmark right away, a worker at the end of the query). After Release
// the batches' columns may be overwritten by a later frame.

// recvPool recycles receive buffers by power-of-two size class, holding at
// most limit bytes idle (what is released beyond that is left to the
// garbage collector).
type recvPool struct {
	mu    sync.Mutex
	free  [recvClasses][][]byte
	held  int64
	limit int64
	// poison fills released memory with a pattern, so a use after
	// release shows in results (tests; GOSTACHIO_POISON_RECV=1).
	poison bool
}

const (
	// recvMinShift: sections under 16 KiB (the read buffer's size, see
	// inlineMax) are small allocations; recvMaxShift: over 1 GiB are
	// allocated as needed and never kept.
	recvMinShift = 14
	recvMaxShift = 30
	recvClasses  = recvMaxShift - recvMinShift + 1
	// recvPoolLimit is the idle memory a data plane keeps.
	recvPoolLimit = 256 << 20
	poisonByte    = 0xA5
)

// recvReused counts the buffers handed out again, over all pools (tests
// check that recycled memory was in play).
var recvReused atomic.Int64

func newRecvPool() *recvPool {
	return &recvPool{limit: recvPoolLimit, poison: os.Getenv("GOSTACHIO_POISON_RECV") == "1"}
}

// recvClass is the size class of an n-byte buffer (the smallest power of
// two ≥ n, from 2^recvMinShift), or -1 when n is not pooled.
func recvClass(n int) int {
	if n < 1<<recvMinShift || n > 1<<recvMaxShift {
		return -1
	}
	return bits.Len(uint(n-1)) - recvMinShift
}

// get returns n bytes, recycled when the pool holds a buffer of n's class.
// Their content is undefined.
func (p *recvPool) get(n int) []byte {
	c := recvClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		p.held -= int64(cap(b))
		p.mu.Unlock()
		recvReused.Add(1)
		return b[:n]
	}
	p.mu.Unlock()
	// Not zeroed: the frame's read overwrites the n bytes.
	return dirtmake.Bytes(1 << (c + recvMinShift))[:n]
}

// put takes back a buffer from get.
func (p *recvPool) put(b []byte) {
	c := recvClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+recvMinShift) {
		return
	}
	b = b[:cap(b)]
	if p.poison {
		for i := range b {
			b[i] = poisonByte
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held+int64(cap(b)) > p.limit {
		return
	}
	p.free[c] = append(p.free[c], b)
	p.held += int64(cap(b))
}

// idle is the memory the pool holds.
func (p *recvPool) idle() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// recvLease is the pooled memory of one received frame. Its zero value
// (and a nil lease) allocates without a pool.
type recvLease struct {
	pool     *recvPool
	bufs     [][]byte
	released atomic.Bool
}

// bytes returns n bytes for a column section: from the pool when there is
// one and the section is large enough, else a fresh allocation.
func (l *recvLease) bytes(n int) []byte {
	if l == nil || l.pool == nil || recvClass(n) < 0 {
		return make([]byte, n)
	}
	b := l.pool.get(n)
	l.bufs = append(l.bufs, b)
	return b
}

// Release gives the frame's memory back to the pool: the batches it was
// read into must not be read after it. A second call does nothing; a nil
// lease has nothing to release.
func (l *recvLease) Release() {
	if l == nil || l.released.Swap(true) {
		return
	}
	for _, b := range l.bufs {
		l.pool.put(b)
	}
	l.bufs = nil
}

// viewAs views b (len a multiple of T's size, from get or make) as a
// slice of n values of T: no copy. Go allocations are aligned for
// 8-byte values.
func viewAs[T int64 | int32 | float64](b []byte, n int) []T {
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
