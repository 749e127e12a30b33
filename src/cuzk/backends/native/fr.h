/* Fr, the scalar field of BLS12-381 (r ≈ 2^255), as 4×64-bit Montgomery limbs.
 *
 * Values at the Python boundary are in standard form. A Montgomery product of
 * a standard-form value and a Montgomery-form constant is the plain product in
 * standard form, so kernels keep data in standard form and store only their
 * constants (twiddles, coset powers) in Montgomery form.
 */
#ifndef CUZK_FR_H
#define CUZK_FR_H

#include "mont.h"

typedef struct {
    u64 v[4];
} fr_t;

static const u64 FR_P[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL,
                            0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};
static const u64 FR_PINV = 0xfffffffeffffffffULL;
/* 2^512 mod r: multiplying by it enters Montgomery form. */
static const fr_t FR_R2 = {{0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL,
                            0x05d314967254398fULL, 0x0748d9d99f59ff11ULL}};
/* 2^256 mod r: one in Montgomery form. */
static const fr_t FR_ONE = {{0x00000001fffffffeULL, 0x5884b7fa00034802ULL,
                             0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL}};
static const u64 FR_ONE_STD_LIMBS[4] = {1, 0, 0, 0};
/* r − 2, the exponent of Fermat inversion. */
static const u64 FR_P_MINUS_2[4] = {0xfffffffeffffffffULL, 0x53bda402fffe5bfeULL,
                                    0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};
/* A primitive 2^32-th root of unity and the multiplicative generator 7, standard form. */
static const fr_t FR_ROOT_2_32 = {{0x3829971f439f0d2bULL, 0xb63683508c2280b9ULL,
                                   0xd09b681922c813b4ULL, 0x16a2a19edfe81f20ULL}};
#define FR_TWO_ADICITY 32
#define FR_GENERATOR 7

/* Out of line, as fq_mul_portable (fq.h). */
static __attribute__((noinline, unused)) void fr_mul_portable(fr_t *o, const fr_t *a,
                                                              const fr_t *b)
{
    mont_mul(o->v, a->v, b->v, FR_P, FR_PINV, 4);
}

INLINE void fr_mul(fr_t *o, const fr_t *a, const fr_t *b)
{
#ifdef CUZK_ADX_PATH
    if (__builtin_expect(cuzk_use_adx, 1)) {
        u64 t[4];
        fr_mul_adx(t, a->v, b->v);
        mont_cond_sub(o->v, t, FR_P, 4);
        return;
    }
#endif
    fr_mul_portable(o, a, b);
}
INLINE void fr_add(fr_t *o, const fr_t *a, const fr_t *b) { mod_add(o->v, a->v, b->v, FR_P, 4); }
INLINE void fr_sub(fr_t *o, const fr_t *a, const fr_t *b) { mod_sub(o->v, a->v, b->v, FR_P, 4); }
INLINE int fr_is_zero(const fr_t *a) { return limbs_is_zero(a->v, 4); }
INLINE int fr_is_canonical(const u64 *a) { return limbs_lt(a, FR_P, 4); }

INLINE void fr_to_mont(fr_t *o, const fr_t *a) { fr_mul(o, a, &FR_R2); }
INLINE void fr_from_mont(fr_t *o, const fr_t *a)
{
    static const fr_t one_std = {{1, 0, 0, 0}};
    fr_mul(o, a, &one_std);
}

/* a^e (a in Montgomery form; e as 4 little-endian limbs). */
static inline void fr_pow(fr_t *o, const fr_t *a, const u64 e[4])
{
    fr_t acc = FR_ONE, base = *a;
    for (int i = 0; i < 256; i++) {
        if ((e[i / 64] >> (i % 64)) & 1)
            fr_mul(&acc, &acc, &base);
        fr_mul(&base, &base, &base);
    }
    *o = acc;
}

static inline void fr_pow_u64(fr_t *o, const fr_t *a, u64 e)
{
    const u64 ev[4] = {e, 0, 0, 0};
    fr_pow(o, a, ev);
}

/* 1/a by Fermat (a ≠ 0, Montgomery form). */
static inline void fr_inv(fr_t *o, const fr_t *a) { fr_pow(o, a, FR_P_MINUS_2); }

#endif
