// Host build of the device field headers (their portable carry model): reads pairs of field
// elements as hex words from stdin, prints every product implementation's result on one line.
// Built and driven by tests/backend/test_mont_host.py.
#include <cstdio>
#if CHECK_FP
#include "fp.cuh"
#define WORDS FP_LIMBS
typedef fp_t elem;
static unsigned* words(elem& x) { return x.l; }
static elem (*const impls[])(const elem&, const elem&) = {fp_mul_chains, fp_mul_paired};
#else
struct uint4 { unsigned x, y, z, w; };  // CUDA's vector type, used by fr.cuh's loads
#include "fr.cuh"
#define WORDS 8
typedef fr_t elem;
static unsigned* words(elem& x) { return x.w; }
static elem (*const impls[])(const elem&, const elem&) = {fr_mul_eo, fr_mul_paired};
#endif

int main() {
    for (;;) {
        elem a, b;
        for (int i = 0; i < WORDS; i++)
            if (scanf("%x", &words(a)[i]) != 1) return 0;
        for (int i = 0; i < WORDS; i++)
            if (scanf("%x", &words(b)[i]) != 1) return 0;
        for (auto mul : impls) {
            elem r = mul(a, b);
            for (int i = 0; i < WORDS; i++) printf("%08x ", words(r)[i]);
        }
        printf("\n");
    }
}
