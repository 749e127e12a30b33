/* The QAP at the setup's secret point τ: what a Groth16 development setup
 * computes before any curve arithmetic.
 *
 *   fr_lagrange_at   L_j(τ) for the first n points of the 2^k domain;
 *   fr_rmatvec       vᵀ·M for a CSR matrix M (the polynomials A_j(τ), B_j(τ),
 *                    C_j(τ) of every variable, with v = L(τ));
 *   fr_powers        start·ratio^i (the H query's τ^i·Z(τ)/δ);
 *   fr_qap_combine   (β·a_j + α·b_j + c_j)·s (the IC and L queries).
 *
 * Data are standard form at the boundary; constants are kept in Montgomery
 * form so that mont_mul(value, constant) is the plain product (see fr.h).
 */
#include <stdlib.h>
#include <string.h>

#include "fr.h"
#include "kernels.h"
#include "pool.h"

/* Below this, a thread costs more than it saves. */
#define QAP_MIN_PARALLEL 4096

static const u64 FR_MINUS_ONE_STD[4] = {0xffffffff00000000ULL, 0x53bda402fffe5bfeULL,
                                        0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};

/* ω of the 2^log_m domain, Montgomery form. */
static void qap_domain_root(fr_t *o, int log_m)
{
    fr_t w;
    fr_to_mont(&w, &FR_ROOT_2_32);
    for (int i = log_m; i < FR_TWO_ADICITY; i++)
        fr_mul(&w, &w, &w);
    *o = w;
}

/* --- Lagrange basis ---------------------------------------------------------- */

typedef struct {
    fr_t *out;
    size_t n;
    fr_t tau;        /* Montgomery */
    fr_t omega;      /* Montgomery */
    fr_t omega_inv;  /* Montgomery */
    fr_t c_tau;      /* (τ^m − 1)/m · τ, Montgomery */
    fr_t c;          /* (τ^m − 1)/m, standard */
} lagrange_ctx;

/* L_j(τ) = c·ω^j/(τ − ω^j) = c·τ/(τ − ω^j) − c with c = (τ^m − 1)/m: one
 * inversion per thread's share (Montgomery's batch trick), the prefix
 * products parked in the output itself, ω^j regenerated on the way back.
 * The prefix products are kept in standard form (a standard value times a
 * Montgomery one stays standard), so that the way back yields c·τ/(τ − ω^j)
 * in standard form directly: five multiplications per point. */
static void lagrange_task(void *p, int tid, int nthreads)
{
    lagrange_ctx *c = (lagrange_ctx *)p;
    size_t lo, hi;
    pool_split(c->n, tid, nthreads, &lo, &hi);
    if (lo == hi)
        return;
    const fr_t one_std = {{1, 0, 0, 0}};
    fr_t w, prod = one_std, d;
    fr_pow_u64(&w, &c->omega, lo);
    for (size_t j = lo; j < hi; j++) {
        fr_sub(&d, &c->tau, &w); /* τ − ω^j, Montgomery */
        c->out[j] = prod;        /* Π_{lo ≤ i < j} (τ − ω^i), standard */
        fr_mul(&prod, &prod, &d);
        fr_mul(&w, &w, &c->omega);
    }
    fr_t acc; /* c·τ / Π_{lo ≤ i ≤ j} (τ − ω^i), Montgomery, j walking down from hi − 1 */
    fr_to_mont(&prod, &prod);
    fr_inv(&acc, &prod);
    fr_mul(&acc, &acc, &c->c_tau);
    fr_mul(&w, &w, &c->omega_inv);
    for (size_t j = hi; j-- > lo;) {
        fr_t t;
        fr_sub(&d, &c->tau, &w);
        fr_mul(&t, &acc, &c->out[j]); /* c·τ/(τ − ω^j), standard */
        fr_mul(&acc, &acc, &d);
        fr_mul(&w, &w, &c->omega_inv);
        fr_sub(&c->out[j], &t, &c->c);
    }
}

int fr_lagrange_at(const u64 *tau_std, int log_m, u64 *out, size_t n, int nthreads)
{
    size_t m = (size_t)1 << log_m;
    if (n > m)
        return -1;
    lagrange_ctx c;
    c.out = (fr_t *)out;
    c.n = n;
    fr_t tau_std_v = {{tau_std[0], tau_std[1], tau_std[2], tau_std[3]}};
    fr_to_mont(&c.tau, &tau_std_v);
    qap_domain_root(&c.omega, log_m);
    fr_inv(&c.omega_inv, &c.omega);

    fr_t z, m_mont, k;
    const fr_t m_std = {{(u64)m, 0, 0, 0}};
    fr_pow_u64(&z, &c.tau, (u64)m);
    fr_sub(&z, &z, &FR_ONE); /* Z(τ) = τ^m − 1 */
    if (fr_is_zero(&z))
        return 1; /* τ is a point of the domain */
    fr_to_mont(&m_mont, &m_std);
    fr_inv(&m_mont, &m_mont);
    fr_mul(&k, &z, &m_mont);     /* c, Montgomery */
    fr_from_mont(&c.c, &k);      /* c, standard */
    fr_mul(&c.c_tau, &k, &c.tau); /* c·τ, Montgomery */
    pool_run(n >= QAP_MIN_PARALLEL ? nthreads : 1, lagrange_task, &c);
    return 0;
}

