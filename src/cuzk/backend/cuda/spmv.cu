// a = A·z, b = B·z, c = C·z over Fr from CSR matrices (cuzk.r1cs.shape.CsrMatrix layout:
// indptr int64 (rows + 1), indices int64 (nnz), coeffs (nnz, 4) Montgomery).
//
// One thread per row (rows are short: ~3 entries in the synthetic circuits, a few dozen at most
// in real ones); blockIdx.y picks the matrix so one launch evaluates all three. Coefficients
// equal to ±1 (most of them in real circuits) skip the multiplication.
#include "fr.cuh"

FR_FN void spmv_row(fr_u64* __restrict__ out, const long long* __restrict__ indptr,
                    const long long* __restrict__ indices, const fr_u64* __restrict__ coeffs,
                    const fr_u64* __restrict__ z, fr_u64 row) {
    const long long begin = indptr[row], end = indptr[row + 1];
    fr_t acc = fr_zero();
    for (long long e = begin; e < end; e++) {
        const fr_t c = fr_load(coeffs, (fr_u64)e);
        const fr_t x = fr_load(z, (fr_u64)indices[e]);
        if (fr_is_one(c)) {
            acc = fr_add(acc, x);
        } else if (fr_is_minus_one(c)) {
            acc = fr_sub(acc, x);
        } else {
            acc = fr_add(acc, fr_mul(c, x));
        }
    }
    fr_store(out, row, acc);
}

extern "C" __global__ void spmv_abc_k(fr_u64* out_a, fr_u64* out_b, fr_u64* out_c,
                                      const long long* ip_a, const long long* ix_a,
                                      const fr_u64* cf_a, const long long* ip_b,
                                      const long long* ix_b, const fr_u64* cf_b,
                                      const long long* ip_c, const long long* ix_c,
                                      const fr_u64* cf_c, const fr_u64* z, long long rows) {
    fr_u64* out;
    const long long *ip, *ix;
    const fr_u64* cf;
    if (blockIdx.y == 0) {
        out = out_a; ip = ip_a; ix = ix_a; cf = cf_a;
    } else if (blockIdx.y == 1) {
        out = out_b; ip = ip_b; ix = ix_b; cf = cf_b;
    } else {
        out = out_c; ip = ip_c; ix = ix_c; cf = cf_c;
    }
    for (fr_u64 row = (fr_u64)blockIdx.x * blockDim.x + threadIdx.x; row < (fr_u64)rows;
         row += (fr_u64)blockDim.x * gridDim.x) {
        spmv_row(out, ip, ix, cf, z, row);
    }
}

extern "C" __global__ void spmv_k(fr_u64* out, const long long* indptr, const long long* indices,
                                  const fr_u64* coeffs, const fr_u64* z, long long rows) {
    for (fr_u64 row = (fr_u64)blockIdx.x * blockDim.x + threadIdx.x; row < (fr_u64)rows;
         row += (fr_u64)blockDim.x * gridDim.x) {
        spmv_row(out, indptr, indices, coeffs, z, row);
    }
}
