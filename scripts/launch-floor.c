// launch-floor measures the host cost of cuLaunchKernel from C, without Go,
// purego or stridekit in the way: the floor under runtime/cuda's
// BenchmarkLaunch. Build and run on the GPU machine:
//
//	nvcc -O2 -o /tmp/launch-floor scripts/launch-floor.c -lcuda && /tmp/launch-floor
//
// It loads a one-line kernel from PTX, launches it in batches of 256 on a
// non-blocking stream (well under the launch queue's depth, so the GPU never
// throttles the host), synchronises between batches outside the timed region,
// and prints the mean host time per launch for a kernel of 2 parameters and
// one of 3 parameters with a 1 KiB by-value struct (the shape of stridekit's
// copy kernels).
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorName(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); exit(1); } } while (0)

static const char* ptx =
	".version 7.0\n.target sm_50\n.address_size 64\n"
	".visible .entry small(.param .u64 p, .param .u32 n) { ret; }\n"
	".visible .entry big(.param .u64 d, .param .u64 s, .param .align 8 .b8 a[1024]) { ret; }\n";

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static double measure(CUfunction f, CUstream s, void** args) {
	const int batches = 400, per = 256;
	double total = 0;
	for (int b = 0; b < batches + 10; b++) {
		double t0 = now();
		for (int i = 0; i < per; i++) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
		double t1 = now();
		CHECK(cuStreamSynchronize(s));
		if (b >= 10) total += t1 - t0; // the first batches warm up
	}
	return total / (batches * per) * 1e9;
}

int main(void) {
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction small, big;
	CUstream s;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&small, mod, "small"));
	CHECK(cuModuleGetFunction(&big, mod, "big"));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr p = 0, q = 0;
	unsigned n = 256;
	static char a[1024];
	void* sargs[] = {&p, &n};
	void* bargs[] = {&p, &q, a};
	printf("cuLaunchKernel from C, 2 params:          %.0f ns/launch\n", measure(small, s, sargs));
	printf("cuLaunchKernel from C, 1 KiB struct param: %.0f ns/launch\n", measure(big, s, bargs));
	return 0;
}
