/* Element load/store helpers for every dtype, with defined results for every
 * input (no C undefined behaviour); the rules are at the top of
 * base/dtype_convert.inc, the one copy the CUDA kernels instantiate too:
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

static inline uint32_t wk__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float wk__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* wk__sat, wk__load_f64, wk__load_i64, wk__store_i64, wk__f64_to_f32_odd,
 * wk__store_f64: the one copy in base/dtype_convert.inc (shared with CUDA). */
#define WKCV(name) wk__##name
#define WKCV_HD static inline
#define WKCV_DT wk_dtype
#define WKCV_F2U wk__f32_bits
#define WKCV_U2F wk__bits_f32
#define WKCV_BF16_TO_F32 wk_bf16_to_f32
#define WKCV_F32_TO_BF16 wk_f32_to_bf16
#define WKCV_F16_TO_F32 wk_f16_to_f32
#define WKCV_F32_TO_F16 wk_f32_to_f16
#define WKCV_F8_TO_F32 wk_f8e4m3_to_f32
#define WKCV_F32_TO_F8 wk_f32_to_f8e4m3
#include "base/dtype_convert.inc" /* #undefs the WKCV* parameters */

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
