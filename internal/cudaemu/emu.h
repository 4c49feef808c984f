// cudaemu: just enough of CUDA C++ to run stridekit's copy kernels on a CPU,
// one OS thread per CUDA thread, for tests on machines without a GPU.
// Blocks run one after another; every thread of a block waits at a barrier
// after each block, so static "__shared__" arrays are the block's alone.
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
using std::max;
using std::min;
struct dim3 {
	unsigned x, y, z;
};
static dim3 blockDim, gridDim;
static thread_local dim3 threadIdx, blockIdx;
static std::barrier<>* emu_barrier;
static unsigned char* emu_dynamic_shared;
#define __global__
#define __device__
#define __constant__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __shared__ static
inline void __syncthreads() { emu_barrier->arrive_and_wait(); }
struct alignas(16) uint4 {
	unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
struct alignas(8) uint2 {
	unsigned x, y;
};
inline uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }
template <class T> inline T __ldg(const T* p) { return *p; }
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned sh) {
	return (unsigned)(((((unsigned long long)hi) << 32) | lo) >> (sh & 31));
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned sh) {
	return (unsigned)((((((unsigned long long)hi) << 32) | lo) << (sh & 31)) >> 32);
}
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
	return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
	unsigned char b[8];
	memcpy(b, &x, 4);
	memcpy(b + 4, &y, 4);
	unsigned r = 0;
	for (int i = 0; i < 4; i++) r |= (unsigned)b[(s >> (4 * i)) & 7] << (8 * i);
	return r;
}
