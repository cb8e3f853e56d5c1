package gpu

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"gostachio/kernels/cpu"
	"gostachio/kernels/cuda"
)

// The compiled form of the fused path: the row program becomes straight
// C (one statement per instruction, registers as locals, literals as
// constants), compiled by NVRTC when the pipeline first runs and cached by
// its source. The interpreted kernels (pipeline.cu's rowprog_*) run the
// same program where NVRTC is missing; both read the same instruction
// set, so fused_test.go's host reading checks what both compute.

// Accumulators is where the compiled aggregate kernel keeps each
// thread's running aggregates (NGROUPS x NAGG of them).
type Accumulators int32

const (
	// AccShared (the default): in shared memory, one column of slots per
	// thread ([slot][thread], so a warp's accesses fall in distinct
	// banks), each row updating only its own group's slots; 128-thread
	// blocks, and only where NGROUPS x NAGG x 128 x 8 bytes fit in 48 KiB
	// (otherwise AccRegisters runs). Q1 on an H200: 64 registers a thread,
	// 50% occupancy, 238 µs against AccRegisters' 269 (ncu).
	AccShared Accumulators = iota
	// AccRegisters: in registers, every row updating every group's slot
	// through a select (no branch, no memory traffic; but Q1's 4 x 6 slots
	// take 164 registers a thread: 12.5% occupancy, latency-bound).
	AccRegisters
	// AccBounded: AccRegisters compiled with __launch_bounds__(256, 4),
	// so at most 64 registers and the rest spilled to local memory (Q1:
	// slower than both others).
	AccBounded
)

// String names the mode as the bench reports it.
func (a Accumulators) String() string {
	switch a {
	case AccBounded:
		return "registers, bounded"
	case AccShared:
		return "shared memory"
	}
	return "registers"
}

// sharedBlock is AccShared's block size, sharedSlots the most slots
// (groups x aggregates) it keeps in 48 KiB of shared memory.
const (
	sharedBlock = 128
	sharedSlots = 48 << 10 / (8 * sharedBlock)
)

// SetAccumulators picks where the compiled aggregate kernel accumulates
// (for A/B runs and tests of each).
func (d *Device) SetAccumulators(a Accumulators) { d.acc.Store(int32(a)) }

// accumulators is the mode a pipeline of slots aggregate slots and
// ngroups groups runs with.
func (d *Device) accumulators(ngroups, slots int) Accumulators {
	a := Accumulators(d.acc.Load())
	if a == AccShared && max(ngroups, 1)*slots > sharedSlots {
		return AccRegisters
	}
	return a
}

// jitCache holds the compiled pipelines of a device.
type jitCache struct {
	once   sync.Once
	nvrtc  *cuda.NVRTC
	err    error // why there is no NVRTC (the interpreter runs)
	mu     sync.Mutex
	mods   map[string]*cuda.Module
	tables map[string][]int64 // key tables by mark source (tableOf)
}

// compiler returns NVRTC, loading it once.
func (d *Device) compiler() (*cuda.NVRTC, error) {
	d.jit.once.Do(func() {
		d.jit.nvrtc, d.jit.err = cuda.LoadNVRTC()
		d.jit.mods = map[string]*cuda.Module{}
	})
	return d.jit.nvrtc, d.jit.err
}

// JIT describes the run-time compiler: its library and version, or why the
// fused path interprets.
func (d *Device) JIT() string {
	n, err := d.compiler()
	if err != nil {
		return "interpreted (" + err.Error() + ")"
	}
	return fmt.Sprintf("NVRTC %s (%s)", n.Version(), n.Path())
}

// SetJIT turns the compiled form of the fused path on (the default, where
// NVRTC loads) or off (the interpreted kernels), for A/B runs and tests.
func (d *Device) SetJIT(on bool) { d.noJIT.Store(!on) }

// jitOn reports whether fused pipelines are compiled.
func (d *Device) jitOn() bool {
	if d.noJIT.Load() {
		return false
	}
	_, err := d.compiler()
	return err == nil
}

// launchJIT launches kernel name of the module compiled from src over the
// run's rows.
func (r *run) launchJIT(src, name string, block, shared int, args ...any) error {
	m, err := r.d.jitModule(src)
	if err != nil {
		return err
	}
	f, err := m.Function(name)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	r.launches++
	return r.d.launchBlock(r.s, f, r.n, block, shared, args...)
}

