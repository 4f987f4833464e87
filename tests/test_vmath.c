/* Vectorized f32 math (src/cpu/vmath*.c) at every ISA level this CPU has:
 * accuracy against double-precision libm over a dense grid of [-100, 100],
 * random bit patterns and special values; tails of odd lengths (nothing
 * written past n, the same values as in a long array); in-place use (y == x);
 * the binary kernels (bit-exact add/sub/mul/div, NaN-propagating max/min);
 * the dispatcher (forced levels, WICK_ISA). */
#include "testutil.h"

#include "base/env.h"
#include "cpu/vmath/vmath.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ references */

static double r_exp(double x) { return exp(x); }
static double r_log(double x) { return log(x); }
static double r_tanh(double x) { return tanh(x); }
static double r_erf(double x) { return erf(x); }
static double r_sigmoid(double x) {
    double e = exp(-fabs(x));
    return (x >= 0 ? 1.0 : e) / (1.0 + e);
}
static double r_silu(double x) {
    if (isinf(x)) return x > 0 ? x : -0.0;
    return x * r_sigmoid(x);
}
static double r_gelu(double x) {
    if (isinf(x)) return x > 0 ? x : -0.0;
    double s = 2.0 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x); /* 2u; 0.5(1+tanh u) = sigmoid(2u) */
    double e = exp(-fabs(s));
    return x * (s >= 0 ? 1.0 : e) / (1.0 + e);
}
static double r_gelu_erf(double x) {
    if (isinf(x)) return x > 0 ? x : -0.0;
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

typedef void (*vfn)(float *, const float *, int64_t);

typedef struct fcase {
    const char *name;
    vfn f;
    double (*ref)(double);
    double ulps;    /* pass if within this many ulp of the exact value, */
    double rel;     /* or this relative error, */
    double abs_tol; /* or this absolute error */
} fcase;

static const fcase FUNCS[] = {
    {"exp", wk__vexp_f32, r_exp, 2.0, 0, 0},
    {"log", wk__vlog_f32, r_log, 1.0, 0, 0},
    {"tanh", wk__vtanh_f32, r_tanh, 2.0, 0, 0},
    {"sigmoid", wk__vsigmoid_f32, r_sigmoid, 3.0, 0, 0},
    {"silu", wk__vsilu_f32, r_silu, 4.0, 1e-6, 1e-30},
    {"gelu", wk__vgelu_f32, r_gelu, 4.0, 1e-6, 1e-7},
    {"erf", wk__verf_f32, r_erf, 3.0, 0, 0},
    {"gelu_erf", wk__vgelu_erf_f32, r_gelu_erf, 5.0, 1e-6, 1e-30},
};
#define NFUNCS ((int)(sizeof FUNCS / sizeof FUNCS[0]))

/* ulp of a float at the magnitude of r (subnormal spacing below FLT_MIN) */
static double ulp_at(double r) {
    double a = fabs(r);
    if (a < FLT_MIN) return ldexp(1.0, -149);
    if (a > FLT_MAX) a = FLT_MAX;
    int e;
    frexp(a, &e);
    return ldexp(1.0, e - 24);
}

static const char *level_name(int level) {
    return level == WK_VMATH_AVX512 ? "avx512" : level == WK_VMATH_AVX2 ? "avx2" : "scalar";
}

/* Check every y[i] = f(x[i]); returns the number of failures (reports a few). */
static int check_values(const fcase *fc, const float *x, const float *y, int64_t n, double *max_ulp) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = fc->ref((double)x[i]);
        float g = y[i];
        int ok;
        if (isnan(r) || isnan(g)) {
            ok = isnan(r) && isnan(g);
        } else {
            /* infinities (and exact values beyond float range) count as +-2^128,
             * one ulp above FLT_MAX: an overflow boundary is off by <= 1 ulp */
            double rd = fabs(r) > 0x1p128 ? copysign(0x1p128, r) : r;
            double gd = isinf(g) ? copysign(0x1p128, g) : (double)g;
            double err = fabs(gd - rd);
            double u = err / ulp_at(rd);
            if (u > *max_ulp) *max_ulp = u;
            ok = u <= fc->ulps || (fc->rel > 0 && err <= fc->rel * fabs(rd)) || err <= fc->abs_tol;
        }
        if (!ok && ++bad <= 5)
            print_error("%s[%s]: x=%a (%.9g) got %.9g expected %.9g\n", fc->name, wk__vmath_isa(), x[i], x[i], g, r);
    }
    return bad;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static float bits_to_float(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The inputs: specials, a dense grid of [-100, 100], a fine grid near 0,
 * and random finite bit patterns. */
static float *make_inputs(int64_t *count) {
    static const float specials[] = {
        0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, INFINITY, -INFINITY, NAN, -NAN,
        FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, FLT_TRUE_MIN, -FLT_TRUE_MIN, 0x1p-140f, -0x1p-140f,
        1e-30f, -1e-30f, 1e-7f, -1e-7f, 88.72f, 88.73f, 89.0f, -87.33f, -87.34f, -103.9f, -104.0f,
        -110.0f, -200.0f, 200.0f, 1e10f, -1e10f, 1e30f, -1e30f, 0.625f, -0.625f, 0.875f, -0.875f,
        0.70710677f, 1.4142135f, 3.92f, -3.92f, 4.0f, 9.0f, -9.0f, 10.0f, -10.0f, 13.0f, -13.0f,
        15.0f, -15.0f, 20.0f, -20.0f, 1.2374369f, -1.2374369f, 0.7071068f, -0.7071068f,
    };
    const int64_t ns = (int64_t)(sizeof specials / sizeof specials[0]);
    const int64_t ngrid = 400001, nfine = 20001, nrand = 200000;
    int64_t n = ns + ngrid + nfine + nrand;
    float *x = malloc(sizeof(float) * (size_t)n);
    assert_non_null(x);
    int64_t k = 0;
    for (int64_t i = 0; i < ns; i++) x[k++] = specials[i];
    for (int64_t i = 0; i < ngrid; i++) x[k++] = (float)(-100.0 + 200.0 * (double)i / (double)(ngrid - 1));
    for (int64_t i = 0; i < nfine; i++) x[k++] = (float)(-2.0 + 4.0 * (double)i / (double)(nfine - 1));
    for (int64_t i = 0; i < nrand; i++) {
        float f;
        do f = bits_to_float(rnd32()); while (isnan(f));
        x[k++] = f;
    }
    *count = n;
    return x;
}

static int levels(int *out) {
    int max = wk__vmath_max_level(), n = 0;
    for (int l = 0; l <= max; l++) out[n++] = l;
    return n;
}

static void test_accuracy(void **state) {
    (void)state;
    int64_t n;
    float *x = make_inputs(&n);
    float *y = malloc(sizeof(float) * (size_t)n);
    float *xpos = malloc(sizeof(float) * (size_t)n);
    assert_true(y && xpos);
    for (int64_t i = 0; i < n; i++) xpos[i] = fabsf(x[i]); /* log: positive inputs too */
    int lv[3], nl = levels(lv), bad = 0;
    for (int li = 0; li < nl; li++) {
        assert_int_equal(wk__vmath_set_level(lv[li]), 0);
        assert_string_equal(wk__vmath_isa(), level_name(lv[li]));
        for (int k = 0; k < NFUNCS; k++) {
            const fcase *fc = &FUNCS[k];
            double max_ulp = 0;
            fc->f(y, x, n);
            bad += check_values(fc, x, y, n, &max_ulp);
            if (fc->f == wk__vlog_f32) {
                fc->f(y, xpos, n);
                bad += check_values(fc, xpos, y, n, &max_ulp);
            }
            printf("  %-7s %-8s max %.2f ulp\n", level_name(lv[li]), fc->name, max_ulp);
        }
    }
    wk__vmath_set_level(-1);
    free(xpos);
    free(y);
    free(x);
    assert_int_equal(bad, 0);
}

/* Exact special values every level must produce. */
static void test_special_values(void **state) {
    (void)state;
    const float inf = INFINITY;
    struct {
        vfn f;
        float x, want;
    } cases[] = {
        {wk__vexp_f32, 0.0f, 1.0f},      {wk__vexp_f32, -0.0f, 1.0f},   {wk__vexp_f32, inf, inf},
        {wk__vexp_f32, -inf, 0.0f},      {wk__vexp_f32, 89.0f, inf},    {wk__vexp_f32, -104.0f, 0.0f},
        {wk__vexp_f32, 1e30f, inf},      {wk__vexp_f32, -1e30f, 0.0f},  {wk__vlog_f32, 1.0f, 0.0f},
        {wk__vlog_f32, 0.0f, -inf},      {wk__vlog_f32, -0.0f, -inf},   {wk__vlog_f32, inf, inf},
        {wk__vtanh_f32, inf, 1.0f},      {wk__vtanh_f32, -inf, -1.0f},  {wk__vtanh_f32, 20.0f, 1.0f},
        {wk__vsigmoid_f32, inf, 1.0f},   {wk__vsigmoid_f32, -inf, 0.0f}, {wk__vsigmoid_f32, 0.0f, 0.5f},
        {wk__vsilu_f32, inf, inf},       {wk__vsilu_f32, -inf, -0.0f},  {wk__vsilu_f32, 0.0f, 0.0f},
        {wk__vgelu_f32, inf, inf},       {wk__vgelu_f32, -inf, -0.0f},  {wk__vgelu_f32, 0.0f, 0.0f},
        {wk__verf_f32, inf, 1.0f},       {wk__verf_f32, -inf, -1.0f},   {wk__verf_f32, 5.0f, 1.0f},
        {wk__vgelu_erf_f32, inf, inf},   {wk__vgelu_erf_f32, -inf, -0.0f}, {wk__vgelu_erf_f32, 0.0f, 0.0f},
        {wk__vgelu_erf_f32, 100.0f, 100.0f},
    };
    int lv[3], nl = levels(lv);
    for (int li = 0; li < nl; li++) {
        assert_int_equal(wk__vmath_set_level(lv[li]), 0);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            float y = 12345.0f;
            cases[i].f(&y, &cases[i].x, 1);
            if (!(y == cases[i].want)) fail_msg("case %zu [%s]: f(%g) = %g, want %g", i, wk__vmath_isa(), cases[i].x, y, cases[i].want);
        }
        /* signs of zeros */
        float z = -0.0f, y;
        wk__vtanh_f32(&y, &z, 1);
        assert_true(y == 0 && signbit(y));
        wk__verf_f32(&y, &z, 1);
        assert_true(y == 0 && signbit(y));
        wk__vgelu_erf_f32(&y, &z, 1);
        assert_true(y == 0 && signbit(y));
        wk__vgelu_f32(&y, &z, 1);
        assert_true(y == 0 && signbit(y));
        wk__vsilu_f32(&y, &z, 1);
        assert_true(y == 0 && signbit(y));
        /* NaN in, NaN out, every function; log of a negative is NaN */
        float nanv[3] = {NAN, -NAN, bits_to_float(0x7f800001u)}, out[3];
        for (int k = 0; k < NFUNCS; k++) {
            FUNCS[k].f(out, nanv, 3);
            for (int j = 0; j < 3; j++)
                if (!isnan(out[j])) fail_msg("%s[%s](NaN #%d) = %g", FUNCS[k].name, wk__vmath_isa(), j, out[j]);
        }
        float neg[2] = {-1.0f, -inf};
        wk__vlog_f32(out, neg, 2);
        assert_true(isnan(out[0]) && isnan(out[1]));
    }
    wk__vmath_set_level(-1);
}

