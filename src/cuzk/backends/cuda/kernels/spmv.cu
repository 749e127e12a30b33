// Sparse matrix times vector over Fr, CSR: out[r] = sum_j coef_j * w[col_j].
//
// Coefficients are stored once per distinct value in a dictionary (Montgomery
// form) and referenced by 16- or 32-bit codes, or stored in full when a
// dictionary would not pay (mode SPMV_RAW). R1CS matrices have few distinct
// coefficients (1, -1, powers of two, a few constants), so the codes cut the
// bytes per entry from 36 to 6. Entries whose code is `one_code` skip the
// product. Short rows take one thread each; rows longer than `long_threshold`
// are left to spmv_long_kernel, one warp per row.
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
        const fr_t x = fr_reduce_full(fr_load(w, cols[j]));
        if (mode == SPMV_RAW) {
            acc = fr_add(acc, fr_mul(x, fr_load(coeffs, j)));
            return;
        }
        const uint32_t code = mode == SPMV_CODE16 ? (uint32_t)((const unsigned short*)codes)[j]
                                                  : ((const uint32_t*)codes)[j];
        acc = fr_add(acc, code == one_code ? x : fr_mul(x, fr_load(dict, code)));
    }
};

extern "C" __global__ void spmv_rows_kernel(uint4* out, const int64_t* row_ptr, const uint32_t* cols,
                                            const uint4* coeffs, const void* codes,
                                            const uint4* dict, const uint4* w, uint64_t nrows,
                                            uint32_t mode, uint32_t one_code,
                                            uint32_t long_threshold) {
    const spmv_matrix m{row_ptr, cols, coeffs, codes, dict, mode, one_code};
    GRID_STRIDE(r, nrows) {
        const int64_t s = row_ptr[r], e = row_ptr[r + 1];
        if (e - s > (int64_t)long_threshold) continue;
        fr_t acc = fr_zero();
        for (int64_t j = s; j < e; j++) m.accumulate(acc, (uint64_t)j, w);
        fr_store(out, r, acc);
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
