// Building blocks of the NTT kernels: radix-2^r DFTs in registers, powers
// looked up in tables, bit reversal and the shared-memory layout.
#pragma once
#include "fr.cuh"

// rho_8^j in Montgomery form for the forward root (omega_8) or its inverse.
template <bool INV>
CUZK_HD fr_t ntt_w8(int j) {
    if (!INV) {
        if (j == 1)
            return fr_make(0x2c42eff8u, 0x6ecf4995u, 0x4d5dfa57u, 0x6ec1fa83u, 0x5656b15cu,
                           0x3ff5cf38u, 0x229e031bu, 0x54b80267u);
        if (j == 2)
            return fr_make(0xaa89cfb1u, 0xf3b05674u, 0x6006b9feu, 0x072f0140u, 0x25667a26u,
                           0xce9a0dbfu, 0x2d598374u, 0x4d2ce405u);
        return fr_make(0x3eb2a8ddu, 0x111f9842u, 0x6f38b840u, 0x1f772784u, 0x8e3ca13cu,
                       0xb28758a3u, 0xed9a48f0u, 0x5974f9f7u);
    }
    if (j == 1)
        return fr_make(0xc14d5724u, 0xeee067bcu, 0x90c5a3beu, 0x34467c7eu, 0x7b6536c9u,
                       0x80b27f64u, 0x3c033457u, 0x1a78ad5bu);
    if (j == 2)
        return fr_make(0x55763050u, 0x0c4fa98au, 0x9ff7a200u, 0x4c8ea2c2u, 0xe43b5ddfu,
                       0x649fca48u, 0xfc43f9d3u, 0x26c0c34du);
    return fr_make(0xd3bd1009u, 0x9130b669u, 0xb2a061a7u, 0xe4fba97fu, 0xb34b26a8u, 0xf34408cfu,
                   0x06ff7a2cu, 0x1f35a4ecu);
}

CUZK_HD constexpr int ntt_brev_small(int p, int bits) {
    int r = 0;
    for (int i = 0; i < bits; i++) r |= ((p >> i) & 1) << (bits - 1 - i);
    return r;
}

CUZK_HD uint32_t ntt_brev(uint32_t x, uint32_t bits) {
    return bits == 0 ? 0u : (__brev(x) >> (32 - bits));
}

// Lazy sums: a value that only ever becomes the second operand of
// a Montgomery product need not be canonical. fr_mul(a, b) consumes b one
// word at a time; with a < p the running CIOS value stays below
// (2p + a(W - 1) + p(W - 1)) / W < 2p after every word, whatever b's words
// (W = 2^32), so any 256-bit b gives a result < 2p that the final conditional
// subtraction makes canonical (spmv.cu relies on the same for w). The
// butterflies leave such outputs as a + b (< 2p) or a - b + p (in (0, 2p))
// and skip the conditional subtraction / addition; the products below take
// the table value or constant as a and the lazy value as b.
// a + b, reduced unless `lazy`. `lazy` is a constant inside the unrolled DFTs
// except at their last level, where it is the caller's (uniform) choice.
CUZK_HD fr_t ntt_add(const fr_t& a, const fr_t& b, bool lazy) {
    cc_chain c;
    fr_t s;
    s.w[0] = c.add_cc(a.w[0], b.w[0]);
#pragma unroll
    for (int i = 1; i < 7; i++) s.w[i] = c.addc_cc(a.w[i], b.w[i]);
    s.w[7] = c.addc(a.w[7], b.w[7]);  // a + b < 2p < 2^256
    if (!lazy) s = fr_cond_sub_p(s);
    return s;
}

