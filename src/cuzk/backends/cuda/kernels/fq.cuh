// Fq of BLS12-381 in Montgomery form: twelve 32-bit little-endian limbs,
// R = 2^384, every value kept fully reduced in [0, q): the 12-limb instance of
// the Montgomery layer (mont.cuh). Its product is the layer's shifted
// even/odd CIOS, ≈ 550 SASS instructions on sm_90
// (docs/device-notes/msm.md#field-product). Compiles for the host too, where
// the tests compare it with Python ints.
#pragma once
#include "cuda_compat.cuh"
#include "mont.cuh"

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

struct fq_params {
    static constexpr int N = 12;
    static constexpr uint32_t n0 = 0xfffcfffdu;  // -q^-1 mod 2^32
    static constexpr bool TOP_ADD_CC = false;
    CUZK_HD static uint32_t p(int i) { return q_limb(i); }
};
typedef mont<fq_params> fq_field;

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

CUZK_HD bool is_zero(const fq_t& a) { return fq_field::is_zero(a.l); }
CUZK_HD bool eq(const fq_t& a, const fq_t& b) { return fq_field::eq(a.l, b.l); }

// r = a - q if a >= q else a, for a < 2^384 held in 12 limbs (no 13th limb).
CUZK_HD fq_t reduce_once(const fq_t& a) {
    fq_t r;
    fq_field::cond_sub(r.l, a.l);
    return r;
}

CUZK_HD fq_t add(const fq_t& a, const fq_t& b) {
    fq_t r;
    fq_field::add(r.l, a.l, b.l);
    return r;
}

CUZK_HD fq_t dbl(const fq_t& a) { return add(a, a); }

CUZK_HD fq_t sub(const fq_t& a, const fq_t& b) {
    fq_t r;
    fq_field::sub(r.l, a.l, b.l);
    return r;
}

CUZK_HD fq_t neg(const fq_t& a) { return is_zero(a) ? a : sub(fq_zero(), a); }

// Montgomery product a·b·2^-384 mod q (mont.cuh's shifted even/odd CIOS).
CUZK_HD fq_t mul(const fq_t& a, const fq_t& b) {
    fq_t r;
    fq_field::mul_shifted(r.l, a.l, b.l);
    return r;
}

CUZK_HD fq_t sqr(const fq_t& a) { return mul(a, a); }

// The product as a call (one copy per module). Inlined products are faster,
// but each copy is ~550 SASS instructions that NVRTC must schedule: only the hot loop (bucket accumulation, add_affine)
// inlines them; everything else calls.
// Calls take their operands by value: a reference makes the caller store the
// operand to its stack (local memory) and the callee load it back, at every
// call, while values travel in registers
// (docs/device-notes/msm.md#field-product).
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
// (docs/device-notes/msm.md#inversion).
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
    cc_chain c;
    fq_t s;
    s.l[0] = c.add_cc(z.l[0], q_limb(0) & odd);
#pragma unroll
    for (int i = 1; i < 11; i++) s.l[i] = c.addc_cc(z.l[i], q_limb(i) & odd);
    s.l[11] = c.addc(z.l[11], q_limb(11) & odd);
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
        cc_chain c;
        uint32_t d = c.sub_cc(u.l[0], v.l[0]);
#pragma unroll
        for (int i = 1; i < 12; i++) d = c.subc_cc(u.l[i], v.l[i]);
        const uint32_t u_less = c.subc(0, 0);  // all ones when u < v
        (void)d;
        const uint32_t odd_u = 0u - (u.l[0] & 1u), odd_v = 0u - (v.l[0] & 1u);
        const uint32_t sw = odd_u & (~odd_v | u_less);
        cswap(u, v, sw);
        cswap(x1, x2, sw);
        const uint32_t both = 0u - (u.l[0] & 1u);  // both odd: u -= v, x1 -= x2
        cc_chain e;
        fq_t w;
        w.l[0] = e.sub_cc(u.l[0], v.l[0] & both);
#pragma unroll
        for (int i = 1; i < 12; i++) w.l[i] = e.subc_cc(u.l[i], v.l[i] & both);
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
