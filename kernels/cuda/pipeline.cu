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
