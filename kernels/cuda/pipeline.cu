// Kernels of the GPU query pipeline (engine/gpu) that the operator
// libraries lack: group-key codes of short strings, filter flags applied
// to group ids, and integer sums that report the largest magnitude they
// saw so the host can prove the (wrapping) atomic sums exact.
//
// Grid-stride loops; any 1-D launch shape works. The *_smem kernels take
// ngroups * 8 bytes of dynamic shared memory.
#include "common.cuh"

// out[i] = the code of string i (at most maxlen <= 7 bytes): byte j (from
// the first) contributes (b_j + 1) << 8*(maxlen-1-j), so codes order as
// the strings do and a shorter string never collides with a longer one.
// A longer string sets *overflow (the host measured maxlen from the
// offsets, so this is a broken batch).
extern "C" __global__ void str_code(const int *off, const unsigned char *bytes, int n, int maxlen, long long *out,
                                    int *overflow) {
	int bad = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int a = off[i], len = off[i + 1] - a;
		if (len > maxlen) {
			bad = 1;
			len = maxlen;
		}
		unsigned long long c = 0;
		for (int j = 0; j < maxlen; j++) {
			c <<= 8;
			if (j < len) {
				c |= (unsigned long long)bytes[a + j] + 1ULL;
			}
		}
		out[i] = (long long)c;
	}
	if (bad) {
		atomicOr(overflow, 1);
	}
}

// gids[i] = -1 where flags[i] == 0: rows a filter dropped join no group.
extern "C" __global__ void gids_mask(const unsigned char *flags, int n, int *gids) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		if (!flags[i]) {
			gids[i] = -1;
		}
	}
}

// gids[i] = flags[i] ? 0 : -1: the one group of an aggregate without keys.
extern "C" __global__ void gids_from_flags(const unsigned char *flags, int n, int *gids) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		gids[i] = flags[i] ? 0 : -1;
	}
}

__device__ __forceinline__ int pl_gid(const int *gids, int i) { return gids != 0 ? gids[i] : 0; }

__device__ __forceinline__ unsigned long long pl_abs(long long v) {
	return v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
}

__device__ __forceinline__ unsigned long long pl_max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// The largest |value| of the warp's lanes, one atomic per warp.
__device__ __forceinline__ void pl_flush_absmax(unsigned long long m, unsigned long long *absmax) {
	for (int d = GS_WARP / 2; d > 0; d >>= 1) {
		m = pl_max(m, __shfl_down_sync(GS_FULL_MASK, m, d));
	}
	if ((threadIdx.x & (GS_WARP - 1)) == 0 && m != 0) {
		atomicMax(absmax, m);
	}
}

// sums[g] += vals[i] over the rows of group g (global atomics), and
// *absmax = max(*absmax, |vals[i]|) over those rows: with rows the number
// of rows summed, absmax * rows < 2^63 proves no partial sum wrapped.
extern "C" __global__ void agg_sum_i64_chk(const long long *vals, const int *gids, int n, long long *sums,
                                           unsigned long long *absmax) {
	unsigned long long m = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = pl_gid(gids, i);
		if (g >= 0) {
			long long v = vals[i];
			atomicAdd((unsigned long long *)&sums[g], (unsigned long long)v);
			m = pl_max(m, pl_abs(v));
		}
	}
	pl_flush_absmax(m, absmax);
}

// agg_sum_i64_chk with shared-memory pre-aggregation (ngroups small).
extern "C" __global__ void agg_sum_i64_smem_chk(const long long *vals, const int *gids, int n, int ngroups,
                                                long long *sums, unsigned long long *absmax) {
	extern __shared__ long long part[];
	for (int g = threadIdx.x; g < ngroups; g += blockDim.x) {
		part[g] = 0;
	}
	__syncthreads();
	unsigned long long m = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = pl_gid(gids, i);
		if (g >= 0) {
			long long v = vals[i];
			atomicAdd((unsigned long long *)&part[g], (unsigned long long)v);
			m = pl_max(m, pl_abs(v));
		}
	}
	pl_flush_absmax(m, absmax);
	__syncthreads();
	for (int g = threadIdx.x; g < ngroups; g += blockDim.x) {
		if (part[g] != 0) {
			atomicAdd((unsigned long long *)&sums[g], (unsigned long long)part[g]);
		}
	}
}

