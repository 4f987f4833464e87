/* f16 / bf16 matrix-vector inner loops with the matrix widened in registers
 * (cpu_matmul.c's narrow GEMV uses them at the AVX-512 and AVX2 levels). */
#ifndef WICK_CPU_GEMV_HALF_H
#define WICK_CPU_GEMV_HALF_H
#include <stdbool.h>
#include <stdint.h>

/* acc[j] += sum_p x[p] * B[p*brs + j] for j < w (B rows contiguous). */
void wk__gemv_half_rows_avx512(float *acc, const float *x, const uint16_t *b, int64_t brs, int64_t k, int64_t w,
                               bool f16);
/* sum_p x[p] * col[p] (a contiguous column). */
float wk__gemv_half_dot_avx512(const float *x, const uint16_t *col, int64_t k, bool f16);
/* The same on AVX2 + F16C. */
void wk__gemv_half_rows_avx2(float *acc, const float *x, const uint16_t *b, int64_t brs, int64_t k, int64_t w,
                             bool f16);
float wk__gemv_half_dot_avx2(const float *x, const uint16_t *col, int64_t k, bool f16);

#endif
