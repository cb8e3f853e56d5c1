package dirtmake

import (
	"runtime"
	"testing"
	"unsafe"
)

// Buffers are usable, distinct, aligned for 8-byte values, and survive
// garbage collections while referenced.
func TestBytesAndSlice(t *testing.T) {
	for _, n := range []int{0, 1, 7, 4096, 1 << 20, 3<<20 + 5} {
		b := Bytes(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := range b {
			b[i] = byte(i)
		}
		s := Slice[int64](n)
		if len(s) != n {
			t.Fatalf("Slice(%d): len %d", n, len(s))
		}
		if n > 0 && uintptr(unsafe.Pointer(&s[0]))%8 != 0 {
			t.Errorf("Slice[int64](%d) not 8-byte aligned", n)
		}
		for i := range s {
			s[i] = int64(i) * 3
		}
		runtime.GC()
		for i := range b {
			if b[i] != byte(i) {
				t.Fatalf("Bytes(%d)[%d] = %d after a GC, want %d", n, i, b[i], byte(i))
			}
		}
		for i := range s {
			if s[i] != int64(i)*3 {
				t.Fatalf("Slice(%d)[%d] changed after a GC", n, i)
			}
		}
	}
	a, c := Bytes(1<<16), Bytes(1<<16)
	if unsafe.SliceData(a) == unsafe.SliceData(c) {
		t.Error("two live buffers share memory")
	}
	defer func() {
		if recover() == nil {
			t.Error("Bytes(-1) did not panic")
		}
	}()
	Bytes(-1)
}

// BenchmarkAlloc compares make with Bytes for a 1 MiB buffer that is then
// written whole (what a read does).
func BenchmarkAlloc(b *testing.B) {
	const n = 1 << 20
	b.Run("make", func(b *testing.B) {
		b.SetBytes(n)
		for range b.N {
			p := make([]byte, n)
			p[n-1] = 1
			fill(p)
		}
	})
	b.Run("dirtmake", func(b *testing.B) {
		b.SetBytes(n)
		for range b.N {
			p := Bytes(n)
			fill(p)
		}
	})
}

var src = make([]byte, 1<<20)

// fill overwrites p as a read or a column copy would.
//
//go:noinline
func fill(p []byte) { copy(p, src) }
