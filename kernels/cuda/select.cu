// Filters: predicates into per-row flags, stream compaction of the flags
// into a selection vector (warp ballots + block and grid prefix sums),
// gathers of columns by a selection, and the int prefix sums (scan) that
// compaction, string gathers, join emission and partitioning share.
//
// A filter runs as: pred_* kernels (GS_SET, then GS_AND / GS_OR for the
// other conjuncts) -> sel_count -> scan_small -> sel_write -> gather_* per
// column. Tiles: a block of SEL_BLOCK threads handles SEL_TILE consecutive
// rows; launch grid = ceil(n / SEL_TILE) blocks of exactly SEL_BLOCK
// threads for every kernel here that names a tile.
#include "common.cuh"

#define SEL_BLOCK 256
#define SEL_ITEMS 8
#define SEL_TILE (SEL_BLOCK * SEL_ITEMS)

// ---------------------------------------------------------------- predicates

// flags[i] (combined by mode) = (a[i] * mul) op lit. mul aligns a decimal
// column to the literal's scale (1 when they agree, 10^k when the literal
// has k more digits); the host aligns the literal when it has fewer.
extern "C" __global__ void pred_cmp_i64(const long long *a, long long mul, int n, int op, long long lit,
                                        unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		gs_store_flag(flags, i, gs_cmp_ll(a[i] * mul, lit, op), mode);
	}
}

// flags[i] = a[i] op lit for int32 and date columns.
extern "C" __global__ void pred_cmp_i32(const int *a, int n, int op, long long lit, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		gs_store_flag(flags, i, gs_cmp_ll((long long)a[i], lit, op), mode);
	}
}

// flags[i] = (a[i] * amul) op (b[i] * bmul): two int64/decimal columns.
extern "C" __global__ void pred_cmp_i64_i64(const long long *a, long long amul, const long long *b, long long bmul,
                                            int n, int op, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		gs_store_flag(flags, i, gs_cmp_ll(a[i] * amul, b[i] * bmul, op), mode);
	}
}

// flags[i] = a[i] op b[i]: two int32/date columns (l_commitdate < l_receiptdate).
extern "C" __global__ void pred_cmp_i32_i32(const int *a, const int *b, int n, int op, unsigned char *flags,
                                            int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		gs_store_flag(flags, i, gs_cmp_ll((long long)a[i], (long long)b[i], op), mode);
	}
}

// flags[i] = a[i] op lit for float64 columns (results of '/').
extern "C" __global__ void pred_cmp_f64(const double *a, int n, int op, double lit, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		double x = a[i];
		int v;
		switch (op) {
		case GS_EQ: v = x == lit; break;
		case GS_NE: v = x != lit; break;
		case GS_LT: v = x < lit; break;
		case GS_LE: v = x <= lit; break;
		case GS_GT: v = x > lit; break;
		default: v = x >= lit; break;
		}
		gs_store_flag(flags, i, v, mode);
	}
}

// flags[i] = lo <= a[i] * mul <= hi.
extern "C" __global__ void pred_between_i64(const long long *a, long long mul, int n, long long lo, long long hi,
                                            unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = a[i] * mul;
		gs_store_flag(flags, i, x >= lo && x <= hi, mode);
	}
}

// flags[i] = lo <= a[i] <= hi for int32 and date columns.
extern "C" __global__ void pred_between_i32(const int *a, int n, long long lo, long long hi, unsigned char *flags,
                                            int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = a[i];
		gs_store_flag(flags, i, x >= lo && x <= hi, mode);
	}
}

// flags[i] = a[i] in list[0..nlist) (negate: not in). Lists are short
// literal lists; a linear scan beats anything cleverer.
extern "C" __global__ void pred_in_i64(const long long *a, int n, const long long *list, int nlist, int negate,
                                       unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = a[i];
		int hit = 0;
		for (int k = 0; k < nlist && !hit; k++) {
			hit = list[k] == x;
		}
		gs_store_flag(flags, i, hit ^ (negate != 0), mode);
	}
}

