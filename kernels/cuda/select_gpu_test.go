package cuda

import (
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
	r := newGPURun(t, "select")
	const n = 1_000_003
	rng := rand.New(rand.NewPCG(7, 8))
	a := make([]int64, n)
	var want []int32
	for i := range a {
		a[i] = int64(rng.IntN(1000))
		if a[i] > 100 && a[i] < 400 {
			want = append(want, int32(i))
		}
	}
	tiles := (n + selTile - 1) / selTile
	dA := upload(r, a)
	dFlags, dCounts := deviceAlloc[uint8](r, n), deviceAlloc[int32](r, tiles)
	dTotal, dSel := deviceAlloc[int32](r, 1), deviceAlloc[int32](r, n)
	tileGrid, tileBlock := Dim3{uint32(tiles), 1, 1}, Dim3{256, 1, 1}
	r.launch("select", "pred_cmp_i64", n, 0, dA, int64(1), int32(n), int32(gsGT), int64(100), dFlags, int32(gsSet))
	r.launch("select", "pred_cmp_i64", n, 0, dA, int64(1), int32(n), int32(gsLT), int64(400), dFlags, int32(gsAnd))
	r.launchOn("select", "sel_count", tileGrid, tileBlock, 0, dFlags, int32(n), dCounts)
	r.launchOn("select", "scan_small", Dim3{1, 1, 1}, Dim3{1024, 1, 1}, 0, dCounts, int32(tiles), dCounts, dTotal)
	r.launchOn("select", "sel_write", tileGrid, tileBlock, 0, dFlags, int32(n), dCounts, dSel)
	got := int(download[int32](r, dTotal, 1)[0])
	if got != len(want) {
		t.Fatalf("the filter selected %d rows, want %d", got, len(want))
	}
	sel := download[int32](r, dSel, got)
	for i, w := range want {
		if sel[i] != w {
			t.Fatalf("selection[%d] = %d, want %d", i, sel[i], w)
		}
	}
	t.Logf("%d of %d rows selected, in row order", got, n)
}