/* Lengths that exercise every tail: nothing is written outside [0, n), the
 * values equal those computed in a long array, and y == x works. */
static void test_lengths_and_aliasing(void **state) {
    (void)state;
    static const int64_t lens[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 1000, 1001};
    enum { N = 1100, PAD = 40 };
    float *x = malloc(sizeof(float) * N), *full = malloc(sizeof(float) * N);
    float *buf = malloc(sizeof(float) * (N + 2 * PAD));
    assert_true(x && full && buf);
    for (int i = 0; i < N; i++) x[i] = (float)((int)(rnd32() % 4001) - 2000) / 97.0f;
    int lv[3], nl = levels(lv);
    for (int li = 0; li < nl; li++) {
        assert_int_equal(wk__vmath_set_level(lv[li]), 0);
        for (int k = 0; k < NFUNCS; k++) {
            const fcase *fc = &FUNCS[k];
            const float *src = x;
            float xl[N];
            if (fc->f == wk__vlog_f32) {
                for (int i = 0; i < N; i++) xl[i] = fabsf(x[i]) + 0.001f;
                src = xl;
            }
            fc->f(full, src, N);
            for (size_t li2 = 0; li2 < sizeof lens / sizeof lens[0]; li2++) {
                int64_t n = lens[li2];
                for (int off = 0; off < 3; off++) { /* also misaligned starts */
                    for (int i = 0; i < N + 2 * PAD; i++) buf[i] = -777.0f;
                    float *y = buf + PAD + off;
                    fc->f(y, src + off, n);
                    for (int i = 0; i < PAD + off; i++) assert_true(buf[i] == -777.0f);
                    for (int64_t i = n; i < N + PAD - off; i++)
                        if (y[i] != -777.0f) fail_msg("%s[%s] n=%lld wrote y[%lld]", fc->name, wk__vmath_isa(), (long long)n, (long long)i);
                    for (int64_t i = 0; i < n; i++)
                        if (memcmp(&y[i], &full[i + off], sizeof(float)) != 0)
                            fail_msg("%s[%s] n=%lld off=%d: y[%lld]=%g, long array gives %g", fc->name, wk__vmath_isa(),
                                     (long long)n, off, (long long)i, y[i], full[i + off]);
                    /* in place */
                    memcpy(y, src + off, sizeof(float) * (size_t)n);
                    fc->f(y, y, n);
                    for (int64_t i = 0; i < n; i++)
                        if (memcmp(&y[i], &full[i + off], sizeof(float)) != 0)
                            fail_msg("%s[%s] in place n=%lld: y[%lld]=%g want %g", fc->name, wk__vmath_isa(), (long long)n,
                                     (long long)i, y[i], full[i + off]);
                }
            }
        }
    }
    wk__vmath_set_level(-1);
    free(buf);
    free(full);
    free(x);
}

