// BLS12-381 base field Fp (381 bits) in Montgomery form, 12 little-endian 32-bit limbs,
// and Fp2 = Fp[u]/(u^2 + 1).
//
// Every value is kept fully reduced (< p), so equality and is_zero are plain limb compares.
// Multiplication is CIOS Montgomery (R = 2^384), the paired product of mont.cuh: 448 SASS
// instructions, 2.6·10^10 products/s on the H200. The older fp_mul_chains runs four carry
// chains per row of the multiplier, the low and high halves of a[i]*b[j], then of m*p[i], one
// PTX instruction per statement (1272 instructions, 1.66·10^10/s); no kernel uses it, it is
// the reference the host check (tests/backend/host/mont_check.cpp) compares the paired product
// with. `asm volatile` keeps the primitives' order so no carry flag is lost between statements.
// On the host (no __CUDA_ARCH__) the same primitives are emulated in C++ with an explicit carry
// flag, so the arithmetic can be checked against big integers without a GPU.
//
// No standard headers: NVRTC compiles this without a C++ library.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

#ifndef FP_FN
#define FP_FN __host__ __device__ __forceinline__
#endif

// ---- carry-chain primitives -------------------------------------------------------------------
#if defined(__CUDA_ARCH__)

#define FP_ASM3(op, r, a, b) asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b))
#define FP_ASM4(op, r, a, b, c) asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c))

FP_FN u32 add_cc(u32 a, u32 b) { u32 r; FP_ASM3("add.cc.u32", r, a, b); return r; }
FP_FN u32 addc_cc(u32 a, u32 b) { u32 r; FP_ASM3("addc.cc.u32", r, a, b); return r; }
FP_FN u32 addc(u32 a, u32 b) { u32 r; FP_ASM3("addc.u32", r, a, b); return r; }
FP_FN u32 sub_cc(u32 a, u32 b) { u32 r; FP_ASM3("sub.cc.u32", r, a, b); return r; }
FP_FN u32 subc_cc(u32 a, u32 b) { u32 r; FP_ASM3("subc.cc.u32", r, a, b); return r; }
FP_FN u32 subc(u32 a, u32 b) { u32 r; FP_ASM3("subc.u32", r, a, b); return r; }
FP_FN u32 mad_lo_cc(u32 a, u32 b, u32 c) { u32 r; FP_ASM4("mad.lo.cc.u32", r, a, b, c); return r; }
FP_FN u32 madc_lo_cc(u32 a, u32 b, u32 c) { u32 r; FP_ASM4("madc.lo.cc.u32", r, a, b, c); return r; }
FP_FN u32 mad_hi_cc(u32 a, u32 b, u32 c) { u32 r; FP_ASM4("mad.hi.cc.u32", r, a, b, c); return r; }
FP_FN u32 madc_hi_cc(u32 a, u32 b, u32 c) { u32 r; FP_ASM4("madc.hi.cc.u32", r, a, b, c); return r; }
FP_FN u32 madc_hi(u32 a, u32 b, u32 c) { u32 r; FP_ASM4("madc.hi.u32", r, a, b, c); return r; }

#else  // host emulation of the PTX carry flag (single-threaded use only)

static u32 fp_emu_cf = 0;
FP_FN u32 add_cc(u32 a, u32 b) { u64 t = (u64)a + b; fp_emu_cf = (u32)(t >> 32); return (u32)t; }
FP_FN u32 addc_cc(u32 a, u32 b) { u64 t = (u64)a + b + fp_emu_cf; fp_emu_cf = (u32)(t >> 32); return (u32)t; }
FP_FN u32 addc(u32 a, u32 b) { return a + b + fp_emu_cf; }
FP_FN u32 sub_cc(u32 a, u32 b) { u64 t = (u64)a - b; fp_emu_cf = (u32)(t >> 32) & 1; return (u32)t; }
FP_FN u32 subc_cc(u32 a, u32 b) { u64 t = (u64)a - b - fp_emu_cf; fp_emu_cf = (u32)(t >> 32) & 1; return (u32)t; }
FP_FN u32 subc(u32 a, u32 b) { return a - b - fp_emu_cf; }
FP_FN u32 mad_lo_cc(u32 a, u32 b, u32 c) { u64 t = (u64)(u32)((u64)a * b) + c; fp_emu_cf = (u32)(t >> 32); return (u32)t; }
FP_FN u32 madc_lo_cc(u32 a, u32 b, u32 c) { u64 t = (u64)(u32)((u64)a * b) + c + fp_emu_cf; fp_emu_cf = (u32)(t >> 32); return (u32)t; }
FP_FN u32 mad_hi_cc(u32 a, u32 b, u32 c) { u64 t = (((u64)a * b) >> 32) + c; fp_emu_cf = (u32)(t >> 32); return (u32)t; }
FP_FN u32 madc_hi_cc(u32 a, u32 b, u32 c) { u64 t = (((u64)a * b) >> 32) + c + fp_emu_cf; fp_emu_cf = (u32)(t >> 32); return (u32)t; }
FP_FN u32 madc_hi(u32 a, u32 b, u32 c) { return (u32)(((u64)a * b) >> 32) + c + fp_emu_cf; }

