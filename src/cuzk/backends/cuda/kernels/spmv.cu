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
// spmv_seg_kernel (below, the backend's default) replaces the per-row sums
// of a lane by a segmented reduction over the warp, with sums left unreduced
// until the end of the row.
//
// w need not be canonical: the coefficient (canonical) is the multiplier's
// full operand, which bounds the Montgomery product for any 256-bit w; entries
// of the ones part reduce their w value (warp kernel) or are summed unreduced
// (seg kernel).
#define FR_MUL_FOLDED 1  // the folded product (fr.cuh)
#include "fr.cuh"

#define SPMV_RAW 0u
#define SPMV_CODE16 1u
#define SPMV_CODE32 2u
// Entries per lane per step: more independent loads in flight per warp. The
// ones part is all loads and additions, the general part has a product each.
#define SPMV_ONES_PER_LANE 4
#define SPMV_GENERAL_PER_LANE 2
// SPMV_WARPS and SPMV_MIN_BLOCKS (the warp kernel) and the SPMV_SEG_* values of the
// segmented kernel come from cuzk.backends.cuda.tuning.SPMV
// (docs/device-notes/ntt.md#tuning-table).
#if !defined(SPMV_WARPS) || !defined(SPMV_MIN_BLOCKS) || !defined(SPMV_SEG_ROWS) || !defined(SPMV_SEG_WARPS) || \
    !defined(SPMV_SEG_ONES_U) || !defined(SPMV_SEG_GENERAL_U) || !defined(SPMV_SEG_MIN_BLOCKS)
#error "spmv.cu: a tuning define is missing (cuzk.backends.cuda.tuning.SPMV emits them)"
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

