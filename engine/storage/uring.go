package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/pawelgaczynski/giouring"
	"golang.org/x/sys/unix"
)

// uringBackend keeps one io_uring per device, each owned by one goroutine locked to its OS thread
// (so the ring can be created SINGLE_ISSUER). Device 0's ring is set up by NewReader: its failure
// is what makes IOAuto fall back to pread. A later device whose ring cannot be set up is served
// by pread workers instead (logged once).
type uringBackend struct {
	r        *Reader
	mu       sync.Mutex
	ds       [MaxDevices]*uringDev
	failed   [MaxDevices]bool
	fallback *preadBackend
	wg       sync.WaitGroup
}

var _ backend = (*uringBackend)(nil)

// setupRing creates a ring; a variable so tests can make setup fail and exercise the fallback.
var setupRing = func(entries, flags uint32) (*giouring.Ring, error) {
	ring := giouring.NewRing()
	if err := ring.QueueInit(entries, flags); err != nil {
		return nil, err
	}
	return ring, nil
}

// ringFlagChoices lists setup flags from most to least preferred: DEFER_TASKRUN runs completion
// work only when we enter the kernel to wait (no interrupts of the submitting thread), which
// needs SINGLE_ISSUER (hence the locked thread). Older kernels refuse them with EINVAL.
func ringFlagChoices(sqpoll bool) []uint32 {
	if sqpoll {
		return []uint32{giouring.SetupSQPoll | giouring.SetupSingleIssuer, giouring.SetupSQPoll}
	}
	return []uint32{giouring.SetupSingleIssuer | giouring.SetupDeferTaskrun, giouring.SetupCoopTaskrun, 0}
}

func newUringBackend(r *Reader) (*uringBackend, error) {
	u := &uringBackend{r: r, fallback: newPreadBackend(r)}
	if _, err := u.startDev(0); err != nil {
		return nil, err
	}
	return u, nil
}

func (u *uringBackend) name() string { return IOUring }

// startDev creates device i's ring goroutine. Caller must not hold u.mu.
func (u *uringBackend) startDev(i int) (*uringDev, error) {
	d := &uringDev{u: u, notify: make(chan struct{}, 1)}
	ready := make(chan error, 1)
	u.wg.Add(1)
	go d.run(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	u.mu.Lock()
	u.ds[i] = d
	u.mu.Unlock()
	return d, nil
}

func (u *uringBackend) submit(device int, ops []*ioOp) {
	u.mu.Lock()
	d, failed := u.ds[device], u.failed[device]
	if d == nil && !failed {
		u.mu.Unlock()
		var err error
		if d, err = u.startDev(device); err != nil {
			u.r.logf(fmt.Sprintf("uring-dev-%d", device), "engine/storage: io_uring for device %d unavailable (%v); using pread workers for it", device, err)
			u.mu.Lock()
			u.failed[device] = true
			u.mu.Unlock()
		}
	} else {
		u.mu.Unlock()
	}
	if d == nil {
		u.fallback.submit(device, ops)
		return
	}
	d.mu.Lock()
	d.q = append(d.q, ops...)
	d.mu.Unlock()
	select {
	case d.notify <- struct{}{}:
	default:
	}
	d.wake()
}

// wake interrupts the ring goroutine's wait in the kernel (if it is waiting there) by writing the
// eventfd it polls, so new requests are issued at once rather than at the next completion (with
// 1 MiB reads that is a millisecond of lost queue depth).
func (d *uringDev) wake() {
	if d.sleeping.Load() && d.sleeping.Swap(false) {
		one := [8]byte{1}
		_, _ = unix.Write(d.efd, one[:])
	}
}

func (u *uringBackend) close() {
	u.mu.Lock()
	for _, d := range u.ds {
		if d != nil {
			d.mu.Lock()
			d.closed = true
			d.mu.Unlock()
			select {
			case d.notify <- struct{}{}:
			default:
			}
			d.wake()
		}
	}
	u.mu.Unlock()
	u.wg.Wait()
	u.fallback.close()
}

// uringDev is one device's queue and ring.
type uringDev struct {
	u      *uringBackend
	mu     sync.Mutex
	q      []*ioOp
	closed bool
	notify chan struct{} // wakes the goroutine when it waits with nothing in flight
	// sleeping is set while the goroutine waits in the kernel; efd is the eventfd it polls then.
	sleeping atomic.Bool
	efd      int

	// owned by the ring goroutine
	ring      *giouring.Ring
	fixedBufs bool
	regFiles  []bool // registered-file slots filled; nil: no table
}

// setup creates the ring and registers the arena and an empty file table (each optional: a
// failed registration is logged once and the ring works without it).
func (d *uringDev) setup() error {
	r := d.u.r
	var err error
	for _, fl := range ringFlagChoices(r.opts.SQPoll) {
		if d.ring, err = setupRing(uint32(r.opts.QueueDepth+1), fl); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("io_uring setup: %w", err)
	}
	if d.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		d.ring.QueueExit()
		return fmt.Errorf("eventfd: %w", err)
	}
	if arena := r.alloc.Arena(); r.opts.FixedBuffers && len(arena) > 0 {
		iov := []syscall.Iovec{{Base: &arena[0], Len: uint64(len(arena))}}
		if _, err := d.ring.RegisterBuffers(iov); err != nil {
			r.logf("fixedbufs", "engine/storage: registering %d-byte buffer arena failed (%v); reading without fixed buffers", len(arena), err)
		} else {
			d.fixedBufs = true
		}
	}
	if n := r.opts.RegisteredFiles; n > 0 {
		fds := make([]int32, n)
		for i := range fds {
			fds[i] = -1
		}
		if _, errno := d.ring.Register(d.ring.RingFd(), giouring.RegisterFiles, unsafe.Pointer(&fds[0]), uint32(n)); errno != 0 {
			r.logf("regfiles", "engine/storage: registering a %d-file table failed (%v); using plain descriptors", n, errno)
		} else {
			d.regFiles = make([]bool, n)
		}
	}
	return nil
}

