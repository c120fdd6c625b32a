// Elementwise Fr kernels over FrVec device arrays ((n, 4) uint64, Montgomery form).
//
// Grid-stride loops, one element per iteration; constants arrive as four 64-bit words (the
// element's Montgomery limbs), tables of powers as two device arrays (see fr_pow_lookup).
#include "fr.cuh"
#include "grid.cuh"

#define FR_GRID_LOOP(i, n) \
    for (fr_u64 i = global_thread(); i < (fr_u64)(n); i += (fr_u64)blockDim.x * gridDim.x)

FR_FN fr_t fr_from_u64x4(fr_u64 k0, fr_u64 k1, fr_u64 k2, fr_u64 k3) {
    fr_t r;
    r.w[0] = (fr_u32)k0; r.w[1] = (fr_u32)(k0 >> 32);
    r.w[2] = (fr_u32)k1; r.w[3] = (fr_u32)(k1 >> 32);
    r.w[4] = (fr_u32)k2; r.w[5] = (fr_u32)(k2 >> 32);
    r.w[6] = (fr_u32)k3; r.w[7] = (fr_u32)(k3 >> 32);
    return r;
}

extern "C" __global__ void fr_vec_add(fr_u64* out, const fr_u64* a, const fr_u64* b, long long n) {
    FR_GRID_LOOP(i, n) fr_store(out, i, fr_add(fr_load(a, i), fr_load(b, i)));
}

extern "C" __global__ void fr_vec_sub(fr_u64* out, const fr_u64* a, const fr_u64* b, long long n) {
    FR_GRID_LOOP(i, n) fr_store(out, i, fr_sub(fr_load(a, i), fr_load(b, i)));
}

extern "C" __global__ void fr_vec_mul(fr_u64* out, const fr_u64* a, const fr_u64* b, long long n) {
    FR_GRID_LOOP(i, n) fr_store(out, i, fr_mul(fr_load(a, i), fr_load(b, i)));
}

// out = a·b - c (the H quotient's pointwise step)
extern "C" __global__ void fr_vec_mul_sub(fr_u64* out, const fr_u64* a, const fr_u64* b,
                                        const fr_u64* c, long long n) {
    FR_GRID_LOOP(i, n) {
        fr_store(out, i, fr_sub(fr_mul(fr_load(a, i), fr_load(b, i)), fr_load(c, i)));
    }
}

// out = a·k for one constant k (Montgomery limbs k0..k3)
extern "C" __global__ void fr_vec_scale(fr_u64* out, const fr_u64* a, fr_u64 k0, fr_u64 k1,
                                      fr_u64 k2, fr_u64 k3, long long n) {
    const fr_t k = fr_from_u64x4(k0, k1, k2, k3);
    FR_GRID_LOOP(i, n) fr_store(out, i, fr_mul(fr_load(a, i), k));
}

// out[i] = a[i]·scale·base^(i + offset), from the two tables of fr_pow_lookup
extern "C" __global__ void fr_vec_scale_powers(fr_u64* out, const fr_u64* a, const fr_u64* pw_lo,
                                             const fr_u64* pw_hi, int pw_bits, long long offset,
                                             long long n) {
    FR_GRID_LOOP(i, n) {
        fr_t p = fr_pow_lookup(pw_lo, pw_hi, pw_bits, i + (fr_u64)offset);
        fr_store(out, i, fr_mul(fr_load(a, i), p));
    }
}

// out[i] = scale·base^i (twiddle tables)
extern "C" __global__ void fr_vec_powers(fr_u64* out, const fr_u64* pw_lo, const fr_u64* pw_hi,
                                       int pw_bits, long long n) {
    FR_GRID_LOOP(i, n) fr_store(out, i, fr_pow_lookup(pw_lo, pw_hi, pw_bits, i));
}

// 0 for zero, 1 for one, 2 otherwise (int8), as cuzk.field.fr.classify
extern "C" __global__ void fr_vec_classify(signed char* out, const fr_u64* a, long long n) {
    FR_GRID_LOOP(i, n) {
        fr_t x = fr_load(a, i);
        out[i] = fr_is_zero(x) ? 0 : (fr_is_one(x) ? 1 : 2);
    }
}

// --- the a·b = c check's random linear combination ------------------------------------------
// The sum of x over a warp's 32 lanes, in lane 0 (every lane must call it).
FR_FN fr_t fr_warp_sum(fr_t x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        fr_t y;
#pragma unroll
        for (int k = 0; k < 8; k++) y.w[k] = __shfl_down_sync(0xffffffffu, x.w[k], o);
        x = fr_add(x, y);
    }
    return x;
}

// The sum of x over a block of up to 1024 threads, in thread 0: each warp's sum, then one warp
// over those. Every thread of the block must call it.
FR_FN fr_t fr_block_sum(fr_t x) {
    __shared__ fr_t warp_sums[32];
    x = fr_warp_sum(x);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) x = fr_warp_sum(lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : fr_zero());
    return x;
}

// partials[block] = this block's share of Σ ρ^i·a[i]·b[i] (Σ ρ^i·a[i] when b is NULL), with
// ρ^i from the two tables of fr_pow_lookup. Launched with blockDim a multiple of 32.
extern "C" __global__ void fr_vec_rlc(fr_u64* partials, const fr_u64* a, const fr_u64* b,
                                    const fr_u64* pw_lo, const fr_u64* pw_hi, int pw_bits,
                                    long long n) {
    fr_t acc = fr_zero();
    FR_GRID_LOOP(i, n) {
        fr_t x = fr_load(a, i);
        if (b != nullptr) x = fr_mul(x, fr_load(b, i));
        acc = fr_add(acc, fr_mul(x, fr_pow_lookup(pw_lo, pw_hi, pw_bits, i)));
    }
    acc = fr_block_sum(acc);
    if (threadIdx.x == 0) fr_store(partials, blockIdx.x, acc);
}

// *equal = whether Σ p[j] = Σ q[j] over k partial sums (one block of a multiple of 32).
extern "C" __global__ void fr_vec_sums_equal(int* equal, const fr_u64* p, const fr_u64* q,
                                           long long k) {
    fr_t acc = fr_zero();
    for (long long j = threadIdx.x; j < k; j += blockDim.x)
        acc = fr_add(acc, fr_sub(fr_load(p, j), fr_load(q, j)));
    acc = fr_block_sum(acc);
    if (threadIdx.x == 0) *equal = fr_is_zero(acc) ? 1 : 0;
}
