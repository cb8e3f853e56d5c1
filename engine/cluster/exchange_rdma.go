//go:build rdma && cgo

package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/engine/rdma"
)

// The RDMA exchange is the TCP data plane with its frames moved to RDMA:
// each data connection (one per ordered pair of workers) gets a
// reliable-connected queue pair at either end, whose addresses the two
// workers trade on the TCP connection right after the hello. The sender
// copies a frame's bytes into a ring of registered slots and posts each
// slot as one send; the receiver keeps a ring of as many receives posted
// and reads the frame out of them as a byte stream (RC delivers in
// order), so wire.go's format and the TCP acks are unchanged. A receiver
// that falls behind holds the sender with receive-not-ready retries
// (rnr_retry 7: without limit); the sender's timeout bounds the wait.
//
// Device choice (environment of each worker):
//
//	GOSTACHIO_RDMA_DEVICE     device name (default: the one nearest
//	                          GOSTACHIO_RDMA_GPU, else the first with an
//	                          active port)
//	GOSTACHIO_RDMA_GPU        PCI address of the GPU to be near
//	GOSTACHIO_RDMA_GID_INDEX  GID index (default: rdma.GIDIndex)
const (
	rdmaSlot  = 256 << 10 // bytes per send / receive
	rdmaSlots = 16        // slots per ring (each direction of a link)
)

// rdmaExchange is the data plane over RDMA verbs.
type rdmaExchange struct {
	*dataPlane
	dev *rdma.Context
}

func newRDMAExchange(rank, world int, ln net.Listener, timeout time.Duration,
	store storeFunc, log func(string, ...any)) (Exchange, error) {
	d, port, err := rdma.Choose(os.Getenv("GOSTACHIO_RDMA_DEVICE"), os.Getenv("GOSTACHIO_RDMA_GPU"))
	if err != nil {
		return nil, fmt.Errorf("cluster: transport rdma: %w", err)
	}
	gid := 0
	if s := os.Getenv("GOSTACHIO_RDMA_GID_INDEX"); s != "" {
		if gid, err = strconv.Atoi(s); err != nil || gid < 0 {
			return nil, fmt.Errorf("cluster: transport rdma: GOSTACHIO_RDMA_GID_INDEX=%q is not a GID index", s)
		}
	} else if gid, err = rdma.GIDIndex(d.Name, port.Num); err != nil {
		return nil, fmt.Errorf("cluster: transport rdma: %w", err)
	}
	ctx, err := rdma.Open(d.Name, port.Num, gid)
	if err != nil {
		return nil, fmt.Errorf("cluster: transport rdma: %w", err)
	}
	log("data plane on RDMA device %s port %d (GID index %d)", d.Name, port.Num, gid)
	return &rdmaExchange{dataPlane: newDataPlaneOn(rdmaCarrier{ctx}, rank, world, ln, timeout, store, log), dev: ctx}, nil
}

func (x *rdmaExchange) close() {
	x.dataPlane.close()
	if err := x.dev.Close(); err != nil {
		x.log("%v", err)
	}
}

// rdmaCarrier sets up a queue pair per data connection.
type rdmaCarrier struct{ dev *rdma.Context }

// ring is one end of a data connection: a queue pair and the registered
// ring of slots its work requests use (an interface so that tests can run
// the writer and reader over memory).
type ring interface {
	// bytes is the ring's memory, rdmaSlots slots of rdmaSlot bytes.
	bytes() []byte
	postSend(off, n int, id uint64) error
	postRecv(off, n int, id uint64) error
	pollSend() (rdma.Completion, bool, error)
	pollRecv() (rdma.Completion, bool, error)
	close() error
}

// qpRing is a ring over a verbs queue pair.
type qpRing struct {
	qp *rdma.QP
	mr *rdma.MR
}

func (r qpRing) bytes() []byte                            { return r.mr.Bytes()[:rdmaSlots*rdmaSlot] }
func (r qpRing) postSend(off, n int, id uint64) error     { return r.qp.PostSend(r.mr, off, n, id) }
func (r qpRing) postRecv(off, n int, id uint64) error     { return r.qp.PostRecv(r.mr, off, n, id) }
func (r qpRing) pollSend() (rdma.Completion, bool, error) { return r.qp.PollSend() }
func (r qpRing) pollRecv() (rdma.Completion, bool, error) { return r.qp.PollRecv() }

