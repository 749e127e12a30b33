// Fr, the scalar field of BLS12-381: 8 x 32-bit little-endian words.
//
// Values are kept canonical (< p) everywhere. Multiplication is Montgomery's
// (R = 2^256): fr_mul(a, b) = a*b/R mod p. Data arrays stay in standard form:
// multiplying a standard-form value by a constant stored in Montgomery form
// (c*R) gives the standard-form product, so linear maps (NTTs, scalings,
// sparse products) need no conversion at all; only products of two data
// values carry an extra 1/R, which callers fold into a constant.
//
// Two multiplications, both CIOS on even/odd PTX carry chains
// (mad.lo.cc / madc.hi.cc), chosen at compile time by FR_MUL_FOLDED
// (measured on the H200: docs/device-notes/ntt.md#v2 and
// docs/device-notes/ntt.md#v7-predictions-written-before-its-device-run-outcome-at-the-end):
//   1  fr_mul_chains_folded: p's two low words folded into additions (the
//      default: fastest in the multiply probe and the element-wise kernels),
//   0  fr_mul_chains: every reduction product kept (ntt.cu's choice: fewer
//      registers, no spill in the pass kernels, 2-3 % faster there).
// Two others, CIOS on 32x32->64 multiply-adds (mad.wide.u32) with and
// without the folding, were retired (issue 17): the multiply probe measured
// them ≈ 25 % slower (39.1 and 40.6 G/s against 53.8, ntt.md, "v2").
#pragma once
#include "fr_chain.cuh"

#ifndef FR_MUL_FOLDED
#define FR_MUL_FOLDED 1
#endif

struct fr_t {
    uint32_t w[8];
};

// p, p's Montgomery constant -p^-1 mod 2^32, and R, R^2 mod p.
#define FR_P0 0x00000001u
#define FR_P1 0xffffffffu
#define FR_P2 0xfffe5bfeu
#define FR_P3 0x53bda402u
#define FR_P4 0x09a1d805u
#define FR_P5 0x3339d808u
#define FR_P6 0x299d7d48u
#define FR_P7 0x73eda753u
#define FR_N0 0xffffffffu

CUZK_HD uint32_t fr_p(int i) {
    // A switch on a compile-time index folds to an immediate.
    switch (i) {
        case 0: return FR_P0;
        case 1: return FR_P1;
        case 2: return FR_P2;
        case 3: return FR_P3;
        case 4: return FR_P4;
        case 5: return FR_P5;
        case 6: return FR_P6;
        default: return FR_P7;
    }
}

CUZK_HD fr_t fr_make(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint32_t w4, uint32_t w5,
                     uint32_t w6, uint32_t w7) {
    fr_t r;
    r.w[0] = w0; r.w[1] = w1; r.w[2] = w2; r.w[3] = w3;
    r.w[4] = w4; r.w[5] = w5; r.w[6] = w6; r.w[7] = w7;
    return r;
}

CUZK_HD fr_t fr_zero() { return fr_make(0, 0, 0, 0, 0, 0, 0, 0); }
// R mod p: one in Montgomery form.
CUZK_HD fr_t fr_one_mont() {
    return fr_make(0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau, 0xecbc4ff5u, 0x998c4fefu,
                   0xacc5056fu, 0x1824b159u);
}
// R^2 mod p: fr_mul(x, R^2) = x*R, a standard value's Montgomery form.
CUZK_HD fr_t fr_r2() {
    return fr_make(0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu, 0x7254398fu, 0x05d31496u,
                   0x9f59ff11u, 0x0748d9d9u);
}

CUZK_HD bool fr_is_zero(const fr_t& a) {
    uint32_t x = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) x |= a.w[i];
    return x == 0;
}

CUZK_HD bool fr_eq(const fr_t& a, const fr_t& b) {
    uint32_t x = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) x |= a.w[i] ^ b.w[i];
    return x == 0;
}

