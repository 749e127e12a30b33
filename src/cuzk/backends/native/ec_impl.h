/* Short Weierstrass group law (y² = x³ + b, a = 0) in XYZZ coordinates,
 * written once and instantiated for G1 (over Fq, g1.c) and G2 (over Fq2,
 * g2.c). The including file defines FE, the F_* field operations, F_ONE
 * (one in Montgomery form) and PFX(name), the prefix of every symbol.
 *
 * An XYZZ point (X, Y, ZZ, ZZZ) with ZZ³ = ZZZ² stands for the affine point
 * (X/ZZ, Y/ZZZ); ZZ = 0 is infinity. A mixed addition costs 8M + 2S and,
 * unlike Jacobian formulas, needs no squaring of the accumulator's Z, which
 * is what Pippenger buckets do all day. Formulas: EFD "xyzz" (madd-2008-s,
 * add-2008-s, dbl-2008-s-1, mdbl-2008-s-1). Every addition checks for the
 * doubling and the inverse cases, so equal or negated inputs are exact.
 */

#define AFF PFX(aff)
#define XYZZ PFX(xyzz)

/* Affine, Montgomery form; (0, 0) (not on the curve) is infinity. */
typedef struct {
    FE x, y;
} AFF;

typedef struct {
    FE X, Y, ZZ, ZZZ;
} XYZZ;

INLINE int PFX(aff_is_inf)(const AFF *p) { return F_IS_ZERO(&p->x) && F_IS_ZERO(&p->y); }
INLINE void PFX(xyzz_set_inf)(XYZZ *p) { memset(p, 0, sizeof *p); }
INLINE int PFX(xyzz_is_inf)(const XYZZ *p) { return F_IS_ZERO(&p->ZZ); }

INLINE void PFX(xyzz_from_aff)(XYZZ *o, const AFF *a)
{
    if (PFX(aff_is_inf)(a)) {
        PFX(xyzz_set_inf)(o);
        return;
    }
    o->X = a->x;
    o->Y = a->y;
    o->ZZ = F_ONE;
    o->ZZZ = F_ONE;
}

/* o = 2p (o may be p). */
static void PFX(xyzz_dbl)(XYZZ *o, const XYZZ *p)
{
    if (PFX(xyzz_is_inf)(p)) {
        *o = *p;
        return;
    }
    FE U, V, W, S, M, t, X3, Y3;
    F_DBL(&U, &p->Y);
    F_SQR(&V, &U);
    F_MUL(&W, &U, &V);
    F_MUL(&S, &p->X, &V);
    F_SQR(&M, &p->X);
    F_DBL(&t, &M);
    F_ADD(&M, &M, &t); /* 3X² (a = 0) */
    F_SQR(&X3, &M);
    F_DBL(&t, &S);
    F_SUB(&X3, &X3, &t);
    F_SUB(&t, &S, &X3);
    F_MUL(&Y3, &M, &t);
    F_MUL(&t, &W, &p->Y);
    F_SUB(&Y3, &Y3, &t);
    F_MUL(&o->ZZ, &V, &p->ZZ); /* Y = 0 gives ZZ = 0: infinity, as it should */
    F_MUL(&o->ZZZ, &W, &p->ZZZ);
    o->X = X3;
    o->Y = Y3;
}

/* o = 2·(x, y) for an affine (x, y). */
static void PFX(xyzz_mdbl)(XYZZ *o, const FE *x, const FE *y)
{
    FE U, V, W, S, M, t, X3, Y3;
    F_DBL(&U, y);
    F_SQR(&V, &U);
    F_MUL(&W, &U, &V);
    F_MUL(&S, x, &V);
    F_SQR(&M, x);
    F_DBL(&t, &M);
    F_ADD(&M, &M, &t);
    F_SQR(&X3, &M);
    F_DBL(&t, &S);
    F_SUB(&X3, &X3, &t);
    F_SUB(&t, &S, &X3);
    F_MUL(&Y3, &M, &t);
    F_MUL(&t, &W, y);
    F_SUB(&Y3, &Y3, &t);
    o->X = X3;
    o->Y = Y3;
    o->ZZ = V;
    o->ZZZ = W;
}

