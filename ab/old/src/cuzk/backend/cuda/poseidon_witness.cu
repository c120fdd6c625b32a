// Deferred Poseidon hashes (cuzk.gadgets.poseidon.program) made on the device: one thread per
// hash reads its preimage (arity Montgomery elements, pre[i·arity …]) and writes the legacy
// circuit's values for it straight into z at starts[i] onwards (poseidon.cuh). The constant
// tables are uploaded once per (arity, strength, tag) by cuzk.backend.cuda.witness; every
// thread reads the same entries at the same time, so they stay in cache.
#include "poseidon.cuh"
#include "grid.cuh"

extern "C" __global__ void poseidon_witness(fr_u64* z, const fr_u64* __restrict__ pre,
                                            const long long* __restrict__ starts, long long m,
                                            int t, const fr_u64* __restrict__ tag,
                                            const fr_u64* __restrict__ crc,
                                            const fr_u64* __restrict__ pre_sparse,
                                            const fr_u64* __restrict__ w_hat,
                                            const fr_u64* __restrict__ v_rest,
                                            const fr_u64* __restrict__ mds, int half,
                                            int partial) {
    const long long i = (long long)global_thread();
    if (i >= m || t > POSEIDON_MAX_T) return;
    fr_t st[POSEIDON_MAX_T], nx[POSEIDON_MAX_T];
    poseidon_start(st, pre + (fr_u64)i * (fr_u64)(t - 1) * 4, t, fr_load(tag, 0), crc);
    poseidon_record(st, nx, t, crc, pre_sparse, w_hat, v_rest, mds, half, partial, z,
                    (fr_u64)starts[i]);
}
