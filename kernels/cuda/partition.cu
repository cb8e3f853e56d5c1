// Row hashes and radix partitioning for exchanges. The hashes are those of
// kernels/cpu/hash.go (HashColumns): integer-coded columns hash by their
// int64 value, strings by their bytes, several key columns combined in
// order; a row goes to part hash mod parts (hash & (parts-1) for a power
// of two), as cpu.Partition sends it, so GPU and CPU workers of one
// exchange agree on where every key lives.
//
// Partitioning: part_ids -> part_hist (per-tile histograms, stored part-
// major: hist[p * tiles + t]) -> exclusive scan of the whole histogram
// (select.cu's scans) -> part_scatter, which writes a permutation of the
// rows grouped by part: part p holds perm[offsets[p * tiles] ..
// offsets[(p+1) * tiles]). Within a part, rows of one tile keep no
// particular order (shared-memory atomics place them): consumers of an
// exchange (aggregation, join, sort) do not depend on row order.
//
// part_hist and part_scatter use tiles of PART_TILE rows, blocks of
// PART_BLOCK threads, grid = ceil(n / PART_TILE), and parts * 4 bytes of
// dynamic shared memory (parts <= 8192). The hash kernels are grid-stride
// loops.
#include "common.cuh"

#define PART_BLOCK 256
#define PART_TILE (PART_BLOCK * 8)

// h[i] = hash of a[i] (first), else combined into h[i].
extern "C" __global__ void hash_i64(const long long *a, int n, int first, unsigned long long *h) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		unsigned long long v = gs_hash_int(a[i]);
		h[i] = first ? v : gs_hash_combine(h[i], v);
	}
}

// hash_i64 for int32 and date columns (hashing the same as int64 values).
extern "C" __global__ void hash_i32(const int *a, int n, int first, unsigned long long *h) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		unsigned long long v = gs_hash_int((long long)a[i]);
		h[i] = first ? v : gs_hash_combine(h[i], v);
	}
}

// hash_i64 for string columns.
extern "C" __global__ void hash_str(const int *off, const unsigned char *bytes, int n, int first,
                                    unsigned long long *h) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		unsigned long long v = gs_hash_bytes(bytes + off[i], off[i + 1] - off[i]);
		h[i] = first ? v : gs_hash_combine(h[i], v);
	}
}

// pids[i] = h[i] mod parts.
extern "C" __global__ void part_ids(const unsigned long long *h, int n, int parts, int *pids) {
	unsigned long long np = (unsigned long long)parts;
	int pow2 = (parts & (parts - 1)) == 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		pids[i] = (int)(pow2 ? (h[i] & (np - 1)) : (h[i] % np));
	}
}

// hist[p * tiles + t] = rows of tile t in part p (tiles = gridDim.x).
extern "C" __global__ void part_hist(const int *pids, int n, int parts, int *hist) {
	extern __shared__ int counts[];
	for (int p = threadIdx.x; p < parts; p += blockDim.x) {
		counts[p] = 0;
	}
	__syncthreads();
	int base = blockIdx.x * PART_TILE;
	for (int k = threadIdx.x; k < PART_TILE; k += blockDim.x) {
		int i = base + k;
		if (i < n) {
			atomicAdd(&counts[pids[i]], 1);
		}
	}
	__syncthreads();
	for (int p = threadIdx.x; p < parts; p += blockDim.x) {
		hist[p * gridDim.x + blockIdx.x] = counts[p];
	}
}

// perm[offsets[p * tiles + t] + k] = the k-th placed row of tile t in
// part p (offsets: the exclusive scan of part_hist's output).
extern "C" __global__ void part_scatter(const int *pids, int n, int parts, const int *offsets, int *perm) {
	extern __shared__ int cursor[];
	for (int p = threadIdx.x; p < parts; p += blockDim.x) {
		cursor[p] = offsets[p * gridDim.x + blockIdx.x];
	}
	__syncthreads();
	int base = blockIdx.x * PART_TILE;
	for (int k = threadIdx.x; k < PART_TILE; k += blockDim.x) {
		int i = base + k;
		if (i < n) {
			perm[atomicAdd(&cursor[pids[i]], 1)] = i;
		}
	}
}
