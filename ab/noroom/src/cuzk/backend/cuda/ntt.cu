// Radix-2 NTT passes over Fr in shared memory (bellperson's domain conventions, see ntt.py).
//
// A transform of m = 2^L points is a few passes; each pass runs k consecutive radix-2 stages.
// The stages of one pass touch index bits R .. R+k-1 only, so the array splits into independent
// groups of 2^k points: i(t, group) = hi·2^(R+k) + t·2^R + lo (t < 2^k). A block loads G = 2^gg
// groups into shared memory (tile = G·2^k points, t-major: position t·G + j), runs the k stages
// with a barrier between them, and writes the tile back. Groups of one block share hi and have
// consecutive lo when R > 0 (so each t row is G contiguous elements in device memory); when
// R = 0 they are whole contiguous runs of 2^k points.
//
// DIF (Gentleman-Sande) passes take natural order to bit-reversed order, stages from the top bit
// down; DIT (Cooley-Tukey) passes take bit-reversed order to natural, bottom bit up. Both use
// the butterfly twiddle ω^e, e = 2^(L-1-b)·(i mod 2^b) for the pair bit b, read from a table
// tw[j] = ω_T^j (j < 2^(LT-1)) of a domain 2^LT ≥ 2^L at index e·2^(LT-L). Inverse transforms
// use ω^-e = -ω^(m/2-e) and fold the sign into the butterfly (no extra work). With tw_bits > 0
// the table is two smaller ones, ω_T^j = tw[j mod 2^tw_bits]·tw_hi[j >> tw_bits]: one more
// product per butterfly for tables of 2^tw_bits + 2^(LT-1-tw_bits) entries instead of 2^(LT-1)
// (2 GiB at 2^27, what a device under a memory cap cannot spare). In a stage whose exponents
// are multiples of 2^tw_bits (e_shift + tw_shift ≥ tw_bits: 20 of the 26 stages of 2^27 with a
// 2^20-entry tw_hi) the low factor is tw[0] = 1, so the stage reads tw_hi alone, no product.
//
// Loads and stores can also: zero-pad the source beyond n_src, permute by bit reversal (the
// out-of-place first or last pass), multiply by scale·base^idx from two small tables (coset
// shifts and 1/m), compute a·b - c from three sources (the H quotient), or scale by a constant.
#include "fr.cuh"

#define NTT_LOAD_BITREV 1
#define NTT_STORE_BITREV 2
#define NTT_LOAD_POW 4
#define NTT_STORE_POW 8
#define NTT_POW_BITREV 16
#define NTT_LOAD_MULSUB 32
#define NTT_STORE_CONST 64

FR_FN fr_u32 ntt_brev(fr_u32 x, int L) { return fr_brev(x) >> (32 - L); }

FR_FN fr_t sm_get(const uint4* sm, fr_u32 tile, fr_u32 pos) {
    uint4 lo = sm[pos], hi = sm[tile + pos];
    fr_t r;
    r.w[0] = lo.x; r.w[1] = lo.y; r.w[2] = lo.z; r.w[3] = lo.w;
    r.w[4] = hi.x; r.w[5] = hi.y; r.w[6] = hi.z; r.w[7] = hi.w;
    return r;
}

FR_FN void sm_put(uint4* sm, fr_u32 tile, fr_u32 pos, const fr_t& a) {
    uint4 lo, hi;
    lo.x = a.w[0]; lo.y = a.w[1]; lo.z = a.w[2]; lo.w = a.w[3];
    hi.x = a.w[4]; hi.y = a.w[5]; hi.z = a.w[6]; hi.w = a.w[7];
    sm[pos] = lo;
    sm[tile + pos] = hi;
}