// A scalar sum's fast path (no group ids, no filter flags): a block-wide
// tree reduction, one atomic per block. Same absmax contract.
extern "C" __global__ void sum_i64_flags_chk(const long long *vals, const unsigned char *flags, int n,
                                             long long *sum, unsigned long long *absmax) {
	long long s = 0;
	unsigned long long m = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		if (flags == 0 || flags[i]) {
			long long v = vals[i];
			s = (long long)((unsigned long long)s + (unsigned long long)v);
			m = pl_max(m, pl_abs(v));
		}
	}
	for (int d = GS_WARP / 2; d > 0; d >>= 1) {
		s = (long long)((unsigned long long)s + (unsigned long long)__shfl_down_sync(GS_FULL_MASK, s, d));
		m = pl_max(m, __shfl_down_sync(GS_FULL_MASK, m, d));
	}
	if ((threadIdx.x & (GS_WARP - 1)) == 0) {
		if (s != 0) {
			atomicAdd((unsigned long long *)sum, (unsigned long long)s);
		}
		if (m != 0) {
			atomicMax(absmax, m);
		}
	}
}

// *count += the rows whose flag is set (flags == NULL: all n).
extern "C" __global__ void count_flags(const unsigned char *flags, int n, long long *count) {
	long long c = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		c += (flags == 0 || flags[i]) ? 1 : 0;
	}
	for (int d = GS_WARP / 2; d > 0; d >>= 1) {
		c += __shfl_down_sync(GS_FULL_MASK, c, d);
	}
	if ((threadIdx.x & (GS_WARP - 1)) == 0 && c != 0) {
		atomicAdd((unsigned long long *)count, (unsigned long long)c);
	}
}

// With at most PL_FEW groups (TPC-H Q1 has four), shared-memory atomics
// serialize a warp on the same few words; each thread instead keeps its
// groups' sums in registers and a warp reduction flushes them, one atomic
// per warp and group. Same absmax contract as agg_sum_i64_chk.
#define PL_FEW 8

extern "C" __global__ void agg_sum_i64_few_chk(const long long *vals, const int *gids, int n, int ngroups,
                                               long long *sums, unsigned long long *absmax) {
	long long acc[PL_FEW];
#pragma unroll
	for (int g = 0; g < PL_FEW; g++) {
		acc[g] = 0;
	}
	unsigned long long m = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int gi = pl_gid(gids, i);
		if (gi >= 0) {
			long long v = vals[i];
#pragma unroll
			for (int g = 0; g < PL_FEW; g++) {
				if (g == gi) {
					acc[g] = (long long)((unsigned long long)acc[g] + (unsigned long long)v);
				}
			}
			m = pl_max(m, pl_abs(v));
		}
	}
#pragma unroll
	for (int g = 0; g < PL_FEW; g++) {
		long long s = acc[g];
		for (int d = GS_WARP / 2; d > 0; d >>= 1) {
			s = (long long)((unsigned long long)s + (unsigned long long)__shfl_down_sync(GS_FULL_MASK, s, d));
		}
		if ((threadIdx.x & (GS_WARP - 1)) == 0 && g < ngroups && s != 0) {
			atomicAdd((unsigned long long *)&sums[g], (unsigned long long)s);
		}
	}
	pl_flush_absmax(m, absmax);
}

// counts[g] += rows of group g, for at most PL_FEW groups (as above).
extern "C" __global__ void agg_count_few(const int *gids, int n, int ngroups, long long *counts) {
	long long acc[PL_FEW];
#pragma unroll
	for (int g = 0; g < PL_FEW; g++) {
		acc[g] = 0;
	}
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int gi = pl_gid(gids, i);
#pragma unroll
		for (int g = 0; g < PL_FEW; g++) {
			acc[g] += g == gi ? 1 : 0;
		}
	}