extern "C" __global__ void __launch_bounds__(32 * SPMV_WARPS, SPMV_MIN_BLOCKS) spmv_warp_kernel(
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

// ===========================================================================
// spmv_seg_kernel: one warp per group of SPMV_SEG_ROWS consecutive rows, a
// segmented reduction over each part's entries of the group, sums kept
// unreduced until the end of the row.
//
// Per part, the group's entries [S, T) are one contiguous range, walked
// 32 * U at a time: lane k takes the U consecutive entries base + U*k ...
// (one 16-byte load of columns for U = 4), with their row ids from a
// per-entry byte array (row mod 256, built at upload by spmv_rowid_kernel;
// it replaces reading 16 bytes of row pointers per row). A lane sums runs of
// equal rows in a 9-word accumulator (no modular reduction: a row of fewer
// than 2^30 values < 2^256 stays below 2^286) and adds every run that ends in
// the lane into the row's slot in shared memory; the run a lane inherits
// from the lanes before it gets their sum from a segmented inclusive scan of
// the lanes' open runs (five shuffle rounds), so no lane waits on another's
// row. Both parts add into the same slots; at the end of the group lane k
// reduces rows k, k + 32, ... mod p once and stores them (coalesced).
//
// No row is special: a long row is a run over many lanes and steps (the
// lane at the end of a step adds its open run into the slot).

#define SPMV_FULL 0xffffffffu
#define SPMV_ACC_WORDS 9

static_assert(SPMV_SEG_ROWS % 32 == 0 && SPMV_SEG_ROWS <= 256, "group of 32..256 rows");

// An unreduced sum: 9 little-endian words.
struct fr_acc {
    uint32_t w[SPMV_ACC_WORDS];
};

CUZK_HD fr_acc fr_acc_of(const fr_t& v) {
    fr_acc a;
#pragma unroll
    for (int k = 0; k < 8; k++) a.w[k] = v.w[k];
    a.w[8] = 0;
    return a;
}

CUZK_HD void fr_acc_add(fr_acc& a, const fr_t& v) {
    cc_chain c;
    a.w[0] = c.add_cc(a.w[0], v.w[0]);
#pragma unroll
    for (int k = 1; k < 8; k++) a.w[k] = c.addc_cc(a.w[k], v.w[k]);
    a.w[8] = c.addc(a.w[8], 0);
}

// a += b & mask (mask all ones or zero).
CUZK_HD void fr_acc_add_masked(fr_acc& a, const fr_acc& b, uint32_t mask) {
    cc_chain c;
    a.w[0] = c.add_cc(a.w[0], b.w[0] & mask);
#pragma unroll
    for (int k = 1; k < 8; k++) a.w[k] = c.addc_cc(a.w[k], b.w[k] & mask);
    a.w[8] = c.addc(a.w[8], b.w[8] & mask);
}

// floor(2^288 / p): with t the top 64 bits of x, floor(t * K / 2^64) is
// floor(x / p), or one or two less (K and t are both truncations).
#define FR_ACC_K 0x2355094edull

// x mod p for x < 2^286.
CUZK_HD fr_t fr_acc_reduce(const fr_acc& x) {
    const uint64_t top = ((uint64_t)x.w[8] << 32) | x.w[7];
    const uint32_t q = (uint32_t)__umul64hi(top, FR_ACC_K);  // < 2^32 since x < 2^286
    // q * p: low halves at word i, high halves at word i + 1.
    uint32_t qp[9];
    {
        cc_chain c;
        qp[0] = q * FR_P0;
        qp[1] = c.add_cc(q * FR_P1, __umulhi(q, FR_P0));
#pragma unroll
        for (int i = 2; i < 8; i++) qp[i] = c.addc_cc(q * fr_p(i), __umulhi(q, fr_p(i - 1)));
        qp[8] = c.addc(__umulhi(q, FR_P7), 0);
    }
    uint32_t r[9];  // x - q*p in [0, 3p)
    {
        cc_chain c;
        r[0] = c.sub_cc(x.w[0], qp[0]);
#pragma unroll
        for (int i = 1; i < 8; i++) r[i] = c.subc_cc(x.w[i], qp[i]);
        r[8] = c.subc(x.w[8], qp[8]);
    }
    // r - p when r >= p (9 words), then r < 2p < 2^256.
    uint32_t t[8];
    cc_chain c;
    t[0] = c.sub_cc(r[0], FR_P0);
#pragma unroll
    for (int i = 1; i < 8; i++) t[i] = c.subc_cc(r[i], fr_p(i));
    const uint32_t borrow = c.subc(r[8], 0);  // 0xffffffff when r < p
    fr_t s;
#pragma unroll
    for (int i = 0; i < 8; i++) s.w[i] = borrow ? r[i] : t[i];
    return fr_cond_sub_p(s);
}

// The slot of a row: 9 words at stride 9 (odd: lanes on distinct rows mod 32
// hit distinct banks).
__device__ __forceinline__ void spmv_slot_add(uint32_t* slots, int row, const fr_acc& a) {
    uint32_t* s = slots + row * SPMV_ACC_WORDS;
    cc_chain c;
    s[0] = c.add_cc(s[0], a.w[0]);
#pragma unroll
    for (int k = 1; k < 8; k++) s[k] = c.addc_cc(s[k], a.w[k]);
    s[8] = c.addc(s[8], a.w[8]);
}

// Column, code and row (within the group; -1 before S, SPMV_SEG_ROWS from T
// on: never stored) of entries j0 .. j0 + U - 1.
template <bool ONES, int U>
__device__ __forceinline__ void spmv_seg_indices(const spmv_matrix& m, const uint32_t* cols,
                                                 const unsigned char* rid, int64_t j0, int64_t S,
                                                 int64_t T, uint32_t rbase, uint32_t* col,
                                                 uint32_t* code, int* row) {
    static_assert(U == 2 || U == 4 || U == 8, "2, 4 or 8 entries per lane");
    uint32_t rb[U];
    if (j0 + U <= T) {
        // Whole and aligned (j0 is a multiple of U): vector loads.
        if constexpr (U == 2) {
            const uint2 c2 = *(const uint2*)(cols + j0);
            col[0] = c2.x;
            col[1] = c2.y;
            const uint32_t b = *(const unsigned short*)(rid + j0);
            rb[0] = b & 0xffu;
            rb[1] = b >> 8;
        } else {
#pragma unroll
            for (int h = 0; h < U; h += 4) {
                const uint4 c4 = *(const uint4*)(cols + j0 + h);
                col[h] = c4.x;
                col[h + 1] = c4.y;
                col[h + 2] = c4.z;
                col[h + 3] = c4.w;
            }
#pragma unroll
            for (int h = 0; h < U; h += 4) {
                const uint32_t b = *(const uint32_t*)(rid + j0 + h);
#pragma unroll
                for (int u = 0; u < 4; u++) rb[h + u] = (b >> (8 * u)) & 0xffu;
            }
        }
        if (!ONES && m.mode == SPMV_CODE16) {
#pragma unroll
            for (int h = 0; h < U; h += 2) {
                const uint32_t b = *(const uint32_t*)((const unsigned short*)m.codes + j0 + h);
                code[h] = b & 0xffffu;
                code[h + 1] = b >> 16;
            }
        } else if (!ONES && m.mode == SPMV_CODE32) {
#pragma unroll
            for (int h = 0; h < U; h += 2) {
                const uint2 b = *(const uint2*)((const uint32_t*)m.codes + j0 + h);
                code[h] = b.x;
                code[h + 1] = b.y;
            }
        }
    } else {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t j = j0 + u;
            col[u] = j < T ? cols[j] : 0u;
            rb[u] = j < T ? rid[j] : 0u;
            if (!ONES && m.mode == SPMV_CODE16)
                code[u] = j < T ? ((const unsigned short*)m.codes)[j] : 0u;
            else if (!ONES && m.mode == SPMV_CODE32)
                code[u] = j < T ? ((const uint32_t*)m.codes)[j] : 0u;
        }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t j = j0 + u;
        row[u] = j < S ? -1 : j >= T ? SPMV_SEG_ROWS : (int)((rb[u] - rbase) & 0xffu);
    }
}

