// Sort and top-k on normalized keys: every ORDER BY becomes one unsigned
// 64-bit key per row whose unsigned order is the wanted order (sortkey_*
// build it, packing several columns most significant first when their
// ranges fit in 64 bits; descending columns are complemented), paired with
// the row's position. Pairs compare by (key, pos), so ties keep input
// order and results are deterministic. After sorting, the positions gather
// the columns (select.cu's gather_*). Orders whose keys do not fit in 64
// bits (long string keys) are finished on the host.
//
// Full sort: a bitonic network over N = a power of two >= SORT_TILE pairs
// (sort_init pads with (~0, INT_MAX) pairs, which sort last):
//   bitonic_sort_tiles                        (grid N/SORT_TILE)
//   for k = 2*SORT_TILE; k <= N; k *= 2:
//       for j = k/2; j >= SORT_TILE; j /= 2:
//           bitonic_merge_global(j, k)        (grid N/2/256, block 256)
//       bitonic_merge_tiles(k)                (grid N/SORT_TILE)
// Tile kernels run SORT_TILE/2 threads per block.
//
// Top-k (k <= SORT_TILE): topk_tiles sorts each tile of the input and
// keeps its first k; run it again on its output until one tile remains.
#include "common.cuh"

#define SORT_TILE 1024
#define SORT_THREADS (SORT_TILE / 2)
#define SORT_PAD_POS 0x7fffffff

// out[i] = enc (first) or (out[i] << bits) | enc, where enc = a[i] - lo
// (the host passes the column's minimum and bits covering max - lo) and,
// for desc, enc = (2^bits - 1) - enc. a is int64 (is32 == 0) or int32.
extern "C" __global__ void sortkey_int(const long long *a, const int *a32, int is32, int n, long long lo, int bits,
                                       int desc, int first, unsigned long long *out) {
	unsigned long long mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long v = is32 ? (long long)a32[i] : a[i];
		unsigned long long enc = ((unsigned long long)v - (unsigned long long)lo) & mask;
		if (desc) {
			enc = mask - enc;
		}
		out[i] = first || bits >= 64 ? enc : (out[i] << bits) | enc;
	}
}

// out[i] = an order-preserving encoding of float64 a[i] (the whole key:
// 64 bits); NaNs sort last ascending.
extern "C" __global__ void sortkey_f64(const double *a, int n, int desc, unsigned long long *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		unsigned long long u = (unsigned long long)__double_as_longlong(a[i]);
		u = (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
		out[i] = desc ? ~u : u;
	}
}

// Packs the first nbytes (1..8) bytes of string value i, big-endian and
// zero-padded, into the key (exact for strings of at most nbytes bytes
// without NUL bytes; a prefix order otherwise).
extern "C" __global__ void sortkey_str(const int *off, const unsigned char *bytes, int n, int nbytes, int desc,
                                       int first, unsigned long long *out) {
	int bits = 8 * nbytes;
	unsigned long long mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const unsigned char *s = bytes + off[i];
		int len = off[i + 1] - off[i];
		unsigned long long enc = 0;
		for (int k = 0; k < nbytes; k++) {
			enc = (enc << 8) | (k < len ? s[k] : 0);
		}
		if (desc) {
			enc = mask - enc;
		}
		out[i] = first || bits >= 64 ? enc : (out[i] << bits) | enc;
	}
}

// pos[i] = i for i < n; pairs n..N-1 become padding that sorts last.
extern "C" __global__ void sort_init(unsigned long long *keys, int *pos, int n, int N) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
		if (i < n) {
			pos[i] = i;
		} else {
			keys[i] = ~0ULL;
			pos[i] = SORT_PAD_POS;
		}
	}
}

__device__ __forceinline__ void gs_cmp_swap(unsigned long long *k, int *p, int a, int b, int asc) {
	unsigned long long ka = k[a], kb = k[b];
	int pa = p[a], pb = p[b];
	int gt = ka > kb || (ka == kb && pa > pb);
	if (gt == asc) {
		k[a] = kb;
		k[b] = ka;
		p[a] = pb;
		p[b] = pa;
	}
}

