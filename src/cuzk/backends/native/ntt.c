/* The Fr NTT family and Groth16's H polynomial.
 *
 * Radix-2 decimation in time: bit-reverse, then log n butterfly stages.
 * With T threads (a power of two), each thread first runs the stages whose
 * blocks fit in its own contiguous n/T segment, with no synchronisation;
 * only the last log T stages are split across threads one stage at a time.
 *
 * Data stay in standard form: twiddles and scale factors are Montgomery
 * constants, so mont_mul(value, constant) is the plain product.
 */
#include <pthread.h>
#include <stdlib.h>

#include "fr.h"
#include "kernels.h"
#include "pool.h"

/* a −= r (a ≥ r). */
static inline void mod_sub_raw4(u64 *a)
{
    u64 borrow = 0;
    for (int i = 0; i < 4; i++)
        borrow = subb(a[i], FR_P[i], borrow, &a[i]);
}

/* Segments smaller than this are not worth a thread. */
#define NTT_MIN_SEGMENT 1024

long long fr_first_noncanonical(const u64 *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!fr_is_canonical(a + 4 * i))
            return (long long)i;
    }
    return -1;
}

void fr_reduce(u64 *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        /* 2^256 < 3r: at most two subtractions */
        while (!fr_is_canonical(a + 4 * i))
            mod_sub_raw4(a + 4 * i);
    }
}

/* --- twiddle tables (built once per size and direction, kept for the process) --- */

static pthread_mutex_t twiddle_lock = PTHREAD_MUTEX_INITIALIZER;
static fr_t *twiddle_cache[2][FR_TWO_ADICITY + 1];

/* ω of the 2^log_n domain (or its inverse), Montgomery form. */
static void domain_root(fr_t *o, int log_n, int inverse)
{
    fr_t w;
    fr_to_mont(&w, &FR_ROOT_2_32);
    for (int i = log_n; i < FR_TWO_ADICITY; i++)
        fr_mul(&w, &w, &w);
    if (inverse)
        fr_inv(&w, &w);
    *o = w;
}

typedef struct {
    fr_t *table;
    size_t len;
    fr_t ratio;
    fr_t start;
} powers_ctx;

/* table[i] = start·ratio^i (or, when table aliases the data, table[i] *= that). */
static void powers_task(void *p, int tid, int nthreads)
{
    powers_ctx *c = (powers_ctx *)p;
    size_t lo, hi;
    pool_split(c->len, tid, nthreads, &lo, &hi);
    if (lo == hi)
        return;
    fr_t cur;
    fr_pow_u64(&cur, &c->ratio, lo);
    fr_mul(&cur, &cur, &c->start);
    for (size_t i = lo; i < hi; i++) {
        c->table[i] = cur;
        fr_mul(&cur, &cur, &c->ratio);
    }
}

static void scale_task(void *p, int tid, int nthreads)
{
    powers_ctx *c = (powers_ctx *)p;
    size_t lo, hi;
    pool_split(c->len, tid, nthreads, &lo, &hi);
    if (lo == hi)
        return;
    fr_t cur;
    fr_pow_u64(&cur, &c->ratio, lo);
    fr_mul(&cur, &cur, &c->start);
    for (size_t i = lo; i < hi; i++) {
        fr_mul(&c->table[i], &c->table[i], &cur);
        fr_mul(&cur, &cur, &c->ratio);
    }
}

/* a[i] *= start·ratio^i (start, ratio Montgomery). */
static void scale_by_powers(fr_t *a, size_t n, const fr_t *start, const fr_t *ratio, int nthreads)
{
    powers_ctx c = {a, n, *ratio, *start};
    pool_run(n >= 4096 ? nthreads : 1, scale_task, &c);
}

static const fr_t *twiddles(int log_n, int inverse, int nthreads)
{
    pthread_mutex_lock(&twiddle_lock);
    fr_t *t = twiddle_cache[inverse][log_n];
    if (!t) {
        size_t half = log_n ? (size_t)1 << (log_n - 1) : 1;
        t = malloc(half * sizeof(fr_t));
        if (t) {
            powers_ctx c = {t, half, {{0}}, FR_ONE};
            domain_root(&c.ratio, log_n, inverse);
            pool_run(half >= 4096 ? nthreads : 1, powers_task, &c);
            twiddle_cache[inverse][log_n] = t;
        }
    }
    pthread_mutex_unlock(&twiddle_lock);
    return t;
}

/* --- the transform --------------------------------------------------------- */