/* The SIMD kernels take a cheaper path for a vector whose lanes are all in
 * a common range (exp |x| <= 86; tanh always; sigmoid, silu, gelu when the
 * exp argument is <= 80 in magnitude) and the general one otherwise. Each
 * lane's result must not depend on which path its vector took: every value
 * is computed once among in-range neighbours and once beside a value that
 * forces the general path (NaN, inf, +-100), and the bits must agree. */
static void test_fast_path_lanes(void **state) {
    (void)state;
    enum { W = 16, NV = 4000 };
    static const float forcers[] = {NAN, INFINITY, -INFINITY, 100.0f, -100.0f, 87.0f, -87.0f};
    float *x = malloc(sizeof(float) * W), *quiet = malloc(sizeof(float) * NV), *mixed = malloc(sizeof(float) * W);
    float *vals = malloc(sizeof(float) * NV);
    assert_true(x && quiet && mixed && vals);
    /* values up to the edges of the fast ranges (gelu's argument reaches 80
     * near x = -9.9 and 9.9, silu's and sigmoid's at +-80), subnormals, zeros */
    for (int i = 0; i < NV; i++) {
        float v = (float)((int)(rnd32() % 200001) - 100000) * (i % 3 == 0 ? 8.6e-4f : 1.1e-4f);
        if (i % 97 == 0) v = (i % 2 ? 1.0f : -1.0f) * 1e-40f;
        if (i % 101 == 0) v = i % 2 ? 0.0f : -0.0f;
        vals[i] = v;
    }
    int lv[3], nl = levels(lv);
    for (int li = 0; li < nl; li++) {
        assert_int_equal(wk__vmath_set_level(lv[li]), 0);
        for (int k = 0; k < NFUNCS; k++) {
            const fcase *fc = &FUNCS[k];
            if (fc->f == wk__vlog_f32) continue; /* one path */
            fc->f(quiet, vals, NV);
            for (int i = 0; i < NV; i++) {
                for (int j = 0; j < W; j++) x[j] = vals[(i + j) % NV];
                x[(i + 5) % W] = forcers[i % (int)(sizeof forcers / sizeof forcers[0])];
                x[i % W] = vals[i];
                fc->f(mixed, x, W);
                float want = quiet[i], got = mixed[i % W];
                if (memcmp(&got, &want, sizeof got) != 0)
                    fail_msg("%s[%s] x=%a: %a beside %g, %a among in-range values", fc->name, wk__vmath_isa(),
                             (double)vals[i], (double)got, (double)x[(i + 5) % W], (double)want);
            }
        }
    }
    wk__vmath_set_level(-1);
    free(vals);
    free(mixed);
    free(quiet);
    free(x);
}

