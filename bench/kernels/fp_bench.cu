// Fp product-rate microbenchmark (bench/gpu_msm.py): the MSM never launches it, so it lives
// here, outside the package; the loader compiles it by path with the package's headers.
#include "curve.cuh"
#include "grid.cuh"

// A probe thread's two inputs (words t*24 .. t*24+24 of data, each < p) and its two outputs.
__device__ __forceinline__ void bench_load(const u32* data, u64 t, fp_t& x, fp_t& y) {
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) {
        x.l[k] = data[t * 24 + k];
        y.l[k] = data[t * 24 + 12 + k];
    }
}
__device__ __forceinline__ void bench_store(u32* data, u64 t, const fp_t& x, const fp_t& y) {
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) {
        data[t * 24 + k] = x.l[k];
        data[t * 24 + 12 + k] = y.l[k];
    }
}

// Fp multiplication throughput probe for the benchmark: two independent chains of `iters`
// products per thread (2 * iters multiplications), inputs data[t*24 .. t*24+24) (< p).
extern "C" __global__ void fp_bench_mul(u32* __restrict__ data, u32 nthreads, u32 iters) {
    u64 t = global_thread();
    if (t >= nthreads) return;
    fp_t x, y;
    bench_load(data, t, x, y);
    fp_t z = y, w = x;
    for (u32 i = 0; i < iters; i++) {
        x = x * y;
        z = z * w;
    }
    bench_store(data, t, x + z, y);
}
