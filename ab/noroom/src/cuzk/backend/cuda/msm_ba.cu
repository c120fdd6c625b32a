// Batch-affine bucket accumulation over BLS12-381 G1 (MSM_G2=0) or G2 (MSM_G2=1); driven by
// GpuMsm (msm.py) with batch_affine on; the schedule and its host model are in msm_ba.py.
//
// A level is a bucket-sorted list of affine points, bucket k at positions [in_off[k],
// in_off[k+1]) (level 0: msm.cu's sorted entries, gathered from the bases with their signs).
// msm_ba_round makes the next level: task t of bucket k (out_off[k] <= t < out_off[k+1],
// j = t - out_off[k]) adds the level's points in_off[k] + 2j and + 2j + 1, or copies the first
// when it has no partner. Thread g takes tasks [g·K, g·K + K):
//   forward   each addition's denominator (x_b - x_a, or 2·y_a for a doubling) multiplied into
//             acc, the product before it kept in scratch[i·T + g] (T threads, coalesced)
//   block     1/acc of every thread of the block by a binary tree in shared memory (up-sweep
//             of products, one inversion of the root by thread 0, down-sweep): one inversion
//             per block of BA_BLOCK·K additions
//   backward  tasks in reverse: 1/d = inv·prefix, inv ·= d, then λ, x3 = λ² - x_a - x_b,
//             y3 = λ(x_a - x3) - y_a: 6 products per addition in all
// Exceptional pairs (an operand at infinity, P + (-P), P + P) are classified identically in
// both passes (ba_task) and take no part in the product chain except doublings.
// msm_ba_to_dense writes each bucket's single remaining point (or infinity) as XYZZ into the
// dense (window, bucket) array that msm.cu's msm_reduce_level reads.
#include "grid.cuh"
#include "msm_group.cuh"

// Threads per block (msm_ba.py's BA_BLOCK passes it) and blocks per SM the round kernel is
// register-capped for: 2 for G1 (128 registers; 146 uncapped would allow only 1 block of 256),
// 1 for G2 (255 registers).
#ifndef BA_BLOCK
#define BA_BLOCK 256
#endif
#ifndef BA_MIN_BLOCKS
#define BA_MIN_BLOCKS (MSM_G2 ? 1 : 2)
#endif
// Task kinds; msm_ba.py's COPY, ADD, DOUBLE, TAKE_B, INFINITY.
#define BA_COPY 0
#define BA_ADD 1
#define BA_DOUBLE 2
#define BA_TAKE_B 3
#define BA_INFINITY 4

// 1/a = a^(p-2) for a != 0 by a fixed 4-bit window: 380 squarings and 95 products (the
// exponent's 96 nibbles, the top one read from the table directly).
__device__ __noinline__ fp_t ba_fp_inv(fp_t a) {
    fp_t table[16];
    table[0] = fp_t::one();
    table[1] = a;
#pragma unroll 1
    for (int i = 2; i < 16; i++) table[i] = table[i - 1] * a;
    fp_t r = fp_t::one();
    bool started = false;
#pragma unroll 1
    for (int limb = FP_LIMBS - 1; limb >= 0; limb--) {
        const u32 e = fp_p(limb) - (limb == 0 ? 2u : 0u);  // p's low limb is odd and > 2
#pragma unroll 1
        for (int shift = 28; shift >= 0; shift -= 4) {
            if (started) {
                r = sqr(r);
                r = sqr(r);
                r = sqr(r);
                r = sqr(r);
            }
            const u32 nibble = (e >> shift) & 15u;
            if (nibble) {
                r = started ? r * table[nibble] : table[nibble];
                started = true;
            }
        }
    }
    return r;
}

__device__ __forceinline__ fp_t ba_inv(const fp_t& a) { return ba_fp_inv(a); }
// 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2).
__device__ __forceinline__ fp2_t ba_inv(const fp2_t& a) {
    const fp_t n = ba_fp_inv(a.c0 * a.c0 + a.c1 * a.c1);
    return {a.c0 * n, -(a.c1 * n)};
}

// Point `pos` of the level: gathered from the bases (level 0) or read from the level array.
__device__ __forceinline__ affine ba_load(const affine* __restrict__ bases,
                                          const u32* __restrict__ entries,
                                          const affine* __restrict__ level, u32 gathered,
                                          u32 pos) {
    if (!gathered) return load_affine(level, pos);
    const u32 v = entries[pos];
    affine q = load_affine(bases, v & ~SIGN_BIT);
    if (v & SIGN_BIT) q = neg(q);  // -(0, 0) = (0, 0): infinity stays infinity
    return q;
}

// The bucket of task t: out_off[k] <= t < out_off[k + 1].
__device__ __forceinline__ u32 ba_bucket(const u32* __restrict__ out_off, u32 nk, u32 t) {
    u32 lo = 0, hi = nk;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (out_off[mid] <= t) lo = mid; else hi = mid;
    }
    return lo;
}

