// Fp Montgomery products on the FP64 pipe: an experiment for issue 19 (bench/NOTES.md,
// "An Fp product on the FP64 pipe"), used only by the product-rate probes of fp_bench.cu.
//
// Why: the 32-bit CIOS product (fp.cuh) is bound by IMAD.WIDE issue on the integer
// multiply-add pipe (277 per product, ≈ 4 cycles each per SM sub-partition), while the SM's
// FP64 pipe — a second multiplier, 64 DFMA per clock per SM on the H200 — sits idle. A DFMA
// multiplies two 24-bit integers held in doubles exactly (48-bit product) and adds it to an
// accumulator exactly while the sum stays below 2^52, so a 381-bit product fits in 16 limbs
// of 24 bits with no rounding anywhere. Per product that is 496 DFMA and ≈ 400 cheap integer
// operations (carries, conversions) on the ALU pipe: about the CIOS product's time on its own,
// but on other pipes, so a thread that interleaves one product of each kind might approach
// twice the rate. The probes measure exactly that.
//
// fp24_t: 16 limbs of 24 bits, each an exact integer in a double; the same Montgomery form as
// fp_t (R = 2^384 = 2^(16·24)), so a value converts between the two by re-cutting its bits.
// fp24_mul keeps results below 2p (inputs below 2p; 4p < R), not fully reduced.
//
// Column k of the product-scanning Montgomery product: x_ab = Σ a_i·b_j (i + j = k) and
// x_qp = Σ q_j·p_i (i + j = k, j < k) are DFMA chains of at most 16 terms below 2^48, so each
// stays below 2^52 and converts to an integer by adding 2^52 (its bits are then 2^52's plus the
// value). The integer t = x_ab + x_qp + carry gives q_k = t·(-p⁻¹) mod 2^24 for k < 16 (then
// t + q_k·p_0 ≡ 0 mod 2^24) or the result limb k − 16 after; carry = t >> 24.
#pragma once
#include "fp.cuh"

#define FP24_LIMBS 16
#define FP24_MASK 0xFFFFFFu
#define FP24_TWO52 4503599627370496.0  // 2^52
#define FP24_TWO52_BITS 0x4330000000000000ull

struct fp24_t {
    double l[FP24_LIMBS];
};

// Limb i (24 bits) of p, cut from fp.cuh's 32-bit words.
FP_FN constexpr u32 fp24_p_int(int i) {
    const int w = (24 * i) / 32;
    const u64 two = (u64)fp_p(w) | ((u64)(w + 1 < FP_LIMBS ? fp_p(w + 1) : 0u) << 32);
    return (u32)(two >> ((24 * i) % 32)) & FP24_MASK;
}
#define FP24_PINV (FP_N0 & FP24_MASK)  // -p^-1 mod 2^24

#if defined(__CUDA_ARCH__)
FP_FN u64 fp24_bits(double x) { return (u64)__double_as_longlong(x); }
FP_FN double fp24_from_bits(u64 b) { return __longlong_as_double((long long)b); }
FP_FN double fp24_fma(double a, double b, double c) { return __fma_rn(a, b, c); }
#else  // the host harness includes <cmath> first
FP_FN u64 fp24_bits(double x) { u64 b; __builtin_memcpy(&b, &x, 8); return b; }
FP_FN double fp24_from_bits(u64 b) { double x; __builtin_memcpy(&x, &b, 8); return x; }
FP_FN double fp24_fma(double a, double b, double c) { return fma(a, b, c); }
#endif

// An integer below 2^32 as a double (exact), and a double holding an integer below 2^52 back.
FP_FN double fp24_from_u32(u32 x) { return fp24_from_bits(FP24_TWO52_BITS | x) - FP24_TWO52; }
FP_FN u64 fp24_to_u64(double x) { return fp24_bits(x + FP24_TWO52) - FP24_TWO52_BITS; }

FP_FN fp24_t fp24_mul(const fp24_t& a, const fp24_t& b) {
    double q[FP24_LIMBS];
    fp24_t r;
    u64 carry = 0;
#pragma unroll
    for (int k = 0; k < 2 * FP24_LIMBS - 1; k++) {
        double x_ab = 0.0, x_qp = 0.0;
#pragma unroll
        for (int i = 0; i < FP24_LIMBS; i++) {
            const int j = k - i;
            if (j >= 0 && j < FP24_LIMBS) x_ab = fp24_fma(a.l[i], b.l[j], x_ab);
        }
#pragma unroll
        for (int j = 0; j < FP24_LIMBS; j++) {
            const int i = k - j;
            if (j < k && i >= 0 && i < FP24_LIMBS) x_qp = fp24_fma(q[j], (double)fp24_p_int(i), x_qp);
        }
        u64 t = fp24_to_u64(x_ab) + fp24_to_u64(x_qp) + carry;
        if (k < FP24_LIMBS) {
            const u32 qk = ((u32)t * FP24_PINV) & FP24_MASK;
            t += (u64)qk * fp24_p_int(0);
            q[k] = fp24_from_u32(qk);
        } else {
            r.l[k - FP24_LIMBS] = fp24_from_u32((u32)t & FP24_MASK);
        }
        carry = t >> 24;
    }
    r.l[FP24_LIMBS - 1] = fp24_from_u32((u32)carry);
    return r;
}

// fp_t (12 words) → 16 limbs of 24 bits: every 3 words make 4 limbs.
FP_FN fp24_t fp24_from_fp(const fp_t& a) {
    fp24_t r;
#pragma unroll
    for (int g = 0; g < 4; g++) {
        const u32 w0 = a.l[3 * g], w1 = a.l[3 * g + 1], w2 = a.l[3 * g + 2];
        r.l[4 * g] = fp24_from_u32(w0 & FP24_MASK);
        r.l[4 * g + 1] = fp24_from_u32((w0 >> 24) | ((w1 & 0xFFFFu) << 8));
        r.l[4 * g + 2] = fp24_from_u32((w1 >> 16) | ((w2 & 0xFFu) << 16));
        r.l[4 * g + 3] = fp24_from_u32(w2 >> 8);
    }
    return r;
}

// 16 limbs of 24 bits (each below 2^24) → fp_t's 12 words, the value unchanged (below 2p
// after fp24_mul: callers reduce if they need < p).
FP_FN fp_t fp24_to_fp_words(const fp24_t& a) {
    fp_t r;
#pragma unroll
    for (int g = 0; g < 4; g++) {
        const u32 l0 = (u32)fp24_to_u64(a.l[4 * g]), l1 = (u32)fp24_to_u64(a.l[4 * g + 1]);
        const u32 l2 = (u32)fp24_to_u64(a.l[4 * g + 2]), l3 = (u32)fp24_to_u64(a.l[4 * g + 3]);
        r.l[3 * g] = l0 | (l1 << 24);
        r.l[3 * g + 1] = (l1 >> 8) | (l2 << 16);
        r.l[3 * g + 2] = (l2 >> 16) | (l3 << 8);
    }
    return r;
}

// a·b·R⁻¹ mod p for fp_t operands (< p, result < p) with the product on the FP64 pipe.
FP_FN fp_t fp_mul_fp64(const fp24_t& a, const fp24_t& b) {
    const fp_t t = fp24_to_fp_words(fp24_mul(a, b));
    return fp_reduce_once(t.l);
}
