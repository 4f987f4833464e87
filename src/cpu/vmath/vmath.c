/* Vectorized f32 math: run-time dispatch and the portable scalar kernels.
 *
 * Dispatch: the first call resolves the best level this CPU (and OS) supports
 * -- avx512 (F+BW+DQ+VL), avx2 (AVX2+FMA+F16C) or scalar -- lowered by the
 * WICK_ISA environment variable ("avx2" or "scalar"; "avx512"/"auto" mean
 * "the best available"; base/env.c reports any other value on stderr and it
 * is ignored). The choice is published
 * through an atomic pointer to a kernel table, so concurrent first calls are
 * harmless (they compute the same answer) and later calls cost one load.
 *
 * The scalar level evaluates each function in double precision with libm and
 * rounds once to float, so it is accurate to ~0.5 ulp; it is the fallback for
 * CPUs without AVX2 and a reference for the SIMD kernels. The SIMD kernels
 * (vmath_avx2.c, vmath_avx512.c) use the range-reduced polynomial algorithms
 * described there.
 */
#include "cpu/vmath/vmath.h"
#include "base/env.h"
#include "wick/wick.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define WK_VMATH_X86 1
#include <cpuid.h>
#else
#define WK_VMATH_X86 0
#endif

/* ------------------------------------------------------------ scalar level */

static inline double sc_exp_m_abs(double x) { return exp(-fabs(x)); }

static float s_exp1(float x) { return (float)exp((double)x); }

static float s_tanh1(float x) { return (float)tanh((double)x); }

/* sigmoid(x) = num / (1 + e), e = exp(-|x|), num = x >= 0 ? 1 : e: no overflow
 * and full relative accuracy for very negative x. */
static float s_sigmoid1(float x) {
    if (isnan(x)) return x;
    double e = sc_exp_m_abs(x);
    return (float)((x >= 0 ? 1.0 : e) / (1.0 + e));
}

/* silu(-inf) and gelu(-inf) return -0 (the limit) rather than -inf*0 = NaN. */
static float s_silu1(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return x > 0 ? x : -0.0f;
    double e = sc_exp_m_abs(x);
    return (float)((double)x * (x >= 0 ? 1.0 : e) / (1.0 + e));
}

static const double K_GELU0 = 1.5957691216057308;          /* 2*sqrt(2/pi) */
static const double K_GELU1 = 1.5957691216057308 * 0.044715;

/* gelu (tanh form) = 0.5x(1+tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi)(x+0.044715x^3). */
static float s_gelu1(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return x > 0 ? x : -0.0f;
    double xd = x;
    double s = xd * (K_GELU0 + K_GELU1 * xd * xd); /* 2u */
    double e = sc_exp_m_abs(s);
    return (float)(xd * (s >= 0 ? 1.0 : e) / (1.0 + e));
}

static float s_erf1(float x) { return (float)erf((double)x); }

/* 0.5x(1+erf(x/sqrt2)) = 0.5x erfc(-x/sqrt2): no cancellation for x < 0. */
static float s_gelu_erf1(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return x > 0 ? x : -0.0f;
    double xd = x;
    return (float)(0.5 * xd * erfc(-xd * 0.70710678118654752440));
}

static float s_log1(float x) { return (float)log((double)x); }

#define WK_SCALAR_UNARY(name, f1)                                   \
    static void name(float *y, const float *x, int64_t n) {         \
        for (int64_t i = 0; i < n; i++) y[i] = f1(x[i]);            \
    }
WK_SCALAR_UNARY(s_vexp, s_exp1)
WK_SCALAR_UNARY(s_vtanh, s_tanh1)
WK_SCALAR_UNARY(s_vsigmoid, s_sigmoid1)
WK_SCALAR_UNARY(s_vsilu, s_silu1)
WK_SCALAR_UNARY(s_vgelu, s_gelu1)
WK_SCALAR_UNARY(s_verf, s_erf1)
WK_SCALAR_UNARY(s_vgelu_erf, s_gelu_erf1)
WK_SCALAR_UNARY(s_vlog, s_log1)

/* maximum/minimum: NaN if either operand is NaN (numpy); otherwise
 * a > b ? a : b, i.e. the second operand on ties (as the x86 max/min
 * instructions, so every level agrees, including on -0 vs +0). */
static inline float s_max(float a, float b) {
    if (isnan(a) || isnan(b)) return a + b;
    return a > b ? a : b;
}
static inline float s_min(float a, float b) {
    if (isnan(a) || isnan(b)) return a + b;
    return a < b ? a : b;
}

