/* Per-ISA instantiations of gemm_kernel.inc. C = A @ B with C contiguous
 * (row stride n); A, B read through element strides. false = out of memory. */
#ifndef WICK_CPU_GEMM_H
#define WICK_CPU_GEMM_H
#include <stdbool.h>
#include <stdint.h>

/* gemv: y[j] = sum_p x[p*xs] * b[p*brs + j*bcs], j < n (y contiguous). */
#define WK_GEMM_DECL(T, sfx)                                                                                  \
    bool wk__gemm_##sfx(int64_t m, int64_t n, int64_t k, const T *a, int64_t ars, int64_t acs, const T *b, \
                        int64_t brs, int64_t bcs, T *c);                                                      \
    void wk__gemv_##sfx(int64_t n, int64_t k, const T *x, int64_t xs, const T *b, int64_t brs, int64_t bcs, T *y);
WK_GEMM_DECL(float, f32_generic)
WK_GEMM_DECL(double, f64_generic)
WK_GEMM_DECL(float, f32_avx2)
WK_GEMM_DECL(double, f64_avx2)
WK_GEMM_DECL(float, f32_avx512)
WK_GEMM_DECL(double, f64_avx512)

#endif
