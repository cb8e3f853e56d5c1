package alloc

import (
	"testing"
	"unsafe"
)

func TestHeapAlignedAndCounted(t *testing.T) {
	h := NewHeap()
	var bufs []*Buffer
	for _, n := range []int{0, 1, 4095, 4096, 4097, 1 << 20} {
		b, err := h.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() != n || b.Cap()%PageSize != 0 || b.Cap() < n {
			t.Fatalf("alloc %d: len %d cap %d", n, b.Len(), b.Cap())
		}
		if p := uintptr(unsafe.Pointer(&b.data[0])); p%PageSize != 0 {
			t.Fatalf("alloc %d: address %#x not page aligned", n, p)
		}
		if !b.IsHeap() || b.InArena() {
			t.Fatalf("alloc %d: IsHeap %v InArena %v", n, b.IsHeap(), b.InArena())
		}
		bufs = append(bufs, b)
	}
	if s := h.Stats(); s.OutstandingBuffers != len(bufs) {
		t.Fatalf("outstanding %d, want %d", s.OutstandingBuffers, len(bufs))
	}
	data := bufs[len(bufs)-1].Bytes()
	data[0] = 42
	for _, b := range bufs {
		b.Release()
	}
	if s := h.Stats(); s.OutstandingBuffers != 0 || s.OutstandingBytes != 0 {
		t.Fatalf("after release: %+v", s)
	}
	// A Heap buffer's memory stays valid after Release while referenced.
	if data[0] != 42 {
		t.Fatal("heap memory changed after release")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("double release did not panic")
		}
	}()
	bufs[0].Release()
}

func TestCheckedHeapTracksLeaks(t *testing.T) {
	c := NewChecked(NewHeap())
	b, _ := c.Alloc(100)
	if c.Check() == nil {
		t.Fatal("live buffer not reported")
	}
	b.Release()
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
}
