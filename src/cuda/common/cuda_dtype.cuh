/* Element conversions for the CUDA kernels: the same rules as the CPU.
 * The narrow-float conversions of src/base/dtype.c are ported line by line
 * as __host__ __device__ functions (the host checks them against the C
 * originals); the runtime-dtype loads and stores are the CPU's own code,
 * base/dtype_convert.inc, instantiated here over those conversions:
 *  - into f16/bf16: round to nearest even in integer arithmetic (NaN stays
 *    NaN with wick's payload rule); into f8e4m3: saturating to +-448;
 *  - f64 into a narrow float: first to f32 rounded to odd, then RNE;
 *  - float -> integer: truncate, saturate, NaN -> 0;
 *  - integer -> integer: wrap modulo 2^bits.
 * Checked: compiled (nvcc, host and sm_80..sm_90 device code) and run on the
 * host against src/base/dtype.c. */
#ifndef WICK_CUDA_DTYPE_CUH
#define WICK_CUDA_DTYPE_CUH
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "wick/wick.h"

#define WKC_HD __host__ __device__ __forceinline__

WKC_HD uint32_t wkc_f2u(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}
WKC_HD float wkc_u2f(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

/* ---- narrow floats (dtype.c) ---- */

WKC_HD uint16_t wkc_f32_to_bf16(float x) {
    uint32_t u = wkc_f2u(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
WKC_HD float wkc_bf16_to_f32(uint16_t h) { return wkc_u2f((uint32_t)h << 16); }

WKC_HD uint16_t wkc_f32_to_f16(float x) {
    uint32_t u = wkc_f2u(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | (uint16_t)((a >> 13) & 0x1ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        if (a < 0x33000000u) return sign;
        uint32_t e = a >> 23;
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | (uint16_t)q);
    }
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)(r >> 13));
}

WKC_HD float wkc_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return wkc_u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return wkc_u2f(sign);
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return wkc_u2f(sign | ((e + 112u) << 23) | (m << 13));
}

WKC_HD uint8_t wkc_f32_to_f8e4m3(float x) {
    uint32_t u = wkc_f2u(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint8_t)(sign | 0x7f);
    float ax = wkc_u2f(a);
    if (ax >= 464.0f) return (uint8_t)(sign | 0x7e);
    if (ax < 0x1p-6f) {
        /* ax * 512 is exact and below 8: round half to even in integers */
        float q = ax * 512.0f;
        uint32_t fl = (uint32_t)q;          /* truncation = floor (q >= 0) */
        float diff = q - (float)fl;
        uint32_t r = diff > 0.5f ? fl + 1 : diff < 0.5f ? fl : ((fl & 1u) == 0 ? fl : fl + 1);
        return (uint8_t)(sign | (uint8_t)r);
    }
    uint32_t e = (a >> 23) - 127 + 7;
    uint32_t m = a & 0x7fffffu;
    uint32_t v = (e << 23) | m;
    v += 0x7ffffu + ((v >> 20) & 1u);
    uint32_t out = v >> 20;
    if (out > 0x7e) out = 0x7e;
    return (uint8_t)(sign | (uint8_t)out);
}

WKC_HD float wkc_f8e4m3_to_f32(uint8_t v) {
    uint32_t sign = v & 0x80u;
    uint32_t e = (v >> 3) & 0xfu, m = v & 7u;
    if (e == 0xf && m == 7) return wkc_u2f((sign << 24) | 0x7fc00000u);
    /* exact: m * 2^-9, or (8 + m) * 2^(e-10) built from its bits */
    float r = e == 0 ? (float)m * 0x1p-9f : wkc_u2f(((e + 120u) << 23) | (m << 20));
    return sign ? -r : r;
}

/* ---- cpu_convert.h ---- */

/* wkc_sat, wkc_load_f64, wkc_load_i64, wkc_store_i64, wkc_f64_to_f32_odd,
 * wkc_store_f64: the CPU's own code (base/dtype_convert.inc) over the
 * conversions above, instantiated for the device. */
#define WKCV(name) wkc_##name
#define WKCV_HD WKC_HD
#define WKCV_DT int
#define WKCV_F2U wkc_f2u
#define WKCV_U2F wkc_u2f
#define WKCV_BF16_TO_F32 wkc_bf16_to_f32
#define WKCV_F32_TO_BF16 wkc_f32_to_bf16
#define WKCV_F16_TO_F32 wkc_f16_to_f32
#define WKCV_F32_TO_F16 wkc_f32_to_f16
#define WKCV_F8_TO_F32 wkc_f8e4m3_to_f32
#define WKCV_F32_TO_F8 wkc_f32_to_f8e4m3
#include "base/dtype_convert.inc" /* #undefs the WKCV* parameters */