/* p += q (or p −= q when negate), q affine. */
static inline void PFX(xyzz_madd)(XYZZ *p, const AFF *q, int negate)
{
    if (PFX(aff_is_inf)(q))
        return;
    FE qy;
    if (negate)
        F_NEG(&qy, &q->y);
    else
        qy = q->y;
    if (PFX(xyzz_is_inf)(p)) {
        p->X = q->x;
        p->Y = qy;
        p->ZZ = F_ONE;
        p->ZZZ = F_ONE;
        return;
    }
    FE U2, S2, P, R, PP, PPP, Q, t, X3, Y3;
    F_MUL(&U2, &q->x, &p->ZZ);
    F_MUL(&S2, &qy, &p->ZZZ);
    F_SUB(&P, &U2, &p->X);
    F_SUB(&R, &S2, &p->Y);
    if (F_IS_ZERO(&P)) {
        if (F_IS_ZERO(&R))
            PFX(xyzz_mdbl)(p, &q->x, &qy);
        else
            PFX(xyzz_set_inf)(p);
        return;
    }
    F_SQR(&PP, &P);
    F_MUL(&PPP, &P, &PP);
    F_MUL(&Q, &p->X, &PP);
    F_SQR(&X3, &R);
    F_SUB(&X3, &X3, &PPP);
    F_DBL(&t, &Q);
    F_SUB(&X3, &X3, &t);
    F_SUB(&t, &Q, &X3);
    F_MUL(&Y3, &R, &t);
    F_MUL(&t, &p->Y, &PPP);
    F_SUB(&Y3, &Y3, &t);
    F_MUL(&p->ZZ, &p->ZZ, &PP);
    F_MUL(&p->ZZZ, &p->ZZZ, &PPP);
    p->X = X3;
    p->Y = Y3;
}

/* p += q, both XYZZ. */
static void PFX(xyzz_add)(XYZZ *p, const XYZZ *q)
{
    if (PFX(xyzz_is_inf)(q))
        return;
    if (PFX(xyzz_is_inf)(p)) {
        *p = *q;
        return;
    }
    FE U1, U2, S1, S2, P, R, PP, PPP, Q, t, X3, Y3;
    F_MUL(&U1, &p->X, &q->ZZ);
    F_MUL(&U2, &q->X, &p->ZZ);
    F_MUL(&S1, &p->Y, &q->ZZZ);
    F_MUL(&S2, &q->Y, &p->ZZZ);
    F_SUB(&P, &U2, &U1);
    F_SUB(&R, &S2, &S1);
    if (F_IS_ZERO(&P)) {
        if (F_IS_ZERO(&R))
            PFX(xyzz_dbl)(p, p);
        else
            PFX(xyzz_set_inf)(p);
        return;
    }
    F_SQR(&PP, &P);
    F_MUL(&PPP, &P, &PP);
    F_MUL(&Q, &U1, &PP);
    F_SQR(&X3, &R);
    F_SUB(&X3, &X3, &PPP);
    F_DBL(&t, &Q);
    F_SUB(&X3, &X3, &t);
    F_SUB(&t, &Q, &X3);
    F_MUL(&Y3, &R, &t);
    F_MUL(&t, &S1, &PPP);
    F_SUB(&Y3, &Y3, &t);
    F_MUL(&p->ZZ, &p->ZZ, &q->ZZ);
    F_MUL(&p->ZZ, &p->ZZ, &PP);
    F_MUL(&p->ZZZ, &p->ZZZ, &q->ZZZ);
    F_MUL(&p->ZZZ, &p->ZZZ, &PPP);
    p->X = X3;
    p->Y = Y3;
}

/* One inversion for 1/ZZ and 1/ZZZ: d = 1/(ZZ·ZZZ), then 1/ZZ = d·ZZZ, 1/ZZZ = d·ZZ. */
static void PFX(xyzz_to_aff)(AFF *o, const XYZZ *p)
{
    if (PFX(xyzz_is_inf)(p)) {
        memset(o, 0, sizeof *o);
        return;
    }
    FE d, t;
    F_MUL(&d, &p->ZZ, &p->ZZZ);
    F_INV(&d, &d);
    F_MUL(&t, &d, &p->ZZZ);
    F_MUL(&o->x, &p->X, &t);
    F_MUL(&t, &d, &p->ZZ);
    F_MUL(&o->y, &p->Y, &t);
}

/* Many points to affine with one inversion (Montgomery's trick); scratch
 * holds 2n field elements. Infinities pass through as (0, 0). */