template <bool DIT, bool INV>
FR_FN void ntt_pass(fr_u64* dst, const fr_u64* src, const fr_u64* src_b, const fr_u64* src_c,
                    long long n_src, const fr_u64* tw, const fr_u64* tw_hi, int tw_bits,
                    int tw_shift, const fr_u64* pw_lo, const fr_u64* pw_hi, int pw_bits,
                    const fr_u64* cst, int L, int R, int k, int g, int flags) {
    FR_DYN_SMEM(uint4, sm);
    const int q = L - k;                  // bits that number the groups
    const int gg = g < q ? g : q;         // log2(groups per block)
    const fr_u32 K = 1u << k;
    const fr_u32 G = 1u << gg;
    const fr_u32 tile = K << gg;
    const fr_u32 tb = blockIdx.x;
    const bool spaced = (flags & (NTT_LOAD_BITREV | NTT_STORE_BITREV)) != 0;
    // R > 0: one hi, G consecutive lo; R = 0: G groups (spaced so that their bit-reversed
    // images are contiguous when this pass permutes).
    const fr_u32 lo_base = R > 0 ? ((tb & ((1u << (R - gg)) - 1u)) << gg) : 0u;
    const fr_u32 hi_base = R > 0 ? (tb >> (R - gg)) : 0u;
    const bool load_jfast = R > 0 || (flags & NTT_LOAD_BITREV);
    const bool store_jfast = R > 0 || (flags & NTT_STORE_BITREV);

    // index of point t of group j
#define NTT_INDEX(t, j)                                                                   \
    (R > 0 ? ((hi_base << (R + k)) | ((t) << R) | (lo_base | (j)))                         \
           : (((spaced ? (tb | ((j) << (q - gg))) : ((tb << gg) | (j))) << k) | (t)))

    for (fr_u32 e = threadIdx.x; e < tile; e += blockDim.x) {
        fr_u32 t, j;
        if (load_jfast) {
            t = e >> gg;
            j = e & (G - 1u);
        } else {
            j = e >> k;
            t = e & (K - 1u);
        }
        const fr_u32 i = NTT_INDEX(t, j);
        const fr_u32 si = (flags & NTT_LOAD_BITREV) ? ntt_brev(i, L) : i;
        fr_t x;
        if ((long long)si < n_src) {
            x = fr_load(src, si);
            if (flags & NTT_LOAD_MULSUB) x = fr_sub(fr_mul(x, fr_load(src_b, si)), fr_load(src_c, si));
            if (flags & NTT_LOAD_POW) {
                const fr_u32 pi = (flags & NTT_POW_BITREV) ? ntt_brev(si, L) : si;
                x = fr_mul(x, fr_pow_lookup(pw_lo, pw_hi, pw_bits, pi));
            }
        } else {
            x = fr_zero();
        }
        sm_put(sm, tile, t * G + j, x);
    }
    __syncthreads();

    const fr_u32 half_tile = tile >> 1;
    const fr_u32 half_m = 1u << (L - 1);
    for (int u = 0; u < k; u++) {
        const int bit = DIT ? u : (k - 1 - u);
        const int P = bit + gg;  // the pair bit's position in the tile (t-major)
        const fr_u32 lowmask = (1u << P) - 1u;
        const int e_shift = L - 1 - R - bit;
        // every j of this stage is a multiple of 2^(e_shift + tw_shift): uniform per stage
        const bool hi_only = tw_bits > 0 && e_shift + tw_shift >= tw_bits;
        if (R == 0 && bit == 0) {
            // pair bit 0 of the array: every twiddle is ω^0 = 1, so no product (own loop, so the
            // general one below keeps its registers)
            for (fr_u32 b = threadIdx.x; b < half_tile; b += blockDim.x) {
                const fr_u32 x = ((b >> P) << (P + 1)) | (b & lowmask);
                const fr_u32 y = x | (1u << P);
                const fr_t a = sm_get(sm, tile, x);
                const fr_t c = sm_get(sm, tile, y);
                sm_put(sm, tile, x, fr_add(a, c));
                sm_put(sm, tile, y, fr_sub(a, c));
            }
            __syncthreads();
            continue;
        }
        for (fr_u32 b = threadIdx.x; b < half_tile; b += blockDim.x) {
            const fr_u32 x = ((b >> P) << (P + 1)) | (b & lowmask);
            const fr_u32 y = x | (1u << P);
            const fr_u32 t = x >> gg;
            const fr_u32 lo = R > 0 ? (lo_base | (x & (G - 1u))) : 0u;
            const fr_u32 tm = t & ((1u << bit) - 1u);
            const fr_u32 e = ((tm << R) | lo) << e_shift;
            const bool neg = INV && e != 0;
            const fr_u32 ti = neg ? half_m - e : e;
            const fr_u64 j = (fr_u64)ti << tw_shift;
            const fr_t w = tw_bits == 0 ? fr_load(tw, j)
                           : hi_only    ? fr_load(tw_hi, j >> tw_bits)
                                        : fr_pow_lookup(tw, tw_hi, tw_bits, j);
            const fr_t a = sm_get(sm, tile, x);
            const fr_t c = sm_get(sm, tile, y);
            fr_t X, Y;
            if (DIT) {
                const fr_t v = fr_mul(c, w);
                if (neg) {
                    X = fr_sub(a, v);
                    Y = fr_add(a, v);
                } else {
                    X = fr_add(a, v);
                    Y = fr_sub(a, v);
                }
            } else {
                X = fr_add(a, c);
                const fr_t d = neg ? fr_sub(c, a) : fr_sub(a, c);
                Y = fr_mul(d, w);
            }
            sm_put(sm, tile, x, X);
            sm_put(sm, tile, y, Y);
        }
        __syncthreads();
    }

    for (fr_u32 e = threadIdx.x; e < tile; e += blockDim.x) {
        fr_u32 t, j;
        if (store_jfast) {
            t = e >> gg;
            j = e & (G - 1u);
        } else {
            j = e >> k;
            t = e & (K - 1u);
        }
        const fr_u32 i = NTT_INDEX(t, j);
        const fr_u32 di = (flags & NTT_STORE_BITREV) ? ntt_brev(i, L) : i;
        fr_t x = sm_get(sm, tile, t * G + j);
        if (flags & NTT_STORE_POW) {
            const fr_u32 pi = (flags & NTT_POW_BITREV) ? ntt_brev(di, L) : di;
            x = fr_mul(x, fr_pow_lookup(pw_lo, pw_hi, pw_bits, pi));
        }
        if (flags & NTT_STORE_CONST) x = fr_mul(x, fr_load(cst, 0));
        fr_store(dst, di, x);
    }
#undef NTT_INDEX
}

