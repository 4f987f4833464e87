/* Vectorized math over contiguous f32 arrays, dispatched at run time to
 * AVX-512, AVX2+FMA or portable C. y and x may alias exactly (y == x).
 * Accuracy: within a few ulp of libm over the full float range (exp
 * overflows to inf above ~88.72, underflows to 0 below ~-103.97, NaN in ->
 * NaN out). */
#ifndef WICK_CPU_VMATH_H
#define WICK_CPU_VMATH_H
#include <stdint.h>

void wk__vexp_f32(float *y, const float *x, int64_t n);
void wk__vtanh_f32(float *y, const float *x, int64_t n);
void wk__vsigmoid_f32(float *y, const float *x, int64_t n);
void wk__vsilu_f32(float *y, const float *x, int64_t n);
void wk__vgelu_f32(float *y, const float *x, int64_t n);      /* tanh form */
void wk__verf_f32(float *y, const float *x, int64_t n);
void wk__vgelu_erf_f32(float *y, const float *x, int64_t n);
void wk__vlog_f32(float *y, const float *x, int64_t n);

/* Elementwise binary on contiguous f32: y = a op b, op in 0..5 as wk_binary_op. */
void wk__vbinary_f32(int op, float *y, const float *a, const float *b, int64_t n);
/* y = a op s (scalar right-hand side). */
void wk__vbinary_scalar_f32(int op, float *y, const float *a, float s, int64_t n);

/* "avx512", "avx2" or "scalar": what the dispatcher chose (WICK_ISA env
 * may force a lower level: "avx2" or "scalar"). */
const char *wk__vmath_isa(void);

#endif
