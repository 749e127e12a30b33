// Fq of BLS12-381 in Montgomery form: twelve 32-bit little-endian limbs,
// R = 2^384, every value kept fully reduced in [0, q).
//
// Three multiplication variants, chosen at compile time:
//   default        CIOS over 32-bit limbs with PTX carry chains (fq_ops.cuh),
//                  each 64-bit partial product's low and high words adjacent
//                  in one chain: the products of even limbs accumulate in one
//                  array and those of odd limbs in another (one limb up), so
//                  that ptxas fuses each mad.lo / madc.hi pair into one
//                  IMAD.WIDE: ≈ 550 SASS instructions a product on sm_90
//                  (docs/device-notes/msm.md#version-7-the-product-in-even-and-odd-chains-plan-and-predictions);
//   CUZK_FQ_LOHI_CHAINS  the same CIOS with a chain of all low words, then
//                  one of all high words (2·144 mad.lo/mad.hi, ≈ 1260 SASS
//                  instructions: the pairs cannot fuse), the mix whose
//                  throughput the H200 ceiling (≈ 17.4 G mul/s) was measured on;
//   CUZK_FQ_U64    CIOS over six 64-bit limbs in plain C++ (the compiler
//                  splits each 64×64 product), kept as the portable reference
//                  and for the measurement that picks the variant.
// Both compile for the host too, where the tests compare them with Python ints.
#pragma once
#include "fq_ops.cuh"

namespace cuzk {

struct fq_t {
    uint32_t l[12];
};

#define CUZK_Q_LIMBS                                                                         \
    {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,          \
     0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau}
#define CUZK_R2_LIMBS                                                                        \
    {0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu,          \
     0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u}
#define CUZK_ONE_LIMBS                                                                       \
    {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u,          \
     0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u}

// The modulus limbs as immediates: a switch the compiler folds when i is a
// compile-time constant (every use below is in a fully unrolled loop).
CUZK_HD uint32_t q_limb(int i) {
    const uint32_t q[12] = CUZK_Q_LIMBS;
    return q[i];
}
static const uint32_t FQ_QINV32 = 0xfffcfffdu;  // -q^-1 mod 2^32
static const uint64_t FQ_QINV64 = 0x89f3fffcfffcfffdull;  // -q^-1 mod 2^64

CUZK_HD fq_t fq_zero() {
    fq_t r;
#pragma unroll
    for (int i = 0; i < 12; i++) r.l[i] = 0;
    return r;
}

CUZK_HD fq_t fq_one() {  // 1 in Montgomery form (R mod q)
    const uint32_t one[12] = CUZK_ONE_LIMBS;
    fq_t r;
#pragma unroll
    for (int i = 0; i < 12; i++) r.l[i] = one[i];
    return r;
}

CUZK_HD bool is_zero(const fq_t& a) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) acc |= a.l[i];
    return acc == 0;
}

CUZK_HD bool eq(const fq_t& a, const fq_t& b) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) acc |= a.l[i] ^ b.l[i];
    return acc == 0;
}

// r = a - q if a >= q else a, for a < 2^384 held in 12 limbs (no 13th limb).
CUZK_HD fq_t reduce_once(const fq_t& a) {
    fq_t s;
    s.l[0] = sub_cc(a.l[0], q_limb(0));
#pragma unroll
    for (int i = 1; i < 12; i++) s.l[i] = subc_cc(a.l[i], q_limb(i));
    uint32_t borrow = subc(0, 0);  // 0xffffffff when a < q
    fq_t r;
#pragma unroll
    for (int i = 0; i < 12; i++) r.l[i] = borrow ? a.l[i] : s.l[i];
    return r;
}

CUZK_HD fq_t add(const fq_t& a, const fq_t& b) {
    // a + b < 2q < 2^382: no carry out of the top limb.
    fq_t s;
    s.l[0] = add_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 11; i++) s.l[i] = addc_cc(a.l[i], b.l[i]);
    s.l[11] = addc(a.l[11], b.l[11]);
    return reduce_once(s);
}

CUZK_HD fq_t dbl(const fq_t& a) { return add(a, a); }

CUZK_HD fq_t sub(const fq_t& a, const fq_t& b) {
    fq_t d;
    d.l[0] = sub_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 12; i++) d.l[i] = subc_cc(a.l[i], b.l[i]);
    uint32_t borrow = subc(0, 0);
    // Add q back when a < b (mask the modulus by the borrow).
    fq_t r;
    r.l[0] = add_cc(d.l[0], q_limb(0) & borrow);
#pragma unroll
    for (int i = 1; i < 11; i++) r.l[i] = addc_cc(d.l[i], q_limb(i) & borrow);
    r.l[11] = addc(d.l[11], q_limb(11) & borrow);
    return r;
}

CUZK_HD fq_t neg(const fq_t& a) { return is_zero(a) ? a : sub(fq_zero(), a); }

