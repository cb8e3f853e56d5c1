/* A stand-in for libcuda.so.1 that driver_test.go compiles (when a C
 * compiler is at hand) to test the binding without a GPU: the symbol
 * names and C signatures the binding declares, the argument passing of
 * purego (cuLaunchKernel's 11 arguments, out-pointers, strings), the
 * per-thread current context, and callbacks from a foreign thread.
 *
 * "Device memory" is host memory; kernels are two C functions. The context
 * is current per thread, as in CUDA, and calls that need one fail with
 * CUDA_ERROR_INVALID_CONTEXT (201) without it.
 *
 * Variants: -DFAKE_NO_DEVICE makes cuInit fail with CUDA_ERROR_NO_DEVICE;
 * -DFAKE_OMIT_MEMSET leaves cuMemsetD8Async out (a too-old driver). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *);

static int inited;
static char ctx_obj;
static int ctx_refs;
static __thread void *current;

#define NEED_CTX                  \
	if (current != &ctx_obj) \
		return 201;

CUresult cuInit(unsigned flags) {
#ifdef FAKE_NO_DEVICE
	return 100;
#endif
	if (flags != 0)
		return 1;
	inited = 1;
	return 0;
}

CUresult cuDriverGetVersion(int *v) {
	*v = 12080;
	return 0;
}

CUresult cuDeviceGetCount(int *n) {
	if (!inited)
		return 3;
	*n = 1;
	return 0;
}

/* Device 0's handle is 7, so a binding that passes the ordinal where the
 * handle belongs fails. */
CUresult cuDeviceGet(int *dev, int ordinal) {
	if (ordinal != 0)
		return 101;
	*dev = 7;
	return 0;
}

CUresult cuDeviceGetName(char *name, int len, int dev) {
	if (dev != 7 || len < 1)
		return 101;
	strncpy(name, "Fake GPU", (size_t)len);
	name[len - 1] = 0;
	return 0;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
	if (dev != 7)
		return 101;
	switch (attr) {
	case 75: *v = 9; break;     /* compute capability major */
	case 76: *v = 0; break;     /* minor */
	case 16: *v = 132; break;   /* SMs */
	case 33: *v = 0x3b; break;  /* PCI bus */
	case 34: *v = 0; break;     /* PCI device */
	case 50: *v = 0; break;     /* PCI domain */
	case 10: *v = 32; break;    /* warp size */
	case 13: return 1;          /* clock rate: "deprecated", reads as 0 */
	default: *v = 1; break;
	}
	return 0;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
	if (dev != 7)
		return 101;
	*bytes = 80ULL << 30;
	return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
	if (dev != 7)
		return 101;
	ctx_refs++;
	*ctx = &ctx_obj;
	return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	if (dev != 7)
		return 101;
	if (ctx_refs == 0)
		return 201;
	ctx_refs--;
	return 0;
}

/* For the test: how many retains are outstanding. */
int fake_ctx_refs(void) { return ctx_refs; }

CUresult cuCtxSetCurrent(void *ctx) {
	if (ctx != NULL && ctx != &ctx_obj)
		return 201;
	current = ctx;
	return 0;
}

CUresult cuCtxSynchronize(void) {
	NEED_CTX
	return 0;
}

/* Modules: an image must start with "// fake" (else CUDA_ERROR_INVALID_PTX). */
CUresult cuModuleLoadData(void **mod, const void *image) {
	NEED_CTX
	if (strncmp((const char *)image, "// fake", 7) != 0)
		return 218;
	*mod = malloc(1);
	return 0;
}

CUresult cuModuleUnload(void *mod) {
	NEED_CTX
	free(mod);
	return 0;
}

static char fn_echo, fn_add;

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
	NEED_CTX
	if (mod == NULL)
		return 400;
	if (strcmp(name, "fake_echo") == 0)
		*fn = &fn_echo;
	else if (strcmp(name, "fake_add") == 0)
		*fn = &fn_add;
	else
		return 500;
	return 0;
}

/* fake_echo(long long *out, int a, long long b, unsigned c, double x):
 * out[0..11] = grid, block, shared, a, b, c, x*1000, stream.
 * fake_add(long long *out, const long long *in, long long add, int n):
 * out[i] = in[i] + add. */
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
	NEED_CTX
	if (extra != NULL || params == NULL)
		return 1;
	if (f == &fn_echo) {
		long long *out = *(long long **)params[0];
		out[0] = gx, out[1] = gy, out[2] = gz;
		out[3] = bx, out[4] = by, out[5] = bz;
		out[6] = shared;
		out[7] = *(int *)params[1];
		out[8] = *(long long *)params[2];
		out[9] = *(unsigned *)params[3];
		out[10] = (long long)(*(double *)params[4] * 1000);
		out[11] = (long long)(uintptr_t)stream;
		return 0;
	}
	if (f == &fn_add) {
		long long *out = *(long long **)params[0];
		const long long *in = *(const long long **)params[1];
		long long add = *(long long *)params[2];
		int n = *(int *)params[3];
		for (int i = 0; i < n; i++)
			out[i] = in[i] + add;
		return 0;
	}
	return 400;
}