// a - b, plus p if a < b, or always plus p when `lazy` (a - b + p in (0, 2p)).
CUZK_HD fr_t ntt_sub(const fr_t& a, const fr_t& b, bool lazy) {
    cc_chain c;
    fr_t d;
    d.w[0] = c.sub_cc(a.w[0], b.w[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) d.w[i] = c.subc_cc(a.w[i], b.w[i]);
    uint32_t mask = c.subc(0, 0);  // all ones when a < b
    if (lazy) mask = 0xffffffffu;
    cc_chain e;
    fr_t r;
    r.w[0] = e.add_cc(d.w[0], FR_P0 & mask);
#pragma unroll
    for (int i = 1; i < 7; i++) r.w[i] = e.addc_cc(d.w[i], fr_p(i) & mask);
    r.w[7] = e.addc(d.w[7], FR_P7 & mask);
    return r;
}

// Radix-2 decimation in frequency on 2^R registers: natural order in,
// bit-reversed order out. The twiddle of a butterfly at offset u of a half
// of size h is rho_{2h}^u = rho_8^(u * 4 / h), a compile-time constant.
// lazy_out: outputs x[1..] may be left lazy (the caller multiplies them).
template <int R, bool INV>
CUZK_HD void ntt_dif_dft(fr_t* x, bool lazy_out) {
#pragma unroll
    for (int h = (1 << R) >> 1; h >= 1; h >>= 1) {
#pragma unroll
        for (int blk = 0; blk < (1 << R); blk += 2 * h) {
#pragma unroll
            for (int u = 0; u < h; u++) {
                const fr_t a = x[blk + u], b = x[blk + u + h];
                const int j = u * (4 / h);
                const bool last = h == 1;
                x[blk + u] = ntt_add(a, b, last && lazy_out && (blk + u) != 0);
                if (j == 0)
                    x[blk + u + h] = ntt_sub(a, b, last && lazy_out);
                else  // only multiplied: lazy
                    x[blk + u + h] = fr_mul(ntt_w8<INV>(j), ntt_sub(a, b, true));
            }
        }
    }
}

// Whether output i of DIT level h (of 2^R) is only ever multiplied at the
// next level: it is a butterfly's second input there (i mod 4h >= 2h) with
// a twiddle other than 1 (i mod 2h != 0).
CUZK_HD constexpr bool ntt_dit_lazy(int i, int h) { return (i % (4 * h)) >= 2 * h && (i % (2 * h)) != 0; }

// The transpose: bit-reversed order in, natural order out. lazy_out as above.
template <int R, bool INV>
CUZK_HD void ntt_dit_dft(fr_t* x, bool lazy_out) {
#pragma unroll
    for (int h = 1; h < (1 << R); h <<= 1) {
#pragma unroll
        for (int blk = 0; blk < (1 << R); blk += 2 * h) {
#pragma unroll
            for (int u = 0; u < h; u++) {
                const int j = u * (4 / h);
                const bool last = 2 * h == (1 << R);
                const fr_t a = x[blk + u];
                const fr_t b = j == 0 ? x[blk + u + h] : fr_mul(ntt_w8<INV>(j), x[blk + u + h]);
                const int lo = blk + u, hi = blk + u + h;
                x[lo] = ntt_add(a, b, last ? lazy_out && lo != 0 : ntt_dit_lazy(lo, h));
                x[hi] = ntt_sub(a, b, last ? lazy_out : ntt_dit_lazy(hi, h));
            }
        }
    }
}

// base^e from a table of powers: either every power (full) or two halves,
// base^e = lo[e mod 2^lobits] * hi[e >> lobits] (one product more).
struct ntt_pow_table {
    const uint4* full;
    const uint4* lo;
    const uint4* hi;
    uint32_t lobits;
};

CUZK_HD fr_t ntt_pow_lookup(const ntt_pow_table& t, uint64_t e) {
    if (t.full) return fr_load(t.full, e);
    return fr_mul(fr_load(t.lo, e & ((1ull << t.lobits) - 1)), fr_load(t.hi, e >> t.lobits));
}

// Shared memory holds a block's elements as two planes of 16-byte halves; the
// XOR swizzle spreads the stride-8 accesses of the last radix-8 round over
// all banks while keeping runs of 8 consecutive indices conflict-free.
CUZK_HD uint32_t ntt_swz(uint32_t idx) { return idx ^ ((idx >> 3) & 7u); }

CUZK_HD fr_t ntt_smem_load(const uint4* smem, uint32_t plane, uint32_t idx) {
    const uint32_t s = ntt_swz(idx);
    const uint4 lo = smem[s], hi = smem[plane + s];
    return fr_make(lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
}

CUZK_HD void ntt_smem_store(uint4* smem, uint32_t plane, uint32_t idx, const fr_t& a) {
    const uint32_t s = ntt_swz(idx);
    smem[s] = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    smem[plane + s] = make_uint4(a.w[4], a.w[5], a.w[6], a.w[7]);
}