// One part's entries [S, T) of a group, added into the rows' slots.
template <bool ONES, int U>
__device__ __forceinline__ void spmv_seg_walk(const spmv_matrix& m, const uint32_t* cols,
                                              const unsigned char* rid, const uint4* w, int64_t S,
                                              int64_t T, uint32_t rbase, uint32_t* slots,
                                              uint32_t lane) {
    for (int64_t base = S & ~(int64_t)(U - 1); base < T; base += 32 * U) {
        const int64_t j0 = base + (int64_t)U * lane;
        uint32_t col[U], code[U];
        int row[U];
        spmv_seg_indices<ONES, U>(m, cols, rid, j0, S, T, rbase, col, code, row);
        // Every w read of the step first (invalid entries read w[0]), then
        // the products: the reads are in flight together.
        fr_t v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const bool valid = row[u] >= 0 && row[u] < SPMV_SEG_ROWS;
            v[u] = fr_load(w, valid ? col[u] : 0u);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const bool valid = row[u] >= 0 && row[u] < SPMV_SEG_ROWS;
            if constexpr (ONES) {
                if (!valid) v[u] = fr_zero();
            } else if (valid) {
                const fr_t c = m.mode == SPMV_RAW ? fr_load(m.coeffs, (uint64_t)(j0 + u))
                                                  : fr_load(m.dict, code[u]);
                // The coefficient (canonical) is the full operand: w may be any
                // 256-bit value, the product is still canonical.
                v[u] = fr_mul(c, v[u]);
            } else {
                v[u] = fr_zero();
            }
        }
        // Runs of equal rows inside the lane. A run that ends here is complete
        // unless it began in an earlier lane (the head, completed after the
        // scan); the last lane ends its last run in any case (the rest of the
        // row, in the next step, adds into the same slot).
        const int prev = __shfl_up_sync(SPMV_FULL, row[U - 1], 1);
        const int next0 = __shfl_down_sync(SPMV_FULL, row[0], 1);
        const bool cont = lane > 0 && row[0] == prev && row[0] >= 0 && row[0] < SPMV_SEG_ROWS;
        fr_acc run = fr_acc_of(v[0]), head = fr_acc_of(fr_zero());
        bool in_head = true, have_head = false;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (u > 0) {
                if (row[u] != row[u - 1]) {
                    run = fr_acc_of(v[u]);
                    in_head = false;
                } else {
                    fr_acc_add(run, v[u]);
                }
            }
            const int nxt = u + 1 < U ? row[u + 1] : (lane == 31 ? -2 : next0);
            if (row[u] != nxt && row[u] >= 0 && row[u] < SPMV_SEG_ROWS) {
                if (in_head && cont) {
                    head = run;
                    have_head = true;
                } else {
                    spmv_slot_add(slots, row[u], run);
                }
            }
        }
        // Segmented inclusive scan over lanes of the open runs; a lane whose
        // last run began inside it starts a segment.
        uint32_t F = __ballot_sync(SPMV_FULL, !cont || !in_head);
        fr_acc I = run;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            fr_acc o;
