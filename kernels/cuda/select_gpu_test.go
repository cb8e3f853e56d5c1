package cuda

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// Operator and mode codes of common.cuh.
const (
	gsLT, gsGT   = 2, 4
	gsSet, gsAnd = 0, 1
	selTile      = 256 * 8 // SEL_BLOCK * SEL_ITEMS of select.cu
)

// TestGPUFilterChain runs a conjunctive filter the way select.cu's header
// describes — pred_cmp_i64 (set), pred_cmp_i64 (and), sel_count,
// scan_small, sel_write — over a million random int64 values and checks
// the selection vector (the rows where 100 < a < 400, in row order) and
// its length against the host's.
func TestGPUFilterChain(t *testing.T) {
	c := gpu(t)
	m, err := c.LoadModule("select.ptx", testPTX(t, "select"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unload()
	fn := func(name string) *Function {
		f, err := m.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	const n = 1_000_003
	rng := rand.New(rand.NewPCG(7, 8))
	a := make([]byte, 8*n)
	var want []int32
	for i := range n {
		v := int64(rng.IntN(1000))
		binary.LittleEndian.PutUint64(a[8*i:], uint64(v))
		if v > 100 && v < 400 {
			want = append(want, int32(i))
		}
	}
	tiles := (n + selTile - 1) / selTile
	alloc := func(bytes int) DevicePtr {
		p, err := c.Alloc(bytes)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Free(p) })
		return p
	}
	dA, dFlags, dCounts, dTotal, dSel := alloc(8*n), alloc(n), alloc(4*tiles), alloc(4), alloc(4*n)
	s, err := c.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	grid, block := Grid1D(n, 256)
	tileGrid := Dim3{uint32(tiles), 1, 1}
	steps := []error{
		s.CopyHtoD(dA, a),
		fn("pred_cmp_i64").Launch(grid, block, 0, s, dA, int64(1), int32(n), int32(gsGT), int64(100), dFlags, int32(gsSet)),
		fn("pred_cmp_i64").Launch(grid, block, 0, s, dA, int64(1), int32(n), int32(gsLT), int64(400), dFlags, int32(gsAnd)),
		fn("sel_count").Launch(tileGrid, Dim3{256, 1, 1}, 0, s, dFlags, int32(n), dCounts),
		fn("scan_small").Launch(Dim3{1, 1, 1}, Dim3{1024, 1, 1}, 0, s, dCounts, int32(tiles), dCounts, dTotal),
		fn("sel_write").Launch(tileGrid, Dim3{256, 1, 1}, 0, s, dFlags, int32(n), dCounts, dSel),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	total := make([]byte, 4)
	sel := make([]byte, 4*n)
	if err := s.CopyDtoH(total, dTotal); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDtoH(sel, dSel); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := int(int32(binary.LittleEndian.Uint32(total)))
	if got != len(want) {
		t.Fatalf("the filter selected %d rows, want %d", got, len(want))
	}
	for i, w := range want {
		if g := int32(binary.LittleEndian.Uint32(sel[4*i:])); g != w {
			t.Fatalf("selection[%d] = %d, want %d", i, g, w)
		}
	}
	t.Logf("%d of %d rows selected, in row order", got, n)
}
