// String predicates and functions over string columns (int offsets, n+1 of
// them, plus bytes), on bytes as plan/expr.go says: LIKE ('%' any run,
// '_' one byte), prefix / suffix / contains (the host turns 'abc%',
// '%abc', '%abc%' into these), equality and IN against literals,
// comparisons, substring. One thread per value (TPC-H strings are short);
// grid-stride loops: any 1-D launch shape works. Predicates write flags
// combined by mode (GS_SET / GS_AND / GS_OR) and negate for NOT.
#include "common.cuh"

// gs_like matches s[0..n) against pattern p[0..m): the classic wildcard
// matcher that backtracks to the last '%' only, which is exact for '%'
// and '_' patterns and linear for TPC-H's.
__device__ int gs_like(const unsigned char *s, int n, const unsigned char *p, int m) {
	int i = 0, j = 0, star = -1, mark = 0;
	while (i < n) {
		if (j < m && (p[j] == '_' || (p[j] != '%' && p[j] == s[i]))) {
			i++;
			j++;
		} else if (j < m && p[j] == '%') {
			star = j++;
			mark = i;
		} else if (star >= 0) {
			j = star + 1;
			i = ++mark;
		} else {
			return 0;
		}
	}
	while (j < m && p[j] == '%') {
		j++;
	}
	return j == m;
}

__device__ __forceinline__ int gs_bytes_eq(const unsigned char *a, const unsigned char *b, int n) {
	for (int k = 0; k < n; k++) {
		if (a[k] != b[k]) {
			return 0;
		}
	}
	return 1;
}

// Three-way byte comparison, shorter-is-less on a common prefix.
__device__ __forceinline__ int gs_bytes_cmp(const unsigned char *a, int an, const unsigned char *b, int bn) {
	int n = an < bn ? an : bn;
	for (int k = 0; k < n; k++) {
		if (a[k] != b[k]) {
			return a[k] < b[k] ? -1 : 1;
		}
	}
	return an < bn ? -1 : (an > bn ? 1 : 0);
}

// flags[i] = value i LIKE pat (negate: NOT LIKE).
extern "C" __global__ void str_like(const int *off, const unsigned char *bytes, int n, const unsigned char *pat,
                                    int plen, int negate, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int v = gs_like(bytes + off[i], off[i + 1] - off[i], pat, plen);
		gs_store_flag(flags, i, v ^ (negate != 0), mode);
	}
}

// flags[i] = value i starts with pat.
extern "C" __global__ void str_prefix(const int *off, const unsigned char *bytes, int n, const unsigned char *pat,
                                      int plen, int negate, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int len = off[i + 1] - off[i];
		int v = len >= plen && gs_bytes_eq(bytes + off[i], pat, plen);
		gs_store_flag(flags, i, v ^ (negate != 0), mode);
	}
}

// flags[i] = value i ends with pat.
extern "C" __global__ void str_suffix(const int *off, const unsigned char *bytes, int n, const unsigned char *pat,
                                      int plen, int negate, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int len = off[i + 1] - off[i];
		int v = len >= plen && gs_bytes_eq(bytes + off[i + 1] - plen, pat, plen);
		gs_store_flag(flags, i, v ^ (negate != 0), mode);
	}
}

// flags[i] = value i contains pat (naive search: patterns are short).
extern "C" __global__ void str_contains(const int *off, const unsigned char *bytes, int n, const unsigned char *pat,
                                        int plen, int negate, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const unsigned char *s = bytes + off[i];
		int len = off[i + 1] - off[i];
		int v = plen == 0;
		for (int k = 0; k + plen <= len && !v; k++) {
			v = gs_bytes_eq(s + k, pat, plen);
		}
		gs_store_flag(flags, i, v ^ (negate != 0), mode);
	}
}

// flags[i] = value i op lit (GS_EQ .. GS_GE, bytewise).
extern "C" __global__ void str_cmp(const int *off, const unsigned char *bytes, int n, int op,
                                   const unsigned char *lit, int llen, unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int c = gs_bytes_cmp(bytes + off[i], off[i + 1] - off[i], lit, llen);
		gs_store_flag(flags, i, gs_cmp_ll(c, 0, op), mode);
	}
}

// flags[i] = bytes [start0, end) of value i (see str_substr_len) are in
// the literal list (list_off: nlist+1 offsets into list_bytes); start0 =
// 0, len = -1 tests the whole value (IN over strings).
extern "C" __global__ void str_in(const int *off, const unsigned char *bytes, int n, int start0, int len,
                                  const int *list_off, const unsigned char *list_bytes, int nlist, int negate,
                                  unsigned char *flags, int mode) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int vlen = off[i + 1] - off[i];
		int b = start0 < vlen ? start0 : vlen;
		int e = len < 0 || b + len > vlen ? vlen : b + len;
		const unsigned char *s = bytes + off[i] + b;
		int hit = 0;
		for (int k = 0; k < nlist && !hit; k++) {
			int ll = list_off[k + 1] - list_off[k];
			hit = ll == e - b && gs_bytes_eq(s, list_bytes + list_off[k], ll);
		}
		gs_store_flag(flags, i, hit ^ (negate != 0), mode);
	}
}

// substring(v from start for len), pass 1: lens[i] = the substring's
// length, start0 = start-1 clamped to >= 0 by the host (which shortens len
// by what it clamped, as SQL does). Scan lens into offsets, then pass 2.
extern "C" __global__ void str_substr_len(const int *off, int n, int start0, int len, int *lens) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int vlen = off[i + 1] - off[i];
		int b = start0 < vlen ? start0 : vlen;
		int e = b + len > vlen ? vlen : b + len;
		lens[i] = e - b;
	}
}

// substring, pass 2: copies each substring to out[new_off[i] ..].
extern "C" __global__ void str_substr_copy(const int *off, const unsigned char *bytes, int n, int start0,
                                           const int *new_off, unsigned char *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		int vlen = off[i + 1] - off[i];
		int b = start0 < vlen ? start0 : vlen;
		int m = new_off[i + 1] - new_off[i];
		const unsigned char *s = bytes + off[i] + b;
		unsigned char *d = out + new_off[i];
		for (int k = 0; k < m; k++) {
			d[k] = s[k];
		}
	}
}
