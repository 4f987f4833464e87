/* The scalar math of every elementwise op, once, for every backend: the
 * CPU kernels (src/cpu/elementwise/cpu_unary.c, cpu_binary.c) and the CUDA
 * kernels (src/cuda/elementwise/kernels_elementwise.cu, under nvcc as
 * __host__ __device__)
 * include this header, so an op's meaning cannot differ between them.
 *
 * Per op of the lists in include/wick/wick_ops.h:
 *   unary   wk__op_<name>_f64(double), wk__op_<name>_f32(float), and for
 *           an INT_DEF op wk__op_<name>_int(int64_t)
 *   binary  wk__op_<name>_f64/_f32(x, y) and wk__op_<name>_int(x, y, err)
 *   cmp     the list's C operator
 * and the dispatchers over an op value (wk__unary_f64, ..., wk__cmp_f64),
 * generated from the lists: a list line without its math does not compile.
 *
 * Integers: computed on values sign- or zero-extended to 64 bits, wrapping
 * in uint64_t; the caller truncates back to the dtype's width, which gives
 * the dtype's own wrap-around exactly (the low bits of + - * and of the
 * power do not depend on the higher ones; division and comparisons of
 * extended values equal the narrow ones). An int op that has no defined
 * result for its inputs writes a wk_status to *err and returns 0.
 *
 * f32: the reference forms (what the CPU's scalar level of vmath.c and the
 * CUDA kernels compute): sigmoid, silu and gelu (as x * sigmoid(2u))
 * through exp(-|x|), gelu_erf as 0.5x * erfc(-x / sqrt 2); silu, gelu and
 * gelu_erf of -inf are -0. f64: the textbook formulas. */
#ifndef WICK_CORE_OP_MATH_H
#define WICK_CORE_OP_MATH_H
#include <math.h>
#include <stdint.h>
#include "wick/wick.h"

#ifndef WK_HD
#ifdef __CUDACC__
#define WK_HD static __host__ __device__ __forceinline__
#else
#define WK_HD static inline
#endif
#endif

/* ---------------------------------------------------------------- unary */

WK_HD double wk__op_exp_f64(double x) { return exp(x); }
WK_HD float wk__op_exp_f32(float x) { return expf(x); }
WK_HD double wk__op_log_f64(double x) { return log(x); }
WK_HD float wk__op_log_f32(float x) { return logf(x); }
WK_HD double wk__op_sin_f64(double x) { return sin(x); }
WK_HD float wk__op_sin_f32(float x) { return sinf(x); }
WK_HD double wk__op_cos_f64(double x) { return cos(x); }
WK_HD float wk__op_cos_f32(float x) { return cosf(x); }
WK_HD double wk__op_tanh_f64(double x) { return tanh(x); }
WK_HD float wk__op_tanh_f32(float x) { return tanhf(x); }

WK_HD double wk__op_abs_f64(double x) { return fabs(x); }
WK_HD float wk__op_abs_f32(float x) { return fabsf(x); }
WK_HD int64_t wk__op_abs_int(int64_t v) { return v < 0 ? (int64_t)(0u - (uint64_t)v) : v; }
WK_HD double wk__op_neg_f64(double x) { return -x; }
WK_HD float wk__op_neg_f32(float x) { return -x; }
WK_HD int64_t wk__op_neg_int(int64_t v) { return (int64_t)(0u - (uint64_t)v); }
WK_HD double wk__op_recip_f64(double x) { return 1.0 / x; }
WK_HD float wk__op_recip_f32(float x) { return 1.0f / x; }
WK_HD double wk__op_sqr_f64(double x) { return x * x; }
WK_HD float wk__op_sqr_f32(float x) { return x * x; }
WK_HD int64_t wk__op_sqr_int(int64_t v) { return (int64_t)((uint64_t)v * (uint64_t)v); }
WK_HD double wk__op_sqrt_f64(double x) { return sqrt(x); }
WK_HD float wk__op_sqrt_f32(float x) { return sqrtf(x); }

WK_HD double wk__op_gelu_f64(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
WK_HD float wk__op_gelu_f32(float x) {
    if (x != x) return x;
    if (isinf(x)) return x > 0 ? x : -0.0f;
    const float k0 = 1.5957691216057308f, k1 = 1.5957691216057308f * 0.044715f;
    float s = x * (k0 + k1 * x * x); /* 2u */
    float e = expf(-fabsf(s));
    return x * (s >= 0 ? 1.0f : e) / (1.0f + e);
}
WK_HD double wk__op_gelu_erf_f64(double x) { return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); }
WK_HD float wk__op_gelu_erf_f32(float x) {
    if (x != x) return x;
    if (isinf(x)) return x > 0 ? x : -0.0f;
    return 0.5f * x * erfcf(-x * 0.70710678118654752440f);
}
WK_HD double wk__op_erf_f64(double x) { return erf(x); }
WK_HD float wk__op_erf_f32(float x) { return erff(x); }

