package alloc

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PageSize is the alignment of every buffer's first byte.
const PageSize = 4096

// MaxArenaBytes bounds the arena: the kernel registers at most 1 GiB per io_uring fixed buffer.
const MaxArenaBytes = 1 << 30

// ErrTooLarge is returned when a request exceeds Options.MaxBytes.
var ErrTooLarge = errors.New("engine/storage/alloc: buffer too large")

// ErrClosed is returned by Alloc after Close.
var ErrClosed = errors.New("engine/storage/alloc: allocator closed")

// Allocator hands out aligned buffers. Implementations: *Pool (production), *Checked (tests).
type Allocator interface {
	// Alloc returns a buffer of at least size bytes (Len() == size), page aligned, with one
	// reference owned by the caller. Contents are unspecified (not zeroed on reuse).
	Alloc(size int) (*Buffer, error)
	// Arena returns the preallocated region every InArena buffer lies in (nil if none), for
	// registration as io_uring fixed buffer 0.
	Arena() []byte
	// Stats reports current usage.
	Stats() Stats
}

// Stats are an allocator's counters in bytes of size-class blocks.
type Stats struct {
	OutstandingBuffers int   // buffers allocated and not yet released
	OutstandingBytes   int64 // their block sizes summed
	IdleBytes          int64 // blocks held in free lists
	MappedBytes        int64 // arena plus dedicated mappings currently mapped
	ArenaUsedBytes     int64 // arena bytes carved into blocks so far
}

// Options configure a Pool. Zero values pick the defaults noted.
type Options struct {
	// ArenaBytes preallocates one mapping carved into size-class blocks on demand; buffers from
	// it can be registered with io_uring (Arena). 0: no arena. Clamped to MaxArenaBytes.
	ArenaBytes int64
	// MaxBytes is the largest single buffer (default 1 GiB).
	MaxBytes int64
	// MaxIdleBytes bounds the dedicated (non-arena) blocks kept in free lists; beyond it released
	// blocks are unmapped (default 256 MiB). Arena blocks are always kept.
	MaxIdleBytes int64
	// Populate pre-faults mappings (MAP_POPULATE) so first use does not page-fault.
	Populate bool
}

// Pool is the production Allocator: a free list per power-of-two size class (from PageSize up).
// Blocks come from the arena while it has room, else from a dedicated mmap. Safe for concurrent use.
type Pool struct {
	opts Options

	mu        sync.Mutex
	free      [][]*Buffer // per class
	arena     []byte
	arenaUsed int64
	idle      int64 // bytes in free lists (all)
	idleDed   int64 // dedicated bytes in free lists
	out       int
	outBytes  int64
	outArena  int // outstanding buffers lying in the arena
	mapped    int64
	closed    bool
}

var _ Allocator = (*Pool)(nil)

// NewPool maps the arena (if any) and returns an empty pool.
func NewPool(opts Options) (*Pool, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 30
	}
	if opts.MaxIdleBytes <= 0 {
		opts.MaxIdleBytes = 256 << 20
	}
	if opts.ArenaBytes > MaxArenaBytes {
		opts.ArenaBytes = MaxArenaBytes
	}
	p := &Pool{opts: opts, free: make([][]*Buffer, classOf(opts.MaxBytes)+1)}
	if opts.ArenaBytes > 0 {
		sz := roundUp(opts.ArenaBytes, PageSize)
		m, err := mmap(sz, opts.Populate)
		if err != nil {
			return nil, fmt.Errorf("engine/storage/alloc: map arena of %d bytes: %w", sz, err)
		}
		p.arena = m
		p.mapped = sz
	}
	return p, nil
}

// Arena implements Allocator.
func (p *Pool) Arena() []byte { return p.arena }

// ClassSize returns the block size serving a request of size bytes: the next power of two ≥ size,
// at least PageSize.
func ClassSize(size int64) int64 { return PageSize << classOf(size) }

// classOf is the size-class index: ⌈log2(max(size,PageSize)/PageSize)⌉.
func classOf(size int64) int {
	if size <= PageSize {
		return 0
	}
	return bits.Len64(uint64(size-1)) - 12
}

func roundUp(x, a int64) int64 { return (x + a - 1) / a * a }

