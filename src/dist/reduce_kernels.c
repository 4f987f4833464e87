/* acc = acc op src, element by element, for every element dtype. Integer
 * sums and products wrap (computed unsigned, as two's complement), float
 * max / min propagate NaN (as torch), half types compute in f32 and round
 * back once per call: a ring hop rounds as NCCL's does. */
#include <math.h>
#include <string.h>
#include "dist/dist_internal.h"

bool wk__dist_reducible(wk_dtype dt, wk_dist_op op) {
    if ((unsigned)op >= WK_DIST_OP_COUNT || dt >= WK_ELEM_DTYPE_COUNT) return false;
    if (op == WK_DIST_AVG) return wk_dtype_is_float(dt);
    return true;
}

#define INT_LOOP(T, UT)                                                                        \
    do {                                                                                       \
        T *a = acc;                                                                            \
        const T *b = src;                                                                      \
        switch (op) {                                                                          \
        case WK_DIST_SUM:                                                                      \
            for (int64_t i = 0; i < n; i++) a[i] = (T)((UT)a[i] + (UT)b[i]);                   \
            break;                                                                             \
        case WK_DIST_PROD:                                                                     \
            for (int64_t i = 0; i < n; i++) a[i] = (T)((UT)a[i] * (UT)b[i]);                   \
            break;                                                                             \
        case WK_DIST_MAX:                                                                      \
            for (int64_t i = 0; i < n; i++) a[i] = b[i] > a[i] ? b[i] : a[i];                  \
            break;                                                                             \
        default:                                                                               \
            for (int64_t i = 0; i < n; i++) a[i] = b[i] < a[i] ? b[i] : a[i];                  \
            break;                                                                             \
        }                                                                                      \
    } while (0)

static inline double fop(wk_dist_op op, double a, double b) {
    switch (op) {
    case WK_DIST_SUM:
    case WK_DIST_AVG: return a + b;
    case WK_DIST_PROD: return a * b;
    case WK_DIST_MAX: return (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a);
    default: return (isnan(a) || isnan(b)) ? NAN : (b < a ? b : a);
    }
}

static inline float fopf(wk_dist_op op, float a, float b) {
    switch (op) {
    case WK_DIST_SUM:
    case WK_DIST_AVG: return a + b;
    case WK_DIST_PROD: return a * b;
    case WK_DIST_MAX: return (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a);
    default: return (isnan(a) || isnan(b)) ? NAN : (b < a ? b : a);
    }
}

void wk__dist_reduce(wk_dtype dt, wk_dist_op op, void *acc, const void *src, int64_t n) {
    switch (dt) {
    case WK_U8: INT_LOOP(uint8_t, uint32_t); break;
    case WK_U32: INT_LOOP(uint32_t, uint32_t); break;
    case WK_I16: INT_LOOP(int16_t, uint32_t); break;
    case WK_I32: INT_LOOP(int32_t, uint32_t); break;
    case WK_I64: INT_LOOP(int64_t, uint64_t); break;
    case WK_F32: {
        float *a = acc;
        const float *b = src;
        if (op == WK_DIST_SUM || op == WK_DIST_AVG)
            for (int64_t i = 0; i < n; i++) a[i] += b[i]; /* the hot path: vectorises */
        else
            for (int64_t i = 0; i < n; i++) a[i] = fopf(op, a[i], b[i]);
        break;
    }
    case WK_F64: {
        double *a = acc;
        const double *b = src;
        for (int64_t i = 0; i < n; i++) a[i] = fop(op, a[i], b[i]);
        break;
    }
    case WK_F16: {
        uint16_t *a = acc;
        const uint16_t *b = src;
        for (int64_t i = 0; i < n; i++) a[i] = wk_f32_to_f16(fopf(op, wk_f16_to_f32(a[i]), wk_f16_to_f32(b[i])));
        break;
    }
    case WK_BF16: {
        uint16_t *a = acc;
        const uint16_t *b = src;
        for (int64_t i = 0; i < n; i++) a[i] = wk_f32_to_bf16(fopf(op, wk_bf16_to_f32(a[i]), wk_bf16_to_f32(b[i])));
        break;
    }
    case WK_F8E4M3: {
        uint8_t *a = acc;
        const uint8_t *b = src;
        for (int64_t i = 0; i < n; i++)
            a[i] = wk_f32_to_f8e4m3(fopf(op, wk_f8e4m3_to_f32(a[i]), wk_f8e4m3_to_f32(b[i])));
        break;
    }
    default: break; /* callers check wk__dist_reducible first */
    }
}

void wk__dist_divide(wk_dtype dt, void *acc, int64_t n, int k) {
    switch (dt) {
    case WK_F32: {
        float *a = acc;
        for (int64_t i = 0; i < n; i++) a[i] /= (float)k;
        break;
    }
    case WK_F64: {
        double *a = acc;
        for (int64_t i = 0; i < n; i++) a[i] /= (double)k;
        break;
    }
    case WK_F16: {
        uint16_t *a = acc;
        for (int64_t i = 0; i < n; i++) a[i] = wk_f32_to_f16(wk_f16_to_f32(a[i]) / (float)k);
        break;
    }
    case WK_BF16: {
        uint16_t *a = acc;
        for (int64_t i = 0; i < n; i++) a[i] = wk_f32_to_bf16(wk_bf16_to_f32(a[i]) / (float)k);
        break;
    }
    case WK_F8E4M3: {
        uint8_t *a = acc;
        for (int64_t i = 0; i < n; i++) a[i] = wk_f32_to_f8e4m3(wk_f8e4m3_to_f32(a[i]) / (float)k);
        break;
    }
    default: break;
    }
}