// a - p if a >= p, else a (a < 2^256).
CUZK_HD fr_t fr_cond_sub_p(const fr_t& a) {
    cc_chain c;
    fr_t t;
    t.w[0] = c.sub_cc(a.w[0], FR_P0);
#pragma unroll
    for (int i = 1; i < 8; i++) t.w[i] = c.subc_cc(a.w[i], fr_p(i));
    uint32_t borrow = c.subc(0, 0);  // 0xffffffff when a < p
    fr_t r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.w[i] = borrow ? a.w[i] : t.w[i];
    return r;
}

// Any 256-bit value reduced mod p (2^256 < 3p: at most two subtractions).
CUZK_HD fr_t fr_reduce_full(const fr_t& a) { return fr_cond_sub_p(fr_cond_sub_p(a)); }

CUZK_HD fr_t fr_add(const fr_t& a, const fr_t& b) {
    cc_chain c;
    fr_t s;
    s.w[0] = c.add_cc(a.w[0], b.w[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) s.w[i] = c.addc_cc(a.w[i], b.w[i]);
    // a + b < 2p < 2^256: no carry out.
    return fr_cond_sub_p(s);
}

CUZK_HD fr_t fr_sub(const fr_t& a, const fr_t& b) {
    cc_chain c;
    fr_t d;
    d.w[0] = c.sub_cc(a.w[0], b.w[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) d.w[i] = c.subc_cc(a.w[i], b.w[i]);
    uint32_t mask = c.subc(0, 0);  // all ones when a < b: add p back
    cc_chain e;
    fr_t r;
    r.w[0] = e.add_cc(d.w[0], FR_P0 & mask);
#pragma unroll
    for (int i = 1; i < 7; i++) r.w[i] = e.addc_cc(d.w[i], fr_p(i) & mask);
    r.w[7] = e.addc(d.w[7], FR_P7 & mask);
    return r;
}

CUZK_HD fr_t fr_neg(const fr_t& a) { return fr_sub(fr_zero(), a); }

// ---------------------------------------------------------------------------
// Montgomery multiplication. Inputs canonical (< p); the raw CIOS result is
// < a*b/R + p < 1.46 p, so one conditional subtraction makes it canonical.

// CIOS with the row products split into an even accumulator E
// (products of a[0], a[2], ...: their low and high halves interleave into one
// carry chain) and an odd one O (a[1], a[3], ...). Both accumulators stay at
// word offset 0; O[0] is a lone word at position 0 that only enters m and the
// carry of position 0. Bounds (a, b < p): the running value stays < 2p before
// each row and < 2^288 within it, so 9 words per accumulator suffice and the
// top carries shown as dropped are zero.
CUZK_HD fr_t fr_mul_chains(const fr_t& a, const fr_t& b) {
    uint32_t E[9], O[9];
#pragma unroll
    for (int k = 0; k < 9; k++) E[k] = O[k] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t bi = b.w[i];
        {
            cc_chain c;  // E[0..7] += a_even * bi, carry into E[8] (zero before)
            E[0] = c.mad_lo_cc(a.w[0], bi, E[0]);
            E[1] = c.madc_hi_cc(a.w[0], bi, E[1]);
            E[2] = c.madc_lo_cc(a.w[2], bi, E[2]);
            E[3] = c.madc_hi_cc(a.w[2], bi, E[3]);
            E[4] = c.madc_lo_cc(a.w[4], bi, E[4]);
            E[5] = c.madc_hi_cc(a.w[4], bi, E[5]);
            E[6] = c.madc_lo_cc(a.w[6], bi, E[6]);
            E[7] = c.madc_hi_cc(a.w[6], bi, E[7]);
            E[8] = c.addc(0, 0);
        }
        {
            cc_chain c;  // O[1..8] += a_odd * bi
            O[1] = c.mad_lo_cc(a.w[1], bi, O[1]);
            O[2] = c.madc_hi_cc(a.w[1], bi, O[2]);
            O[3] = c.madc_lo_cc(a.w[3], bi, O[3]);
            O[4] = c.madc_hi_cc(a.w[3], bi, O[4]);
            O[5] = c.madc_lo_cc(a.w[5], bi, O[5]);
            O[6] = c.madc_hi_cc(a.w[5], bi, O[6]);
            O[7] = c.madc_lo_cc(a.w[7], bi, O[7]);
            O[8] = c.madc_hi(a.w[7], bi, O[8]);
        }
        const uint32_t m = (E[0] + O[0]) * FR_N0;
        {
            cc_chain c;  // E[0..7] += p_even * m
            E[0] = c.mad_lo_cc(m, FR_P0, E[0]);
            E[1] = c.madc_hi_cc(m, FR_P0, E[1]);
            E[2] = c.madc_lo_cc(m, FR_P2, E[2]);
            E[3] = c.madc_hi_cc(m, FR_P2, E[3]);
            E[4] = c.madc_lo_cc(m, FR_P4, E[4]);
            E[5] = c.madc_hi_cc(m, FR_P4, E[5]);
            E[6] = c.madc_lo_cc(m, FR_P6, E[6]);
            E[7] = c.madc_hi_cc(m, FR_P6, E[7]);
            E[8] = c.addc(E[8], 0);
        }
        {
            // Position 0 now sums to 0 or 2^32 (E[0] + O[0] = 0 mod 2^32):
            // its carry is (O[0] != 0). Then O[1..8] += p_odd * m.
            cc_chain c;
            c.add_cc(O[0], 0xffffffffu);
            O[1] = c.madc_lo_cc(m, FR_P1, O[1]);
            O[2] = c.madc_hi_cc(m, FR_P1, O[2]);
            O[3] = c.madc_lo_cc(m, FR_P3, O[3]);
            O[4] = c.madc_hi_cc(m, FR_P3, O[4]);
            O[5] = c.madc_lo_cc(m, FR_P5, O[5]);
            O[6] = c.madc_hi_cc(m, FR_P5, O[6]);
            O[7] = c.madc_lo_cc(m, FR_P7, O[7]);
            O[8] = c.madc_hi(m, FR_P7, O[8]);
        }
        // Divide by 2^32: a renaming once unrolled.
#pragma unroll
        for (int k = 0; k < 8; k++) {
            E[k] = E[k + 1];
            O[k] = O[k + 1];
        }
        E[8] = O[8] = 0;
    }
    cc_chain c;
    fr_t r;
    r.w[0] = c.add_cc(E[0], O[0]);
#pragma unroll
    for (int k = 1; k < 8; k++) r.w[k] = c.addc_cc(E[k], O[k]);
    return fr_cond_sub_p(r);
}

// fr_mul_chains with p[0] = 1 and p[1] = 2^32 - 1 folded in. With
// t = E[0] + O[0] and m = -t: m*p[0] = m (low word, no high word), and
// m*p[1] = m*2^32 - m has low word -m = t and high word m - (t != 0). Four
// of the 32 products of a row become additions, which run on the integer
// ALU while the multiplier pipe stays the bottleneck.
CUZK_HD fr_t fr_mul_chains_folded(const fr_t& a, const fr_t& b) {
    uint32_t E[9], O[9];
#pragma unroll
    for (int k = 0; k < 9; k++) E[k] = O[k] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t bi = b.w[i];
        {
            cc_chain c;
            E[0] = c.mad_lo_cc(a.w[0], bi, E[0]);
            E[1] = c.madc_hi_cc(a.w[0], bi, E[1]);
            E[2] = c.madc_lo_cc(a.w[2], bi, E[2]);
            E[3] = c.madc_hi_cc(a.w[2], bi, E[3]);
            E[4] = c.madc_lo_cc(a.w[4], bi, E[4]);
            E[5] = c.madc_hi_cc(a.w[4], bi, E[5]);
            E[6] = c.madc_lo_cc(a.w[6], bi, E[6]);
            E[7] = c.madc_hi_cc(a.w[6], bi, E[7]);
            E[8] = c.addc(0, 0);
        }
        {
            cc_chain c;
            O[1] = c.mad_lo_cc(a.w[1], bi, O[1]);
            O[2] = c.madc_hi_cc(a.w[1], bi, O[2]);
            O[3] = c.madc_lo_cc(a.w[3], bi, O[3]);
            O[4] = c.madc_hi_cc(a.w[3], bi, O[4]);
            O[5] = c.madc_lo_cc(a.w[5], bi, O[5]);
            O[6] = c.madc_hi_cc(a.w[5], bi, O[6]);
            O[7] = c.madc_lo_cc(a.w[7], bi, O[7]);
            O[8] = c.madc_hi(a.w[7], bi, O[8]);
        }
        const uint32_t t = E[0] + O[0];
        const uint32_t m = 0u - t;
        const uint32_t m_hi1 = m - (t != 0u);  // high word of m * (2^32 - 1)
        {
            cc_chain c;  // E += m * (p0 + p2 W^2 + p4 W^4 + p6 W^6), p0 = 1
            E[0] = c.add_cc(E[0], m);
            E[1] = c.addc_cc(E[1], 0);
            E[2] = c.madc_lo_cc(m, FR_P2, E[2]);
            E[3] = c.madc_hi_cc(m, FR_P2, E[3]);
            E[4] = c.madc_lo_cc(m, FR_P4, E[4]);
            E[5] = c.madc_hi_cc(m, FR_P4, E[5]);
            E[6] = c.madc_lo_cc(m, FR_P6, E[6]);
            E[7] = c.madc_hi_cc(m, FR_P6, E[7]);
            E[8] = c.addc(E[8], 0);
        }
        {
            cc_chain c;  // carry of position 0, then O += m * (p1 W + p3 W^3 + ...)
            c.add_cc(O[0], 0xffffffffu);
            O[1] = c.addc_cc(O[1], t);
            O[2] = c.addc_cc(O[2], m_hi1);
            O[3] = c.madc_lo_cc(m, FR_P3, O[3]);
            O[4] = c.madc_hi_cc(m, FR_P3, O[4]);
            O[5] = c.madc_lo_cc(m, FR_P5, O[5]);
            O[6] = c.madc_hi_cc(m, FR_P5, O[6]);
            O[7] = c.madc_lo_cc(m, FR_P7, O[7]);
            O[8] = c.madc_hi(m, FR_P7, O[8]);
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            E[k] = E[k + 1];
            O[k] = O[k + 1];
        }
        E[8] = O[8] = 0;
    }
    cc_chain c;
    fr_t r;
    r.w[0] = c.add_cc(E[0], O[0]);
#pragma unroll
    for (int k = 1; k < 8; k++) r.w[k] = c.addc_cc(E[k], O[k]);
    return fr_cond_sub_p(r);
}