#pragma unroll
	for (int g = 0; g < PL_FEW; g++) {
		long long s = acc[g];
		for (int d = GS_WARP / 2; d > 0; d >>= 1) {
			s += __shfl_down_sync(GS_FULL_MASK, s, d);
		}
		if ((threadIdx.x & (GS_WARP - 1)) == 0 && g < ngroups && s != 0) {
			atomicAdd((unsigned long long *)&counts[g], (unsigned long long)s);
		}
	}
}

// ---------------------------------------------------------------- row programs
// A scan pipeline's filters, arithmetic, group key and aggregate arguments
// compiled (engine/gpu/fused.go) into one program that every thread runs
// per row, so the columns are read once, in one kernel, and nothing is
// written per row. Instructions are 4 ints {op, dst, a, b} over PL_REGS
// int64 registers; literals (and IN lists: a count, then the values) come
// from lits; cols[c] points at column c's values (strings: bytes) and
// offs[c] at a string column's offsets.
#define PL_REGS 32
#define PL_AGGS 12

#define PL_COL64 0   // r[dst] = int64 column a
#define PL_COL32 1   // r[dst] = int32 / date column a
#define PL_STR 2     // r[dst] = str_code of string column a, maxlen b
#define PL_LIT 3     // r[dst] = lits[a]
#define PL_ADD 4     // r[dst] = r[a] + r[b] (overflow checked)
#define PL_SUB 5     // r[dst] = r[a] - r[b]
#define PL_MUL 6     // r[dst] = r[a] * r[b]
#define PL_CMP 7     // r[dst] = r[a] op r[b], op (GS_EQ..GS_GE) in bits 8..15 of dst
#define PL_AND 8     // r[dst] = r[a] && r[b]
#define PL_OR 9      // r[dst] = r[a] || r[b]
#define PL_NOT 10    // r[dst] = !r[a]
#define PL_IN 11     // r[dst] = r[a] in lits[b+1 .. b+lits[b]]
#define PL_PACK 12   // r[dst] = (r[dst] << b) | r[a]  (codes already >= 0)

__device__ __forceinline__ long long pl_sub_ovf(long long a, long long b, int *ovf) {
	long long r = (long long)((unsigned long long)a - (unsigned long long)b);
	if (((a ^ b) & (a ^ r)) < 0) {
		*ovf = 1;
	}
	return r;
}

__device__ __forceinline__ long long pl_add_ovf(long long a, long long b, int *ovf) {
	long long r = (long long)((unsigned long long)a + (unsigned long long)b);
	if (((a ^ r) & (b ^ r)) < 0) {
		*ovf = 1;
	}
	return r;
}

__device__ __forceinline__ long long pl_mul_ovf(long long a, long long b, int *ovf) {
	long long lo = (long long)((unsigned long long)a * (unsigned long long)b);
	if (__mul64hi(a, b) != (lo >> 63)) {
		*ovf = 1;
	}
	return lo;
}

