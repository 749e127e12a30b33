/* Multi-scalar multiplication Σ k_i·P_i over prepared (Montgomery affine)
 * bases, instantiated for G1 and G2 after ec_impl.h.
 *
 * Scalars 0 are skipped and the bases of scalars 1 are summed directly (the
 * bit-valued part of a witness). The rest go through Pippenger's bucket
 * method with signed digits (msm_plan.h): per window, each point is added to
 * or subtracted from one of 2^(c−1) buckets, the buckets are summed with
 * weights by a running sum, and the windows are combined by doublings.
 * Windows and chunks of the ones are tasks taken from a shared counter.
 */

#define MSM_ONES_CHUNK 2048

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
    XYZZ *buckets;     /* nthreads × 2^(c−1) */
    size_t next;
} PFX(msm_ctx);

static void PFX(msm_window)(PFX(msm_ctx) *m, int w, XYZZ *bkt)
{
    size_t nb = (size_t)1 << (m->c - 1);
    for (size_t b = 0; b < nb; b++)
        PFX(xyzz_set_inf)(&bkt[b]);
    for (size_t i = 0; i < m->nfull; i++) {
        size_t idx = m->full[i];
        int d = msm_digit(m->scalars + 4 * idx, w, m->c);
        if (d > 0)
            PFX(xyzz_madd)(&bkt[d - 1], &m->bases[idx], 0);
        else if (d < 0)
            PFX(xyzz_madd)(&bkt[-d - 1], &m->bases[idx], 1);
    }
    /* Σ (b+1)·bucket[b] = Σ_b (running sum of the buckets from the top down). */
    XYZZ run, sum;
    PFX(xyzz_set_inf)(&run);
    PFX(xyzz_set_inf)(&sum);
    for (size_t b = nb; b-- > 0;) {
        PFX(xyzz_add)(&run, &bkt[b]);
        PFX(xyzz_add)(&sum, &run);
    }
    m->window_sums[w] = sum;
}

static void PFX(msm_task)(void *p, int tid, int nthreads)
{
    PFX(msm_ctx) *m = (PFX(msm_ctx) *)p;
    (void)nthreads;
    XYZZ *bkt = m->buckets + (size_t)tid * ((size_t)1 << (m->c - 1));
    for (;;) {
        size_t t = pool_next_task(&m->next);
        if (t < m->nwin_tasks) {
            PFX(msm_window)(m, (int)t, bkt);
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
    m.c = msm_window_bits(m.nfull, nthreads);
    m.nwin = msm_num_windows(m.c);
    m.nwin_tasks = m.nfull ? (size_t)m.nwin : 0;
    m.nones_tasks = (m.nones + MSM_ONES_CHUNK - 1) / MSM_ONES_CHUNK;
    size_t ntasks = m.nwin_tasks + m.nones_tasks;
    if ((size_t)nthreads > ntasks)
        nthreads = ntasks ? (int)ntasks : 1;
    m.window_sums = malloc((size_t)m.nwin * sizeof(XYZZ));
    m.ones_sums = malloc((m.nones_tasks ? m.nones_tasks : 1) * sizeof(XYZZ));
    m.buckets = malloc((size_t)nthreads * ((size_t)1 << (m.c - 1)) * sizeof(XYZZ));
    int ok = m.window_sums && m.ones_sums && m.buckets;
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
    free(full);
    free(ones);
    free(m.window_sums);
    free(m.ones_sums);
    free(m.buckets);
    return ok ? 0 : -1;
}