// close destroys the queue pair (flushing its work requests) before
// freeing the memory they used.
func (r qpRing) close() error { return errors.Join(r.qp.Close(), r.mr.Close()) }

// link is one end of a data connection's queue pair with its ring.
func (rc rdmaCarrier) link() (*rdma.QP, *rdma.MR, error) {
	qp, err := rc.dev.NewQP(rdmaSlots, rdmaSlots)
	if err != nil {
		return nil, nil, err
	}
	mr, err := rc.dev.Register(rdmaSlots * rdmaSlot)
	if err != nil {
		qp.Close()
		return nil, nil, err
	}
	return qp, mr, nil
}

// outbound: this worker (the sender) sends its queue pair's address,
// the receiver answers with its own once its receives are posted and its
// queue pair is ready to receive.
func (rc rdmaCarrier) outbound(c net.Conn, peer int, timeout time.Duration) (io.Writer, io.Closer, error) {
	qp, mr, err := rc.link()
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (io.Writer, io.Closer, error) {
		qp.Close()
		mr.Close()
		return nil, nil, fmt.Errorf("queue pair to worker %d: %w", peer, err)
	}
	c.SetDeadline(time.Now().Add(timeout))
	if err := writeEndpoint(c, qp.Endpoint()); err != nil {
		return fail(err)
	}
	remote, err := readEndpoint(c)
	if err != nil {
		return fail(err)
	}
	// The acks are read without a deadline (outLink.readAcks).
	c.SetDeadline(time.Time{})
	if err := qp.Connect(remote); err != nil {
		return fail(err)
	}
	w := &rdmaWriter{ring: qpRing{qp, mr}, timeout: timeout}
	return w, w, nil
}

func (rc rdmaCarrier) inbound(c net.Conn, dc *deadlineConn, br *bufio.Reader, peer int) (frameSource, io.Closer, error) {
	qp, mr, err := rc.link()
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (frameSource, io.Closer, error) {
		qp.Close()
		mr.Close()
		return nil, nil, fmt.Errorf("queue pair from worker %d: %w", peer, err)
	}
	remote, err := readEndpoint(br)
	if err != nil {
		return fail(err)
	}
	for s := range rdmaSlots {
		if err := qp.PostRecv(mr, s*rdmaSlot, rdmaSlot, uint64(s)); err != nil {
			return fail(err)
		}
	}
	if err := qp.Connect(remote); err != nil {
		return fail(err)
	}
	if err := writeEndpoint(dc, qp.Endpoint()); err != nil {
		return fail(err)
	}
	r := newRDMAReader(qpRing{qp, mr}, c, dc.timeout)
	return r, r, nil
}

