// Exact decimal arithmetic on scaled int64 values, date functions, CASE,
// and conversions (plan/expr.go's typing rules): + and - align scales (the
// host passes the multipliers 10^k that bring both operands to the result
// scale), * adds scales, / yields float64. Results that do not fit in
// int64 set *overflow to 1 (the host fails the query rather than return a
// wrapped value); the value written for them is unspecified.
//
// All kernels are grid-stride loops: any 1-D launch shape works.
#include "common.cuh"

// a * b, setting *ovf when the product leaves int64.
__device__ __forceinline__ long long gs_mul(long long a, long long b, int *ovf) {
	long long lo = (long long)((unsigned long long)a * (unsigned long long)b);
	long long hi = __mul64hi(a, b);
	if (hi != (lo >> 63)) {
		*ovf = 1;
	}
	return lo;
}

// a + b, setting *ovf on int64 overflow.
__device__ __forceinline__ long long gs_add(long long a, long long b, int *ovf) {
	long long r = (long long)((unsigned long long)a + (unsigned long long)b);
	if (((a ^ r) & (b ^ r)) < 0) {
		*ovf = 1;
	}
	return r;
}

__device__ __forceinline__ void gs_flag_overflow(int *overflow, int ovf) {
	if (ovf) {
		atomicOr(overflow, 1);
	}
}

// out[i] = a[i]*amul + b[i]*bmul, or a[i]*amul - b[i]*bmul when sub.
extern "C" __global__ void dec_addsub(const long long *a, long long amul, const long long *b, long long bmul, int n,
                                      int sub, long long *out, int *overflow) {
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = gs_mul(a[i], amul, &ovf);
		long long y = gs_mul(b[i], bmul, &ovf);
		if (sub) {
			if (y == (long long)0x8000000000000000ULL) {
				ovf = 1;
			}
			y = -y;
		}
		out[i] = gs_add(x, y, &ovf);
	}
	gs_flag_overflow(overflow, ovf);
}

// With a literal: op 0: a[i]*amul + lit; op 1: a[i]*amul - lit; op 2:
// lit - a[i]*amul (1 - l_discount).
extern "C" __global__ void dec_addsub_lit(const long long *a, long long amul, long long lit, int n, int op,
                                          long long *out, int *overflow) {
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = gs_mul(a[i], amul, &ovf);
		long long r;
		if (op == 0) {
			r = gs_add(x, lit, &ovf);
		} else if (op == 1) {
			r = gs_add(x, -lit, &ovf);
		} else {
			if (x == (long long)0x8000000000000000ULL) {
				ovf = 1;
			}
			r = gs_add(lit, -x, &ovf);
		}
		out[i] = r;
	}
	gs_flag_overflow(overflow, ovf);
}

// out[i] = a[i] * b[i] (scale: the sum of the operands' scales).
extern "C" __global__ void dec_mul(const long long *a, const long long *b, int n, long long *out, int *overflow) {
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = gs_mul(a[i], b[i], &ovf);
	}
	gs_flag_overflow(overflow, ovf);
}

// out[i] = a[i] * lit.
extern "C" __global__ void dec_mul_lit(const long long *a, long long lit, int n, long long *out, int *overflow) {
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = gs_mul(a[i], lit, &ovf);
	}
	gs_flag_overflow(overflow, ovf);
}

// out[i] = a[i] * mul / div, the division rounding half away from zero
// (plan.FormatDecimal's rounding): changes a decimal's scale.
extern "C" __global__ void dec_rescale(const long long *a, int n, long long mul, long long div, long long *out,
                                       int *overflow) {
	int ovf = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long x = gs_mul(a[i], mul, &ovf);
		if (div > 1) {
			long long q = x / div, r = x % div;
			if (r >= (div + 1) / 2) {
				q++;
			} else if (r <= -((div + 1) / 2)) {
				q--;
			}
			x = q;
		}
		out[i] = x;
	}
	gs_flag_overflow(overflow, ovf);
}

// out[i] = (a[i] / b[i]) * factor in float64, factor = 10^(scale_b -
// scale_a) (or 1 for integers). b[i] == 0 gives +-Inf or NaN (IEEE).
extern "C" __global__ void dec_div_f64(const long long *a, const long long *b, int n, double factor, double *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = (double)a[i] / (double)b[i] * factor;
	}
}

// out[i] = a[i] * factor in float64 (factor = 10^-scale): a decimal as float.
extern "C" __global__ void dec_to_f64(const long long *a, int n, double factor, double *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = (double)a[i] * factor;
	}
}

// out[i] = a[i]: widens an int32 or date column for int64 arithmetic.
extern "C" __global__ void i32_to_i64(const int *a, int n, long long *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		out[i] = a[i];
	}
}

// out[i] = the proleptic Gregorian year of date days[i] (days since
// 1970-01-01), by H. Hinnant's civil_from_days.
extern "C" __global__ void date_year(const int *days, int n, long long *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		long long z = (long long)days[i] + 719468;
		long long era = (z >= 0 ? z : z - 146096) / 146097;
		long long doe = z - era * 146097;                                  // [0, 146096]
		long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; // [0, 399]
		long long y = yoe + era * 400;
		long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);           // [0, 365]
		long long mp = (5 * doy + 2) / 153;                                // [0, 11]
		long long m = mp < 10 ? mp + 3 : mp - 9;                           // [1, 12]
		out[i] = m <= 2 ? y + 1 : y;
	}
}

// CASE WHEN cond THEN x ELSE y END on int64/decimal values: out[i] =
// cond[i] ? x : y, where x is a[i] (a != NULL) or alit, y is b[i] (b !=
// NULL) or blit; operands are aligned to one scale by the host.
extern "C" __global__ void case_i64(const unsigned char *cond, const long long *a, long long alit,
                                    const long long *b, long long blit, int n, long long *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		if (cond[i]) {
			out[i] = a != 0 ? a[i] : alit;
		} else {
			out[i] = b != 0 ? b[i] : blit;
		}
	}
}

// case_i64 for float64 values.
extern "C" __global__ void case_f64(const unsigned char *cond, const double *a, double alit, const double *b,
                                    double blit, int n, double *out) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		if (cond[i]) {
			out[i] = a != 0 ? a[i] : alit;
		} else {
			out[i] = b != 0 ? b[i] : blit;
		}
	}
}
