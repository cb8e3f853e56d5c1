package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/kernels/cpu"
)

// PeerError is a failure of the exchange with another worker: its data
// connection broke, stalled past the timeout, or it rejected a frame.
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("exchange with worker %d: %v", e.Rank, e.Err) }
func (e *PeerError) Unwrap() error { return e.Err }

// Transports of the data plane (Options.Transport).
const (
	// TransportTCP carries frames on the TCP data connections (default).
	TransportTCP = "tcp"
	// TransportRDMA carries frames as RDMA sends on reliable-connected
	// queue pairs; the TCP data connections carry the hello, the queue
	// pairs' addresses and the acks. Needs a build with the rdma tag.
	TransportRDMA = "rdma"
)

// storeFunc takes an inbound frame's batches for pipeline pipe, device dev
// of query q. On success it owns them and lease, the memory they were read
// into, and must call lease.Release once nothing reads the batches any
// more (never releasing only costs the recycling). On error the data plane
// releases the lease and sends the error back to the sender in the ack.
type storeFunc func(q, pipe, dev int, batches []*cpu.Batch, lease *recvLease) error

// Exchange is a worker's data plane: it moves batches to the other
// workers and stores theirs. Its implementations are in this package
// (TCP: dataPlane; RDMA: exchange_rdma.go).
type Exchange interface {
	// connect opens the exchange to every other worker (addrs by rank,
	// this worker's own entry ignored), retrying until deadline, and
	// returns once every other worker has connected here too.
	connect(ctx context.Context, addrs []string, dial dialFunc, deadline time.Time) error
	// send moves batches of query q to device dev of pipeline pipe on
	// worker node and returns once that worker stored them (nil) or
	// failed (a *PeerError, or the context's cause).
	send(ctx context.Context, q, node, pipe, dev int, batches []*cpu.Batch) error
	// close ends every connection and waits for the exchange's
	// goroutines; sends in flight fail.
	close()
}

// newExchange opens the data plane of the given transport ("" is TCP) on
// the listener ln, which it owns from then on (closed on error too).
// store and log are as for newDataPlane. The result is nil on error.
func newExchange(transport string, rank, world int, ln net.Listener, timeout time.Duration,
	store storeFunc, log func(string, ...any)) (Exchange, error) {
	switch transport {
	case "", TransportTCP:
		return newDataPlane(rank, world, ln, timeout, store, log), nil
	case TransportRDMA:
		ex, err := newRDMAExchange(rank, world, ln, timeout, store, log)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return ex, nil
	}
	ln.Close()
	return nil, fmt.Errorf("cluster: unknown transport %q (want %s or %s)", transport, TransportTCP, TransportRDMA)
}

// carrier moves the frames of data connections. The TCP connection of a
// data connection always carries the hello (and whatever the carrier
// exchanges right after it) and, back to the sender, the acks; the frames
// go where the carrier says.
type carrier interface {
	// outbound prepares frames to worker peer on c, whose hello was sent,
	// and returns their writer (each Write may be sent at once) and what
	// ends them.
	outbound(c net.Conn, peer int, timeout time.Duration) (io.Writer, io.Closer, error)
	// inbound prepares frames from worker peer on c, whose hello was read
	// through br, which reads through dc (c with its deadlines), and
	// returns their source and what ends them.
	inbound(c net.Conn, dc *deadlineConn, br *bufio.Reader, peer int) (frameSource, io.Closer, error)
}

// frameSource is the reading end of a data connection's frames.
type frameSource interface {
	io.Reader
	// setIdle: the next reads wait for a frame to begin (true: without a
	// deadline) or are inside one (false: within the timeout).
	setIdle(idle bool)
}

// tcpCarrier sends the frames on the TCP connection itself.
type tcpCarrier struct{}

func (tcpCarrier) outbound(c net.Conn, _ int, timeout time.Duration) (io.Writer, io.Closer, error) {
	return &deadlineConn{c: c, timeout: timeout}, nopCloser{}, nil
}

func (tcpCarrier) inbound(_ net.Conn, dc *deadlineConn, br *bufio.Reader, _ int) (frameSource, io.Closer, error) {
	return tcpSource{br, dc}, nopCloser{}, nil
}

type tcpSource struct {
	*bufio.Reader
	dc *deadlineConn
}

func (s tcpSource) setIdle(idle bool) { s.dc.idle = idle }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// dataPlane is one worker's exchange endpoint: a listener for the other
// workers' data connections (inbound: frames in, acks out) and one
// connection of its own to each other worker (outbound: frames out, acks
// in). Frames of a connection are written whole, one at a time.
type dataPlane struct {
	rank, world int
	timeout     time.Duration
	ln          net.Listener
	carry       carrier
	// store puts an inbound frame's batches into the backend of query q;
	// an error goes back to the sender in the ack.
	store storeFunc
	// recv recycles the memory of inbound frames (see recvpool.go).
	recv *recvPool
	log  func(format string, args ...any)

	out []*outLink

	mu      sync.Mutex
	in      map[int]net.Conn
	inReady chan struct{} // closed once every other worker connected
	closed  bool
	wg      sync.WaitGroup

	sentBytes, recvBytes atomic.Int64
}