/* --- transposed sparse product ------------------------------------------------ */

/* out[j] = Σ_r v[r]·M[r, j], atomic-free. Each thread owns a range of columns
 * (cut so that the ranges hold about as many entries) and sums only into
 * those, reading the entries of every row block that touches its range.
 *
 * A first pass over the row blocks, split between the threads, counts the
 * entries per column bucket (to cut the ranges) and records which of (at
 * most) 64 column stripes each block touches: since a circuit allocates a
 * gadget's variables together, most blocks touch a few stripes and each
 * thread skips most blocks. Column 0, the constant ONE, sits in nearly every
 * row; that pass sums it in per-thread partial sums instead. */
#define RMV_BUCKETS 65536
#define RMV_BLOCK_ROWS 1024
#define RMV_STRIPES 64

typedef struct {
    const int64_t *indptr;
    const int64_t *indices;
    const fr_t *coeffs;
    const fr_t *v;
    size_t rows, nnz, ncols;
    fr_t *out;
    uint8_t *mask; /* or NULL */
    int bucket_shift, stripe_shift; /* column >> shift: its bucket, its stripe */
    size_t nbuckets, nblocks;
    size_t *hist;         /* nthreads × nbuckets entry counts */
    u64 *block_stripes;   /* nblocks stripe bitmaps */
    fr_t *col0;           /* nthreads partial sums of column 0 */
    uint8_t *col0_seen;   /* nthreads: column 0 holds a non-zero coefficient */
    size_t *col_bounds;   /* nthreads + 1 column cuts (from 1 when several threads) */
} rmv_ctx;

/* The smallest s with (n − 1) >> s < parts: shifts, not divisions, in the scan. */
static int shift_into(size_t n, size_t parts)
{
    int s = 0;
    while (n && ((n - 1) >> s) >= parts)
        s++;
    return s;
}

/* acc += k·v (k a coefficient, standard; v standard, v_mont its Montgomery
 * form made on first need). Returns 0 for a zero coefficient. */
INLINE int rmv_accumulate(fr_t *acc, const fr_t *k, const fr_t *v, fr_t *v_mont, int *have_mont)
{
    if (limbs_eq(k->v, FR_ONE_STD_LIMBS, 4)) {
        fr_add(acc, acc, v);
    } else if (limbs_eq(k->v, FR_MINUS_ONE_STD, 4)) {
        fr_sub(acc, acc, v);
    } else if (fr_is_zero(k)) {
        return 0; /* an explicit zero: no product, and no density */
    } else {
        if (!*have_mont) {
            fr_to_mont(v_mont, v);
            *have_mont = 1;
        }
        fr_t t;
        fr_mul(&t, k, v_mont);
        fr_add(acc, acc, &t);
    }
    return 1;
}

/* (Several threads only.) */
static void rmv_survey_task(void *p, int tid, int nthreads)
{
    rmv_ctx *c = (rmv_ctx *)p;
    size_t b0, b1;
    pool_split(c->nblocks, tid, nthreads, &b0, &b1);
    size_t *h = c->hist + (size_t)tid * c->nbuckets;
    fr_t acc = {{0}};
    uint8_t seen = 0;
    for (size_t b = b0; b < b1; b++) {
        size_t r1 = (b + 1) * RMV_BLOCK_ROWS < c->rows ? (b + 1) * RMV_BLOCK_ROWS : c->rows;
        u64 stripes = 0;
        for (size_t r = b * RMV_BLOCK_ROWS; r < r1; r++) {
            int have_mont = 0;
            fr_t v_mont;
            for (int64_t e = c->indptr[r]; e < c->indptr[r + 1]; e++) {
                size_t col = (size_t)c->indices[e];
                if (col == 0) {
                    seen |= rmv_accumulate(&acc, &c->coeffs[e], &c->v[r], &v_mont, &have_mont);
                } else {
                    h[col >> c->bucket_shift]++;
                    stripes |= (u64)1 << (col >> c->stripe_shift);
                }
            }
        }
        c->block_stripes[b] = stripes;
    }
    c->col0[tid] = acc;
    c->col0_seen[tid] = seen;
}

