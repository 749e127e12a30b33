// Scalars of Fr (four 64-bit little-endian limbs, standard form) cut into
// windows for Pippenger and for fixed-base multiplication.
#pragma once
#include "cuda_compat.cuh"

namespace cuzk {

struct scalar_t {
    uint64_t l[4];
};

// Scalar rows are 32 bytes, 16-byte aligned: two 16-byte loads on the device.
CUZK_HD scalar_t load_scalar(const uint64_t* p) {
    scalar_t s;
#ifdef CUZK_DEVICE_CODE
    const ulonglong2* q = reinterpret_cast<const ulonglong2*>(p);
    const ulonglong2 a = q[0], b = q[1];
    s.l[0] = a.x;
    s.l[1] = a.y;
    s.l[2] = b.x;
    s.l[3] = b.y;
#else
#pragma unroll
    for (int i = 0; i < 4; i++) s.l[i] = p[i];
#endif
    return s;
}

// The Fr modulus r.
CUZK_HD uint64_t r_limb(int i) {
    const uint64_t r[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull, 0x3339d80809a1d805ull,
                           0x73eda753299d7d48ull};
    return r[i];
}

CUZK_HD bool scalar_ge_r(const scalar_t& s) {
#pragma unroll
    for (int i = 3; i >= 0; --i) {
        if (s.l[i] != r_limb(i)) return s.l[i] > r_limb(i);
    }
    return true;
}

// s mod r for any 256-bit s (at most two subtractions: 2^256 < 3r). Bases lie
// in the order-r subgroup, so reducing changes no product; it keeps every
// digit inside the 255 bits the windows are sized for.
CUZK_HD scalar_t reduce_scalar(scalar_t s) {
    for (int k = 0; k < 2 && scalar_ge_r(s); k++) {
        uint64_t borrow = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint64_t ri = r_limb(i);
            uint64_t d = s.l[i] - ri - borrow;
            borrow = (s.l[i] < ri) || (s.l[i] - ri < borrow);
            s.l[i] = d;
        }
    }
    return s;
}

CUZK_HD bool scalar_is_zero(const scalar_t& s) { return (s.l[0] | s.l[1] | s.l[2] | s.l[3]) == 0; }

CUZK_HD bool scalar_is_one(const scalar_t& s) {
    return s.l[0] == 1 && (s.l[1] | s.l[2] | s.l[3]) == 0;
}

// Limb k of s (k < 4; 0 past the top) by selects: an index known only at run
// time would put the scalar in local memory (a 32-byte stack frame, a load
// a digit).
CUZK_HD uint64_t scalar_limb(const scalar_t& s, uint32_t k) {
    const uint64_t lo = k == 0 ? s.l[0] : s.l[1];
    const uint64_t hi = k == 2 ? s.l[2] : s.l[3];
    return k < 2 ? lo : (k < 4 ? hi : 0);
}

// Bits [off, off + c) of s, c <= 32; bits past 255 read as zero.
CUZK_HD uint32_t scalar_bits(const scalar_t& s, uint32_t off, uint32_t c) {
    if (off >= 256) return 0;
    const uint32_t limb = off >> 6, sh = off & 63;
    uint64_t v = scalar_limb(s, limb) >> sh;
    if (sh + c > 64) v |= scalar_limb(s, limb + 1) << (64 - sh);
    return (uint32_t)(v & ((1ull << c) - 1));
}

// The signed-digit recoding of a reduced scalar, one window at a time:
// digit_w = bits_w + carry, mapped into (-2^(c-1), 2^(c-1)] with a carry into
// the next window. With nw = floor(255 / c) + 1 windows the last carry is 0.
struct signed_digits {
    uint32_t carry = 0;
    // Magnitude |d| in [0, 2^(c-1)] and sign (1 = negative) of window w.
    CUZK_HD uint32_t next(const scalar_t& s, uint32_t w, uint32_t c, uint32_t& negative) {
        const uint32_t half = 1u << (c - 1);
        uint32_t v = scalar_bits(s, w * c, c) + carry;
        if (v > half) {
            carry = 1;
            negative = 1;
            return (1u << c) - v;  // 0 when v = 2^c
        }
        carry = 0;
        negative = 0;
        return v;
    }
};

}  // namespace cuzk
