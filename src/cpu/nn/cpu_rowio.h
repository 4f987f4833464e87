/* Rows of a strided tensor as f32 / f64 values, for the fused nn kernels
 * (cpu_nn.c, cpu_attention.c, cpu_rope.c): one row of n elements at element
 * offset off with element stride s. f32 / f64 compute rows are read where
 * they lie when they are already contiguous; f16 / bf16 / f8 widen into a
 * buffer (f16 / bf16 contiguous through the vectorized converters). */
#ifndef WICK_CPU_ROWIO_H
#define WICK_CPU_ROWIO_H
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/vmath/vmath.h"
#include <string.h>

static inline void wk__row_load_f(const void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, float *out) {
    if (s == 1 && dt == WK_F32) memcpy(out, (const float *)p + off, sizeof(float) * (size_t)n);
    else if (s == 1 && dt == WK_F16) wk__vcvt_f16_to_f32(out, (const uint16_t *)p + off, n);
    else if (s == 1 && dt == WK_BF16) wk__vcvt_bf16_to_f32(out, (const uint16_t *)p + off, n);
    else if (dt == WK_F32)
        for (int64_t j = 0; j < n; j++) out[j] = ((const float *)p)[off + j * s];
    else
        for (int64_t j = 0; j < n; j++) out[j] = wk__narrow_load(p, off + j * s, dt);
}
static inline void wk__row_store_f(void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, const float *v) {
    if (s == 1 && dt == WK_F32) memcpy((float *)p + off, v, sizeof(float) * (size_t)n);
    else if (s == 1 && dt == WK_F16) wk__vcvt_f32_to_f16((uint16_t *)p + off, v, n);
    else if (s == 1 && dt == WK_BF16) wk__vcvt_f32_to_bf16((uint16_t *)p + off, v, n);
    else if (dt == WK_F32)
        for (int64_t j = 0; j < n; j++) ((float *)p)[off + j * s] = v[j];
    else
        for (int64_t j = 0; j < n; j++) wk__narrow_store(p, off + j * s, dt, v[j]);
}
/* f64 rows: the compute type of f64 tensors only (dt is always WK_F64). */
static inline void wk__row_load_d(const void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, double *out) {
    (void)dt;
    for (int64_t j = 0; j < n; j++) out[j] = ((const double *)p)[off + j * s];
}
static inline void wk__row_store_d(void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, const double *v) {
    (void)dt;
    for (int64_t j = 0; j < n; j++) ((double *)p)[off + j * s] = v[j];
}
/* The row in place when it already is a contiguous row of the compute type,
 * else loaded into buf. */
static inline const float *wk__row_view_f(const void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, float *buf) {
    if (dt == WK_F32 && s == 1) return (const float *)p + off;
    wk__row_load_f(p, dt, off, s, n, buf);
    return buf;
}
static inline const double *wk__row_view_d(const void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n,
                                           double *buf) {
    if (s == 1) return (const double *)p + off;
    wk__row_load_d(p, dt, off, s, n, buf);
    return buf;
}
#endif
