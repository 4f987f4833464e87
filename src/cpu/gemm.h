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

typedef bool (*wk_gemm_f32_fn)(int64_t, int64_t, int64_t, const float *, int64_t, int64_t, const float *, int64_t,
                               int64_t, float *);
typedef bool (*wk_gemm_f64_fn)(int64_t, int64_t, int64_t, const double *, int64_t, int64_t, const double *, int64_t,
                               int64_t, double *);
typedef void (*wk_gemv_f32_fn)(int64_t, int64_t, const float *, int64_t, const float *, int64_t, int64_t, float *);
typedef void (*wk_gemv_f64_fn)(int64_t, int64_t, const double *, int64_t, const double *, int64_t, int64_t, double *);

/* The kernels for the SIMD level in force (vmath's run-time choice, which
 * honours WICK_ISA); looked up per call so there is no shared mutable state.
 * matmul and the convolutions both take their GEMM from here. */
typedef struct wk_gemm_kernels {
    wk_gemm_f32_fn f32;
    wk_gemm_f64_fn f64;
    wk_gemv_f32_fn v32;
    wk_gemv_f64_fn v64;
    bool avx512;   /* the AVX-512 level: f16/bf16 GEMV widens in registers */
    bool bf16_dot; /* AVX512-BF16: bf16 products without widening */
} wk_gemm_kernels;
wk_gemm_kernels wk__gemm_kernels(void);

/* bf16 x bf16 -> f32 on AVX512-BF16 (vdpbf16ps): C[m x n] (f32, contiguous,
 * row stride n) = A @ B, A and B bf16 bit patterns read through element
 * strides; products summed in f32, no rounding until the caller narrows C.
 * Call only when wk__cpu_has_avx512bf16(). false = out of memory. */
bool wk__gemm_bf16_avx512bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t ars, int64_t acs,
                              const uint16_t *b, int64_t brs, int64_t bcs, float *c);
/* cpuid: AVX512-BF16 present (and AVX-512 state enabled by the OS). */
bool wk__cpu_has_avx512bf16(void);

/* Optional system BLAS (cmake -DWICK_BLAS=openblas|blis; off by default).
 * Returns true when it computed C (contiguous, row stride n); false when
 * wick was built without BLAS or the strides cannot be expressed as a
 * BLAS leading dimension, and the caller runs wick's own GEMM. */
bool wk__blas_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                       int64_t brs, int64_t bcs, float *c);
bool wk__blas_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs,
                       const double *b, int64_t brs, int64_t bcs, double *c);
/* "openblas", "blis" or NULL (built without). */
const char *wk__blas_name(void);

#endif
