// Fr (BLS12-381 scalar field) Montgomery arithmetic for the device.
//
// r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001, Montgomery radix
// R = 2^256: exactly the CPU's FrVec form (cuzk.field.fr), so an (n, 4) uint64 array is the
// device layout unchanged (AoS: element i is 32 contiguous bytes, eight little-endian 32-bit
// words). Elements are always fully reduced (< r) on entry and exit of every function.
//
// Multiplication is CIOS over eight 32-bit words (r's low word is 1, so -r^-1 mod 2^32 =
// 0xffffffff, m = -t0 and m·r0 = m); the running value stays below 2r (r < 2^255), so no round
// needs a tenth word and one conditional subtraction finishes. Two versions were measured (see
// bench/NOTES.md "CUDA Fr/NTT" and "Paired products"); fr_mul is the paired one:
//   fr_mul_eo     whole products (IMAD.WIDE.U32) added by even/odd add.cc chains (456 SASS
//                 instructions, 4.0·10^10 mul/s),
//   fr_mul_paired whole products with their carries, IMAD.WIDE.U32.X (248, 5.6·10^10; mont.cuh).
// sm_90 has no IMAD with a carry-out unless both halves of one product are added back to back,
// which is what the paired product arranges; eo pays two IADD3(.X) per product. (PTX lo/hi
// chains at 608 instructions and 64-bit carries in C at 536 were measured and removed.)
//
// Off the device (__CUDA_ARCH__ undefined) the carry primitives have a portable C++ version
// with an explicit carry flag, so the same code can be checked on a host compiler.
#pragma once

typedef unsigned int fr_u32;
typedef unsigned long long fr_u64;

#ifndef FR_FN
#define FR_FN __device__ __forceinline__
#endif

// Dynamic shared memory declaration; overridable so the kernels can be hosted elsewhere.
#ifndef FR_DYN_SMEM
#define FR_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

struct fr_t {
    fr_u32 w[8];
};

// r, 2^256 mod r (Montgomery one) and r - (2^256 mod r) (Montgomery minus one).
#define FR_N0 0x00000001u
#define FR_N1 0xffffffffu
#define FR_N2 0xfffe5bfeu
#define FR_N3 0x53bda402u
#define FR_N4 0x09a1d805u
#define FR_N5 0x3339d808u
#define FR_N6 0x299d7d48u
#define FR_N7 0x73eda753u

#define FR_ONE_WORDS \
    {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau, 0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u}
#define FR_MONE_WORDS \
    {0x00000003u, 0xfffffffdu, 0xfffb13fcu, 0xfb38ec08u, 0x1ce5880fu, 0x99ad8818u, 0x7cd877d8u, 0x5bc8f5f9u}

// --- carry-chain primitives ---------------------------------------------------------------
#if defined(__CUDA_ARCH__)

#define FR_ASM2(op, name)                                                                  \
    FR_FN fr_u32 name(fr_u32 a, fr_u32 b) {                                                \
        fr_u32 r;                                                                          \
        asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                        \
        return r;                                                                          \
    }
#define FR_ASM3(op, name)                                                                  \
    FR_FN fr_u32 name(fr_u32 a, fr_u32 b, fr_u32 c) {                                      \
        fr_u32 r;                                                                          \
        asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));            \
        return r;                                                                          \
    }
FR_ASM2("add.cc.u32", add_cc)
FR_ASM2("addc.cc.u32", addc_cc)
FR_ASM2("addc.u32", addc)
FR_ASM2("sub.cc.u32", sub_cc)
FR_ASM2("subc.cc.u32", subc_cc)
FR_ASM2("subc.u32", subc)
FR_ASM3("mad.lo.cc.u32", mad_lo_cc)
FR_ASM3("madc.lo.cc.u32", madc_lo_cc)
FR_ASM3("madc.hi.cc.u32", madc_hi_cc)
#undef FR_ASM2
#undef FR_ASM3

FR_FN fr_u32 fr_brev(fr_u32 x) { return __brev(x); }

#else  // portable model of the same primitives (carry = CC.CF, borrow for subtraction)

