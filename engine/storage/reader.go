// Package storage is the engine's first pipeline stage: asynchronous O_DIRECT reads of byte ranges
// of files into aligned host buffers, on io_uring (one ring per device) or, where io_uring cannot
// be set up, on a pool of pread workers with the same API.
//
// A caller submits Requests (one or many byte ranges, all landing in one buffer, on one device)
// and collects Completions later with Wait, Next or Poll; Submit never waits for the device. The
// reader combines neighbouring ranges of a request into larger device requests (CombineOptions),
// aligns them for O_DIRECT, splits them at MaxRequest, and hands back each caller range as a slice
// of the buffer. Metadata (which bytes to read) is the caller's business.
//
// Build note: giouring reaches into package syscall with go:linkname, so every build or test of
// this package needs `-ldflags=-checklinkname=0` on Go ≥ 1.23.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/engine/storage/alloc"
)

// IO backends accepted by Options.IO.
const (
	IOAuto  = "auto"  // io_uring, falling back to pread (logged once) if the ring cannot be set up
	IOUring = "uring" // io_uring or an error
	IOPread = "pread" // pread worker pool
)

// MaxDevices bounds device indices (one queue each).
const MaxDevices = 64

// ErrNothingPending is returned by Wait and Next when no request is in flight and no completion
// is waiting, so waiting would block forever.
var ErrNothingPending = errors.New("engine/storage: nothing pending")

// Options configure a Reader. DefaultOptions gives the values used when a field is zero.
type Options struct {
	IO         string // IOAuto (default), IOUring or IOPread
	QueueDepth int    // device requests in flight per device (default 32)
	Combine    CombineOptions
	// Buffered disables O_DIRECT (reads then go through the page cache: for tests only).
	Buffered bool
	// FixedBuffers registers the allocator's arena with each ring (READ_FIXED saves the kernel
	// pinning pages per request). Ignored by pread and when the allocator has no arena.
	FixedBuffers bool
	// RegisteredFiles is the size of each ring's registered-file table (0: plain descriptors).
	// The first RegisteredFiles files opened are registered on first use.
	RegisteredFiles int
	// SQPoll asks for a kernel submission-polling thread per ring (costs a CPU while busy).
	SQPoll bool
	// Workers is the number of pread goroutines per device (default QueueDepth).
	Workers int
	// Allocator provides the buffers; nil: the reader makes a Pool with a 64 MiB arena and
	// closes it on Close.
	Allocator alloc.Allocator
	// Clock stamps submissions and completions; nil: a MonotonicClock started by NewReader.
	Clock Clock
	// Log receives one-line notices (backend fallback, buffered fallback); nil: discarded.
	Log io.Writer
}

// DefaultOptions returns the defaults: auto backend, QD 32, combining with a 64 KiB gap and
// 1 MiB requests, fixed buffers, 256 registered files.
func DefaultOptions() Options {
	return Options{
		IO:              IOAuto,
		QueueDepth:      32,
		Combine:         CombineOptions{Combine: true, MaxGap: 64 << 10, MaxRequest: 1 << 20},
		FixedBuffers:    true,
		RegisteredFiles: 256,
	}
}

// Range is one byte range of a file. Give File (from Reader.Open) or Path (opened and cached on
// first use, checked against Expect then).
type Range struct {
	File   *File
	Path   string
	Expect Expect
	Offset int64
	Length int64
}

// Request reads Ranges (all from files on Device) into one buffer.
type Request struct {
	Tag    uint64 // returned in the Completion, for the caller's bookkeeping
	Device int    // which device queue serves it, 0 ≤ Device < MaxDevices
	Ranges []Range
}

// Completion reports one finished Request. On success the caller owns one reference to Buffer and
// must Release it; Ranges[i] is the bytes of Request.Ranges[i] (slices of Buffer, valid until the
// Release). On failure Err is a *ReadError, Buffer and Ranges are nil (the buffer went back to the
// pool). Times are Clock readings: Submit when Submit was called, Start when the first device
// request was issued, End when the last one finished.
type Completion struct {
	Tag    uint64
	Device int
	Buffer *alloc.Buffer
	Ranges [][]byte
	Bytes  int64 // sum of range lengths
	// IOBytes is what the device transferred (alignment and combined gaps included); IOs the
	// number of device requests issued.
	IOBytes int64
	IOs     int
	Submit  time.Duration
	Start   time.Duration
	End     time.Duration
	Err     error
}

// Reader executes Requests. Safe for concurrent use.
type Reader struct {
	opts    Options
	clock   Clock
	alloc   alloc.Allocator
	ownPool *alloc.Pool
	be      backend

	// submitMu is held shared by Submit and exclusively by Close, so no request is handed to the
	// backend after Close has started shutting it down.
	submitMu sync.RWMutex
	mu       sync.Mutex
	files    map[string]*File
	nfiles   int
	closed   bool
	logged   map[string]bool

	pending atomic.Int64 // requests submitted and not yet completed
	cq      completionQueue
}

