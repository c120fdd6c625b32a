// The G1 mixed XYZZ addition of curve.cuh (madd-2008-s) with five of its ten products on the
// FP64 pipe (fp64.cuh) and five on the integer pipe, paired so that each pair is independent
// and the compiler can interleave them: (U2 | S2), (PP | R²), (PPP, ZZ3 | Q), (ZZZ3 | Y·PPP,
// R·(Q − X3)). An experiment for issue 19 (bench/NOTES.md, "An Fp product on the FP64 pipe"):
// msm.cu uses it in the accumulation when built with ACC_FP64=1. Results are identical to
// add_affine's: every product is fully reduced either way.
#pragma once
#include "curve.cuh"
#include "fp64.cuh"

FP_FN xyzz_t<fp_t> add_affine_fp64(const xyzz_t<fp_t>& p, const affine_t<fp_t>& q) {
    if (p.is_inf()) return {q.x, q.y, fp_t::one(), fp_t::one()};
    const fp_t U2 = q.x * p.ZZ;
    const fp_t S2 = fp_mul_fp64(fp24_from_fp(q.y), fp24_from_fp(p.ZZZ));
    const fp_t P = U2 - p.X;
    const fp_t R = S2 - p.Y;
    if (P.is_zero()) {
        if (R.is_zero()) return dbl_affine(q);
        return xyzz_t<fp_t>::inf();
    }
    const fp24_t R24 = fp24_from_fp(R);
    const fp_t PP = sqr(P);
    const fp_t RR = fp_mul_fp64(R24, R24);
    const fp24_t PP24 = fp24_from_fp(PP);
    const fp_t PPP = P * PP;
    const fp_t ZZ3 = p.ZZ * PP;
    const fp_t Q = fp_mul_fp64(fp24_from_fp(p.X), PP24);
    const fp_t X3 = RR - PPP - fp_dbl(Q);
    const fp_t ZZZ3 = p.ZZZ * PPP;
    const fp_t YPPP = fp_mul_fp64(fp24_from_fp(p.Y), fp24_from_fp(PPP));
    const fp_t Y3 = fp_mul_fp64(R24, fp24_from_fp(Q - X3)) - YPPP;
    return {X3, Y3, ZZ3, ZZZ3};
}