static void s_vbinary(int op, float *y, const float *a, const float *b, int64_t n) {
    int64_t i;
    switch (op) {
    case 0: for (i = 0; i < n; i++) y[i] = a[i] + b[i]; break;
    case 1: for (i = 0; i < n; i++) y[i] = a[i] - b[i]; break;
    case 2: for (i = 0; i < n; i++) y[i] = a[i] * b[i]; break;
    case 3: for (i = 0; i < n; i++) y[i] = a[i] / b[i]; break;
    case 4: for (i = 0; i < n; i++) y[i] = s_max(a[i], b[i]); break;
    case 5: for (i = 0; i < n; i++) y[i] = s_min(a[i], b[i]); break;
    default: break; /* unknown op: y untouched (callers validate op) */
    }
}

static void s_vbinary_scalar(int op, float *y, const float *a, float s, int64_t n) {
    int64_t i;
    switch (op) {
    case 0: for (i = 0; i < n; i++) y[i] = a[i] + s; break;
    case 1: for (i = 0; i < n; i++) y[i] = a[i] - s; break;
    case 2: for (i = 0; i < n; i++) y[i] = a[i] * s; break;
    case 3: for (i = 0; i < n; i++) y[i] = a[i] / s; break;
    case 4: for (i = 0; i < n; i++) y[i] = s_max(a[i], s); break;
    case 5: for (i = 0; i < n; i++) y[i] = s_min(a[i], s); break;
    default: break;
    }
}

/* f16/bf16 <-> f32: wick's scalar conversions themselves (src/base/dtype.c),
 * the definition the SIMD levels reproduce bit for bit. */
static void s_vcvt_f16_to_f32(float *y, const uint16_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = wk_f16_to_f32(x[i]);
}
static void s_vcvt_bf16_to_f32(float *y, const uint16_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = wk_bf16_to_f32(x[i]);
}
static void s_vcvt_f32_to_f16(uint16_t *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = wk_f32_to_f16(x[i]);
}
static void s_vcvt_f32_to_bf16(uint16_t *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = wk_f32_to_bf16(x[i]);
}

/* --------------------------------------------------------------- dispatch */

typedef void (*wk_vunary_fn)(float *, const float *, int64_t);

typedef struct wk_vmath_kernels {
    const char *name;
    int level;
    wk_vunary_fn exp, tanh, sigmoid, silu, gelu, erf, gelu_erf, log;
    void (*binary)(int, float *, const float *, const float *, int64_t);
    void (*binary_scalar)(int, float *, const float *, float, int64_t);
    float (*sum)(const float *, int64_t);
    float (*maxmin)(const float *, int64_t, int);
    void (*cvt_f16_to_f32)(float *, const uint16_t *, int64_t);
    void (*cvt_bf16_to_f32)(float *, const uint16_t *, int64_t);
    void (*cvt_f32_to_f16)(uint16_t *, const float *, int64_t);
    void (*cvt_f32_to_bf16)(uint16_t *, const float *, int64_t);
} wk_vmath_kernels;

#define VRED(x) s_v##x
#include "cpu/vmath/vreduce.inc"
#undef VRED

static const wk_vmath_kernels K_SCALAR = {
    "scalar", WK_VMATH_SCALAR,
    s_vexp, s_vtanh, s_vsigmoid, s_vsilu, s_vgelu, s_verf, s_vgelu_erf, s_vlog,
    s_vbinary, s_vbinary_scalar, s_vsum, s_vmaxmin,
    s_vcvt_f16_to_f32, s_vcvt_bf16_to_f32, s_vcvt_f32_to_f16, s_vcvt_f32_to_bf16,
};

#if WK_VMATH_X86
static const wk_vmath_kernels K_AVX2 = {
    "avx2", WK_VMATH_AVX2,
    wk__vexp_f32_avx2, wk__vtanh_f32_avx2, wk__vsigmoid_f32_avx2, wk__vsilu_f32_avx2,
    wk__vgelu_f32_avx2, wk__verf_f32_avx2, wk__vgelu_erf_f32_avx2, wk__vlog_f32_avx2,
    wk__vbinary_f32_avx2, wk__vbinary_scalar_f32_avx2, wk__vsum_f32_avx2, wk__vmaxmin_f32_avx2,
    wk__vcvt_f16_to_f32_avx2, wk__vcvt_bf16_to_f32_avx2, wk__vcvt_f32_to_f16_avx2, wk__vcvt_f32_to_bf16_avx2,
};
static const wk_vmath_kernels K_AVX512 = {
    "avx512", WK_VMATH_AVX512,
    wk__vexp_f32_avx512, wk__vtanh_f32_avx512, wk__vsigmoid_f32_avx512, wk__vsilu_f32_avx512,
    wk__vgelu_f32_avx512, wk__verf_f32_avx512, wk__vgelu_erf_f32_avx512, wk__vlog_f32_avx512,
    wk__vbinary_f32_avx512, wk__vbinary_scalar_f32_avx512, wk__vsum_f32_avx512, wk__vmaxmin_f32_avx512,
    wk__vcvt_f16_to_f32_avx512, wk__vcvt_bf16_to_f32_avx512, wk__vcvt_f32_to_f16_avx512, wk__vcvt_f32_to_bf16_avx512,
};
#endif