static float ref_binary(int op, float a, float b) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
    default: return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
    }
}

static int same_result(float got, float want) {
    if (isnan(want)) return isnan(got);
    return memcmp(&got, &want, sizeof got) == 0 || (got == 0 && want == 0); /* max/min of +-0 */
}

static void test_binary(void **state) {
    (void)state;
    enum { N = 777 };
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * (N + 8));
    float *t = malloc(sizeof(float) * N);
    assert_true(a && b && y && t);
    static const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, FLT_MAX, FLT_TRUE_MIN, 3.0f};
    for (int i = 0; i < N; i++) {
        a[i] = (i % 5 == 0) ? sp[i % 10] : (float)((int)(rnd32() % 2001) - 1000) / 7.0f;
        b[i] = (i % 7 == 0) ? sp[(i / 7) % 10] : (float)((int)(rnd32() % 2001) - 1000) / 13.0f;
    }
    static const int64_t lens[] = {0, 1, 7, 15, 16, 17, 33, N};
    int lv[3], nl = levels(lv);
    for (int li = 0; li < nl; li++) {
        assert_int_equal(wk__vmath_set_level(lv[li]), 0);
        for (int op = 0; op < 6; op++) {
            for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
                int64_t n = lens[k];
                for (int i = 0; i < N + 8; i++) y[i] = -5.0f;
                wk__vbinary_f32(op, y, a, b, n);
                for (int64_t i = 0; i < n; i++)
                    if (!same_result(y[i], ref_binary(op, a[i], b[i])))
                        fail_msg("op %d [%s] n=%lld: %g op %g = %g", op, wk__vmath_isa(), (long long)n, a[i], b[i], y[i]);
                for (int64_t i = n; i < N + 8; i++) assert_true(y[i] == -5.0f);
                for (int s = 0; s < 10; s++) {
                    float sv = sp[s];
                    wk__vbinary_scalar_f32(op, y, a, sv, n);
                    for (int64_t i = 0; i < n; i++)
                        if (!same_result(y[i], ref_binary(op, a[i], sv)))
                            fail_msg("op %d scalar [%s]: %g op %g = %g", op, wk__vmath_isa(), a[i], sv, y[i]);
                }
            }
            /* in place on either side */
            memcpy(t, a, sizeof(float) * N);
            wk__vbinary_f32(op, t, t, b, N);
            for (int i = 0; i < N; i++) assert_true(same_result(t[i], ref_binary(op, a[i], b[i])));
            memcpy(t, b, sizeof(float) * N);
            wk__vbinary_f32(op, t, a, t, N);
            for (int i = 0; i < N; i++) assert_true(same_result(t[i], ref_binary(op, a[i], b[i])));
            memcpy(t, a, sizeof(float) * N);
            wk__vbinary_scalar_f32(op, t, t, 2.5f, 33);
            for (int i = 0; i < 33; i++) assert_true(same_result(t[i], ref_binary(op, a[i], 2.5f)));
        }
    }
    wk__vmath_set_level(-1);
    free(t);
    free(y);
    free(b);
    free(a);
}