// NTT_MIN_BLOCKS > 0 caps the pass kernels' registers so that many 256-thread blocks fit per SM
// (4 → 64 registers); 0 leaves the choice to ptxas.
#ifndef NTT_MIN_BLOCKS
#define NTT_MIN_BLOCKS 0
#endif
#if NTT_MIN_BLOCKS > 0
#define NTT_BOUNDS __launch_bounds__(256, NTT_MIN_BLOCKS)
#else
#define NTT_BOUNDS
#endif

#define NTT_KERNEL(name, DIT, INV)                                                          \
    extern "C" __global__ void NTT_BOUNDS name(fr_u64* dst, const fr_u64* src, const fr_u64* src_b, const fr_u64* src_c,       \
             long long n_src, const fr_u64* tw, const fr_u64* tw_hi, int tw_bits,            \
             int tw_shift, const fr_u64* pw_lo, const fr_u64* pw_hi, int pw_bits,             \
             const fr_u64* cst, int L, int R, int k, int g, int flags) {                      \
        ntt_pass<DIT, INV>(dst, src, src_b, src_c, n_src, tw, tw_hi, tw_bits, tw_shift,      \
                           pw_lo, pw_hi, pw_bits, cst, L, R, k, g, flags);                   \
    }

NTT_KERNEL(ntt_dif_fwd, false, false)
NTT_KERNEL(ntt_dif_inv, false, true)
NTT_KERNEL(ntt_dit_fwd, true, false)
NTT_KERNEL(ntt_dit_inv, true, true)
