package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// gpuRun holds what one GPU kernel test uses: a context, its modules, a
// stream, and the device memory to free at the end.
type gpuRun struct {
	t   *testing.T
	c   *Context
	s   *Stream
	mod map[string]*Module
}

func newGPURun(t *testing.T, modules ...string) *gpuRun {
	t.Helper()
	c := gpu(t)
	r := &gpuRun{t: t, c: c, mod: map[string]*Module{}}
	for _, name := range modules {
		m, err := c.LoadModule(name+".ptx", testPTX(t, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Unload() })
		r.mod[name] = m
	}
	s, err := c.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Destroy() })
	r.s = s
	return r
}

// launch runs kernel name of module mod over a grid-stride grid for n
// threads (blocks of 256) with shared bytes of dynamic shared memory.
func (r *gpuRun) launch(mod, name string, n, shared int, args ...any) {
	r.t.Helper()
	grid, block := Grid1D(n, 256)
	r.launchOn(mod, name, grid, block, shared, args...)
}

// launchOn runs kernel name of module mod on the given grid and blocks
// (kernels that work in tiles of a fixed block size).
func (r *gpuRun) launchOn(mod, name string, grid, block Dim3, shared int, args ...any) {
	r.t.Helper()
	f, err := r.mod[mod].Function(name)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := f.Launch(grid, block, shared, r.s, args...); err != nil {
		r.t.Fatal(err)
	}
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// upload copies s to new device memory.
func upload[T any](r *gpuRun, s []T) DevicePtr {
	r.t.Helper()
	p := deviceAlloc[T](r, len(s))
	if err := r.s.CopyHtoD(p, bytesOf(s)); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// deviceAlloc is zeroed device memory for n values of T.
func deviceAlloc[T any](r *gpuRun, n int) DevicePtr {
	r.t.Helper()
	var zero T
	bytes := max(n*int(unsafe.Sizeof(zero)), 1)
	p, err := r.c.Alloc(bytes)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { r.c.Free(p) })
	if err := r.s.Memset8(p, 0, bytes); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// download copies n values of T back (synchronizing the stream).
func download[T any](r *gpuRun, p DevicePtr, n int) []T {
	r.t.Helper()
	out := make([]T, n)
	if n == 0 {
		return out
	}
	if err := r.s.CopyDtoH(bytesOf(out), p); err != nil {
		r.t.Fatal(err)
	}
	if err := r.s.Synchronize(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestGPUGroupBy numbers a million rows' keys (5,000 distinct) with
// gb_insert / gb_number / gb_lookup over a table made empty by
// key_fill_empty, then folds values per group with the global-atomic and
// the shared-memory sum, count, min and max kernels, and checks every
// group's aggregates against the host's.
func TestGPUGroupBy(t *testing.T) {
	r := newGPURun(t, "join", "groupby")
	const n, distinct, bits = 1_000_003, 5000, 14
	rng := rand.New(rand.NewPCG(3, 4))
	keys, vals := make([]int64, n), make([]int64, n)
	type agg struct{ sum, count, min, max int64 }
	want := map[int64]*agg{}
	for i := range keys {
		keys[i] = int64(rng.IntN(distinct))*7919 - 1_000_000 // spread, some negative
		vals[i] = int64(rng.IntN(2_000_001)) - 1_000_000
		a := want[keys[i]]
		if a == nil {
			a = &agg{min: math.MaxInt64, max: math.MinInt64}
			want[keys[i]] = a
		}
		a.sum += vals[i]
		a.count++
		a.min = min(a.min, vals[i])
		a.max = max(a.max, vals[i])
	}
	dKeys, dVals := upload(r, keys), upload(r, vals)
	const capSlots = 1 << bits
	dT, dTgid, dCounter := deviceAlloc[int64](r, capSlots), deviceAlloc[int32](r, capSlots), deviceAlloc[int32](r, 1)
	dFailed, dGroupKeys, dGids := deviceAlloc[int32](r, 1), deviceAlloc[int64](r, capSlots), deviceAlloc[int32](r, n)
	r.launch("join", "key_fill_empty", capSlots, 0, dT, int32(capSlots))
	r.launch("groupby", "gb_insert", n, 0, dKeys, int32(n), dT, int32(bits), dFailed)
	r.launch("groupby", "gb_number", capSlots, 0, dT, int32(capSlots), dTgid, dCounter, dGroupKeys)
	r.launch("groupby", "gb_lookup", n, 0, dKeys, int32(n), dT, dTgid, int32(bits), dGids)
	if failed := download[int32](r, dFailed, 1)[0]; failed != 0 {
		t.Fatal("gb_insert reported a full table")
	}
	groups := int(download[int32](r, dCounter, 1)[0])
	if groups != len(want) {
		t.Fatalf("%d groups, want %d", groups, len(want))
	}
	dSum, dSumS, dCount := deviceAlloc[int64](r, groups), deviceAlloc[int64](r, groups), deviceAlloc[int64](r, groups)
	dMin, dMax := deviceAlloc[int64](r, groups), deviceAlloc[int64](r, groups)
	r.launch("groupby", "agg_fill", groups, 0, dMin, int32(groups), int64(math.MaxInt64))
	r.launch("groupby", "agg_fill", groups, 0, dMax, int32(groups), int64(math.MinInt64))
	r.launch("groupby", "agg_sum_i64", n, 0, dVals, dGids, int32(n), dSum)
	r.launch("groupby", "agg_sum_i64_smem", n, 8*groups, dVals, dGids, int32(n), int32(groups), dSumS)
	r.launch("groupby", "agg_count", n, 0, dGids, int32(n), dCount)
	r.launch("groupby", "agg_min_i64", n, 0, dVals, dGids, int32(n), dMin)
	r.launch("groupby", "agg_max_i64", n, 0, dVals, dGids, int32(n), dMax)
	gk := download[int64](r, dGroupKeys, groups)
	sum, sumS, count := download[int64](r, dSum, groups), download[int64](r, dSumS, groups), download[int64](r, dCount, groups)
	mins, maxs := download[int64](r, dMin, groups), download[int64](r, dMax, groups)
	seen := map[int64]bool{}
	for g, k := range gk {
		w := want[k]
		if w == nil || seen[k] {
			t.Fatalf("group %d has key %d: not a key of the input, or a second group for it", g, k)
		}
		seen[k] = true
		if sum[g] != w.sum || sumS[g] != w.sum || count[g] != w.count || mins[g] != w.min || maxs[g] != w.max {
			t.Fatalf("key %d: sum %d, shared-memory sum %d, count %d, min %d, max %d; want %+v", k, sum[g], sumS[g], count[g], mins[g], maxs[g], *w)
		}
	}
	gids := download[int32](r, dGids, n)
	for i, g := range gids {
		if g < 0 || int(g) >= groups || gk[g] != keys[i] {
			t.Fatalf("row %d (key %d) got group %d", i, keys[i], g)
		}
	}
	t.Logf("%d rows, %d groups: ids, sums (both kernels), counts, mins and maxes equal the host's", n, groups)
}

// TestGPUHashJoin builds a table of 100,000 rows with duplicate keys and
// probes it with a million keys (half of them absent): hj_probe_count,
// offsets (exclusive sum, on the host here), hj_probe_emit; every emitted
// pair must join equal keys, and each probe row must get each of its
// matching build rows exactly once.
func TestGPUHashJoin(t *testing.T) {
	r := newGPURun(t, "join")
	const nb, np, bits = 100_000, 1_000_003, 18
	rng := rand.New(rand.NewPCG(5, 6))
	bkeys, pkeys := make([]int64, nb), make([]int64, np)
	byKey := map[int64][]int32{}
	for i := range bkeys {
		bkeys[i] = int64(rng.IntN(60_000))
		byKey[bkeys[i]] = append(byKey[bkeys[i]], int32(i))
	}
	for i := range pkeys {
		pkeys[i] = int64(rng.IntN(120_000))
	}
	const capSlots = 1 << bits
	dB, dP := upload(r, bkeys), upload(r, pkeys)
	dT, dRows, dFailed := deviceAlloc[int64](r, capSlots), deviceAlloc[int32](r, capSlots), deviceAlloc[int32](r, 1)
	dCounts := deviceAlloc[int32](r, np)
	r.launch("join", "key_fill_empty", capSlots, 0, dT, int32(capSlots))
	r.launch("join", "hj_build", nb, 0, dB, int32(nb), int32(0), dT, dRows, int32(bits), dFailed)
	r.launch("join", "hj_probe_count", np, 0, dP, int32(np), dT, int32(bits), int32(0), dCounts)
	if failed := download[int32](r, dFailed, 1)[0]; failed != 0 {
		t.Fatal("hj_build reported a full table")
	}
	counts := download[int32](r, dCounts, np)
	offsets := make([]int32, np)
	total := 0
	for i, c := range counts {
		if want := len(byKey[pkeys[i]]); int(c) != want {
			t.Fatalf("probe row %d (key %d): %d matches counted, want %d", i, pkeys[i], c, want)
		}
		offsets[i] = int32(total)
		total += int(c)
	}
	dOff := upload(r, offsets)
	dOutP, dOutB := deviceAlloc[int32](r, total), deviceAlloc[int32](r, total)
	r.launch("join", "hj_probe_emit", np, 0, dP, int32(np), dT, dRows, int32(bits), dOff, int32(0), dOutP, dOutB)
	outP, outB := download[int32](r, dOutP, total), download[int32](r, dOutB, total)
	for i := range np {
		seen := map[int32]bool{}
		for j := offsets[i]; j < offsets[i]+counts[i]; j++ {
			p, b := outP[j], outB[j]
			if int(p) != i || b < 0 || int(b) >= nb || bkeys[b] != pkeys[i] || seen[b] {
				t.Fatalf("pair %d: probe row %d, build row %d (probe key %d): wrong or repeated", j, p, b, pkeys[i])
			}
			seen[b] = true
		}
	}
	t.Logf("%d build rows, %d probe rows: %d matches, every pair joins equal keys, none missing or repeated", nb, np, total)
}