static thread_local fr_u32 fr_cf;
FR_FN fr_u32 add_cc(fr_u32 a, fr_u32 b) {
    fr_u64 s = (fr_u64)a + b;
    fr_cf = (fr_u32)(s >> 32);
    return (fr_u32)s;
}
FR_FN fr_u32 addc_cc(fr_u32 a, fr_u32 b) {
    fr_u64 s = (fr_u64)a + b + fr_cf;
    fr_cf = (fr_u32)(s >> 32);
    return (fr_u32)s;
}
FR_FN fr_u32 addc(fr_u32 a, fr_u32 b) { return a + b + fr_cf; }
FR_FN fr_u32 sub_cc(fr_u32 a, fr_u32 b) {
    fr_cf = a < b;
    return a - b;
}
FR_FN fr_u32 subc_cc(fr_u32 a, fr_u32 b) {
    fr_u64 s = (fr_u64)b + fr_cf;
    fr_u32 r = (fr_u32)((fr_u64)a - s);
    fr_cf = (fr_u64)a < s;
    return r;
}
FR_FN fr_u32 subc(fr_u32 a, fr_u32 b) { return a - b - fr_cf; }
FR_FN fr_u32 mad_lo_cc(fr_u32 a, fr_u32 b, fr_u32 c) { return add_cc(a * b, c); }
FR_FN fr_u32 madc_lo_cc(fr_u32 a, fr_u32 b, fr_u32 c) { return addc_cc(a * b, c); }
FR_FN fr_u32 madc_hi_cc(fr_u32 a, fr_u32 b, fr_u32 c) {
    return addc_cc((fr_u32)(((fr_u64)a * b) >> 32), c);
}
FR_FN fr_u32 fr_brev(fr_u32 x) {
    fr_u32 r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}

#endif

// --- constants -----------------------------------------------------------------------------
FR_FN fr_t fr_zero() {
    fr_t z;
#pragma unroll
    for (int i = 0; i < 8; i++) z.w[i] = 0;
    return z;
}

FR_FN fr_t fr_one() {
    const fr_u32 o[8] = FR_ONE_WORDS;
    fr_t z;
#pragma unroll
    for (int i = 0; i < 8; i++) z.w[i] = o[i];
    return z;
}

FR_FN bool fr_is_zero(const fr_t& a) {
    fr_u32 acc = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) acc |= a.w[i];
    return acc == 0;
}

FR_FN bool fr_eq_words(const fr_t& a, const fr_u32 (&o)[8]) {
    fr_u32 acc = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) acc |= a.w[i] ^ o[i];
    return acc == 0;
}

FR_FN bool fr_is_one(const fr_t& a) {
    const fr_u32 o[8] = FR_ONE_WORDS;
    return fr_eq_words(a, o);
}

FR_FN bool fr_is_minus_one(const fr_t& a) {
    const fr_u32 o[8] = FR_MONE_WORDS;
    return fr_eq_words(a, o);
}

// --- memory --------------------------------------------------------------------------------
// An FrVec row is 32 bytes: two 16-byte vector accesses (device buffers are 256-byte aligned).
FR_FN fr_t fr_load(const fr_u64* __restrict__ base, fr_u64 i) {
    const uint4* p = reinterpret_cast<const uint4*>(base) + 2 * i;
    uint4 lo = p[0], hi = p[1];
    fr_t r;
    r.w[0] = lo.x; r.w[1] = lo.y; r.w[2] = lo.z; r.w[3] = lo.w;
    r.w[4] = hi.x; r.w[5] = hi.y; r.w[6] = hi.z; r.w[7] = hi.w;
    return r;
}

FR_FN void fr_store(fr_u64* __restrict__ base, fr_u64 i, const fr_t& a) {
    uint4* p = reinterpret_cast<uint4*>(base) + 2 * i;
    uint4 lo, hi;
    lo.x = a.w[0]; lo.y = a.w[1]; lo.z = a.w[2]; lo.w = a.w[3];
    hi.x = a.w[4]; hi.y = a.w[5]; hi.z = a.w[6]; hi.w = a.w[7];
    p[0] = lo;
    p[1] = hi;
}

