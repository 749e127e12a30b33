/* Multi-scalar multiplication Σ k_i·P_i over prepared (Montgomery affine)
 * bases, instantiated for G1 and G2 after ec_impl.h.
 *
 * Scalars 0 are skipped and the bases of scalars 1 are summed directly (the
 * bit-valued part of a witness). The rest go through Pippenger's bucket
 * method with signed digits (msm_plan.h): per window, each point is added to
 * or subtracted from one of 2^(c−1) buckets, the buckets are summed with
 * weights by a running sum, and the windows are combined by doublings.
 * Windows and chunks of the ones are tasks taken from a shared counter.
 *
 * With enough buckets (c ≥ MSM_AFFINE_MIN_WINDOW) buckets are affine and
 * filled by batched affine additions: up to `batch` additions into distinct
 * buckets share one field inversion (Montgomery's trick), so each costs about
 * 6 multiplications instead of the 10 of an XYZZ mixed addition. A point
 * whose bucket already waits in the current batch is deferred to the next
 * one; a point whose x equals its bucket's (a doubling or a cancellation),
 * or that finds the deferral queue full, goes into the bucket's XYZZ side
 * sum, which handles every case exactly. With few buckets every point takes
 * the side sums, i.e. plain XYZZ buckets.
 */

#define MSM_ONES_CHUNK 2048
#define MSM_BATCH 1024
#define MSM_AFFINE_MIN_WINDOW 10

/* One thread's buckets and batch. */
typedef struct {
    AFF *bucket;       /* 2^(c−1) affine buckets */
    uint8_t *has;      /* bucket[b] holds a point */
    XYZZ *side;        /* 2^(c−1) XYZZ side sums */
    uint8_t *has_side; /* side[b] is in use */
    uint32_t *stamp;   /* bucket b waits in the batch numbered stamp[b] */
    uint32_t batch_id;
    size_t batch;      /* additions per inversion: at most half the buckets */
    size_t pending, ndeferred;
    AFF *pend_dst[MSM_BATCH];
    AFF pend_point[MSM_BATCH];
    FE den[MSM_BATCH], prefix[MSM_BATCH];
    uint32_t def_bucket[MSM_BATCH / 2], tmp_bucket[MSM_BATCH / 2];
    AFF def_point[MSM_BATCH / 2], tmp_point[MSM_BATCH / 2];
} PFX(msm_ws);

typedef struct {
    const AFF *bases;
    const u64 *scalars;
    const size_t *full;
    size_t nfull;
    const size_t *ones;
    size_t nones;
    int c, nwin;
    size_t nwin_tasks, nones_tasks;
    XYZZ *window_sums; /* nwin */
    XYZZ *ones_sums;   /* nones_tasks */
    PFX(msm_ws) *ws;   /* one per thread */
    size_t next;
} PFX(msm_ctx);

static void PFX(ws_free)(PFX(msm_ws) *ws)
{
    free(ws->bucket);
    free(ws->has);
    free(ws->side);
    free(ws->has_side);
    free(ws->stamp);
}

static int PFX(ws_alloc)(PFX(msm_ws) *ws, size_t nb)
{
    memset(ws, 0, sizeof *ws);
    ws->batch = nb / 2 < MSM_BATCH ? nb / 2 : MSM_BATCH;
    ws->bucket = malloc(nb * sizeof(AFF));
    ws->has = malloc(nb);
    ws->side = malloc(nb * sizeof(XYZZ));
    ws->has_side = malloc(nb);
    ws->stamp = calloc(nb, sizeof(uint32_t));
    if (!ws->bucket || !ws->has || !ws->side || !ws->has_side || !ws->stamp) {
        PFX(ws_free)(ws);
        return 0;
    }
    return 1;
}

INLINE void PFX(side_add)(PFX(msm_ws) *ws, uint32_t b, const AFF *q)
{
    if (ws->has_side[b]) {
        PFX(xyzz_madd)(&ws->side[b], q, 0);
    } else {
        PFX(xyzz_from_aff)(&ws->side[b], q);
        ws->has_side[b] = 1;
    }
}

/* bucket[b] += q, now or in a batch (never fills the batch past `batch`:
 * callers flush when it is full). */
