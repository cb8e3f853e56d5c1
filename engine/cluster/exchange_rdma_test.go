//go:build rdma && cgo

package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"gostachio/engine/rdma"
	"gostachio/kernels/cpu"
)

// memRing is one end of an in-memory queue pair: a send is delivered into
// the peer's oldest posted receive only when either side polls, reading
// the send's slot then (as a device reads it some time before the
// completion), so a writer that reuses a slot before its send completed
// delivers the wrong bytes. A send waits while the peer has no receive
// posted (receive-not-ready); one longer than the receive fails both.
type memRing struct {
	mu   *sync.Mutex // shared by the pair
	peer *memRing
	buf  []byte

	sends    []memWR // posted, not delivered
	recvs    []memWR // posted, not filled
	sendDone []rdma.Completion
	recvDone []rdma.Completion
	err      error
	closed   bool
}

type memWR struct {
	off, n int
	id     uint64
}

func memRingPair() (*memRing, *memRing) {
	mu := &sync.Mutex{}
	a := &memRing{mu: mu, buf: make([]byte, rdmaSlots*rdmaSlot)}
	b := &memRing{mu: mu, buf: make([]byte, rdmaSlots*rdmaSlot)}
	a.peer, b.peer = b, a
	return a, b
}

func (r *memRing) bytes() []byte { return r.buf }

func (r *memRing) post(q *[]memWR, off, n int, id uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("posted to a closed queue pair")
	}
	if off < 0 || n <= 0 || off+n > len(r.buf) {
		return fmt.Errorf("work request [%d, %d) outside the ring", off, off+n)
	}
	if len(*q) >= rdmaSlots {
		return errors.New("queue full")
	}
	*q = append(*q, memWR{off, n, id})
	return nil
}

func (r *memRing) postSend(off, n int, id uint64) error { return r.post(&r.sends, off, n, id) }
func (r *memRing) postRecv(off, n int, id uint64) error { return r.post(&r.recvs, off, n, id) }

// deliver moves r's sends into the peer's receives (r.mu held).
func (r *memRing) deliver() {
	p := r.peer
	for len(r.sends) > 0 && len(p.recvs) > 0 && r.err == nil {
		s, d := r.sends[0], p.recvs[0]
		r.sends, p.recvs = r.sends[1:], p.recvs[1:]
		if s.n > d.n {
			r.err = fmt.Errorf("send of %d bytes into a receive of %d", s.n, d.n)
			p.err = r.err
			return
		}
		copy(p.buf[d.off:d.off+s.n], r.buf[s.off:s.off+s.n])
		r.sendDone = append(r.sendDone, rdma.Completion{ID: s.id})
		p.recvDone = append(p.recvDone, rdma.Completion{ID: d.id, Bytes: s.n})
	}
}

func (r *memRing) poll(done *[]rdma.Completion) (rdma.Completion, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deliver()
	r.peer.deliver()
	if r.err != nil {
		return rdma.Completion{}, false, r.err
	}
	if len(*done) == 0 {
		return rdma.Completion{}, false, nil
	}
	c := (*done)[0]
	*done = (*done)[1:]
	return c, true, nil
}

func (r *memRing) pollSend() (rdma.Completion, bool, error) { return r.poll(&r.sendDone) }
func (r *memRing) pollRecv() (rdma.Completion, bool, error) { return r.poll(&r.recvDone) }

func (r *memRing) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// TestRDMARingFrames sends frames, one larger than the whole ring, through
// the RDMA writer and reader over an in-memory queue pair and compares
// what arrives with what was sent.
func TestRDMARingFrames(t *testing.T) {
	a, b := memRingPair()
	for s := range rdmaSlots {
		if err := b.postRecv(s*rdmaSlot, rdmaSlot, uint64(s)); err != nil {
			t.Fatal(err)
		}
	}
	tcpA, tcpB := net.Pipe()
	defer tcpA.Close()
	w := &rdmaWriter{ring: a, timeout: 10 * time.Second}
	r := newRDMAReader(b, tcpB, 10*time.Second)

	frames := [][]*cpu.Batch{
		{testBatch(3)},
		{testBatch(120000)}, // ~5 MiB: wraps the 4 MiB ring
		{testBatch(0), testBatch(1), sliceRows(testBatch(5000), 1000, 4321)},
		{testBatch(7000)},
	}
	if n := payloadBytes(frames[1]); n <= rdmaSlots*rdmaSlot {
		t.Fatalf("frame of %d bytes does not wrap the ring", n)
	}
	errc := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(w, 1<<20)
		for i, f := range frames {
			if err := writeFrame(bw, bw, frameHeader{query: 1, seq: uint64(i + 1), pipe: 2, dev: 3}, f); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i, f := range frames {
		r.setIdle(true)
		h, err := readFrameHeader(r)
		r.setIdle(false)
		if err != nil {
			t.Fatalf("frame %d header: %v", i, err)
		}
		if h.seq != uint64(i+1) || h.query != 1 || h.pipe != 2 || h.dev != 3 {
			t.Fatalf("frame %d header %+v", i, h)
		}
		got, _, err := readBatches(r, h, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if len(got) != len(f) {
			t.Fatalf("frame %d: %d batches, sent %d", i, len(got), len(f))
		}
		for j := range f {
			if err := sameRows(got[j], f[j]); err != nil {
				t.Fatalf("frame %d batch %d: %v", i, j, err)
			}
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	// The sender's TCP connection ends: a reader waiting for the next
	// frame gives up.
	done := make(chan error, 1)
	go func() {
		r.setIdle(true)
		_, err := readFrameHeader(r)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	tcpA.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read a frame from a closed link")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader did not notice the sender's end")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
}

// TestRDMAWriterTimeout: a receiver that posts no receive holds the
// sender, which fails after its timeout once the ring is full.
func TestRDMAWriterTimeout(t *testing.T) {
	a, _ := memRingPair()
	w := &rdmaWriter{ring: a, timeout: 50 * time.Millisecond}
	defer w.Close()
	_, err := w.Write(make([]byte, (rdmaSlots+1)*rdmaSlot))
	if err == nil {
		t.Fatal("write into a stalled receiver succeeded")
	}
}