static void test_dispatch(void **state) {
    (void)state;
    int max = wk__vmath_max_level();
    assert_true(max >= WK_VMATH_SCALAR && max <= WK_VMATH_AVX512);
    /* forcing an unsupported level fails and changes nothing */
    assert_int_equal(wk__vmath_set_level(-1), 0);
    int cur = wk__vmath_level();
    if (max < WK_VMATH_AVX512) {
        assert_int_equal(wk__vmath_set_level(WK_VMATH_AVX512), -1);
        assert_int_equal(wk__vmath_level(), cur);
    }
    assert_int_equal(wk__vmath_set_level(7), -1);
    /* WICK_ISA lowers the level; an unknown value is reported on stderr and
     * ignored. The variable is read once: wk__env_reload re-reads it. */
    const char *old = getenv("WICK_ISA");
    char *saved = old ? strdup(old) : NULL;
    setenv("WICK_ISA", "scalar", 1);
    wk__env_reload();
    wk__vmath_set_level(-1);
    assert_string_equal(wk__vmath_isa(), "scalar");
    assert_string_equal(wk_cpu_isa(), "scalar");
    setenv("WICK_ISA", "avx2", 1);
    wk__env_reload();
    wk__vmath_set_level(-1);
    assert_int_equal(wk__vmath_level(), max < WK_VMATH_AVX2 ? max : WK_VMATH_AVX2);
    setenv("WICK_ISA", "no-such-isa", 1);
    wk__env_reload();
    wk__vmath_set_level(-1);
    assert_int_equal(wk__vmath_level(), max);
    setenv("WICK_ISA", "AVX512", 1);
    wk__env_reload();
    wk__vmath_set_level(-1);
    assert_int_equal(wk__vmath_level(), max);
    unsetenv("WICK_ISA");
    wk__env_reload();
    wk__vmath_set_level(-1);
    assert_int_equal(wk__vmath_level(), max);
    assert_string_equal(wk__vmath_isa(), level_name(max));
    if (saved) {
        setenv("WICK_ISA", saved, 1);
        wk__env_reload();
        free(saved);
        wk__vmath_set_level(-1);
    }
    /* the tensor API goes through the same kernels */
    float v[5] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
    int64_t shape = 5;
    wk_tensor *t = tu_f32(v, &shape, 1);
    wk_tensor *e = TU_OK(wk_exp(t));
    double want[5];
    for (int i = 0; i < 5; i++) want[i] = exp(v[i]);
    tu_assert_close(e, want, 5, 0, 3e-7);
    wk_tensor_free(e);
    wk_tensor_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_accuracy),
        cmocka_unit_test(test_lengths_and_aliasing),
        cmocka_unit_test(test_fast_path_lanes),
        cmocka_unit_test(test_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