static inline size_t reverse_bits(size_t x, int bits)
{
    uint64_t v = x;
    v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
    v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
    v = ((v >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((v & 0x0f0f0f0f0f0f0f0fULL) << 4);
    v = __builtin_bswap64(v);
    return (size_t)(v >> (64 - bits));
}

static void bit_reverse(fr_t *a, int log_n)
{
    if (log_n == 0)
        return;
    size_t n = (size_t)1 << log_n;
    for (size_t i = 0; i < n; i++) {
        size_t j = reverse_bits(i, log_n);
        if (i < j) {
            fr_t t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
}

INLINE void butterfly(fr_t *x, fr_t *y, const fr_t *w)
{
    fr_t v, u = *x;
    fr_mul(&v, y, w);
    fr_add(x, &u, &v);
    fr_sub(y, &u, &v);
}

/* Stage s (blocks of 2^(s+1)) over whole blocks in [lo, hi). */
static void stage_blocks(fr_t *a, size_t lo, size_t hi, int s, int log_n, const fr_t *tw)
{
    size_t half = (size_t)1 << s;
    int shift = log_n - 1 - s;
    for (size_t blk = lo; blk < hi; blk += 2 * half) {
        fr_t *x = a + blk, *y = a + blk + half;
        fr_t u = x[0];
        fr_add(&x[0], &u, &y[0]); /* ω^0 = 1 */
        fr_sub(&y[0], &u, &y[0]);
        for (size_t j = 1; j < half; j++)
            butterfly(&x[j], &y[j], &tw[j << shift]);
    }
}

/* Stage s, butterflies k in [k0, k1) of the n/2 (for stages wider than a segment). */
static void stage_butterflies(fr_t *a, size_t k0, size_t k1, int s, int log_n, const fr_t *tw)
{
    size_t half = (size_t)1 << s;
    int shift = log_n - 1 - s;
    for (size_t k = k0; k < k1; k++) {
        size_t j = k & (half - 1);
        size_t i = ((k >> s) << (s + 1)) | j;
        butterfly(&a[i], &a[i + half], &tw[j << shift]);
    }
}

typedef struct {
    fr_t *a;
    int log_n;
    int log_seg;
    int stage;
    const fr_t *tw;
} ntt_ctx;

static void local_stages_task(void *p, int tid, int nthreads)
{
    ntt_ctx *c = (ntt_ctx *)p;
    size_t seg = (size_t)1 << c->log_seg;
    (void)nthreads;
    for (int s = 0; s < c->log_seg; s++)
        stage_blocks(c->a, seg * (size_t)tid, seg * (size_t)(tid + 1), s, c->log_n, c->tw);
}

static void global_stage_task(void *p, int tid, int nthreads)
{
    ntt_ctx *c = (ntt_ctx *)p;
    size_t lo, hi;
    pool_split((size_t)1 << (c->log_n - 1), tid, nthreads, &lo, &hi);
    stage_butterflies(c->a, lo, hi, c->stage, c->log_n, c->tw);
}

/* In place: natural order in, natural order out, no scaling. */
static void ntt_core(fr_t *a, int log_n, const fr_t *tw, int nthreads)
{
    if (log_n == 0)
        return;
    bit_reverse(a, log_n);
    int log_t = 0;
    while ((2 << log_t) <= nthreads && ((size_t)1 << (log_n - log_t - 1)) >= NTT_MIN_SEGMENT)
        log_t++;
    ntt_ctx c = {a, log_n, log_n - log_t, 0, tw};
    pool_run(1 << log_t, local_stages_task, &c);
    for (c.stage = c.log_seg; c.stage < log_n; c.stage++)
        pool_run(1 << log_t, global_stage_task, &c);
}

typedef struct {
    fr_t g, g_inv, n_inv;
} domain_consts;

static void domain_constants(domain_consts *d, int log_n)
{
    const fr_t g_std = {{FR_GENERATOR, 0, 0, 0}};
    const fr_t n_std = {{(u64)1 << log_n, 0, 0, 0}};
    fr_to_mont(&d->g, &g_std);
    fr_inv(&d->g_inv, &d->g);
    fr_to_mont(&d->n_inv, &n_std);
    fr_inv(&d->n_inv, &d->n_inv);
}

int fr_ntt(u64 *data, int log_n, int inverse, int coset, int nthreads)
{
    fr_t *a = (fr_t *)data;
    size_t n = (size_t)1 << log_n;
    const fr_t *tw = twiddles(log_n, inverse, nthreads);
    if (!tw)
        return -1;
    domain_consts d;
    domain_constants(&d, log_n);
    if (!inverse) {
        if (coset)
            scale_by_powers(a, n, &FR_ONE, &d.g, nthreads);
        ntt_core(a, log_n, tw, nthreads);
    } else {
        ntt_core(a, log_n, tw, nthreads);
        scale_by_powers(a, n, &d.n_inv, coset ? &d.g_inv : &FR_ONE, nthreads);
    }
    return 0;
}

typedef struct {
    fr_t *ea, *eb, *ec;
    size_t n;
    fr_t z_inv;
} quotient_ctx;

/* ea[i] = (ea[i]·eb[i] − ec[i]) / Z on the coset. */
static void quotient_task(void *p, int tid, int nthreads)
{
    quotient_ctx *c = (quotient_ctx *)p;
    size_t lo, hi;
    pool_split(c->n, tid, nthreads, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        fr_t t;
        fr_mul(&t, &c->ea[i], &c->eb[i]); /* both standard: this is ab/R */
        fr_mul(&t, &t, &FR_R2);           /* … back to ab */
        fr_sub(&t, &t, &c->ec[i]);
        fr_mul(&c->ea[i], &t, &c->z_inv);
    }
}

int fr_h_poly(const u64 *a, size_t na, const u64 *b, size_t nb, const u64 *c, size_t nc,
              u64 *out, int log_n, int nthreads)
{
    size_t n = (size_t)1 << log_n;
    const fr_t *tw_fwd = twiddles(log_n, 0, nthreads);
    const fr_t *tw_inv = twiddles(log_n, 1, nthreads);
    fr_t *buf = calloc(3 * n, sizeof(fr_t));
    if (!buf || !tw_fwd || !tw_inv) {
        free(buf);
        return -1;
    }
    memcpy(buf, a, na * sizeof(fr_t));
    memcpy(buf + n, b, nb * sizeof(fr_t));
    memcpy(buf + 2 * n, c, nc * sizeof(fr_t));

    domain_consts d;
    domain_constants(&d, log_n);
    /* Each of a, b, c: coefficients by iNTT, then evaluations on the coset g·⟨ω⟩. */
    for (int k = 0; k < 3; k++) {
        fr_t *x = buf + (size_t)k * n;
        ntt_core(x, log_n, tw_inv, nthreads);
        scale_by_powers(x, n, &d.n_inv, &d.g, nthreads);
        ntt_core(x, log_n, tw_fwd, nthreads);
    }
    quotient_ctx q = {buf, buf + n, buf + 2 * n, n, {{0}}};
    fr_t z;
    fr_pow_u64(&z, &d.g, (u64)n); /* Z(g·ω^i) = g^n − 1 */
    fr_sub(&z, &z, &FR_ONE);
    fr_inv(&q.z_inv, &z);
    pool_run(n >= 4096 ? nthreads : 1, quotient_task, &q);
    /* Back to coefficients off the coset; the top one is zero by degree. */
    ntt_core(buf, log_n, tw_inv, nthreads);
    scale_by_powers(buf, n, &d.n_inv, &d.g_inv, nthreads);
    memcpy(out, buf, (n - 1) * sizeof(fr_t));
    free(buf);
    return 0;
}

typedef struct {
    fr_t *ea, *eb, *ec, *out;
    size_t n;
} odd_ctx;

/* ec[i] = ea[i]·eb[i] (c defaults to a∘b on the domain). */
static void product_task(void *p, int tid, int nthreads)
{
    odd_ctx *c = (odd_ctx *)p;
    size_t lo, hi;
    pool_split(c->n, tid, nthreads, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        fr_mul(&c->ec[i], &c->ea[i], &c->eb[i]); /* ab/R */
        fr_mul(&c->ec[i], &c->ec[i], &FR_R2);
    }
}

/* out[i] = ea[i]·eb[i] − ec[i]. */
static void odd_result_task(void *p, int tid, int nthreads)
{
    odd_ctx *c = (odd_ctx *)p;
    size_t lo, hi;
    pool_split(c->n, tid, nthreads, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        fr_t t;
        fr_mul(&t, &c->ea[i], &c->eb[i]);
        fr_mul(&t, &t, &FR_R2);
        fr_sub(&c->out[i], &t, &c->ec[i]);
    }
}

int fr_h_odd_coset(const u64 *a, size_t na, const u64 *b, size_t nb, const u64 *c, size_t nc,
                   u64 *out, int log_n, int nthreads)
{
    size_t n = (size_t)1 << log_n;
    const fr_t *tw_fwd = twiddles(log_n, 0, nthreads);
    const fr_t *tw_inv = twiddles(log_n, 1, nthreads);
    fr_t *buf = calloc(3 * n, sizeof(fr_t));
    if (!buf || !tw_fwd || !tw_inv) {
        free(buf);
        return -1;
    }
    memcpy(buf, a, na * sizeof(fr_t));
    memcpy(buf + n, b, nb * sizeof(fr_t));
    odd_ctx o = {buf, buf + n, buf + 2 * n, (fr_t *)out, n};
    int par = n >= 4096 ? nthreads : 1;
    if (c)
        memcpy(buf + 2 * n, c, nc * sizeof(fr_t));
    else
        pool_run(par, product_task, &o);

    domain_consts d;
    domain_constants(&d, log_n);
    fr_t zeta; /* the primitive 2n-th root: ζ² = ω */
    domain_root(&zeta, log_n + 1, 0);
    for (int k = 0; k < 3; k++) {
        fr_t *x = buf + (size_t)k * n;
        ntt_core(x, log_n, tw_inv, nthreads);
        scale_by_powers(x, n, &d.n_inv, &zeta, nthreads); /* 1/n of the iNTT, then ζ^j */
        ntt_core(x, log_n, tw_fwd, nthreads);
    }
    pool_run(par, odd_result_task, &o);
    free(buf);
    return 0;
}