static void rmv_task(void *p, int tid, int nthreads)
{
    rmv_ctx *c = (rmv_ctx *)p;
    (void)nthreads;
    const size_t c0 = c->col_bounds[tid], span = c->col_bounds[tid + 1] - c0;
    fr_t *out = c->out + c0;
    uint8_t *mask = c->mask ? c->mask + c0 : NULL;
    memset(out, 0, span * sizeof(fr_t));
    if (mask)
        memset(mask, 0, span);
    if (!span)
        return;
    u64 mine = ~(u64)0; /* the stripes this thread's columns meet */
    if (c->block_stripes) {
        int s0 = (int)(c0 >> c->stripe_shift), s1 = (int)((c0 + span - 1) >> c->stripe_shift);
        mine = (s1 == RMV_STRIPES - 1 ? ~(u64)0 : ((u64)1 << (s1 + 1)) - 1) &
               ~(((u64)1 << s0) - 1);
    }
    for (size_t b = 0; b < c->nblocks; b++) {
        if (c->block_stripes && !(c->block_stripes[b] & mine))
            continue;
        size_t r1 = (b + 1) * RMV_BLOCK_ROWS < c->rows ? (b + 1) * RMV_BLOCK_ROWS : c->rows;
        for (size_t r = b * RMV_BLOCK_ROWS; r < r1; r++) {
            const int64_t e1 = c->indptr[r + 1];
            int have_mont = 0;
            fr_t v_mont;
            for (int64_t e = c->indptr[r]; e < e1; e++) {
                /* with several threads, column 0 (c0 ≥ 1) wraps past span */
                size_t j = (size_t)c->indices[e] - c0;
                if (j >= span)
                    continue;
                if (rmv_accumulate(&out[j], &c->coeffs[e], &c->v[r], &v_mont, &have_mont) &&
                    mask)
                    mask[j] = 1;
            }
        }
    }
}

int fr_rmatvec(const int64_t *indptr, size_t rows, const int64_t *indices, const u64 *coeffs,
               size_t nnz, const u64 *v, size_t ncols, u64 *out, uint8_t *mask, size_t *where,
               int nthreads)
{
    if (indptr[0] != 0 || (size_t)indptr[rows] != nnz) {
        *where = 0;
        return SPMV_BAD_INDPTR;
    }
    for (size_t r = 0; r < rows; r++) {
        if (indptr[r + 1] < indptr[r]) {
            *where = r;
            return SPMV_BAD_INDPTR;
        }
    }
    for (size_t e = 0; e < nnz; e++) {
        if (indices[e] < 0 || (size_t)indices[e] >= ncols) {
            *where = e;
            return SPMV_BAD_COLUMN;
        }
    }
    if (ncols == 0)
        return SPMV_OK; /* then there are no entries either */
    if (nnz < QAP_MIN_PARALLEL || ncols < 2)
        nthreads = 1;
    rmv_ctx c = {0};
    c.indptr = indptr;
    c.indices = indices;
    c.coeffs = (const fr_t *)coeffs;
    c.v = (const fr_t *)v;
    c.rows = rows;
    c.nnz = nnz;
    c.ncols = ncols;
    c.out = (fr_t *)out;
    c.mask = mask;
    c.nblocks = (rows + RMV_BLOCK_ROWS - 1) / RMV_BLOCK_ROWS;
    c.bucket_shift = shift_into(ncols, RMV_BUCKETS);
    c.stripe_shift = shift_into(ncols, RMV_STRIPES);
    c.nbuckets = ((ncols - 1) >> c.bucket_shift) + 1;
    int rc = SPMV_NO_MEMORY;
    c.col0 = malloc((size_t)nthreads * sizeof(fr_t));
    c.col0_seen = malloc((size_t)nthreads);
    c.col_bounds = malloc(((size_t)nthreads + 1) * sizeof(size_t));
    if (nthreads > 1) {
        c.hist = calloc((size_t)nthreads * c.nbuckets, sizeof(size_t));
        c.block_stripes = malloc((c.nblocks ? c.nblocks : 1) * sizeof(u64));
        if (!c.hist || !c.block_stripes)
            goto done;
    }
    if (!c.col0 || !c.col0_seen || !c.col_bounds)
        goto done;
    if (nthreads == 1) { /* one thread owns every column, column 0 included */
        c.col_bounds[0] = 0;
        c.col_bounds[1] = ncols;
        pool_run(1, rmv_task, &c);
        rc = SPMV_OK;
        goto done;
    }
    pool_run(nthreads, rmv_survey_task, &c);
    /* Cut the columns 1.. where the running entry count crosses t·(its total)/T. */
    c.col_bounds[0] = 1;
    {
        size_t total = 0, seen = 0, b = 0;
        for (size_t i = 0; i < (size_t)nthreads * c.nbuckets; i++)
            total += c.hist[i];
        for (int t = 1; t < nthreads; t++) {
            size_t target = total * (size_t)t / (size_t)nthreads;
            while (b < c.nbuckets && seen < target) {
                for (int u = 0; u < nthreads; u++)
                    seen += c.hist[(size_t)u * c.nbuckets + b];
                b++;
            }
            size_t cut = b << c.bucket_shift;
            c.col_bounds[t] = cut < 1 ? 1 : cut < ncols ? cut : ncols;
        }
    }
    c.col_bounds[nthreads] = ncols;
    pool_run(nthreads, rmv_task, &c);
    fr_t col0 = {{0}};
    uint8_t seen0 = 0;
    for (int t = 0; t < nthreads; t++) {
        fr_add(&col0, &col0, &c.col0[t]);
        seen0 |= c.col0_seen[t];
    }
    c.out[0] = col0;
    if (mask)
        mask[0] = seen0;
    rc = SPMV_OK;
done:
    free(c.col0);
    free(c.col0_seen);
    free(c.col_bounds);
    free(c.hist);
    free(c.block_stripes);
    return rc;
}