#pragma unroll
            for (int k = 0; k < SPMV_ACC_WORDS; k++) o.w[k] = __shfl_up_sync(SPMV_FULL, I.w[k], d);
            const bool take = lane >= (uint32_t)d && !((F >> lane) & 1u);
            fr_acc_add_masked(I, o, take ? 0xffffffffu : 0u);
            F |= F << d;
        }
        fr_acc X;
#pragma unroll
        for (int k = 0; k < SPMV_ACC_WORDS; k++) X.w[k] = __shfl_up_sync(SPMV_FULL, I.w[k], 1);
        if (have_head) {
            fr_acc_add_masked(head, X, 0xffffffffu);
            spmv_slot_add(slots, row[0], head);
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(32 * SPMV_SEG_WARPS, SPMV_SEG_MIN_BLOCKS)
    spmv_seg_kernel(uint4* out, const int64_t* one_ptr, const uint32_t* one_cols,
                    const unsigned char* one_rid, const int64_t* row_ptr, const uint32_t* cols,
                    const unsigned char* rid, const uint4* coeffs, const void* codes,
                    const uint4* dict, const uint4* w, uint64_t nrows, uint32_t mode) {
    __shared__ uint32_t slot_mem[SPMV_SEG_WARPS][SPMV_SEG_ROWS * SPMV_ACC_WORDS];
    const spmv_matrix m{one_ptr, one_cols, row_ptr, cols, coeffs, codes, dict, mode};
    const uint32_t lane = threadIdx.x & 31u, wib = threadIdx.x >> 5;
    uint32_t* slots = slot_mem[wib];
    for (uint32_t i = lane; i < SPMV_SEG_ROWS * SPMV_ACC_WORDS; i += 32) slots[i] = 0;
    __syncwarp();
    const uint64_t ngroups = (nrows + SPMV_SEG_ROWS - 1) / SPMV_SEG_ROWS;
    const uint64_t nwarps = (uint64_t)gridDim.x * SPMV_SEG_WARPS;
    for (uint64_t g = (uint64_t)blockIdx.x * SPMV_SEG_WARPS + wib; g < ngroups; g += nwarps) {
        const uint64_t r0 = g * SPMV_SEG_ROWS;
        const uint32_t nr = (uint32_t)(nrows - r0 < SPMV_SEG_ROWS ? nrows - r0 : SPMV_SEG_ROWS);
        const uint32_t rbase = (uint32_t)(r0 & 0xffu);
        if (one_ptr)
            spmv_seg_walk<true, SPMV_SEG_ONES_U>(m, one_cols, one_rid, w, one_ptr[r0],
                                                 one_ptr[r0 + nr], rbase, slots, lane);
        spmv_seg_walk<false, SPMV_SEG_GENERAL_U>(m, cols, rid, w, row_ptr[r0], row_ptr[r0 + nr],
                                                 rbase, slots, lane);
        __syncwarp();
#pragma unroll 1
        for (uint32_t i = lane; i < nr; i += 32) {
            fr_acc x;
            uint32_t* s = slots + i * SPMV_ACC_WORDS;
#pragma unroll
            for (int k = 0; k < SPMV_ACC_WORDS; k++) {
                x.w[k] = s[k];
                s[k] = 0;
            }
            fr_store(out, r0 + i, fr_acc_reduce(x));
        }
        __syncwarp();
    }
}

// rid[j] = row of entry j mod 256, for a CSR part's row pointers.
extern "C" __global__ void spmv_rowid_kernel(unsigned char* rid, const int64_t* ptr,
                                             uint64_t nrows) {
    GRID_STRIDE(r, nrows) {
        const unsigned char v = (unsigned char)(r & 0xffu);
        for (int64_t j = ptr[r]; j < ptr[r + 1]; j++) rid[j] = v;
    }
}

// out[i] = x_i mod p for 9-word values x_i < 2^286 (tests the final reduction).
extern "C" __global__ void spmv_acc_reduce_kernel(uint4* out, const uint32_t* x, uint64_t n) {
    GRID_STRIDE(i, n) {
        fr_acc a;
#pragma unroll
        for (int k = 0; k < SPMV_ACC_WORDS; k++) a.w[k] = x[SPMV_ACC_WORDS * i + k];
        fr_store(out, i, fr_acc_reduce(a));
    }
}