WKC_HD bool wkc_is_int(int dt) { return dt == WK_U8 || dt == WK_U32 || dt == WK_I16 || dt == WK_I32 || dt == WK_I64; }

WKC_HD int wkc_size(int dt) {
    switch (dt) {
    case WK_U8: case WK_F8E4M3: return 1;
    case WK_I16: case WK_BF16: case WK_F16: return 2;
    case WK_U32: case WK_I32: case WK_F32: return 4;
    case WK_I64: case WK_F64: return 8;
    default: return 0;
    }
}

/* One rounding per operation, never an FMA contraction (nvcc would fuse
 * a * b + c): x * a + b rounded twice, as the CPU computes it. */
WKC_HD float wkc_mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
WKC_HD float wkc_add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
WKC_HD double wkc_mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
WKC_HD double wkc_add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

/* The same conversions returning the element's bits (low bytes of the
 * result) instead of storing them: kernels compute into registers and store
 * later. wkc_put_bits stores such bits as element i of p. */
WKC_HD unsigned long long wkc_bits_i64(int dt, long long v) {
    switch (dt) {
    case WK_U8: return (uint8_t)(unsigned long long)v;
    case WK_U32: return (uint32_t)(unsigned long long)v;
    case WK_I16: return (uint16_t)(unsigned long long)v;
    case WK_I32: return (uint32_t)(unsigned long long)v;
    default: return (unsigned long long)v;
    }
}
WKC_HD unsigned long long wkc_bits_f64(int dt, double v) {
    switch (dt) {
    case WK_U8: return (uint8_t)wkc_sat(v, 0, 255);
    case WK_U32: return (uint32_t)wkc_sat(v, 0, 4294967295.0);
    case WK_I16: return (uint16_t)(int16_t)wkc_sat(v, -32768, 32767);
    case WK_I32: return (uint32_t)(int32_t)wkc_sat(v, -2147483648.0, 2147483647.0);
    case WK_I64:
        return (unsigned long long)(v >= 0x1p63 ? (long long)INT64_MAX
                                                : (long long)wkc_sat(v, -0x1p63, 0x1p63 - 1024));
    case WK_BF16: return wkc_f32_to_bf16(wkc_f64_to_f32_odd(v));
    case WK_F16: return wkc_f32_to_f16(wkc_f64_to_f32_odd(v));
    case WK_F32: return wkc_f2u((float)v);
    case WK_F64: {
#ifdef __CUDA_ARCH__
        return (unsigned long long)__double_as_longlong(v);
#else
        unsigned long long u;
        memcpy(&u, &v, 8);
        return u;
#endif
    }
    case WK_F8E4M3: return wkc_f32_to_f8e4m3(wkc_f64_to_f32_odd(v));
    default: return 0;
    }
}
WKC_HD void wkc_put_bits(void *p, int64_t i, int dt, unsigned long long b) {
    switch (wkc_size(dt)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)b; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)b; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)b; break;
    case 8: ((unsigned long long *)p)[i] = b; break;
    default: break;
    }
}

/* Raw element bits (zero-extended) of a runtime dtype, and values from
 * such bits: loads first, conversions later, so that a thread can have
 * several loads in flight. */
WKC_HD unsigned long long wkc_raw_load(const void *p, int64_t i, int dt) {
    switch (wkc_size(dt)) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    case 8: return ((const unsigned long long *)p)[i];
    default: return 0;
    }
}
WKC_HD double wkc_bits_to_f64(int dt, unsigned long long b) {
    switch (dt) {
    case WK_U8: return (uint8_t)b;
    case WK_U32: return (uint32_t)b;
    case WK_I16: return (int16_t)(uint16_t)b;
    case WK_I32: return (int32_t)(uint32_t)b;
    case WK_I64: return (double)(long long)b;
    case WK_BF16: return wkc_bf16_to_f32((uint16_t)b);
    case WK_F16: return wkc_f16_to_f32((uint16_t)b);
    case WK_F32: return wkc_u2f((uint32_t)b);
    case WK_F64: {
#ifdef __CUDA_ARCH__
        return __longlong_as_double((long long)b);
#else
        double d;
        memcpy(&d, &b, 8);
        return d;
#endif
    }
    case WK_F8E4M3: return wkc_f8e4m3_to_f32((uint8_t)b);
    default: return 0;
    }
}
/* = wkc_load_i64 of the element */
WKC_HD long long wkc_bits_to_i64(int dt, unsigned long long b) {
    switch (dt) {
    case WK_U8: return (uint8_t)b;
    case WK_U32: return (uint32_t)b;
    case WK_I16: return (int16_t)(uint16_t)b;
    case WK_I32: return (int32_t)(uint32_t)b;
    case WK_I64: return (long long)b;
    default: return (long long)wkc_sat(wkc_bits_to_f64(dt, b), -0x1p63, 0x1p63 - 1024);
    }
}