WK_HD double wk__op_relu_f64(double x) { return x < 0 ? 0.0 : x; }
WK_HD float wk__op_relu_f32(float x) { return x < 0 ? 0.0f : x; }
WK_HD int64_t wk__op_relu_int(int64_t v) { return v < 0 ? 0 : v; }

WK_HD double wk__op_silu_f64(double x) { return x / (1.0 + exp(-x)); }
WK_HD float wk__op_silu_f32(float x) {
    if (x != x) return x;
    if (isinf(x)) return x > 0 ? x : -0.0f;
    float e = expf(-fabsf(x));
    return x * (x >= 0 ? 1.0f : e) / (1.0f + e);
}

WK_HD double wk__op_ceil_f64(double x) { return ceil(x); }
WK_HD float wk__op_ceil_f32(float x) { return ceilf(x); }
WK_HD double wk__op_floor_f64(double x) { return floor(x); }
WK_HD float wk__op_floor_f32(float x) { return floorf(x); }
WK_HD double wk__op_round_f64(double x) { return round(x); }
WK_HD float wk__op_round_f32(float x) { return roundf(x); }

WK_HD double wk__op_sign_f64(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
WK_HD float wk__op_sign_f32(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }
WK_HD int64_t wk__op_sign_int(int64_t v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }

WK_HD double wk__op_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }
WK_HD float wk__op_sigmoid_f32(float x) {
    if (x != x) return x;
    float e = expf(-fabsf(x));
    return (x >= 0 ? 1.0f : e) / (1.0f + e);
}

/* The integers column picks the integer math: INT_DEF ops have their own,
 * INT_ID ops are the identity, INT_NONE ops never reach a kernel
 * (src/ops/elementwise.c rejects integer inputs first), so the identity
 * stands in. */
#define WK__INT_INT_DEF(n, v) wk__op_##n##_int(v)
#define WK__INT_INT_ID(n, v) (v)
#define WK__INT_INT_NONE(n, v) (v)

#define WK__CASE_U64(e, n, ...) case e: return wk__op_##n##_f64(x);
#define WK__CASE_U32(e, n, ...) case e: return wk__op_##n##_f32(x);
#define WK__CASE_UINT(e, n, ir, ...) case e: return WK__INT_##ir(n, v);
WK_HD double wk__unary_f64(wk_unary_op op, double x) {
    switch (op) {
        WK_UNARY_OPS(WK__CASE_U64)
    case WK_UNARY_COUNT: break;
    }
    return x;
}
WK_HD float wk__unary_f32(wk_unary_op op, float x) {
    switch (op) {
        WK_UNARY_OPS(WK__CASE_U32)
    case WK_UNARY_COUNT: break;
    }
    return x;
}
WK_HD int64_t wk__unary_int(wk_unary_op op, int64_t v) {
    switch (op) {
        WK_UNARY_OPS(WK__CASE_UINT)
    case WK_UNARY_COUNT: break;
    }
    return v;
}
#undef WK__CASE_U64
#undef WK__CASE_U32
#undef WK__CASE_UINT

/* --------------------------------------------------------------- binary */

WK_HD double wk__op_add_f64(double x, double y) { return x + y; }
WK_HD float wk__op_add_f32(float x, float y) { return x + y; }
WK_HD int64_t wk__op_add_int(int64_t x, int64_t y, int *err) {
    (void)err;
    return (int64_t)((uint64_t)x + (uint64_t)y);
}
WK_HD double wk__op_sub_f64(double x, double y) { return x - y; }
WK_HD float wk__op_sub_f32(float x, float y) { return x - y; }
WK_HD int64_t wk__op_sub_int(int64_t x, int64_t y, int *err) {
    (void)err;
    return (int64_t)((uint64_t)x - (uint64_t)y);
}
WK_HD double wk__op_mul_f64(double x, double y) { return x * y; }
WK_HD float wk__op_mul_f32(float x, float y) { return x * y; }
WK_HD int64_t wk__op_mul_int(int64_t x, int64_t y, int *err) {
    (void)err;
    return (int64_t)((uint64_t)x * (uint64_t)y);
}
WK_HD double wk__op_div_f64(double x, double y) { return x / y; }
WK_HD float wk__op_div_f32(float x, float y) { return x / y; }
/* y == -1 only for signed dtypes (unsigned values are zero-extended):
 * MIN / -1 wraps to MIN instead of trapping. Values of a 32-bit (or
 * narrower) dtype divide in 32 bits: the same quotient, and about twice as
 * fast as a 64-bit division on x86 (and on a GPU, where both are
 * emulated). */
