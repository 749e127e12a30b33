// Sparse matrix times vector over Fr, CSR: out[r] = sum_j coef_j * w[col_j].
//
// A matrix is held as two CSR parts over the same rows: the entries whose
// coefficient is 1 (only a sum of w values: R1CS rows are mostly these) and
// the others, whose coefficients are stored once per distinct value in a
// dictionary (Montgomery form) and referenced by 16- or 32-bit codes, or in
// full when a dictionary would not pay (mode SPMV_RAW, where every entry is
// in the general part). Splitting keeps the warps below uniform: a product
// is only computed where one is needed.
//
// spmv_warp_kernel: a warp takes 32 consecutive rows and walks each part's
// entries of those rows (one contiguous range per part) 32 at a time: lane k
// computes entry base + k (independent, coalesced loads), parks it in shared
// memory, and each lane adds up the parked values of its own row. Rows longer
// than `long_threshold` (both parts together) are skipped there and done by
// spmv_long_kernel, one warp per row.
//
// w need not be canonical: the coefficient (canonical) is the multiplier's
// full operand, which bounds the Montgomery product for any 256-bit w; entries
// of the ones part reduce their w value.
#include "fr.cuh"

#define SPMV_RAW 0u
#define SPMV_CODE16 1u
#define SPMV_CODE32 2u
#define SPMV_WARPS 8  // warps per block of spmv_warp_kernel
// Entries per lane per step: more independent loads in flight per warp. The
// ones part is all loads and additions, the general part has a product each.
#define SPMV_ONES_PER_LANE 4
#define SPMV_GENERAL_PER_LANE 2
// Blocks per SM the register allocation must allow: 4 caps the warp kernel
// at 64 registers (from 72; 32 bytes of spill) for a third more warps.
#ifndef SPMV_MIN_BLOCKS
#define SPMV_MIN_BLOCKS 4
#endif

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (uint64_t)gridDim.x * blockDim.x)

struct spmv_matrix {
    const int64_t* one_ptr;  // the ones part (null when there is none)
    const uint32_t* one_cols;
    const int64_t* row_ptr;  // the general part
    const uint32_t* cols;
    const uint4* coeffs;  // SPMV_RAW: one Montgomery-form coefficient per entry
    const void* codes;    // SPMV_CODE16 / SPMV_CODE32: dictionary index per entry
    const uint4* dict;
    uint32_t mode;

    // The value entry j of a part contributes.
    template <bool ONES>
    CUZK_HD fr_t entry(uint64_t j, const uint4* w) const {
        if (ONES) return fr_reduce_full(fr_load(w, one_cols[j]));
        const fr_t x = fr_load(w, cols[j]);
        if (mode == SPMV_RAW) return fr_mul(fr_load(coeffs, j), x);
        const uint32_t code = mode == SPMV_CODE16 ? (uint32_t)((const unsigned short*)codes)[j]
                                                  : ((const uint32_t*)codes)[j];
        return fr_mul(fr_load(dict, code), x);
    }
};

// The smallest x' >= x outside every long row's entry range [s_L, e_L) of the
// warp (long lanes in increasing order, so adjacent long rows chain).
__device__ __forceinline__ int64_t spmv_skip_long(int64_t x, uint32_t long_mask, int64_t s,
                                                  int64_t e) {
    while (long_mask) {
        const int L = __ffs(long_mask) - 1;
        long_mask &= long_mask - 1;
        const int64_t sl = __shfl_sync(0xffffffffu, s, L), el = __shfl_sync(0xffffffffu, e, L);
        if (x >= sl && x < el) x = el;
    }
    return x;
}