// pl_exec runs the program for row i.
__device__ __forceinline__ void pl_exec(const int4 *prog, int nins, const long long *lits,
                                        const unsigned long long *cols, const unsigned long long *offs, int i,
                                        long long *r, int *ovf) {
	for (int pc = 0; pc < nins; pc++) {
		int4 ins = prog[pc];
		int dst = ins.y & 0xff;
		switch (ins.x) {
		case PL_COL64: r[dst] = ((const long long *)cols[ins.z])[i]; break;
		case PL_COL32: r[dst] = ((const int *)cols[ins.z])[i]; break;
		case PL_STR: {
			const int *off = (const int *)offs[ins.z];
			const unsigned char *bytes = (const unsigned char *)cols[ins.z];
			int a = off[i], len = off[i + 1] - a, maxlen = ins.w;
			if (len > maxlen) {
				*ovf = 1;
				len = maxlen;
			}
			unsigned long long c = 0;
			for (int j = 0; j < maxlen; j++) {
				c <<= 8;
				if (j < len) {
					c |= (unsigned long long)bytes[a + j] + 1ULL;
				}
			}
			r[dst] = (long long)c;
			break;
		}
		case PL_LIT: r[dst] = lits[ins.z]; break;
		case PL_ADD: r[dst] = pl_add_ovf(r[ins.z], r[ins.w], ovf); break;
		case PL_SUB: r[dst] = pl_sub_ovf(r[ins.z], r[ins.w], ovf); break;
		case PL_MUL: r[dst] = pl_mul_ovf(r[ins.z], r[ins.w], ovf); break;
		case PL_CMP: r[dst] = gs_cmp_ll(r[ins.z], r[ins.w], (ins.y >> 8) & 0xff); break;
		case PL_AND: r[dst] = r[ins.z] != 0 && r[ins.w] != 0; break;
		case PL_OR: r[dst] = r[ins.z] != 0 || r[ins.w] != 0; break;
		case PL_NOT: r[dst] = r[ins.z] == 0; break;
		case PL_IN: {
			long long x = r[ins.z];
			int cnt = (int)lits[ins.w], hit = 0;
			for (int k = 0; k < cnt && !hit; k++) {
				hit = lits[ins.w + 1 + k] == x;
			}
			r[dst] = hit;
			break;
		}
		case PL_PACK: r[dst] = (long long)(((unsigned long long)r[dst] << ins.w) | (unsigned long long)r[ins.z]); break;
		}
	}
}

#define PL_SLOTS 64

__device__ __forceinline__ int pl_slot(long long k) { return (int)(gs_hash_int(k) >> 58); }

// rowprog_mark: the distinct group keys (register kr) of the rows that pass
// the filter (register fr; -1: all) into a table of PL_SLOTS keys (filled
// with GS_EMPTY_KEY by the host); *failed = 1 when it fills up (too many
// groups for rowprog_agg: the host takes the hash-table path).
extern "C" __global__ void rowprog_mark(const int4 *prog, int nins, const long long *lits,
                                        const unsigned long long *cols, const unsigned long long *offs, int n, int fr,
                                        int kr, long long *tkeys, int *failed, int *overflow) {
	long long r[PL_REGS];
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		pl_exec(prog, nins, lits, cols, offs, i, r, &ovf);
		if (fr >= 0 && r[fr] == 0) {
			continue;
		}
		long long k = r[kr];
		int s = pl_slot(k);
		for (int p = 0;; p++) {
			if (p == PL_SLOTS) {
				atomicExch(failed, 1);
				break;
			}
			long long seen = ((volatile long long *)tkeys)[s];
			if (seen == k) {
				break;
			}
			if (seen == GS_EMPTY_KEY) {
				long long prev = (long long)atomicCAS((unsigned long long *)&tkeys[s], (unsigned long long)GS_EMPTY_KEY,
				                                      (unsigned long long)k);
				if (prev == GS_EMPTY_KEY || prev == k) {
					break;
				}
			}
			s = (s + 1) & (PL_SLOTS - 1);
		}
	}
	if (ovf) {
		atomicOr(overflow, 1);
	}
}

// Aggregate kinds of rowprog_agg.
#define PL_SUM 0
#define PL_MIN 1
#define PL_MAX 2

__device__ __forceinline__ long long pl_identity(int kind) {
	return kind == PL_MIN ? (long long)0x7fffffffffffffffLL : kind == PL_MAX ? (long long)0x8000000000000000ULL : 0LL;
}

__device__ __forceinline__ long long pl_combine(int kind, long long a, long long b) {
	if (kind == PL_MIN) {
		return a < b ? a : b;
	}
	if (kind == PL_MAX) {
		return a > b ? a : b;
	}
	return (long long)((unsigned long long)a + (unsigned long long)b);
}