// --- additive group ------------------------------------------------------------------------
// a + b < 2r < 2^256, so the sum needs no ninth word; subtract r when it does not borrow.
FR_FN fr_t fr_add(const fr_t& a, const fr_t& b) {
    fr_u32 s[8], d[8];
    s[0] = add_cc(a.w[0], b.w[0]);
#pragma unroll
    for (int i = 1; i < 7; i++) s[i] = addc_cc(a.w[i], b.w[i]);
    s[7] = addc(a.w[7], b.w[7]);
    d[0] = sub_cc(s[0], FR_N0);
    d[1] = subc_cc(s[1], FR_N1);
    d[2] = subc_cc(s[2], FR_N2);
    d[3] = subc_cc(s[3], FR_N3);
    d[4] = subc_cc(s[4], FR_N4);
    d[5] = subc_cc(s[5], FR_N5);
    d[6] = subc_cc(s[6], FR_N6);
    d[7] = subc_cc(s[7], FR_N7);
    fr_u32 borrow = subc(0u, 0u);  // 0xffffffff when s < r
    fr_t r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.w[i] = borrow ? s[i] : d[i];
    return r;
}

// a - b, adding r back when it borrows.
FR_FN fr_t fr_sub(const fr_t& a, const fr_t& b) {
    fr_u32 d[8];
    d[0] = sub_cc(a.w[0], b.w[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) d[i] = subc_cc(a.w[i], b.w[i]);
    fr_u32 mask = subc(0u, 0u);
    fr_t r;
    r.w[0] = add_cc(d[0], FR_N0 & mask);
    r.w[1] = addc_cc(d[1], FR_N1 & mask);
    r.w[2] = addc_cc(d[2], FR_N2 & mask);
    r.w[3] = addc_cc(d[3], FR_N3 & mask);
    r.w[4] = addc_cc(d[4], FR_N4 & mask);
    r.w[5] = addc_cc(d[5], FR_N5 & mask);
    r.w[6] = addc_cc(d[6], FR_N6 & mask);
    r.w[7] = addc(d[7], FR_N7 & mask);
    return r;
}

FR_FN fr_t fr_neg(const fr_t& a) { return fr_sub(fr_zero(), a); }

// --- multiplication ------------------------------------------------------------------------
// CIOS again, with each 32×32 product formed whole (one IMAD.WIDE.U32) and added in two
// carry chains per round: products of even words land on word pairs (j, j+1) that do not
// overlap, likewise the odd ones one word up, so each chain is a plain add.cc/addc.cc run.
FR_FN fr_t fr_mul_eo(const fr_t& a, const fr_t& b) {
    const fr_u32 N[8] = {FR_N0, FR_N1, FR_N2, FR_N3, FR_N4, FR_N5, FR_N6, FR_N7};
    fr_u32 t[9];
#pragma unroll
    for (int j = 0; j < 9; j++) t[j] = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const fr_u32 bi = b.w[i];
        fr_u64 p[8];
#pragma unroll
        for (int j = 0; j < 8; j++) p[j] = (fr_u64)a.w[j] * bi;
        // even products on (0,1) (2,3) (4,5) (6,7), carry into 8
        t[0] = add_cc(t[0], (fr_u32)p[0]);
        t[1] = addc_cc(t[1], (fr_u32)(p[0] >> 32));
        t[2] = addc_cc(t[2], (fr_u32)p[2]);
        t[3] = addc_cc(t[3], (fr_u32)(p[2] >> 32));
        t[4] = addc_cc(t[4], (fr_u32)p[4]);
        t[5] = addc_cc(t[5], (fr_u32)(p[4] >> 32));
        t[6] = addc_cc(t[6], (fr_u32)p[6]);
        t[7] = addc_cc(t[7], (fr_u32)(p[6] >> 32));
        t[8] = addc(t[8], 0u);
        // odd products on (1,2) (3,4) (5,6) (7,8); the sum fits nine words
        t[1] = add_cc(t[1], (fr_u32)p[1]);
        t[2] = addc_cc(t[2], (fr_u32)(p[1] >> 32));
        t[3] = addc_cc(t[3], (fr_u32)p[3]);
        t[4] = addc_cc(t[4], (fr_u32)(p[3] >> 32));
        t[5] = addc_cc(t[5], (fr_u32)p[5]);
        t[6] = addc_cc(t[6], (fr_u32)(p[5] >> 32));
        t[7] = addc_cc(t[7], (fr_u32)p[7]);
        t[8] = addc(t[8], (fr_u32)(p[7] >> 32));
        // reduction: m = −t0, t += m·r (r0 = 1: the pair (0,1) gets (m, 0))
        const fr_u32 m = 0u - t[0];
#pragma unroll
        for (int j = 1; j < 8; j++) p[j] = (fr_u64)m * N[j];
        (void)add_cc(t[0], m);
        t[1] = addc_cc(t[1], 0u);
        t[2] = addc_cc(t[2], (fr_u32)p[2]);
        t[3] = addc_cc(t[3], (fr_u32)(p[2] >> 32));
        t[4] = addc_cc(t[4], (fr_u32)p[4]);
        t[5] = addc_cc(t[5], (fr_u32)(p[4] >> 32));
        t[6] = addc_cc(t[6], (fr_u32)p[6]);
        t[7] = addc_cc(t[7], (fr_u32)(p[6] >> 32));
        t[8] = addc(t[8], 0u);
        t[1] = add_cc(t[1], (fr_u32)p[1]);
        t[2] = addc_cc(t[2], (fr_u32)(p[1] >> 32));
        t[3] = addc_cc(t[3], (fr_u32)p[3]);
        t[4] = addc_cc(t[4], (fr_u32)(p[3] >> 32));
        t[5] = addc_cc(t[5], (fr_u32)p[5]);
        t[6] = addc_cc(t[6], (fr_u32)(p[5] >> 32));
        t[7] = addc_cc(t[7], (fr_u32)p[7]);
        t[8] = addc(t[8], (fr_u32)(p[7] >> 32));
#pragma unroll
        for (int j = 0; j < 8; j++) t[j] = t[j + 1];
        t[8] = 0;
    }
    fr_u32 d[8];
    d[0] = sub_cc(t[0], FR_N0);
    d[1] = subc_cc(t[1], FR_N1);
    d[2] = subc_cc(t[2], FR_N2);
    d[3] = subc_cc(t[3], FR_N3);
    d[4] = subc_cc(t[4], FR_N4);
    d[5] = subc_cc(t[5], FR_N5);
    d[6] = subc_cc(t[6], FR_N6);
    d[7] = subc_cc(t[7], FR_N7);
    fr_u32 borrow = subc(0u, 0u);
    fr_t r;
#pragma unroll
    for (int i = 0; i < 8; i++) r.w[i] = borrow ? t[i] : d[i];
    return r;
}