#if !defined(CUZK_FQ_U64) && !defined(CUZK_FQ_LOHI_CHAINS)

// acc[0..11] += Σ_k x[2k + odd]·y·2^(64k), each product's low word at 2k and
// high word at 2k + 1 of one carry chain; the carry out goes to acc[12].
CUZK_HD void mad_pairs(uint32_t* acc, const uint32_t* x, int odd, uint32_t y) {
    acc[0] = mad_lo_cc(x[odd], y, acc[0]);
    acc[1] = madc_hi_cc(x[odd], y, acc[1]);
#pragma unroll
    for (int k = 1; k < 6; k++) {
        acc[2 * k] = madc_lo_cc(x[2 * k + odd], y, acc[2 * k]);
        acc[2 * k + 1] = madc_hi_cc(x[2 * k + odd], y, acc[2 * k + 1]);
    }
    acc[12] = addc(acc[12], 0);
}

// Montgomery product a·b·2^-384 mod q (CIOS, 32-bit limbs, carry chains).
// The running sum is T = E + 2^32·O: the products of a's (and q's) even limbs
// go to E, of the odd limbs to O, each low word beside its high word in the
// chain. After m·q makes E[0] zero, T / 2^32 = O + (E >> 32) becomes the next
// E. Invariant: T < 2q at each outer step (CIOS), and within one E, O <
// 2^382 + 2·2^413 fit 13 limbs.
CUZK_HD fq_t mul(const fq_t& a, const fq_t& b) {
    uint32_t q[12], E[13], O[13];
#pragma unroll
    for (int j = 0; j < 12; j++) q[j] = q_limb(j);
#pragma unroll
    for (int j = 0; j < 13; j++) E[j] = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) {
#pragma unroll
        for (int j = 0; j < 13; j++) O[j] = 0;
        mad_pairs(E, a.l, 0, b.l[i]);
        mad_pairs(O, a.l, 1, b.l[i]);
        const uint32_t m = E[0] * FQ_QINV32;
        mad_pairs(E, q, 0, m);  // E[0] becomes 0
        mad_pairs(O, q, 1, m);
        E[0] = add_cc(O[0], E[1]);
#pragma unroll
        for (int j = 1; j < 12; j++) E[j] = addc_cc(O[j], E[j + 1]);
        E[12] = addc(O[12], 0);
    }
    fq_t r;
#pragma unroll
    for (int j = 0; j < 12; j++) r.l[j] = E[j];
    return reduce_once(r);
}

#elif defined(CUZK_FQ_LOHI_CHAINS)

// Montgomery product a·b·2^-384 mod q (CIOS, 32-bit limbs, carry chains).
// Invariant: t < 2q before each outer step, so t + a·b_i + m·q < 2^33·q fits
// in 13 limbs and the carry into t[12] never overflows.
CUZK_HD fq_t mul(const fq_t& a, const fq_t& b) {
    uint32_t t[13];
#pragma unroll
    for (int j = 0; j < 13; j++) t[j] = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) {
        const uint32_t bi = b.l[i];
        t[0] = mad_lo_cc(a.l[0], bi, t[0]);
#pragma unroll
        for (int j = 1; j < 12; j++) t[j] = madc_lo_cc(a.l[j], bi, t[j]);
        t[12] = addc(t[12], 0);
        t[1] = mad_hi_cc(a.l[0], bi, t[1]);
#pragma unroll
        for (int j = 1; j < 11; j++) t[j + 1] = madc_hi_cc(a.l[j], bi, t[j + 1]);
        t[12] = madc_hi(a.l[11], bi, t[12]);

        const uint32_t m = t[0] * FQ_QINV32;
        t[0] = mad_lo_cc(m, q_limb(0), t[0]);  // becomes 0; only its carry matters
#pragma unroll
        for (int j = 1; j < 12; j++) t[j] = madc_lo_cc(m, q_limb(j), t[j]);
        t[12] = addc(t[12], 0);
        t[1] = mad_hi_cc(m, q_limb(0), t[1]);
#pragma unroll
        for (int j = 1; j < 11; j++) t[j + 1] = madc_hi_cc(m, q_limb(j), t[j + 1]);
        t[12] = madc_hi(m, q_limb(11), t[12]);
#pragma unroll
        for (int j = 0; j < 12; j++) t[j] = t[j + 1];
        t[12] = 0;
    }
    fq_t r;
#pragma unroll
    for (int j = 0; j < 12; j++) r.l[j] = t[j];
    return reduce_once(r);
}

#else

CUZK_HD uint64_t q_limb64(int i) {
    return (uint64_t)q_limb(2 * i) | ((uint64_t)q_limb(2 * i + 1) << 32);
}