// jitModule returns the module compiled from src (once per source).
func (d *Device) jitModule(src string) (*cuda.Module, error) {
	n, err := d.compiler()
	if err != nil {
		return nil, err
	}
	d.jit.mu.Lock()
	defer d.jit.mu.Unlock()
	if m := d.jit.mods[src]; m != nil {
		return m, nil
	}
	arch := fmt.Sprintf("--gpu-architecture=compute_%d%d", d.info.Major, d.info.Minor)
	ptx, err := n.Compile("pipeline_jit.cu", src, []string{arch, "-default-device", "-std=c++17"})
	if err != nil {
		return nil, fmt.Errorf("gpu: compiling a pipeline: %w", err)
	}
	m, err := d.ctx.LoadModule("pipeline_jit", ptx)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	d.jit.mods[src] = m
	return m, nil
}

func cLit(v int64) string {
	if v == math.MinInt64 {
		return "(-9223372036854775807LL - 1)"
	}
	return fmt.Sprintf("%dLL", v)
}

var cCmp = [...]string{"==", "!=", "<", "<=", ">", ">="}

// rowSource is the C of the row program: pl_row(i) sets *sel, *key and
// vals[a] (the aggregate slots' values) for row i; overflow sets *ovf.
func (fp *fusedPlan) rowSource() string {
	p := fp.p
	var b strings.Builder
	b.WriteString("__device__ __forceinline__ void pl_row(int i, const unsigned long long *__restrict__ cols, " +
		"const unsigned long long *__restrict__ offs, int *ovf, int *sel, long long *key, long long *vals) {\n")
	r := func(k int32) string { return fmt.Sprintf("r%d", k) }
	_, rng := p.ranges()
	for pc := 0; pc < len(p.ins); pc += 4 {
		op, dst, a, bb := p.ins[pc], p.ins[pc+1], p.ins[pc+2], p.ins[pc+3]
		d := r(dst & 0xff)
		switch op {
		case plCol64:
			fmt.Fprintf(&b, "\tlong long %s = ((const long long *)cols[%d])[i];\n", d, a)
		case plCol32:
			fmt.Fprintf(&b, "\tlong long %s = (long long)((const int *)cols[%d])[i];\n", d, a)
		case plStr:
			// Fixed-width strings (every value MaxLen bytes, as TPC-H's
			// flags): value i starts at i*MaxLen, no offsets read.
			bounds := fmt.Sprintf("const int *o = (const int *)offs[%d];\n\t\tint a = o[i], len = o[i + 1] - a;", a)
			if c := p.cols[a]; c.MinLen == c.MaxLen {
				bounds = fmt.Sprintf("int a = i * %d, len = %d;", c.MaxLen, c.MaxLen)
			}
			fmt.Fprintf(&b, "\tlong long %s;\n\t{\n\t\t%s\n"+
				"\t\tconst unsigned char *s = (const unsigned char *)cols[%d];\n"+
				"\t\tif (len > %d) { *ovf = 1; len = %d; }\n"+
				"\t\tunsigned long long c = 0;\n#pragma unroll\n\t\tfor (int j = 0; j < %d; j++) {\n"+
				"\t\t\tc <<= 8;\n\t\t\tif (j < len) c |= (unsigned long long)s[a + j] + 1ULL;\n\t\t}\n"+
				"\t\t%s = (long long)c;\n\t}\n", d, bounds, a, bb, bb, bb, d)
		case plLit:
			fmt.Fprintf(&b, "\tconst long long %s = %s;\n", d, cLit(p.lits[a]))
		case plAdd, plSub, plMul:
			// Checked unless the operands' ranges rule overflow out
			// (bounds.go); with fp.narrow, in 32-bit arithmetic where
			// the ranges allow (a 32 x 32 -> 64-bit product is one
			// instruction, a 64-bit one several).
			c := map[int32]string{plAdd: "+", plSub: "-", plMul: "*"}[op]
			ir := rng[pc/4]
			switch {
			case ir.safe && fp.narrow && ir.x.in32() && ir.y.in32() && ir.out.in32():
				fmt.Fprintf(&b, "\tlong long %s = (long long)((int)%s %s (int)%s);\n", d, r(a), c, r(bb))
			case ir.safe && fp.narrow && op == plMul && ir.x.in32() && ir.y.in32():
				fmt.Fprintf(&b, "\tlong long %s = (long long)(int)%s * (long long)(int)%s;\n", d, r(a), r(bb))
			case ir.safe:
				fmt.Fprintf(&b, "\tlong long %s = %s %s %s;\n", d, r(a), c, r(bb))
			default:
				fn := map[int32]string{plAdd: "pl_add_ovf", plSub: "pl_sub_ovf", plMul: "pl_mul_ovf"}[op]
				fmt.Fprintf(&b, "\tlong long %s = %s(%s, %s, ovf);\n", d, fn, r(a), r(bb))
			}
		case plCmp:
			if ir := rng[pc/4]; fp.narrow && ir.x.in32() && ir.y.in32() {
				fmt.Fprintf(&b, "\tlong long %s = (int)%s %s (int)%s;\n", d, r(a), cCmp[dst>>8], r(bb))
			} else {
				fmt.Fprintf(&b, "\tlong long %s = %s %s %s;\n", d, r(a), cCmp[dst>>8], r(bb))
			}
		case plAnd:
			fmt.Fprintf(&b, "\tlong long %s = (%s != 0) & (%s != 0);\n", d, r(a), r(bb))
		case plOr:
			fmt.Fprintf(&b, "\tlong long %s = (%s != 0) | (%s != 0);\n", d, r(a), r(bb))
		case plNot:
			fmt.Fprintf(&b, "\tlong long %s = %s == 0;\n", d, r(a))
		case plIn:
			var terms []string
			for k := 0; k < int(p.lits[bb]); k++ {
				terms = append(terms, fmt.Sprintf("(%s == %s)", r(a), cLit(p.lits[int(bb)+1+k])))
			}
			if len(terms) == 0 {
				terms = []string{"0"}
			}
			fmt.Fprintf(&b, "\tlong long %s = %s;\n", d, strings.Join(terms, " | "))
		case plPack:
			fmt.Fprintf(&b, "\t%s = (long long)(((unsigned long long)%s << %d) | (unsigned long long)%s);\n", d, d, bb, r(a))
		}
	}
	if fp.filter >= 0 {
		fmt.Fprintf(&b, "\t*sel = %s != 0;\n", r(int32(fp.filter)))
	} else {
		b.WriteString("\t*sel = 1;\n")
	}
	if fp.key >= 0 {
		fmt.Fprintf(&b, "\t*key = %s;\n", r(int32(fp.key)))
	} else {
		b.WriteString("\t*key = 0;\n")
	}
	for a, s := range fp.slots {
		if s.reg < 0 {
			fmt.Fprintf(&b, "\tvals[%d] = 1;\n", a)
		} else {
			fmt.Fprintf(&b, "\tvals[%d] = %s;\n", a, r(int32(s.reg)))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// jitSource is the whole module for ngroups groups (0: the key pass only
// is used; its aggregate kernel is compiled for one group), its aggregate
// kernel accumulating as acc says.
func (fp *fusedPlan) jitSource(ngroups int, table []int64, tgid []int32, acc Accumulators) string {
	var b strings.Builder
	b.WriteString(cuda.CommonHeader())
	fmt.Fprintf(&b, "\n#define NAGG %d\n#define NGROUPS %d\n#define HAS_KEY %d\n", len(fp.slots), max(ngroups, 1), btoi(fp.key >= 0))
	// The group of a key: the table's keys as constants (a unit's keys
	// are almost always those of the pipeline's earlier units; a key not
	// here is a miss, and the host compiles the grown table).
	b.WriteString("__device__ __forceinline__ int pl_gid(long long k) {\n")
	for s, k := range table {
		if tgid[s] >= 0 {
			fmt.Fprintf(&b, "\tif (k == %s) return %d;\n", cLit(k), tgid[s])
		}
	}
	if fp.key < 0 {
		b.WriteString("\treturn 0;\n}\n")
	} else {
		b.WriteString("\treturn -1;\n}\n")
	}
	b.WriteString("__device__ __forceinline__ int pl_kind(int a) {\n\tswitch (a) {\n")
	for a, s := range fp.slots {
		fmt.Fprintf(&b, "\tcase %d: return %d;\n", a, s.kind)
	}
	b.WriteString("\t}\n\treturn 0;\n}\n")
	// pl_track(a): whether sum slot a's largest |value| is tracked per row
	// (the host bounds it from the value's range otherwise).
	track, _ := fp.tracked()
	b.WriteString("__device__ __forceinline__ int pl_track(int a) {\n\tswitch (a) {\n")
	for a, t := range track {
		fmt.Fprintf(&b, "\tcase %d: return %d;\n", a, btoi(t))
	}
	b.WriteString("\t}\n\treturn 0;\n}\n")
	b.WriteString(jitHelpers)
	b.WriteString(fp.rowSource())
	b.WriteString(jitFlush)
	b.WriteString(jitMark)
	switch acc {
	case AccShared:
		b.WriteString(jitAggShared)
	case AccBounded:
		b.WriteString(strings.Replace(jitAggRegisters, "extern \"C\" __global__ void", "extern \"C\" __global__ void __launch_bounds__(256, 4)", 1))
	default:
		b.WriteString(jitAggRegisters)
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

const jitHelpers = `
__device__ __forceinline__ long long pl_add_ovf(long long a, long long b, int *ovf) {
	long long r = (long long)((unsigned long long)a + (unsigned long long)b);
	if (((a ^ r) & (b ^ r)) < 0) *ovf = 1;
	return r;
}
__device__ __forceinline__ long long pl_sub_ovf(long long a, long long b, int *ovf) {
	long long r = (long long)((unsigned long long)a - (unsigned long long)b);
	if (((a ^ b) & (a ^ r)) < 0) *ovf = 1;
	return r;
}
__device__ __forceinline__ long long pl_mul_ovf(long long a, long long b, int *ovf) {
	long long lo = (long long)((unsigned long long)a * (unsigned long long)b);
	if (__mul64hi(a, b) != (lo >> 63)) *ovf = 1;
	return lo;
}
__device__ __forceinline__ unsigned long long pl_abs(long long v) {
	return v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
}
__device__ __forceinline__ long long pl_identity(int kind) {
	return kind == 1 ? (long long)0x7fffffffffffffffLL : kind == 2 ? (long long)0x8000000000000000ULL : 0LL;
}
__device__ __forceinline__ long long pl_combine(int kind, long long a, long long b) {
	if (kind == 1) return a < b ? a : b;
	if (kind == 2) return a > b ? a : b;
	return (long long)((unsigned long long)a + (unsigned long long)b);
}
#define PL_SLOTS 64
__device__ __forceinline__ int pl_slot(long long k) { return (int)(gs_hash_int(k) >> 58); }
`

// jitFlush: the end of both aggregate kernels, per slot: the warp's
// largest |value| into absmax, and each group's warp total into out (the
// kernels differ only in where a thread's accumulators live).
const jitFlush = `
__device__ __forceinline__ void pl_flush_abs(int a, unsigned long long m, unsigned long long *absmax) {
	for (int d = GS_WARP / 2; d > 0; d >>= 1) {
		unsigned long long o = __shfl_down_sync(GS_FULL_MASK, m, d);
		m = m > o ? m : o;
	}
	if ((threadIdx.x & (GS_WARP - 1)) == 0 && m != 0) atomicMax(&absmax[a], m);
}
__device__ __forceinline__ void pl_flush(int g, int a, long long x, long long *out) {
	for (int d = GS_WARP / 2; d > 0; d >>= 1) {
		x = pl_combine(pl_kind(a), x, __shfl_down_sync(GS_FULL_MASK, x, d));
	}
	if ((threadIdx.x & (GS_WARP - 1)) == 0 && x != pl_identity(pl_kind(a))) {
		if (pl_kind(a) == 0) atomicAdd((unsigned long long *)&out[g * NAGG + a], (unsigned long long)x);
		else if (pl_kind(a) == 1) atomicMin(&out[g * NAGG + a], x);
		else atomicMax(&out[g * NAGG + a], x);
	}
}
`

// jitMark: jit_mark puts the distinct keys of the selected rows into the
// table, as rowprog_mark.
const jitMark = `
extern "C" __global__ void jit_mark(const unsigned long long *__restrict__ cols,
                                    const unsigned long long *__restrict__ offs, int n, long long *tkeys,
                                    int *failed) {
	// The keys this block already put in the table: with few distinct
	// keys nearly every row stops here, in shared memory, instead of
	// reading the same few global words from every row of the grid.
	__shared__ long long seen[PL_SLOTS];
	for (int j = threadIdx.x; j < PL_SLOTS; j += blockDim.x) seen[j] = GS_EMPTY_KEY;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int sel, dead = 0;
		long long k, vals[NAGG];
		pl_row(i, cols, offs, &dead, &sel, &k, vals);
		if (!sel) continue;
		int s = pl_slot(k);
		bool known = false;
		for (int p = 0; p < PL_SLOTS; p++) {
			long long t = ((volatile long long *)seen)[s];
			if (t == k) { known = true; break; }
			if (t == GS_EMPTY_KEY) break;
			s = (s + 1) & (PL_SLOTS - 1);
		}
		if (known) continue;
		s = pl_slot(k);
		for (int p = 0;; p++) {
			if (p == PL_SLOTS) { atomicExch(failed, 1); break; }
			long long t = ((volatile long long *)tkeys)[s];
			if (t == k) break;
			if (t == GS_EMPTY_KEY) {
				long long prev = (long long)atomicCAS((unsigned long long *)&tkeys[s],
					(unsigned long long)GS_EMPTY_KEY, (unsigned long long)k);
				if (prev == GS_EMPTY_KEY || prev == k) break;
			}
			s = (s + 1) & (PL_SLOTS - 1);
		}
		s = pl_slot(k);
		for (int p = 0; p < PL_SLOTS; p++) {
			long long prev = (long long)atomicCAS((unsigned long long *)&seen[s],
				(unsigned long long)GS_EMPTY_KEY, (unsigned long long)k);
			if (prev == GS_EMPTY_KEY || prev == k) break;
			s = (s + 1) & (PL_SLOTS - 1);
		}
	}
}

`

// jitAggRegisters: jit_agg folds every selected row into per-thread
// register accumulators of NGROUPS x NAGG (AccRegisters), reduced per warp
// at the end; *miss = 1 when a row's key is not in the table: the host
// then runs jit_mark and jit_agg again.
const jitAggRegisters = `
// pl_fold folds row i (when valid) into the thread's accumulators. It
// has no branches, so the two rows jit_agg folds per step load their
// columns together (more loads in flight per thread).
__device__ __forceinline__ void pl_fold(int i, bool valid, const unsigned long long *__restrict__ cols,
                                        const unsigned long long *__restrict__ offs, int *ovf, int *missed,
                                        long long (&acc)[NGROUPS][NAGG], unsigned long long (&am)[NAGG]) {
	int sel;
	long long k, vals[NAGG];
	pl_row(i, cols, offs, ovf, &sel, &k, vals);
	int g = (valid && sel) ? pl_gid(k) : -2;
	*missed |= g == -1;
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		if (pl_kind(a) == 0 && pl_track(a)) {
			unsigned long long m = g >= 0 ? pl_abs(vals[a]) : 0ULL;
			am[a] = am[a] > m ? am[a] : m;
		}
#pragma unroll
		for (int gg = 0; gg < NGROUPS; gg++) {
			acc[gg][a] = gg == g ? pl_combine(pl_kind(a), acc[gg][a], vals[a]) : acc[gg][a];
		}
	}
}

extern "C" __global__ void jit_agg(const unsigned long long *__restrict__ cols,
                                   const unsigned long long *__restrict__ offs, int n, long long *out,
                                   unsigned long long *absmax, int *overflow, int *miss) {
	long long acc[NGROUPS][NAGG];
	unsigned long long am[NAGG];
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		am[a] = 0;
#pragma unroll
		for (int g = 0; g < NGROUPS; g++) acc[g][a] = pl_identity(pl_kind(a));
	}
	int ovf = 0, missed = 0;
	int stride = gridDim.x * blockDim.x;
	// Two rows per step; the second past the end re-reads the last row
	// (valid memory) and folds nothing.
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += 2 * stride) {
		int j = i + stride;
		pl_fold(i, true, cols, offs, &ovf, &missed, acc, am);
		pl_fold(j < n ? j : n - 1, j < n, cols, offs, &ovf, &missed, acc, am);
	}
	if (missed) atomicExch(miss, 1);
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		pl_flush_abs(a, am[a], absmax);
#pragma unroll
		for (int g = 0; g < NGROUPS; g++) pl_flush(g, a, acc[g][a], out);
	}
	if (ovf) atomicOr(overflow, 1);
}
`

// jitAggShared: jit_agg as jitAggRegisters computes it, its accumulators in
// shared memory (AccShared): slot s of thread t at pl_sh[s*blockDim.x+t],
// written only by thread t, so no synchronization; a row updates its own
// group's NAGG slots.
const jitAggShared = `
__device__ __forceinline__ void pl_fold_sh(int i, bool valid, const unsigned long long *__restrict__ cols,
                                           const unsigned long long *__restrict__ offs, int *ovf, int *missed,
                                           long long *sh, unsigned long long (&am)[NAGG]) {
	int sel;
	long long k, vals[NAGG];
	pl_row(i, cols, offs, ovf, &sel, &k, vals);
	int g = (valid && sel) ? pl_gid(k) : -2;
	*missed |= g == -1;
	if (g < 0) return;
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		if (pl_kind(a) == 0 && pl_track(a)) {
			unsigned long long m = pl_abs(vals[a]);
			am[a] = am[a] > m ? am[a] : m;
		}
		long long *p = &sh[(g * NAGG + a) * (int)blockDim.x];
		*p = pl_combine(pl_kind(a), *p, vals[a]);
	}
}

extern "C" __global__ void jit_agg(const unsigned long long *__restrict__ cols,
                                   const unsigned long long *__restrict__ offs, int n, long long *out,
                                   unsigned long long *absmax, int *overflow, int *miss) {
	extern __shared__ long long pl_sh[];
	long long *sh = pl_sh + threadIdx.x;
	for (int s = 0; s < NGROUPS * NAGG; s++) sh[s * (int)blockDim.x] = pl_identity(pl_kind(s % NAGG));
	unsigned long long am[NAGG];
#pragma unroll
	for (int a = 0; a < NAGG; a++) am[a] = 0;
	int ovf = 0, missed = 0;
	int stride = gridDim.x * blockDim.x;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += 2 * stride) {
		int j = i + stride;
		pl_fold_sh(i, true, cols, offs, &ovf, &missed, sh, am);
		pl_fold_sh(j < n ? j : n - 1, j < n, cols, offs, &ovf, &missed, sh, am);
	}
	if (missed) atomicExch(miss, 1);
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		pl_flush_abs(a, am[a], absmax);
		for (int g = 0; g < NGROUPS; g++) pl_flush(g, a, sh[(g * NAGG + a) * (int)blockDim.x], out);
	}
	if (ovf) atomicOr(overflow, 1);
}
`

// tableOf returns a copy of the key table the compiled pipeline src last
// ended with (nil: none yet): the units of a pipeline share their groups
// (TPC-H Q1's four), so a unit usually needs no key pass.
func (d *Device) tableOf(src string) []int64 {
	d.jit.mu.Lock()
	defer d.jit.mu.Unlock()
	return append([]int64(nil), d.jit.tables[src]...)
}

func (d *Device) keepTable(src string, t []int64) {
	d.jit.mu.Lock()
	defer d.jit.mu.Unlock()
	if d.jit.tables == nil {
		d.jit.tables = map[string][]int64{}
	}
	d.jit.tables[src] = append([]int64(nil), t...)
}

// kernelTimer times launches with events; Total is valid once the stream
// synchronized past them.
type kernelTimer struct {
	c      *cuda.Context
	events []*cuda.Event
}

func (k *kernelTimer) around(s *cuda.Stream, launch func() error) error {
	start, err := k.c.NewEvent(cuda.EventDefault)
	if err != nil {
		return err
	}
	end, err := k.c.NewEvent(cuda.EventDefault)
	if err != nil {
		start.Destroy()
		return err
	}
	k.events = append(k.events, start, end)
	if err := start.Record(s); err != nil {
		return err
	}
	if err := launch(); err != nil {
		return err
	}
	return end.Record(s)
}

// total sums the timed intervals and destroys the events.
func (k *kernelTimer) total() (int64, error) {
	var ns int64
	var first error
	for i := 0; i+1 < len(k.events); i += 2 {
		d, err := cuda.Elapsed(k.events[i], k.events[i+1])
		if err != nil && first == nil {
			first = err
		}
		ns += d.Nanoseconds()
	}
	for _, e := range k.events {
		e.Destroy()
	}
	k.events = nil
	return ns, first
}

// runCompiled runs a fused pipeline as generated kernels: one upload of
// the column pointers and the key table, the aggregate kernel, and one
// read back of its results; the key pass (and a second aggregate pass)
// only when a row's key is missing from the table the pipeline's last
// unit left.
func (r *run) runCompiled(fp *fusedPlan, st *Stats) (*cpu.Batch, error) {
	p := fp.p
	n := int32(r.n)
	nc := len(p.cols)
	kt := &kernelTimer{c: r.d.ctx}
	defer kt.total()
	ptrs := make([]uint64, 2*nc)
	for i, c := range p.cols {
		ptrs[i], ptrs[nc+i] = uint64(c.Data), uint64(c.Off)
	}
	dPtrs, err := uploadScratch(r, ptrs)
	if err != nil {
		return nil, err
	}
	dCols, dOffs := dPtrs, dPtrs.Add(8*nc)
	markSrc := fp.jitSource(1, nil, nil, AccRegisters)
	var table []int64
	if fp.key >= 0 {
		table = r.d.tableOf(markSrc)
	}
	mark := func() error {
		if table == nil {
			table = make([]int64, plSlots)
			for i := range table {
				table[i] = math.MinInt64 // GS_EMPTY_KEY
			}
		}
		// [table | failed]
		buf := append(append([]int64(nil), table...), 0)
		dT, err := uploadScratch(r, buf)
		if err != nil {
			return err
		}
		if err := kt.around(r.s, func() error {
			return r.launchJIT(markSrc, "jit_mark", blockThreads, 0, dCols, dOffs, n, dT, dT.Add(8*plSlots))
		}); err != nil {
			return err
		}
		if err := r.s.CopyDtoH(bytesOf(buf), dT); err != nil {
			return err
		}
		if err := r.s.Synchronize(); err != nil {
			return err
		}
		table = buf[:plSlots]
		if buf[plSlots] != 0 {
			return notFused("more than %d distinct keys", plSlots)
		}
		return nil
	}
	if fp.key >= 0 && table == nil {
		if err := mark(); err != nil {
			return nil, err
		}
	}
	nagg := len(fp.slots)
	for attempt := 0; ; attempt++ {
		tgid := make([]int32, plSlots)
		ngroups := 1
		if fp.key >= 0 {
			ngroups = numberKeys(table, tgid)
			if ngroups > fusedGroups {
				return nil, notFused("more than %d groups", fusedGroups)
			}
			if ngroups == 0 {
				st.Fused, st.Compiled = true, true
				return nil, nil
			}
		}
		// [out | absmax | ovf | miss]
		res := identities(fp.slots, ngroups, nagg+2)
		dRes, err := uploadScratch(r, res)
		if err != nil {
			return nil, err
		}
		dOut, dAbs := dRes, dRes.Add(8*ngroups*nagg)
		dOvf, dMiss := dAbs.Add(8*nagg), dAbs.Add(8*nagg+8)
		acc := r.d.accumulators(ngroups, nagg)
		block, shared := blockThreads, 0
		if acc == AccShared {
			block, shared = sharedBlock, 8*max(ngroups, 1)*nagg*sharedBlock
		}
		if err := kt.around(r.s, func() error {
			return r.launchJIT(fp.jitSource(ngroups, table, tgid, acc), "jit_agg", block, shared, dCols, dOffs, n, dOut, dAbs, dOvf, dMiss)
		}); err != nil {
			return nil, err
		}
		if err := r.s.CopyDtoH(bytesOf(res), dRes); err != nil {
			return nil, err
		}
		if err := r.s.Synchronize(); err != nil {
			return nil, err
		}
		if res[ngroups*nagg+nagg] != 0 {
			return nil, fmt.Errorf("decimal arithmetic overflowed int64 (in a row of the batch, selected or not)")
		}
		if res[ngroups*nagg+nagg+1] != 0 {
			if attempt > 0 || fp.key < 0 {
				return nil, fmt.Errorf("compiled pipeline: a key missing from the table after the key pass")
			}
			if err := mark(); err != nil {
				return nil, err
			}
			continue
		}
		if fp.key >= 0 {
			r.d.keepTable(markSrc, table)
		}
		abs := make([]uint64, nagg)
		track, bound := fp.tracked()
		for a := range abs {
			abs[a] = uint64(res[ngroups*nagg+a])
			if !track[a] {
				abs[a] = bound[a]
			}
		}
		packed := make([]int64, ngroups)
		for s, k := range table {
			if tgid[s] >= 0 {
				packed[tgid[s]] = k
			}
		}
		out, selected, groups, err := fp.state(packed, res[:ngroups*nagg], abs, ngroups)
		st.Selected, st.Groups, st.Launches, st.Fused, st.Compiled = selected, groups, r.launches, true, true
		st.Accumulators = acc
		if ns, terr := kt.total(); terr == nil {
			st.KernelNs = ns
		}
		return out, err
	}
}