// Alloc implements Allocator.
func (p *Pool) Alloc(size int) (*Buffer, error) {
	if size < 0 || int64(size) > p.opts.MaxBytes {
		return nil, fmt.Errorf("engine/storage/alloc: alloc %d bytes (max %d): %w", size, p.opts.MaxBytes, ErrTooLarge)
	}
	c := classOf(int64(size))
	bs := int64(PageSize) << c
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	var b *Buffer
	if l := p.free[c]; len(l) > 0 {
		b = l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		p.idle -= bs
		if !b.arena {
			p.idleDed -= bs
		}
	} else if p.arena != nil && p.arenaUsed+bs <= int64(len(p.arena)) {
		b = &Buffer{data: p.arena[p.arenaUsed : p.arenaUsed+bs : p.arenaUsed+bs], class: c, arena: true, pool: p}
		p.arenaUsed += bs
	}
	if b != nil {
		if b.arena {
			p.outArena++
		}
		p.out++
		p.outBytes += bs
		p.mu.Unlock()
		b.n = size
		b.refs.Store(1)
		return b, nil
	}
	p.mu.Unlock()
	m, err := mmap(bs, p.opts.Populate)
	if err != nil {
		return nil, fmt.Errorf("engine/storage/alloc: map %d bytes: %w", bs, err)
	}
	b = &Buffer{data: m, class: c, pool: p, n: size}
	b.refs.Store(1)
	p.mu.Lock()
	p.out++
	p.outBytes += bs
	p.mapped += bs
	p.mu.Unlock()
	return b, nil
}

// put takes back a block after its last Release.
func (p *Pool) put(b *Buffer) {
	bs := int64(len(b.data))
	p.mu.Lock()
	p.out--
	p.outBytes -= bs
	if p.closed && b.arena {
		// Close left the arena mapped because of this buffer; unmap it with the last one.
		p.outArena--
		var arena []byte
		if p.outArena == 0 && p.arena != nil {
			arena, p.arena = p.arena, nil
			p.mapped -= int64(len(arena))
		}
		p.mu.Unlock()
		if arena != nil {
			_ = munmap(arena)
		}
		return
	}
	if b.arena {
		p.outArena--
	}
	if b.arena || (!p.closed && p.idleDed+bs <= p.opts.MaxIdleBytes) {
		p.free[b.class] = append(p.free[b.class], b)
		p.idle += bs
		if !b.arena {
			p.idleDed += bs
		}
		p.mu.Unlock()
		return
	}
	p.mapped -= bs
	p.mu.Unlock()
	_ = munmap(b.data)
}

// Stats implements Allocator.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{OutstandingBuffers: p.out, OutstandingBytes: p.outBytes, IdleBytes: p.idle, MappedBytes: p.mapped, ArenaUsedBytes: p.arenaUsed}
}

// Close unmaps idle dedicated blocks and, when nothing is outstanding, the arena. Buffers still
// outstanding stay valid; dedicated ones are unmapped on their last Release, but an arena with
// outstanding buffers is left mapped (a leak the caller's Stats shows), never unmapped under them.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	for c, l := range p.free {
		for _, b := range l {
			if !b.arena {
				_ = munmap(b.data)
				p.mapped -= int64(len(b.data))
			}
		}
		p.free[c] = nil
	}
	p.idle, p.idleDed = 0, 0
	if p.arena != nil && p.outArena == 0 {
		err := munmap(p.arena)
		p.mapped -= int64(len(p.arena))
		p.arena = nil
		if err != nil {
			return fmt.Errorf("engine/storage/alloc: unmap arena: %w", err)
		}
	}
	return nil
}

// HugePageSize is the transparent huge page size mappings of at least this size are aligned to.
const HugePageSize = 2 << 20

// mmap maps size bytes of anonymous memory. Mappings of at least HugePageSize are aligned to it
// and advised MADV_HUGEPAGE (where THP is "madvise" or "always"): an O_DIRECT read into
// physically contiguous memory needs one DMA segment instead of one per 4 KiB page, so a 1 MiB
// read (256 pages) no longer exceeds a virtio disk's 254-segment limit and is not split in two.
// The advice is best effort: without THP the mapping works with small pages. populate pre-faults
// it (after the advice, so the faults take huge pages). Unmap it with munmap.
func mmap(size int64, populate bool) ([]byte, error) {
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if size < HugePageSize {
		f := flags
		if populate {
			f |= unix.MAP_POPULATE
		}
		p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), prot, f)
		if err != nil {
			return nil, err
		}
		return unsafe.Slice((*byte)(p), size), nil
	}
	// Over-map by one huge page, then trim the unaligned head and the tail.
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size+HugePageSize), prot, flags)
	if err != nil {
		return nil, err
	}
	base := uintptr(p)
	start := (base + HugePageSize - 1) &^ (HugePageSize - 1)
	if head := start - base; head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := base + uintptr(size+HugePageSize) - (start + uintptr(size)); tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, start-base+uintptr(size)), tail)
	}
	m := unsafe.Slice((*byte)(unsafe.Add(p, start-base)), size)
	_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	if populate {
		if err := unix.Madvise(m, unix.MADV_POPULATE_WRITE); err != nil { // before Linux 5.14: touch
			for i := 0; i < len(m); i += PageSize {
				m[i] = 0
			}
		}
	}
	return m, nil
}

// munmap unmaps a mapping made by mmap.
func munmap(m []byte) error {
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(m)), uintptr(len(m)))
}