// NewReader sets up the backend chosen by opts.IO.
func NewReader(opts Options) (*Reader, error) {
	d := DefaultOptions()
	if opts.IO == "" {
		opts.IO = d.IO
	}
	if opts.QueueDepth <= 0 {
		opts.QueueDepth = d.QueueDepth
	}
	if opts.Combine.MaxRequest <= 0 {
		opts.Combine.MaxRequest = d.Combine.MaxRequest
	}
	opts.Combine.MaxRequest = min(opts.Combine.MaxRequest, 1<<30) // one read's length is a uint32
	if opts.Combine.MaxGap < 0 {
		opts.Combine.MaxGap = 0
	}
	if opts.Workers <= 0 {
		opts.Workers = opts.QueueDepth
	}
	r := &Reader{opts: opts, clock: opts.Clock, alloc: opts.Allocator, files: make(map[string]*File), logged: make(map[string]bool)}
	r.cq.notify = make(chan struct{}, 1)
	if r.clock == nil {
		r.clock = NewMonotonicClock()
	}
	if r.alloc == nil {
		p, err := alloc.NewPool(alloc.Options{ArenaBytes: 64 << 20})
		if err != nil {
			return nil, fmt.Errorf("engine/storage: buffer pool: %w", err)
		}
		r.alloc, r.ownPool = p, p
	}
	var err error
	switch opts.IO {
	case IOPread:
		r.be = newPreadBackend(r)
	case IOUring, IOAuto:
		r.be, err = newUringBackend(r)
		if err != nil && opts.IO == IOAuto {
			r.logf("uring", "engine/storage: io_uring unavailable (%v); using the pread worker pool", err)
			r.be, err = newPreadBackend(r), nil
		}
	default:
		err = fmt.Errorf("engine/storage: unknown io backend %q (want %s, %s or %s)", opts.IO, IOAuto, IOUring, IOPread)
	}
	if err != nil {
		if r.ownPool != nil {
			r.ownPool.Close()
		}
		return nil, err
	}
	return r, nil
}

// Backend names the backend in use: "uring" or "pread".
func (r *Reader) Backend() string { return r.be.name() }

// Options returns the options in effect (defaults filled in).
func (r *Reader) Options() Options { return r.opts }

// Allocator returns the allocator buffers come from.
func (r *Reader) Allocator() alloc.Allocator { return r.alloc }

// logf writes a notice once per key.
func (r *Reader) logf(key, format string, args ...any) {
	r.mu.Lock()
	seen := r.logged[key]
	r.logged[key] = true
	r.mu.Unlock()
	if !seen && r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format+"\n", args...)
	}
}

// Open opens path (O_DIRECT unless the filesystem refuses it, which is logged once), checks it
// against exp and caches it: opening the same path again returns the same File without
// re-checking. Files stay open until Close.
func (r *Reader) Open(path string, exp Expect) (*File, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if f, ok := r.files[path]; ok {
		r.mu.Unlock()
		return f, nil
	}
	r.mu.Unlock()
	f, err := openFile(path, exp, !r.opts.Buffered, func(p string) {
		r.logf("buffered", "engine/storage: %s refuses O_DIRECT (EINVAL); reading it and files like it through the page cache", p)
	})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.files[path]; ok { // lost a race with another Open
		f.close()
		return g, nil
	}
	if r.closed {
		f.close()
		return nil, ErrClosed
	}
	f.id = r.nfiles
	r.nfiles++
	r.files[path] = f
	return f, nil
}

// Submit queues requests and returns without waiting for the device. Each request's completion
// arrives later through Wait/Next/Poll. A request that is malformed (bad device, negative range,
// unopenable file) or whose buffer cannot be allocated is rejected with an error; the requests
// before it in the call were submitted, those after it were not.
func (r *Reader) Submit(reqs ...Request) error {
	r.submitMu.RLock()
	defer r.submitMu.RUnlock()
	now := r.clock.Now()
	for i := range reqs {
		b, err := r.prepare(&reqs[i], now)
		if err != nil {
			return err
		}
		r.pending.Add(1)
		if len(b.ops) == 0 {
			b.start, b.end = now, now
			r.cq.push(b.completion())
			continue
		}
		r.be.submit(b.device, b.ops)
	}
	return nil
}

