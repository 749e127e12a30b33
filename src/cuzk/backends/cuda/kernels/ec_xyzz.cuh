// Points of y^2 = x^3 + b (a = 0) over F = fq_t (G1) or fq2_t (G2).
//
// Buckets are extended Jacobian "XYZZ" points (X, Y, ZZ, ZZZ) meaning
// (X/ZZ, Y/ZZZ) with ZZ^3 = ZZZ^2; ZZ = 0 is the point at infinity. Adding an
// affine base to a bucket costs 8 products and 2 squarings and needs no
// inversion; the formulas are EFD's madd-2008-s, add-2008-s and dbl-2008-s-1.
// The equal-point and opposite-point cases are handled explicitly: callers
// may pass repeated or negated bases, so a bucket can meet P twice, or P and
// -P, and the running sums of a reduction meet every case.
//
// Affine points in memory: x then y (each F), all-zero limbs for infinity.
#pragma once
#include "fq2.cuh"

namespace cuzk {

template <class F>
struct affine_t {
    F x, y;
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;
};

template <class F>
CUZK_HD xyzz_t<F> xyzz_infinity() {
    xyzz_t<F> r;
    r.X = field_zero<F>();
    r.Y = field_zero<F>();
    r.ZZ = field_zero<F>();
    r.ZZZ = field_zero<F>();
    return r;
}

template <class F>
CUZK_HD bool is_infinity(const xyzz_t<F>& p) {
    return is_zero(p.ZZ);
}

template <class F>
CUZK_HD bool is_infinity(const affine_t<F>& p) {
    return is_zero(p.x) && is_zero(p.y);
}

template <class F>
CUZK_HD xyzz_t<F> from_affine(const affine_t<F>& a) {
    if (is_infinity(a)) return xyzz_infinity<F>();
    xyzz_t<F> r;
    r.X = a.x;
    r.Y = a.y;
    r.ZZ = field_one<F>();
    r.ZZZ = field_one<F>();
    return r;
}

template <class F>
CUZK_HD affine_t<F> negate(const affine_t<F>& a) {
    affine_t<F> r;
    r.x = a.x;
    r.y = neg(a.y);
    return r;
}

template <class F>
CUZK_HD xyzz_t<F> negate(const xyzz_t<F>& p) {
    xyzz_t<F> r = p;
    r.Y = neg(p.Y);
    return r;
}

// 2·P (dbl-2008-s-1 with a = 0). A point with Y = 0 has order 2 and doubles
// to infinity: U = 0 makes ZZ3 = 0 by itself.
template <class F>
CUZK_POINT_FN xyzz_t<F> dbl(const xyzz_t<F>& p) {
    if (is_infinity(p)) return p;
    F U = dbl(p.Y);
    F V = sqr_call(U);
    F W = mul_call(U, V);
    F S = mul_call(p.X, V);
    F X2 = sqr_call(p.X);
    F M = add(dbl(X2), X2);
    xyzz_t<F> r;
    r.X = sub(sqr_call(M), dbl(S));
    r.Y = sub(mul_call(M, sub(S, r.X)), mul_call(W, p.Y));
    r.ZZ = mul_call(V, p.ZZ);
    r.ZZZ = mul_call(W, p.ZZZ);
    return r;
}

// 2·A for an affine A (ZZ = ZZZ = 1 saves two products).
template <class F>
CUZK_POINT_FN xyzz_t<F> dbl_affine(const affine_t<F>& a) {
    F U = dbl(a.y);
    F V = sqr_call(U);
    F W = mul_call(U, V);
    F S = mul_call(a.x, V);
    F X2 = sqr_call(a.x);
    F M = add(dbl(X2), X2);
    xyzz_t<F> r;
    r.X = sub(sqr_call(M), dbl(S));
    r.Y = sub(mul_call(M, sub(S, r.X)), mul_call(W, a.y));
    r.ZZ = V;
    r.ZZZ = W;
    return r;
}

// P + A for an affine A that is not infinity (madd-2008-s). The hot loop of
// bucket accumulation: its products are inlined; the rarer operations call.
template <class F>
CUZK_HD xyzz_t<F> add_affine_inline(const xyzz_t<F>& p, const affine_t<F>& a) {
    if (is_infinity(p)) return from_affine(a);
    F U2 = mul_hot(a.x, p.ZZ);
    F S2 = mul_hot(a.y, p.ZZZ);
    F P = sub(U2, p.X);
    F R = sub(S2, p.Y);
    if (is_zero(P)) {
        if (is_zero(R)) return dbl_affine(a);
        return xyzz_infinity<F>();
    }
    F PP = sqr_hot(P);
    F PPP = mul_hot(P, PP);
    F Q = mul_hot(p.X, PP);
    xyzz_t<F> r;
    r.X = sub(sub(sqr_hot(R), PPP), dbl(Q));
    r.Y = sub(mul_hot(R, sub(Q, r.X)), mul_hot(p.Y, PPP));
    r.ZZ = mul_hot(p.ZZ, PP);
    r.ZZZ = mul_hot(p.ZZZ, PPP);
    return r;
}

// The same as a call, for the kernels whose speed does not hinge on it.
template <class F>
CUZK_POINT_FN xyzz_t<F> add_affine(const xyzz_t<F>& p, const affine_t<F>& a) {
    return add_affine_inline(p, a);
}

// P + Q (add-2008-s). A call whose products are calls too: inlining them
// (one 14-product body) raised every caller's register count and doubled
// the bucket reduction's time
// (docs/device-notes/msm.md#field-product).
template <class F>
CUZK_POINT_FN xyzz_t<F> add(const xyzz_t<F>& p, const xyzz_t<F>& q) {
    if (is_infinity(p)) return q;
    if (is_infinity(q)) return p;
    F U1 = mul_call(p.X, q.ZZ);
    F U2 = mul_call(q.X, p.ZZ);
    F S1 = mul_call(p.Y, q.ZZZ);
    F S2 = mul_call(q.Y, p.ZZZ);
    F P = sub(U2, U1);
    F R = sub(S2, S1);
    if (is_zero(P)) {
        if (is_zero(R)) return dbl(p);
        return xyzz_infinity<F>();
    }
    F PP = sqr_call(P);
    F PPP = mul_call(P, PP);
    F Q = mul_call(U1, PP);
    xyzz_t<F> r;
    r.X = sub(sub(sqr_call(R), PPP), dbl(Q));
    r.Y = sub(mul_call(R, sub(Q, r.X)), mul_call(S1, PPP));
    r.ZZ = mul_call(mul_call(p.ZZ, q.ZZ), PP);
    r.ZZZ = mul_call(mul_call(p.ZZZ, q.ZZZ), PPP);
    return r;
}

// k·P for a small non-negative k, most significant bit first.
template <class F>
CUZK_POINT_FN xyzz_t<F> mul_small(const xyzz_t<F>& p, uint32_t k) {
    xyzz_t<F> acc = xyzz_infinity<F>();
    for (int i = 31; i >= 0; --i) {
        acc = dbl(acc);
        if ((k >> i) & 1) acc = add(acc, p);
    }
    return acc;
}

// --- memory layout: F occupies FW 32-bit words --------------------------------

template <class F>
struct words {
    static const int n = sizeof(F) / 4;
};

template <class F>
CUZK_HD affine_t<F> load_affine(const uint32_t* p) {
    affine_t<F> a;
    load(a.x, p);
    load(a.y, p + words<F>::n);
    return a;
}

template <class F>
CUZK_HD void store_affine(uint32_t* p, const affine_t<F>& a) {
    store(p, a.x);
    store(p + words<F>::n, a.y);
}

template <class F>
CUZK_HD xyzz_t<F> load_xyzz(const uint32_t* p) {
    xyzz_t<F> r;
    load(r.X, p);
    load(r.Y, p + words<F>::n);
    load(r.ZZ, p + 2 * words<F>::n);
    load(r.ZZZ, p + 3 * words<F>::n);
    return r;
}

template <class F>
CUZK_HD void store_xyzz(uint32_t* p, const xyzz_t<F>& a) {
    store(p, a.X);
    store(p + words<F>::n, a.Y);
    store(p + 2 * words<F>::n, a.ZZ);
    store(p + 3 * words<F>::n, a.ZZZ);
}

}  // namespace cuzk
