package cuda

import (
	"math/rand/v2"
	"testing"

	"gostachio/kernels/cpu"
)

// TestGPUPartition hashes a million int64 keys with hash_i64 and checks
// every hash against the CPU engine's (cpu.HashColumns: a GPU and a CPU
// worker of one exchange must send a key to the same part), then runs
// part_ids -> part_hist -> exclusive scan (host) -> part_scatter for 8
// parts and checks that perm is a permutation of the rows grouped by part.
func TestGPUPartition(t *testing.T) {
	r := newGPURun(t, "partition")
	const n, parts, tile = 1_000_003, 8, 256 * 8 // PART_TILE
	rng := rand.New(rand.NewPCG(9, 10))
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(rng.Uint64())
	}
	want := cpu.HashColumns(&cpu.Batch{Names: []string{"k"}, Cols: []cpu.Vec{{Type: cpu.TInt64, I64: keys}}, Rows: n}, []int{0}, nil)
	dK := upload(r, keys)
	dH, dP := deviceAlloc[uint64](r, n), deviceAlloc[int32](r, n)
	r.launch("partition", "hash_i64", n, 0, dK, int32(n), int32(1), dH)
	r.launch("partition", "part_ids", n, 0, dH, int32(n), int32(parts), dP)
	h := download[uint64](r, dH, n)
	for i := range h {
		if h[i] != want[i] {
			t.Fatalf("row %d: GPU hash %#x, CPU hash %#x", i, h[i], want[i])
		}
	}
	tiles := (n + tile - 1) / tile
	dHist := deviceAlloc[int32](r, parts*tiles)
	tileGrid, tileBlock := Dim3{uint32(tiles), 1, 1}, Dim3{256, 1, 1}
	r.launchOn("partition", "part_hist", tileGrid, tileBlock, 4*parts, dP, int32(n), int32(parts), dHist)
	hist := download[int32](r, dHist, parts*tiles)
	offsets := make([]int32, len(hist))
	sum := int32(0)
	for i, c := range hist {
		offsets[i] = sum
		sum += c
	}
	if int(sum) != n {
		t.Fatalf("histogram counts %d rows, want %d", sum, n)
	}
	dOff, dPerm := upload(r, offsets), deviceAlloc[int32](r, n)
	r.launchOn("partition", "part_scatter", tileGrid, tileBlock, 4*parts, dP, int32(n), int32(parts), dOff, dPerm)
	perm := download[int32](r, dPerm, n)
	seen := make([]bool, n)
	for p := range parts {
		lo, hi := int(offsets[p*tiles]), n
		if p+1 < parts {
			hi = int(offsets[(p+1)*tiles])
		}
		for _, row := range perm[lo:hi] {
			if row < 0 || int(row) >= n {
				t.Fatalf("part %d holds row %d of %d", p, row, n)
			}
			if seen[row] || int(want[row]&(parts-1)) != p {
				t.Fatalf("part %d holds row %d (hash part %d, seen before %v)", p, row, want[row]&(parts-1), seen[row])
			}
			seen[row] = true
		}
	}
	t.Logf("%d rows: hashes equal the CPU's; %d parts, each row once, in its part", n, parts)
}
