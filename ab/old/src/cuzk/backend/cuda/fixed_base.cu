// Fixed-base scalar multiplication k_i·G of one generator G (G1 or G2) for key generation;
// driven by fixed_base.py. Both groups live in this one module (kernels suffixed _g1 / _g2).
//
// Window c, W = ceil(256/c) windows, H = 2^(c-1) table entries per window:
//   fb_table     T[w][d-1] = d·2^(c·w)·G for d in [1, H], w < W, as XYZZ, by double-and-add
//                from the window bases 2^(c·w)·G (W affine points made on the host)
//   fb_affine    XYZZ -> affine (mode 0: Montgomery limbs, how the table is stored)
//   fb_mul       one thread per scalar: signed c-bit digits d_w (|d_w| <= H, so the table holds
//                every digit), Σ_w sign_w·T[w][|d_w|-1] by at most W mixed additions
//   fb_affine    XYZZ -> zcash-uncompressed bytes (mode 1), what a .params file holds
// fb_affine inverts with Montgomery's trick: thread t takes the K points t, t+T, t+2T, ...
// (T threads; neighbouring threads touch neighbouring points), one Fermat inversion per thread.
#include "curve.cuh"
#include "grid.cuh"
#include "scalar.cuh"

// 1/a = a^(p-2) for a != 0: square-and-multiply over the fixed exponent (~380 squarings and
// ~190 products, paid once per K points).
__device__ __noinline__ fp_t fp_inv(fp_t a) {
    fp_t r = fp_t::one();
#pragma unroll 1
    for (int i = FP_LIMBS - 1; i >= 0; i--) {
        const u32 e = fp_p(i) - (i == 0 ? 2u : 0u);  // p's low limb is odd and > 2: no borrow
#pragma unroll 1
        for (int b = 31; b >= 0; b--) {
            r = sqr(r);
            if ((e >> b) & 1u) r = r * a;
        }
    }
    return r;
}

__device__ __forceinline__ fp_t fe_inv(const fp_t& a) { return fp_inv(a); }

// 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2).
__device__ __forceinline__ fp2_t fe_inv(const fp2_t& a) {
    const fp_t n = fp_inv(a.c0 * a.c0 + a.c1 * a.c1);
    return {a.c0 * n, -(a.c1 * n)};
}

__device__ __forceinline__ fp_t canonical_to_mont(const fp_t& a) { return to_mont(a); }
__device__ __forceinline__ fp2_t canonical_to_mont(const fp2_t& a) {
    return {to_mont(a.c0), to_mont(a.c1)};
}

// One Fp element as 48 big-endian bytes (12 words in memory order).
__device__ __forceinline__ void put_be(u32* __restrict__ dst, const fp_t& a) {
    const fp_t c = from_mont(a);
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) dst[j] = __byte_perm(c.l[FP_LIMBS - 1 - j], 0, 0x0123);
}

// zcash uncompressed: x then y; for G2 each coordinate is written c1 first.
__device__ __forceinline__ void put_zcash(u32* __restrict__ dst, const fp_t& x, const fp_t& y) {
    put_be(dst, x);
    put_be(dst + FP_LIMBS, y);
}
__device__ __forceinline__ void put_zcash(u32* __restrict__ dst, const fp2_t& x, const fp2_t& y) {
    put_be(dst, x.c1);
    put_be(dst + FP_LIMBS, x.c0);
    put_be(dst + 2 * FP_LIMBS, y.c1);
    put_be(dst + 3 * FP_LIMBS, y.c0);
}

// Thread i < W·H: T[i] = d·B_w (XYZZ) with w = i / H, d = i % H + 1; bases are canonical affine.
template <class F>
__device__ __forceinline__ void fb_table(const affine_t<F>* __restrict__ bases, u32 nwin, u32 half,
                                         xyzz_t<F>* __restrict__ out) {
    const u64 i = global_thread();
    if (i >= (u64)nwin * half) return;
    const u32 w = (u32)(i / half), d = (u32)(i % half) + 1;
    affine_t<F> b = bases[w];
    b.x = canonical_to_mont(b.x);
    b.y = canonical_to_mont(b.y);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (int bit = 31 - __clz(d); bit >= 0; bit--) {
        acc = dbl(acc);
        if ((d >> bit) & 1u) acc = add_affine(acc, b);
    }
    out[i] = acc;
}

