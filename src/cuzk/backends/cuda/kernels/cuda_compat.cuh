// The few CUDA keywords and fixed-width types the MSM kernels use, so every
// header and kernel file of the MSM compiles as plain C++ on the host (the
// CPU twin of the tests, tests/backends/cuda/host_twin.py).
#pragma once

#if defined(CUZK_NVRTC) && defined(__CUDACC_RTC__)
// NVRTC ships no C library headers.
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef long long int64_t;
#else
#include <stdint.h>
#endif

#if defined(__CUDA_ARCH__)
#define CUZK_DEVICE_CODE 1
#endif

#ifndef __CUDACC__
// Plain C++ host build (the CPU twin): CUDA's qualifiers vanish and the
// thread coordinates become ordinary variables set by the test harness.
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Threads run one at a time on the twin, each in its own slot of a
// per-thread shared array: a function-static array serves.
#define __shared__ static
struct cuzk_dim3 {
    unsigned x, y, z;
};
extern "C" {
extern cuzk_dim3 threadIdx, blockIdx, blockDim, gridDim;
}
static inline uint32_t atomicAdd(uint32_t* p, uint32_t v) {
    uint32_t old = *p;
    *p = old + v;
    return old;
}
static inline int __popc(uint32_t x) { return __builtin_popcount(x); }
#endif

#define CUZK_HD __host__ __device__ __forceinline__
// Point operations are real calls on the device: each is compiled once per
// module instead of once per call site, which keeps NVRTC's compile time to
// seconds; a call costs little next to the ~10 field products inside.
#ifdef __CUDACC__
#define CUZK_POINT_FN __host__ __device__ __noinline__
#else
#define CUZK_POINT_FN inline
#endif
