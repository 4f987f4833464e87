/* Element load/store helpers for every dtype, with defined results for every
 * input (no C undefined behaviour):
 *  - float -> integer: truncates toward zero, saturates at the type's range,
 *    NaN -> 0 (Rust `as`, which candle inherits).
 *  - integer -> integer: wraps modulo 2^bits (numpy's astype).
 *  - into f16/bf16: round to nearest even; into f8e4m3: saturating. */
#ifndef WICK_CPU_CONVERT_H
#define WICK_CPU_CONVERT_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "wick/wick.h"

static inline double wk__sat(double v, double lo, double hi) {
    if (v != v) return 0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* Load element i of a typed buffer as double. */
static inline double wk__load_f64(const void *p, int64_t i, wk_dtype dt) {
    switch (dt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I16: return ((const int16_t *)p)[i];
    case WK_I32: return ((const int32_t *)p)[i];
    case WK_I64: return (double)((const int64_t *)p)[i];
    case WK_BF16: return wk_bf16_to_f32(((const uint16_t *)p)[i]);
    case WK_F16: return wk_f16_to_f32(((const uint16_t *)p)[i]);
    case WK_F32: return ((const float *)p)[i];
    case WK_F64: return ((const double *)p)[i];
    case WK_F8E4M3: return wk_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    default: return 0;
    }
}

/* Integer dtypes loaded exactly. */
static inline int64_t wk__load_i64(const void *p, int64_t i, wk_dtype dt) {
    switch (dt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I16: return ((const int16_t *)p)[i];
    case WK_I32: return ((const int32_t *)p)[i];
    case WK_I64: return ((const int64_t *)p)[i];
    default: return (int64_t)wk__sat(wk__load_f64(p, i, dt), -0x1p63, 0x1p63 - 1024);
    }
}

static inline void wk__store_i64(void *p, int64_t i, wk_dtype dt, int64_t v) {
    switch (dt) {
    case WK_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case WK_U32: ((uint32_t *)p)[i] = (uint32_t)(uint64_t)v; break;
    case WK_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
    case WK_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case WK_I64: ((int64_t *)p)[i] = v; break;
    default: break;
    }
}

/* f64 -> f32 rounding to odd: truncate toward zero, then set the last bit if
 * anything was cut off. A second rounding from this f32 to f16/bf16/f8 (11 or
 * fewer bits) then equals a single correct rounding of the f64. */
static inline float wk__f64_to_f32_odd(double v) {
    float f = (float)v;
    if ((double)f == v || v != v) return f;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    uint32_t u;
    memcpy(&u, &f, 4);
    u |= 1u;
    memcpy(&f, &u, 4);
    return f;
}

/* Store a double into element i with the conversion rules above. */
static inline void wk__store_f64(void *p, int64_t i, wk_dtype dt, double v) {
    switch (dt) {
    case WK_U8: ((uint8_t *)p)[i] = (uint8_t)wk__sat(v, 0, 255); break;
    case WK_U32: ((uint32_t *)p)[i] = (uint32_t)wk__sat(v, 0, 4294967295.0); break;
    case WK_I16: ((int16_t *)p)[i] = (int16_t)wk__sat(v, -32768, 32767); break;
    case WK_I32: ((int32_t *)p)[i] = (int32_t)wk__sat(v, -2147483648.0, 2147483647.0); break;
    /* 2^63 and above saturate to INT64_MAX (not representable as a double) */
    case WK_I64: ((int64_t *)p)[i] = v >= 0x1p63 ? INT64_MAX : (int64_t)wk__sat(v, -0x1p63, 0x1p63 - 1024); break;
    case WK_BF16: ((uint16_t *)p)[i] = wk_f32_to_bf16(wk__f64_to_f32_odd(v)); break;
    case WK_F16: ((uint16_t *)p)[i] = wk_f32_to_f16(wk__f64_to_f32_odd(v)); break;
    case WK_F32: ((float *)p)[i] = (float)v; break;
    case WK_F64: ((double *)p)[i] = v; break;
    case WK_F8E4M3: ((uint8_t *)p)[i] = wk_f32_to_f8e4m3(wk__f64_to_f32_odd(v)); break;
    default: break;
    }
}

/* Narrow float dtypes computed through f32 blocks. */
static inline bool wk__is_narrow_float(wk_dtype dt) { return dt == WK_BF16 || dt == WK_F16 || dt == WK_F8E4M3; }

static inline float wk__narrow_load(const void *p, int64_t i, wk_dtype dt) {
    switch (dt) {
    case WK_BF16: return wk_bf16_to_f32(((const uint16_t *)p)[i]);
    case WK_F16: return wk_f16_to_f32(((const uint16_t *)p)[i]);
    default: return wk_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    }
}
static inline void wk__narrow_store(void *p, int64_t i, wk_dtype dt, float v) {
    switch (dt) {
    case WK_BF16: ((uint16_t *)p)[i] = wk_f32_to_bf16(v); break;
    case WK_F16: ((uint16_t *)p)[i] = wk_f32_to_f16(v); break;
    default: ((uint8_t *)p)[i] = wk_f32_to_f8e4m3(v); break;
    }
}

#endif
