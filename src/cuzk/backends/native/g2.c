/* G2 of BLS12-381: the group law, MSM and fixed-base tables over Fq2
 * (coordinates c0 + c1·u, stored c0 first). */
#include <stdlib.h>

#include "fq.h"
#include "kernels.h"
#include "msm_plan.h"
#include "pool.h"

static const fq2_t FQ2_ONE = {{{0x760900000002fffdULL, 0xebf4000bc40c0002ULL,
                                0x5f48985753c758baULL, 0x77ce585370525745ULL,
                                0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL}},
                              {{0}}};

#define FE fq2_t
#define F_LIMBS 12
#define F_ONE FQ2_ONE
#define F_ADD fq2_add
#define F_SUB fq2_sub
#define F_DBL fq2_dbl
#define F_NEG fq2_neg
#define F_MUL fq2_mul
#define F_SQR fq2_sqr
#define F_INV fq2_inv
#define F_IS_ZERO fq2_is_zero
#define PFX(name) g2_##name

/* b = 4(1 + u) of y² = x³ + 4(1 + u), standard form (c0, c1). */
static const u64 F_B_STD[12] = {4, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0};

INLINE int F_FROM_STD(fq2_t *o, const u64 *in)
{
    if (!fq_is_canonical(in) || !fq_is_canonical(in + 6))
        return 0;
    fq_to_mont(&o->c0, (const fq_t *)in);
    fq_to_mont(&o->c1, (const fq_t *)(in + 6));
    return 1;
}

INLINE void F_TO_STD(u64 *out, const fq2_t *a)
{
    fq_from_mont((fq_t *)out, &a->c0);
    fq_from_mont((fq_t *)(out + 6), &a->c1);
}

#include "ec_impl.h"
#include "fixed_impl.h"
#include "msm_impl.h"
