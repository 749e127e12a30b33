/* G1 of BLS12-381: the group law, MSM and fixed-base tables over Fq. */
#include <stdlib.h>

#include "fq.h"
#include "kernels.h"
#include "msm_plan.h"
#include "pool.h"

#define FE fq_t
#define F_LIMBS 6
#define F_ONE FQ_ONE
#define F_ADD fq_add
#define F_SUB fq_sub
#define F_DBL fq_dbl
#define F_NEG fq_neg
#define F_MUL fq_mul
#define F_SQR fq_sqr
#define F_INV fq_inv
#define F_IS_ZERO fq_is_zero
#define PFX(name) g1_##name

/* b = 4 of y² = x³ + 4, standard form. */
static const u64 F_B_STD[6] = {4, 0, 0, 0, 0, 0};

/* in: q standard-form limbs; 0 when not canonical. */
INLINE int F_FROM_STD(fq_t *o, const u64 *in)
{
    if (!fq_is_canonical(in))
        return 0;
    fq_to_mont(o, (const fq_t *)in);
    return 1;
}

INLINE void F_TO_STD(u64 *out, const fq_t *a) { fq_from_mont((fq_t *)out, a); }

#include "ec_impl.h"
#include "fixed_impl.h"
#include "msm_impl.h"
