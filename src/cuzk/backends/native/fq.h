/* Fq, the base field of BLS12-381 (q ≈ 2^381), as 6×64-bit Montgomery
 * limbs, and Fq2 = Fq[u]/(u² + 1). Points are kept in Montgomery form from
 * prepare_g1/prepare_g2 on, and leave it only when a result is returned. */
#ifndef CUZK_FQ_H
#define CUZK_FQ_H

#include "mont.h"

typedef struct {
    u64 v[6];
} fq_t;

typedef struct {
    fq_t c0, c1;
} fq2_t;

static const u64 FQ_P[6] = {0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL,
                            0x64774b84f38512bfULL, 0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL};
static const u64 FQ_PINV = 0x89f3fffcfffcfffdULL;
static const fq_t FQ_R2 = {{0xf4df1f341c341746ULL, 0x0a76e6a609d104f1ULL, 0x8de5476c4c95b6d5ULL,
                            0x67eb88a9939d83c0ULL, 0x9a793e85b519952dULL, 0x11988fe592cae3aaULL}};
static const fq_t FQ_ONE = {{0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL,
                             0x77ce585370525745ULL, 0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL}};
static const u64 FQ_P_MINUS_2[6] = {0xb9feffffffffaaa9ULL, 0x1eabfffeb153ffffULL,
                                    0x6730d2a0f6b0f624ULL, 0x64774b84f38512bfULL,
                                    0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL};

/* Out of line: inlining the unrolled C loop next to the assembly at every
 * call site multiplies compile time and code size for a path rarely taken. */
static __attribute__((noinline, unused)) void fq_mul_portable(fq_t *o, const fq_t *a,
                                                              const fq_t *b)
{
    mont_mul(o->v, a->v, b->v, FQ_P, FQ_PINV, 6);
}

INLINE void fq_mul(fq_t *o, const fq_t *a, const fq_t *b)
{
#ifdef CUZK_ADX_PATH
    if (__builtin_expect(cuzk_use_adx, 1)) {
        u64 t[6];
        fq_mul_adx(t, a->v, b->v);
        mont_cond_sub(o->v, t, FQ_P, 6);
        return;
    }
#endif
    fq_mul_portable(o, a, b);
}
INLINE void fq_sqr(fq_t *o, const fq_t *a) { fq_mul(o, a, a); }
INLINE void fq_add(fq_t *o, const fq_t *a, const fq_t *b) { mod_add(o->v, a->v, b->v, FQ_P, 6); }
INLINE void fq_sub(fq_t *o, const fq_t *a, const fq_t *b) { mod_sub(o->v, a->v, b->v, FQ_P, 6); }
INLINE void fq_dbl(fq_t *o, const fq_t *a) { mod_add(o->v, a->v, a->v, FQ_P, 6); }
INLINE void fq_neg(fq_t *o, const fq_t *a) { mod_neg(o->v, a->v, FQ_P, 6); }
INLINE int fq_is_zero(const fq_t *a) { return limbs_is_zero(a->v, 6); }
INLINE int fq_is_canonical(const u64 *a) { return limbs_lt(a, FQ_P, 6); }

INLINE void fq_to_mont(fq_t *o, const fq_t *a) { fq_mul(o, a, &FQ_R2); }
INLINE void fq_from_mont(fq_t *o, const fq_t *a)
{
    static const fq_t one_std = {{1, 0, 0, 0, 0, 0}};
    fq_mul(o, a, &one_std);
}

/* 1/a by Fermat (Montgomery form; 1/0 = 0, which callers never rely on). */
static inline void fq_inv(fq_t *o, const fq_t *a)
{
    fq_t acc = FQ_ONE, base = *a;
    for (int i = 0; i < 381; i++) {
        if ((FQ_P_MINUS_2[i / 64] >> (i % 64)) & 1)
            fq_mul(&acc, &acc, &base);
        fq_sqr(&base, &base);
    }
    *o = acc;
}

/* --- Fq2 ------------------------------------------------------------------ */

INLINE void fq2_add(fq2_t *o, const fq2_t *a, const fq2_t *b)
{
    fq_add(&o->c0, &a->c0, &b->c0);
    fq_add(&o->c1, &a->c1, &b->c1);
}
INLINE void fq2_sub(fq2_t *o, const fq2_t *a, const fq2_t *b)
{
    fq_sub(&o->c0, &a->c0, &b->c0);
    fq_sub(&o->c1, &a->c1, &b->c1);
}
INLINE void fq2_dbl(fq2_t *o, const fq2_t *a)
{
    fq_dbl(&o->c0, &a->c0);
    fq_dbl(&o->c1, &a->c1);
}
INLINE void fq2_neg(fq2_t *o, const fq2_t *a)
{
    fq_neg(&o->c0, &a->c0);
    fq_neg(&o->c1, &a->c1);
}
INLINE int fq2_is_zero(const fq2_t *a) { return fq_is_zero(&a->c0) && fq_is_zero(&a->c1); }

/* Karatsuba: three Fq products instead of four (u² = −1). */
INLINE void fq2_mul(fq2_t *o, const fq2_t *a, const fq2_t *b)
{
    fq_t t0, t1, sa, sb, s;
    fq_mul(&t0, &a->c0, &b->c0);
    fq_mul(&t1, &a->c1, &b->c1);
    fq_add(&sa, &a->c0, &a->c1);
    fq_add(&sb, &b->c0, &b->c1);
    fq_mul(&s, &sa, &sb);
    fq_sub(&o->c0, &t0, &t1);
    fq_sub(&s, &s, &t0);
    fq_sub(&o->c1, &s, &t1);
}

/* (a0 + a1·u)² = (a0 + a1)(a0 − a1) + 2·a0·a1·u. */
INLINE void fq2_sqr(fq2_t *o, const fq2_t *a)
{
    fq_t s, d, p;
    fq_add(&s, &a->c0, &a->c1);
    fq_sub(&d, &a->c0, &a->c1);
    fq_mul(&p, &a->c0, &a->c1);
    fq_mul(&o->c0, &s, &d);
    fq_dbl(&o->c1, &p);
}

/* 1/(a0 + a1·u) = (a0 − a1·u)/(a0² + a1²). */
static inline void fq2_inv(fq2_t *o, const fq2_t *a)
{
    fq_t n0, n1, inv;
    fq_sqr(&n0, &a->c0);
    fq_sqr(&n1, &a->c1);
    fq_add(&n0, &n0, &n1);
    fq_inv(&inv, &n0);
    fq_mul(&o->c0, &a->c0, &inv);
    fq_mul(&n1, &a->c1, &inv);
    fq_neg(&o->c1, &n1);
}

#endif
