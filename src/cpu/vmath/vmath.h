/* Vectorized math over contiguous f32 arrays, dispatched at run time to
 * AVX-512, AVX2+FMA or portable C. y and x may alias exactly (y == x);
 * partial overlap is not supported. n <= 0 does nothing.
 * Accuracy: within a few ulp of libm over the full float range (exp
 * overflows to inf above ~88.72, underflows to 0 below ~-103.97, NaN in ->
 * NaN out); subnormal results are produced, not flushed. Measured errors per
 * function: the comment at the top of vmath_avx512.c (exp <= 2 ulp, log < 1
 * ulp, the others <= ~4 ulp or 1e-6 relative; gelu's far negative tail is
 * looser in relative terms). silu, gelu and gelu_erf of -inf are -0. */
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

/* Elementwise binary on contiguous f32: y = a op b, op in 0..5 as wk_binary_op
 * (another op leaves y untouched). y may alias a or b exactly. maximum/minimum
 * return NaN if either operand is NaN (numpy), else a > b ? a : b (a < b ? a : b). */
void wk__vbinary_f32(int op, float *y, const float *a, const float *b, int64_t n);
/* y = a op s (scalar right-hand side). */
void wk__vbinary_scalar_f32(int op, float *y, const float *a, float s, int64_t n);

/* Sum of n contiguous f32: 64 f32 lanes added in double in a fixed tree
 * (cpu/vmath/vreduce.inc), rounded once; the same bits for a given n at every
 * level and thread count. */
float wk__vsum_f32(const float *x, int64_t n);
/* Max (want_min 0) or min of n >= 1 contiguous f32; NaN if any is NaN. */
float wk__vmaxmin_f32(const float *x, int64_t n, int want_min);

/* f16 / bf16 (as uint16_t bit patterns) <-> f32 over contiguous arrays.
 * Every level gives results bit-identical to wick's scalar conversions
 * wk_f16_to_f32, wk_bf16_to_f32, wk_f32_to_f16 and wk_f32_to_bf16
 * (src/base/dtype.c) for every input: widening is exact (NaN payloads kept
 * as they are, signaling ones included); narrowing rounds to nearest even
 * whatever the FPU rounding mode, overflows to +-inf, keeps +-inf, and
 * turns NaN into a quiet NaN with the sign and top payload bits kept.
 * x and y must not overlap. n <= 0 does nothing. */
void wk__vcvt_f16_to_f32(float *y, const uint16_t *x, int64_t n);
void wk__vcvt_bf16_to_f32(float *y, const uint16_t *x, int64_t n);
void wk__vcvt_f32_to_f16(uint16_t *y, const float *x, int64_t n);
void wk__vcvt_f32_to_bf16(uint16_t *y, const float *x, int64_t n);

/* "avx512", "avx2" or "scalar": what the dispatcher chose (WICK_ISA env
 * may force a lower level: "avx2" or "scalar"; read once, base/env.h). */
const char *wk__vmath_isa(void);

/* ---- levels (tests and benchmarks) ---- */
#define WK_VMATH_SCALAR 0
#define WK_VMATH_AVX2   1
#define WK_VMATH_AVX512 2
/* Highest level this CPU supports (ignores WICK_ISA). */
int  wk__vmath_max_level(void);
/* Level in use now. */
int  wk__vmath_level(void);
/* Force a level (for tests; not meant to race with running kernels).
 * level < 0 re-resolves the default (CPU + WICK_ISA). Returns 0, or -1 (and
 * changes nothing) if the CPU does not support the level. */
int  wk__vmath_set_level(int level);

/* ---- per-ISA kernels: internal to vmath*.c; call them only through the
 * dispatching functions above (they need a run-time cpuid check). ---- */
#if defined(__x86_64__) || defined(__i386__)
#define WK_VMATH_DECLARE_ISA(sfx)                                                        \
    void wk__vexp_f32_##sfx(float *y, const float *x, int64_t n);                        \
    void wk__vtanh_f32_##sfx(float *y, const float *x, int64_t n);                       \
    void wk__vsigmoid_f32_##sfx(float *y, const float *x, int64_t n);                    \
    void wk__vsilu_f32_##sfx(float *y, const float *x, int64_t n);                       \
    void wk__vgelu_f32_##sfx(float *y, const float *x, int64_t n);                       \
    void wk__verf_f32_##sfx(float *y, const float *x, int64_t n);                        \
    void wk__vgelu_erf_f32_##sfx(float *y, const float *x, int64_t n);                   \
    void wk__vlog_f32_##sfx(float *y, const float *x, int64_t n);                        \
    void wk__vbinary_f32_##sfx(int op, float *y, const float *a, const float *b, int64_t n); \
    void wk__vbinary_scalar_f32_##sfx(int op, float *y, const float *a, float s, int64_t n); \
    float wk__vsum_f32_##sfx(const float *x, int64_t n);                                 \
    float wk__vmaxmin_f32_##sfx(const float *x, int64_t n, int want_min);               \
    void wk__vcvt_f16_to_f32_##sfx(float *y, const uint16_t *x, int64_t n);              \
    void wk__vcvt_bf16_to_f32_##sfx(float *y, const uint16_t *x, int64_t n);             \
    void wk__vcvt_f32_to_f16_##sfx(uint16_t *y, const float *x, int64_t n);              \
    void wk__vcvt_f32_to_bf16_##sfx(uint16_t *y, const float *x, int64_t n);
WK_VMATH_DECLARE_ISA(avx2)
WK_VMATH_DECLARE_ISA(avx512)
#undef WK_VMATH_DECLARE_ISA
#endif

#endif