#endif

// ---- constants --------------------------------------------------------------------------------
#define FP_LIMBS 12

// p, little-endian limbs (a constexpr selector: with unrolled loops the limbs become immediates).
FP_FN constexpr u32 fp_p(int i) {
    return i == 0 ? 0xffffaaabu : i == 1 ? 0xb9feffffu : i == 2 ? 0xb153ffffu
         : i == 3 ? 0x1eabfffeu : i == 4 ? 0xf6b0f624u : i == 5 ? 0x6730d2a0u
         : i == 6 ? 0xf38512bfu : i == 7 ? 0x64774b84u : i == 8 ? 0x434bacd7u
         : i == 9 ? 0x4b1ba7b6u : i == 10 ? 0x397fe69au : 0x1a0111eau;
}
// R mod p (Montgomery one), R = 2^384.
FP_FN constexpr u32 fp_one(int i) {
    return i == 0 ? 0x0002fffdu : i == 1 ? 0x76090000u : i == 2 ? 0xc40c0002u
         : i == 3 ? 0xebf4000bu : i == 4 ? 0x53c758bau : i == 5 ? 0x5f489857u
         : i == 6 ? 0x70525745u : i == 7 ? 0x77ce5853u : i == 8 ? 0xa256ec6du
         : i == 9 ? 0x5c071a97u : i == 10 ? 0xfa80e493u : 0x15f65ec3u;
}
// R^2 mod p: to_mont(x) = x * R^2 * R^-1.
FP_FN constexpr u32 fp_r2(int i) {
    return i == 0 ? 0x1c341746u : i == 1 ? 0xf4df1f34u : i == 2 ? 0x09d104f1u
         : i == 3 ? 0x0a76e6a6u : i == 4 ? 0x4c95b6d5u : i == 5 ? 0x8de5476cu
         : i == 6 ? 0x939d83c0u : i == 7 ? 0x67eb88a9u : i == 8 ? 0xb519952du
         : i == 9 ? 0x9a793e85u : i == 10 ? 0x92cae3aau : 0x11988fe5u;
}
#define FP_N0 0xfffcfffdu  // -p^-1 mod 2^32

// ---- Fp ---------------------------------------------------------------------------------------
struct fp_t {
    u32 l[FP_LIMBS];

    static FP_FN fp_t zero() {
        fp_t r;
#pragma unroll
        for (int i = 0; i < FP_LIMBS; i++) r.l[i] = 0;
        return r;
    }
    static FP_FN fp_t one() {
        fp_t r;
#pragma unroll
        for (int i = 0; i < FP_LIMBS; i++) r.l[i] = fp_one(i);
        return r;
    }
    static FP_FN fp_t r2() {
        fp_t r;
#pragma unroll
        for (int i = 0; i < FP_LIMBS; i++) r.l[i] = fp_r2(i);
        return r;
    }
    FP_FN bool is_zero() const {
        u32 acc = l[0];
#pragma unroll
        for (int i = 1; i < FP_LIMBS; i++) acc |= l[i];
        return acc == 0;
    }
};

// t (< 2p, 12 limbs) -> t mod p, branch-free.
FP_FN fp_t fp_reduce_once(const u32 t[FP_LIMBS]) {
    u32 d[FP_LIMBS];
    d[0] = sub_cc(t[0], fp_p(0));
#pragma unroll
    for (int i = 1; i < FP_LIMBS; i++) d[i] = subc_cc(t[i], fp_p(i));
    u32 borrow = subc(0, 0);  // 0xffffffff if t < p
    fp_t r;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = (t[i] & borrow) | (d[i] & ~borrow);
    return r;
}

FP_FN fp_t operator+(const fp_t& a, const fp_t& b) {
    u32 s[FP_LIMBS];
    s[0] = add_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < FP_LIMBS; i++) s[i] = addc_cc(a.l[i], b.l[i]);
    // a + b < 2p < 2^382: no carry out of the top limb.
    return fp_reduce_once(s);
}

FP_FN fp_t operator-(const fp_t& a, const fp_t& b) {
    u32 d[FP_LIMBS];
    d[0] = sub_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < FP_LIMBS; i++) d[i] = subc_cc(a.l[i], b.l[i]);
    u32 mask = subc(0, 0);  // all ones if a < b: add p back
    fp_t r;
    r.l[0] = add_cc(d[0], fp_p(0) & mask);
#pragma unroll
    for (int i = 1; i < FP_LIMBS; i++) r.l[i] = addc_cc(d[i], fp_p(i) & mask);
    return r;
}

FP_FN fp_t operator-(const fp_t& a) { return fp_t::zero() - a; }

FP_FN fp_t fp_dbl(const fp_t& a) { return a + a; }

