// Hash group-by on one int64 key per row (several key columns packed by
// join.cu's key_pack; other key columns that the packed ones determine are
// carried by a representative row, gb_first_row). Three steps give every
// row a dense group id:
//   gb_insert  — the distinct keys into an open-addressing table of 2^bits
//                slots (tkeys filled with GS_EMPTY_KEY by key_fill_empty),
//   gb_number  — every used slot gets the next id (tgid), and
//                group_keys[id] its key,
//   gb_lookup  — gids[i] = the id of keys[i];
// then aggregate kernels fold values into per-group arrays by gid. Ids are
// dense but in no particular order (the final sort orders results).
//
// Aggregates: with few groups (ngroups * 8 bytes of shared memory per
// block), the *_smem kernels pre-aggregate in shared memory and flush one
// atomic per group and block; otherwise the plain kernels use global
// atomics per row. gids == NULL means one group (a scalar aggregate). The
// host zeroes sums and counts and fills mins with INT64_MAX and maxes with
// INT64_MIN (agg_fill) before the first batch, so batches accumulate.
// Integer sums wrap on overflow (two's complement atomics); the host checks
// magnitudes (max |value| x rows) before choosing these kernels.
//
// Grid-stride loops; the *_smem kernels take ngroups * 8 bytes of dynamic
// shared memory.
#include "common.cuh"

extern "C" __global__ void gb_insert(const long long *keys, int n, long long *tkeys, int bits, int *failed) {
	unsigned long long mask = (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long k = keys[i];
		unsigned long long s = gs_slot(gs_hash_int(k), bits);
		for (unsigned long long p = 0;; p++) {
			if (p > mask) {
				atomicExch(failed, 1);
				break;
			}
			// A plain read first: with few distinct keys every row finds
			// its key already there, and a compare-and-swap per row on the
			// same few words serializes the whole grid (TPC-H Q1: 13 GB/s).
			long long seen = tkeys[s];
			if (seen == k) {
				break;
			}
			if (seen != GS_EMPTY_KEY) {
				s = (s + 1) & mask;
				continue;
			}
			long long prev = (long long)atomicCAS((unsigned long long *)&tkeys[s], (unsigned long long)GS_EMPTY_KEY,
			                                      (unsigned long long)k);
			if (prev == GS_EMPTY_KEY || prev == k) {
				break;
			}
			s = (s + 1) & mask;
		}
	}
}

// Every used slot s: tgid[s] = a new id (counting from *counter, which the
// host zeroes; it ends as the number of groups), group_keys[id] = its key.
extern "C" __global__ void gb_number(const long long *tkeys, int cap, int *tgid, int *counter,
                                     long long *group_keys) {
	for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < cap; s += gridDim.x * blockDim.x) {
		long long k = tkeys[s];
		if (k != GS_EMPTY_KEY) {
			int id = atomicAdd(counter, 1);
			tgid[s] = id;
			group_keys[id] = k;
		} else {
			tgid[s] = -1;
		}
	}
}

// gids[i] = the group id of keys[i] (-1 if absent: a key gb_insert did
// not see).
extern "C" __global__ void gb_lookup(const long long *keys, int n, const long long *tkeys, const int *tgid, int bits,
                                     int *gids) {
	unsigned long long mask = (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long k = keys[i];
		unsigned long long s = gs_slot(gs_hash_int(k), bits);
		int g = -1;
		for (unsigned long long p = 0; p <= mask; p++) {
			long long t = tkeys[s];
			if (t == k) {
				g = tgid[s];
				break;
			}
			if (t == GS_EMPTY_KEY) {
				break;
			}
			s = (s + 1) & mask;
		}
		gids[i] = g;
	}
}

// first_rows[g] = the smallest row index of group g (host fills with
// INT_MAX): a representative row for key columns carried along.
extern "C" __global__ void gb_first_row(const int *gids, int n, int *first_rows) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gids[i];
		if (g >= 0) {
			atomicMin(&first_rows[g], i);
		}
	}
}

// out[g] = v for g < ngroups: initializes aggregate arrays.
extern "C" __global__ void agg_fill(long long *out, int ngroups, long long v) {
	for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < ngroups; g += gridDim.x * blockDim.x) {
		out[g] = v;
	}
}

__device__ __forceinline__ int gs_gid(const int *gids, int i) { return gids != 0 ? gids[i] : 0; }

// sums[g] += vals[i] for every row i of group g.
extern "C" __global__ void agg_sum_i64(const long long *vals, const int *gids, int n, long long *sums) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicAdd((unsigned long long *)&sums[g], (unsigned long long)vals[i]);
		}
	}
}

// agg_sum_i64 with shared-memory pre-aggregation (ngroups small).
extern "C" __global__ void agg_sum_i64_smem(const long long *vals, const int *gids, int n, int ngroups,
                                            long long *sums) {
	extern __shared__ long long part[];
	for (int g = threadIdx.x; g < ngroups; g += blockDim.x) {
		part[g] = 0;
	}
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicAdd((unsigned long long *)&part[g], (unsigned long long)vals[i]);
		}
	}
	__syncthreads();
	for (int g = threadIdx.x; g < ngroups; g += blockDim.x) {
		if (part[g] != 0) {
			atomicAdd((unsigned long long *)&sums[g], (unsigned long long)part[g]);
		}
	}
}

// counts[g] += rows of group g.
extern "C" __global__ void agg_count(const int *gids, int n, long long *counts) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicAdd((unsigned long long *)&counts[g], 1ULL);
		}
	}
}

// agg_count with shared-memory pre-aggregation (ngroups small).
extern "C" __global__ void agg_count_smem(const int *gids, int n, int ngroups, long long *counts) {
	extern __shared__ long long part[];
	for (int g = threadIdx.x; g < ngroups; g += blockDim.x) {
		part[g] = 0;
	}
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicAdd((unsigned long long *)&part[g], 1ULL);
		}
	}
	__syncthreads();
	for (int g = threadIdx.x; g < ngroups; g += blockDim.x) {
		if (part[g] != 0) {
			atomicAdd((unsigned long long *)&counts[g], (unsigned long long)part[g]);
		}
	}
}

// mins[g] = min(mins[g], vals[i]) over group g.
extern "C" __global__ void agg_min_i64(const long long *vals, const int *gids, int n, long long *mins) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicMin(&mins[g], vals[i]);
		}
	}
}

// maxs[g] = max(maxs[g], vals[i]) over group g.
extern "C" __global__ void agg_max_i64(const long long *vals, const int *gids, int n, long long *maxs) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicMax(&maxs[g], vals[i]);
		}
	}
}

// sums[g] += vals[i] in float64 (order-dependent rounding, as any
// parallel float sum).
extern "C" __global__ void agg_sum_f64(const double *vals, const int *gids, int n, double *sums) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int g = gs_gid(gids, i);
		if (g >= 0) {
			atomicAdd(&sums[g], vals[i]);
		}
	}
}
