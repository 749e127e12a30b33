/* Fixed-base multiplication k·G for many k (parameter generation),
 * instantiated for G1 and G2 after ec_impl.h.
 *
 * The table holds, for every window w and digit d in 1..2^(c−1), the affine
 * point d·2^(cw)·G; with the signed digits of msm_plan.h a multiple then
 * costs one mixed addition per non-zero digit (negation is free in affine)
 * and no doubling. Results are normalised in chunks with one inversion each.
 */

#define FIXED_CHUNK 256

size_t PFX(fixed_table_len)(int c) { return (size_t)msm_num_windows(c) << (c - 1); }

typedef struct {
    AFF *table;
    const AFF *window_bases; /* 2^(cw)·G */
    int c, nwin;
    const u64 *scalars;
    size_t m;
    u64 *out;
    size_t next;
    int failed;
} PFX(fixed_ctx);

static void PFX(fixed_table_task)(void *p, int tid, int nthreads)
{
    PFX(fixed_ctx) *f = (PFX(fixed_ctx) *)p;
    (void)tid;
    (void)nthreads;
    size_t nb = (size_t)1 << (f->c - 1);
    XYZZ *tmp = malloc(nb * sizeof(XYZZ));
    FE *scratch = malloc(2 * nb * sizeof(FE));
    if (!tmp || !scratch) {
        __atomic_store_n(&f->failed, 1, __ATOMIC_RELAXED);
        free(tmp);
        free(scratch);
        return;
    }
    for (;;) {
        size_t w = pool_next_task(&f->next);
        if (w >= (size_t)f->nwin)
            break;
        const AFF *g = &f->window_bases[w];
        XYZZ acc;
        PFX(xyzz_from_aff)(&acc, g);
        tmp[0] = acc;
        for (size_t d = 1; d < nb; d++) {
            PFX(xyzz_madd)(&acc, g, 0);
            tmp[d] = acc;
        }
        PFX(xyzz_batch_to_aff)(f->table + w * nb, tmp, nb, scratch);
    }
    free(tmp);
    free(scratch);
}

/* base: standard-form affine (2·F_LIMBS limbs); table: fixed_table_len(c)
 * points, Montgomery form. Returns −1 when out of memory. */
int PFX(fixed_table)(const u64 *base, int c, u64 *table, int nthreads)
{
    PFX(fixed_ctx) f;
    memset(&f, 0, sizeof f);
    f.c = c;
    f.nwin = msm_num_windows(c);
    f.table = (AFF *)table;
    AFF *wb = malloc((size_t)f.nwin * sizeof(AFF));
    XYZZ *wbx = malloc((size_t)f.nwin * sizeof(XYZZ));
    FE *scratch = malloc(2 * (size_t)f.nwin * sizeof(FE));
    int ok = wb && wbx && scratch;
    if (ok) {
        AFF g;
        PFX(prepare)(base, (u64 *)&g, 1); /* module.c checked it is canonical */
        PFX(xyzz_from_aff)(&wbx[0], &g);
        for (int w = 1; w < f.nwin; w++) {
            wbx[w] = wbx[w - 1];
            for (int i = 0; i < c; i++)
                PFX(xyzz_dbl)(&wbx[w], &wbx[w]);
        }
        PFX(xyzz_batch_to_aff)(wb, wbx, (size_t)f.nwin, scratch);
        f.window_bases = wb;
        pool_run(nthreads < f.nwin ? nthreads : f.nwin, PFX(fixed_table_task), &f);
        ok = !f.failed;
    }
    free(wb);
    free(wbx);
    free(scratch);
    return ok ? 0 : -1;
}

static void PFX(fixed_mul_task)(void *p, int tid, int nthreads)
{
    PFX(fixed_ctx) *f = (PFX(fixed_ctx) *)p;
    (void)tid;
    (void)nthreads;
    size_t nb = (size_t)1 << (f->c - 1);
    XYZZ tmp[FIXED_CHUNK];
    AFF res[FIXED_CHUNK];
    FE scratch[2 * FIXED_CHUNK];
    for (;;) {
        size_t lo = pool_next_task(&f->next) * FIXED_CHUNK;
        if (lo >= f->m)
            return;
        size_t len = f->m - lo < FIXED_CHUNK ? f->m - lo : FIXED_CHUNK;
        for (size_t i = 0; i < len; i++) {
            const u64 *k = f->scalars + 4 * (lo + i);
            PFX(xyzz_set_inf)(&tmp[i]);
            for (int w = 0; w < f->nwin; w++) {
                int d = msm_digit(k, w, f->c);
                if (d > 0)
                    PFX(xyzz_madd)(&tmp[i], &f->table[(size_t)w * nb + (size_t)(d - 1)], 0);
                else if (d < 0)
                    PFX(xyzz_madd)(&tmp[i], &f->table[(size_t)w * nb + (size_t)(-d - 1)], 1);
            }
        }
        PFX(xyzz_batch_to_aff)(res, tmp, len, scratch);
        for (size_t i = 0; i < len; i++)
            PFX(aff_to_std)(f->out + (lo + i) * 2 * F_LIMBS, &res[i]);
    }
}

/* out[i] = k_i·G (standard-form affine) for canonical scalars k_i. */
void PFX(fixed_mul)(const u64 *table, int c, const u64 *scalars, size_t m, u64 *out,
                    int nthreads)
{
    PFX(fixed_ctx) f;
    memset(&f, 0, sizeof f);
    f.table = (AFF *)table;
    f.c = c;
    f.nwin = msm_num_windows(c);
    f.scalars = scalars;
    f.m = m;
    f.out = out;
    size_t chunks = (m + FIXED_CHUNK - 1) / FIXED_CHUNK;
    pool_run((size_t)nthreads < chunks ? nthreads : (chunks ? (int)chunks : 1),
             PFX(fixed_mul_task), &f);
}
