// Number-theoretic transforms over Fr, in place, as passes over tiles.
//
// A transform of 2^k elements is split into passes of t_1, t_2, ... bits
// (four-step / Cooley-Tukey recursion). Pass p works on segments of
// M = 2^m elements (m = k - t_1 - ... - t_{p-1}); inside a segment, a tile is
// the 2^t elements j2 + S*j1 (S = M / 2^t, j1 < 2^t) for one j2 < S.
//
//   DIF (natural order in, bit-reversed out): each tile gets a radix-2 DIF
//   DFT of size 2^t, then element j1-position `pos` is multiplied by
//   rho_M^(j2 * bitrev_t(pos)), the twiddle between passes.
//   DIT (bit-reversed in, natural out) is the exact transpose: passes in
//   reverse order, the twiddle applied on load, then a DIT DFT.
//
// rho is omega_n (forward) or omega_n^-1 (inverse). A tile's DFT runs in
// rounds of up to 3 bits, 8 elements per thread in registers, exchanging
// through shared memory; its twiddles rho_{2^t}^i come from a small table
// kept in shared memory, the inter-pass twiddles from a power table of
// omega_n (see ntt_pow_table). A block holds C = 2^log_c tiles: C
// consecutive j2 of one segment when S > 1 (so loads and stores cover C*32
// contiguous bytes), or C consecutive segments in the last pass (S = 1).
//
// The product without folding (FR_MUL_FOLDED 0: fewer registers, no spill
// under the cap) and lazy butterfly outputs where a product follows (ntt.cuh):
// docs/device-notes/ntt.md#tuning-table. NTT_BATCH (elements a pass thread
// loads per round trip), NTT_THREADS (a pass block's most threads) and
// NTT_MIN_BLOCKS (blocks per SM, a register cap) come from
// cuzk.backends.cuda.tuning.NTT.
#define FR_MUL_FOLDED 0
#if !defined(NTT_BATCH) || !defined(NTT_THREADS) || !defined(NTT_MIN_BLOCKS)
#error "ntt.cu: a tuning define is missing (cuzk.backends.cuda.tuning.NTT emits them)"
#endif
#include "ntt.cuh"

#define NTT_HAS_TWIDDLE 1u
#define NTT_POST_SCALE 2u  // every output times the table at its natural index
#define NTT_PRE_SCALE 4u   // every input times the table at its natural index
#define NTT_SCALE_CONST 8u // ... or times s_full[0], whatever the index
#define NTT_SRC 16u        // read the inputs from src (padded, reduced mod p)
#define NTT_POST_MUL 32u   // every output times other[g] (Montgomery product)

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (uint64_t)gridDim.x * blockDim.x)

struct ntt_block {
    uint32_t t, log_c, log_m, log_n;
    bool strided;
    uint32_t s_bits;  // log2 S
    uint64_t seg_base;
    uint32_t j2_0;

    CUZK_HD uint32_t idx(uint32_t c, uint32_t pos) const {
        return strided ? (pos << log_c) + c : (c << t) + pos;
    }
    // Staging order: element e of the block, e = idx(c, pos).
    CUZK_HD void coords(uint32_t e, uint32_t& c, uint32_t& pos) const {
        if (strided) {
            c = e & ((1u << log_c) - 1);
            pos = e >> log_c;
        } else {
            pos = e & ((1u << t) - 1);
            c = e >> t;
        }
    }
    CUZK_HD uint64_t global(uint32_t c, uint32_t pos) const {
        return strided ? seg_base + j2_0 + c + ((uint64_t)pos << s_bits)
                       : seg_base + ((uint64_t)c << t) + pos;
    }
    // Exponent of the inter-pass twiddle rho_M^(j2 * bitrev_t(pos)) as a
    // power of omega_n (negated for the inverse transform).
    CUZK_HD uint64_t twiddle_exp(uint32_t c, uint32_t pos, bool inv) const {
        const uint64_t j2 = j2_0 + c;
        const uint64_t e = (j2 * ntt_brev(pos, t)) << (log_n - log_m);
        const uint64_t mask = (1ull << log_n) - 1;
        return inv ? ((mask + 1 - e) & mask) : e;
    }
};

