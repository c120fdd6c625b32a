// Host build of curve_fp64.cuh's mixed addition (half its products on the FP64 pipe) beside
// curve.cuh's: reads affine G1 points (x then y, Montgomery form, 12 hex words each; (0, 0) is
// infinity) until EOF, adds them one by one into an XYZZ accumulator with both additions, and
// prints both accumulators (X, Y, ZZ, ZZZ) after every point.
// Built and driven by tests/backend/test_fp64_host.py.
#include <cmath>
#include <cstdio>
struct uint4 { unsigned x, y, z, w; };  // CUDA's vector type, named by curve.cuh's loads
#include "curve_fp64.cuh"

static void print(const xyzz_t<fp_t>& p) {
    const fp_t* c[4] = {&p.X, &p.Y, &p.ZZ, &p.ZZZ};
    for (auto f : c)
        for (int i = 0; i < FP_LIMBS; i++) printf("%08x ", f->l[i]);
}

int main() {
    xyzz_t<fp_t> a = xyzz_t<fp_t>::inf(), b = xyzz_t<fp_t>::inf();
    for (;;) {
        affine_t<fp_t> q;
        for (int i = 0; i < FP_LIMBS; i++)
            if (scanf("%x", &q.x.l[i]) != 1) return 0;
        for (int i = 0; i < FP_LIMBS; i++)
            if (scanf("%x", &q.y.l[i]) != 1) return 0;
        if (!q.is_inf()) {
            a = add_affine(a, q);
            b = add_affine_fp64(b, q);
        }
        print(a);
        print(b);
        printf("\n");
    }
}
