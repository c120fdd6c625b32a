// Pippenger MSM kernels over BLS12-381 G1 (MSM_G2=0) or G2 (MSM_G2=1); driven by msm.py.
//
// Pipeline for m scalars, window c, W = ceil(256/c) windows, B = 2^(c-1) buckets per window:
//   msm_digits(count)   scalars from Montgomery form, signed c-bit digits; histogram of
//                       (window, |digit|) keys
//   (host)              offsets = exclusive scan of the histogram (a counting sort)
//   msm_digits(scatter) entries[offsets[key]++] = point index | sign << 31
//   (host)              seg_base: where each bucket's partial sums go
//   msm_accumulate      each thread adds a fixed-length chunk of the sorted entries into XYZZ
//                       partial sums, one per bucket the chunk touches (balanced whatever the
//                       bucket sizes)
//   msm_seg_reduce      a bucket's partials (one per chunk it spans) summed by a tree, F at a
//                       time, into its first slot (huge buckets stay parallel); one thread per
//                       chunk, since only a bucket that a chunk starts inside has partials to add
//   msm_reduce_level    Σ (b+1)·V_b per window by running sums over groups of gs buckets; the
//                       group totals are the buckets of the next level (weights g), so no
//                       thread multiplies by its group offset; each level's results are
//                       pre-scaled by its weight (a few doublings)
//   msm_sum_rows        tree reduction of all levels' results to one point per window
//   (an MSM in passes)  the same, with the buckets carried across the passes in place: each
//                       bucket's first partial sum is the carried bucket (slot_of), the
//                       buckets are reduced once at the end
// The host adds the W window sums with weights 2^(c·w) (Horner).
// msm_sum_affine adds gathered affine points (the scalars equal to one).
//
// Precomputed bases (msm.py GpuMsm.precompute): K copies of the n bases, copy j holding
// 2^(c·j)·P (msm_shift_copy doubles a copy c times, fixed_base.cu's fb_affine makes it
// affine). Window w then adds its digit's point from copy w mod K into the bucket row
// w / K, so only ceil(W/K) rows of buckets are reduced and the host's weights are 2^(c·K·row).
#include "grid.cuh"
#include "msm_group.cuh"
#include "scalar.cuh"

// The full additions (segment tree, bucket reduction, row sums) call curve.cuh's out-of-line
// add: inlining them measured no faster, and loading the accumulation's next point ahead of
// the current addition measured slower (bench/NOTES.md, "MSM v4").

// Field elements stored canonically -> Montgomery form, in place (count Fp elements).
extern "C" __global__ void msm_to_mont(u32* __restrict__ data, u64 count) {
    u64 i = global_thread();
    if (i >= count) return;
    fp_t a;
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) a.l[k] = data[i * FP_LIMBS + k];
    a = to_mont(a);
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) data[i * FP_LIMBS + k] = a.l[k];
}

// A block of zcash-uncompressed points (big-endian Fp elements, flags in the top three bits of
// the first byte, G2 coordinates c1 before c0) → the resident layout (little-endian limbs,
// x‖y, G2 c0 first, Montgomery form, the point at infinity as zeros). One thread per Fp
// element; a point whose flags are neither 0 nor "infinity" sets *bad to the smallest such
// point index (first_point + its index here), so the host checks one word per vector.
extern "C" __global__ void msm_from_zcash(const unsigned char* __restrict__ raw,
                                          u32* __restrict__ out, u64 elements, u64 first_point,
                                          unsigned long long* bad) {
    u64 i = global_thread();
    if (i >= elements) return;
    const int per_point = MSM_G2 ? 4 : 2;
    const u64 p = i / per_point;
    const int j = (int)(i % per_point);
    const int src = MSM_G2 ? (j ^ 1) : j;  // zcash writes c1 before c0
    const unsigned char* point = raw + p * (48 * per_point);
    const unsigned flags = point[0] & 0xE0u;
    fp_t a = fp_t::zero();
    if (flags == 0) {
        const unsigned char* e = point + 48 * src;
#pragma unroll
        for (int k = 0; k < FP_LIMBS; k++) {
            const unsigned char* w = e + 44 - 4 * k;
            a.l[k] = ((u32)w[0] << 24) | ((u32)w[1] << 16) | ((u32)w[2] << 8) | (u32)w[3];
        }
        a = to_mont(a);
    } else if (flags != 0x40u && j == 0) {
        atomicMin(bad, (unsigned long long)(first_point + p));
    }
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) out[i * FP_LIMBS + k] = a.l[k];
}

