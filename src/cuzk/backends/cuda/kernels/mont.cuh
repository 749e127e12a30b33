// The one Montgomery field layer of the kernels: carry-chain primitives
// (cc_chain) and the arithmetic of a field of N 32-bit limbs (mont<P>), of
// which Fr (fr.cuh, 8 limbs) and Fq (fq.cuh, 12 limbs) are the two instances.
//
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

// ---------------------------------------------------------------------------
// Montgomery arithmetic over N 32-bit little-endian limbs. P gives the field:
//   N          limbs (even),
//   p(i)       the modulus' limb i (a switch or table the compiler folds to an
//              immediate: every use is in a fully unrolled loop),
//   n0         -p^-1 mod 2^32,
//   TOP_ADD_CC whether a sum's top limb keeps its (always zero) carry-out: the
//              two fields' sums as they were measured, one PTX flag apart,
//   P0, P1     p's two low limbs (only for the folded product, mul_even_odd<true>).
// Values are kept canonical (< p); the modulus is below 2^(32N - 1), so a sum
// of two values never carries out of the top limb. Operands are limb arrays
// (an element's .w / .l): everything here inlines into registers.
template <class P>
struct mont {
    static constexpr int N = P::N;

    CUZK_HD static bool is_zero(const uint32_t* a) {
        uint32_t x = 0;
#pragma unroll
        for (int i = 0; i < N; i++) x |= a[i];
        return x == 0;
    }

    CUZK_HD static bool eq(const uint32_t* a, const uint32_t* b) {
        uint32_t x = 0;
#pragma unroll
        for (int i = 0; i < N; i++) x |= a[i] ^ b[i];
        return x == 0;
    }

    // r = a - p if a >= p, else a (a < 2^(32N)).
    CUZK_HD static void cond_sub(uint32_t* r, const uint32_t* a) {
        cc_chain c;
        uint32_t t[N];
        t[0] = c.sub_cc(a[0], P::p(0));
#pragma unroll
        for (int i = 1; i < N; i++) t[i] = c.subc_cc(a[i], P::p(i));
        const uint32_t borrow = c.subc(0, 0);  // all ones when a < p
#pragma unroll
        for (int i = 0; i < N; i++) r[i] = borrow ? a[i] : t[i];
    }

    // a + b < 2p < 2^(32N): no carry out of the top limb.
    CUZK_HD static void add(uint32_t* r, const uint32_t* a, const uint32_t* b) {
        cc_chain c;
        uint32_t s[N];
        s[0] = c.add_cc(a[0], b[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) s[i] = c.addc_cc(a[i], b[i]);
        s[N - 1] = P::TOP_ADD_CC ? c.addc_cc(a[N - 1], b[N - 1]) : c.addc(a[N - 1], b[N - 1]);
        cond_sub(r, s);
    }

    CUZK_HD static void sub(uint32_t* r, const uint32_t* a, const uint32_t* b) {
        cc_chain c;
        uint32_t d[N];
        d[0] = c.sub_cc(a[0], b[0]);
#pragma unroll
        for (int i = 1; i < N; i++) d[i] = c.subc_cc(a[i], b[i]);
        const uint32_t mask = c.subc(0, 0);  // all ones when a < b: add p back
        cc_chain e;
        r[0] = e.add_cc(d[0], P::p(0) & mask);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r[i] = e.addc_cc(d[i], P::p(i) & mask);
        r[N - 1] = e.addc(d[N - 1], P::p(N - 1) & mask);
    }

    // The Montgomery products a*b/2^(32N) mod p: CIOS with each row's
    // products split between an even accumulator E (products of a[0], a[2],
    // ...) and an odd one O (a[1], a[3], ...), so that every 64-bit partial
    // product's low and high words sit side by side in one carry chain
    // (ptxas fuses each mad.lo / madc.hi pair into one IMAD.WIDE). Inputs
    // canonical; one conditional subtraction makes the result canonical.

    // acc[0..N-1] += sum_k x[2k + odd] * y * 2^(64k); carry out into acc[N].
    CUZK_HD static void mad_pairs(uint32_t* acc, const uint32_t* x, int odd, uint32_t y) {
        cc_chain c;
        acc[0] = c.mad_lo_cc(x[odd], y, acc[0]);
        acc[1] = c.madc_hi_cc(x[odd], y, acc[1]);
#pragma unroll
        for (int k = 1; k < N / 2; k++) {
            acc[2 * k] = c.madc_lo_cc(x[2 * k + odd], y, acc[2 * k]);
            acc[2 * k + 1] = c.madc_hi_cc(x[2 * k + odd], y, acc[2 * k + 1]);
        }
        acc[N] = c.addc(acc[N], 0);
    }

    // Fq's form: O one limb up from E (T = E + 2^32 O), O cleared each row;
    // after m*p makes E[0] zero, T / 2^32 = O + (E >> 32) becomes the next E.
    // T < 2p at each row (CIOS), and within one, E and O fit N + 1 limbs.
    CUZK_HD static void mul_shifted(uint32_t* r, const uint32_t* a, const uint32_t* b) {
        uint32_t p[N], E[N + 1], O[N + 1];
#pragma unroll
        for (int j = 0; j < N; j++) p[j] = P::p(j);
#pragma unroll
        for (int j = 0; j < N + 1; j++) E[j] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
#pragma unroll
            for (int j = 0; j < N + 1; j++) O[j] = 0;
            mad_pairs(E, a, 0, b[i]);
            mad_pairs(O, a, 1, b[i]);
            const uint32_t m = E[0] * P::n0;
            mad_pairs(E, p, 0, m);  // E[0] becomes 0
            mad_pairs(O, p, 1, m);
            cc_chain c;
            E[0] = c.add_cc(O[0], E[1]);
#pragma unroll
            for (int j = 1; j < N; j++) E[j] = c.addc_cc(O[j], E[j + 1]);
            E[N] = c.addc(O[N], 0);
        }
        cond_sub(r, E);
    }

