// 32-bit carry-chain primitives for multi-precision arithmetic, written once
// for three compilers:
//   - device code (nvcc or NVRTC): each primitive is one PTX instruction that
//     reads and/or writes the condition-code carry flag (add.cc, madc.hi, ...);
//   - host code (g++ or nvcc's host pass): the same primitives emulate the
//     carry flag in a thread-local variable, so the field code built on them
//     can be compiled and tested bit for bit on a CPU.
// The PTX versions rely on nothing between two primitives of one chain
// touching the carry flag; every chain in fq.cuh is a straight run of them.
//
// The file also supplies the few CUDA keywords and fixed-width types the
// kernels use, so every header and kernel file compiles as plain C++ on the
// host (the CPU twin of the tests).
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

namespace cuzk {

#ifdef CUZK_DEVICE_CODE

CUZK_HD uint32_t add_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
CUZK_HD uint32_t addc_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
CUZK_HD uint32_t addc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
CUZK_HD uint32_t sub_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
CUZK_HD uint32_t subc_cc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
CUZK_HD uint32_t subc(uint32_t a, uint32_t b) {
    uint32_t r;
    asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
CUZK_HD uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
CUZK_HD uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
CUZK_HD uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
CUZK_HD uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
CUZK_HD uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t r;
    asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

#else  // host emulation of the carry flag

#ifdef _MSC_VER
#error "the CPU twin needs a GCC-compatible compiler"
#endif
static thread_local uint32_t carry_flag = 0;

CUZK_HD uint32_t add_cc(uint32_t a, uint32_t b) {
    uint64_t s = (uint64_t)a + b;
    carry_flag = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
CUZK_HD uint32_t addc_cc(uint32_t a, uint32_t b) {
    uint64_t s = (uint64_t)a + b + carry_flag;
    carry_flag = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
CUZK_HD uint32_t addc(uint32_t a, uint32_t b) { return a + b + carry_flag; }
CUZK_HD uint32_t sub_cc(uint32_t a, uint32_t b) {
    uint64_t d = (uint64_t)a - b;
    carry_flag = (uint32_t)(d >> 63);
    return (uint32_t)d;
}
CUZK_HD uint32_t subc_cc(uint32_t a, uint32_t b) {
    uint64_t d = (uint64_t)a - b - carry_flag;
    carry_flag = (uint32_t)(d >> 63);
    return (uint32_t)d;
}
CUZK_HD uint32_t subc(uint32_t a, uint32_t b) { return a - b - carry_flag; }
CUZK_HD uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    return add_cc((uint32_t)((uint64_t)a * b), c);
}
CUZK_HD uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    return addc_cc((uint32_t)((uint64_t)a * b), c);
}
CUZK_HD uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    return add_cc((uint32_t)(((uint64_t)a * b) >> 32), c);
}
CUZK_HD uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    return addc_cc((uint32_t)(((uint64_t)a * b) >> 32), c);
}
CUZK_HD uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) {
    return addc((uint32_t)(((uint64_t)a * b) >> 32), c);
}

#endif

// 64×64 → 128-bit product halves, for the portable 64-bit-limb variant.
CUZK_HD uint64_t mul_hi64(uint64_t a, uint64_t b) {
#ifdef CUZK_DEVICE_CODE
    return __umul64hi(a, b);
#else
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
#endif
}

}  // namespace cuzk
