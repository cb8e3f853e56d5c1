package alloc

import (
	"strings"
	"testing"
	"unsafe"
)

func TestClassSize(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {8192, 8192},
		{1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {3 << 20, 4 << 20},
	} {
		if got := ClassSize(tc.size); got != tc.want {
			t.Errorf("ClassSize(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func TestPoolAlignmentReuseAndArena(t *testing.T) {
	p, err := NewPool(Options{ArenaBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// 5000 bytes → 8 KiB class; eight of them fill the 64 KiB arena, the ninth is dedicated.
	var bufs []*Buffer
	for i := 0; i < 9; i++ {
		b, err := p.Alloc(5000)
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() != 5000 || b.Cap() != 8192 || len(b.Bytes()) != 5000 {
			t.Fatalf("buffer %d: len %d cap %d", i, b.Len(), b.Cap())
		}
		if addr := uintptr(unsafe.Pointer(&b.Bytes()[0])); addr%PageSize != 0 {
			t.Fatalf("buffer %d at %#x not page aligned", i, addr)
		}
		if want := i < 8; b.InArena() != want {
			t.Fatalf("buffer %d InArena = %v, want %v", i, b.InArena(), want)
		}
		bufs = append(bufs, b)
	}
	st := p.Stats()
	if st.OutstandingBuffers != 9 || st.OutstandingBytes != 9*8192 || st.ArenaUsedBytes != 64<<10 {
		t.Fatalf("stats %+v", st)
	}
	// Retain keeps it alive across one Release.
	first := bufs[0]
	first.Retain()
	first.Release()
	if first.Refs() != 1 || p.Stats().OutstandingBuffers != 9 {
		t.Fatalf("after Retain+Release: refs %d, outstanding %d", first.Refs(), p.Stats().OutstandingBuffers)
	}
	for _, b := range bufs {
		b.Release()
	}
	st = p.Stats()
	if st.OutstandingBuffers != 0 || st.OutstandingBytes != 0 || st.IdleBytes != 9*8192 {
		t.Fatalf("after release: %+v", st)
	}
	// Reuse: the same class comes back from the free list, no new arena use.
	b, err := p.Alloc(8192)
	if err != nil {
		t.Fatal(err)
	}
	if p.Stats().ArenaUsedBytes != 64<<10 || p.Stats().IdleBytes != 8*8192 {
		t.Fatalf("reuse stats %+v", p.Stats())
	}
	b.Release()
}

func TestPoolRejectsTooLarge(t *testing.T) {
	p, err := NewPool(Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Alloc(1<<20 + 1); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("Alloc over max: err %v", err)
	}
	if _, err := p.Alloc(-1); err == nil {
		t.Fatal("Alloc(-1) succeeded")
	}
}

func TestDoubleReleasePanics(t *testing.T) {
	p, _ := NewPool(Options{})
	defer p.Close()
	b, _ := p.Alloc(10)
	b.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("second Release did not panic")
		}
	}()
	b.Release()
}

func TestCheckedReportsLeaks(t *testing.T) {
	p, _ := NewPool(Options{})
	defer p.Close()
	c := NewChecked(p)
	a, _ := c.Alloc(100)
	b, _ := c.Alloc(200)
	if n, bytes := c.Outstanding(); n != 2 || bytes != 300 {
		t.Fatalf("outstanding %d/%d, want 2/300", n, bytes)
	}
	a.Release()
	err := c.Check()
	if err == nil || !strings.Contains(err.Error(), "1 buffers (200 bytes)") || !strings.Contains(err.Error(), "TestCheckedReportsLeaks") {
		t.Fatalf("Check = %v", err)
	}
	b.Release()
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.Allocated() != 2 || p.Stats().OutstandingBuffers != 0 {
		t.Fatalf("allocated %d, pool outstanding %d", c.Allocated(), p.Stats().OutstandingBuffers)
	}
}

func TestCloseWithOutstandingArenaBuffer(t *testing.T) {
	p, _ := NewPool(Options{ArenaBytes: 16 << 10})
	b, _ := p.Alloc(4096)
	b.Bytes()[0] = 7
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// Still mapped: writing must not fault.
	b.Bytes()[1] = 8
	if p.Stats().MappedBytes != 16<<10 {
		t.Fatalf("mapped %d after close with outstanding arena buffer", p.Stats().MappedBytes)
	}
	b.Release()
	if p.Stats().MappedBytes != 0 {
		t.Fatalf("mapped %d after last release", p.Stats().MappedBytes)
	}
	if _, err := p.Alloc(1); err != ErrClosed {
		t.Fatalf("Alloc after Close: %v", err)
	}
}

func BenchmarkPoolAllocRelease(b *testing.B) {
	p, _ := NewPool(Options{ArenaBytes: 1 << 20})
	defer p.Close()
	b.SetBytes(4096)
	for i := 0; i < b.N; i++ {
		buf, err := p.Alloc(4096)
		if err != nil {
			b.Fatal(err)
		}
		buf.Release()
	}
}

// TestHugePageAlignment: mappings of at least HugePageSize start on a huge-page boundary (so THP
// can back them with physically contiguous memory), smaller ones on a page boundary; all are
// writable end to end and unmapped by Close.
func TestHugePageAlignment(t *testing.T) {
	for _, tc := range []struct {
		size  int64
		align uintptr
	}{{HugePageSize, HugePageSize}, {5 << 20, HugePageSize}, {HugePageSize - PageSize, PageSize}} {
		for _, populate := range []bool{false, true} {
			p, err := NewPool(Options{ArenaBytes: tc.size, Populate: populate})
			if err != nil {
				t.Fatal(err)
			}
			a := p.Arena()
			if int64(len(a)) != tc.size || uintptr(unsafe.Pointer(&a[0]))%tc.align != 0 {
				t.Errorf("size %d: arena %p len %d, want alignment %d", tc.size, &a[0], len(a), tc.align)
			}
			a[0], a[len(a)-1] = 1, 2
			if err := p.Close(); err != nil || p.Stats().MappedBytes != 0 {
				t.Errorf("size %d: close %v, still mapped %d", tc.size, err, p.Stats().MappedBytes)
			}
		}
	}
}
