// Fr product-rate microbenchmarks (bench/gpu.py, and their correctness test in
// tests/backend/test_cuda_fr.py): the prover never launches them, so they live here, outside
// the package; the loader compiles them by path with the package's headers.
#include "fr.cuh"
#include "grid.cuh"

#define FR_GRID_LOOP(i, n) \
    for (fr_u64 i = global_thread(); i < (fr_u64)(n); i += (fr_u64)blockDim.x * gridDim.x)

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
