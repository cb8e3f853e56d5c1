// Shared device helpers of the gostachio CUDA kernels.
//
// Layout (as kernels/cpu/vec.go): columns are plain arrays: int64 and
// decimal (scaled int64) as long long, int32 and date (days since
// 1970-01-01) as int, strings as int offsets (n+1) plus bytes, predicate
// results as one unsigned char (0 or 1) per row. Row counts and indices
// are int (the engine caps a batch below 2^31 rows).
//
// Every exported kernel is extern "C" with plain C parameter types, so its
// PTX name is its C name and the Go side (cuda.Function.Launch) passes
// 8-byte slots: pointers, long long, int, unsigned, double.
#pragma once

#define GS_WARP 32
#define GS_FULL_MASK 0xffffffffu

// Comparison operators of the predicate kernels (plan.FnEq .. FnGe order).
#define GS_EQ 0
#define GS_NE 1
#define GS_LT 2
#define GS_LE 3
#define GS_GT 4
#define GS_GE 5

// How a predicate kernel combines its result with flags[] (so conjunctions
// and disjunctions need no extra pass).
#define GS_SET 0
#define GS_AND 1
#define GS_OR 2

__device__ __forceinline__ int gs_cmp_ll(long long a, long long b, int op) {
	switch (op) {
	case GS_EQ: return a == b;
	case GS_NE: return a != b;
	case GS_LT: return a < b;
	case GS_LE: return a <= b;
	case GS_GT: return a > b;
	default: return a >= b;
	}
}

__device__ __forceinline__ void gs_store_flag(unsigned char *flags, int i, int v, int mode) {
	if (mode == GS_AND) {
		flags[i] = (unsigned char)(flags[i] & v);
	} else if (mode == GS_OR) {
		flags[i] = (unsigned char)(flags[i] | v);
	} else {
		flags[i] = (unsigned char)v;
	}
}

// The row hash of kernels/cpu/hash.go (wyhash-style multiply-fold), so that
// GPU and CPU devices partition and look up keys alike.
#define GS_K0 0xa0761d6478bd642fULL
#define GS_K1 0xe7037ed1a0b428dbULL
#define GS_K2 0x8ebc6af09c88c6e3ULL
#define GS_K3 0x589965cc75374cc3ULL

__device__ __forceinline__ unsigned long long gs_mum(unsigned long long a, unsigned long long b) {
	return __umul64hi(a, b) ^ (a * b);
}

// htInt: integer-coded values hash by their int64 value.
__device__ __forceinline__ unsigned long long gs_hash_int(long long v) {
	return gs_mum((unsigned long long)v ^ GS_K0, GS_K1);
}

// htCombine: mixes the next key column's hash v into the row hash h.
__device__ __forceinline__ unsigned long long gs_hash_combine(unsigned long long h, unsigned long long v) {
	return gs_mum(h ^ GS_K2, v ^ GS_K3);
}

__device__ __forceinline__ unsigned long long gs_load_le(const unsigned char *p, int n) {
	unsigned long long v = 0;
	for (int i = n - 1; i >= 0; i--) {
		v = (v << 8) | p[i];
	}
	return v;
}

// htBytes: a byte string's hash (byte-wise loads: string data is unaligned).
__device__ __forceinline__ unsigned long long gs_hash_bytes(const unsigned char *p, int n) {
	unsigned long long seed = GS_K0 ^ ((unsigned long long)n * GS_K3);
	while (n > 16) {
		seed = gs_mum(gs_load_le(p, 8) ^ GS_K1, gs_load_le(p + 8, 8) ^ seed);
		p += 16;
		n -= 16;
	}
	unsigned long long a = 0, b = 0;
	if (n >= 8) {
		a = gs_load_le(p, 8);
		b = gs_load_le(p + n - 8, 8);
	} else if (n >= 4) {
		a = gs_load_le(p, 4);
		b = gs_load_le(p + n - 4, 4);
	} else if (n > 0) {
		a = ((unsigned long long)p[0] << 16) | ((unsigned long long)p[n >> 1] << 8) | p[n - 1];
	}
	return gs_mum(gs_mum(a ^ GS_K1, b ^ seed) ^ GS_K2, GS_K3);
}

// The empty slot of the hash tables (join.cu, groupby.cu): keys must not
// take this value (host code checks; TPC-H keys are small and positive).
#define GS_EMPTY_KEY ((long long)0x8000000000000000ULL)

// gs_slot picks a table slot from the hash's high bits (partitioning uses
// the low bits, hash mod parts, as the CPU engine does).
__device__ __forceinline__ unsigned long long gs_slot(unsigned long long h, int bits) {
	return bits == 0 ? 0ULL : (h >> (64 - bits));
}

// Block-wide exclusive sum of one int per thread (blockDim.x a multiple of
// 32, at most 1024). Returns the thread's exclusive prefix; *total gets
// the block's sum. warp_sums is shared scratch of 32 ints. Every thread of
// the block must call it.
__device__ __forceinline__ int gs_block_exclusive_sum(int v, int *warp_sums, int *total) {
	int lane = threadIdx.x & (GS_WARP - 1);
	int warp = threadIdx.x / GS_WARP;
	int nwarps = blockDim.x / GS_WARP;
	int x = v;
	for (int d = 1; d < GS_WARP; d <<= 1) {
		int y = __shfl_up_sync(GS_FULL_MASK, x, d);
		if (lane >= d) {
			x += y;
		}
	}
	if (lane == GS_WARP - 1) {
		warp_sums[warp] = x;
	}
	__syncthreads();
	if (warp == 0) {
		int w = lane < nwarps ? warp_sums[lane] : 0;
		for (int d = 1; d < GS_WARP; d <<= 1) {
			int y = __shfl_up_sync(GS_FULL_MASK, w, d);
			if (lane >= d) {
				w += y;
			}
		}
		if (lane < nwarps) {
			warp_sums[lane] = w; // inclusive prefix of the warp sums
		}
	}
	__syncthreads();
	int before = warp == 0 ? 0 : warp_sums[warp - 1];
	*total = warp_sums[nwarps - 1];
	__syncthreads(); // warp_sums may be reused by the caller
	return before + x - v;
}