// Montgomery product a*b*R^-1 mod p (inputs < p, output < p), separate lo and hi chains (the
// host check's reference; kernels multiply with fp_mul_paired).
FP_FN fp_t fp_mul_chains(const fp_t& a, const fp_t& b) {
    u32 t[FP_LIMBS + 1];
#pragma unroll
    for (int i = 0; i <= FP_LIMBS; i++) t[i] = 0;
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) {
        const u32 bj = b.l[j];
        // t += lo(a[i]*bj) at position i
        t[0] = mad_lo_cc(a.l[0], bj, t[0]);
#pragma unroll
        for (int i = 1; i < FP_LIMBS; i++) t[i] = madc_lo_cc(a.l[i], bj, t[i]);
        t[FP_LIMBS] = addc(t[FP_LIMBS], 0);
        // t += hi(a[i]*bj) at position i+1
        t[1] = mad_hi_cc(a.l[0], bj, t[1]);
#pragma unroll
        for (int i = 1; i < FP_LIMBS - 1; i++) t[i + 1] = madc_hi_cc(a.l[i], bj, t[i + 1]);
        t[FP_LIMBS] = madc_hi(a.l[FP_LIMBS - 1], bj, t[FP_LIMBS]);
        // reduce: t += m*p makes t[0] zero, then shift one limb
        const u32 m = t[0] * FP_N0;
        t[0] = mad_lo_cc(m, fp_p(0), t[0]);
#pragma unroll
        for (int i = 1; i < FP_LIMBS; i++) t[i] = madc_lo_cc(m, fp_p(i), t[i]);
        t[FP_LIMBS] = addc(t[FP_LIMBS], 0);
        t[1] = mad_hi_cc(m, fp_p(0), t[1]);
#pragma unroll
        for (int i = 1; i < FP_LIMBS - 1; i++) t[i + 1] = madc_hi_cc(m, fp_p(i), t[i + 1]);
        t[FP_LIMBS] = madc_hi(m, fp_p(FP_LIMBS - 1), t[FP_LIMBS]);
#pragma unroll
        for (int i = 0; i < FP_LIMBS; i++) t[i] = t[i + 1];
        t[FP_LIMBS] = 0;
    }
    return fp_reduce_once(t);
}

// The same product with whole 32×32 products and their carries in one instruction each.
#define MONT_FN FP_FN
#include "mont.cuh"
#undef MONT_FN

FP_FN fp_t fp_mul_paired(const fp_t& a, const fp_t& b) {
    u32 P[FP_LIMBS];
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) P[i] = fp_p(i);
    fp_t r;
    mont_mul_paired<FP_LIMBS>(r.l, a.l, b.l, P, FP_N0);
    return r;
}

FP_FN fp_t operator*(const fp_t& a, const fp_t& b) { return fp_mul_paired(a, b); }

FP_FN fp_t sqr(const fp_t& a) { return a * a; }
FP_FN bool is_zero(const fp_t& a) { return a.is_zero(); }
FP_FN fp_t to_mont(const fp_t& a) { return a * fp_t::r2(); }
FP_FN fp_t from_mont(const fp_t& a) {
    fp_t one = fp_t::zero();
    one.l[0] = 1;
    return a * one;
}

// ---- Fp2 = Fp[u]/(u^2 + 1) ----------------------------------------------------------------------
struct fp2_t {
    fp_t c0, c1;
    static FP_FN fp2_t zero() { return {fp_t::zero(), fp_t::zero()}; }
    static FP_FN fp2_t one() { return {fp_t::one(), fp_t::zero()}; }
    FP_FN bool is_zero() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < FP_LIMBS; i++) acc |= c0.l[i] | c1.l[i];
        return acc == 0;
    }
};

FP_FN fp2_t operator+(const fp2_t& a, const fp2_t& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
FP_FN fp2_t operator-(const fp2_t& a, const fp2_t& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
FP_FN fp2_t operator-(const fp2_t& a) { return {-a.c0, -a.c1}; }
FP_FN fp2_t fp_dbl(const fp2_t& a) { return a + a; }
// Fp2 products are out of line: a G2 formula inlines ~10 of them (30 Fp products), and inlining
// all of them makes the G2 kernels several times larger (minutes of NVRTC time) for a few
// percent of speed.
#ifndef FP2_FN
#define FP2_FN __host__ __device__ __noinline__
#endif
// FP2_BYVAL=1 (default) passes the operands of those calls by value (registers) instead of by
// reference (which forces them through local memory): measured 2-3 % faster G2 MSMs.
#ifndef FP2_BYVAL
#define FP2_BYVAL 1
#endif
#if FP2_BYVAL
#define FP2_ARG fp2_t
#else
#define FP2_ARG const fp2_t&
#endif
// Karatsuba: (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
FP2_FN fp2_t operator*(FP2_ARG a, FP2_ARG b) {
    fp_t v0 = a.c0 * b.c0;
    fp_t v1 = a.c1 * b.c1;
    fp_t s = (a.c0 + a.c1) * (b.c0 + b.c1);
    return {v0 - v1, s - v0 - v1};
}
// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
FP2_FN fp2_t sqr(FP2_ARG a) {
    fp_t m = a.c0 * a.c1;
    return {(a.c0 + a.c1) * (a.c0 - a.c1), m + m};
}
FP_FN bool is_zero(const fp2_t& a) { return a.is_zero(); }
