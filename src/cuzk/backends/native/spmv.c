/* Sparse matrix × vector over Fr, the a, b, c = A·w, B·w, C·w of a proof.
 *
 * The witness is copied once into Montgomery form so that each entry costs
 * one mont_mul(coefficient (standard), w (Montgomery)) = coefficient·w in
 * standard form. Coefficients ±1, the bulk of an R1CS, skip the product.
 */
#include <stdlib.h>

#include "fr.h"
#include "kernels.h"
#include "pool.h"

#define SPMV_ROWS_PER_TASK 1024

static const u64 FR_MINUS_ONE[4] = {0xffffffff00000000ULL, 0x53bda402fffe5bfeULL,
                                    0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};

typedef struct {
    const int64_t *indptr;
    const int64_t *indices;
    const fr_t *coeffs;
    const fr_t *w;
    fr_t *w_mont;
    size_t rows, ncols;
    fr_t *out;
    size_t next;
} spmv_ctx;

static void to_mont_task(void *p, int tid, int nthreads)
{
    spmv_ctx *c = (spmv_ctx *)p;
    size_t lo, hi;
    pool_split(c->ncols, tid, nthreads, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        fr_to_mont(&c->w_mont[i], &c->w[i]);
}

static void rows_task(void *p, int tid, int nthreads)
{
    spmv_ctx *c = (spmv_ctx *)p;
    (void)tid;
    (void)nthreads;
    for (;;) {
        size_t r0 = pool_next_task(&c->next) * SPMV_ROWS_PER_TASK;
        if (r0 >= c->rows)
            return;
        size_t r1 = r0 + SPMV_ROWS_PER_TASK < c->rows ? r0 + SPMV_ROWS_PER_TASK : c->rows;
        for (size_t r = r0; r < r1; r++) {
            fr_t acc = {{0}};
            for (int64_t e = c->indptr[r]; e < c->indptr[r + 1]; e++) {
                const fr_t *k = &c->coeffs[e];
                size_t col = (size_t)c->indices[e];
                if (limbs_eq(k->v, FR_ONE_STD_LIMBS, 4)) {
                    fr_add(&acc, &acc, &c->w[col]);
                } else if (limbs_eq(k->v, FR_MINUS_ONE, 4)) {
                    fr_sub(&acc, &acc, &c->w[col]);
                } else {
                    fr_t t;
                    fr_mul(&t, k, &c->w_mont[col]);
                    fr_add(&acc, &acc, &t);
                }
            }
            c->out[r] = acc;
        }
    }
}

int fr_spmv(const int64_t *indptr, size_t rows, const int64_t *indices, const u64 *coeffs,
            size_t nnz, const u64 *w, size_t ncols, u64 *out, size_t *where, int nthreads)
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
    spmv_ctx c = {indptr, indices, (const fr_t *)coeffs, (const fr_t *)w, NULL, rows, ncols,
                  (fr_t *)out, 0};
    c.w_mont = malloc((ncols ? ncols : 1) * sizeof(fr_t));
    if (!c.w_mont)
        return SPMV_NO_MEMORY;
    pool_run(ncols >= 4096 ? nthreads : 1, to_mont_task, &c);
    pool_run(rows >= 2 * SPMV_ROWS_PER_TASK ? nthreads : 1, rows_task, &c);
    free(c.w_mont);
    return SPMV_OK;
}
