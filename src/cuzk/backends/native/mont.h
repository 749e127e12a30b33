/* Montgomery arithmetic on n×64-bit little-endian limbs, shared by Fr (n = 4)
 * and Fq (n = 6).
 *
 * Every function takes the limb count as a compile-time constant through its
 * inlined caller (fr.h, fq.h), so gcc unrolls the loops. Outputs may alias
 * inputs: results are built in locals and copied last.
 *
 * Both moduli have a top limb below 2^63 − 1, which is what lets mont_mul use
 * the CIOS variant without the extra carry word (the running sum provably
 * stays below 2p), and lets mod_add form a + b without overflow.
 */
#ifndef CUZK_MONT_H
#define CUZK_MONT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint64_t u64;
typedef unsigned __int128 u128;

#define INLINE static inline __attribute__((always_inline))
#define MONT_MAX_LIMBS 6

#if defined(__x86_64__) && !defined(CUZK_PORTABLE_ONLY)
#include <x86intrin.h>

#include "mont_x86.h"
/* Set by arith.c at import: use the MULX/ADX products of mont_x86.h. */
extern int cuzk_use_adx;
#define CUZK_ADX_PATH 1
#endif

/* *out = a + b + carry_in; returns the carry out. gcc turns the x86
 * intrinsic into one ADC; through __int128 it spills to memory. */
INLINE u64 addc(u64 a, u64 b, u64 carry_in, u64 *out)
{
#if defined(__x86_64__)
    unsigned long long r;
    u64 c = _addcarry_u64((unsigned char)carry_in, a, b, &r);
    *out = r;
    return c;
#else
    u128 s = (u128)a + b + carry_in;
    *out = (u64)s;
    return (u64)(s >> 64);
#endif
}

/* *out = a − b − borrow_in; returns the borrow out. */
INLINE u64 subb(u64 a, u64 b, u64 borrow_in, u64 *out)
{
#if defined(__x86_64__)
    unsigned long long r;
    u64 c = _subborrow_u64((unsigned char)borrow_in, a, b, &r);
    *out = r;
    return c;
#else
    u128 d = (u128)a - b - borrow_in;
    *out = (u64)d;
    return (u64)(d >> 64) & 1;
#endif
}

/* out = t − p when t ≥ p, else t (t < 2p). Branch-free: the comparison is
 * data-dependent and would mispredict half the time. */
INLINE void mont_cond_sub(u64 *out, const u64 *t, const u64 *p, int n)
{
    u64 s[MONT_MAX_LIMBS];
    u64 borrow = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        borrow = subb(t[i], p[i], borrow, &s[i]);
    u64 keep = (u64)0 - borrow; /* all ones when t < p */
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        out[i] = (t[i] & keep) | (s[i] & ~keep);
}

/* out = a·b·2^(−64n) mod p for a, b < p; pinv = −p^(−1) mod 2^64. */
INLINE void mont_mul(u64 *out, const u64 *a, const u64 *b, const u64 *p, u64 pinv, int n)
{
    u64 t[MONT_MAX_LIMBS] = {0};
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++) {
        u128 acc = (u128)a[0] * b[i] + t[0];
        u64 carry_a = (u64)(acc >> 64);
        u64 m = (u64)acc * pinv;
        u128 red = (u128)m * p[0] + (u64)acc;
        u64 carry_r = (u64)(red >> 64);
        _Pragma("GCC unroll 8")
        for (int j = 1; j < n; j++) {
            acc = (u128)a[j] * b[i] + t[j] + carry_a;
            carry_a = (u64)(acc >> 64);
            red = (u128)m * p[j] + (u64)acc + carry_r;
            carry_r = (u64)(red >> 64);
            t[j - 1] = (u64)red;
        }
        t[n - 1] = carry_a + carry_r;
    }
    mont_cond_sub(out, t, p, n);
}

INLINE void mod_add(u64 *out, const u64 *a, const u64 *b, const u64 *p, int n)
{
    u64 t[MONT_MAX_LIMBS];
    u64 carry = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        carry = addc(a[i], b[i], carry, &t[i]);
    mont_cond_sub(out, t, p, n);
}

INLINE void mod_sub(u64 *out, const u64 *a, const u64 *b, const u64 *p, int n)
{
    u64 t[MONT_MAX_LIMBS];
    u64 borrow = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        borrow = subb(a[i], b[i], borrow, &t[i]);
    u64 mask = (u64)0 - borrow; /* add p back when a < b */
    u64 carry = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        carry = addc(t[i], p[i] & mask, carry, &out[i]);
}

INLINE void mod_neg(u64 *out, const u64 *a, const u64 *p, int n)
{
    u64 nz = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        nz |= a[i];
    u64 mask = nz ? ~(u64)0 : 0; /* −0 = 0, not p */
    u64 borrow = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++) {
        borrow = subb(p[i], a[i], borrow, &out[i]);
        out[i] &= mask;
    }
}

INLINE int limbs_is_zero(const u64 *a, int n)
{
    u64 acc = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        acc |= a[i];
    return acc == 0;
}

INLINE int limbs_eq(const u64 *a, const u64 *b, int n)
{
    u64 acc = 0;
    _Pragma("GCC unroll 8")
    for (int i = 0; i < n; i++)
        acc |= a[i] ^ b[i];
    return acc == 0;
}

/* a < p, i.e. a is a canonical representative. */
INLINE int limbs_lt(const u64 *a, const u64 *p, int n)
{
    _Pragma("GCC unroll 8")
    for (int i = n - 1; i >= 0; i--) {
        if (a[i] != p[i])
            return a[i] < p[i];
    }
    return 0;
}

#endif
