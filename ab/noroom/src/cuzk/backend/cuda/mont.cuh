// Montgomery product for N 32-bit words with every 32×32 product fused into one instruction.
//
// Why: sm_90 has no IMAD with a carry-out, so the classic CIOS written as separate lo and hi
// carry chains (mad.lo.cc over a row, then madc.hi.cc over it) costs an IMAD plus an IADD3.X
// per half-product. When the low and high halves of the same product are added to two
// adjacent words back to back (mad.lo.cc x; madc.hi.cc x+1), ptxas emits one
// IMAD.WIDE.U32(.X) that takes and gives the carry: a whole product and its carry for one
// instruction (checked in the SASS; bench/NOTES.md "paired products").
//
// The running value T is kept as two accumulators, T = E + 2^32·O: products a_j·b_i with even
// j land on the word pairs (j, j+1) of E, odd ones on the pairs (j-1, j) of O, so each is one
// uninterrupted chain. Reduction adds m·mod the same way (m from E's low word, which is T's).
// Dividing by 2^32 after a row needs no shifting: the next row's E is O plus the single word
// E[1], and its O is E[2..N]; the one carry of O[0] + E[1] belongs at bit 32 of T, which is
// bit 0 of the new O, so it rides in as the carry-in of the next row's odd chain.
//
// The includer defines the carry primitives (add_cc, addc_cc, addc, sub_cc, subc_cc, subc,
// mad_lo_cc, madc_lo_cc, madc_hi_cc) for its word type and MONT_FN; fr.cuh and fp.cuh both do,
// and both have host models of them, so this runs under a host compiler too.
// Requires 2·mod < 2^(32N) and inputs < mod; the output is < mod.
#pragma once

// (hi, lo) += a·b (+ carry in), carry out: both halves in one asm statement, which is what
// ptxas needs to see to fuse them (as two statements it emits IMAD + IMAD.HI + IADD3.X).
#if defined(__CUDA_ARCH__)
MONT_FN void mont_mad_wide_cc(unsigned int& lo, unsigned int& hi, unsigned int a, unsigned int b) {
    asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi) : "r"(a), "r"(b));
}
MONT_FN void mont_madc_wide_cc(unsigned int& lo, unsigned int& hi, unsigned int a, unsigned int b) {
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi) : "r"(a), "r"(b));
}
#else
MONT_FN void mont_mad_wide_cc(unsigned int& lo, unsigned int& hi, unsigned int a, unsigned int b) {
    lo = mad_lo_cc(a, b, lo);
    hi = madc_hi_cc(a, b, hi);
}
MONT_FN void mont_madc_wide_cc(unsigned int& lo, unsigned int& hi, unsigned int a, unsigned int b) {
    lo = madc_lo_cc(a, b, lo);
    hi = madc_hi_cc(a, b, hi);
}
#endif

template <int N>
MONT_FN void mont_mul_paired(unsigned int (&r)[N], const unsigned int (&a)[N],
                             const unsigned int (&b)[N], const unsigned int (&mod)[N],
                             unsigned int n0) {
    typedef unsigned int w32;
    typedef unsigned long long w64;
    w32 e[N + 1], o[N + 1];
    // Row 0 on empty accumulators: whole products, no carries (the pairs do not overlap).
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        const w64 p = (w64)a[j] * b[0];
        e[j] = (w32)p;
        e[j + 1] = (w32)(p >> 32);
    }
#pragma unroll
    for (int j = 1; j < N; j += 2) {
        const w64 p = (w64)a[j] * b[0];
        o[j - 1] = (w32)p;
        o[j] = (w32)(p >> 32);
    }
    e[N] = 0;
    o[N] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (i > 0) {
            // T /= 2^32 (see the header); the odd chain takes the merge's carry.
            w32 ne[N + 1], no[N + 1];
#pragma unroll
            for (int k = 0; k <= N; k++) ne[k] = o[k];
#pragma unroll
            for (int k = 0; k + 2 <= N; k++) no[k] = e[k + 2];
            no[N - 1] = 0;
            no[N] = 0;
            ne[0] = add_cc(o[0], e[1]);
            const w32 bi = b[i];
#pragma unroll
            for (int j = 1; j < N; j += 2) {
                mont_madc_wide_cc(no[j - 1], no[j], a[j], bi);
            }
            no[N] = addc(no[N], 0u);
            mont_mad_wide_cc(ne[0], ne[1], a[0], bi);
#pragma unroll
            for (int j = 2; j < N; j += 2) {
                mont_madc_wide_cc(ne[j], ne[j + 1], a[j], bi);
            }
            ne[N] = addc(ne[N], 0u);
#pragma unroll
            for (int k = 0; k <= N; k++) {
                e[k] = ne[k];
                o[k] = no[k];
            }
        }
        // T += m·mod with m chosen so T's low word (E's) becomes zero.
        const w32 m = e[0] * n0;
        mont_mad_wide_cc(e[0], e[1], m, mod[0]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            mont_madc_wide_cc(e[j], e[j + 1], m, mod[j]);
        }
        e[N] = addc(e[N], 0u);
        mont_mad_wide_cc(o[0], o[1], m, mod[1]);
#pragma unroll
        for (int j = 3; j < N; j += 2) {
            mont_madc_wide_cc(o[j - 1], o[j], m, mod[j]);
        }
        o[N] = addc(o[N], 0u);
    }
    // T = O + E/2^32 < 2·mod < 2^(32N): N words, then one conditional subtraction.
    w32 t[N], d[N];
    t[0] = add_cc(o[0], e[1]);
#pragma unroll
    for (int k = 1; k < N; k++) t[k] = addc_cc(o[k], e[k + 1]);
    d[0] = sub_cc(t[0], mod[0]);
#pragma unroll
    for (int k = 1; k < N; k++) d[k] = subc_cc(t[k], mod[k]);
    const w32 borrow = subc(0u, 0u);  // all ones when t < mod
#pragma unroll
    for (int k = 0; k < N; k++) r[k] = borrow ? t[k] : d[k];
}