// scatter == 0: counts[key] += 1 for every non-zero digit.
// scatter != 0: entries[cursor[key]++] = point | sign.
// The point index is gather[i] when use_gather, else i; window w takes it from copy w % copies
// (copy_stride points per copy) into bucket row w / copies (copies = 1: every window its own
// row, the plain MSM). Scalars: m Montgomery-form Fr elements (4 u64 limbs each, < r < 2^255).
extern "C" __global__ void msm_digits(const u64* __restrict__ scalars, u32 m, u32 c, u32 nwin,
                                      const u32* __restrict__ gather, u32 use_gather,
                                      u32* __restrict__ counts, u32* __restrict__ entries,
                                      u32 scatter, u32 copies, u32 copy_stride) {
    u64 i = global_thread();
    if (i >= m) return;
    u32 s[8];
    load_scalar_words(scalars, i, s);
    const u32 point = use_gather ? gather[i] : (u32)i;
    const u32 nbuckets = 1u << (c - 1);
    u32 carry = 0;
    for (u32 w = 0; w < nwin; w++) {
        bool negative;
        const u32 mag = signed_digit(s, w, c, carry, negative);
        const u32 sign = negative ? SIGN_BIT : 0u;
        if (mag == 0) continue;
        const u32 key = (w / copies) * nbuckets + (mag - 1);
        if (scatter) {
            u32 pos = atomicAdd(&counts[key], 1u);
            entries[pos] = (point + (w % copies) * copy_stride) | sign;
        } else {
            atomicAdd(&counts[key], 1u);
        }
    }
}

// Blocks of 128 the accumulation must fit per SM (caps its registers): 3 for G1 (170 registers;
// with the paired Fp product, 4 blocks at 128 registers spill 208 bytes and measured 2 % slower,
// bench/NOTES.md "paired products"); G2 needs ~255.
#ifndef ACC_MIN_BLOCKS
#if MSM_G2
#define ACC_MIN_BLOCKS 1
#else
#define ACC_MIN_BLOCKS 3
#endif
#endif

// Where slot j of bucket k's partial sums lives (chunk offsets[k] / L + j holds its entries
// from there on). Plain (one pass): partials[seg_base[k] + j]. In place (an MSM in passes):
// slot 0 is the carried bucket itself, buckets[k], and the slots j >= 1 (only a bucket that
// spans several chunks has them) are partials[seg_base[k] + j - 1], seg_base then counting
// the slots past each bucket's first. The partial sums then take one slot per chunk at most,
// not one per bucket, and no pass copies its sums into the carried buckets.
__device__ __forceinline__ xyzz* slot_of(xyzz* partials, xyzz* buckets,
                                         const u32* __restrict__ seg_base, u32 k, u32 j,
                                         u32 in_place) {
    if (in_place) return j == 0 ? buckets + k : partials + (seg_base[k] + j - 1);
    return partials + (seg_base[k] + j);
}