// Whole products with their carries, one IMAD.WIDE.U32(.X) each (mont.cuh).
#define MONT_FN FR_FN
#include "mont.cuh"
#undef MONT_FN

// -r^-1 mod 2^32 (= 2^32 - 1 since r0 = 1), read from the constant bank: as a literal, ptxas
// rewrites m = t0·n0 as -t0 and then splits every m·r_j into IMAD.X + IMAD.HI.U32.X instead of
// one IMAD.WIDE.U32.X (296 instead of 248 SASS instructions per product).
#if defined(__CUDACC__)
__constant__ fr_u32 fr_n0_opaque = 0xffffffffu;
#else
static const fr_u32 fr_n0_opaque = 0xffffffffu;
#endif

FR_FN fr_t fr_mul_paired(const fr_t& a, const fr_t& b) {
    const fr_u32 N[8] = {FR_N0, FR_N1, FR_N2, FR_N3, FR_N4, FR_N5, FR_N6, FR_N7};
    fr_t r;
    mont_mul_paired<8>(r.w, a.w, b.w, N, fr_n0_opaque);
    return r;
}

// The product every kernel uses (fr_mul_eo stays as the host check's second product,
// tests/backend/host/mont_check.cpp, and the microbenchmark's).
FR_FN fr_t fr_mul(const fr_t& a, const fr_t& b) { return fr_mul_paired(a, b); }

FR_FN fr_t fr_sqr(const fr_t& a) { return fr_mul(a, a); }

// --- powers from two tables --------------------------------------------------------------
// value(i) = hi[i >> bits] · lo[i & (2^bits - 1)]: with lo[j] = base^j and
// hi[j] = scale·base^(j·2^bits) this is scale·base^i for one multiplication.
FR_FN fr_t fr_pow_lookup(const fr_u64* __restrict__ lo, const fr_u64* __restrict__ hi, int bits,
                         fr_u64 i) {
    return fr_mul(fr_load(hi, i >> bits), fr_load(lo, i & ((1ull << bits) - 1)));
}
