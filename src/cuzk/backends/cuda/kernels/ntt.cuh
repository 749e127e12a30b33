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

// Radix-2 decimation in frequency on 2^R registers: natural order in,
// bit-reversed order out. The twiddle of a butterfly at offset u of a half
// of size h is rho_{2h}^u = rho_8^(u * 4 / h), a compile-time constant.
template <int R, bool INV>
CUZK_HD void ntt_dif_dft(fr_t* x) {
#pragma unroll
    for (int h = (1 << R) >> 1; h >= 1; h >>= 1) {
#pragma unroll
        for (int blk = 0; blk < (1 << R); blk += 2 * h) {
#pragma unroll
            for (int u = 0; u < h; u++) {
                const fr_t a = x[blk + u], b = x[blk + u + h];
                x[blk + u] = fr_add(a, b);
                const fr_t d = fr_sub(a, b);
                const int j = u * (4 / h);
                x[blk + u + h] = j == 0 ? d : fr_mul(d, ntt_w8<INV>(j));
            }
        }
    }
}

// The transpose: bit-reversed order in, natural order out.
template <int R, bool INV>
CUZK_HD void ntt_dit_dft(fr_t* x) {
#pragma unroll
    for (int h = 1; h < (1 << R); h <<= 1) {
#pragma unroll
        for (int blk = 0; blk < (1 << R); blk += 2 * h) {
#pragma unroll
            for (int u = 0; u < h; u++) {
                const int j = u * (4 / h);
                const fr_t a = x[blk + u];
                const fr_t b = j == 0 ? x[blk + u + h] : fr_mul(x[blk + u + h], ntt_w8<INV>(j));
                x[blk + u] = fr_add(a, b);
                x[blk + u + h] = fr_sub(a, b);
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