    // Fr's form: E and O both at limb 0, O[0] a lone word that only enters m
    // and the carry of position 0. The running value stays < 2p before each
    // row and < 2^(32N + 32) within it, so N + 1 limbs each suffice. FOLD
    // turns p[0] = 1 and p[1] = 2^32 - 1 into additions (t = E[0] + O[0],
    // m = -t: m*p[0] = m; m*p[1] has low word t and high word m - (t != 0)),
    // moving four products a row off the multiplier pipe.
    template <bool FOLD>
    CUZK_HD static void mul_even_odd(uint32_t* r, const uint32_t* a, const uint32_t* b) {
        static_assert(!FOLD || (P::P0 == 1u && P::P1 == 0xffffffffu), "fold needs p0 = 1, p1 = -1");
        uint32_t E[N + 1], O[N + 1];
#pragma unroll
        for (int k = 0; k < N + 1; k++) E[k] = O[k] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b[i];
            {
                cc_chain c;  // E[0..N-1] += a_even * bi, carry into E[N] (zero before)
                E[0] = c.mad_lo_cc(a[0], bi, E[0]);
                E[1] = c.madc_hi_cc(a[0], bi, E[1]);
#pragma unroll
                for (int k = 1; k < N / 2; k++) {
                    E[2 * k] = c.madc_lo_cc(a[2 * k], bi, E[2 * k]);
                    E[2 * k + 1] = c.madc_hi_cc(a[2 * k], bi, E[2 * k + 1]);
                }
                E[N] = c.addc(0, 0);
            }
            {
                cc_chain c;  // O[1..N] += a_odd * bi
                O[1] = c.mad_lo_cc(a[1], bi, O[1]);
                O[2] = c.madc_hi_cc(a[1], bi, O[2]);
#pragma unroll
                for (int k = 1; k < N / 2 - 1; k++) {
                    O[2 * k + 1] = c.madc_lo_cc(a[2 * k + 1], bi, O[2 * k + 1]);
                    O[2 * k + 2] = c.madc_hi_cc(a[2 * k + 1], bi, O[2 * k + 2]);
                }
                O[N - 1] = c.madc_lo_cc(a[N - 1], bi, O[N - 1]);
                O[N] = c.madc_hi(a[N - 1], bi, O[N]);
            }
            const uint32_t t = E[0] + O[0];
            uint32_t m;
            if constexpr (FOLD)
                m = 0u - t;
            else
                m = t * P::n0;
            uint32_t m_hi1 = m - (t != 0u);  // FOLD: the high word of m * (2^32 - 1)
#ifdef __CUDA_ARCH__
            // Computed here, not sunk past the next chain (the schedule measured).
            if constexpr (FOLD) asm volatile("" : "+r"(m_hi1));
#endif
            {
                cc_chain c;  // E[0..N-1] += p_even * m
                if constexpr (FOLD) {
                    E[0] = c.add_cc(E[0], m);
                    E[1] = c.addc_cc(E[1], 0);
                } else {
                    E[0] = c.mad_lo_cc(m, P::P0, E[0]);
                    E[1] = c.madc_hi_cc(m, P::P0, E[1]);
                }
#pragma unroll
                for (int k = 1; k < N / 2; k++) {
                    E[2 * k] = c.madc_lo_cc(m, P::p(2 * k), E[2 * k]);
                    E[2 * k + 1] = c.madc_hi_cc(m, P::p(2 * k), E[2 * k + 1]);
                }
                E[N] = c.addc(E[N], 0);
            }
            {
                // Position 0 now sums to 0 or 2^32 (E[0] + O[0] = 0 mod 2^32):
                // its carry is (O[0] != 0). Then O[1..N] += p_odd * m.
                cc_chain c;
                c.add_cc(O[0], 0xffffffffu);
                if constexpr (FOLD) {
                    O[1] = c.addc_cc(O[1], t);
                    O[2] = c.addc_cc(O[2], m_hi1);
                } else {
                    O[1] = c.madc_lo_cc(m, P::P1, O[1]);
                    O[2] = c.madc_hi_cc(m, P::P1, O[2]);
                }
#pragma unroll
                for (int k = 1; k < N / 2 - 1; k++) {
                    O[2 * k + 1] = c.madc_lo_cc(m, P::p(2 * k + 1), O[2 * k + 1]);
                    O[2 * k + 2] = c.madc_hi_cc(m, P::p(2 * k + 1), O[2 * k + 2]);
                }
                O[N - 1] = c.madc_lo_cc(m, P::p(N - 1), O[N - 1]);
                O[N] = c.madc_hi(m, P::p(N - 1), O[N]);
            }
            // Divide by 2^32: a renaming once unrolled.
#pragma unroll
            for (int k = 0; k < N; k++) {
                E[k] = E[k + 1];
                O[k] = O[k + 1];
            }
            E[N] = O[N] = 0;
        }
        cc_chain c;
        uint32_t s[N];
        s[0] = c.add_cc(E[0], O[0]);
#pragma unroll
        for (int k = 1; k < N; k++) s[k] = c.addc_cc(E[k], O[k]);
        cond_sub(r, s);
    }
};