// pred_in_i64 for int32 and date columns.
extern "C" __global__ void pred_in_i32(const int *a, int n, const long long *list, int nlist, int negate,
                                       unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = a[i];
		int hit = 0;
		for (int k = 0; k < nlist && !hit; k++) {
			hit = list[k] == x;
		}
		gs_store_flag(flags, i, hit ^ (negate != 0), mode);
	}
}

// flags[i] = !flags[i].
extern "C" __global__ void flags_not(unsigned char *flags, int n) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		flags[i] = (unsigned char)(flags[i] == 0);
	}
}

// flags[i] (combined by mode) = other[i]: combines the flags of a nested
// OR / AND computed into a scratch array.
extern "C" __global__ void flags_combine(unsigned char *flags, const unsigned char *other, int n, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		gs_store_flag(flags, i, other[i] != 0, mode);
	}
}

// ---------------------------------------------------------------- compaction

// gs_block_rank ranks the set flags of one SEL_BLOCK-row chunk: returns
// the number of set flags in lower threads; *total gets the chunk's count.
// Warp ballots give ranks within warps; one warp scans the warp counts.
__device__ __forceinline__ int gs_block_rank(int f, int *warp_sums, int *total) {
	int lane = threadIdx.x & (GS_WARP - 1);
	int warp = threadIdx.x / GS_WARP;
	unsigned m = __ballot_sync(GS_FULL_MASK, f);
	int rank = __popc(m & ((1u << lane) - 1u));
	if (lane == 0) {
		warp_sums[warp] = __popc(m);
	}
	__syncthreads();
	if (warp == 0) {
		int nw = SEL_BLOCK / GS_WARP;
		int w = lane < nw ? warp_sums[lane] : 0;
		for (int d = 1; d < GS_WARP; d <<= 1) {
			int y = __shfl_up_sync(GS_FULL_MASK, w, d);
			if (lane >= d) {
				w += y;
			}
		}
		if (lane < nw) {
			warp_sums[lane] = w;
		}
	}
	__syncthreads();
	int before = warp == 0 ? 0 : warp_sums[warp - 1];
	*total = warp_sums[SEL_BLOCK / GS_WARP - 1];
	__syncthreads();
	return before + rank;
}

// Pass 1: block_counts[b] = set flags in tile b.
extern "C" __global__ void sel_count(const unsigned char *flags, int n, int *block_counts) {
	__shared__ int warp_counts[SEL_BLOCK / GS_WARP];
	int base = blockIdx.x * SEL_TILE;
	int c = 0;
	for (int k = 0; k < SEL_TILE; k += SEL_BLOCK) {
		int i = base + k + threadIdx.x;
		int f = i < n && flags[i] != 0;
		c += __popc(__ballot_sync(GS_FULL_MASK, f));
	}
	int lane = threadIdx.x & (GS_WARP - 1);
	if (lane == 0) {
		warp_counts[threadIdx.x / GS_WARP] = c;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int s = 0;
		for (int w = 0; w < SEL_BLOCK / GS_WARP; w++) {
			s += warp_counts[w];
		}
		block_counts[blockIdx.x] = s;
	}
}

// Pass 3 (after scan_small turned block_counts into block_offsets): the
// indices of the set rows, in row order, to sel[block_offsets[b] ...].
extern "C" __global__ void sel_write(const unsigned char *flags, int n, const int *block_offsets, int *sel) {
	__shared__ int warp_sums[SEL_BLOCK / GS_WARP];
	int base = blockIdx.x * SEL_TILE;
	int carry = block_offsets[blockIdx.x];
	for (int k = 0; k < SEL_TILE; k += SEL_BLOCK) {
		int i = base + k + threadIdx.x;
		int f = i < n && flags[i] != 0;
		int total;
		int r = gs_block_rank(f, warp_sums, &total);
		if (f) {
			sel[carry + r] = i;
		}
		carry += total;
	}
}

// ---------------------------------------------------------------- scans

