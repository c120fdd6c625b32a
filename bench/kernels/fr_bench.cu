// Fr product-rate microbenchmarks (bench/gpu.py, and their correctness test in
// tests/backend/test_cuda_fr.py): the prover never launches them, so they live here, outside
// the package; the loader compiles them by path with the package's headers.
#include "fr.cuh"
#include "grid.cuh"

#define FR_GRID_LOOP(i, n) \
    for (fr_u64 i = global_thread(); i < (fr_u64)(n); i += (fr_u64)blockDim.x * gridDim.x)

// --- the plain 64-bit-limb version (the anchor floor); what fr_bench_mul64 measures -------
FR_FN fr_u64 fr_mulhi64(fr_u64 a, fr_u64 b) {
#if defined(__CUDA_ARCH__)
    return __umul64hi(a, b);
#else
    return (fr_u64)(((unsigned __int128)a * b) >> 64);
#endif
}

FR_FN fr_t fr_mul64(const fr_t& a32, const fr_t& b32) {
    const fr_u64 N[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull, 0x3339d80809a1d805ull,
                         0x73eda753299d7d48ull};
    const fr_u64 INV = 0xfffffffeffffffffull;
    fr_u64 a[4], b[4], t[6];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        a[i] = (fr_u64)a32.w[2 * i] | ((fr_u64)a32.w[2 * i + 1] << 32);
        b[i] = (fr_u64)b32.w[2 * i] | ((fr_u64)b32.w[2 * i + 1] << 32);
    }
#pragma unroll
    for (int i = 0; i < 6; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        fr_u64 c = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            fr_u64 lo = a[j] * b[i], hi = fr_mulhi64(a[j], b[i]);
            lo += t[j];
            hi += lo < t[j];
            lo += c;
            hi += lo < c;
            t[j] = lo;
            c = hi;
        }
        fr_u64 s = t[4] + c;
        t[5] = s < c;
        t[4] = s;
        fr_u64 m = t[0] * INV;
        c = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            fr_u64 lo = m * N[j], hi = fr_mulhi64(m, N[j]);
            lo += t[j];
            hi += lo < t[j];
            lo += c;
            hi += lo < c;
            t[j] = lo;
            c = hi;
        }
        s = t[4] + c;
        t[5] += s < c;
        t[4] = s;
#pragma unroll
        for (int j = 0; j < 5; j++) t[j] = t[j + 1];
    }
    fr_u64 d[4], br = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        fr_u64 x = t[j] - N[j];
        fr_u64 b1 = t[j] < N[j];
        fr_u64 y = x - br;
        fr_u64 b2 = x < br;
        d[j] = y;
        br = b1 | b2;
    }
    bool keep = br && !t[4];
    fr_t r;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        fr_u64 v = keep ? t[i] : d[i];
        r.w[2 * i] = (fr_u32)v;
        r.w[2 * i + 1] = (fr_u32)(v >> 32);
    }
    return r;
}

// Microbenchmarks: each thread runs FR_BENCH_CHAINS independent chains x_c ← x_c·y for iters
// rounds (FR_BENCH_CHAINS·iters multiplications per thread); out[i] = Σ_c x_c keeps them live.
#ifndef FR_BENCH_CHAINS
#define FR_BENCH_CHAINS 4
#endif

#define FR_BENCH_KERNEL(name, MUL)                                                         \
    extern "C" __global__ void name(fr_u64* out, const fr_u64* a, int iters, long long n) {    \
        FR_GRID_LOOP(i, n) {                                                                   \
            fr_t y = fr_load(a, i);                                                            \
            fr_t x[FR_BENCH_CHAINS];                                                           \
            _Pragma("unroll") for (int c = 0; c < FR_BENCH_CHAINS; c++)                        \
                x[c] = fr_load(a, (i + c + 1) % (fr_u64)n);                                    \
            for (int it = 0; it < iters; it++) {                                               \
                _Pragma("unroll") for (int c = 0; c < FR_BENCH_CHAINS; c++) x[c] = MUL(x[c], y); \
            }                                                                                  \
            fr_t s = x[0];                                                                     \
            _Pragma("unroll") for (int c = 1; c < FR_BENCH_CHAINS; c++) s = fr_add(s, x[c]);   \
            fr_store(out, i, s);                                                               \
        }                                                                                      \
    }

FR_BENCH_KERNEL(fr_bench_mul, fr_mul)
FR_BENCH_KERNEL(fr_bench_mul_eo, fr_mul_eo)
FR_BENCH_KERNEL(fr_bench_mul_paired, fr_mul_paired)
FR_BENCH_KERNEL(fr_bench_mul64, fr_mul64)