func writeEndpoint(w io.Writer, e rdma.Endpoint) error {
	b, err := e.MarshalBinary()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func readEndpoint(r io.Reader) (rdma.Endpoint, error) {
	b := make([]byte, rdma.EndpointBytes)
	var e rdma.Endpoint
	if _, err := io.ReadFull(r, b); err != nil {
		return e, err
	}
	return e, e.UnmarshalBinary(b)
}

// rdmaWriter posts a frame's bytes as sends, rdmaSlot bytes at most each,
// copied into the next free slot of its ring. Write returns once every
// byte is posted; a slot is reused after its send completed.
type rdmaWriter struct {
	ring    ring
	timeout time.Duration
	closed  atomic.Bool

	mu     sync.Mutex // held by Write and Close
	posted uint64     // sends posted (the next one's id)
	done   uint64     // sends completed (in order: one queue pair)
	err    error      // sticky
	freed  bool       // resources freed (Close)
}

func (w *rdmaWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for n < len(p) {
		if w.err == nil && w.freed {
			w.err = errors.New("rdma link closed")
		}
		if w.err != nil {
			return n, w.err
		}
		if w.posted-w.done == rdmaSlots {
			if _, err := awaitCompletion(w.ring.pollSend, time.Now().Add(w.timeout), &w.closed, false); err != nil {
				w.err = err
				continue
			}
			w.done++
			continue
		}
		off := int(w.posted%rdmaSlots) * rdmaSlot
		k := copy(w.ring.bytes()[off:off+rdmaSlot], p[n:])
		if err := w.ring.postSend(off, k, w.posted); err != nil {
			w.err = err
			continue
		}
		w.posted++
		n += k
	}
	return n, nil
}

// Close frees the queue pair and the ring once no Write runs; a Write
// waiting for a send completion gives up first.
func (w *rdmaWriter) Close() error {
	w.closed.Store(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.freed {
		return nil
	}
	w.freed = true
	return w.ring.close()
}

// rdmaReader reads a data connection's frames out of its receive ring.
type rdmaReader struct {
	ring    ring
	timeout time.Duration
	idle    bool
	conn    net.Conn
	watched chan struct{} // closed when watch returned
	closed  atomic.Bool   // set by Close or when the sender is gone

	cur  []byte // unread bytes of the slot held
	slot int    // the slot held (when held)
	held bool
}

// newRDMAReader reads frames out of ring, whose receives are posted, and
// watches c, the data connection's TCP connection: the sender writes
// nothing more on it, so its end (or a byte) means the sender is gone,
// which a receive would not learn.
func newRDMAReader(ring ring, c net.Conn, timeout time.Duration) *rdmaReader {
	r := &rdmaReader{ring: ring, timeout: timeout, conn: c, watched: make(chan struct{})}
	go r.watch()
	return r
}

// watch marks the reader closed when the TCP connection ends or carries
// anything (the sender never writes on it after the handshake).
func (r *rdmaReader) watch() {
	defer close(r.watched)
	var b [1]byte
	r.conn.Read(b[:])
	r.closed.Store(true)
}

func (r *rdmaReader) setIdle(idle bool) { r.idle = idle }

func (r *rdmaReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.held {
			// The slot is read: offer it to the sender again.
			r.held = false
			if err := r.ring.postRecv(r.slot*rdmaSlot, rdmaSlot, uint64(r.slot)); err != nil {
				return 0, err
			}
		}
		var dl time.Time
		if !r.idle {
			dl = time.Now().Add(r.timeout)
		}
		c, err := awaitCompletion(r.ring.pollRecv, dl, &r.closed, r.idle)
		if err != nil {
			return 0, err
		}
		if c.ID >= rdmaSlots || c.Bytes > rdmaSlot {
			return 0, fmt.Errorf("rdma receive completion for slot %d of %d bytes", c.ID, c.Bytes)
		}
		r.slot, r.held = int(c.ID), true
		r.cur = r.ring.bytes()[r.slot*rdmaSlot : r.slot*rdmaSlot+c.Bytes]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close ends the TCP connection (so watch returns), then frees the queue
// pair and the ring. Called once, by serveInbound after its last Read.
func (r *rdmaReader) Close() error {
	r.closed.Store(true)
	r.conn.Close()
	<-r.watched
	return r.ring.close()
}

// awaitCompletion polls until a completion, the deadline (zero: none) or
// closed. Polling spins briefly, then sleeps, longer when idle (waiting
// for a frame to begin) than within a frame, so that an idle link costs
// little CPU and a busy one little latency.
func awaitCompletion(poll func() (rdma.Completion, bool, error), deadline time.Time, closed *atomic.Bool, idle bool) (rdma.Completion, error) {
	maxSleep := 50 * time.Microsecond
	if idle {
		maxSleep = time.Millisecond
	}
	sleep := time.Duration(0)
	for spins := 0; ; spins++ {
		c, ok, err := poll()
		if err != nil {
			return c, err
		}
		if ok {
			return c, nil
		}
		if closed.Load() {
			return c, errors.New("rdma link closed")
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return c, errors.New("rdma completion timed out")
		}
		switch {
		case spins < 64:
			runtime.Gosched()
		default:
			sleep = min(max(2*sleep, 5*time.Microsecond), maxSleep)
			time.Sleep(sleep)
		}
	}
}
