package gpu

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gostachio/kernels/cpu"
)

// hostHarness makes the generated row function ordinary C++: the CUDA
// qualifiers vanish and __mul64hi is a 128-bit product.
const hostHarness = `#include <cstdio>
#include <cstdlib>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
`

// hostMain reads the columns (per column: kind 0 int64, 1 int32, 2 string
// with offsets) from stdin and prints, per row, "ovf sel key vals...".
const hostMain = `
int main() {
	int n, ncols;
	if (fread(&n, 4, 1, stdin) != 1 || fread(&ncols, 4, 1, stdin) != 1) return 2;
	std::vector<unsigned long long> cols(ncols + 1), offs(ncols + 1);
	for (int c = 0; c < ncols; c++) {
		int kind, bytes;
		if (fread(&kind, 4, 1, stdin) != 1) return 2;
		if (kind == 2) {
			int *o = (int *)malloc(4 * (n + 1));
			if (fread(o, 4, n + 1, stdin) != (size_t)(n + 1)) return 2;
			offs[c] = (unsigned long long)o;
		}
		if (fread(&bytes, 4, 1, stdin) != 1) return 2;
		char *d = (char *)malloc(bytes + 1);
		if (bytes > 0 && fread(d, 1, bytes, stdin) != (size_t)bytes) return 2;
		cols[c] = (unsigned long long)d;
	}
	long long vals[NAGG];
	for (int i = 0; i < n; i++) {
		int ovf = 0, sel = 0;
		long long key = 0;
		pl_row(i, cols.data(), offs.data(), &ovf, &sel, &key, vals);
		printf("%d %d %lld", ovf, sel, key);
		for (int a = 0; a < NAGG; a++) printf(" %lld", vals[a]);
		printf("\n");
	}
	return 0;
}
`

// TestJITRowSourceMatchesCPU compiles each fused pipeline's generated row
// function with the host C++ compiler and runs it over the random batch:
// the states equal the CPU engine's. Skipped without a C++ compiler.
func TestJITRowSourceMatchesCPU(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Skip("no C++ compiler")
	}
	for _, c := range pipelineCases() {
		if !c.compiles {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			b := randomBatch(5_003, c.distinct, uint64(c.distinct))
			for _, mode := range []string{"unbounded", "bounded", "narrow"} {
				shape := hostTypes(b)
				if mode != "unbounded" { // unchecked arithmetic where the ranges prove it safe
					exactBounds(t, shape, b)
				}
				runRowSource(t, cxx, c, b, shape, mode == "narrow")
			}
		})
	}
}

