/* The kernels module.c exposes to Python. All arrays are C-contiguous
 * little-endian u64 limbs: Fr (n, 4) in standard form; points as affine
 * (x, y) coordinates, standard form at the boundary and Montgomery form once
 * prepared; the point at infinity is all zeros.
 *
 * Functions that validate input return −1 when it is fine, else the index
 * of the first bad element (module.c turns that into a ValueError). */
#ifndef CUZK_KERNELS_H
#define CUZK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t u64;

/* arith.c: the MULX/ADX Montgomery product (1) or the portable C one (0);
 * arith_select returns 0 when asked for one this CPU lacks. */
int arith_adx_supported(void);
int arith_select(int adx);
int arith_is_adx(void);

/* ntt.c: 0, or −1 when out of memory */
int fr_ntt(u64 *a, int log_n, int inverse, int coset, int nthreads);
int fr_h_poly(const u64 *a, size_t na, const u64 *b, size_t nb, const u64 *c, size_t nc,
              u64 *out, int log_n, int nthreads);
/* snarkjs's H: A·B − C on the odd coset ζ·⟨ω⟩ (n values); c may be NULL (a∘b). */
int fr_h_odd_coset(const u64 *a, size_t na, const u64 *b, size_t nb, const u64 *c, size_t nc,
                   u64 *out, int log_n, int nthreads);
long long fr_first_noncanonical(const u64 *a, size_t n);
/* Any 256-bit values to their canonical representatives mod r, in place. */
void fr_reduce(u64 *a, size_t n);

/* spmv.c: out = m·w for the CSR matrix m (rows, nnz entries, ncols columns;
 * canonical coefficients and witness). On a bad input, *where is the
 * offending row or entry. */
enum { SPMV_OK = 0, SPMV_BAD_INDPTR, SPMV_BAD_COLUMN, SPMV_NO_MEMORY };
int fr_spmv(const int64_t *indptr, size_t rows, const int64_t *indices, const u64 *coeffs,
            size_t nnz, const u64 *w, size_t ncols, u64 *out, size_t *where, int nthreads);

/* qap.c (the setup's polynomials at τ). fr_lagrange_at: out[j] = L_j(τ) for
 * j < n ≤ 2^log_m; 0, 1 when τ lies in the domain, −1 when n > 2^log_m.
 * fr_rmatvec: out = vᵀ·m (one value per column) and, unless mask is NULL,
 * mask[j] = 1 when column j holds a non-zero coefficient; the SPMV_* codes.
 * fr_powers: out[i] = start·ratio^i. fr_qap_combine: out[j] = (β·a_j + α·b_j
 * + c_j)·scale (out may be c); the first j with out[j] = 0, −1 when none,
 * −2 when out of memory. */
int fr_lagrange_at(const u64 *tau, int log_m, u64 *out, size_t n, int nthreads);
int fr_rmatvec(const int64_t *indptr, size_t rows, const int64_t *indices, const u64 *coeffs,
               size_t nnz, const u64 *v, size_t ncols, u64 *out, uint8_t *mask, size_t *where,
               int nthreads);
void fr_powers(const u64 *start, const u64 *ratio, u64 *out, size_t n, int nthreads);
long long fr_qap_combine(const u64 *a, const u64 *b, const u64 *c, size_t n, const u64 *beta,
                         const u64 *alpha, const u64 *scale, u64 *out, int nthreads);

/* g1.c, g2.c (the same code over Fq and Fq2); int results: 0, or −1 when out of memory */
enum { PREPARE_NOT_CANONICAL = 1, PREPARE_OFF_CURVE = 2 };
long long g1_prepare(const u64 *in, u64 *out, size_t n, int *why);
long long g2_prepare(const u64 *in, u64 *out, size_t n, int *why);
int g1_msm(const u64 *bases, const u64 *scalars, size_t n, u64 *out, int nthreads);
int g2_msm(const u64 *bases, const u64 *scalars, size_t n, u64 *out, int nthreads);
size_t g1_fixed_table_len(int c);
size_t g2_fixed_table_len(int c);
int g1_fixed_table(const u64 *base, int c, u64 *table, int nthreads);
int g2_fixed_table(const u64 *base, int c, u64 *table, int nthreads);
int g1_fixed_mul(const u64 *table, int c, const u64 *scalars, size_t m, u64 *out, int nthreads);
int g2_fixed_mul(const u64 *table, int c, const u64 *scalars, size_t m, u64 *out, int nthreads);

#endif
