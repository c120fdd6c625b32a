// The group an MSM module is compiled for, shared by msm.cu and msm_ba.cu: BLS12-381 G1
// (MSM_G2=0, coordinates in Fp) or G2 (MSM_G2=1, in Fp2), and the sign bit of a sorted entry
// (point index | SIGN_BIT for a negative digit).
#pragma once
#include "curve.cuh"

#ifndef MSM_G2
#define MSM_G2 0
#endif

#if MSM_G2
typedef fp2_t field_t;
#else
typedef fp_t field_t;
#endif
typedef affine_t<field_t> affine;
typedef xyzz_t<field_t> xyzz;

#define SIGN_BIT 0x80000000u