// The steps j = jstart .. 1 of bitonic stage k on the tile in shared
// memory; dir_base + i decides the direction of pair i (global index for
// the full sort, 0 for top-k's all-ascending tiles).
__device__ void gs_tile_steps(unsigned long long *k, int *p, int kk, int jstart, int dir_base) {
	for (int j = jstart; j > 0; j >>= 1) {
		int t = threadIdx.x;
		int i = 2 * j * (t / j) + (t % j);
		gs_cmp_swap(k, p, i, i + j, ((dir_base + i) & kk) == 0);
		__syncthreads();
	}
}

__device__ void gs_tile_load(const unsigned long long *keys, const int *pos, int n, int base, unsigned long long *k,
                             int *p) {
	for (int t = threadIdx.x; t < SORT_TILE; t += blockDim.x) {
		int i = base + t;
		k[t] = i < n ? keys[i] : ~0ULL;
		p[t] = i < n ? pos[i] : SORT_PAD_POS;
	}
	__syncthreads();
}

// Sorts every tile of keys/pos[0..N) in the bitonic network's directions
// (stages k = 2 .. SORT_TILE).
extern "C" __global__ void bitonic_sort_tiles(unsigned long long *keys, int *pos, int N) {
	__shared__ unsigned long long k[SORT_TILE];
	__shared__ int p[SORT_TILE];
	int base = blockIdx.x * SORT_TILE;
	gs_tile_load(keys, pos, N, base, k, p);
	for (int kk = 2; kk <= SORT_TILE; kk <<= 1) {
		gs_tile_steps(k, p, kk, kk >> 1, base);
	}
	for (int t = threadIdx.x; t < SORT_TILE; t += blockDim.x) {
		keys[base + t] = k[t];
		pos[base + t] = p[t];
	}
}

// One step (j >= SORT_TILE) of stage k over global memory: N/2 pairs.
extern "C" __global__ void bitonic_merge_global(unsigned long long *keys, int *pos, int N, int j, int k) {
	for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < N / 2; t += gridDim.x * blockDim.x) {
		int i = 2 * j * (t / j) + (t % j);
		gs_cmp_swap(keys, pos, i, i + j, (i & k) == 0);
	}
}

// The steps j = SORT_TILE/2 .. 1 of stage k, tile by tile in shared memory.
extern "C" __global__ void bitonic_merge_tiles(unsigned long long *keys, int *pos, int N, int k) {
	__shared__ unsigned long long sk[SORT_TILE];
	__shared__ int sp[SORT_TILE];
	int base = blockIdx.x * SORT_TILE;
	gs_tile_load(keys, pos, N, base, sk, sp);
	gs_tile_steps(sk, sp, k, SORT_TILE >> 1, base);
	for (int t = threadIdx.x; t < SORT_TILE; t += blockDim.x) {
		keys[base + t] = sk[t];
		pos[base + t] = sp[t];
	}
}

// Top-k: sorts tile b of keys/pos[0..n) ascending (padding past n) and
// writes its first k pairs to out_keys/out_pos[b*k ..].
extern "C" __global__ void topk_tiles(const unsigned long long *keys, const int *pos, int n, int k,
                                      unsigned long long *out_keys, int *out_pos) {
	__shared__ unsigned long long sk[SORT_TILE];
	__shared__ int sp[SORT_TILE];
	gs_tile_load(keys, pos, n, blockIdx.x * SORT_TILE, sk, sp);
	for (int kk = 2; kk <= SORT_TILE; kk <<= 1) {
		gs_tile_steps(sk, sp, kk, kk >> 1, 0);
	}
	for (int t = threadIdx.x; t < k; t += blockDim.x) {
		out_keys[blockIdx.x * k + t] = sk[t];
		out_pos[blockIdx.x * k + t] = sp[t];
	}
}
