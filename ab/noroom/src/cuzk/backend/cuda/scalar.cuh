// The scalar side of MSMs and fixed-base multiplication: Montgomery-form Fr rows (4 × u64
// limbs, < r) back to canonical, and c-bit windows of the canonical scalar.
#pragma once
#include "fp.cuh"

// Fr (scalar field) constants, 64-bit limbs: r and -r^-1 mod 2^64.
#define FR_R0 0xffffffff00000001ull
#define FR_R1 0x53bda402fffe5bfeull
#define FR_R2 0x3339d80809a1d805ull
#define FR_R3 0x73eda753299d7d48ull
#define FR_NINV 0xfffffffeffffffffull

// a*b + c + carry -> low word; carry <- high word (never overflows 128 bits).
__device__ __forceinline__ u64 mac64(u64 a, u64 b, u64 c, u64& carry) {
    u64 lo = a * b, hi = __umul64hi(a, b);
    lo += c;
    hi += lo < c;
    lo += carry;
    hi += lo < carry;
    carry = hi;
    return lo;
}

// x·2^-256 mod r for a Montgomery-form x < r (REDC): the canonical scalar, in place.
__device__ __forceinline__ void fr_from_mont(u64 t[4]) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const u64 m = t[0] * FR_NINV;
        u64 carry = 0;
        mac64(m, FR_R0, t[0], carry);  // low word is zero by the choice of m
        t[0] = mac64(m, FR_R1, t[1], carry);
        t[1] = mac64(m, FR_R2, t[2], carry);
        t[2] = mac64(m, FR_R3, t[3], carry);
        t[3] = carry;
    }
    // t < 2r: subtract r once if t >= r.
    const u64 r[4] = {FR_R0, FR_R1, FR_R2, FR_R3};
    u64 d[4], borrow = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        u64 x = t[i] - r[i];
        u64 b1 = t[i] < r[i];
        d[i] = x - borrow;
        borrow = b1 | (x < borrow);
    }
    if (!borrow) {
#pragma unroll
        for (int i = 0; i < 4; i++) t[i] = d[i];
    }
}

// c bits of the 256-bit little-endian scalar s starting at bit `pos` (c <= 32).
__device__ __forceinline__ u32 window_bits(const u32 s[8], u32 pos, u32 c) {
    u32 limb = pos >> 5, off = pos & 31;
    if (limb >= 8) return 0;
    u64 v = s[limb];
    if (limb + 1 < 8) v |= (u64)s[limb + 1] << 32;
    return (u32)(v >> off) & ((1u << c) - 1);
}

// Scalar i of a Montgomery-form Fr vector as eight little-endian 32-bit words of its
// canonical value (what the window functions read).
__device__ __forceinline__ void load_scalar_words(const u64* __restrict__ scalars, u64 i,
                                                  u32 s[8]) {
    u64 t[4];
#pragma unroll
    for (int k = 0; k < 4; k++) t[k] = scalars[i * 4 + k];
    fr_from_mont(t);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        s[2 * k] = (u32)t[k];
        s[2 * k + 1] = (u32)(t[k] >> 32);
    }
}

// Window w of the signed c-bit digit expansion: v = bits + carry in [0, 2^c]; digits above
// 2^(c-1) become v - 2^c (negative) with a carry into window w + 1. Returns |digit| and sets
// `negative`; with scalars < 2^255 and c·W >= 256 the top window never carries out.
__device__ __forceinline__ u32 signed_digit(const u32 s[8], u32 w, u32 c, u32& carry,
                                            bool& negative) {
    const u32 v = window_bits(s, w * c, c) + carry;
    negative = v > (1u << (c - 1));
    carry = negative ? 1u : 0u;
    return negative ? (1u << c) - v : v;
}
