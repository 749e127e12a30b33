/* Scalar digits and the window size of Pippenger's method (shared by G1/G2
 * and by the fixed-base tables). */
#ifndef CUZK_MSM_PLAN_H
#define CUZK_MSM_PLAN_H

#include "mont.h"

#define MSM_MAX_WINDOW 20

/* Windows of c bits covering a 255-bit scalar with one bit to spare, which
 * the signed digits below need for their final carry. */
static inline int msm_num_windows(int c) { return 255 / c + 1; }

/* Signed digit w of k in base 2^c, in [−2^(c−1), 2^(c−1)]:
 *   d_w = (bits cw .. cw+c−1 of k) + bit(cw−1) − 2^c·bit(cw+c−1).
 * Summed over w with weights 2^(cw) the borrowed bits telescope away, so
 * Σ d_w·2^(cw) = k; each digit reads only its own c + 1 bits, so windows are
 * independent (no carry chain) and can be processed by different threads. */
static inline int msm_digit(const u64 k[4], int w, int c)
{
    int s = w * c - 1;
    u64 bits;
    if (s < 0) {
        bits = k[0] << 1;
    } else {
        int limb = s >> 6, off = s & 63;
        bits = limb < 4 ? k[limb] >> off : 0;
        if (off && limb + 1 < 4)
            bits |= k[limb + 1] << (64 - off);
    }
    bits &= ((u64)1 << (c + 1)) - 1;
    int raw = (int)(bits >> 1);
    int top = (raw >> (c - 1)) & 1;
    return raw + (int)(bits & 1) - (top << c);
}

/* The window size minimising the work of a thread, in field multiplications:
 * each round of T windows costs, per window, n bucket additions (about 7
 * when batched affine, from affine_from bits on, else 10) and two XYZZ
 * additions (about 24) per bucket to sum the 2^(c−1) buckets. */
static inline int msm_window_bits(size_t n, int nthreads, int affine_from)
{
    int best = 1;
    double best_cost = 0;
    for (int c = 1; c <= MSM_MAX_WINDOW; c++) {
        int nwin = msm_num_windows(c);
        int rounds = (nwin + nthreads - 1) / nthreads;
        double per_point = c >= affine_from ? 7.0 : 10.0;
        double cost = (double)rounds * ((double)n * per_point + 12.0 * (double)((size_t)1 << c));
        if (c == 1 || cost < best_cost) {
            best = c;
            best_cost = cost;
        }
    }
    return best;
}

INLINE int scalar_is_zero(const u64 k[4]) { return (k[0] | k[1] | k[2] | k[3]) == 0; }
INLINE int scalar_is_one(const u64 k[4]) { return k[0] == 1 && (k[1] | k[2] | k[3]) == 0; }

#endif
