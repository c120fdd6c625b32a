// a = A·z, b = B·z, c = C·z over Fr from compact CSR matrices (cuzk.r1cs.shape.CsrMatrix
// layout): indptr uint32 or uint64 (rows + 1), indices uint32 (nnz), coefficient ids uint8,
// uint16 or uint32 (nnz) into a table (k, 4) of the circuit's distinct Montgomery coefficients.
// spmv_<ip>_<id> also takes ``base``: the entry offset its indices and ids start at, so a block
// of rows streamed from the host keeps the absolute row pointers of the whole matrix.
//
// One thread per row (rows are short: ~3 entries in the synthetic circuits, a few dozen at most
// in real ones); blockIdx.y picks the matrix so one launch evaluates all three. The table is a
// few thousand entries, so its loads hit the cache; coefficients equal to ±1 (most of them in
// real circuits) skip the multiplication. One kernel pair per (row pointer, id) width:
// spmv_abc_<ip>_<id> and spmv_<ip>_<id>, e.g. spmv_abc_u32_u16.
#include "fr.cuh"
#include "grid.cuh"

template <typename IP, typename ID>
FR_FN void spmv_row(fr_u64* __restrict__ out, const IP* __restrict__ indptr,
                    const unsigned int* __restrict__ indices, const ID* __restrict__ ids,
                    const fr_u64* __restrict__ table, const fr_u64* __restrict__ z,
                    fr_u64 row, fr_u64 base) {
    const fr_u64 begin = indptr[row] - base, end = indptr[row + 1] - base;
    fr_t acc = fr_zero();
    for (fr_u64 e = begin; e < end; e++) {
        const fr_t c = fr_load(table, (fr_u64)ids[e]);
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

#define SPMV_KERNELS(IPN, IP, IDN, ID)                                                         \
    extern "C" __global__ void spmv_abc_##IPN##_##IDN(                                         \
        fr_u64* out_a, fr_u64* out_b, fr_u64* out_c, const IP* ip_a, const unsigned int* ix_a, \
        const ID* id_a, const fr_u64* t_a, const IP* ip_b, const unsigned int* ix_b,           \
        const ID* id_b, const fr_u64* t_b, const IP* ip_c, const unsigned int* ix_c,           \
        const ID* id_c, const fr_u64* t_c, const fr_u64* z, long long rows) {                  \
        fr_u64* out;                                                                           \
        const IP* ip;                                                                          \
        const unsigned int* ix;                                                                \
        const ID* id;                                                                          \
        const fr_u64* t;                                                                       \
        if (blockIdx.y == 0) {                                                                 \
            out = out_a; ip = ip_a; ix = ix_a; id = id_a; t = t_a;                             \
        } else if (blockIdx.y == 1) {                                                          \
            out = out_b; ip = ip_b; ix = ix_b; id = id_b; t = t_b;                             \
        } else {                                                                               \
            out = out_c; ip = ip_c; ix = ix_c; id = id_c; t = t_c;                             \
        }                                                                                      \
        for (fr_u64 row = global_thread(); row < (fr_u64)rows;                                 \
             row += (fr_u64)blockDim.x * gridDim.x) {                                          \
            spmv_row<IP, ID>(out, ip, ix, id, t, z, row, 0);                                   \
        }                                                                                      \
    }                                                                                          \
    extern "C" __global__ void spmv_##IPN##_##IDN(fr_u64* out, const IP* indptr,               \
                                                  const unsigned int* indices, const ID* ids,  \
                                                  const fr_u64* table, const fr_u64* z,        \
                                                  long long rows, long long base) {            \
        for (fr_u64 row = global_thread(); row < (fr_u64)rows;                                 \
             row += (fr_u64)blockDim.x * gridDim.x) {                                          \
            spmv_row<IP, ID>(out, indptr, indices, ids, table, z, row, (fr_u64)base);        \
        }                                                                                      \
    }

SPMV_KERNELS(u32, unsigned int, u8, unsigned char)
SPMV_KERNELS(u32, unsigned int, u16, unsigned short)
SPMV_KERNELS(u32, unsigned int, u32, unsigned int)
SPMV_KERNELS(u64, unsigned long long, u8, unsigned char)
SPMV_KERNELS(u64, unsigned long long, u16, unsigned short)
SPMV_KERNELS(u64, unsigned long long, u32, unsigned int)