// One part's entries of the warp's rows, 32 * U at a time, summed into acc.
template <bool ONES, int U>
__device__ __forceinline__ void spmv_walk(const spmv_matrix& m, const uint4* w, int64_t s,
                                          int64_t e, uint32_t last, uint32_t long_mask,
                                          bool mine, uint4* lo, uint4* hi, fr_t& acc) {
    const uint32_t lane = threadIdx.x & 31u;
    const int64_t first = __shfl_sync(0xffffffffu, s, 0);
    const int64_t end = __shfl_sync(0xffffffffu, e, last);
    for (int64_t base = spmv_skip_long(first, long_mask, s, e); base < end;
         base = spmv_skip_long(base + 32 * U, long_mask, s, e)) {
        fr_t p[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = base + 32 * u + lane;
            p[u] = j < end ? m.entry<ONES>((uint64_t)j, w) : fr_zero();
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            lo[32 * u + lane] = make_uint4(p[u].w[0], p[u].w[1], p[u].w[2], p[u].w[3]);
            hi[32 * u + lane] = make_uint4(p[u].w[4], p[u].w[5], p[u].w[6], p[u].w[7]);
        }
        __syncwarp();
        if (mine) {
            const int64_t a = s > base ? s : base, b = e < base + 32 * U ? e : base + 32 * U;
            for (int64_t k = a; k < b; k++) {
                const uint4 x = lo[k - base], y = hi[k - base];
                acc = fr_add(acc, fr_make(x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w));
            }
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(256, SPMV_MIN_BLOCKS) spmv_warp_kernel(
    uint4* out, const int64_t* one_ptr, const uint32_t* one_cols, const int64_t* row_ptr,
    const uint32_t* cols, const uint4* coeffs, const void* codes, const uint4* dict,
    const uint4* w, uint64_t nrows, uint32_t mode, uint32_t long_threshold) {
    __shared__ uint4 parked[SPMV_WARPS][2][32 * SPMV_ONES_PER_LANE];
    const spmv_matrix m{one_ptr, one_cols, row_ptr, cols, coeffs, codes, dict, mode};
    const uint32_t lane = threadIdx.x & 31u, wib = threadIdx.x >> 5;
    const uint64_t warp = (uint64_t)blockIdx.x * SPMV_WARPS + wib;
    const uint64_t nwarps = (uint64_t)gridDim.x * SPMV_WARPS;
    uint4* lo = parked[wib][0];
    uint4* hi = parked[wib][1];
    for (uint64_t r0 = warp * 32; r0 < nrows; r0 += nwarps * 32) {
        const uint64_t r = r0 + lane;
        const bool valid = r < nrows;
        const bool ones = one_ptr != nullptr;
        const int64_t s1 = valid && ones ? one_ptr[r] : 0, e1 = valid && ones ? one_ptr[r + 1] : 0;
        const int64_t s = valid ? row_ptr[r] : 0, e = valid ? row_ptr[r + 1] : 0;
        const bool is_long = valid && (e1 - s1) + (e - s) > (int64_t)long_threshold;
        const uint32_t long_mask = __ballot_sync(0xffffffffu, is_long);
        const uint32_t last = (uint32_t)(nrows - r0 < 32 ? nrows - r0 - 1 : 31);
        const bool mine = valid && !is_long;
        fr_t acc = fr_zero();
        if (ones)
            spmv_walk<true, SPMV_ONES_PER_LANE>(m, w, s1, e1, last, long_mask, mine, lo, hi, acc);
        spmv_walk<false, SPMV_GENERAL_PER_LANE>(m, w, s, e, last, long_mask, mine, lo, hi, acc);
        if (mine) fr_store(out, r, acc);
    }
}

extern "C" __global__ void spmv_long_kernel(uint4* out, const int64_t* one_ptr,
                                            const uint32_t* one_cols, const int64_t* row_ptr,
                                            const uint32_t* cols, const uint4* coeffs,
                                            const void* codes, const uint4* dict, const uint4* w,
                                            const int64_t* long_rows, uint64_t nlong,
                                            uint32_t mode) {
    const spmv_matrix m{one_ptr, one_cols, row_ptr, cols, coeffs, codes, dict, mode};
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const uint64_t nwarps = ((uint64_t)gridDim.x * blockDim.x) >> 5;
    for (uint64_t li = warp; li < nlong; li += nwarps) {
        const int64_t r = long_rows[li];
        fr_t acc = fr_zero();
        if (one_ptr)
            for (int64_t j = one_ptr[r] + lane; j < one_ptr[r + 1]; j += 32)
                acc = fr_add(acc, m.entry<true>((uint64_t)j, w));
        for (int64_t j = row_ptr[r] + lane; j < row_ptr[r + 1]; j += 32)
            acc = fr_add(acc, m.entry<false>((uint64_t)j, w));
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            fr_t other;
#pragma unroll
            for (int k = 0; k < 8; k++) other.w[k] = __shfl_down_sync(0xffffffffu, acc.w[k], off);
            acc = fr_add(acc, other);
        }
        if (lane == 0) fr_store(out, (uint64_t)r, acc);
    }
}