// The same CIOS over six 64-bit limbs, with carries by comparison.
CUZK_HD fq_t mul(const fq_t& a, const fq_t& b) {
    uint64_t A[6], B[6], t[7];
#pragma unroll
    for (int i = 0; i < 6; i++) {
        A[i] = (uint64_t)a.l[2 * i] | ((uint64_t)a.l[2 * i + 1] << 32);
        B[i] = (uint64_t)b.l[2 * i] | ((uint64_t)b.l[2 * i + 1] << 32);
        t[i] = 0;
    }
    t[6] = 0;
#pragma unroll
    for (int i = 0; i < 6; i++) {
        uint64_t carry = 0;
#pragma unroll
        for (int j = 0; j < 6; j++) {
            uint64_t lo = A[j] * B[i];
            uint64_t hi = mul_hi64(A[j], B[i]);
            lo += t[j];
            hi += lo < t[j];
            lo += carry;
            hi += lo < carry;
            t[j] = lo;
            carry = hi;
        }
        t[6] += carry;
        const uint64_t m = t[0] * FQ_QINV64;
        uint64_t lo = m * q_limb64(0);
        carry = mul_hi64(m, q_limb64(0));
        lo += t[0];
        carry += lo < t[0];
#pragma unroll
        for (int j = 1; j < 6; j++) {
            uint64_t l2 = m * q_limb64(j);
            uint64_t h2 = mul_hi64(m, q_limb64(j));
            l2 += t[j];
            h2 += l2 < t[j];
            l2 += carry;
            h2 += l2 < carry;
            t[j - 1] = l2;
            carry = h2;
        }
        t[5] = t[6] + carry;
        t[6] = 0;
    }
    fq_t r;
#pragma unroll
    for (int i = 0; i < 6; i++) {
        r.l[2 * i] = (uint32_t)t[i];
        r.l[2 * i + 1] = (uint32_t)(t[i] >> 32);
    }
    return reduce_once(r);
}

#endif

CUZK_HD fq_t sqr(const fq_t& a) { return mul(a, a); }

// The product as a call (one copy per module). Inlined products are faster,
// but each copy is ~550 SASS instructions (~1260 with the lo/hi chains) that
// NVRTC must schedule: only the hot loop (bucket accumulation, add_affine)
// inlines them; everything else calls.
// Calls take their operands by value: a reference makes the caller store the
// operand to its stack (local memory) and the callee load it back, at every
// call, while values travel in registers
// (docs/device-notes/msm.md#version-4-operands-of-calls-by-value-plan-and-predictions).
CUZK_POINT_FN fq_t mul_call(fq_t a, fq_t b) { return mul(a, b); }
CUZK_HD fq_t sqr_call(fq_t a) { return mul_call(a, a); }

// Standard form → Montgomery form (times R^2, then one reduction).
CUZK_HD fq_t to_mont(const fq_t& a) {
    const uint32_t r2[12] = CUZK_R2_LIMBS;
    fq_t b;
#pragma unroll
    for (int i = 0; i < 12; i++) b.l[i] = r2[i];
    return mul(a, b);
}

// Montgomery form → standard form (times 1).
CUZK_HD fq_t from_mont(const fq_t& a) {
    fq_t one = fq_zero();
    one.l[0] = 1;
    return mul_call(a, one);
}