// Thread t adds entries [t*L, min((t+1)*L, total)) where total = offsets[nkeys]. A bucket k's
// entries are [offsets[k], offsets[k+1]); its partial sum from chunk t goes to slot
// t - offsets[k] / L of bucket k (slot_of), and chunk_key[t] = the bucket holding entry t*L.
// In place, the chunk holding a bucket's first entry starts from the bucket's carried sum
// instead of infinity and writes the sum back there: adding the pass's sum to the carried one
// in a kernel of its own cost 79 of H's 1,216 ms in 22 passes, and copying it back after a
// seeded accumulation as much (bench/NOTES.md sessions 30 and 32).
extern "C" __global__ void __launch_bounds__(128, ACC_MIN_BLOCKS) msm_accumulate(
    const affine* __restrict__ bases, const u32* __restrict__ entries,
    const u32* __restrict__ offsets, const u32* __restrict__ seg_base, u32 nkeys, u32 L,
    u32 nchunks, xyzz* __restrict__ partials, u32* __restrict__ chunk_key, xyzz* buckets,
    u32 in_place) {
    u64 t = global_thread();
    if (t >= nchunks) return;
    const u32 total = offsets[nkeys];
    const u64 start = t * L;
    if (start >= total) return;
    const u32 end = (u32)(start + L < total ? start + L : total);
    // The bucket holding `start`: offsets[lo] <= start < offsets[lo + 1].
    u32 lo = 0, hi = nkeys;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (offsets[mid] <= start) lo = mid; else hi = mid;
    }
    u32 k = lo;
    chunk_key[t] = k;
    u32 bend = offsets[k + 1];
    xyzz acc = (in_place && offsets[k] == start) ? load_xyzz(buckets, k) : xyzz::inf();
    for (u32 e = (u32)start; e < end; e++) {
        if (e == bend) {
            store_xyzz(slot_of(partials, buckets, seg_base, k, (u32)t - offsets[k] / L, in_place),
                       0, acc);
            do { k++; } while (offsets[k + 1] <= e);
            bend = offsets[k + 1];
            acc = in_place ? load_xyzz(buckets, k) : xyzz::inf();  // bucket k starts at e, here
        }
        const u32 v = entries[e];
        affine q = load_affine(bases, v & ~SIGN_BIT);
        if (q.is_inf()) continue;
        if (v & SIGN_BIT) q = neg(q);
        acc = add_affine(acc, q);
    }
    store_xyzz(slot_of(partials, buckets, seg_base, k, (u32)t - offsets[k] / L, in_place), 0,
               acc);
}

// One level of the per-bucket tree over partial sums: slot j < n of bucket k (slot_of), with j
// a multiple of stride*F, adds the slots j + i*stride (0 < i < F) into itself. Only a bucket
// spanning n >= 2 chunks has any: chunk c0 + j (c0 = offsets[k] / L, 1 <= j < n) starts inside
// bucket k, so the thread of that chunk handles slot j, and the thread of chunk c0 + 1 slot 0.
// A thread per slot instead had a handful of active lanes in every warp (most buckets fit one
// chunk) and cost as much as an addition per slot. Levels with stride >= *max_seg (the most
// chunks any bucket spans) have nothing to do.
extern "C" __global__ void __launch_bounds__(128) msm_seg_reduce(
    xyzz* __restrict__ partials, const u32* __restrict__ chunk_key,
    const u32* __restrict__ offsets, const u32* __restrict__ seg_base, u32 nkeys, u32 L,
    u32 nchunks, u32 stride, u32 F, const u32* __restrict__ max_seg, xyzz* buckets,
    u32 in_place) {
    if (stride >= *max_seg) return;
    u64 t = global_thread();
    if (t >= nchunks || t * L >= offsets[nkeys]) return;
    const u32 k = chunk_key[t];
    const u32 j = (u32)t - offsets[k] / L;
    if (j == 0) return;  // chunk t starts bucket k
    const u32 s = j == 1 ? 0 : j;
    if (s % (stride * F) != 0) return;
    // Chunks of bucket k: in place seg_base counts the slots past the first.
    const u32 n = seg_base[k + 1] - seg_base[k] + (in_place ? 1u : 0u);
    if (s + stride >= n) return;
    xyzz* dst = slot_of(partials, buckets, seg_base, k, s, in_place);
    xyzz acc = load_xyzz(dst, 0);
    for (u32 i = 1; i < F; i++) {
        const u32 jj = s + i * stride;
        if (jj >= n) break;
        acc = add(acc, load_xyzz(slot_of(partials, buckets, seg_base, k, jj, in_place), 0));
    }
    store_xyzz(dst, 0, acc);
}