func newDataPlane(rank, world int, ln net.Listener, timeout time.Duration,
	store storeFunc, log func(string, ...any)) *dataPlane {
	return newDataPlaneOn(tcpCarrier{}, rank, world, ln, timeout, store, log)
}

// newDataPlaneOn is newDataPlane with the frames on carrier carry.
func newDataPlaneOn(carry carrier, rank, world int, ln net.Listener, timeout time.Duration,
	store storeFunc, log func(string, ...any)) *dataPlane {
	dp := &dataPlane{rank: rank, world: world, timeout: timeout, ln: ln, carry: carry, store: store, recv: newRecvPool(), log: log,
		out: make([]*outLink, world), in: map[int]net.Conn{}, inReady: make(chan struct{})}
	if world == 1 {
		close(dp.inReady)
	}
	dp.wg.Add(1)
	go dp.accept()
	return dp
}

// accept takes the other workers' data connections until closed.
func (dp *dataPlane) accept() {
	defer dp.wg.Done()
	for {
		c, err := dp.ln.Accept()
		if err != nil {
			return
		}
		dp.wg.Add(1)
		go dp.serveInbound(c)
	}
}

// serveInbound reads frames from one worker and acknowledges each once
// stored.
func (dp *dataPlane) serveInbound(c net.Conn) {
	defer dp.wg.Done()
	defer c.Close()
	dc := &deadlineConn{c: c, timeout: dp.timeout}
	// A read buffer smaller than the sent-as-is sections: bufio hands a
	// read of at least its size straight to the connection, so those land
	// in the column without a copy.
	br := bufio.NewReaderSize(dc, inlineMax)
	bw := bufio.NewWriterSize(dc, 4<<10)
	from, err := readHello(br)
	if err != nil {
		dp.log("data connection from %s: %v", c.RemoteAddr(), err)
		return
	}
	dp.mu.Lock()
	if dp.closed || from < 0 || from >= dp.world || from == dp.rank || dp.in[from] != nil {
		dp.mu.Unlock()
		dp.log("data connection from %s: unexpected worker %d", c.RemoteAddr(), from)
		return
	}
	dp.mu.Unlock()
	src, end, err := dp.carry.inbound(c, dc, br, from)
	if err != nil {
		dp.log("data connection from worker %d (%s): %v", from, c.RemoteAddr(), err)
		return
	}
	defer end.Close()
	dp.mu.Lock()
	if dp.closed || dp.in[from] != nil {
		dp.mu.Unlock()
		dp.log("data connection from %s: unexpected worker %d", c.RemoteAddr(), from)
		return
	}
	dp.in[from] = c
	if len(dp.in) == dp.world-1 {
		close(dp.inReady)
	}
	dp.mu.Unlock()
	for {
		src.setIdle(true)
		h, err := readFrameHeader(src)
		src.setIdle(false)
		if err != nil {
			return
		}
		lease := &recvLease{pool: dp.recv}
		batches, n, err := readBatches(src, h, lease)
		var de *dataError
		if err != nil && !errors.As(err, &de) {
			// The connection broke mid-frame: the sender sees it.
			lease.Release()
			return
		}
		dp.recvBytes.Add(n)
		msg := ""
		if err != nil {
			lease.Release()
			msg = err.Error()
		} else if err := dp.store(int(h.query), int(h.pipe), int(h.dev), batches, lease); err != nil {
			lease.Release()
			msg = err.Error()
		}
		if err := writeAck(bw, h.seq, msg); err != nil {
			return
		}
		if de != nil {
			// The stream position is lost after a malformed frame.
			return
		}
	}
}

// connect opens this worker's data connections to every other worker
// (addrs by rank), retrying until deadline, and waits until every other
// worker has connected here.
func (dp *dataPlane) connect(ctx context.Context, addrs []string, dial dialFunc, deadline time.Time) error {
	for r, addr := range addrs {
		if r == dp.rank {
			continue
		}
		c, err := dialRetry(ctx, dial, addr, deadline)
		if err != nil {
			return &PeerError{Rank: r, Err: fmt.Errorf("connect to %s: %w", addr, err)}
		}
		l := &outLink{dp: dp, rank: r, conn: c, waits: map[uint64]chan string{}}
		hw := bufio.NewWriterSize(&deadlineConn{c: c, timeout: dp.timeout}, 64)
		err = writeHello(hw, dp.rank)
		if err == nil {
			err = hw.Flush()
		}
		var fw io.Writer
		if err == nil {
			fw, l.end, err = dp.carry.outbound(c, r, dp.timeout)
		}
		if err != nil {
			c.Close()
			return &PeerError{Rank: r, Err: fmt.Errorf("connect to %s: %w", addr, err)}
		}
		l.fw, l.bw = fw, bufio.NewWriterSize(fw, 1<<20)
		dp.mu.Lock()
		if dp.closed {
			dp.mu.Unlock()
			c.Close()
			l.end.Close()
			return errors.New("cluster: data plane closed")
		}
		dp.out[r] = l
		dp.mu.Unlock()
		dp.wg.Add(1)
		go l.readAcks()
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-dp.inReady:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		dp.mu.Lock()
		defer dp.mu.Unlock()
		for r := range dp.world {
			if r != dp.rank && dp.in[r] == nil {
				return &PeerError{Rank: r, Err: errors.New("did not open its data connection in time")}
			}
		}
		return errors.New("cluster: data connections incomplete")
	}
}