CUZK_HD fr_t fr_mul(const fr_t& a, const fr_t& b) {
#if FR_MUL_FOLDED
    return fr_mul_chains_folded(a, b);
#else
    return fr_mul_chains(a, b);
#endif
}

CUZK_HD fr_t fr_to_mont(const fr_t& a) { return fr_mul(a, fr_r2()); }
CUZK_HD fr_t fr_from_mont(const fr_t& a) { return fr_mul(a, fr_make(1, 0, 0, 0, 0, 0, 0, 0)); }

// a^(p-2) for a in Montgomery form (result in Montgomery form; 0 -> 0).
CUZK_HD fr_t fr_inv_mont(const fr_t& a) {
    // p - 2, most significant word first.
    const uint32_t e[8] = {FR_P7, FR_P6, FR_P5, FR_P4, FR_P3, FR_P2, 0xfffffffeu, 0xffffffffu};
    fr_t acc = fr_one_mont();
    for (int i = 0; i < 8; i++) {
        for (int bit = 31; bit >= 0; bit--) {
            acc = fr_mul(acc, acc);
            if ((e[i] >> bit) & 1u) acc = fr_mul(acc, a);
        }
    }
    return acc;
}

// --- global memory: (n, 4) uint64 rows, read as two 16-byte vectors --------

CUZK_HD fr_t fr_load(const uint4* base, uint64_t i) {
    const uint4 lo = base[2 * i], hi = base[2 * i + 1];
    return fr_make(lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}

CUZK_HD void fr_store(uint4* base, uint64_t i, const fr_t& a) {
    base[2 * i] = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    base[2 * i + 1] = make_uint4(a.w[4], a.w[5], a.w[6], a.w[7]);
}