/* Integer dtypes only (the merged integer kernels): sign/zero extension of
 * raw bits, and a double converted saturating to the dtype, as bits. */
WKC_HD long long wkc_int_ext(int dt, unsigned long long b) {
    switch (dt) {
    case WK_U8: return (uint8_t)b;
    case WK_U32: return (uint32_t)b;
    case WK_I16: return (int16_t)(uint16_t)b;
    case WK_I32: return (int32_t)(uint32_t)b;
    default: return (long long)b;
    }
}
WKC_HD unsigned long long wkc_int_bits_f64(int dt, double v) {
    switch (dt) {
    case WK_U8: return (uint8_t)wkc_sat(v, 0, 255);
    case WK_U32: return (uint32_t)wkc_sat(v, 0, 4294967295.0);
    case WK_I16: return (uint16_t)(int16_t)wkc_sat(v, -32768, 32767);
    case WK_I32: return (uint32_t)(int32_t)wkc_sat(v, -2147483648.0, 2147483647.0);
    default:
        return (unsigned long long)(v >= 0x1p63 ? (long long)INT64_MAX
                                                : (long long)wkc_sat(v, -0x1p63, 0x1p63 - 1024));
    }
}

/* ---- compile-time dtype traits for the per-dtype kernels ----
 * S: storage type; C: compute type (f32 for bf16/f16/f8e4m3, as on the
 * CPU); U: the unsigned type integer arithmetic wraps in; val: S -> C. */
template <int DT> struct wkc_t;
#define WKC_INT_TRAIT(DT, ST, UT, SGN)                                                    \
    template <> struct wkc_t<DT> {                                                        \
        typedef ST S;                                                                     \
        typedef ST C;                                                                     \
        typedef UT U;                                                                     \
        static const bool is_int = true, is_signed = SGN, is_f64 = false;                 \
        static WKC_HD C val(S s) { return s; }                                            \
        static WKC_HD C load(const void *p, int64_t i) { return ((const S *)p)[i]; }      \
        static WKC_HD void store(void *p, int64_t i, C v) { ((S *)p)[i] = v; }            \
    };
WKC_INT_TRAIT(WK_U8, uint8_t, uint32_t, false)
WKC_INT_TRAIT(WK_U32, uint32_t, uint32_t, false)
WKC_INT_TRAIT(WK_I16, int16_t, uint32_t, true)
WKC_INT_TRAIT(WK_I32, int32_t, uint32_t, true)
WKC_INT_TRAIT(WK_I64, long long, unsigned long long, true)
#undef WKC_INT_TRAIT

#define WKC_FLOAT_TRAIT(DT, ST, CT, F64, LOAD, STORE)                                     \
    template <> struct wkc_t<DT> {                                                        \
        typedef ST S;                                                                     \
        typedef CT C;                                                                     \
        typedef ST U;                                                                     \
        static const bool is_int = false, is_signed = true, is_f64 = F64;                 \
        static WKC_HD C val(S s) { return LOAD(s); }                                      \
        static WKC_HD C load(const void *p, int64_t i) { return LOAD(((const S *)p)[i]); } \
        static WKC_HD void store(void *p, int64_t i, C v) { ((S *)p)[i] = STORE(v); }     \
    };
#define WKC_ID(x) (x)
WKC_FLOAT_TRAIT(WK_F32, float, float, false, WKC_ID, WKC_ID)
WKC_FLOAT_TRAIT(WK_F64, double, double, true, WKC_ID, WKC_ID)
WKC_FLOAT_TRAIT(WK_BF16, uint16_t, float, false, wkc_bf16_to_f32, wkc_f32_to_bf16)
WKC_FLOAT_TRAIT(WK_F16, uint16_t, float, false, wkc_f16_to_f32, wkc_f32_to_f16)
WKC_FLOAT_TRAIT(WK_F8E4M3, uint8_t, float, false, wkc_f8e4m3_to_f32, wkc_f32_to_f8e4m3)
#undef WKC_FLOAT_TRAIT

#endif