// Thread t = w * ngroups + g, for rows w < rows: over b in [g*gs, min((g+1)*gs, nb)),
// A = Σ (b - g*gs + 1)·V_b and T = Σ V_b, by running sums from the top bucket.
// Then Σ_b (b+1)·V_b = Σ_g A_g + gs·Σ_g g·T_g: the next level's buckets are T_1.. (weights
// 1..ngroups-1), its result scaled by gs. Outputs: out_t[t] = T, and 2^shift·A (the scale of
// this level) at out_a[w*a_stride + a_off + g], so that the A's of all levels add up in one
// tree. V_b = in[w*row_stride + col_off + b], or with use_seg the first partial of bucket
// k = w*nb + b (in = partials; empty buckets are zero).
extern "C" __global__ void __launch_bounds__(128) msm_reduce_level(
    const xyzz* __restrict__ in, u32 row_stride, u32 col_off, const u32* __restrict__ seg_base,
    u32 use_seg, u32 rows, u32 nb, u32 gs, u32 ngroups, xyzz* __restrict__ out_a, u32 a_stride,
    u32 a_off, u32 shift, xyzz* __restrict__ out_t) {
    u64 t = global_thread();
    if (t >= (u64)rows * ngroups) return;
    const u32 w = (u32)(t / ngroups), g = (u32)(t % ngroups);
    const u32 lo = g * gs, hi = lo + gs < nb ? lo + gs : nb;
    xyzz T = xyzz::inf(), R = xyzz::inf();
    for (u32 b = hi; b-- > lo;) {
        if (use_seg) {
            const u32 k = w * nb + b;
            const u32 s0 = seg_base[k];
            if (seg_base[k + 1] != s0) T = add(T, load_xyzz(in, s0));
        } else {
            T = add(T, load_xyzz(in, (u64)w * row_stride + col_off + b));
        }
        R = add(R, T);
    }
    for (u32 i = 0; i < shift; i++) R = dbl(R);
    store_xyzz(out_a, (u64)w * a_stride + a_off + g, R);
    store_xyzz(out_t, t, T);
}

// out[r * cols_out + j] = Σ_{i < K, j*K + i < cols_in} in[r * cols_in + j*K + i].
extern "C" __global__ void __launch_bounds__(128) msm_sum_rows(
    const xyzz* __restrict__ in, u32 rows, u32 cols_in, u32 K, xyzz* __restrict__ out,
    u32 cols_out) {
    u64 t = global_thread();
    if (t >= (u64)rows * cols_out) return;
    const u32 r = (u32)(t / cols_out), j = (u32)(t % cols_out);
    xyzz acc = xyzz::inf();
    for (u32 i = 0; i < K; i++) {
        u32 col = j * K + i;
        if (col >= cols_in) break;
        acc = add(acc, in[(u64)r * cols_in + col]);
    }
    out[t] = acc;
}

// out[t] = Σ bases[idx[e]] for e in [t*K, min((t+1)*K, m)): batch addition of scalar-one points.
extern "C" __global__ void __launch_bounds__(128) msm_sum_affine(
    const affine* __restrict__ bases, const u32* __restrict__ idx, u32 m, u32 K,
    xyzz* __restrict__ out) {
    u64 t = global_thread();
    const u64 start = t * K;
    if (start >= m) return;
    const u32 end = (u32)(start + K < m ? start + K : m);
    xyzz acc = xyzz::inf();
    for (u32 e = (u32)start; e < end; e++) {
        affine q = load_affine(bases, idx[e]);
        if (q.is_inf()) continue;
        acc = add_affine(acc, q);
    }
    out[t] = acc;
}

// out[i] = 2^c·in[i] for i < n (c doublings; infinity stays infinity): the next copy of the
// precomputed bases, before fb_affine makes it affine.
extern "C" __global__ void __launch_bounds__(128) msm_shift_copy(const affine* __restrict__ in,
                                                                xyzz* __restrict__ out, u64 n,
                                                                u32 c) {
    u64 i = global_thread();
    if (i >= n) return;
    const affine q = load_affine(in, (u32)i);
    if (q.is_inf()) {
        out[i] = xyzz::inf();
        return;
    }
    xyzz acc = dbl_affine(q);
    for (u32 k = 1; k < c; k++) acc = dbl(acc);
    out[i] = acc;
}
