// Short Weierstrass curves with a = 0 over F = fp_t (G1: y^2 = x^3 + 4) or fp2_t
// (G2: y^2 = x^3 + 4(u + 1)): affine inputs and XYZZ accumulators.
//
// XYZZ (X, Y, ZZ, ZZZ) stands for the affine point (X/ZZ, Y/ZZZ) with ZZ^3 = ZZZ^2; ZZ = 0 is the
// point at infinity. The affine point at infinity is (0, 0), which is on neither curve
// (0 != 0 + 4). Formulas (a = 0): the XYZZ mixed addition, doubling and addition of Bernstein and
// Lange's Explicit-Formulas Database (madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1, add-2008-s), with
// the exceptional inputs (either operand at infinity, P = Q, P = -Q) handled explicitly.
#pragma once
#include "fp.cuh"

// Rare or non-hot operations are out of line: inlining every doubling and full addition into
// every kernel multiplies the code size (and NVRTC compile time) several times over.
#ifndef CURVE_NOINLINE
#define CURVE_NOINLINE __host__ __device__ __noinline__
#endif

template <class F>
struct affine_t {
    F x, y;
    FP_FN bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;
    static FP_FN xyzz_t inf() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
    FP_FN bool is_inf() const { return ZZ.is_zero(); }
};

// A point (affine: 96 or 192 bytes; XYZZ: 192 or 384) by 16-byte loads and stores; its arrays
// are 256- or 512-byte aligned. A plain struct copy moves 4-byte words: a strided access per
// word and thread.
template <class T>
__device__ __forceinline__ T load16(const T* __restrict__ at) {
    constexpr int N = (int)(sizeof(T) / 16);
    const uint4* src = reinterpret_cast<const uint4*>(at);
    uint4 v[N];
#pragma unroll
    for (int k = 0; k < N; k++) v[k] = src[k];
    T p;
    u32* dst = reinterpret_cast<u32*>(&p);
#pragma unroll
    for (int k = 0; k < N; k++) {
        dst[4 * k] = v[k].x;
        dst[4 * k + 1] = v[k].y;
        dst[4 * k + 2] = v[k].z;
        dst[4 * k + 3] = v[k].w;
    }
    return p;
}

template <class T>
__device__ __forceinline__ void store16(T* __restrict__ at, const T& p) {
    constexpr int N = (int)(sizeof(T) / 16);
    uint4* dst = reinterpret_cast<uint4*>(at);
    const u32* src = reinterpret_cast<const u32*>(&p);
#pragma unroll
    for (int k = 0; k < N; k++)
        dst[k] = make_uint4(src[4 * k], src[4 * k + 1], src[4 * k + 2], src[4 * k + 3]);
}

template <class F>
__device__ __forceinline__ affine_t<F> load_affine(const affine_t<F>* __restrict__ pts, u32 idx) {
    return load16(pts + idx);
}

template <class F>
__device__ __forceinline__ xyzz_t<F> load_xyzz(const xyzz_t<F>* __restrict__ pts, u64 idx) {
    return load16(pts + idx);
}

template <class F>
__device__ __forceinline__ void store_xyzz(xyzz_t<F>* __restrict__ pts, u64 idx,
                                           const xyzz_t<F>& p) {
    store16(pts + idx, p);
}

template <class F>
FP_FN affine_t<F> neg(const affine_t<F>& p) {
    return {p.x, -p.y};
}

template <class F>
FP_FN xyzz_t<F> neg(const xyzz_t<F>& p) {
    return {p.X, -p.Y, p.ZZ, p.ZZZ};
}

template <class F>
FP_FN xyzz_t<F> from_affine(const affine_t<F>& q) {
    if (q.is_inf()) return xyzz_t<F>::inf();
    return {q.x, q.y, F::one(), F::one()};
}

// 2q for an affine q (not at infinity); mdbl-2008-s-1.
template <class F>
CURVE_NOINLINE xyzz_t<F> dbl_affine(const affine_t<F>& q) {
    F U = fp_dbl(q.y);
    F V = sqr(U);
    F W = U * V;
    F S = q.x * V;
    F x2 = sqr(q.x);
    F M = fp_dbl(x2) + x2;
    F X3 = sqr(M) - fp_dbl(S);
    F Y3 = M * (S - X3) - W * q.y;
    return {X3, Y3, V, W};
}

// 2p; dbl-2008-s-1. Infinity maps to infinity (ZZ3 = V * 0), and so would a point with y = 0.
template <class F>
CURVE_NOINLINE xyzz_t<F> dbl(const xyzz_t<F>& p) {
    F U = fp_dbl(p.Y);
    F V = sqr(U);
    F W = U * V;
    F S = p.X * V;
    F x2 = sqr(p.X);
    F M = fp_dbl(x2) + x2;
    F X3 = sqr(M) - fp_dbl(S);
    F Y3 = M * (S - X3) - W * p.Y;
    return {X3, Y3, V * p.ZZ, W * p.ZZZ};
}

// p + q for an affine q that is not at infinity; madd-2008-s.
template <class F>
FP_FN xyzz_t<F> add_affine(const xyzz_t<F>& p, const affine_t<F>& q) {
    if (p.is_inf()) return {q.x, q.y, F::one(), F::one()};
    F U2 = q.x * p.ZZ;
    F S2 = q.y * p.ZZZ;
    F P = U2 - p.X;
    F R = S2 - p.Y;
    if (P.is_zero()) {
        if (R.is_zero()) return dbl_affine(q);
        return xyzz_t<F>::inf();
    }
    F PP = sqr(P);
    F PPP = P * PP;
    F Q = p.X * PP;
    F X3 = sqr(R) - PPP - fp_dbl(Q);
    F Y3 = R * (Q - X3) - p.Y * PPP;
    return {X3, Y3, p.ZZ * PP, p.ZZZ * PPP};
}

// p + q, both XYZZ; add-2008-s.
template <class F>
CURVE_NOINLINE xyzz_t<F> add(const xyzz_t<F>& p, const xyzz_t<F>& q) {
    if (q.is_inf()) return p;
    if (p.is_inf()) return q;
    F U1 = p.X * q.ZZ;
    F U2 = q.X * p.ZZ;
    F S1 = p.Y * q.ZZZ;
    F S2 = q.Y * p.ZZZ;
    F P = U2 - U1;
    F R = S2 - S1;
    if (P.is_zero()) {
        if (R.is_zero()) return dbl(p);
        return xyzz_t<F>::inf();
    }
    F PP = sqr(P);
    F PPP = P * PP;
    F Q = U1 * PP;
    F X3 = sqr(R) - PPP - fp_dbl(Q);
    F Y3 = R * (Q - X3) - S1 * PPP;
    return {X3, Y3, p.ZZ * q.ZZ * PP, p.ZZZ * q.ZZZ * PPP};
}