template <int R, bool DIT, bool INV>
__device__ __forceinline__ void ntt_round(bool lazy, uint4* smem, uint32_t plane, const uint4* tws,
                                          const ntt_block& B, uint32_t lj, uint32_t c, uint32_t w,
                                          uint32_t tpt, fr_t* x) {
    constexpr int G_MAX = 8 >> R;
    const uint32_t groups = ((1u << B.t) >> R) / tpt;
    const uint32_t sbits = lj - R;
#pragma unroll
    for (int g = 0; g < G_MAX; g++) {
        if ((uint32_t)g < groups) {
            const uint32_t q = w + g * tpt;
            const uint32_t b = q & ((1u << sbits) - 1);
            const uint32_t base = ((q >> sbits) << lj) | b;
            fr_t* y = x + g * (1 << R);
#pragma unroll
            for (int u = 0; u < (1 << R); u++)
                y[u] = ntt_smem_load(smem, plane, B.idx(c, base + ((uint32_t)u << sbits)));
            if (!DIT) ntt_dif_dft<R, INV>(y, lazy);
            if (sbits > 0) {
                // rho_{2^lj}^(b * k) for output k = bitrev_R(p), from the tile table.
#pragma unroll
                for (int p = 1; p < (1 << R); p++) {
                    const uint32_t e = (b * (uint32_t)ntt_brev_small(p, R)) << (B.t - lj);
                    y[p] = fr_mul(ntt_smem_load(tws, 1u << B.t, e), y[p]);
                }
            }
            if (DIT) ntt_dit_dft<R, INV>(y, lazy);
#pragma unroll
            for (int u = 0; u < (1 << R); u++)
                ntt_smem_store(smem, plane, B.idx(c, base + ((uint32_t)u << sbits)), y[u]);
        }
    }
}

// lazy: the round's outputs x[1..] are multiplied next (DIF: by the tile
// twiddles, sbits > 0; either: by the pass's output products, last round).
template <bool DIT, bool INV>
__device__ __forceinline__ void ntt_round_any(uint32_t r, bool lazy, uint4* smem, uint32_t plane,
                                              const uint4* tws, const ntt_block& B, uint32_t lj,
                                              uint32_t c, uint32_t w, uint32_t tpt, fr_t* x) {
    if (r == 3)
        ntt_round<3, DIT, INV>(lazy, smem, plane, tws, B, lj, c, w, tpt, x);
    else if (r == 2)
        ntt_round<2, DIT, INV>(lazy, smem, plane, tws, B, lj, c, w, tpt, x);
    else
        ntt_round<1, DIT, INV>(lazy, smem, plane, tws, B, lj, c, w, tpt, x);
}

