// Carry-chain primitives: PTX's add.cc / madc.hi.cc family, with a portable twin.
//
// On the device each method is one PTX instruction that reads and writes the
// condition-code carry flag (CC.CF). On the host the same methods compute the
// same values with an explicit flag, so a routine written against this struct
// runs bit for bit identically on the CPU, where tests compare it with Python
// integers. A routine must use one chain object per carry sequence, written in
// program order, as the PTX would be.
#pragma once

#if defined(__CUDACC_RTC__)
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#elif !defined(CUZK_HOST_EMU)
#include <cstdint>
#endif

#ifndef CUZK_HD
#define CUZK_HD __host__ __device__ __forceinline__
#endif

// Dynamic shared memory, spelled so the host emulation can provide it.
#ifndef CUZK_DYN_SMEM
#define CUZK_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

struct cc_chain {
#ifdef __CUDA_ARCH__
    CUZK_HD uint32_t add_cc(uint32_t a, uint32_t b) {
        uint32_t d;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    CUZK_HD uint32_t addc_cc(uint32_t a, uint32_t b) {
        uint32_t d;
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    CUZK_HD uint32_t addc(uint32_t a, uint32_t b) {
        uint32_t d;
        asm volatile("addc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    CUZK_HD uint32_t sub_cc(uint32_t a, uint32_t b) {
        uint32_t d;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    CUZK_HD uint32_t subc_cc(uint32_t a, uint32_t b) {
        uint32_t d;
        asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    CUZK_HD uint32_t subc(uint32_t a, uint32_t b) {
        uint32_t d;
        asm volatile("subc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
        return d;
    }
    CUZK_HD uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
        uint32_t d;
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
        return d;
    }
    CUZK_HD uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
        uint32_t d;
        asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
        return d;
    }
    CUZK_HD uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
        uint32_t d;
        asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
        return d;
    }
    CUZK_HD uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) {
        uint32_t d;
        asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
        return d;
    }
#else
    uint32_t cf = 0;
    CUZK_HD uint32_t add_cc(uint32_t a, uint32_t b) {
        uint64_t s = (uint64_t)a + b;
        cf = (uint32_t)(s >> 32);
        return (uint32_t)s;
    }
    CUZK_HD uint32_t addc_cc(uint32_t a, uint32_t b) {
        uint64_t s = (uint64_t)a + b + cf;
        cf = (uint32_t)(s >> 32);
        return (uint32_t)s;
    }
    CUZK_HD uint32_t addc(uint32_t a, uint32_t b) { return a + b + cf; }
    CUZK_HD uint32_t sub_cc(uint32_t a, uint32_t b) {
        uint64_t s = (uint64_t)a - b;
        cf = (uint32_t)(s >> 63);  // PTX sets CF to the borrow
        return (uint32_t)s;
    }
    CUZK_HD uint32_t subc_cc(uint32_t a, uint32_t b) {
        uint64_t s = (uint64_t)a - b - cf;
        cf = (uint32_t)(s >> 63);
        return (uint32_t)s;
    }
    CUZK_HD uint32_t subc(uint32_t a, uint32_t b) { return a - b - cf; }
    CUZK_HD uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return add_cc(a * b, c); }
    CUZK_HD uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return addc_cc(a * b, c); }
    CUZK_HD uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
        return addc_cc((uint32_t)(((uint64_t)a * b) >> 32), c);
    }
    CUZK_HD uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) {
        return addc((uint32_t)(((uint64_t)a * b) >> 32), c);
    }
#endif
};