static const wk_vmath_kernels *level_table(int level) {
#if WK_VMATH_X86
    if (level >= WK_VMATH_AVX512) return &K_AVX512;
    if (level == WK_VMATH_AVX2) return &K_AVX2;
#else
    (void)level;
#endif
    return &K_SCALAR;
}

/* Highest level the CPU and OS support (cpuid + XCR0 via the compiler's
 * __builtin_cpu_supports, which checks that the OS saves the YMM/ZMM state). */
static int detect_max_level(void) {
#if WK_VMATH_X86
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return WK_VMATH_AVX512;
    if (avx2) return WK_VMATH_AVX2;
#endif
    return WK_VMATH_SCALAR;
}

static int auto_level(void) {
    int max = detect_max_level();
    int64_t isa;
    if (wk__env_get(WK_ENV_ISA, &isa)) {
        if (isa == WK_ENV_ISA_SCALAR) return WK_VMATH_SCALAR;
        if (isa == WK_ENV_ISA_AVX2) return max < WK_VMATH_AVX2 ? max : WK_VMATH_AVX2;
        /* "avx512" or "auto": the best available (a bad word was reported) */
    }
    return max;
}

static _Atomic(const wk_vmath_kernels *) g_kernels;

static const wk_vmath_kernels *resolve(void) {
    const wk_vmath_kernels *k = level_table(auto_level());
    atomic_store_explicit(&g_kernels, k, memory_order_release);
    return k;
}

static inline const wk_vmath_kernels *kt(void) {
    const wk_vmath_kernels *k = atomic_load_explicit(&g_kernels, memory_order_acquire);
    return k ? k : resolve();
}

int wk__vmath_max_level(void) { return detect_max_level(); }

int wk__vmath_level(void) { return kt()->level; }

int wk__vmath_set_level(int level) {
    if (level < 0) {
        resolve();
        return 0;
    }
    if (level > WK_VMATH_AVX512 || level > detect_max_level()) return -1;
    atomic_store_explicit(&g_kernels, level_table(level), memory_order_release);
    return 0;
}

const char *wk__vmath_isa(void) { return kt()->name; }

void wk__vexp_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->exp(y, x, n); }
void wk__vtanh_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->tanh(y, x, n); }
void wk__vsigmoid_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->sigmoid(y, x, n); }
void wk__vsilu_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->silu(y, x, n); }
void wk__vgelu_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->gelu(y, x, n); }
void wk__verf_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->erf(y, x, n); }
void wk__vgelu_erf_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->gelu_erf(y, x, n); }
void wk__vlog_f32(float *y, const float *x, int64_t n) { if (n > 0) kt()->log(y, x, n); }

void wk__vbinary_f32(int op, float *y, const float *a, const float *b, int64_t n) {
    if (n > 0) kt()->binary(op, y, a, b, n);
}

void wk__vbinary_scalar_f32(int op, float *y, const float *a, float s, int64_t n) {
    if (n > 0) kt()->binary_scalar(op, y, a, s, n);
}

float wk__vsum_f32(const float *x, int64_t n) { return n > 0 ? kt()->sum(x, n) : 0.0f; }
float wk__vmaxmin_f32(const float *x, int64_t n, int want_min) { return kt()->maxmin(x, n, want_min); }

void wk__vcvt_f16_to_f32(float *y, const uint16_t *x, int64_t n) { if (n > 0) kt()->cvt_f16_to_f32(y, x, n); }
void wk__vcvt_bf16_to_f32(float *y, const uint16_t *x, int64_t n) { if (n > 0) kt()->cvt_bf16_to_f32(y, x, n); }
void wk__vcvt_f32_to_f16(uint16_t *y, const float *x, int64_t n) { if (n > 0) kt()->cvt_f32_to_f16(y, x, n); }
void wk__vcvt_f32_to_bf16(uint16_t *y, const float *x, int64_t n) { if (n > 0) kt()->cvt_f32_to_bf16(y, x, n); }
