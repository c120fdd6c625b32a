// Host build of fp64.cuh (the Fp product on the FP64 pipe): reads pairs of Montgomery-form
// field elements as 12 hex words each from stdin; prints a·b·R⁻¹ and, after 24 more products
// by b kept in the 24-bit-limb form without reduction (values below 2p), the chain's end.
// Built and driven by tests/backend/test_fp64_host.py.
#include <cmath>
#include <cstdio>
#include "fp64.cuh"

static void print(const fp24_t& x) {
    fp_t w = fp24_to_fp_words(x);
    for (int i = 0; i < FP_LIMBS; i++) printf("%08x ", w.l[i]);
}

int main() {
    for (;;) {
        fp_t a, b;
        for (int i = 0; i < FP_LIMBS; i++)
            if (scanf("%x", &a.l[i]) != 1) return 0;
        for (int i = 0; i < FP_LIMBS; i++)
            if (scanf("%x", &b.l[i]) != 1) return 0;
        const fp24_t a24 = fp24_from_fp(a), b24 = fp24_from_fp(b);
        fp24_t c = fp24_mul(a24, b24);
        print(c);
        for (int k = 0; k < 24; k++) c = fp24_mul(c, b24);
        print(c);
        printf("\n");
    }
}
