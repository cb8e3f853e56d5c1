package storage

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/engine/storage/alloc"
)

// batch is one Request in flight: its plan, its buffer and its device requests (ops). The last op
// to finish turns it into a Completion.
type batch struct {
	r      *Reader
	tag    uint64
	device int
	files  []*File // per caller range
	plan   plan
	buf    *alloc.Buffer
	ops    []*ioOp

	bytes, ioBytes int64
	remaining      atomic.Int32
	started        atomic.Bool
	submit         time.Duration
	start, end     time.Duration

	mu  sync.Mutex
	err error
}

// ioOp is one device request: fill dst from file f at offset off. done counts bytes read so far
// (a request is re-issued for the rest after a partial read); need is how many bytes must be
// read before the file may end.
type ioOp struct {
	b     *batch
	f     *File
	off   int64
	dst   []byte
	need  int64
	done  int64
	fixed bool // dst lies in the allocator's arena
}

// markStart records the first issue time of the batch (any goroutine; the first one wins; the
// value is read only after remaining reaches zero, which orders it).
func (b *batch) markStart(now time.Duration) {
	if !b.started.Load() && b.started.CompareAndSwap(false, true) {
		b.start = now
	}
}

func (b *batch) setErr(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
}

// advance applies the outcome of one read call that returned n bytes or err, and reports whether
// the op must be issued again for the rest of dst.
func (op *ioOp) advance(n int, err error) (again bool) {
	if err != nil {
		op.b.setErr(&ReadError{Path: op.f.Path, Offset: op.off, Length: int64(len(op.dst)), Err: err})
		return false
	}
	op.done += int64(n)
	switch {
	case op.done >= int64(len(op.dst)):
		return false
	case n == 0 || (op.f.Direct && op.done%op.f.Align != 0):
		// End of file: O_DIRECT only stops short of an aligned length at the end of the file.
		if op.done < op.need {
			op.b.setErr(op.shortError())
		}
		return false
	}
	return true
}

// shortError explains a read that hit the end of the file before op.need: the file shrank since
// it was opened (ErrChanged) or the caller asked past its end (ErrShortRead).
func (op *ioOp) shortError() error {
	e := &ReadError{Path: op.f.Path, Offset: op.off, Length: int64(len(op.dst))}
	size, err := op.f.currentSize()
	switch {
	case err != nil:
		e.Err = fmt.Errorf("got %d of %d bytes (stat: %v): %w", op.done, op.need, err, ErrShortRead)
	case size < op.f.Size:
		e.Err = fmt.Errorf("got %d of %d bytes: truncated from %d to %d bytes after open: %w", op.done, op.need, op.f.Size, size, ErrChanged)
	default:
		e.Err = fmt.Errorf("got %d of %d bytes: file has %d bytes, range needs %d: %w", op.done, op.need, size, op.off+op.need, ErrShortRead)
	}
	return e
}

// finish marks op done; for the last op of its batch it stamps End and returns true.
func (op *ioOp) finish(now time.Duration) bool {
	b := op.b
	if b.remaining.Add(-1) != 0 {
		return false
	}
	b.end = now
	return true
}

// completion builds the batch's Completion; on error the buffer goes back to the pool.
func (b *batch) completion() Completion {
	c := Completion{Tag: b.tag, Device: b.device, Bytes: b.bytes, IOBytes: b.ioBytes, IOs: len(b.ops),
		Submit: b.submit, Start: b.start, End: b.end}
	b.mu.Lock()
	err := b.err
	b.mu.Unlock()
	if err != nil {
		b.buf.Release()
		c.Err = err
		return c
	}
	c.Buffer = b.buf
	mem := b.buf.Bytes()
	c.Ranges = make([][]byte, len(b.plan.Slices))
	for i, s := range b.plan.Slices {
		c.Ranges[i] = mem[s.Off : s.Off+s.Len : s.Off+s.Len]
	}
	return c
}

// backend executes device requests. submit hands ops over without blocking; close returns once
// every op handed over has finished and its completion was pushed.
type backend interface {
	name() string
	submit(device int, ops []*ioOp)
	close()
}
