package cluster

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"
	"unsafe"

	"gostachio/kernels/cpu"
)

func TestRecvClass(t *testing.T) {
	for _, c := range []struct{ n, class int }{
		{0, -1}, {16<<10 - 1, -1}, {16 << 10, 0}, {16<<10 + 1, 1}, {32 << 10, 1}, {1 << 20, 6}, {1<<30 + 1, -1},
	} {
		if got := recvClass(c.n); got != c.class {
			t.Errorf("recvClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
}

func TestRecvPoolRecyclesWithinLimit(t *testing.T) {
	p := &recvPool{limit: 96 << 10}
	a := p.get(20000)
	if len(a) != 20000 || cap(a) != 32<<10 {
		t.Fatalf("get(20000): len %d cap %d, want 20000 and 32 KiB", len(a), cap(a))
	}
	p.put(a)
	b := p.get(30000)
	if unsafe.SliceData(a) != unsafe.SliceData(b) {
		t.Error("a buffer of the same class was not reused")
	}
	if c := p.get(30000); unsafe.SliceData(c) == unsafe.SliceData(b) {
		t.Error("one buffer handed out twice")
	}
	// Idle memory stops at the limit: 3 × 32 KiB fit, the 4th is dropped.
	for range 4 {
		p.put(make([]byte, 32<<10))
	}
	if got := p.idle(); got != 96<<10 {
		t.Errorf("idle %d bytes, want the limit %d", got, 96<<10)
	}
	// Buffers not from get (cap not a class size) are not taken.
	p = &recvPool{limit: 1 << 30}
	p.put(make([]byte, 20000))
	if p.idle() != 0 {
		t.Error("a buffer of a size that is no class was pooled")
	}
}

// A frame read through a lease holds pooled memory until released; after
// Release the memory is recycled (poisoned here, so a reader that kept the
// batches would see it) and a second Release does nothing.
func TestLeaseOwnsFrameMemory(t *testing.T) {
	in := testBatch(5000) // int64/float64 columns of 40 000 bytes: pooled
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := writeFrame(bw, bw, frameHeader{query: 1, seq: 1}, []*cpu.Batch{in}); err != nil {
		t.Fatal(err)
	}
	h, err := readFrameHeader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	pool := &recvPool{limit: 1 << 30, poison: true}
	lease := &recvLease{pool: pool}
	outs, _, err := readBatches(&buf, h, lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRows(in, outs[0]); err != nil {
		t.Fatal(err)
	}
	if len(lease.bufs) == 0 {
		t.Fatal("no column section came from the pool")
	}
	copyOf := outs[0].Clone()
	lease.Release()
	if pool.idle() == 0 {
		t.Fatal("released memory did not go back to the pool")
	}
	poisoned := uint64(0xA5A5A5A5A5A5A5A5)
	if got := uint64(outs[0].Cols[0].I64[1]); got != poisoned {
		t.Errorf("released column holds %#x, want the poison %#x: its memory was not the pool's", got, poisoned)
	}
	if err := sameRows(in, copyOf); err != nil {
		t.Errorf("a clone shares memory with the released frame: %v", err)
	}
	idle := pool.idle()
	lease.Release()
	if pool.idle() != idle {
		t.Error("a second Release gave memory back again")
	}
}

// Over a data plane: memory the store still holds is never reused for a
// later frame; once released it is.
func TestDataPlaneRecyclesReleasedFrames(t *testing.T) {
	type held struct {
		b     *cpu.Batch
		lease *recvLease
	}
	got := make(chan held, 4)
	store := func(q, pipe, dev int, bs []*cpu.Batch, l *recvLease) error {
		got <- held{bs[0], l}
		return nil
	}
	a, b := planePair(t, 2*time.Second, store)
	defer a.close()
	defer b.close()
	b.recv.poison = true
	send := func(batch *cpu.Batch) held {
		t.Helper()
		if err := a.send(context.Background(), 1, 1, 0, 0, []*cpu.Batch{batch}); err != nil {
			t.Fatal(err)
		}
		return <-got
	}
	first, second := testBatch(4000), testBatch(4000)
	for i := range second.Cols[0].I64 {
		second.Cols[0].I64[i] = -int64(i)
	}
	h1 := send(first)
	h2 := send(second)
	if err := sameRows(first, h1.b); err != nil {
		t.Fatalf("a held frame was overwritten by the next: %v", err)
	}
	if err := sameRows(second, h2.b); err != nil {
		t.Fatal(err)
	}
	reused := recvReused.Load()
	h1.lease.Release()
	h3 := send(second)
	if recvReused.Load() == reused {
		t.Error("a released frame's memory was not reused")
	}
	if err := sameRows(second, h3.b); err != nil {
		t.Fatalf("frame read into recycled memory: %v", err)
	}
	h2.lease.Release()
	h3.lease.Release()
}