/* --- geometric sequences and the IC / L combination ---------------------------- */

typedef struct {
    fr_t *out;
    size_t n;
    fr_t start; /* standard */
    fr_t ratio; /* Montgomery */
} qap_powers_ctx;

static void qap_powers_task(void *p, int tid, int nthreads)
{
    qap_powers_ctx *c = (qap_powers_ctx *)p;
    size_t lo, hi;
    pool_split(c->n, tid, nthreads, &lo, &hi);
    if (lo == hi)
        return;
    fr_t cur;
    fr_pow_u64(&cur, &c->ratio, lo);
    fr_mul(&cur, &cur, &c->start); /* Montgomery × standard: standard */
    for (size_t i = lo; i < hi; i++) {
        c->out[i] = cur;
        fr_mul(&cur, &cur, &c->ratio);
    }
}

void fr_powers(const u64 *start, const u64 *ratio, u64 *out, size_t n, int nthreads)
{
    qap_powers_ctx c = {(fr_t *)out, n, {{start[0], start[1], start[2], start[3]}}, {{0}}};
    const fr_t ratio_std = {{ratio[0], ratio[1], ratio[2], ratio[3]}};
    fr_to_mont(&c.ratio, &ratio_std);
    pool_run(n >= QAP_MIN_PARALLEL ? nthreads : 1, qap_powers_task, &c);
}

typedef struct {
    const fr_t *a, *b, *c;
    fr_t *out;
    size_t n;
    fr_t beta, alpha, scale; /* Montgomery */
    size_t *first_zero;      /* one per thread: n when none */
} combine_ctx;

static void combine_task(void *p, int tid, int nthreads)
{
    combine_ctx *c = (combine_ctx *)p;
    size_t lo, hi, zero = c->n;
    pool_split(c->n, tid, nthreads, &lo, &hi);
    for (size_t j = lo; j < hi; j++) {
        fr_t s, t;
        fr_mul(&s, &c->a[j], &c->beta);
        fr_mul(&t, &c->b[j], &c->alpha);
        fr_add(&s, &s, &t);
        fr_add(&s, &s, &c->c[j]);
        fr_mul(&c->out[j], &s, &c->scale);
        if (zero == c->n && fr_is_zero(&c->out[j]))
            zero = j;
    }
    c->first_zero[tid] = zero;
}

long long fr_qap_combine(const u64 *a, const u64 *b, const u64 *cc, size_t n, const u64 *beta,
                         const u64 *alpha, const u64 *scale, u64 *out, int nthreads)
{
    combine_ctx c = {(const fr_t *)a, (const fr_t *)b, (const fr_t *)cc, (fr_t *)out, n,
                     {{0}}, {{0}}, {{0}}, NULL};
    const fr_t beta_std = {{beta[0], beta[1], beta[2], beta[3]}};
    const fr_t alpha_std = {{alpha[0], alpha[1], alpha[2], alpha[3]}};
    const fr_t scale_std = {{scale[0], scale[1], scale[2], scale[3]}};
    fr_to_mont(&c.beta, &beta_std);
    fr_to_mont(&c.alpha, &alpha_std);
    fr_to_mont(&c.scale, &scale_std);
    if (n < QAP_MIN_PARALLEL)
        nthreads = 1;
    c.first_zero = malloc((size_t)nthreads * sizeof(size_t));
    if (!c.first_zero)
        return -2;
    pool_run(nthreads, combine_task, &c);
    long long first = -1;
    for (int t = 0; t < nthreads; t++) {
        if (c.first_zero[t] < n) {
            first = (long long)c.first_zero[t];
            break; /* the shares are in order */
        }
    }
    free(c.first_zero);
    return first;
}
