// Host build of the device Poseidon schedule (poseidon.cuh over fr.cuh's portable carry model).
// Reads, as little-endian uint64 on stdin: t, half, partial, n_crc, n_w_hat, n_v_rest, m; then
// the tables crc, pre_sparse (t·t), w_hat, v_rest, mds (t·t), the tag, and m preimages of t − 1
// elements (4 words each). Writes each hash's recorded values (4 words each) to stdout, hash
// after hash, after one word giving the count per hash. Driven by
// tests/backend/test_poseidon_host.py.
#include <cstdio>
#include <vector>
struct uint4 { unsigned x, y, z, w; };  // CUDA's vector type, used by fr.cuh's loads
#include "poseidon.cuh"

static std::vector<fr_u64> words(size_t n) {
    std::vector<fr_u64> v(n);
    if (n && fread(v.data(), sizeof(fr_u64), n, stdin) != n) v.clear();
    return v;
}

int main() {
    std::vector<fr_u64> h = words(7);
    if (h.size() != 7) return 2;
    const int t = (int)h[0], half = (int)h[1], partial = (int)h[2];
    const fr_u64 m = h[6];
    if (t < 2 || t > POSEIDON_MAX_T) return 3;
    std::vector<fr_u64> crc = words(4 * h[3]), pre_sparse = words(4 * t * t),
                        w_hat = words(4 * h[4]), v_rest = words(4 * h[5]),
                        mds = words(4 * t * t), tag = words(4), pre = words(4 * (t - 1) * m);
    if (pre.size() != 4 * (t - 1) * m || tag.size() != 4) return 4;
    std::vector<fr_u64> out(4 * 4096);
    fr_t st[POSEIDON_MAX_T], nx[POSEIDON_MAX_T];
    for (fr_u64 i = 0; i < m; i++) {
        poseidon_start(st, pre.data() + 4 * (t - 1) * i, t, fr_load(tag.data(), 0), crc.data());
        const int n = poseidon_record(st, nx, t, crc.data(), pre_sparse.data(), w_hat.data(),
                                      v_rest.data(), mds.data(), half, partial, out.data(), 0);
        if (i == 0) {
            const fr_u64 count = (fr_u64)n;
            fwrite(&count, sizeof(fr_u64), 1, stdout);
        }
        fwrite(out.data(), sizeof(fr_u64), 4 * (size_t)n, stdout);
    }
    return 0;
}