// fileSlot returns the registered slot for f, registering it on first use, or -1.
func (d *uringDev) fileSlot(f *File) int {
	if f.id >= len(d.regFiles) {
		return -1
	}
	if !d.regFiles[f.id] {
		fd := int32(f.fd)
		up := giouring.FilesUpdate{Offset: uint32(f.id), Fds: uint64(uintptr(unsafe.Pointer(&fd)))}
		_, errno := d.ring.Register(d.ring.RingFd(), giouring.RegisterFilesUpdate, unsafe.Pointer(&up), 1)
		runtime.KeepAlive(&fd)
		if errno != 0 {
			d.u.r.logf("regfile-update", "engine/storage: registering %s failed (%v); using its plain descriptor", f.Path, errno)
			return -1
		}
		d.regFiles[f.id] = true
	}
	return f.id
}

// prep fills sqe to read the rest of op (from op.done) and tags it with slot.
func (d *uringDev) prep(sqe *giouring.SubmissionQueueEntry, op *ioOp, slot int) {
	dst := op.dst[op.done:]
	addr := uintptr(unsafe.Pointer(&dst[0])) // mmap'd memory: never moved by the GC
	off := uint64(op.off + op.done)
	*sqe = giouring.SubmissionQueueEntry{} // prep helpers leave some fields (rw_flags) as the slot's last user set them
	fd, fixedFile := op.f.fd, false
	if s := d.fileSlot(op.f); s >= 0 {
		fd, fixedFile = s, true
	}
	if d.fixedBufs && op.fixed {
		sqe.PrepareReadFixed(fd, addr, uint32(len(dst)), off, 0)
	} else {
		sqe.PrepareRead(fd, addr, uint32(len(dst)), off)
	}
	if fixedFile {
		sqe.Flags |= giouring.SqeFixedFile
	}
	sqe.SetData64(uint64(slot))
}

// wakeTag marks the eventfd poll's completion.
const wakeTag = ^uint64(0)