// runRowSource compiles c's row function for batches shaped like shape
// (in 32-bit arithmetic where the ranges allow, with narrow) with the host
// compiler, runs it over b and compares the state with the CPU engine's.
func runRowSource(t *testing.T, cxx string, c pipelineCase, b *cpu.Batch, shape *Batch, narrow bool) {
	t.Helper()
	fp, err := compileFused(shape, c.ops)
	if err != nil {
		t.Fatal(err)
	}
	fp.narrow = narrow
	dir := t.TempDir()
	src := hostHarness + fmt.Sprintf("#define NAGG %d\n", len(fp.slots)) + jitHelpers + fp.rowSource() + hostMain
	// jitHelpers uses common.cuh's hash; the row function does not.
	src = strings.Replace(src, "__device__ __forceinline__ int pl_slot(long long k) { return (int)(gs_hash_int(k) >> 58); }", "", 1)
	if err := os.WriteFile(filepath.Join(dir, "row.cc"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "row")
	if out, err := exec.Command(cxx, "-O1", "-w", "-o", bin, filepath.Join(dir, "row.cc")).CombinedOutput(); err != nil {
		t.Fatalf("c++: %v\n%s\n%s", err, out, src)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(columnsInput(t, fp, b))
	outBytes, err := cmd.Output()
	if err != nil {
		t.Fatalf("row program: %v", err)
	}
	lines := bufio.NewScanner(bytes.NewReader(outBytes))
	lines.Buffer(make([]byte, 1<<16), 1<<20)
	vals := make([]int64, len(fp.slots))
	packed, out, abs, ngroups, err := accumulate(fp, b.Rows, func(i int) (bool, int64, []int64, error) {
		if !lines.Scan() {
			return false, 0, nil, fmt.Errorf("row %d: no output", i)
		}
		f := strings.Fields(lines.Text())
		if len(f) != 3+len(vals) {
			return false, 0, nil, fmt.Errorf("row %d: %q", i, lines.Text())
		}
		n := make([]int64, len(f))
		for k, x := range f {
			if n[k], err = strconv.ParseInt(x, 10, 64); err != nil {
				return false, 0, nil, err
			}
		}
		if n[0] != 0 {
			return false, 0, nil, fmt.Errorf("row %d: overflow", i)
		}
		copy(vals, n[3:])
		return n[1] != 0, n[2], vals, nil
	})
	if errors.Is(err, errNotFused) && !c.fused {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	got, _, _, err := fp.state(packed, out, abs, ngroups)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := fmt.Sprint(rowsOf(got)), fmt.Sprint(rowsOf(cpuPartial(t, b, c.ops))); g != w {
		t.Fatalf("state:\n got %s\nwant %s", g, w)
	}
}

// columnsInput serializes the program's columns of b for hostMain.
func columnsInput(t *testing.T, fp *fusedPlan, b *cpu.Batch) []byte {
	names := make([]string, len(fp.p.cols))
	for n, k := range fp.p.colIx {
		names[k] = n
	}
	var w bytes.Buffer
	put := func(v any) { binary.Write(&w, binary.LittleEndian, v) }
	put(int32(b.Rows))
	put(int32(len(names)))
	for _, n := range names {
		v, err := b.Column(n)
		if err != nil {
			t.Fatal(err)
		}
		switch v.Type {
		case cpu.TInt64, cpu.TDecimal:
			put(int32(0))
			put(int32(8 * b.Rows))
			put(v.I64[:b.Rows])
		case cpu.TInt32, cpu.TDate:
			put(int32(1))
			put(int32(4 * b.Rows))
			put(v.I32[:b.Rows])
		case cpu.TString:
			put(int32(2))
			put(v.Off[:b.Rows+1])
			put(int32(len(v.Str)))
			w.Write(v.Str)
		}
	}
	return w.Bytes()
}

// cudaStubs declares what the generated modules use of CUDA, so the host
// compiler can check their syntax and types (not run them: the threads of
// a block do not exist here).
const cudaStubs = `#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__
#define __launch_bounds__(threads, blocks)
struct gs_dim3 { unsigned x, y, z; };
static gs_dim3 threadIdx, blockIdx, blockDim, gridDim;
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
template <class T> T atomicAdd(T *p, T v) { T o = *p; *p = o + v; return o; }
template <class T> T atomicMin(T *p, T v) { T o = *p; *p = o < v ? o : v; return o; }
template <class T> T atomicMax(T *p, T v) { T o = *p; *p = o > v ? o : v; return o; }
template <class T> T atomicOr(T *p, T v) { T o = *p; *p = o | v; return o; }
template <class T> T atomicExch(T *p, T v) { T o = *p; *p = v; return o; }
template <class T> T atomicCAS(T *p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
template <class T> T __shfl_down_sync(unsigned, T v, int) { return v; }
template <class T> T __shfl_up_sync(unsigned, T v, int) { return v; }
static inline void __syncthreads() {}
`

// TestJITModulesCompileOnHost checks that every generated module (the key
// pass and each accumulator mode's aggregate kernel, with and without a
// key) is well-formed C++ under CUDA's declarations, so a syntax error
// fails here and not on a GPU machine. Skipped without a C++ compiler.
func TestJITModulesCompileOnHost(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Skip("no C++ compiler")
	}
	dir := t.TempDir()
	n := 0
	for _, c := range pipelineCases() {
		if !c.compiles {
			continue
		}
		b := randomBatch(64, c.distinct, uint64(c.distinct))
		fp, err := compileFused(hostTypes(b), c.ops)
		if err != nil {
			t.Fatal(err)
		}
		table := make([]int64, plSlots)
		tgid := make([]int32, plSlots)
		for i := range table {
			table[i], tgid[i] = int64(i)*7+1, int32(i%3)
		}
		for _, acc := range []Accumulators{AccRegisters, AccBounded, AccShared} {
			src := cudaStubs + fp.jitSource(3, table, tgid, acc)
			if !strings.Contains(src, "jit_mark") || !strings.Contains(src, "jit_agg") {
				t.Fatalf("%s %s: module without its kernels", c.name, acc)
			}
			path := filepath.Join(dir, fmt.Sprintf("m%d.cc", n))
			n++
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(cxx, "-fsyntax-only", "-w", "-std=c++17", path).CombinedOutput(); err != nil {
				t.Fatalf("%s, %s: %v\n%s", c.name, acc, err, out)
			}
		}
	}
	if n == 0 {
		t.Fatal("no compiled pipeline case")
	}
	path := filepath.Join(dir, "strings.cc")
	if err := os.WriteFile(path, []byte(cudaStubs+stringKernels), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cxx, "-fsyntax-only", "-w", "-std=c++17", path).CombinedOutput(); err != nil {
		t.Fatalf("string kernels: %v\n%s", err, out)
	}
}

// TestAccumulatorsFallBack: shared-memory accumulators only where their
// slots fit in 48 KiB.
func TestAccumulatorsFallBack(t *testing.T) {
	d := &Device{}
	if got := d.accumulators(4, 6); got != AccShared {
		t.Fatalf("default: %s", got)
	}
	if got := d.accumulators(4, 12); got != AccShared {
		t.Fatalf("4 x 12 slots: %s, want shared", got)
	}
	if got := d.accumulators(8, 7); got != AccRegisters {
		t.Fatalf("8 x 7 slots (%d B a block): %s, want registers", 8*7*8*sharedBlock, got)
	}
	d.SetAccumulators(AccBounded)
	if got := d.accumulators(8, 7); got != AccBounded {
		t.Fatalf("bounded: %s", got)
	}
}
