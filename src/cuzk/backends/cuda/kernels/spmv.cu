// Sparse matrix times vector over Fr, CSR: out[r] = sum_j coef_j * w[col_j].
//
// Coefficients are stored once per distinct value in a dictionary (Montgomery
// form) and referenced by 16- or 32-bit codes, or stored in full when a
// dictionary would not pay (mode SPMV_RAW). R1CS matrices have few distinct
// coefficients (1, -1, powers of two, a few constants), so the codes cut the
// bytes per entry from 36 to 6. Entries whose code is `one_code` skip the
// product.
//
// spmv_warp_kernel: a warp takes 32 consecutive rows and walks their entries
// (one contiguous range) 32 at a time: lane k computes the product of entry
// base + k (independent, coalesced loads), parks it in shared memory, and
// then each lane adds up the parked products of its own row. Rows longer than
// `long_threshold` are skipped there and done by spmv_long_kernel, one warp
// per row.
//
// w need not be canonical: the coefficient (canonical) is the multiplier's
// full operand, which bounds the Montgomery product for any 256-bit w.
#include "fr.cuh"

#define SPMV_RAW 0u
#define SPMV_CODE16 1u
#define SPMV_CODE32 2u
#define SPMV_NO_ONE 0xffffffffu

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (uint64_t)gridDim.x * blockDim.x)

struct spmv_matrix {
    const int64_t* row_ptr;
    const uint32_t* cols;
    const uint4* coeffs;  // SPMV_RAW: one Montgomery-form coefficient per entry
    const void* codes;    // SPMV_CODE16 / SPMV_CODE32: dictionary index per entry
    const uint4* dict;
    uint32_t mode, one_code;

    // coef * w[col] accumulated into acc.
    CUZK_HD void accumulate(fr_t& acc, uint64_t j, const uint4* w) const {
        const fr_t x = fr_load(w, cols[j]);
        if (mode == SPMV_RAW) {
            acc = fr_add(acc, fr_mul(fr_load(coeffs, j), x));
            return;
        }
        const uint32_t code = mode == SPMV_CODE16 ? (uint32_t)((const unsigned short*)codes)[j]
                                                  : ((const uint32_t*)codes)[j];
        acc = fr_add(acc, code == one_code ? fr_reduce_full(x) : fr_mul(fr_load(dict, code), x));
    }
};

#define SPMV_WARPS 8  // warps per block of spmv_warp_kernel

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

extern "C" __global__ void __launch_bounds__(256) spmv_warp_kernel(
    uint4* out, const int64_t* row_ptr, const uint32_t* cols, const uint4* coeffs,
    const void* codes, const uint4* dict, const uint4* w, uint64_t nrows, uint32_t mode,
    uint32_t one_code, uint32_t long_threshold) {
    __shared__ uint4 parked[SPMV_WARPS][2][32];
    const spmv_matrix m{row_ptr, cols, coeffs, codes, dict, mode, one_code};
    const uint32_t lane = threadIdx.x & 31u, wib = threadIdx.x >> 5;
    const uint64_t warp = (uint64_t)blockIdx.x * SPMV_WARPS + wib;
    const uint64_t nwarps = (uint64_t)gridDim.x * SPMV_WARPS;
    uint4* lo = parked[wib][0];
    uint4* hi = parked[wib][1];
    for (uint64_t r0 = warp * 32; r0 < nrows; r0 += nwarps * 32) {
        const uint64_t r = r0 + lane;
        const bool valid = r < nrows;
        const int64_t s = valid ? row_ptr[r] : 0, e = valid ? row_ptr[r + 1] : 0;
        const bool is_long = valid && e - s > (int64_t)long_threshold;
        const uint32_t long_mask = __ballot_sync(0xffffffffu, is_long);
        const uint32_t last = (uint32_t)(nrows - r0 < 32 ? nrows - r0 - 1 : 31);
        const int64_t first = __shfl_sync(0xffffffffu, s, 0);
        const int64_t end = __shfl_sync(0xffffffffu, e, last);
        const bool mine = valid && !is_long;
        fr_t acc = fr_zero();
        for (int64_t base = spmv_skip_long(first, long_mask, s, e); base < end;
             base = spmv_skip_long(base + 32, long_mask, s, e)) {
            const int64_t j = base + lane;
            fr_t p = fr_zero();
            if (j < end) {
                m.accumulate(p, (uint64_t)j, w);
            }
            lo[lane] = make_uint4(p.w[0], p.w[1], p.w[2], p.w[3]);
            hi[lane] = make_uint4(p.w[4], p.w[5], p.w[6], p.w[7]);
            __syncwarp();
            if (mine) {
                const int64_t a = s > base ? s : base, b = e < base + 32 ? e : base + 32;
                for (int64_t k = a; k < b; k++) {
                    const uint4 x = lo[k - base], y = hi[k - base];
                    acc = fr_add(acc, fr_make(x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w));
                }
            }
            __syncwarp();
        }
        if (mine) fr_store(out, r, acc);
    }
}

extern "C" __global__ void spmv_long_kernel(uint4* out, const int64_t* row_ptr, const uint32_t* cols,
                                            const uint4* coeffs, const void* codes,
                                            const uint4* dict, const uint4* w,
                                            const int64_t* long_rows, uint64_t nlong, uint32_t mode,
                                            uint32_t one_code) {
    const spmv_matrix m{row_ptr, cols, coeffs, codes, dict, mode, one_code};
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const uint64_t nwarps = ((uint64_t)gridDim.x * blockDim.x) >> 5;
    for (uint64_t li = warp; li < nlong; li += nwarps) {
        const int64_t r = long_rows[li];
        const int64_t s = row_ptr[r], e = row_ptr[r + 1];
        fr_t acc = fr_zero();
        for (int64_t j = s + lane; j < e; j += 32) m.accumulate(acc, (uint64_t)j, w);
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
