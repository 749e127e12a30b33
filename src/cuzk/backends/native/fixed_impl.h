/* Fixed-base multiplication k·G for many k (parameter generation),
 * instantiated for G1 and G2 after ec_impl.h.
 *
 * The table holds, for every window w and digit d in 1..2^(c−1), the affine
 * point d·2^(cw)·G; with the signed digits of msm_plan.h a multiple then
 * costs one addition per non-zero digit (negation is free in affine) and no
 * doubling. A chunk of FIXED_CHUNK multiples is computed in lockstep, window
 * by window, with affine accumulators: the additions of one window go to
 * distinct accumulators and share one inversion (batch_add_affine), and the
 * results come out affine. An addition that would be a doubling or a
 * cancellation goes into the accumulator's XYZZ side sum instead.
 */

#define FIXED_CHUNK 1024

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
        int why;
        PFX(prepare)(base, (u64 *)&g, 1, &why); /* module.c checked it */
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

typedef struct {
    AFF acc[FIXED_CHUNK];
    uint8_t has[FIXED_CHUNK], has_side[FIXED_CHUNK];
    XYZZ side[FIXED_CHUNK];
    int digit[FIXED_CHUNK];
    AFF *pend_dst[FIXED_CHUNK];
    AFF pend_point[FIXED_CHUNK];
    FE den[FIXED_CHUNK], prefix[FIXED_CHUNK];
} PFX(fixed_ws);

static void PFX(fixed_chunk)(PFX(fixed_ctx) *f, PFX(fixed_ws) *ws, size_t lo, size_t len)
{
    size_t nb = (size_t)1 << (f->c - 1);
    memset(ws->has, 0, len);
    memset(ws->has_side, 0, len);
    for (int w = 0; w < f->nwin; w++) {
        const AFF *row = f->table + (size_t)w * nb;
        /* Digits first, prefetching their table entries: a large table
         * misses the cache on almost every (random) lookup. */
        for (size_t i = 0; i < len; i++) {
            int d = msm_digit(f->scalars + 4 * (lo + i), w, f->c);
            ws->digit[i] = d;
            if (d) {
                const char *e = (const char *)&row[d > 0 ? d - 1 : -d - 1];
                for (size_t off = 0; off < sizeof(AFF); off += 64)
                    __builtin_prefetch(e + off);
                __builtin_prefetch(e + sizeof(AFF) - 1);
            }
        }
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            int d = ws->digit[i];
            if (!d)
                continue;
            AFF q = row[d > 0 ? d - 1 : -d - 1];
            if (d < 0)
                F_NEG(&q.y, &q.y);
            if (!ws->has[i]) {
                ws->acc[i] = q;
                ws->has[i] = 1;
            } else if (limbs_eq((const u64 *)&q.x, (const u64 *)&ws->acc[i].x, F_LIMBS)) {
                if (ws->has_side[i]) {
                    PFX(xyzz_madd)(&ws->side[i], &q, 0);
                } else {
                    PFX(xyzz_from_aff)(&ws->side[i], &q);
                    ws->has_side[i] = 1;
                }
            } else {
                ws->pend_dst[k] = &ws->acc[i];
                ws->pend_point[k] = q;
                F_SUB(&ws->den[k], &q.x, &ws->acc[i].x);
                k++;
            }
        }
        PFX(batch_add_affine)(ws->pend_dst, ws->pend_point, ws->den, ws->prefix, k);
    }
    for (size_t i = 0; i < len; i++) {
        u64 *o = f->out + (lo + i) * 2 * F_LIMBS;
        if (ws->has_side[i]) { /* rare: one inversion of its own */
            AFF r;
            if (ws->has[i])
                PFX(xyzz_madd)(&ws->side[i], &ws->acc[i], 0);
            PFX(xyzz_to_aff)(&r, &ws->side[i]);
            PFX(aff_to_std)(o, &r);
        } else if (ws->has[i]) {
            PFX(aff_to_std)(o, &ws->acc[i]);
        } else {
            memset(o, 0, 2 * F_LIMBS * sizeof(u64)); /* k = 0 */
        }
    }
}

static void PFX(fixed_mul_task)(void *p, int tid, int nthreads)
{
    PFX(fixed_ctx) *f = (PFX(fixed_ctx) *)p;
    (void)tid;
    (void)nthreads;
    PFX(fixed_ws) *ws = malloc(sizeof *ws);
    if (!ws) {
        __atomic_store_n(&f->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (;;) {
        size_t lo = pool_next_task(&f->next) * FIXED_CHUNK;
        if (lo >= f->m)
            break;
        PFX(fixed_chunk)(f, ws, lo, f->m - lo < FIXED_CHUNK ? f->m - lo : FIXED_CHUNK);
    }
    free(ws);
}

/* out[i] = k_i·G (standard-form affine) for canonical scalars k_i.
 * Returns −1 when out of memory. */
int PFX(fixed_mul)(const u64 *table, int c, const u64 *scalars, size_t m, u64 *out,
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
    return f.failed ? -1 : 0;
}