CUresult cuStreamCreate(void **s, unsigned flags) {
	NEED_CTX
	if (flags > 1)
		return 1;
	*s = malloc(1);
	return 0;
}

CUresult cuStreamDestroy_v2(void *s) {
	NEED_CTX
	if (s == NULL)
		return 400;
	free(s);
	return 0;
}

CUresult cuStreamSynchronize(void *s) {
	NEED_CTX
	return 0;
}

CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
	NEED_CTX
	if (e == NULL || flags != 0)
		return 400;
	return 0;
}

struct hostcall {
	CUhostFn fn;
	void *user;
};

static void *run_hostcall(void *arg) {
	struct hostcall *h = arg;
	h->fn(h->user);
	return NULL;
}

/* Runs fn on a thread of its own, as the driver does, and waits for it. */
CUresult cuLaunchHostFunc(void *s, CUhostFn fn, void *user) {
	NEED_CTX
	struct hostcall h = {fn, user};
	pthread_t t;
	if (pthread_create(&t, NULL, run_hostcall, &h) != 0)
		return 304;
	pthread_join(t, NULL);
	return 0;
}

struct event {
	unsigned flags;
	long long recorded;
};
static long long clock_ticks;

CUresult cuEventCreate(void **e, unsigned flags) {
	NEED_CTX
	struct event *ev = calloc(1, sizeof *ev);
	ev->flags = flags;
	*e = ev;
	return 0;
}

CUresult cuEventRecord(void *e, void *s) {
	NEED_CTX
	((struct event *)e)->recorded = ++clock_ticks;
	return 0;
}

CUresult cuEventSynchronize(void *e) {
	NEED_CTX
	return 0;
}

CUresult cuEventQuery(void *e) {
	NEED_CTX
	return ((struct event *)e)->recorded ? 0 : 600;
}

/* 1.5 ms per record between the two events. */
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
	NEED_CTX
	struct event *x = a, *y = b;
	if ((x->flags | y->flags) & 2)
		return 400;
	if (!x->recorded || !y->recorded)
		return 400;
	*ms = (float)(y->recorded - x->recorded) * 1.5f;
	return 0;
}

/* The pre-12.8 symbol: a binding that prefers it reads a negative time. */
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
	*ms = -1;
	return 0;
}

CUresult cuEventDestroy_v2(void *e) {
	NEED_CTX
	free(e);
	return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	NEED_CTX
	if (n == 0)
		return 1;
	if (n > (1ULL << 40))
		return 2;
	*p = (CUdeviceptr)(uintptr_t)malloc(n);
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	NEED_CTX
	free((void *)(uintptr_t)p);
	return 0;
}

CUresult cuMemAllocHost_v2(void **p, size_t n) {
	NEED_CTX
	*p = malloc(n);
	return 0;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
	NEED_CTX
	if (flags > 7)
		return 1;
	*p = malloc(n);
	return 0;
}

CUresult cuMemFreeHost(void *p) {
	NEED_CTX
	free(p);
	return 0;
}

static void *registered[16];

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
	NEED_CTX
	for (int i = 0; i < 16; i++)
		if (registered[i] == p)
			return 712;
	for (int i = 0; i < 16; i++)
		if (registered[i] == NULL) {
			registered[i] = p;
			return 0;
		}
	return 2;
}

CUresult cuMemHostUnregister(void *p) {
	NEED_CTX
	for (int i = 0; i < 16; i++)
		if (registered[i] == p) {
			registered[i] = NULL;
			return 0;
		}
	return 713;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
	NEED_CTX
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
	NEED_CTX
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
	NEED_CTX
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return 0;
}

#ifndef FAKE_OMIT_MEMSET
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void *s) {
	NEED_CTX
	memset((void *)(uintptr_t)dst, v, n);
	return 0;
}
#endif

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
	NEED_CTX
	*free_bytes = 79ULL << 30;
	*total = 80ULL << 30;
	return 0;
}

static const char *err_name(CUresult r) {
	switch (r) {
	case 0: return "CUDA_SUCCESS";
	case 1: return "CUDA_ERROR_INVALID_VALUE";
	case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
	case 100: return "CUDA_ERROR_NO_DEVICE";
	case 201: return "CUDA_ERROR_INVALID_CONTEXT";
	case 218: return "CUDA_ERROR_INVALID_PTX";
	case 400: return "CUDA_ERROR_INVALID_HANDLE";
	case 500: return "CUDA_ERROR_NOT_FOUND";
	case 712: return "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
	case 713: return "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
	}
	return NULL;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	*s = err_name(r);
	return *s ? 0 : 1;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
	switch (r) {
	case 2: *s = "out of memory"; return 0;
	case 100: *s = "no CUDA-capable device is detected"; return 0;
	case 218: *s = "a PTX JIT compilation failed"; return 0;
	}
	*s = err_name(r);
	return *s ? 0 : 1;
}
