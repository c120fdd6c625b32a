// A deferred witness made on the device (cuzk.r1cs.deferred): the host's values scattered into
// the gaps between runs, then every run of a recorded bit program (cuzk.r1cs.bitprog) executed
// by one thread per instance, writing each value as a Montgomery 0 or 1 straight into z.
//
// witness_place: value i of `vals` goes to z[dst[s] + i - src[s]] for the last segment s with
// src[s] <= i (segments sorted by src). It places the host values and, for a program the
// device may not run, values the host made.
//
// witness_bitprog: instance i reads its n_in input bits, runs the program's ops in order and
// writes value k to z[starts[i] + k]. Node values live in `scratch` node-major
// (scratch[node * m + i]): every thread runs the same op at the same time, so one op's loads
// and stores are coalesced across the warp, and the ops themselves are uniform loads.
#include "fr.cuh"
#include "grid.cuh"

extern "C" __global__ void witness_place(fr_u64* z, const fr_u64* vals, long long count,
                                         const long long* dst, const long long* src,
                                         long long segments) {
    for (long long i = (long long)global_thread(); i < count;
         i += (long long)gridDim.x * blockDim.x) {
        long long lo = 0, hi = segments - 1;
        while (lo < hi) {
            const long long mid = (lo + hi + 1) >> 1;
            if (src[mid] <= i) lo = mid; else hi = mid - 1;
        }
        const long long d = dst[lo] + (i - src[lo]);
        fr_store(z, (fr_u64)d, fr_load(vals, (fr_u64)i));
    }
}

extern "C" __global__ void witness_bitprog(fr_u64* z, const int* __restrict__ ops, int n_ops,
                                           const int* __restrict__ words, int n_in,
                                           const unsigned char* __restrict__ inputs,
                                           const long long* __restrict__ starts, long long m,
                                           unsigned char* scratch) {
    const long long i = (long long)global_thread();
    if (i >= m) return;
#define NODE(n) scratch[(long long)(n) * m + i]
#define LIT(l) (NODE((l) >> 1) ^ ((l) & 1))
    NODE(0) = 0;
    for (int j = 0; j < n_in; j++) NODE(1 + j) = inputs[i * n_in + j];
    const fr_t one = fr_one(), zero = fr_zero();
    const fr_u64 base = (fr_u64)starts[i];
    long long node = 1 + n_in;
    fr_u64 k = 0;
    for (int o = 0; o < n_ops; o++) {
        const int op = ops[4 * o], x = ops[4 * o + 1], y = ops[4 * o + 2], w = ops[4 * o + 3];
        if (op == 4) {  // ADD: the low w bits of the sum of y 32-bit words
            unsigned long long total = 0;
            for (int j = 0; j < 32 * y; j++) {
                const int l = words[x + j];
                total += (unsigned long long)LIT(l) << (j & 31);
            }
            for (int j = 0; j < w; j++, node++, k++) {
                const unsigned char bit = (total >> j) & 1;
                NODE(node) = bit;
                fr_store(z, base + k, bit ? one : zero);
            }
            continue;
        }
        const unsigned char xv = LIT(x), yv = LIT(y);
        unsigned char r;
        if (op == 0) r = xv ^ yv;
        else if (op == 1) r = xv & yv;
        else {
            const unsigned char zv = LIT(w);
            r = op == 2 ? ((xv & yv) ^ ((xv ^ 1) & zv)) : ((xv & yv) ^ (xv & zv) ^ (yv & zv));
        }
        NODE(node) = r;
        node++;
        fr_store(z, base + k, r ? one : zero);
        k++;
    }
#undef LIT
#undef NODE
}