// rowprog_agg folds the selected rows into ngroups <= PL_FEW groups: the
// group of a row is tgid[slot of its key in tkeys] (kr < 0: group 0), and
// aggregate a (< nagg <= PL_AGGS) of kind kinds[a] folds register regs[a]
// (-1: the constant 1, a count) into out[g * nagg + a] (the host fills out
// with each kind's identity). Per warp and row batch, every group's values
// are reduced with shuffles and one lane folds them into shared memory;
// blocks flush with global atomics. absmax[a] gets the largest |value| a
// sum saw (as agg_sum_i64_chk). Needs ngroups * nagg * 8 bytes of dynamic
// shared memory and blocks of a multiple of 32 threads.
extern "C" __global__ void rowprog_agg(const int4 *prog, int nins, const long long *lits,
                                       const unsigned long long *cols, const unsigned long long *offs, int n, int fr,
                                       int kr, const long long *tkeys, const int *tgid, int ngroups, int nagg,
                                       const int *kinds, const int *regs, long long *out, unsigned long long *absmax,
                                       int *overflow) {
	extern __shared__ long long acc[];
	for (int j = threadIdx.x; j < ngroups * nagg; j += blockDim.x) {
		acc[j] = pl_identity(kinds[j % nagg]);
	}
	__syncthreads();
	long long r[PL_REGS];
	unsigned long long am[PL_AGGS];
#pragma unroll
	for (int a = 0; a < PL_AGGS; a++) {
		am[a] = 0;
	}
	int ovf = 0;
	int lane = threadIdx.x & (GS_WARP - 1);
	for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
		int i = base + threadIdx.x;
		int g = -1;
		if (i < n) {
			pl_exec(prog, nins, lits, cols, offs, i, r, &ovf);
			if (fr < 0 || r[fr] != 0) {
				g = 0;
				if (kr >= 0) {
					long long k = r[kr];
					int s = pl_slot(k);
					g = -1;
					for (int p = 0; p < PL_SLOTS; p++) {
						long long t = tkeys[s];
						if (t == k) {
							g = tgid[s];
							break;
						}
						if (t == GS_EMPTY_KEY) {
							break;
						}
						s = (s + 1) & (PL_SLOTS - 1);
					}
					if (g < 0) {
						ovf = 1; // a key rowprog_mark did not see: a broken run
					}
				}
			}
		}
#pragma unroll
		for (int a = 0; a < PL_AGGS; a++) {
			if (a >= nagg) {
				break;
			}
			int kind = kinds[a];
			long long v = regs[a] < 0 ? 1 : (g >= 0 ? r[regs[a]] : 0);
			if (g >= 0 && kind == PL_SUM) {
				am[a] = pl_max(am[a], pl_abs(v));
			}
			for (int gg = 0; gg < PL_FEW; gg++) {
				if (gg >= ngroups) {
					break;
				}
				long long x = g == gg ? v : pl_identity(kind);
				for (int d = GS_WARP / 2; d > 0; d >>= 1) {
					x = pl_combine(kind, x, __shfl_down_sync(GS_FULL_MASK, x, d));
				}
				if (lane == 0 && x != pl_identity(kind)) {
					long long *slot = &acc[gg * nagg + a];
					if (kind == PL_SUM) {
						atomicAdd((unsigned long long *)slot, (unsigned long long)x);
					} else if (kind == PL_MIN) {
						atomicMin(slot, x);
					} else {
						atomicMax(slot, x);
					}
				}
			}
		}
	}
#pragma unroll
	for (int a = 0; a < PL_AGGS; a++) {
		if (a < nagg) {
			pl_flush_absmax(am[a], &absmax[a]);
		}
	}
	if (ovf) {
		atomicOr(overflow, 1);
	}
	__syncthreads();
	for (int j = threadIdx.x; j < ngroups * nagg; j += blockDim.x) {
		int kind = kinds[j % nagg];
		long long x = acc[j];
		if (x == pl_identity(kind)) {
			continue;
		}
		if (kind == PL_SUM) {
			atomicAdd((unsigned long long *)&out[j], (unsigned long long)x);
		} else if (kind == PL_MIN) {
			atomicMin(&out[j], x);
		} else {
			atomicMax(&out[j], x);
		}
	}
}