static void PFX(xyzz_batch_to_aff)(AFF *out, const XYZZ *in, size_t n, FE *scratch)
{
    FE *prefix = scratch, *den = scratch + n;
    FE acc = F_ONE, inv, t, u;
    for (size_t i = 0; i < n; i++) {
        prefix[i] = acc;
        if (!PFX(xyzz_is_inf)(&in[i])) {
            F_MUL(&den[i], &in[i].ZZ, &in[i].ZZZ);
            F_MUL(&acc, &acc, &den[i]);
        }
    }
    F_INV(&inv, &acc);
    for (size_t i = n; i-- > 0;) {
        if (PFX(xyzz_is_inf)(&in[i])) {
            memset(&out[i], 0, sizeof out[i]);
            continue;
        }
        F_MUL(&t, &inv, &prefix[i]); /* 1/(ZZ·ZZZ) of point i */
        F_MUL(&inv, &inv, &den[i]);
        F_MUL(&u, &t, &in[i].ZZZ);
        F_MUL(&out[i].x, &in[i].X, &u);
        F_MUL(&u, &t, &in[i].ZZ);
        F_MUL(&out[i].y, &in[i].Y, &u);
    }
}

/* dst[i] += q[i] for k affine pairs with distinct x (den[i] = q[i].x − dst[i].x
 * on entry, non-zero), sharing one inversion (Montgomery's trick); prefix is
 * scratch for k elements. About 6 multiplications per addition plus 1/k of
 * an inversion, against 10 for an XYZZ mixed addition. The dst[i] must be
 * distinct points in memory. */
static void PFX(batch_add_affine)(AFF *const *dst, const AFF *q, const FE *den, FE *prefix,
                                  size_t k)
{
    if (!k)
        return;
    FE inv, di, t, lambda, x3;
    prefix[0] = den[0];
    for (size_t i = 1; i < k; i++)
        F_MUL(&prefix[i], &prefix[i - 1], &den[i]);
    F_INV(&inv, &prefix[k - 1]);
    for (size_t i = k; i-- > 0;) {
        if (i) {
            F_MUL(&di, &inv, &prefix[i - 1]); /* 1/den[i] */
            F_MUL(&inv, &inv, &den[i]);
        } else {
            di = inv;
        }
        AFF *p = dst[i];
        F_SUB(&t, &q[i].y, &p->y);
        F_MUL(&lambda, &t, &di);
        F_SQR(&x3, &lambda);
        F_SUB(&x3, &x3, &p->x);
        F_SUB(&x3, &x3, &q[i].x);
        F_SUB(&t, &p->x, &x3);
        F_MUL(&t, &lambda, &t);
        F_SUB(&p->y, &t, &p->y);
        p->x = x3;
    }
}

/* y² = x³ + b (b in Montgomery form); infinity, (0, 0), passes. */
INLINE int PFX(aff_on_curve)(const AFF *p, const FE *b)
{
    if (PFX(aff_is_inf)(p))
        return 1;
    FE lhs, rhs;
    F_SQR(&lhs, &p->y);
    F_SQR(&rhs, &p->x);
    F_MUL(&rhs, &rhs, &p->x);
    F_ADD(&rhs, &rhs, b);
    return limbs_eq((const u64 *)&lhs, (const u64 *)&rhs, F_LIMBS);
}

/* Standard-form affine limbs in (all zeros = infinity), Montgomery out.
 * Returns −1, or the index of the first point with a coordinate ≥ q
 * (*why = PREPARE_NOT_CANONICAL) or off the curve (*why = PREPARE_OFF_CURVE).
 * Subgroup membership is the key's business (cuzk params-check). */
long long PFX(prepare)(const u64 *in, u64 *out, size_t n, int *why)
{
    AFF *o = (AFF *)out;
    FE b;
    F_FROM_STD(&b, F_B_STD);
    for (size_t i = 0; i < n; i++) {
        const u64 *p = in + i * 2 * F_LIMBS;
        if (!F_FROM_STD(&o[i].x, p) || !F_FROM_STD(&o[i].y, p + F_LIMBS)) {
            *why = PREPARE_NOT_CANONICAL;
            return (long long)i;
        }
        if (!PFX(aff_on_curve)(&o[i], &b)) {
            *why = PREPARE_OFF_CURVE;
            return (long long)i;
        }
    }
    return -1;
}

/* Affine (Montgomery) to standard-form limbs (infinity → zeros). */
static void PFX(aff_to_std)(u64 *out, const AFF *a)
{
    F_TO_STD(out, &a->x);
    F_TO_STD(out + F_LIMBS, &a->y);
}