// Task t's operands and kind; d is its denominator (ADD, DOUBLE only).
__device__ __forceinline__ int ba_task(const affine* __restrict__ bases,
                                       const u32* __restrict__ entries,
                                       const affine* __restrict__ level, u32 gathered,
                                       const u32* __restrict__ in_off,
                                       const u32* __restrict__ out_off, u32 k, u32 t,
                                       affine& a, affine& b, field_t& d) {
    const u32 pa = in_off[k] + 2 * (t - out_off[k]);
    a = ba_load(bases, entries, level, gathered, pa);
    if (pa + 1 >= in_off[k + 1]) return BA_COPY;
    b = ba_load(bases, entries, level, gathered, pa + 1);
    if (a.is_inf()) return BA_TAKE_B;
    if (b.is_inf()) return BA_COPY;
    d = b.x - a.x;
    if (!d.is_zero()) return BA_ADD;
    if (!(b.y - a.y).is_zero()) return BA_INFINITY;
    d = fp_dbl(a.y);  // never zero: the groups have odd order, so no point has y = 0
    return BA_DOUBLE;
}

// One round; launched with BA_BLOCK threads per block and 2·BA_BLOCK field elements of dynamic
// shared memory; threads past the last task still take part in the block's inversion tree.
extern "C" __global__ void __launch_bounds__(BA_BLOCK, BA_MIN_BLOCKS) msm_ba_round(const affine* __restrict__ bases,
                                        const u32* __restrict__ entries,
                                        const affine* __restrict__ level, u32 gathered,
                                        const u32* __restrict__ in_off,
                                        const u32* __restrict__ out_off, u32 nk, u32 K,
                                        affine* __restrict__ out, field_t* __restrict__ scratch) {
    extern __shared__ unsigned char ba_smem[];
    field_t* tree = reinterpret_cast<field_t*>(ba_smem);
    const u32 n = blockDim.x, tid = threadIdx.x;
    const u64 g = global_thread();
    const u64 T = (u64)gridDim.x * blockDim.x;
    const u32 ntasks = out_off[nk];
    const u64 first = g * K;
    const u32 count = first >= ntasks ? 0u : (u32)(first + K <= ntasks ? K : ntasks - first);

    field_t acc = field_t::one();
    affine a, b;
    field_t d;
    if (count) {
        u32 k = ba_bucket(out_off, nk, (u32)first);
        for (u32 i = 0; i < count; i++) {
            const u32 t = (u32)first + i;
            while (out_off[k + 1] <= t) k++;
            const int kind = ba_task(bases, entries, level, gathered, in_off, out_off, k, t, a, b, d);
            if (kind == BA_ADD || kind == BA_DOUBLE) {
                scratch[(u64)i * T + g] = acc;
                acc = acc * d;
            }
        }
    }

    // 1/acc for every thread of the block.
    tree[n + tid] = acc;
    __syncthreads();
    for (u32 s = n >> 1; s >= 1; s >>= 1) {
        if (tid < s) tree[s + tid] = tree[2 * (s + tid)] * tree[2 * (s + tid) + 1];
        __syncthreads();
    }
    if (tid == 0) tree[1] = ba_inv(tree[1]);
    __syncthreads();
    for (u32 s = 1; s < n; s <<= 1) {
        if (tid < s) {
            const u32 node = s + tid;
            const field_t inv = tree[node], left = tree[2 * node], right = tree[2 * node + 1];
            tree[2 * node] = inv * right;
            tree[2 * node + 1] = inv * left;
        }
        __syncthreads();
    }
    field_t inv = tree[n + tid];
    if (!count) return;

    u32 k = ba_bucket(out_off, nk, (u32)first + count - 1);
    for (u32 i = count; i-- > 0;) {
        const u32 t = (u32)first + i;
        while (out_off[k] > t) k--;
        const int kind = ba_task(bases, entries, level, gathered, in_off, out_off, k, t, a, b, d);
        affine r;
        if (kind == BA_COPY) {
            r = a;
        } else if (kind == BA_TAKE_B) {
            r = b;
        } else if (kind == BA_INFINITY) {
            r = {field_t::zero(), field_t::zero()};
        } else {
            const field_t inv_d = inv * scratch[(u64)i * T + g];
            inv = inv * d;
            field_t num;
            if (kind == BA_ADD) {
                num = b.y - a.y;
            } else {
                const field_t xx = sqr(a.x);
                num = fp_dbl(xx) + xx;
            }
            const field_t lambda = num * inv_d;
            r.x = sqr(lambda) - a.x - b.x;  // b.x = a.x for a doubling
            r.y = lambda * (a.x - r.x) - a.y;
        }
        out[t] = r;
    }
}

// dense[key0 + k] = bucket k's point (its level holds at most one) as XYZZ, else infinity.
extern "C" __global__ void msm_ba_to_dense(const affine* __restrict__ bases,
                                           const u32* __restrict__ entries,
                                           const affine* __restrict__ level, u32 gathered,
                                           const u32* __restrict__ off, u32 nk, u64 key0,
                                           xyzz* __restrict__ dense) {
    const u64 k = global_thread();
    if (k >= nk) return;
    xyzz r = xyzz::inf();
    if (off[k + 1] > off[k]) r = from_affine(ba_load(bases, entries, level, gathered, off[k]));
    dense[key0 + k] = r;
}