INLINE void PFX(bucket_add)(PFX(msm_ws) *ws, uint32_t b, const AFF *q)
{
    if (ws->stamp[b] == ws->batch_id) {
        if (ws->ndeferred < ws->batch / 2) {
            ws->def_bucket[ws->ndeferred] = b;
            ws->def_point[ws->ndeferred++] = *q;
        } else {
            PFX(side_add)(ws, b, q);
        }
    } else if (!ws->has[b]) {
        ws->bucket[b] = *q;
        ws->has[b] = 1;
    } else if (limbs_eq((const u64 *)&q->x, (const u64 *)&ws->bucket[b].x, F_LIMBS)) {
        PFX(side_add)(ws, b, q); /* doubling or cancellation */
    } else {
        size_t k = ws->pending++;
        ws->pend_dst[k] = &ws->bucket[b];
        ws->pend_point[k] = *q;
        F_SUB(&ws->den[k], &q->x, &ws->bucket[b].x);
        ws->stamp[b] = ws->batch_id;
    }
}

/* Apply the pending additions with one inversion, then retry the deferred
 * points in a fresh batch (at most batch/2 of them: it cannot fill up). */
static void PFX(flush_batch)(PFX(msm_ws) *ws)
{
    PFX(batch_add_affine)(ws->pend_dst, ws->pend_point, ws->den, ws->prefix, ws->pending);
    ws->pending = 0;
    ws->batch_id++;
    size_t nd = ws->ndeferred;
    memcpy(ws->tmp_bucket, ws->def_bucket, nd * sizeof(uint32_t));
    memcpy(ws->tmp_point, ws->def_point, nd * sizeof(AFF));
    ws->ndeferred = 0;
    for (size_t i = 0; i < nd; i++)
        PFX(bucket_add)(ws, ws->tmp_bucket[i], &ws->tmp_point[i]);
}

static void PFX(msm_window)(PFX(msm_ctx) *m, int w, PFX(msm_ws) *ws)
{
    size_t nb = (size_t)1 << (m->c - 1);
    int affine = m->c >= MSM_AFFINE_MIN_WINDOW;
    memset(ws->has, 0, nb);
    memset(ws->has_side, 0, nb);
    ws->pending = ws->ndeferred = 0;
    ws->batch_id++;
    for (size_t i = 0; i < m->nfull; i++) {
        size_t idx = m->full[i];
        int d = msm_digit(m->scalars + 4 * idx, w, m->c);
        if (!d)
            continue;
        uint32_t b = (uint32_t)(d > 0 ? d - 1 : -d - 1);
        AFF q = m->bases[idx];
        if (d < 0)
            F_NEG(&q.y, &q.y);
        if (!affine) {
            PFX(side_add)(ws, b, &q);
            continue;
        }
        PFX(bucket_add)(ws, b, &q);
        if (ws->pending == ws->batch)
            PFX(flush_batch)(ws);
    }
    /* Drain: a nearly empty batch means the deferred points pile into few
     * buckets; batching them would cost an inversion each, so they go to
     * the side sums. */
    while (ws->pending) {
        if (ws->pending < ws->batch / 8) {
            for (size_t i = 0; i < ws->ndeferred; i++)
                PFX(side_add)(ws, ws->def_bucket[i], &ws->def_point[i]);
            ws->ndeferred = 0;
        }
        PFX(flush_batch)(ws);
    }
    /* Σ (b+1)·bucket[b] = Σ_b (running sum of the buckets from the top down). */
    XYZZ run, sum;
    PFX(xyzz_set_inf)(&run);
    PFX(xyzz_set_inf)(&sum);
    for (size_t b = nb; b-- > 0;) {
        if (ws->has_side[b])
            PFX(xyzz_add)(&run, &ws->side[b]);
        if (ws->has[b])
            PFX(xyzz_madd)(&run, &ws->bucket[b], 0);
        PFX(xyzz_add)(&sum, &run);
    }
    m->window_sums[w] = sum;
}

