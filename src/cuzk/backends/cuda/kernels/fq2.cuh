// Fq2 = Fq[u] / (u^2 + 1), both coefficients in Montgomery form.
// Same operation names as fq.cuh, so the curve code is written once for both.
#pragma once
#include "fq.cuh"

namespace cuzk {

struct fq2_t {
    fq_t c0, c1;
};

CUZK_HD bool is_zero(const fq2_t& a) { return is_zero(a.c0) && is_zero(a.c1); }
CUZK_HD bool eq(const fq2_t& a, const fq2_t& b) { return eq(a.c0, b.c0) && eq(a.c1, b.c1); }

CUZK_HD fq2_t add(const fq2_t& a, const fq2_t& b) { return {add(a.c0, b.c0), add(a.c1, b.c1)}; }
CUZK_HD fq2_t sub(const fq2_t& a, const fq2_t& b) { return {sub(a.c0, b.c0), sub(a.c1, b.c1)}; }
CUZK_HD fq2_t dbl(const fq2_t& a) { return {dbl(a.c0), dbl(a.c1)}; }
CUZK_HD fq2_t neg(const fq2_t& a) { return {neg(a.c0), neg(a.c1)}; }

// Karatsuba: three Fq products. Fq2 products and squares are calls on the
// device (CUZK_POINT_FN): inlined at every use they would multiply the G2
// code, and NVRTC's compile time, by the number of call sites. Operands by
// value, as mul_call's (fq.cuh).
CUZK_POINT_FN fq2_t mul(fq2_t a, fq2_t b) {
    fq_t v0 = mul(a.c0, b.c0);
    fq_t v1 = mul(a.c1, b.c1);
    fq_t s = mul(add(a.c0, a.c1), add(b.c0, b.c1));
    return {sub(v0, v1), sub(sub(s, v0), v1)};
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two Fq products.
CUZK_POINT_FN fq2_t sqr(fq2_t a) {
    fq_t p = mul(add(a.c0, a.c1), sub(a.c0, a.c1));
    fq_t m = mul(a.c0, a.c1);
    return {p, dbl(m)};
}

CUZK_HD fq2_t mul_call(const fq2_t& a, const fq2_t& b) { return mul(a, b); }

// The products of the hot loop (the mixed addition of bucket accumulation and
// of the 0/1 path): inline for Fq, calls for Fq2. (Inlining the
// Fq2 ones too was tried at compile level: 255 registers with spills in every
// hot kernel and ~150 s of ptxas time for the G2 module, so it was dropped.)
CUZK_HD fq_t mul_hot(const fq_t& a, const fq_t& b) { return mul(a, b); }
CUZK_HD fq_t sqr_hot(const fq_t& a) { return mul(a, a); }
CUZK_HD fq2_t mul_hot(const fq2_t& a, const fq2_t& b) { return mul(a, b); }
CUZK_HD fq2_t sqr_hot(const fq2_t& a) { return sqr(a); }
CUZK_HD fq2_t sqr_call(const fq2_t& a) { return sqr(a); }

// 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2).
CUZK_HD fq2_t inverse(const fq2_t& a) {
    fq_t n = inverse(add(sqr_call(a.c0), sqr_call(a.c1)));
    return {mul_call(a.c0, n), neg(mul_call(a.c1, n))};
}

// The same through the binary inverse of Fq (batched-affine accumulation).
CUZK_HD fq2_t inverse_fast(const fq2_t& a) {
    fq_t n = inverse_fast(add(sqr_call(a.c0), sqr_call(a.c1)));
    return {mul_call(a.c0, n), neg(mul_call(a.c1, n))};
}

CUZK_HD fq2_t from_mont(const fq2_t& a) { return {from_mont(a.c0), from_mont(a.c1)}; }

template <class F>
CUZK_HD F field_one();
template <>
CUZK_HD fq_t field_one<fq_t>() {
    return fq_one();
}
template <>
CUZK_HD fq2_t field_one<fq2_t>() {
    return {fq_one(), fq_zero()};
}

template <class F>
CUZK_HD F field_zero();
template <>
CUZK_HD fq_t field_zero<fq_t>() {
    return fq_zero();
}
template <>
CUZK_HD fq2_t field_zero<fq2_t>() {
    return {fq_zero(), fq_zero()};
}

// Loads and stores from limb arrays: c0 then c1, as in the (n, 2, 2, 6) layout.
CUZK_HD void load(fq_t& r, const uint32_t* p) { r = load_fq(p); }
CUZK_HD void store(uint32_t* p, const fq_t& a) { store_fq(p, a); }
CUZK_HD void load(fq2_t& r, const uint32_t* p) {
    r.c0 = load_fq(p);
    r.c1 = load_fq(p + 12);
}
CUZK_HD void store(uint32_t* p, const fq2_t& a) {
    store_fq(p, a.c0);
    store_fq(p + 12, a.c1);
}

}  // namespace cuzk