WK_HD int64_t wk__op_div_int(int64_t x, int64_t y, int *err) {
    if (y == 0) {
        *err = WK_ERR_DIV_ZERO;
        return 0;
    }
    if (y == -1) return (int64_t)(0u - (uint64_t)x);
    if ((uint64_t)x <= 0xffffffffu && (uint64_t)y <= 0xffffffffu) return (int64_t)((uint32_t)x / (uint32_t)y);
    if (x >= INT32_MIN && x <= INT32_MAX && y >= INT32_MIN && y <= INT32_MAX) return (int32_t)x / (int32_t)y;
    return x / y;
}
/* NaN if either is NaN (x + y is that NaN), else x > y ? x : y */
WK_HD double wk__op_maximum_f64(double x, double y) { return (x != x || y != y) ? x + y : (x > y ? x : y); }
WK_HD float wk__op_maximum_f32(float x, float y) { return (x != x || y != y) ? x + y : (x > y ? x : y); }
WK_HD int64_t wk__op_maximum_int(int64_t x, int64_t y, int *err) {
    (void)err;
    return x > y ? x : y;
}
WK_HD double wk__op_minimum_f64(double x, double y) { return (x != x || y != y) ? x + y : (x < y ? x : y); }
WK_HD float wk__op_minimum_f32(float x, float y) { return (x != x || y != y) ? x + y : (x < y ? x : y); }
WK_HD int64_t wk__op_minimum_int(int64_t x, int64_t y, int *err) {
    (void)err;
    return x < y ? x : y;
}
WK_HD double wk__op_pow_f64(double x, double y) { return pow(x, y); }
WK_HD float wk__op_pow_f32(float x, float y) { return powf(x, y); }
/* Square and multiply in uint64_t: the exact power modulo 2^64, whose low
 * bits are the dtype's wrapped power; at most 64 rounds. 0^0 = 1. */
WK_HD int64_t wk__op_pow_int(int64_t x, int64_t y, int *err) {
    if (y < 0) {
        *err = WK_ERR_ARG;
        return 0;
    }
    uint64_t r = 1, b = (uint64_t)x, e = (uint64_t)y;
    while (e) {
        if (e & 1u) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

#define WK__CASE_B64(e, n, ...) case e: return wk__op_##n##_f64(x, y);
#define WK__CASE_B32(e, n, ...) case e: return wk__op_##n##_f32(x, y);
#define WK__CASE_BINT(e, n, ...) case e: return wk__op_##n##_int(x, y, err);
WK_HD double wk__binary_f64(wk_binary_op op, double x, double y) {
    switch (op) {
        WK_BINARY_OPS(WK__CASE_B64)
    case WK_BINARY_COUNT: break;
    }
    return x;
}
WK_HD float wk__binary_f32(wk_binary_op op, float x, float y) {
    switch (op) {
        WK_BINARY_OPS(WK__CASE_B32)
    case WK_BINARY_COUNT: break;
    }
    return x;
}
WK_HD int64_t wk__binary_int(wk_binary_op op, int64_t x, int64_t y, int *err) {
    switch (op) {
        WK_BINARY_OPS(WK__CASE_BINT)
    case WK_BINARY_COUNT: break;
    }
    return x;
}
#undef WK__CASE_B64
#undef WK__CASE_B32
#undef WK__CASE_BINT

/* ---------------------------------------------------------- comparisons */

#define WK__CASE_CMP(e, n, OP) case e: return x OP y;
WK_HD bool wk__cmp_f64(wk_cmp_op op, double x, double y) {
    switch (op) {
        WK_CMP_OPS(WK__CASE_CMP)
    case WK_CMP_COUNT: break;
    }
    return false;
}
WK_HD bool wk__cmp_f32(wk_cmp_op op, float x, float y) {
    switch (op) {
        WK_CMP_OPS(WK__CASE_CMP)
    case WK_CMP_COUNT: break;
    }
    return false;
}
WK_HD bool wk__cmp_int(wk_cmp_op op, int64_t x, int64_t y) {
    switch (op) {
        WK_CMP_OPS(WK__CASE_CMP)
    case WK_CMP_COUNT: break;
    }
    return false;
}
#undef WK__CASE_CMP

#endif
