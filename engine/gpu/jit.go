package gpu

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"gostachio/kernels/cuda"
)

// The compiled form of the fused path: the row program becomes straight
// C (one statement per instruction, registers as locals, literals as
// constants), compiled by NVRTC when the pipeline first runs and cached by
// its source. The interpreted kernels (pipeline.cu's rowprog_*) run the
// same program where NVRTC is missing; both read the same instruction
// set, so fused_test.go's host reading checks what both compute.

// jitCache holds the compiled pipelines of a device.
type jitCache struct {
	once  sync.Once
	nvrtc *cuda.NVRTC
	err   error // why there is no NVRTC (the interpreter runs)
	mu    sync.Mutex
	mods  map[string]*cuda.Module
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
func (r *run) launchJIT(src, name string, shared int, args ...any) error {
	m, err := r.d.jitModule(src)
	if err != nil {
		return err
	}
	f, err := m.Function(name)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	r.launches++
	return r.d.launchFn(r.s, f, r.n, shared, args...)
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
	for pc := 0; pc < len(p.ins); pc += 4 {
		op, dst, a, bb := p.ins[pc], p.ins[pc+1], p.ins[pc+2], p.ins[pc+3]
		d := r(dst & 0xff)
		switch op {
		case plCol64:
			fmt.Fprintf(&b, "\tlong long %s = ((const long long *)cols[%d])[i];\n", d, a)
		case plCol32:
			fmt.Fprintf(&b, "\tlong long %s = (long long)((const int *)cols[%d])[i];\n", d, a)
		case plStr:
			fmt.Fprintf(&b, "\tlong long %s;\n\t{\n\t\tconst int *o = (const int *)offs[%d];\n"+
				"\t\tconst unsigned char *s = (const unsigned char *)cols[%d];\n"+
				"\t\tint a = o[i], len = o[i + 1] - a;\n\t\tif (len > %d) { *ovf = 1; len = %d; }\n"+
				"\t\tunsigned long long c = 0;\n#pragma unroll\n\t\tfor (int j = 0; j < %d; j++) {\n"+
				"\t\t\tc <<= 8;\n\t\t\tif (j < len) c |= (unsigned long long)s[a + j] + 1ULL;\n\t\t}\n"+
				"\t\t%s = (long long)c;\n\t}\n", d, a, a, bb, bb, bb, d)
		case plLit:
			fmt.Fprintf(&b, "\tconst long long %s = %s;\n", d, cLit(p.lits[a]))
		case plAdd:
			fmt.Fprintf(&b, "\tlong long %s = pl_add_ovf(%s, %s, ovf);\n", d, r(a), r(bb))
		case plSub:
			fmt.Fprintf(&b, "\tlong long %s = pl_sub_ovf(%s, %s, ovf);\n", d, r(a), r(bb))
		case plMul:
			fmt.Fprintf(&b, "\tlong long %s = pl_mul_ovf(%s, %s, ovf);\n", d, r(a), r(bb))
		case plCmp:
			fmt.Fprintf(&b, "\tlong long %s = %s %s %s;\n", d, r(a), cCmp[dst>>8], r(bb))
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
// is used; its aggregate kernel is compiled for one group).
func (fp *fusedPlan) jitSource(ngroups int) string {
	var b strings.Builder
	b.WriteString(cuda.CommonHeader())
	fmt.Fprintf(&b, "\n#define NAGG %d\n#define NGROUPS %d\n#define HAS_KEY %d\n", len(fp.slots), max(ngroups, 1), btoi(fp.key >= 0))
	b.WriteString("__device__ __forceinline__ int pl_kind(int a) {\n\tswitch (a) {\n")
	for a, s := range fp.slots {
		fmt.Fprintf(&b, "\tcase %d: return %d;\n", a, s.kind)
	}
	b.WriteString("\t}\n\treturn 0;\n}\n")
	b.WriteString(jitHelpers)
	b.WriteString(fp.rowSource())
	b.WriteString(jitKernels)
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

// jitKernels: jit_mark (the distinct keys of the selected rows, as
// rowprog_mark) and jit_agg (every selected row folded into per-thread
// register accumulators of NGROUPS x NAGG, reduced per warp at the end).
const jitKernels = `
extern "C" __global__ void jit_mark(const unsigned long long *__restrict__ cols,
                                    const unsigned long long *__restrict__ offs, int n, long long *tkeys,
                                    int *failed) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int sel, dead = 0;
		long long k, vals[NAGG];
		pl_row(i, cols, offs, &dead, &sel, &k, vals);
		if (!sel) continue;
		int s = pl_slot(k);
		for (int p = 0;; p++) {
			if (p == PL_SLOTS) { atomicExch(failed, 1); break; }
			long long seen = ((volatile long long *)tkeys)[s];
			if (seen == k) break;
			if (seen == GS_EMPTY_KEY) {
				long long prev = (long long)atomicCAS((unsigned long long *)&tkeys[s],
					(unsigned long long)GS_EMPTY_KEY, (unsigned long long)k);
				if (prev == GS_EMPTY_KEY || prev == k) break;
			}
			s = (s + 1) & (PL_SLOTS - 1);
		}
	}
}

extern "C" __global__ void jit_agg(const unsigned long long *__restrict__ cols,
                                   const unsigned long long *__restrict__ offs, int n, const long long *tkeys,
                                   const int *tgid, long long *out, unsigned long long *absmax, int *overflow) {
	__shared__ long long skeys[PL_SLOTS];
	__shared__ int sgid[PL_SLOTS];
	for (int j = threadIdx.x; j < PL_SLOTS; j += blockDim.x) {
		skeys[j] = tkeys[j];
		sgid[j] = tgid[j];
	}
	__syncthreads();
	long long acc[NGROUPS][NAGG];
	unsigned long long am[NAGG];
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		am[a] = 0;
#pragma unroll
		for (int g = 0; g < NGROUPS; g++) acc[g][a] = pl_identity(pl_kind(a));
	}
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int sel;
		long long k, vals[NAGG];
		pl_row(i, cols, offs, &ovf, &sel, &k, vals);
		if (!sel) continue;
		int g = 0;
		if (HAS_KEY) {
			int s = pl_slot(k);
			g = -1;
			for (int p = 0; p < PL_SLOTS; p++) {
				long long t = skeys[s];
				if (t == k) { g = sgid[s]; break; }
				if (t == GS_EMPTY_KEY) break;
				s = (s + 1) & (PL_SLOTS - 1);
			}
			if (g < 0) { ovf = 1; continue; }
		}
#pragma unroll
		for (int a = 0; a < NAGG; a++) {
			if (pl_kind(a) == 0) {
				unsigned long long m = pl_abs(vals[a]);
				am[a] = am[a] > m ? am[a] : m;
			}
#pragma unroll
			for (int gg = 0; gg < NGROUPS; gg++) {
				if (gg == g) acc[gg][a] = pl_combine(pl_kind(a), acc[gg][a], vals[a]);
			}
		}
	}
	int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
	for (int a = 0; a < NAGG; a++) {
		unsigned long long m = am[a];
		for (int d = GS_WARP / 2; d > 0; d >>= 1) {
			unsigned long long o = __shfl_down_sync(GS_FULL_MASK, m, d);
			m = m > o ? m : o;
		}
		if (lane == 0 && m != 0) atomicMax(&absmax[a], m);
#pragma unroll
		for (int g = 0; g < NGROUPS; g++) {
			long long x = acc[g][a];
			for (int d = GS_WARP / 2; d > 0; d >>= 1) {
				x = pl_combine(pl_kind(a), x, __shfl_down_sync(GS_FULL_MASK, x, d));
			}
			if (lane == 0 && x != pl_identity(pl_kind(a))) {
				if (pl_kind(a) == 0) atomicAdd((unsigned long long *)&out[g * NAGG + a], (unsigned long long)x);
				else if (pl_kind(a) == 1) atomicMin(&out[g * NAGG + a], x);
				else atomicMax(&out[g * NAGG + a], x);
			}
		}
	}
	if (ovf) atomicOr(overflow, 1);
}
`