// close shuts every connection and waits for the plane's goroutines.
func (dp *dataPlane) close() {
	dp.mu.Lock()
	dp.closed = true
	dp.ln.Close()
	for _, c := range dp.in {
		c.Close()
	}
	for _, l := range dp.out {
		if l != nil {
			l.fail(errors.New("data plane closed"))
		}
	}
	dp.mu.Unlock()
	dp.wg.Wait()
	// Senders fail once their link failed; the carriers' ends wait for a
	// write in progress.
	for _, l := range dp.out {
		if l != nil {
			l.end.Close()
		}
	}
}

// send moves batches of query q to device dev of worker node and waits
// for its acknowledgement.
func (dp *dataPlane) send(ctx context.Context, q, node, pipe, dev int, batches []*cpu.Batch) error {
	if node < 0 || node >= dp.world || node == dp.rank || dp.out[node] == nil {
		return fmt.Errorf("cluster: worker %d has no data connection to worker %d", dp.rank, node)
	}
	for _, b := range batches {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("cluster: batch for worker %d: %w", node, err)
		}
	}
	return dp.out[node].send(ctx, frameHeader{query: uint32(q), pipe: uint32(pipe), dev: uint32(dev)}, batches)
}

// outLink is this worker's data connection to one other worker.
type outLink struct {
	dp   *dataPlane
	rank int
	conn net.Conn
	end  io.Closer  // ends the carrier's frames (after conn closed)
	wmu  sync.Mutex // held while a frame is written
	fw   io.Writer  // the carrier's frame writer (vectored on TCP)
	bw   *bufio.Writer

	mu    sync.Mutex
	seq   uint64
	waits map[uint64]chan string
	err   error
}

func (l *outLink) send(ctx context.Context, h frameHeader, batches []*cpu.Batch) error {
	ch := make(chan string, 1)
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return &PeerError{Rank: l.rank, Err: err}
	}
	l.seq++
	h.seq = l.seq
	l.waits[h.seq] = ch
	l.mu.Unlock()
	l.wmu.Lock()
	err := writeFrame(l.fw, l.bw, h, batches)
	l.wmu.Unlock()
	if err != nil {
		l.fail(fmt.Errorf("send: %w", err))
		return &PeerError{Rank: l.rank, Err: l.failure()}
	}
	var n int64
	for _, b := range batches {
		n += b.Bytes()
	}
	l.dp.sentBytes.Add(n)
	t := time.NewTimer(l.dp.timeout)
	defer t.Stop()
	select {
	case msg, ok := <-ch:
		if !ok {
			return &PeerError{Rank: l.rank, Err: l.failure()}
		}
		if msg != "" {
			return &PeerError{Rank: l.rank, Err: fmt.Errorf("rejected data: %s", msg)}
		}
		return nil
	case <-t.C:
		l.fail(fmt.Errorf("no acknowledgement within %v", l.dp.timeout))
		return &PeerError{Rank: l.rank, Err: l.failure()}
	case <-ctx.Done():
		l.mu.Lock()
		delete(l.waits, h.seq)
		l.mu.Unlock()
		return context.Cause(ctx)
	}
}

func (l *outLink) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// fail marks the link broken (first error wins), closes it and releases
// every waiting sender.
func (l *outLink) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = err
	l.conn.Close()
	for s, ch := range l.waits {
		close(ch)
		delete(l.waits, s)
	}
}

func (l *outLink) readAcks() {
	defer l.dp.wg.Done()
	br := bufio.NewReaderSize(l.conn, 4<<10)
	for {
		seq, msg, err := readAck(br)
		if err != nil {
			l.fail(fmt.Errorf("connection lost: %w", err))
			return
		}
		l.mu.Lock()
		ch := l.waits[seq]
		delete(l.waits, seq)
		l.mu.Unlock()
		if ch != nil {
			ch <- msg
		}
	}
}

// dialFunc opens a TCP connection (Options.Dial).
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialRetry dials addr until it answers, backing off from 20 ms to 1 s,
// until deadline.
func dialRetry(ctx context.Context, dial dialFunc, addr string, deadline time.Time) (net.Conn, error) {
	wait := 20 * time.Millisecond
	for {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		c, err := dial(dctx, "tcp", addr)
		cancel()
		if err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetNoDelay(true)
			}
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("gave up at the deadline: %w", err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		wait = min(2*wait, time.Second)
	}
}