template <bool DIT, bool INV>
__device__ __forceinline__ void ntt_pass(uint4* data, const uint4* src, uint64_t src_len,
                                         const uint4* other, const uint4* tile_tw,
                                         ntt_pow_table wt, ntt_pow_table st, uint32_t log_n,
                                         uint32_t log_m, uint32_t t, uint32_t log_c,
                                         uint32_t flags) {
    CUZK_DYN_SMEM(uint4, smem);
    const uint32_t L = 1u << t, E = L << log_c, plane = E;
    // The tile's twiddles, in the same two-plane swizzled layout as the data:
    // lanes read them at strides k * 2^s, which a plain layout maps onto a few
    // banks (Nsight Compute: 9.4-way conflicts on shared loads).
    uint4* tws = smem + 2 * E;
    const uint32_t tid = threadIdx.x, nthr = blockDim.x;
    for (uint32_t i = tid; i < L; i += nthr) ntt_smem_store(tws, L, i, fr_load(tile_tw, i));

    ntt_block B;
    B.t = t;
    B.log_c = log_c;
    B.log_m = log_m;
    B.log_n = log_n;
    B.s_bits = log_m - t;
    B.strided = B.s_bits > 0;
    if (B.strided) {
        const uint32_t bps_bits = B.s_bits - log_c;  // blocks per segment
        B.seg_base = ((uint64_t)blockIdx.x >> bps_bits) << log_m;
        B.j2_0 = (blockIdx.x & ((1u << bps_bits) - 1)) << log_c;
    } else {
        B.seg_base = ((uint64_t)blockIdx.x << log_c) << t;
        B.j2_0 = 0;
    }
    const bool twiddle = (flags & NTT_HAS_TWIDDLE) != 0;
    const bool src_in = (flags & NTT_SRC) != 0;
    const bool pre = (flags & NTT_PRE_SCALE) != 0, post = (flags & NTT_POST_SCALE) != 0;
    const bool scale_const = (flags & NTT_SCALE_CONST) != 0;
    const bool post_mul = (flags & NTT_POST_MUL) != 0;
    fr_t kconst = fr_zero();
    if (scale_const) kconst = fr_load(st.full, 0);
    // A DIF pass's outputs are all multiplied next when it has twiddles or
    // output products: its last round may leave them lazy. (A DIT pass could
    // too, but the choice at the last level of its DFT costs registers: with
    // it the DIT kernels spill 16 bytes under the cap.)
    const bool lazy_out = !DIT && (twiddle || post || post_mul);

    // Loads: the global reads of NTT_BATCH elements (value and, from a full
    // power table, its factor) before any product.
    for (uint32_t e0 = tid; e0 < E; e0 += NTT_BATCH * nthr) {
        fr_t v[NTT_BATCH], f[NTT_BATCH];
#pragma unroll
        for (int k = 0; k < NTT_BATCH; k++) {
            const uint32_t e = e0 + k * nthr;
            if (e < E) {
                uint32_t c, pos;
                B.coords(e, c, pos);
                const uint64_t g = B.global(c, pos);
                if (src_in) {
                    // The caller's array: bit-reversed for DIT, zero past its end.
                    const uint64_t i = DIT ? (uint64_t)ntt_brev((uint32_t)g, log_n) : g;
                    v[k] = i < src_len ? fr_load(src, i) : fr_zero();
                    if (pre && !scale_const && st.full) f[k] = fr_load(st.full, i);
                } else {
                    v[k] = fr_load(data, g);
                }
                if (DIT && twiddle && wt.full) f[k] = fr_load(wt.full, B.twiddle_exp(c, pos, INV));
            }
        }
#pragma unroll
        for (int k = 0; k < NTT_BATCH; k++) {
            const uint32_t e = e0 + k * nthr;
            if (e < E) {
                uint32_t c, pos;
                B.coords(e, c, pos);
                fr_t x = v[k];
                if (src_in) {
                    x = fr_reduce_full(x);
                    if (pre) {
                        const uint64_t g = B.global(c, pos);
                        const uint64_t i = DIT ? (uint64_t)ntt_brev((uint32_t)g, log_n) : g;
                        const fr_t s = scale_const ? kconst
                                       : st.full   ? f[k]
                                                   : ntt_pow_lookup(st, i);
                        x = fr_mul(s, x);
                    }
                }
                if (DIT && twiddle) {
                    // The table value first: products take the (canonical) first operand whole.
                    const fr_t t = wt.full ? f[k] : ntt_pow_lookup(wt, B.twiddle_exp(c, pos, INV));
                    x = fr_mul(t, x);
                }
                ntt_smem_store(smem, plane, e, x);
            }
        }
    }

    const uint32_t tpt_bits = t >= 3 ? t - 3 : 0;
    const uint32_t tpt = 1u << tpt_bits;
    uint32_t c, w;
    if (B.strided) {
        c = tid & ((1u << log_c) - 1);
        w = tid >> log_c;
    } else {
        c = tid >> tpt_bits;
        w = tid & (tpt - 1);
    }
    const uint32_t r1 = ((t - 1) % 3) + 1;
    const uint32_t nrounds = 1 + (t - r1) / 3;
    fr_t x[8];
    if (!DIT) {
        uint32_t lj = t;
        for (uint32_t j = 0; j < nrounds; j++) {
            const uint32_t r = j == 0 ? r1 : 3;
            __syncthreads();
            // Rounds before the last have tile twiddles (lj > r).
            const bool lazy = lj > r || lazy_out;
            ntt_round_any<false, INV>(r, lazy, smem, plane, tws, B, lj, c, w, tpt, x);
            lj -= r;
        }
    } else {
        for (uint32_t j = nrounds; j-- > 0;) {
            const uint32_t r = j == 0 ? r1 : 3;
            const uint32_t lj = j == 0 ? t : t - r1 - 3 * (j - 1);
            __syncthreads();
            ntt_round_any<true, INV>(r, false, smem, plane, tws, B, lj, c, w, tpt, x);
        }
    }
    __syncthreads();

    // Stores: the global reads (factors) of NTT_BATCH elements first.
    for (uint32_t e0 = tid; e0 < E; e0 += NTT_BATCH * nthr) {
        fr_t f[NTT_BATCH], o[NTT_BATCH];
#pragma unroll
        for (int k = 0; k < NTT_BATCH; k++) {
            const uint32_t e = e0 + k * nthr;
            if (e < E) {
                uint32_t c2, pos;
                B.coords(e, c2, pos);
                const uint64_t g = B.global(c2, pos);
                if (!DIT && twiddle && wt.full) f[k] = fr_load(wt.full, B.twiddle_exp(c2, pos, INV));
                if (post && !scale_const && st.full) {
                    // The output's natural index: DIT writes natural order, DIF bit-reversed.
                    const uint64_t i = DIT ? g : (uint64_t)ntt_brev((uint32_t)g, log_n);
                    f[k] = fr_load(st.full, i);
                }
                if (post_mul) o[k] = fr_load(other, g);
            }
        }
#pragma unroll
        for (int k = 0; k < NTT_BATCH; k++) {
            const uint32_t e = e0 + k * nthr;
            if (e < E) {
                uint32_t c2, pos;
                B.coords(e, c2, pos);
                const uint64_t g = B.global(c2, pos);
                // v may be lazy: every product below takes it as the second operand.
                fr_t v = ntt_smem_load(smem, plane, e);
                if (!DIT && twiddle) {
                    const fr_t t =
                        wt.full ? f[k] : ntt_pow_lookup(wt, B.twiddle_exp(c2, pos, INV));
                    v = fr_mul(t, v);
                }
                if (post) {
                    const uint64_t i = DIT ? g : (uint64_t)ntt_brev((uint32_t)g, log_n);
                    const fr_t s = scale_const ? kconst
                                   : st.full   ? f[k]
                                               : ntt_pow_lookup(st, i);
                    v = fr_mul(s, v);
                }
                if (post_mul) v = fr_mul(o[k], v);
                fr_store(data, g, v);
            }
        }
    }
}

