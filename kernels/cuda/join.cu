// Hash join on one int64 key per row: open addressing with linear probing
// in a table of 2^bits slots (tkeys: keys, GS_EMPTY_KEY when free; trows:
// the build row of each slot). Duplicate build keys take a slot each, and
// a probe walks its run of slots to the first free one, so every match is
// found. The host sizes the table at least twice the build rows (a table
// that fills up sets *failed) and fills tkeys with GS_EMPTY_KEY (memset of
// 0x80 in the top byte is not enough: use key_fill_empty).
//
// Composite keys (l_partkey, l_suppkey) are packed into one int64 first
// by key_pack, exactly, from the columns' value ranges.
//
// Inner and left outer joins: hj_probe_count -> exclusive scan of the
// counts (select.cu's scan_reduce / scan_small / scan_apply) ->
// hj_probe_emit -> gathers by the probe and build row lists. Semi and anti
// joins: hj_probe_flags -> compaction. Grid-stride loops throughout.
#include "common.cuh"

// tkeys[s] = GS_EMPTY_KEY for every slot.
extern "C" __global__ void key_fill_empty(long long *tkeys, int cap) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < cap; i += gridDim.x * blockDim.x) {
		tkeys[i] = GS_EMPTY_KEY;
	}
}

// out[i] = a[i] - lo (first), else (out[i] << bits) | (a[i] - lo): packs
// key columns into one int64; the host picks lo and bits from the value
// range of both join sides, so packing is exact. a is int64 (is32 == 0)
// or int32 (is32 != 0, read through a32).
extern "C" __global__ void key_pack(const long long *a, const int *a32, int is32, int n, long long lo, int bits,
                                    int first, long long *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long v = (is32 ? (long long)a32[i] : a[i]) - lo;
		out[i] = first ? v : (long long)(((unsigned long long)out[i] << bits) | (unsigned long long)v);
	}
}

// Build: inserts keys[i] (row row_base + i) into the table.
extern "C" __global__ void hj_build(const long long *keys, int n, int row_base, long long *tkeys, int *trows,
                                    int bits, int *failed) {
	unsigned long long mask = (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long k = keys[i];
		unsigned long long s = gs_slot(gs_hash_int(k), bits);
		unsigned long long probes = 0;
		for (;;) {
			long long prev = (long long)atomicCAS((unsigned long long *)&tkeys[s], (unsigned long long)GS_EMPTY_KEY,
			                                      (unsigned long long)k);
			if (prev == GS_EMPTY_KEY) {
				trows[s] = row_base + i;
				break;
			}
			s = (s + 1) & mask;
			if (++probes > mask) {
				atomicExch(failed, 1);
				break;
			}
		}
	}
}

// counts[i] = number of build rows matching probe key keys[i]; with outer,
// at least 1 (the unmatched row is emitted once, with build row -1).
extern "C" __global__ void hj_probe_count(const long long *keys, int n, const long long *tkeys, int bits, int outer,
                                          int *counts) {
	unsigned long long mask = (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long k = keys[i];
		unsigned long long s = gs_slot(gs_hash_int(k), bits);
		int c = 0;
		for (unsigned long long p = 0; p <= mask; p++) {
			long long t = tkeys[s];
			if (t == GS_EMPTY_KEY) {
				break;
			}
			c += t == k;
			s = (s + 1) & mask;
		}
		counts[i] = outer && c == 0 ? 1 : c;
	}
}

// Semi join (anti == 0): flags[i] = keys[i] has a match; anti join: has none.
extern "C" __global__ void hj_probe_flags(const long long *keys, int n, const long long *tkeys, int bits, int anti,
                                          unsigned char *flags, int mode) {
	unsigned long long mask = (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long k = keys[i];
		unsigned long long s = gs_slot(gs_hash_int(k), bits);
		int hit = 0;
		for (unsigned long long p = 0; p <= mask && !hit; p++) {
			long long t = tkeys[s];
			if (t == GS_EMPTY_KEY) {
				break;
			}
			hit = t == k;
			s = (s + 1) & mask;
		}
		gs_store_flag(flags, i, hit ^ (anti != 0), mode);
	}
}

// Emit: for probe row i, writes its matches at offsets[i] ..: out_probe[j]
// = i, out_build[j] = the build row (-1 for outer's unmatched row). The
// order of one probe row's matches follows the table, not the build input.
extern "C" __global__ void hj_probe_emit(const long long *keys, int n, const long long *tkeys, const int *trows,
                                         int bits, const int *offsets, int outer, int *out_probe, int *out_build) {
	unsigned long long mask = (1ULL << bits) - 1;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long k = keys[i];
		unsigned long long s = gs_slot(gs_hash_int(k), bits);
		int o = offsets[i];
		int c = 0;
		for (unsigned long long p = 0; p <= mask; p++) {
			long long t = tkeys[s];
			if (t == GS_EMPTY_KEY) {
				break;
			}
			if (t == k) {
				out_probe[o + c] = i;
				out_build[o + c] = trows[s];
				c++;
			}
			s = (s + 1) & mask;
		}
		if (outer && c == 0) {
			out_probe[o] = i;
			out_build[o] = -1;
		}
	}
}
