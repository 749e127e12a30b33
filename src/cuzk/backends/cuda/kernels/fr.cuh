// Fr, the scalar field of BLS12-381: 8 x 32-bit little-endian words, the
// 8-limb instance of the Montgomery layer (mont.cuh).
//
// Values are kept canonical (< p) everywhere. Multiplication is Montgomery's
// (R = 2^256): fr_mul(a, b) = a*b/R mod p. Data arrays stay in standard form:
// multiplying a standard-form value by a constant stored in Montgomery form
// (c*R) gives the standard-form product, so linear maps (NTTs, scalings,
// sparse products) need no conversion at all; only products of two data
// values carry an extra 1/R, which callers fold into a constant.
//
// FR_MUL_FOLDED, which every file including this one defines, picks the
// product: 1 folds p's two low words into additions (fastest element-wise),
// 0 keeps every product (fewer registers: ntt.cu's choice);
// docs/device-notes/ntt.md#tuning-table.
#pragma once
#include "mont.cuh"

#ifndef FR_MUL_FOLDED
#error "fr.cuh: define FR_MUL_FOLDED (0 or 1) before including it"
#endif

struct fr_t {
    uint32_t w[8];
};

// p, p's Montgomery constant -p^-1 mod 2^32.
#define FR_P0 0x00000001u
#define FR_P1 0xffffffffu
#define FR_P2 0xfffe5bfeu
#define FR_P3 0x53bda402u
#define FR_P4 0x09a1d805u
#define FR_P5 0x3339d808u
#define FR_P6 0x299d7d48u
#define FR_P7 0x73eda753u
#define FR_N0 0xffffffffu

struct fr_params {
    static constexpr int N = 8;
    static constexpr uint32_t n0 = FR_N0, P0 = FR_P0, P1 = FR_P1;
    static constexpr bool TOP_ADD_CC = true;  // the sum's top limb keeps its carry-out
    // A switch on a compile-time index folds to an immediate.
    CUZK_HD static uint32_t p(int i) {
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
};
typedef mont<fr_params> fr_field;

CUZK_HD uint32_t fr_p(int i) { return fr_params::p(i); }

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

CUZK_HD bool fr_is_zero(const fr_t& a) { return fr_field::is_zero(a.w); }
CUZK_HD bool fr_eq(const fr_t& a, const fr_t& b) { return fr_field::eq(a.w, b.w); }

// a - p if a >= p, else a (a < 2^256).
CUZK_HD fr_t fr_cond_sub_p(const fr_t& a) {
    fr_t r;
    fr_field::cond_sub(r.w, a.w);
    return r;
}

// Any 256-bit value reduced mod p (2^256 < 3p: at most two subtractions).
CUZK_HD fr_t fr_reduce_full(const fr_t& a) { return fr_cond_sub_p(fr_cond_sub_p(a)); }

CUZK_HD fr_t fr_add(const fr_t& a, const fr_t& b) {
    fr_t r;
    fr_field::add(r.w, a.w, b.w);
    return r;
}

CUZK_HD fr_t fr_sub(const fr_t& a, const fr_t& b) {
    fr_t r;
    fr_field::sub(r.w, a.w, b.w);
    return r;
}

CUZK_HD fr_t fr_neg(const fr_t& a) { return fr_sub(fr_zero(), a); }

// Montgomery products (mont.cuh's even/odd CIOS), the result canonical.
CUZK_HD fr_t fr_mul_chains(const fr_t& a, const fr_t& b) {
    fr_t r;
    fr_field::mul_even_odd<false>(r.w, a.w, b.w);
    return r;
}

CUZK_HD fr_t fr_mul_chains_folded(const fr_t& a, const fr_t& b) {
    fr_t r;
    fr_field::mul_even_odd<true>(r.w, a.w, b.w);
    return r;
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