#define NTT_PASS_CALL(DIT, INV)                                                       \
    ntt_pass<DIT, INV>(data, src, src_len, other, tile_tw,                             \
                       ntt_pow_table{w_full, w_lo, w_hi, w_lobits},                    \
                       ntt_pow_table{s_full, s_lo, s_hi, s_lobits}, log_n, log_m, t, log_c, \
                       flags)

extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS) ntt_dif_fwd(
    uint4* data, const uint4* src, uint64_t src_len, const uint4* other, const uint4* tile_tw,
    const uint4* w_full, const uint4* w_lo, const uint4* w_hi,
    uint32_t w_lobits, const uint4* s_full, const uint4* s_lo, const uint4* s_hi, uint32_t s_lobits,
    uint32_t log_n, uint32_t log_m, uint32_t t, uint32_t log_c, uint32_t flags) {
    NTT_PASS_CALL(false, false);
}

extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS) ntt_dif_inv(
    uint4* data, const uint4* src, uint64_t src_len, const uint4* other, const uint4* tile_tw,
    const uint4* w_full, const uint4* w_lo, const uint4* w_hi,
    uint32_t w_lobits, const uint4* s_full, const uint4* s_lo, const uint4* s_hi, uint32_t s_lobits,
    uint32_t log_n, uint32_t log_m, uint32_t t, uint32_t log_c, uint32_t flags) {
    NTT_PASS_CALL(false, true);
}

extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS) ntt_dit_fwd(
    uint4* data, const uint4* src, uint64_t src_len, const uint4* other, const uint4* tile_tw,
    const uint4* w_full, const uint4* w_lo, const uint4* w_hi,
    uint32_t w_lobits, const uint4* s_full, const uint4* s_lo, const uint4* s_hi, uint32_t s_lobits,
    uint32_t log_n, uint32_t log_m, uint32_t t, uint32_t log_c, uint32_t flags) {
    NTT_PASS_CALL(true, false);
}

extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS) ntt_dit_inv(
    uint4* data, const uint4* src, uint64_t src_len, const uint4* other, const uint4* tile_tw,
    const uint4* w_full, const uint4* w_lo, const uint4* w_hi,
    uint32_t w_lobits, const uint4* s_full, const uint4* s_lo, const uint4* s_hi, uint32_t s_lobits,
    uint32_t log_n, uint32_t log_m, uint32_t t, uint32_t log_c, uint32_t flags) {
    NTT_PASS_CALL(true, true);
}

// out[p] = f(i) * in[i] with i = bitrev_k(p) (or i = p), in[i] = 0 past
// in_len, every input reduced mod p first. f: 0 none, 1 the constant
// s_full[0], 2 the power table at i.
extern "C" __global__ void ntt_gather_kernel(uint4* out, const uint4* in, uint64_t in_len,
                                             uint32_t log_n, uint32_t bitrev, uint32_t scale_mode,
                                             const uint4* s_full, const uint4* s_lo,
                                             const uint4* s_hi, uint32_t s_lobits) {
    const uint64_t n = 1ull << log_n;
    const ntt_pow_table st{s_full, s_lo, s_hi, s_lobits};
    fr_t k = fr_zero();
    if (scale_mode == 1) k = fr_load(s_full, 0);
    GRID_STRIDE(p, n) {
        const uint64_t i = bitrev ? (uint64_t)ntt_brev((uint32_t)p, log_n) : p;
        fr_t v = i < in_len ? fr_reduce_full(fr_load(in, i)) : fr_zero();
        if (scale_mode == 1) v = fr_mul(v, k);
        if (scale_mode == 2) v = fr_mul(v, ntt_pow_lookup(st, i));
        fr_store(out, p, v);
    }
}

// out[e] = lo[e mod 2^lobits] * hi[e >> lobits]: a full power table.
extern "C" __global__ void ntt_pow_fill_kernel(uint4* out, uint64_t n, const uint4* lo,
                                               const uint4* hi, uint32_t lobits) {
    const ntt_pow_table t{nullptr, lo, hi, lobits};
    GRID_STRIDE(e, n) { fr_store(out, e, ntt_pow_lookup(t, e)); }
}