// Thread i < m: out[i] = k_i·G for the Montgomery-form scalar k_i (XYZZ; zero -> infinity).
template <class F>
__device__ __forceinline__ void fb_mul(const u64* __restrict__ scalars, u32 m, u32 c, u32 nwin,
                                       const affine_t<F>* __restrict__ table,
                                       xyzz_t<F>* __restrict__ out) {
    const u64 i = global_thread();
    if (i >= m) return;
    u32 s[8];
    load_scalar_words(scalars, i, s);
    const u32 half = 1u << (c - 1);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    u32 carry = 0;
    for (u32 w = 0; w < nwin; w++) {
        bool negative;
        const u32 mag = signed_digit(s, w, c, carry, negative);
        if (mag == 0) continue;
        affine_t<F> q = load_affine(table, w * half + mag - 1);
        if (negative) q = neg(q);
        acc = add_affine(acc, q);
    }
    out[i] = acc;
}

// Thread t < T = ceil(n/K) converts points t + j·T (j < K) of `pts` to affine: mode 0 writes
// affine_t<F> Montgomery limbs, mode 1 zcash-uncompressed bytes (infinity: flag 0x40, zeros).
// scratch: n field elements (the running products of Montgomery's trick).
template <class F>
__device__ __forceinline__ void fb_affine(const xyzz_t<F>* __restrict__ pts, u64 n, u32 K,
                                          F* __restrict__ scratch, u32* __restrict__ out,
                                          u32 mode) {
    const u64 t = global_thread();
    const u64 T = (n + K - 1) / K;
    if (t >= T) return;
    F acc = F::one();
    for (u32 j = 0; j < K; j++) {
        const u64 i = t + j * T;
        if (i >= n) break;
        scratch[i] = acc;
        const xyzz_t<F> p = pts[i];
        if (!p.is_inf()) acc = acc * (p.ZZ * p.ZZZ);
    }
    F inv = fe_inv(acc);  // a product of non-zero elements
    constexpr u32 WORDS = (u32)(sizeof(affine_t<F>) / 4);
    for (u32 j = K; j-- > 0;) {
        const u64 i = t + j * T;
        if (i >= n) continue;
        const xyzz_t<F> p = pts[i];
        u32* dst = out + i * WORDS;
        if (p.is_inf()) {
            if (mode == 0) {
#pragma unroll 1
                for (u32 k = 0; k < WORDS; k++) dst[k] = 0;
            } else {
                dst[0] = 0x40u;  // byte 0 of the encoding: the infinity flag
#pragma unroll 1
                for (u32 k = 1; k < WORDS; k++) dst[k] = 0;
            }
            continue;
        }
        const F zz_zzz = p.ZZ * p.ZZZ;
        const F ii = scratch[i] * inv;  // 1/(ZZ·ZZZ)
        inv = inv * zz_zzz;
        const F x = p.X * (p.ZZZ * ii);  // X/ZZ
        const F y = p.Y * (p.ZZ * ii);   // Y/ZZZ
        if (mode == 0) {
            affine_t<F>* a = reinterpret_cast<affine_t<F>*>(dst);
            a->x = x;
            a->y = y;
        } else {
            put_zcash(dst, x, y);
        }
    }
}

#define FB_KERNELS(SUFFIX, F)                                                                    \
    extern "C" __global__ void __launch_bounds__(128) fixed_base_table_##SUFFIX(                \
        const affine_t<F>* __restrict__ bases, u32 nwin, u32 half,                              \
        xyzz_t<F>* __restrict__ out) {                                                           \
        fb_table<F>(bases, nwin, half, out);                                                     \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(128) fixed_base_mul_##SUFFIX(                  \
        const u64* __restrict__ scalars, u32 m, u32 c, u32 nwin,                                \
        const affine_t<F>* __restrict__ table, xyzz_t<F>* __restrict__ out) {                    \
        fb_mul<F>(scalars, m, c, nwin, table, out);                                              \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(128) fixed_base_affine_##SUFFIX(               \
        const xyzz_t<F>* __restrict__ pts, u64 n, u32 K, F* __restrict__ scratch,               \
        u32* __restrict__ out, u32 mode) {                                                       \
        fb_affine<F>(pts, n, K, scratch, out, mode);                                             \
    }

FB_KERNELS(g1, fp_t)
FB_KERNELS(g2, fp2_t)
