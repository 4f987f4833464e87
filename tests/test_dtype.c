/* dtypes: metadata, the scalar narrow-float conversions (f16, bf16, f8e4m3)
 * with their rounding / subnormal / overflow / NaN / -0 rules, casts between
 * every pair of dtypes, and the float -> integer rules of cpu_convert.h
 * (truncate toward zero, saturate, NaN -> 0; integer -> integer wraps). */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    wk_dtype dt;
    const char *name;
    size_t size;
    bool is_float;
} k_all[] = {
    {WK_U8, "u8", 1, false},     {WK_U32, "u32", 4, false},  {WK_I16, "i16", 2, false}, {WK_I32, "i32", 4, false},
    {WK_I64, "i64", 8, false},   {WK_BF16, "bf16", 2, true}, {WK_F16, "f16", 2, true},  {WK_F32, "f32", 4, true},
    {WK_F64, "f64", 8, true},    {WK_F8E4M3, "f8e4m3", 1, true},
};
#define NDT ((int)(sizeof k_all / sizeof k_all[0]))

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ------------------------------------------------------------ metadata */

static void test_names_sizes(void **state) {
    (void)state;
    assert_int_equal(NDT, WK_ELEM_DTYPE_COUNT);
    for (int i = 0; i < NDT; i++) {
        assert_string_equal(wk_dtype_name(k_all[i].dt), k_all[i].name);
        assert_int_equal(wk_dtype_size(k_all[i].dt), k_all[i].size);
        assert_int_equal(wk_dtype_is_float(k_all[i].dt), k_all[i].is_float);
        assert_int_equal(wk_dtype_is_int(k_all[i].dt), !k_all[i].is_float);
        wk_dtype back = WK_DTYPE_COUNT;
        assert_true(wk_dtype_from_name(k_all[i].name, &back));
        assert_int_equal(back, k_all[i].dt);
        assert_true(wk_dtype_from_name(k_all[i].name, NULL));
    }
    const wk_dtype bad[] = {WK_DTYPE_COUNT, (wk_dtype)99, (wk_dtype)-1, (wk_dtype)1000000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(wk_dtype_size(bad[i]), 0);
        assert_string_equal(wk_dtype_name(bad[i]), "invalid");
        assert_false(wk_dtype_is_float(bad[i]));
        assert_false(wk_dtype_is_int(bad[i]));
    }
    wk_dtype out = WK_F32;
    const char *bad_names[] = {"", "F32", "f31", "float32", "f32 ", "invalid", "f8", "u16"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        assert_false(wk_dtype_from_name(bad_names[i], &out));
        assert_int_equal(out, WK_F32); /* untouched */
    }
    assert_false(wk_dtype_from_name(NULL, &out));
}

/* ------------------------------------------------------------ f16 */