// Exclusive sum of in[0..n) into out[0..n) by one block (launch 1 block of
// 1024 threads), *total = the sum. For the short arrays of per-block
// counts. in and out may be the same array.
extern "C" __global__ void scan_small(const int *in, int n, int *out, int *total) {
	__shared__ int warp_sums[GS_WARP];
	int carry = 0;
	for (int base = 0; base < n; base += blockDim.x) {
		int i = base + threadIdx.x;
		int v = i < n ? in[i] : 0;
		int t;
		int ex = gs_block_exclusive_sum(v, warp_sums, &t);
		if (i < n) {
			out[i] = carry + ex;
		}
		carry += t;
	}
	if (threadIdx.x == 0) {
		*total = carry;
	}
}

// Large exclusive scan, pass 1: block_sums[b] = sum of tile b of in.
extern "C" __global__ void scan_reduce(const int *in, int n, int *block_sums) {
	__shared__ int warp_sums[GS_WARP];
	int base = blockIdx.x * SEL_TILE;
	int s = 0;
	for (int k = 0; k < SEL_TILE; k += SEL_BLOCK) {
		int i = base + k + threadIdx.x;
		s += i < n ? in[i] : 0;
	}
	int t;
	gs_block_exclusive_sum(s, warp_sums, &t);
	if (threadIdx.x == 0) {
		block_sums[blockIdx.x] = t;
	}
}

// Large exclusive scan, pass 3 (pass 2 is scan_small over block_sums):
// out[i] = block_offsets[tile] + sum of in[tile start .. i). With out an
// array of n+1 and scan_small's total pointed at out+n, out is an offsets
// array. in and out may be the same array.
extern "C" __global__ void scan_apply(const int *in, int n, const int *block_offsets, int *out) {
	__shared__ int warp_sums[GS_WARP];
	int base = blockIdx.x * SEL_TILE;
	int carry = block_offsets[blockIdx.x];
	for (int k = 0; k < SEL_TILE; k += SEL_BLOCK) {
		int i = base + k + threadIdx.x;
		int v = i < n ? in[i] : 0;
		int t;
		int ex = gs_block_exclusive_sum(v, warp_sums, &t);
		if (i < n) {
			out[i] = carry + ex;
		}
		carry += t;
	}
}

// ---------------------------------------------------------------- gathers
// dst[j] = src[idx[j]] for j < m; a negative index (a left outer join's
// missing build row) gives the zero value.

extern "C" __global__ void gather_i64(const long long *src, const int *idx, int m, long long *dst) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
		int i = idx[j];
		dst[j] = i < 0 ? 0 : src[i];
	}
}

extern "C" __global__ void gather_i32(const int *src, const int *idx, int m, int *dst) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
		int i = idx[j];
		dst[j] = i < 0 ? 0 : src[i];
	}
}

extern "C" __global__ void gather_f64(const double *src, const int *idx, int m, double *dst) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
		int i = idx[j];
		dst[j] = i < 0 ? 0.0 : src[i];
	}
}

extern "C" __global__ void gather_u8(const unsigned char *src, const int *idx, int m, unsigned char *dst) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
		int i = idx[j];
		dst[j] = i < 0 ? 0 : src[i];
	}
}

// String gather, pass 1: lens[j] = length of value idx[j] (0 for a
// negative index). Scan lens into the new offsets (m+1), then pass 2.
extern "C" __global__ void gather_str_len(const int *off, const int *idx, int m, int *lens) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
		int i = idx[j];
		lens[j] = i < 0 ? 0 : off[i + 1] - off[i];
	}
}

// String gather, pass 2: copies value idx[j]'s bytes to out[new_off[j] ..].
// One thread per value: TPC-H strings are short.
extern "C" __global__ void gather_str_bytes(const int *off, const unsigned char *bytes, const int *idx, int m,
                                            const int *new_off, unsigned char *out) {
	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
		int i = idx[j];
		if (i < 0) {
			continue;
		}
		const unsigned char *s = bytes + off[i];
		int len = off[i + 1] - off[i];
		unsigned char *d = out + new_off[j];
		for (int k = 0; k < len; k++) {
			d[k] = s[k];
		}
	}
}

// idx[i] = i: the identity selection.
extern "C" __global__ void iota_i32(int *idx, int n) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		idx[i] = i;
	}
}