// run is the ring goroutine: keep up to QueueDepth requests in flight, submit and wait in one
// system call, reap completions in batches, push finished requests to the completion queue.
// New submissions are picked up between waits (at the latest when one request completes).
func (d *uringDev) run(ready chan<- error) {
	defer d.u.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.setup(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	defer unix.Close(d.efd)
	defer d.ring.QueueExit()

	r := d.u.r
	qd := r.opts.QueueDepth
	slots := make([]*ioOp, qd)
	free := make([]int, qd)
	for i := range free {
		free[i] = qd - 1 - i
	}
	var local, retry []*ioOp
	head := 0
	cqes := make([]*giouring.CompletionQueueEvent, qd)
	var done []Completion
	inflight := 0
	closed := false
	armed := false // a poll on efd is queued (one extra SQE/CQE beyond QueueDepth)
	for {
		if head == len(local) {
			clear(local)
			d.mu.Lock()
			local, d.q = d.q, local[:0]
			closed = d.closed
			d.mu.Unlock()
			head = 0
		}
		if inflight < qd && (len(retry) > 0 || head < len(local)) {
			now := r.clock.Now()
			for inflight < qd && (len(retry) > 0 || head < len(local)) {
				sqe := d.ring.GetSQE()
				if sqe == nil {
					break
				}
				var op *ioOp
				if n := len(retry); n > 0 {
					op, retry = retry[n-1], retry[:n-1]
				} else {
					op = local[head]
					local[head] = nil
					head++
				}
				slot := free[len(free)-1]
				free = free[:len(free)-1]
				slots[slot] = op
				d.prep(sqe, op, slot)
				op.b.markStart(now)
				inflight++
			}
		}
		if inflight == 0 {
			if closed {
				if armed { // the poll must complete before the ring goes away: wake it
					one := [8]byte{1}
					_, _ = unix.Write(d.efd, one[:])
					_, _ = d.ring.SubmitAndWait(1)
					armed = false
				}
				return
			}
			<-d.notify
			continue
		}
		if !armed {
			if sqe := d.ring.GetSQE(); sqe != nil {
				*sqe = giouring.SubmissionQueueEntry{}
				sqe.PreparePollAdd(d.efd, unix.POLLIN)
				sqe.SetData64(wakeTag)
				armed = true
			}
		}
		// Announce the wait, then look once more for work that raced with it.
		d.sleeping.Store(true)
		d.mu.Lock()
		more := len(d.q) > 0
		d.mu.Unlock()
		var err error
		if more && head == len(local) {
			d.sleeping.Store(false)
			_, err = d.ring.Submit()
		} else {
			for {
				_, err = d.ring.SubmitAndWait(1)
				if err == nil || !errors.Is(err, unix.EINTR) {
					break // EAGAIN/EBUSY (completion ring full) are resolved by reaping below
				}
			}
			d.sleeping.Store(false)
		}
		_ = err
		for {
			n := d.ring.PeekBatchCQE(cqes)
			if n == 0 {
				break
			}
			// One clock reading per batch of reads, none for a batch
			// holding only the wake-up's completion (an injected clock
			// counts its readings).
			var now time.Duration
			stamped := false
			for _, cqe := range cqes[:n] {
				if cqe.UserData == wakeTag {
					var v [8]byte
					_, _ = unix.Read(d.efd, v[:])
					armed = false
					continue
				}
				if !stamped {
					now, stamped = r.clock.Now(), true
				}
				slot, res := int(cqe.UserData), cqe.Res
				op := slots[slot]
				slots[slot] = nil
				free = append(free, slot)
				inflight--
				var again bool
				if res == -int32(unix.EINTR) || res == -int32(unix.EAGAIN) {
					again = true // transient: issue the same read again
				} else if res < 0 {
					again = op.advance(0, syscall.Errno(-res))
				} else {
					again = op.advance(int(res), nil)
				}
				if again {
					retry = append(retry, op)
				} else if op.finish(now) {
					done = append(done, op.b.completion())
				}
			}
			d.ring.CQAdvance(n)
		}
		if len(done) > 0 {
			r.cq.push(done...)
			clear(done)
			done = done[:0]
		}
	}
}
