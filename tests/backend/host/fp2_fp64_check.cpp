// Host build of fp.cuh's Fp2 products with FP2_FP64=1 (one Fp product of each on the FP64
// pipe, fp64.cuh): reads pairs of Fp2 elements (c0 then c1, Montgomery form, 12 hex words each)
// from stdin, prints a·b and a² (c0 then c1). Built and driven by tests/backend/test_fp64_host.py.
#include <cmath>
#include <cstdio>
#define FP2_FP64 1
#define FP2_FN inline
#include "fp.cuh"

static bool read(fp_t& x) {
    for (int i = 0; i < FP_LIMBS; i++)
        if (scanf("%x", &x.l[i]) != 1) return false;
    return true;
}

static void print(const fp2_t& x) {
    for (int i = 0; i < FP_LIMBS; i++) printf("%08x ", x.c0.l[i]);
    for (int i = 0; i < FP_LIMBS; i++) printf("%08x ", x.c1.l[i]);
}

int main() {
    for (;;) {
        fp2_t a, b;
        if (!read(a.c0) || !read(a.c1) || !read(b.c0) || !read(b.c1)) return 0;
        print(a * b);
        print(sqr(a));
        printf("\n");
    }
}
