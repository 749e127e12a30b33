// Affine sums A + B with the inversion left to the caller, for batched
// (Montgomery-trick) accumulation: the caller collects the denominators of
// many independent sums, inverts their product once, and hands each sum its
// own 1/den. A sum then costs 3 products (λ, λ², λ·(x1 − x3)) plus the 3 of
// its share of the batch, against 10 for an XYZZ mixed addition.
//
// Every case of the group law is a "kind" decided from the inputs alone, so
// a second pass over the same inputs finds the same kind (and denominator):
//   SUM     x1 ≠ x2                    den = x2 − x1, λ = (y2 − y1)/den
//   DBL     A = B, y ≠ 0               den = 2y,      λ = 3x²/den
//   FIRST   B absent or infinity       A, no inversion
//   SECOND  A infinity                 B, no inversion
//   INF     A = −B (or y = 0 doubled)  infinity, no inversion
// Infinity is the all-zero pair (not on either curve: y² = x³ + b has b ≠ 0).
#pragma once
#include "ec_xyzz.cuh"

namespace cuzk {

// The affine rounds' products are calls to the one copy of the product
// (mul_call, operands by value): inlined, pass 2's five products made SASS
// large enough to stall on instruction fetch
// (docs/device-notes/msm.md#field-product). G2's Fq2 products are calls either way.
template <class F>
CUZK_HD F aff_mul(const F& a, const F& b) {
    return mul_call(a, b);
}

template <class F>
CUZK_HD F aff_sqr(const F& a) {
    return sqr_call(a);
}

enum pair_kind_t { PAIR_SUM = 0, PAIR_DBL = 1, PAIR_FIRST = 2, PAIR_SECOND = 3, PAIR_INF = 4 };

template <class F>
CUZK_HD int pair_kind(const affine_t<F>& a, const affine_t<F>& b, bool has_b) {
    if (!has_b || is_infinity(b)) return PAIR_FIRST;
    if (is_infinity(a)) return PAIR_SECOND;
    if (!eq(a.x, b.x)) return PAIR_SUM;
    if (eq(a.y, b.y) && !is_zero(a.y)) return PAIR_DBL;
    return PAIR_INF;
}

// pair_kind and pair_den from the points' words in memory (x, then y; a set
// `neg` negates that point), reading a y only where the x coordinates do not
// decide the kind: an x of zero (infinity is the all-zero pair) or equal x.
// Pass 1 of the batched rounds needs no more than the denominator, so for a
// sum of two distinct points it reads half of each point (G1: 48 of 96
// bytes, two of its three 32-byte sectors; G2: 96 of 192, three of six).
// Same kinds and denominators as pair_kind and pair_den on the whole points.
template <class F>
CUZK_HD F load_y(const uint32_t* p, bool negated) {
    F y;
    load(y, p + words<F>::n);
    return negated ? neg(y) : y;
}

template <class F>
CUZK_HD int pair_kind_den(const uint32_t* pa, bool na, const uint32_t* pb, bool nb, bool has_b,
                          F& den) {
    if (!has_b) return PAIR_FIRST;
    F ax, bx;
    load(bx, pb);
    if (is_zero(bx) && is_zero(load_y<F>(pb, nb))) return PAIR_FIRST;
    load(ax, pa);
    if (is_zero(ax) && is_zero(load_y<F>(pa, na))) return PAIR_SECOND;
    if (!eq(ax, bx)) {
        den = sub(bx, ax);
        return PAIR_SUM;
    }
    const F ay = load_y<F>(pa, na);
    if (eq(ay, load_y<F>(pb, nb)) && !is_zero(ay)) {
        den = dbl(ay);
        return PAIR_DBL;
    }
    return PAIR_INF;
}

// Whether the kind needs a share of the batch inversion.
CUZK_HD bool pair_inverts(int kind) { return kind <= PAIR_DBL; }

template <class F>
CUZK_HD F pair_den(const affine_t<F>& a, const affine_t<F>& b, int kind) {
    return kind == PAIR_SUM ? sub(b.x, a.x) : dbl(a.y);
}

// A + B given inv = 1/pair_den(a, b, kind) (ignored by the kinds without one).
template <class F>
CUZK_HD affine_t<F> pair_finish(const affine_t<F>& a, const affine_t<F>& b, int kind,
                                const F& inv) {
    if (kind == PAIR_FIRST) return a;
    if (kind == PAIR_SECOND) return b;
    affine_t<F> r;
    if (kind == PAIR_INF) {
        r.x = field_zero<F>();
        r.y = field_zero<F>();
        return r;
    }
    F lambda;
    if (kind == PAIR_SUM) {
        lambda = aff_mul(sub(b.y, a.y), inv);
    } else {
        const F x2 = sqr_call(a.x);
        lambda = mul_call(add(dbl(x2), x2), inv);
    }
    r.x = sub(sub(aff_sqr(lambda), a.x), b.x);  // b.x = a.x when doubling
    r.y = sub(aff_mul(lambda, sub(a.x, r.x)), a.y);
    return r;
}

}  // namespace cuzk