static void PFX(msm_task)(void *p, int tid, int nthreads)
{
    PFX(msm_ctx) *m = (PFX(msm_ctx) *)p;
    (void)nthreads;
    for (;;) {
        size_t t = pool_next_task(&m->next);
        if (t < m->nwin_tasks) {
            PFX(msm_window)(m, (int)t, &m->ws[tid]);
            continue;
        }
        t -= m->nwin_tasks;
        if (t >= m->nones_tasks)
            return;
        size_t lo = t * MSM_ONES_CHUNK;
        size_t hi = lo + MSM_ONES_CHUNK < m->nones ? lo + MSM_ONES_CHUNK : m->nones;
        XYZZ acc;
        PFX(xyzz_set_inf)(&acc);
        for (size_t i = lo; i < hi; i++)
            PFX(xyzz_madd)(&acc, &m->bases[m->ones[i]], 0);
        m->ones_sums[t] = acc;
    }
}

/* out (2·F_LIMBS limbs, standard form, zeros = infinity) = Σ k_i·P_i.
 * Scalars must be canonical (module.c checks). Returns −1 when out of memory. */
int PFX(msm)(const u64 *bases_mont, const u64 *scalars, size_t n, u64 *out, int nthreads)
{
    PFX(msm_ctx) m;
    memset(&m, 0, sizeof m);
    m.bases = (const AFF *)bases_mont;
    m.scalars = scalars;
    size_t *full = malloc((n ? n : 1) * sizeof(size_t));
    size_t *ones = malloc((n ? n : 1) * sizeof(size_t));
    if (!full || !ones) {
        free(full);
        free(ones);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const u64 *k = scalars + 4 * i;
        if (scalar_is_zero(k) || PFX(aff_is_inf)(&m.bases[i]))
            continue;
        if (scalar_is_one(k))
            ones[m.nones++] = i;
        else
            full[m.nfull++] = i;
    }
    m.full = full;
    m.ones = ones;
    if (m.nfull + m.nones < 256)
        nthreads = 1; /* thread start-up would cost more than the work */
    m.c = msm_window_bits(m.nfull, nthreads, MSM_AFFINE_MIN_WINDOW);
    m.nwin = msm_num_windows(m.c);
    m.nwin_tasks = m.nfull ? (size_t)m.nwin : 0;
    m.nones_tasks = (m.nones + MSM_ONES_CHUNK - 1) / MSM_ONES_CHUNK;
    size_t ntasks = m.nwin_tasks + m.nones_tasks;
    if ((size_t)nthreads > ntasks)
        nthreads = ntasks ? (int)ntasks : 1;
    m.window_sums = malloc((size_t)m.nwin * sizeof(XYZZ));
    m.ones_sums = malloc((m.nones_tasks ? m.nones_tasks : 1) * sizeof(XYZZ));
    m.ws = calloc((size_t)nthreads, sizeof(PFX(msm_ws)));
    int ok = m.window_sums && m.ones_sums && m.ws;
    int nws = 0;
    if (ok && m.nwin_tasks) {
        for (; nws < nthreads && ok; nws++)
            ok = PFX(ws_alloc)(&m.ws[nws], (size_t)1 << (m.c - 1));
        if (!ok)
            nws--; /* the failed one freed itself */
    }
    if (ok) {
        pool_run(nthreads, PFX(msm_task), &m);
        XYZZ acc;
        PFX(xyzz_set_inf)(&acc);
        for (int w = m.nwin_tasks ? m.nwin - 1 : -1; w >= 0; w--) {
            for (int i = 0; i < m.c && !PFX(xyzz_is_inf)(&acc); i++)
                PFX(xyzz_dbl)(&acc, &acc);
            PFX(xyzz_add)(&acc, &m.window_sums[w]);
        }
        for (size_t t = 0; t < m.nones_tasks; t++)
            PFX(xyzz_add)(&acc, &m.ones_sums[t]);
        AFF r;
        PFX(xyzz_to_aff)(&r, &acc);
        PFX(aff_to_std)(out, &r);
    }
    for (int t = 0; t < nws; t++)
        PFX(ws_free)(&m.ws[t]);
    free(full);
    free(ones);
    free(m.window_sums);
    free(m.ones_sums);
    free(m.ws);
    return ok ? 0 : -1;
}