static void test_f16_exact_and_ties(void **state) {
    (void)state;
    assert_int_equal(wk_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(wk_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(wk_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(wk_f32_to_f16(0.5f), 0x3800);
    assert_int_equal(wk_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(wk_f32_to_f16(0.333251953125f), 0x3555);
    /* halfway between 1 (even mantissa) and 1+2^-10: down to even */
    assert_int_equal(wk_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    /* halfway between 1+2^-10 (odd) and 1+2^-9 (even): up to even */
    assert_int_equal(wk_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* a hair above / below a tie goes to the nearer one */
    assert_int_equal(wk_f32_to_f16(1.0f + 0x1p-11f + 0x1p-23f), 0x3c01);
    assert_int_equal(wk_f32_to_f16(1.0f + 3 * 0x1p-11f - 0x1p-23f), 0x3c01);
    /* negative ties mirror the positive ones */
    assert_int_equal(wk_f32_to_f16(-(1.0f + 0x1p-11f)), 0xbc00);
    assert_int_equal(wk_f32_to_f16(-(1.0f + 3 * 0x1p-11f)), 0xbc02);
    /* a tie that carries into the exponent: 2 - 2^-11 is halfway between
     * 0x3bff (odd) and 2.0 */
    assert_int_equal(wk_f32_to_f16(2.0f - 0x1p-11f), 0x4000);
    assert_int_equal(wk_f16_to_f32(0x3c01), 1.0f + 0x1p-10f);
    assert_true(wk_f16_to_f32(0xc000) == -2.0f);
}

static void test_f16_subnormals(void **state) {
    (void)state;
    assert_int_equal(wk_f32_to_f16(0x1p-24f), 0x0001);         /* smallest subnormal */
    assert_int_equal(wk_f32_to_f16(0x1p-25f), 0x0000);         /* tie with 0 -> even 0 */
    assert_int_equal(wk_f32_to_f16(0x1p-25f + 0x1p-40f), 0x0001);
    assert_int_equal(wk_f32_to_f16(3 * 0x1p-25f), 0x0002);     /* tie 1|2 -> 2 */
    assert_int_equal(wk_f32_to_f16(5 * 0x1p-25f), 0x0002);     /* tie 2|3 -> 2 */
    assert_int_equal(wk_f32_to_f16(0x1p-26f), 0x0000);
    assert_int_equal(wk_f32_to_f16(-0x1p-24f), 0x8001);
    assert_int_equal(wk_f32_to_f16(-0x1p-26f), 0x8000);        /* underflow keeps the sign */
    assert_int_equal(wk_f32_to_f16(1023 * 0x1p-24f), 0x03ff);  /* largest subnormal */
    assert_int_equal(wk_f32_to_f16(0x1p-14f), 0x0400);         /* smallest normal */
    /* halfway between the largest subnormal (odd) and the smallest normal */
    assert_int_equal(wk_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400);
    /* a float subnormal is far below f16's range */
    assert_int_equal(wk_f32_to_f16(u2f(0x00000001u)), 0x0000);
    assert_int_equal(wk_f32_to_f16(-FLT_MIN), 0x8000);
    assert_true(wk_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(wk_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    assert_true(wk_f16_to_f32(0x8001) == -0x1p-24f);
}

static void test_f16_overflow_nan_negzero(void **state) {
    (void)state;
    assert_int_equal(wk_f32_to_f16(65519.0f), 0x7bff);      /* below the tie */
    assert_int_equal(wk_f32_to_f16(65520.0f), 0x7c00);      /* tie 65504|65536 -> even = inf */
    assert_int_equal(wk_f32_to_f16(1e10f), 0x7c00);
    assert_int_equal(wk_f32_to_f16(-1e10f), 0xfc00);
    assert_int_equal(wk_f32_to_f16(FLT_MAX), 0x7c00);
    assert_int_equal(wk_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(wk_f32_to_f16(-INFINITY), 0xfc00);
    assert_true(isinf(wk_f16_to_f32(0x7c00)) && wk_f16_to_f32(0x7c00) > 0);
    assert_true(isinf(wk_f16_to_f32(0xfc00)) && wk_f16_to_f32(0xfc00) < 0);
    /* NaN stays NaN, also NaNs whose payload lives only in the low bits */
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f801000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = wk_f32_to_f16(u2f(nans[i]));
        assert_int_equal(h & 0x7c00u, 0x7c00u);
        assert_true((h & 0x03ffu) != 0);
        assert_true(isnan(wk_f16_to_f32(h)));
        assert_int_equal(h >> 15, nans[i] >> 31); /* sign kept */
    }
    /* -0 */
    assert_int_equal(wk_f32_to_f16(-0.0f), 0x8000);
    float nz = wk_f16_to_f32(0x8000);
    assert_true(nz == 0.0f && signbit(nz));
    assert_false(signbit(wk_f16_to_f32(0x0000)));
}

static void test_f16_all_codes_roundtrip(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = wk_f16_to_f32((uint16_t)h);
        bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0;
        assert_int_equal(isnan(f) != 0, nan);
        if (nan) {
            assert_true(isnan(wk_f16_to_f32(wk_f32_to_f16(f))));
            continue;
        }
        if (wk_f32_to_f16(f) != h) fail_msg("f16 code 0x%04x -> %g -> 0x%04x", h, (double)f, wk_f32_to_f16(f));
    }
}

/* ------------------------------------------------------------ bf16 */

static void test_bf16(void **state) {
    (void)state;
    assert_int_equal(wk_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(wk_f32_to_bf16(-2.0f), 0xc000);
    assert_int_equal(wk_f32_to_bf16(0.0f), 0x0000);
    /* ties to even */
    assert_int_equal(wk_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(wk_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(wk_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-23f), 0x3f81);
    assert_int_equal(wk_f32_to_bf16(-(1.0f + 3 * 0x1p-8f)), 0xbf82);
    assert_int_equal(wk_f32_to_bf16(2.0f - 0x1p-8f), 0x4000);          /* tie carries into the exponent */
    /* subnormals (bf16 shares f32's exponent range) */
    assert_int_equal(wk_f32_to_bf16(u2f(0x00010000u)), 0x0001);
    assert_int_equal(wk_f32_to_bf16(u2f(0x00008000u)), 0x0000);       /* tie 0|1 -> 0 */
    assert_int_equal(wk_f32_to_bf16(u2f(0x00018000u)), 0x0002);       /* tie 1|2 -> 2 */
    assert_int_equal(wk_f32_to_bf16(u2f(0x00008001u)), 0x0001);
    assert_int_equal(wk_f32_to_bf16(u2f(0x007f8000u)), 0x0080);       /* tie 0x7f (odd) | 0x80 -> 0x80 */
    assert_true(wk_bf16_to_f32(0x0001) == u2f(0x00010000u));
    /* overflow -> inf */
    assert_int_equal(wk_f32_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(wk_f32_to_bf16(-FLT_MAX), 0xff80);
    assert_int_equal(wk_f32_to_bf16(u2f(0x7f7f7fffu)), 0x7f7f);       /* just below the tie: largest finite */
    assert_int_equal(wk_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(wk_f32_to_bf16(-INFINITY), 0xff80);
    /* NaN stays NaN (also sNaN with only low payload bits) */
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = wk_f32_to_bf16(u2f(nans[i]));
        assert_true(isnan(wk_bf16_to_f32(h)));
        assert_int_equal(h >> 15, nans[i] >> 31);
    }
    /* -0 */
    assert_int_equal(wk_f32_to_bf16(-0.0f), 0x8000);
    assert_true(signbit(wk_bf16_to_f32(0x8000)) && wk_bf16_to_f32(0x8000) == 0.0f);
    /* every non-NaN code round-trips */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = wk_bf16_to_f32((uint16_t)h);
        assert_int_equal(f2u(f), h << 16);
        if (isnan(f)) continue;
        if (wk_f32_to_bf16(f) != h) fail_msg("bf16 code 0x%04x -> %g -> 0x%04x", h, (double)f, wk_f32_to_bf16(f));
    }
}

/* ------------------------------------------------------------ f8e4m3 */

static double f8_reference(uint8_t v) {
    int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
    if (e == 15 && m == 7) return NAN;
    double r = e == 0 ? m * 0x1p-9 : ldexp(1.0 + m / 8.0, e - 7);
    return s ? -r : r;
}

static void test_f8e4m3_all_codes(void **state) {
    (void)state;
    int nan_codes = 0;
    for (int c = 0; c < 256; c++) {
        float f = wk_f8e4m3_to_f32((uint8_t)c);
        double ref = f8_reference((uint8_t)c);
        if (isnan(ref)) {
            assert_true(isnan(f));
            nan_codes++;
            continue;
        }
        assert_true((double)f == ref);
        assert_int_equal(signbit(f) != 0, c >= 128);
        uint8_t back = wk_f32_to_f8e4m3(f);
        if (back != c) fail_msg("f8e4m3 code 0x%02x -> %g -> 0x%02x", c, (double)f, back);
    }
    assert_int_equal(nan_codes, 2); /* 0x7f and 0xff */
    assert_true(wk_f8e4m3_to_f32(0x7e) == 448.0f);
    assert_true(wk_f8e4m3_to_f32(0x01) == 0x1p-9f);
    assert_true(wk_f8e4m3_to_f32(0x08) == 0x1p-6f);
}

static void test_f8e4m3_saturation_nan_rounding(void **state) {
    (void)state;
    assert_int_equal(wk_f32_to_f8e4m3(448.0f), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(449.0f), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(463.9f), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(464.0f), 0x7e); /* would round to the NaN code: saturates */
    assert_int_equal(wk_f32_to_f8e4m3(500.0f), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(1e30f), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(FLT_MAX), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(INFINITY), 0x7e);
    assert_int_equal(wk_f32_to_f8e4m3(-448.0f), 0xfe);
    assert_int_equal(wk_f32_to_f8e4m3(-1000.0f), 0xfe);
    assert_int_equal(wk_f32_to_f8e4m3(-INFINITY), 0xfe);
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++)
        assert_true(isnan(wk_f8e4m3_to_f32(wk_f32_to_f8e4m3(u2f(nans[i])))));
    /* -0 and zero */
    assert_int_equal(wk_f32_to_f8e4m3(0.0f), 0x00);
    assert_int_equal(wk_f32_to_f8e4m3(-0.0f), 0x80);
    assert_true(signbit(wk_f8e4m3_to_f32(0x80)));
    /* ties to even: normal range (step 1/8 at [1,2)) */
    assert_int_equal(wk_f32_to_f8e4m3(1.0f + 1.0f / 16), 0x38);        /* 1 | 1.125 -> 1 */
    assert_int_equal(wk_f32_to_f8e4m3(1.0f + 3.0f / 16), 0x3a);        /* 1.125 | 1.25 -> 1.25 */
    assert_int_equal(wk_f32_to_f8e4m3(1.0f + 1.0f / 16 + 0x1p-20f), 0x39);
    assert_int_equal(wk_f32_to_f8e4m3(-(1.0f + 3.0f / 16)), 0xba);
    assert_int_equal(wk_f32_to_f8e4m3(1.9375f), 0x40);                 /* 1.875 (odd) | 2 -> 2 */
    assert_int_equal(wk_f32_to_f8e4m3(432.0f), 0x7e);                  /* 416 (odd) | 448 -> 448 */
    /* subnormals: unit 2^-9 */
    assert_int_equal(wk_f32_to_f8e4m3(0x1p-10f), 0x00);                /* tie 0|1 -> 0 */
    assert_int_equal(wk_f32_to_f8e4m3(3 * 0x1p-10f), 0x02);            /* tie 1|2 -> 2 */
    assert_int_equal(wk_f32_to_f8e4m3(5 * 0x1p-10f), 0x02);            /* tie 2|3 -> 2 */
    assert_int_equal(wk_f32_to_f8e4m3(0x1p-10f + 0x1p-20f), 0x01);
    assert_int_equal(wk_f32_to_f8e4m3(15 * 0x1p-10f), 0x08);           /* 7 (odd) | 8 -> smallest normal */
    assert_int_equal(wk_f32_to_f8e4m3(-0x1p-11f), 0x80);
    assert_int_equal(wk_f32_to_f8e4m3(1e-30f), 0x00);
}

/* ------------------------------------------------------------ casts */

static void test_cast_all_pairs(void **state) {
    (void)state;
    /* in range and exact in every dtype (f8e4m3: integers up to 16) */
    const double vals[] = {0, 1, 2, 3, 5, 8, 12, 16};
    const int64_t shape[2] = {2, 4};
    int pairs = 0;
    for (int s = 0; s < NDT; s++) {
        wk_tensor *src = tu_make(vals, shape, 2, k_all[s].dt);
        wk_tensor *srcT = TU_OK(wk_t(src)); /* a strided source too */
        for (int d = 0; d < NDT; d++) {
            wk_tensor *r = wk_to_dtype(src, k_all[d].dt);
            if (!r) fail_msg("cast %s -> %s failed: %s", k_all[s].name, k_all[d].name, wk_last_error());
            assert_int_equal(wk_tensor_dtype(r), k_all[d].dt);
            tu_assert_shape(r, shape, 2);
            tu_assert_close(r, vals, 8, 0, 0);
            wk_tensor *rT = TU_OK(wk_to_dtype(srcT, k_all[d].dt));
            assert_int_equal(wk_tensor_dtype(rT), k_all[d].dt);
            const double tv[] = {0, 5, 1, 8, 2, 12, 3, 16};
            tu_assert_close(rT, tv, 8, 0, 0);
            /* and back */
            wk_tensor *b = TU_OK(wk_to_dtype(r, k_all[s].dt));
            tu_assert_close(b, vals, 8, 0, 0);
            wk_tensor_free(b);
            wk_tensor_free(rT);
            wk_tensor_free(r);
            pairs++;
        }
        wk_tensor_free(srcT);
        wk_tensor_free(src);
    }
    assert_int_equal(pairs, 100);
    /* an invalid target dtype is a clean error */
    wk_tensor *x = tu_make(vals, shape, 2, WK_F32);
    wk_clear_error();
    TU_FAILS(wk_to_dtype(x, (wk_dtype)99), WK_ERR_DTYPE);
    TU_FAILS(wk_to_dtype(x, WK_DTYPE_COUNT), WK_ERR_DTYPE);
    wk_tensor_free(x);
}

/* Cast a one-element source of dtype sdt holding v (built from raw bytes, so
 * any value) to ddt and return the raw destination bytes. */
static void cast_one(const void *raw, wk_dtype sdt, wk_dtype ddt, void *out) {
    wk_tensor *s = TU_OK(wk_from_host(raw, wk_dtype_size(sdt), NULL, 0, sdt, wk_cpu()));
    wk_tensor *d = TU_OK(wk_to_dtype(s, ddt));
    TU_STATUS_OK(wk_to_host(d, out, wk_dtype_size(ddt)));
    wk_tensor_free(d);
    wk_tensor_free(s);
}

static int32_t f32_to_i32(float v) { int32_t r; cast_one(&v, WK_F32, WK_I32, &r); return r; }
static uint8_t f32_to_u8(float v) { uint8_t r; cast_one(&v, WK_F32, WK_U8, &r); return r; }
static uint32_t f64_to_u32(double v) { uint32_t r; cast_one(&v, WK_F64, WK_U32, &r); return r; }
static int16_t f64_to_i16(double v) { int16_t r; cast_one(&v, WK_F64, WK_I16, &r); return r; }
static int64_t f64_to_i64(double v) { int64_t r; cast_one(&v, WK_F64, WK_I64, &r); return r; }

static void test_float_to_int(void **state) {
    (void)state;
    /* truncation toward zero */
    assert_int_equal(f32_to_i32(2.7f), 2);
    assert_int_equal(f32_to_i32(-2.7f), -2);
    assert_int_equal(f32_to_i32(-0.5f), 0);
    assert_int_equal(f32_to_u8(254.9f), 254);
    /* saturation */
    assert_int_equal(f32_to_i32(1e10f), INT32_MAX);
    assert_int_equal(f32_to_i32(-1e10f), INT32_MIN);
    assert_int_equal(f32_to_i32(INFINITY), INT32_MAX);
    assert_int_equal(f32_to_i32(-INFINITY), INT32_MIN);
    assert_int_equal(f32_to_u8(-5.0f), 0);
    assert_int_equal(f32_to_u8(300.0f), 255);
    assert_int_equal(f64_to_u32(-1.0), 0);
    assert_int_equal(f64_to_u32(1e20), UINT32_MAX);
    assert_int_equal(f64_to_u32(4294967295.0), UINT32_MAX);
    assert_int_equal(f64_to_i16(40000.0), INT16_MAX);
    assert_int_equal(f64_to_i16(-40000.0), INT16_MIN);
    assert_true(f64_to_i64(-1e30) == INT64_MIN);
    assert_true(f64_to_i64(-INFINITY) == INT64_MIN);
    assert_true(f64_to_i64(123456789012.9) == INT64_C(123456789012));
    /* "saturates at the type's range (Rust `as`)": the largest i64 */
    int64_t big = f64_to_i64(1e30);
    if (big != INT64_MAX) fail_msg("f64 1e30 -> i64 gave %lld, expected INT64_MAX %lld", (long long)big, (long long)INT64_MAX);
    assert_true(f64_to_i64(INFINITY) == INT64_MAX);
    /* NaN -> 0 */
    assert_int_equal(f32_to_i32(NAN), 0);
    assert_int_equal(f32_to_u8(NAN), 0);
    assert_int_equal(f64_to_u32(NAN), 0);
    assert_true(f64_to_i64(NAN) == 0);
    /* narrow floats go through the same rules */
    uint16_t hinf = 0x7c00, hneg = wk_f32_to_f16(-3.0f), bnan = 0x7fc0;
    uint8_t f8max = 0x7e;
    int32_t i;
    uint8_t u;
    cast_one(&hinf, WK_F16, WK_I32, &i);
    assert_int_equal(i, INT32_MAX);
    cast_one(&hneg, WK_F16, WK_U8, &u);
    assert_int_equal(u, 0);
    cast_one(&bnan, WK_BF16, WK_I32, &i);
    assert_int_equal(i, 0);
    cast_one(&f8max, WK_F8E4M3, WK_U8, &u);
    assert_int_equal(u, 255); /* 448 saturates */
    int16_t s16;
    cast_one(&f8max, WK_F8E4M3, WK_I16, &s16);
    assert_int_equal(s16, 448);
}

static void test_int_to_int_wraps_and_int_to_float(void **state) {
    (void)state;
    int32_t v300 = 300, vm1 = -1;
    int64_t big = (INT64_C(1) << 53) + 1;
    uint32_t umax = UINT32_MAX;
    uint8_t u;
    uint32_t u32;
    int16_t s16;
    double d;
    float f;
    cast_one(&v300, WK_I32, WK_U8, &u);
    assert_int_equal(u, 44);            /* 300 mod 256 */
    cast_one(&vm1, WK_I32, WK_U32, &u32);
    assert_int_equal(u32, UINT32_MAX);
    cast_one(&vm1, WK_I32, WK_U8, &u);
    assert_int_equal(u, 255);
    cast_one(&umax, WK_U32, WK_I16, &s16);
    assert_int_equal(s16, -1);
    cast_one(&big, WK_I64, WK_F64, &d);
    assert_true(d == 0x1p53);           /* rounds once, to even */
    cast_one(&umax, WK_U32, WK_F32, &f);
    assert_true(f == 0x1p32f);
    uint16_t h;
    int32_t v70000 = 70000;
    cast_one(&v70000, WK_I32, WK_F16, &h);
    assert_int_equal(h, 0x7c00);        /* overflow -> inf */
    uint8_t f8;
    cast_one(&v70000, WK_I32, WK_F8E4M3, &f8);
    assert_int_equal(f8, 0x7e);         /* saturates */
}

/* f32 -> f16/bf16/f8 tensor casts agree with the scalar functions on tricky values. */
static void test_tensor_cast_matches_scalar(void **state) {
    (void)state;
    const float v[] = {0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 0x1p-25f, 3 * 0x1p-25f, 65520.0f,
                       -1e10f, INFINITY, NAN, 1.0f + 0x1p-8f, 464.0f, 3 * 0x1p-10f, -0x1p-24f, 1e-30f, 2.5f};
    const int64_t n = (int64_t)(sizeof v / sizeof v[0]);
    wk_tensor *t = tu_f32(v, &n, 1);
    wk_tensor *h = TU_OK(wk_to_dtype(t, WK_F16));
    wk_tensor *b = TU_OK(wk_to_dtype(t, WK_BF16));
    wk_tensor *e = TU_OK(wk_to_dtype(t, WK_F8E4M3));
    uint16_t hh[16], bb[16];
    uint8_t ee[16];
    TU_STATUS_OK(wk_to_host(h, hh, sizeof hh));
    TU_STATUS_OK(wk_to_host(b, bb, sizeof bb));
    TU_STATUS_OK(wk_to_host(e, ee, sizeof ee));
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(hh[i], wk_f32_to_f16(v[i]));
        assert_int_equal(bb[i], wk_f32_to_bf16(v[i]));
        assert_int_equal(ee[i], wk_f32_to_f8e4m3(v[i]));
    }
    /* f64 -> f16: values exact in f32 convert exactly like the f32 path
     * (rounding of f64-only values is the oracle suite's job) */
    wk_tensor *t64 = TU_OK(wk_to_dtype(t, WK_F64));
    wk_tensor *h2 = TU_OK(wk_to_dtype(t64, WK_F16));
    uint16_t hh2[16];
    TU_STATUS_OK(wk_to_host(h2, hh2, sizeof hh2));
    for (int64_t i = 0; i < n; i++) {
        if (isnan(v[i])) assert_true(isnan(wk_f16_to_f32(hh2[i])));
        else assert_int_equal(hh2[i], hh[i]);
    }
    wk_tensor_free(h2);
    wk_tensor_free(t64);
    wk_tensor_free(e);
    wk_tensor_free(b);
    wk_tensor_free(h);
    wk_tensor_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_sizes),
        cmocka_unit_test(test_f16_exact_and_ties),
        cmocka_unit_test(test_f16_subnormals),
        cmocka_unit_test(test_f16_overflow_nan_negzero),
        cmocka_unit_test(test_f16_all_codes_roundtrip),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_f8e4m3_all_codes),
        cmocka_unit_test(test_f8e4m3_saturation_nan_rounding),
        cmocka_unit_test(test_cast_all_pairs),
        cmocka_unit_test(test_float_to_int),
        cmocka_unit_test(test_int_to_int_wraps_and_int_to_float),
        cmocka_unit_test(test_tensor_cast_matches_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