// a^(q-2) = a^-1 (Fermat), 0 ↦ 0. Only for set-up and end-of-MSM conversions:
// ~380 squarings and ~230 products.
CUZK_POINT_FN fq_t inverse(fq_t a) {
    const uint32_t e[12] = {0xffffaaa9u, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                            0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                            0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
    fq_t r = fq_one();
    for (int i = 380; i >= 0; --i) {
        r = sqr_call(r);
        if ((e[i >> 5] >> (i & 31)) & 1) r = mul_call(r, a);
    }
    return r;
}

// a^-1 for a Montgomery-form a (0 ↦ 0) by the binary extended Euclid
// algorithm instead of Fermat: ~600 steps of 12-limb additions, shifts and
// selects (~130k integer instructions) against ~610 Montgomery products
// (~1.1M issue cycles per warp), for the batch inversions of batched-affine
// accumulation, where one inversion per thread per round adds up
// (docs/device-notes/msm.md#version-2-as-built-before-its-device-call).
// The steps are uniform (selects, no branches on the data but the loop's
// exit), so a warp's lanes stay converged.
//
// Invariants: x1·a ≡ u and x2·a ≡ v (mod q), u and v positive. Each step
// halves one of u, v (after subtracting the smaller from the larger when
// both are odd), so their bit lengths shrink by one per step: at most 762
// steps until one of them is 1. The plain inverse of aR is a^-1·R^-1; one
// Montgomery product with R^3 brings it back to Montgomery form, a^-1·R.
CUZK_HD bool is_plain_one(const fq_t& a) {
    uint32_t acc = a.l[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < 12; i++) acc |= a.l[i];
    return acc == 0;
}

// Swap a and b where mask is all ones.
CUZK_HD void cswap(fq_t& a, fq_t& b, uint32_t mask) {
#pragma unroll
    for (int i = 0; i < 12; i++) {
        const uint32_t t = (a.l[i] ^ b.l[i]) & mask;
        a.l[i] ^= t;
        b.l[i] ^= t;
    }
}

// z / 2 mod q for z < q: (z + q) / 2 when z is odd (z + q < 2q < 2^382).
CUZK_HD fq_t half_mod(const fq_t& z) {
    const uint32_t odd = 0u - (z.l[0] & 1u);
    fq_t s;
    s.l[0] = add_cc(z.l[0], q_limb(0) & odd);
#pragma unroll
    for (int i = 1; i < 11; i++) s.l[i] = addc_cc(z.l[i], q_limb(i) & odd);
    s.l[11] = addc(z.l[11], q_limb(11) & odd);
    fq_t r;
#pragma unroll
    for (int i = 0; i < 11; i++) r.l[i] = (s.l[i] >> 1) | (s.l[i + 1] << 31);
    r.l[11] = s.l[11] >> 1;
    return r;
}

CUZK_POINT_FN fq_t inverse_fast(fq_t a) {
    if (is_zero(a)) return a;
    fq_t u = a, v, x1 = fq_zero(), x2 = fq_zero();
#pragma unroll
    for (int i = 0; i < 12; i++) v.l[i] = q_limb(i);
    x1.l[0] = 1;
    while (!is_plain_one(u) && !is_plain_one(v)) {
        // Make u the one to halve: u even; or u odd and v even (swap); or both
        // odd, u the larger (swap when u < v).
        uint32_t d = sub_cc(u.l[0], v.l[0]);
#pragma unroll
        for (int i = 1; i < 12; i++) d = subc_cc(u.l[i], v.l[i]);
        const uint32_t u_less = subc(0, 0);  // all ones when u < v
        (void)d;
        const uint32_t odd_u = 0u - (u.l[0] & 1u), odd_v = 0u - (v.l[0] & 1u);
        const uint32_t sw = odd_u & (~odd_v | u_less);
        cswap(u, v, sw);
        cswap(x1, x2, sw);
        const uint32_t both = 0u - (u.l[0] & 1u);  // both odd: u -= v, x1 -= x2
        fq_t w;
        w.l[0] = sub_cc(u.l[0], v.l[0] & both);
#pragma unroll
        for (int i = 1; i < 12; i++) w.l[i] = subc_cc(u.l[i], v.l[i] & both);
        fq_t y = x2;
#pragma unroll
        for (int i = 0; i < 12; i++) y.l[i] &= both;
        x1 = half_mod(sub(x1, y));
#pragma unroll
        for (int i = 0; i < 11; i++) u.l[i] = (w.l[i] >> 1) | (w.l[i + 1] << 31);
        u.l[11] = w.l[11] >> 1;
    }
    const fq_t r = is_plain_one(u) ? x1 : x2;
    const uint32_t r3[12] = {0xd94ca1e0u, 0xed48ac6bu, 0x03a7adf8u, 0x315f831eu,
                             0x615e29ddu, 0x9a53352au, 0x921e1761u, 0x34c04e5eu,
                             0x65724728u, 0x2512d435u, 0x91755d4du, 0x0aa63460u};  // R^3 mod q
    fq_t c;
#pragma unroll
    for (int i = 0; i < 12; i++) c.l[i] = r3[i];
    return mul(r, c);
}

// Loads and stores of 48-byte elements from limb arrays in global memory.
// On the device they are three 16-byte accesses (every array of elements is
// 16-byte aligned: allocations are, and elements are 48 bytes): a gathered
// point then costs 6 load instructions instead of 24, which matters when
// each of a warp's 32 lanes reads a different point.
CUZK_HD fq_t load_fq(const uint32_t* p) {
    fq_t r;
#ifdef CUZK_DEVICE_CODE
    const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < 3; i++) {
        const uint4 v = q[i];
        r.l[4 * i] = v.x;
        r.l[4 * i + 1] = v.y;
        r.l[4 * i + 2] = v.z;
        r.l[4 * i + 3] = v.w;
    }
#else
#pragma unroll
    for (int i = 0; i < 12; i++) r.l[i] = p[i];
#endif
    return r;
}

CUZK_HD void store_fq(uint32_t* p, const fq_t& a) {
#ifdef CUZK_DEVICE_CODE
    uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < 3; i++)
        q[i] = make_uint4(a.l[4 * i], a.l[4 * i + 1], a.l[4 * i + 2], a.l[4 * i + 3]);
#else
#pragma unroll
    for (int i = 0; i < 12; i++) p[i] = a.l[i];
#endif
}

}  // namespace cuzk