// prepare validates, plans and allocates one request.
func (r *Reader) prepare(req *Request, now time.Duration) (*batch, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if req.Device < 0 || req.Device >= MaxDevices {
		return nil, fmt.Errorf("engine/storage: request %d: device %d outside [0,%d): %w", req.Tag, req.Device, MaxDevices, ErrBadRange)
	}
	b := &batch{r: r, tag: req.Tag, device: req.Device, submit: now, files: make([]*File, len(req.Ranges))}
	spans := make([]span, len(req.Ranges))
	for i, rg := range req.Ranges {
		f := rg.File
		if f == nil {
			if rg.Path == "" {
				return nil, fmt.Errorf("engine/storage: request %d range %d: no file: %w", req.Tag, i, ErrBadRange)
			}
			var err error
			if f, err = r.Open(rg.Path, rg.Expect); err != nil {
				return nil, err
			}
		}
		if rg.Offset < 0 || rg.Length < 0 {
			return nil, fmt.Errorf("engine/storage: read %s offset %d length %d: %w", f.Path, rg.Offset, rg.Length, ErrBadRange)
		}
		b.files[i] = f
		b.bytes += rg.Length
		spans[i] = span{key: f.id, align: f.Align, off: rg.Offset, n: rg.Length}
	}
	makePlan(spans, r.opts.Combine, &b.plan)
	buf, err := r.alloc.Alloc(int(b.plan.Size))
	if err != nil {
		return nil, fmt.Errorf("engine/storage: request %d: buffer of %d bytes: %w", req.Tag, b.plan.Size, err)
	}
	b.buf = buf
	mem := buf.Bytes()
	b.ops = make([]*ioOp, len(b.plan.IOs))
	opsMem := make([]ioOp, len(b.plan.IOs))
	for i, p := range b.plan.IOs {
		op := &opsMem[i]
		*op = ioOp{b: b, f: b.files[p.Span], off: p.Off, dst: mem[p.BufOff : p.BufOff+p.Len], need: p.Need, fixed: buf.InArena()}
		b.ops[i] = op
		b.ioBytes += p.Len
	}
	b.remaining.Store(int32(len(b.ops)))
	return b, nil
}

// Wait appends every available completion to dst, blocking until there is at least one, ctx is
// done, or nothing is pending (ErrNothingPending).
func (r *Reader) Wait(ctx context.Context, dst []Completion) ([]Completion, error) {
	for {
		n := len(dst)
		dst = r.cq.take(dst)
		if len(dst) > n {
			r.pending.Add(-int64(len(dst) - n))
			return dst, nil
		}
		if r.pending.Load() == 0 {
			return dst, ErrNothingPending
		}
		select {
		case <-r.cq.notify:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
}

// Poll appends the completions available now to dst without blocking.
func (r *Reader) Poll(dst []Completion) []Completion {
	n := len(dst)
	dst = r.cq.take(dst)
	r.pending.Add(-int64(len(dst) - n))
	return dst
}

// Next waits for one completion (see Wait).
func (r *Reader) Next(ctx context.Context) (Completion, error) {
	for {
		if c, ok := r.cq.takeOne(); ok {
			r.pending.Add(-1)
			return c, nil
		}
		if r.pending.Load() == 0 {
			return Completion{}, ErrNothingPending
		}
		select {
		case <-r.cq.notify:
		case <-ctx.Done():
			return Completion{}, ctx.Err()
		}
	}
}

// Pending is the number of submitted requests whose completion has not been collected yet.
func (r *Reader) Pending() int { return int(r.pending.Load()) }

// Close stops accepting requests, waits for the device requests in flight, releases the buffers
// of completions nobody collected, closes the files and (if the reader made it) the pool.
func (r *Reader) Close() error {
	r.submitMu.Lock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.submitMu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.submitMu.Unlock()
	r.be.close()
	for _, c := range r.Poll(nil) {
		if c.Buffer != nil {
			c.Buffer.Release()
		}
	}
	var errs []error
	r.mu.Lock()
	for _, f := range r.files {
		if err := f.close(); err != nil {
			errs = append(errs, fmt.Errorf("engine/storage: close %s: %w", f.Path, err))
		}
	}
	r.files = nil
	r.mu.Unlock()
	if r.ownPool != nil {
		if err := r.ownPool.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// completionQueue hands completions from device goroutines to the caller: a locked slice plus a
// one-slot notification channel (a wake-up may be spurious; takers re-check).
type completionQueue struct {
	mu     sync.Mutex
	items  []Completion
	head   int
	notify chan struct{}
}

func (q *completionQueue) push(cs ...Completion) {
	if len(cs) == 0 {
		return
	}
	q.mu.Lock()
	q.items = append(q.items, cs...)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *completionQueue) take(dst []Completion) []Completion {
	q.mu.Lock()
	dst = append(dst, q.items[q.head:]...)
	clear(q.items)
	q.items, q.head = q.items[:0], 0
	q.mu.Unlock()
	return dst
}

func (q *completionQueue) takeOne() (Completion, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return Completion{}, false
	}
	c := q.items[q.head]
	q.items[q.head] = Completion{}
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else {
		// more left: make sure another taker wakes up
		select {
		case q.notify <- struct{}{}:
		default:
		}
	}
	return c, true
}
