// One Poseidon hash recording the values neptune's legacy circuit allocates, in its order: the
// device twin of cuzk.gadgets.poseidon._kernels (_start, _permute with record), which is the
// CPU model it is checked against (tests/backend/test_poseidon_host.py builds this header for
// the host; the GPU tests compare whole witnesses).
//
// Schedule (neptune's OptimizedStatic): state [tag, m_1, …, m_a] plus the first compressed
// round constants; `half` full rounds (S-box x^5 and post-add on every element, then the MDS
// matrix, the last of them through pre_sparse); `partial` rounds (one S-box, a sparse matrix
// w_hat / v_rest); half − 1 full rounds; a last full round without constants. Recorded per
// S-box: its input (not in the first round), x², x⁴ and the output; the tag's first S-box is
// a constant and records nothing; finally the digest, state[1]. Elements are Montgomery
// (fr.cuh), the constant tables (n, 4) FrVecs as the CPU kernel reads them.
#pragma once
#include "fr.cuh"

// Widest state supported: arity 16 (Filecoin uses 2, 4, 8 and 11). Wider arities are made on
// the host (cuzk.backend.cuda.witness refuses them).
#define POSEIDON_MAX_T 17

// The starting state: tag and preimage (pre[0..t-2]) plus crc[0..t-1].
FR_FN void poseidon_start(fr_t* st, const fr_u64* pre, int t, const fr_t& tag,
                          const fr_u64* crc) {
    st[0] = fr_add(tag, fr_load(crc, 0));
    for (int i = 1; i < t; i++) st[i] = fr_add(fr_load(pre, (fr_u64)(i - 1)), fr_load(crc, (fr_u64)i));
}

// The permutation on `st` (pre-adds applied), writing every recorded value to out[base + k];
// returns the count (the circuit's constraint count for this arity).
FR_FN int poseidon_record(fr_t* st, fr_t* nx, int t, const fr_u64* crc,
                          const fr_u64* pre_sparse, const fr_u64* w_hat, const fr_u64* v_rest,
                          const fr_u64* mds, int half, int partial, fr_u64* out, fr_u64 base) {
    const int nrounds = 2 * half + partial;
    fr_u64 off = (fr_u64)t;
    fr_u64 k = 0;
    for (int rnd = 0; rnd < nrounds; rnd++) {
        const bool full = rnd < half || rnd >= half + partial;
        const bool last = rnd == nrounds - 1;
        const int width = full ? t : 1;
        for (int i = 0; i < width; i++) {
            const fr_t x = st[i];
            const fr_t x2 = fr_sqr(x);
            const fr_t x4 = fr_sqr(x2);
            fr_t y = fr_mul(x4, x);
            if (!last) y = fr_add(y, fr_load(crc, off + (fr_u64)i));
            if (rnd > 0 || i > 0) {
                if (rnd > 0) fr_store(out, base + k++, x);
                fr_store(out, base + k++, x2);
                fr_store(out, base + k++, x4);
                fr_store(out, base + k++, y);
            }
            st[i] = y;
        }
        if (!last) off += (fr_u64)width;
        // The linear layer.
        if (rnd == half - 1) {
            for (int j = 0; j < t; j++) {
                fr_t acc = fr_zero();
                for (int i = 0; i < t; i++)
                    acc = fr_add(acc, fr_mul(fr_load(pre_sparse, (fr_u64)(i * t + j)), st[i]));
                nx[j] = acc;
            }
        } else if (rnd >= half && rnd < half + partial) {
            const int s = rnd - half;
            fr_t acc = fr_zero();
            for (int i = 0; i < t; i++)
                acc = fr_add(acc, fr_mul(fr_load(w_hat, (fr_u64)(s * t + i)), st[i]));
            nx[0] = acc;
            for (int j = 1; j < t; j++)
                nx[j] = fr_add(st[j], fr_mul(fr_load(v_rest, (fr_u64)(s * (t - 1) + j - 1)), st[0]));
        } else {
            for (int i = 0; i < t; i++) {
                fr_t acc = fr_zero();
                for (int j = 0; j < t; j++)
                    acc = fr_add(acc, fr_mul(fr_load(mds, (fr_u64)(i * t + j)), st[j]));
                nx[i] = acc;
            }
        }
        for (int i = 0; i < t; i++) st[i] = nx[i];
    }
    fr_store(out, base + k++, st[1]);
    return (int)k;
}
