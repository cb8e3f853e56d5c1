package storage

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// preadBackend runs device requests on Options.Workers goroutines per device, each doing
// blocking pread calls: the portable fallback when io_uring is unavailable. Queue depth per
// device equals the number of workers.
type preadBackend struct {
	r  *Reader
	mu sync.Mutex
	ds [MaxDevices]*preadDev
	wg sync.WaitGroup
}

var _ backend = (*preadBackend)(nil)

type preadDev struct {
	mu     sync.Mutex
	cond   sync.Cond
	q      []*ioOp
	head   int
	closed bool
}

func newPreadBackend(r *Reader) *preadBackend { return &preadBackend{r: r} }

func (p *preadBackend) name() string { return IOPread }

// dev returns device i's queue, starting its workers on first use.
func (p *preadBackend) dev(i int) *preadDev {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.ds[i]; d != nil {
		return d
	}
	d := &preadDev{}
	d.cond.L = &d.mu
	p.ds[i] = d
	for w := 0; w < p.r.opts.Workers; w++ {
		p.wg.Add(1)
		go p.work(d)
	}
	return d
}

func (p *preadBackend) submit(device int, ops []*ioOp) {
	d := p.dev(device)
	d.mu.Lock()
	d.q = append(d.q, ops...)
	d.mu.Unlock()
	if len(ops) == 1 {
		d.cond.Signal()
	} else {
		d.cond.Broadcast()
	}
}

func (p *preadBackend) work(d *preadDev) {
	defer p.wg.Done()
	clock := p.r.clock
	for {
		d.mu.Lock()
		for d.head == len(d.q) && !d.closed {
			d.cond.Wait()
		}
		if d.head == len(d.q) {
			d.mu.Unlock()
			return
		}
		op := d.q[d.head]
		d.q[d.head] = nil
		d.head++
		if d.head == len(d.q) {
			d.q, d.head = d.q[:0], 0
		}
		d.mu.Unlock()

		op.b.markStart(clock.Now())
		for {
			n, err := unix.Pread(op.f.fd, op.dst[op.done:], op.off+op.done)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if n < 0 {
				n = 0
			}
			if !op.advance(n, err) {
				break
			}
		}
		if op.finish(clock.Now()) {
			p.r.cq.push(op.b.completion())
		}
	}
}

func (p *preadBackend) close() {
	p.mu.Lock()
	for _, d := range p.ds {
		if d != nil {
			d.mu.Lock()
			d.closed = true
			d.mu.Unlock()
			d.cond.Broadcast()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}
