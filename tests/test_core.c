/* Core behaviour: creation, random numbers, readback, copies and in-place
 * writes, cat/stack and matmul errors and edge cases, devices, the error
 * discipline (messages, first error kept through NULL inputs), scopes and
 * reference counts, the CPU buffer cache and thread-count independence. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wk_tensor *iota(const int64_t *shape, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    wk_tensor *a = TU_OK(wk_arange(0, (double)n, 1, WK_F32, wk_cpu()));
    wk_tensor *r = TU_OK(wk_reshape(a, shape, rank));
    wk_tensor_free(a);
    return r;
}

static double get(const wk_tensor *t, const int64_t *idx) {
    double v = -12345;
    TU_STATUS_OK(wk_get(t, idx, &v));
    return v;
}

static void assert_error_mentions(const char *a, const char *b) {
    const char *msg = wk_last_error();
    if (!strstr(msg, a) || (b && !strstr(msg, b)))
        fail_msg("error message \"%s\" should mention \"%s\"%s%s", msg, a, b ? " and " : "", b ? b : "");
}

/* ------------------------------------------------------------ creation */

static void test_constant_creation(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3};
    const wk_dtype dts[] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3};
    double e0[6] = {0}, e1[6], e7[6];
    for (int i = 0; i < 6; i++) { e1[i] = 1; e7[i] = 7; }
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        wk_tensor *z = TU_OK(wk_zeros(s23, 2, dts[k], wk_cpu()));
        wk_tensor *o = TU_OK(wk_ones(s23, 2, dts[k], wk_cpu()));
        wk_tensor *f = TU_OK(wk_full(s23, 2, 7, dts[k], wk_cpu()));
        assert_int_equal(wk_tensor_dtype(f), dts[k]);
        tu_assert_shape(f, s23, 2);
        assert_true(wk_is_contiguous(f));
        tu_assert_close(z, e0, 6, 0, 0);
        tu_assert_close(o, e1, 6, 0, 0);
        tu_assert_close(f, e7, 6, 0, 0);
        wk_tensor *zl = TU_OK(wk_zeros_like(f));
        wk_tensor *ol = TU_OK(wk_ones_like(f));
        assert_int_equal(wk_tensor_dtype(zl), dts[k]);
        tu_assert_shape(ol, s23, 2);
        tu_assert_close(zl, e0, 6, 0, 0);
        tu_assert_close(ol, e1, 6, 0, 0);
        wk_tensor_free(ol);
        wk_tensor_free(zl);
        wk_tensor_free(f);
        wk_tensor_free(o);
        wk_tensor_free(z);
    }
    /* full saturates/rounds like a cast */
    wk_tensor *u = TU_OK(wk_full(s23, 2, -3.7, WK_U8, wk_cpu()));
    tu_assert_close(u, e0, 6, 0, 0);
    wk_tensor_free(u);
    wk_tensor *sc = TU_OK(wk_full(NULL, 0, 2.5, WK_F64, wk_cpu()));
    double v;
    TU_STATUS_OK(wk_item(sc, &v));
    assert_true(v == 2.5);
    wk_tensor_free(sc);
    /* empty: right shape/dtype; written then read back */
    wk_tensor *e = TU_OK(wk_empty(s23, 2, WK_I32, wk_cpu()));
    tu_assert_shape(e, s23, 2);
    assert_int_equal(wk_tensor_dtype(e), WK_I32);
    TU_STATUS_OK(wk_fill_(e, 4));
    const double e4[6] = {4, 4, 4, 4, 4, 4};
    tu_assert_close(e, e4, 6, 0, 0);
    wk_tensor_free(e);
    int64_t s0 = 0;
    wk_tensor *e00 = TU_OK(wk_empty(&s0, 1, WK_F32, wk_cpu()));
    assert_int_equal(wk_numel(e00), 0);
    wk_tensor_free(e00);
    wk_clear_error();
    TU_FAILS(wk_zeros(s23, 2, (wk_dtype)99, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_zeros(s23, 2, WK_F32, NULL), WK_ERR_ARG);
    TU_FAILS(wk_empty(s23, 2, WK_F32, NULL), WK_ERR_ARG);
    TU_FAILS(wk_zeros(NULL, 2, WK_F32, wk_cpu()), WK_ERR_ARG);
    int64_t neg[2] = {2, -1};
    TU_FAILS(wk_ones(neg, 2, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_zeros_like(NULL), WK_ERR_ARG);
}

static void test_arange(void **state) {
    (void)state;
    wk_tensor *a = TU_OK(wk_arange(0, 5, 1, WK_I32, wk_cpu()));
    const double e1[5] = {0, 1, 2, 3, 4};
    assert_int_equal(wk_tensor_dtype(a), WK_I32);
    assert_int_equal(wk_rank(a), 1);
    tu_assert_close(a, e1, 5, 0, 0);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(5, 0, -1, WK_F32, wk_cpu()));
    const double e2[5] = {5, 4, 3, 2, 1};
    tu_assert_close(a, e2, 5, 0, 0);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(-3, 3, 2, WK_I64, wk_cpu()));
    const double e3[3] = {-3, -1, 1};
    tu_assert_close(a, e3, 3, 0, 0);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(0, 1, 0.25, WK_F64, wk_cpu()));
    const double e4[4] = {0, 0.25, 0.5, 0.75};
    tu_assert_close(a, e4, 4, 0, 0);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(0, 1, 0.3, WK_F64, wk_cpu())); /* ceil(3.33) = 4 */
    const double e5[4] = {0, 0.3, 0.6, 0.9};
    tu_assert_close(a, e5, 4, 1e-12, 0);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(1, -1, -0.5, WK_F32, wk_cpu()));
    const double e6[4] = {1, 0.5, 0, -0.5};
    tu_assert_close(a, e6, 4, 0, 0);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(-2.5, 0, 1, WK_F32, wk_cpu())); /* -2.5, -1.5, -0.5 */
    assert_int_equal(wk_numel(a), 3);
    wk_tensor_free(a);
    /* empty ranges */
    a = TU_OK(wk_arange(5, 0, 1, WK_F32, wk_cpu()));
    assert_int_equal(wk_numel(a), 0);
    assert_int_equal(wk_rank(a), 1);
    wk_tensor_free(a);
    a = TU_OK(wk_arange(3, 3, 1, WK_U8, wk_cpu()));
    assert_int_equal(wk_numel(a), 0);
    wk_tensor_free(a);
    wk_clear_error();
    TU_FAILS(wk_arange(0, 5, 0, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_arange(0, 5, -0.0, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_arange(0, 5, NAN, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_arange(0, INFINITY, 1, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_arange(0, 5, 1, WK_F32, NULL), WK_ERR_ARG);
    TU_FAILS(wk_arange(0, 5, 1, (wk_dtype)99, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_arange(0, 1e300, 1, WK_F32, wk_cpu()), WK_ERR_SHAPE);
}

static void test_eye_from_host(void **state) {
    (void)state;
    wk_tensor *e = TU_OK(wk_eye(3, WK_F32, wk_cpu()));
    const double ex[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    int64_t s33[2] = {3, 3};
    tu_assert_shape(e, s33, 2);
    tu_assert_close(e, ex, 9, 0, 0);
    wk_tensor_free(e);
    e = TU_OK(wk_eye(2, WK_U8, wk_cpu()));
    const double ex2[4] = {1, 0, 0, 1};
    tu_assert_close(e, ex2, 4, 0, 0);
    wk_tensor_free(e);
    e = TU_OK(wk_eye(0, WK_F32, wk_cpu()));
    assert_int_equal(wk_numel(e), 0);
    assert_int_equal(wk_rank(e), 2);
    wk_tensor_free(e);
    wk_clear_error();
    TU_FAILS(wk_eye(-1, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_eye(3, WK_F32, NULL), WK_ERR_ARG);

    const int16_t v[6] = {1, -2, 3, -4, 5, -6};
    int64_t s23[2] = {2, 3};
    wk_tensor *t = TU_OK(wk_from_host(v, sizeof v, s23, 2, WK_I16, wk_cpu()));
    const double ev[6] = {1, -2, 3, -4, 5, -6};
    tu_assert_close(t, ev, 6, 0, 0);
    wk_tensor_free(t);
    wk_clear_error();
    TU_FAILS(wk_from_host(v, sizeof v - 2, s23, 2, WK_I16, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, sizeof v + 2, s23, 2, WK_I16, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, sizeof v, s23, 2, WK_I32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(NULL, sizeof v, s23, 2, WK_I16, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_from_host(v, sizeof v, s23, 2, (wk_dtype)99, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_from_host(v, sizeof v, s23, 2, WK_I16, NULL), WK_ERR_ARG);
    /* empty from NULL is fine */
    int64_t s0 = 0;
    t = TU_OK(wk_from_host(NULL, 0, &s0, 1, WK_F32, wk_cpu()));
    assert_int_equal(wk_numel(t), 0);
    wk_tensor_free(t);
}

/* ------------------------------------------------------------ random numbers */

static void test_rand_seed_reproducible(void **state) {
    (void)state;
    int64_t n = 1000;
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
        assert_true(a && b);
        TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 42));
        assert_true(wk_device_seed(wk_cpu()) == 42);
        wk_tensor *x = TU_OK(wk_rand(&n, 1, 0, 1, dts[k], wk_cpu()));
        wk_tensor *xn = TU_OK(wk_randn(&n, 1, 0, 1, dts[k], wk_cpu()));
        TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 42));
        wk_tensor *y = TU_OK(wk_rand(&n, 1, 0, 1, dts[k], wk_cpu()));
        wk_tensor *yn = TU_OK(wk_randn(&n, 1, 0, 1, dts[k], wk_cpu()));
        TU_STATUS_OK(wk_to_host_f64(x, a, (size_t)n));
        TU_STATUS_OK(wk_to_host_f64(y, b, (size_t)n));
        assert_memory_equal(a, b, sizeof(double) * (size_t)n);
        TU_STATUS_OK(wk_to_host_f64(xn, a, (size_t)n));
        TU_STATUS_OK(wk_to_host_f64(yn, b, (size_t)n));
        assert_memory_equal(a, b, sizeof(double) * (size_t)n);
        /* a different seed gives different numbers; the stream advances */
        TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 43));
        wk_tensor *z = TU_OK(wk_rand(&n, 1, 0, 1, dts[k], wk_cpu()));
        wk_tensor *w = TU_OK(wk_rand(&n, 1, 0, 1, dts[k], wk_cpu()));
        assert_true(tu_max_abs_diff(x, z) > 0);
        assert_true(tu_max_abs_diff(z, w) > 0);
        wk_tensor *all[] = {x, xn, y, yn, z, w};
        for (size_t i = 0; i < 6; i++) wk_tensor_free(all[i]);
        free(a);
        free(b);
    }
    wk_clear_error();
    assert_int_equal(wk_device_set_seed(NULL, 1), WK_ERR_ARG);
    wk_clear_error();
}

static void test_rand_distribution(void **state) {
    (void)state;
    const int64_t n = 100000;
    double *v = malloc(sizeof(double) * (size_t)n);
    assert_non_null(v);
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 7));
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        wk_tensor *u = TU_OK(wk_rand(&n, 1, -2, 3, dts[k], wk_cpu()));
        TU_STATUS_OK(wk_to_host_f64(u, v, (size_t)n));
        double s = 0, lo = 1e9, hi = -1e9;
        for (int64_t i = 0; i < n; i++) {
            if (!(v[i] >= -2 && v[i] < 3)) fail_msg("%s uniform value %g outside [-2, 3)", wk_dtype_name(dts[k]), v[i]);
            s += v[i];
            lo = fmin(lo, v[i]);
            hi = fmax(hi, v[i]);
        }
        assert_true(fabs(s / (double)n - 0.5) < 0.05);
        assert_true(lo < -1.9 && hi > 2.9);
        wk_tensor_free(u);
        wk_tensor *g = TU_OK(wk_randn(&n, 1, 1.5, 2.0, dts[k], wk_cpu()));
        TU_STATUS_OK(wk_to_host_f64(g, v, (size_t)n));
        double m = 0, q = 0;
        for (int64_t i = 0; i < n; i++) m += v[i];
        m /= (double)n;
        for (int64_t i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
        double sd = sqrt(q / (double)(n - 1));
        if (fabs(m - 1.5) > 0.05 || fabs(sd - 2.0) > 0.05)
            fail_msg("%s normal: mean %g std %g, expected 1.5 and 2", wk_dtype_name(dts[k]), m, sd);
        wk_tensor_free(g);
    }
    /* odd count and rank 0 */
    int64_t three = 3;
    wk_tensor *o = TU_OK(wk_randn(&three, 1, 0, 1, WK_F32, wk_cpu()));
    wk_tensor_free(o);
    wk_tensor *r0 = TU_OK(wk_rand(NULL, 0, 5, 6, WK_F32, wk_cpu()));
    double x;
    TU_STATUS_OK(wk_item(r0, &x));
    assert_true(x >= 5 && x < 6);
    wk_tensor_free(r0);
    free(v);
    wk_clear_error();
    TU_FAILS(wk_rand(&n, 1, 0, 1, WK_I32, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_randn(&n, 1, 0, 1, WK_U8, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_rand(&n, 1, 0, 1, (wk_dtype)99, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_rand(&n, 1, 1, 0, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_randn(&n, 1, 0, -1, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_rand(&n, 1, 0, NAN, WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_rand(&n, 1, 0, 1, WK_F32, NULL), WK_ERR_ARG);
}

/* ------------------------------------------------------------ readback */

static void test_to_host_view_and_sentinel(void **state) {
    (void)state;
    int64_t s46[2] = {4, 6};
    wk_tensor *a = iota(s46, 2);
    wk_tensor *n = TU_OK(wk_narrow(a, 1, 2, 3)); /* (4,3) */
    const size_t need = 12 * sizeof(float);
    unsigned char *buf = malloc(need + 64);
    assert_non_null(buf);
    memset(buf, 0xA5, need + 64);
    TU_STATUS_OK(wk_to_host(n, buf, need + 64)); /* a larger buffer is allowed */
    float got[12];
    memcpy(got, buf, need);
    for (int i = 0; i < 12; i++) assert_true(got[i] == (float)((i / 3) * 6 + 2 + i % 3));
    for (size_t i = need; i < need + 64; i++)
        if (buf[i] != 0xA5) fail_msg("wk_to_host wrote byte %zu past the view's %zu bytes", i, need);
    /* exactly numel*size */
    memset(buf, 0xA5, need + 64);
    TU_STATUS_OK(wk_to_host(n, buf, need));
    for (size_t i = need; i < need + 64; i++) assert_int_equal(buf[i], 0xA5);
    /* transposed narrowed view, f64 conversion */
    wk_tensor *t = TU_OK(wk_t(n)); /* (3,4) */
    double d[12 + 4];
    for (int i = 0; i < 16; i++) d[i] = -999;
    TU_STATUS_OK(wk_to_host_f64(t, d, 12));
    for (int i = 0; i < 12; i++) assert_true(d[i] == (double)((i % 4) * 6 + 2 + i / 4));
    for (int i = 12; i < 16; i++) assert_true(d[i] == -999);
    float f[12];
    TU_STATUS_OK(wk_to_host_f32(t, f, 12));
    for (int i = 0; i < 12; i++) assert_true(f[i] == (float)d[i]);
    /* short buffers and NULLs */
    wk_clear_error();
    assert_int_equal(wk_to_host(n, buf, need - 1), WK_ERR_ARG);
    assert_true(strlen(wk_last_error()) > 0);
    assert_int_equal(wk_to_host_f64(t, d, 11), WK_ERR_ARG);
    assert_int_equal(wk_to_host_f32(t, f, 0), WK_ERR_ARG);
    assert_int_equal(wk_to_host(n, NULL, need), WK_ERR_ARG);
    assert_int_equal(wk_to_host_f64(t, NULL, 12), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_to_host(NULL, buf, need), WK_ERR_ARG);
    wk_clear_error();
    free(buf);
    wk_tensor_free(t);
    wk_tensor_free(n);
    wk_tensor_free(a);
}

static void test_item_get(void **state) {
    (void)state;
    int64_t s46[2] = {4, 6};
    wk_tensor *a = iota(s46, 2);
    int64_t i1[2] = {-1, -2}, i2[2] = {0, 0}, i3[2] = {2, -6};
    assert_true(get(a, i1) == 3 * 6 + 4);
    assert_true(get(a, i2) == 0);
    assert_true(get(a, i3) == 12);
    wk_tensor *t = TU_OK(wk_t(a)); /* (6,4) */
    int64_t j1[2] = {-1, 1};
    assert_true(get(t, j1) == 6 + 5);
    wk_tensor *row2 = TU_OK(wk_select(a, 0, 2));
    wk_tensor *one = TU_OK(wk_narrow(row2, 0, 3, 1)); /* (1,) = 15 */
    double v;
    TU_STATUS_OK(wk_item(one, &v));
    assert_true(v == 15);
    int64_t s111[3] = {1, 1, 1};
    wk_tensor *r = TU_OK(wk_reshape(one, s111, 3));
    TU_STATUS_OK(wk_item(r, &v));
    assert_true(v == 15);
    /* an item of every dtype */
    int64_t i64v = -(INT64_C(1) << 40);
    wk_tensor *big = TU_OK(wk_from_host(&i64v, 8, NULL, 0, WK_I64, wk_cpu()));
    TU_STATUS_OK(wk_item(big, &v));
    assert_true(v == -0x1p40);
    wk_clear_error();
    int64_t bad1[2] = {4, 0}, bad2[2] = {0, -7}, bad3[2] = {INT64_MIN, 0}, bad4[2] = {0, INT64_MAX};
    assert_int_equal(wk_get(a, bad1, &v), WK_ERR_INDEX);
    assert_int_equal(wk_get(a, bad2, &v), WK_ERR_INDEX);
    assert_int_equal(wk_get(a, bad3, &v), WK_ERR_INDEX);
    assert_int_equal(wk_get(a, bad4, &v), WK_ERR_INDEX);
    assert_int_equal(wk_get(a, NULL, &v), WK_ERR_ARG);
    assert_int_equal(wk_get(a, i1, NULL), WK_ERR_ARG);
    assert_int_equal(wk_item(a, &v), WK_ERR_SHAPE);
    assert_int_equal(wk_item(one, NULL), WK_ERR_ARG);
    int64_t s0 = 0;
    wk_tensor *empty = TU_OK(wk_zeros(&s0, 1, WK_F32, wk_cpu()));
    assert_int_equal(wk_item(empty, &v), WK_ERR_SHAPE);
    wk_clear_error();
    wk_tensor_free(empty);
    wk_tensor_free(big);
    wk_tensor_free(r);
    wk_tensor_free(one);
    wk_tensor_free(row2);
    wk_tensor_free(t);
    wk_tensor_free(a);
}

/* ------------------------------------------------------------ copies and in-place writes */

static void test_copy_independent(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3};
    wk_tensor *a = iota(s23, 2);
    wk_tensor *c = TU_OK(wk_copy(a));
    assert_false(wk_shares_storage(a, c)); /* always allocates, even when contiguous */
    assert_true(wk_is_contiguous(c));
    assert_true(tu_max_abs_diff(a, c) == 0);
    /* writing the original does not change the copy */
    int64_t s21[2] = {2, 1};
    wk_tensor *src = TU_OK(wk_full(s21, 2, 100, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_slice_set(a, src, 1, 1));
    const double ea[6] = {0, 100, 2, 3, 100, 5}, ec[6] = {0, 1, 2, 3, 4, 5};
    tu_assert_close(a, ea, 6, 0, 0);
    tu_assert_close(c, ec, 6, 0, 0);
    /* and the other way round */
    TU_STATUS_OK(wk_fill_(c, -1));
    tu_assert_close(a, ea, 6, 0, 0);
    /* a copy of a strided view is contiguous with the view's values */
    wk_tensor *t = TU_OK(wk_t(a));
    wk_tensor *tc = TU_OK(wk_copy(t));
    assert_true(wk_is_contiguous(tc));
    assert_int_equal(wk_offset(tc), 0);
    assert_true(tu_max_abs_diff(t, tc) == 0);
    /* a copy of a rank-0 and of an offset view */
    wk_tensor *sel = TU_OK(wk_select(a, 0, 1));
    wk_tensor *sc = TU_OK(wk_copy(sel));
    assert_int_equal(wk_offset(sc), 0);
    const double es[3] = {3, 100, 5};
    tu_assert_close(sc, es, 3, 0, 0);
    wk_clear_error();
    TU_FAILS(wk_copy(NULL), WK_ERR_ARG);
    wk_tensor *xs[] = {sc, sel, tc, t, src, c, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_slice_set(void **state) {
    (void)state;
    int64_t s46[2] = {4, 6};
    wk_tensor *dst = TU_OK(wk_zeros(s46, 2, WK_F32, wk_cpu()));
    /* narrowed dst: columns 1..4; write its columns 1..2 = dst columns 2..3 */
    wk_tensor *view = TU_OK(wk_narrow(dst, 1, 1, 4));
    int64_t s42[2] = {4, 2};
    wk_tensor *src = iota(s42, 2);
    TU_STATUS_OK(wk_slice_set(view, src, 1, 1));
    double ex[24] = {0};
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 2; k++) ex[r * 6 + 2 + k] = r * 2 + k;
    tu_assert_close(dst, ex, 24, 0, 0);
    /* transposed dst (6,4): rows 4..5 of it = dst columns 4..5 */
    wk_tensor *dt = TU_OK(wk_t(dst));
    int64_t s24[2] = {2, 4};
    wk_tensor *src2 = TU_OK(wk_full(s24, 2, 0, WK_F32, wk_cpu()));
    wk_tensor *src2v = iota(s24, 2);
    TU_STATUS_OK(wk_copy_(src2, src2v));
    TU_STATUS_OK(wk_slice_set(dt, src2, 0, 4));
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++) ex[c * 6 + 4 + r] = r * 4 + c;
    tu_assert_close(dst, ex, 24, 0, 0);
    /* every view sharing the storage sees it */
    int64_t ix[2] = {5, 3};
    assert_true(get(dt, ix) == 7);
    /* negative dim, offset 0, full length */
    wk_tensor *row = TU_OK(wk_full(&s46[1], 1, 9, WK_F32, wk_cpu()));
    wk_tensor *row2 = TU_OK(wk_unsqueeze(row, 0));
    TU_STATUS_OK(wk_slice_set(dst, row2, -2, 3));
    int64_t ir[2] = {3, 0};
    assert_true(get(dst, ir) == 9);
    /* src overlapping dst (same storage) */
    wk_tensor *r0 = TU_OK(wk_narrow(dst, 0, 0, 1));
    TU_STATUS_OK(wk_slice_set(dst, r0, 0, 1));
    int64_t a1[2] = {1, 2}, a0[2] = {0, 2};
    assert_true(get(dst, a1) == get(dst, a0));
    /* overlapping shift down by one row: rows 1..3 = old rows 0..2 */
    wk_tensor *before = TU_OK(wk_copy(dst));
    wk_tensor *shift = TU_OK(wk_narrow(dst, 0, 0, 3));
    TU_STATUS_OK(wk_slice_set(dst, shift, 0, 1));
    for (int64_t r = 1; r < 4; r++)
        for (int64_t c = 0; c < 6; c++) {
            int64_t ia[2] = {r, c}, ib[2] = {r - 1, c};
            assert_true(get(dst, ia) == get(before, ib));
        }
    wk_tensor_free(before);
    wk_clear_error();
    int64_t s43[2] = {4, 3}, s33[2] = {3, 2};
    wk_tensor *bad = TU_OK(wk_zeros(s43, 2, WK_F32, wk_cpu()));
    wk_tensor *bad2 = TU_OK(wk_zeros(s33, 2, WK_F32, wk_cpu()));
    wk_tensor *badd = TU_OK(wk_zeros(s42, 2, WK_F64, wk_cpu()));
    assert_int_equal(wk_slice_set(dst, bad, 1, 4), WK_ERR_INDEX);  /* 4 + 3 > 6 */
    assert_int_equal(wk_slice_set(dst, bad, 1, -1), WK_ERR_INDEX);
    assert_int_equal(wk_slice_set(dst, bad, 1, INT64_MAX), WK_ERR_INDEX);
    assert_int_equal(wk_slice_set(dst, bad2, 1, 0), WK_ERR_SHAPE); /* 3 rows, not 4 */
    assert_int_equal(wk_slice_set(dst, badd, 1, 0), WK_ERR_DTYPE);
    assert_int_equal(wk_slice_set(dst, bad, 2, 0), WK_ERR_INDEX);
    assert_int_equal(wk_slice_set(dst, row, 0, 0), WK_ERR_SHAPE);  /* rank differs */
    wk_clear_error();
    assert_int_equal(wk_slice_set(NULL, bad, 0, 0), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_slice_set(dst, NULL, 0, 0), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor *xs[] = {badd, bad2, bad, shift, r0, row2, row, src2v, src2, dt, src, view, dst};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_slice_set_overlap_values(void **state) {
    (void)state;
    int64_t s5 = 5;
    wk_tensor *a = iota(&s5, 1); /* 0 1 2 3 4 */
    wk_tensor *head = TU_OK(wk_narrow(a, 0, 0, 4));
    TU_STATUS_OK(wk_slice_set(a, head, 0, 1)); /* a[1:5] = old a[0:4] */
    const double ex[5] = {0, 0, 1, 2, 3};
    tu_assert_close(a, ex, 5, 0, 0);
    wk_tensor *tail = TU_OK(wk_narrow(a, 0, 1, 4));
    TU_STATUS_OK(wk_copy_(head, tail)); /* a[0:4] = old a[1:5] */
    const double ex2[5] = {0, 1, 2, 3, 3};
    tu_assert_close(a, ex2, 5, 0, 0);
    wk_tensor_free(tail);
    wk_tensor_free(head);
    wk_tensor_free(a);
}

static void test_fill_views(void **state) {
    (void)state;
    int64_t s46[2] = {4, 6};
    wk_tensor *base = TU_OK(wk_zeros(s46, 2, WK_F32, wk_cpu()));
    wk_tensor *rows = TU_OK(wk_narrow(base, 0, 1, 2));
    TU_STATUS_OK(wk_fill_(rows, 7));
    double ex[24] = {0};
    for (int i = 6; i < 18; i++) ex[i] = 7;
    tu_assert_close(base, ex, 24, 0, 0);
    /* a strided (transposed, narrowed) view: only its elements */
    wk_tensor *t = TU_OK(wk_t(base));
    wk_tensor *cols = TU_OK(wk_narrow(t, 0, 4, 1)); /* base[:, 4] */
    TU_STATUS_OK(wk_one_(cols));
    for (int r = 0; r < 4; r++) ex[r * 6 + 4] = 1;
    tu_assert_close(base, ex, 24, 0, 0);
    wk_tensor *diag_src = TU_OK(wk_select(base, 0, 2));
    TU_STATUS_OK(wk_zero_(diag_src));
    for (int c = 0; c < 6; c++) ex[12 + c] = 0;
    tu_assert_close(base, ex, 24, 0, 0);
    /* an empty view is a no-op */
    wk_tensor *none = TU_OK(wk_narrow(base, 1, 3, 0));
    TU_STATUS_OK(wk_fill_(none, 123));
    tu_assert_close(base, ex, 24, 0, 0);
    /* integer dtype: the fill value is converted like a cast */
    wk_tensor *u = TU_OK(wk_zeros(s46, 2, WK_U8, wk_cpu()));
    wk_tensor *un = TU_OK(wk_narrow(u, 1, 0, 1));
    TU_STATUS_OK(wk_fill_(un, 300));
    int64_t i0[2] = {3, 0}, i1[2] = {3, 1};
    assert_true(get(u, i0) == 255);
    assert_true(get(u, i1) == 0);
    wk_clear_error();
    assert_int_equal(wk_fill_(NULL, 1), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor *xs[] = {un, u, none, diag_src, cols, t, rows, base};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_copy_inplace(void **state) {
    (void)state;
    int64_t s32[2] = {3, 2}, s23[2] = {2, 3};
    wk_tensor *base = TU_OK(wk_zeros(s32, 2, WK_F32, wk_cpu()));
    wk_tensor *dst = TU_OK(wk_t(base)); /* (2,3) view */
    wk_tensor *src = iota(s23, 2);
    TU_STATUS_OK(wk_copy_(dst, src));
    const double ex[6] = {0, 3, 1, 4, 2, 5};
    tu_assert_close(base, ex, 6, 0, 0);
    /* broadcast source view */
    int64_t s3 = 3;
    wk_tensor *v = iota(&s3, 1);
    wk_tensor *vb = TU_OK(wk_broadcast_as(v, s23, 2));
    TU_STATUS_OK(wk_copy_(dst, vb));
    const double ex2[6] = {0, 0, 1, 1, 2, 2};
    tu_assert_close(base, ex2, 6, 0, 0);
    wk_clear_error();
    wk_tensor *d64 = TU_OK(wk_zeros(s23, 2, WK_F64, wk_cpu()));
    assert_int_equal(wk_copy_(dst, d64), WK_ERR_DTYPE);
    assert_int_equal(wk_copy_(base, src), WK_ERR_SHAPE);
    assert_int_equal(wk_copy_(dst, v), WK_ERR_SHAPE); /* no implicit broadcast */
    wk_clear_error();
    assert_int_equal(wk_copy_(NULL, src), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor *xs[] = {d64, vb, v, src, dst, base};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

/* ------------------------------------------------------------ cat, stack */

static void test_cat_stack(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3}, s21[2] = {2, 1};
    wk_tensor *a = iota(s23, 2);
    wk_tensor *b = TU_OK(wk_full(s21, 2, 9, WK_F32, wk_cpu()));
    wk_tensor *at = TU_OK(wk_t(a)); /* (3,2) */
    wk_tensor *ts[2] = {a, b};
    wk_tensor *c = TU_OK(wk_cat(ts, 2, 1));
    const double ec[8] = {0, 1, 2, 9, 3, 4, 5, 9};
    int64_t s24[2] = {2, 4};
    tu_assert_shape(c, s24, 2);
    tu_assert_close(c, ec, 8, 0, 0);
    wk_tensor *ts2[2] = {at, at};
    wk_tensor *c2 = TU_OK(wk_cat(ts2, 2, -2));
    const double ec2[12] = {0, 3, 1, 4, 2, 5, 0, 3, 1, 4, 2, 5};
    tu_assert_close(c2, ec2, 12, 0, 0);
    wk_tensor *ts3[2] = {a, a};
    wk_tensor *s = TU_OK(wk_stack(ts3, 2, 1));
    int64_t s223[3] = {2, 2, 3};
    tu_assert_shape(s, s223, 3);
    const double es[12] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
    tu_assert_close(s, es, 12, 0, 0);
    wk_tensor *sl = TU_OK(wk_stack(ts3, 2, -1)); /* (2,3,2) */
    int64_t s232[3] = {2, 3, 2};
    tu_assert_shape(sl, s232, 3);
    wk_tensor *one = TU_OK(wk_cat(ts, 1, 0));
    assert_false(wk_shares_storage(one, a));
    assert_true(tu_max_abs_diff(one, a) == 0);
    wk_clear_error();
    TU_FAILS(wk_cat(ts, 0, 0), WK_ERR_ARG);
    TU_FAILS(wk_cat(NULL, 2, 0), WK_ERR_ARG);
    TU_FAILS(wk_cat(ts, 2, 0), WK_ERR_SHAPE);   /* 3 vs 1 columns */
    TU_FAILS(wk_cat(ts, 2, 2), WK_ERR_INDEX);
    TU_FAILS(wk_cat(ts2, 2, 5), WK_ERR_INDEX);
    wk_tensor *d64 = TU_OK(wk_zeros(s21, 2, WK_F64, wk_cpu()));
    wk_tensor *mix[2] = {a, d64};
    assert_null(wk_cat(mix, 2, 1));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_error_mentions("f32", "f64");
    wk_clear_error();
    wk_tensor *r1 = TU_OK(wk_flatten_all(a));
    wk_tensor *rk[2] = {a, r1};
    TU_FAILS(wk_cat(rk, 2, 0), WK_ERR_SHAPE);
    wk_tensor *withnull[2] = {a, NULL};
    TU_FAILS(wk_cat(withnull, 2, 0), WK_ERR_ARG);
    TU_FAILS(wk_stack(ts, 2, 0), WK_ERR_SHAPE);
    TU_FAILS(wk_stack(ts, 0, 0), WK_ERR_ARG);
    TU_FAILS(wk_stack(NULL, 1, 0), WK_ERR_ARG);
    TU_FAILS(wk_stack(ts3, 2, 3), WK_ERR_INDEX);
    TU_FAILS(wk_stack(ts3, 2, -4), WK_ERR_INDEX);
    TU_FAILS(wk_stack(withnull, 2, 0), WK_ERR_ARG);
    TU_FAILS(wk_stack(mix, 2, 0), WK_ERR_SHAPE);
    wk_tensor *xs[] = {r1, d64, one, sl, s, c2, c, at, b, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

/* ------------------------------------------------------------ matmul */

/* Reference (..., m, k) @ (..., k, n) of equal batch shapes, in f64. */
static void ref_matmul(const wk_tensor *a, const wk_tensor *b, double *out) {
    int r = wk_rank(a);
    int64_t m = wk_dim(a, -2), k = wk_dim(a, -1), n = wk_dim(b, -1), nb = 1;
    for (int i = 0; i < r - 2; i++) nb *= wk_dim(a, i);
    double *x = malloc(sizeof(double) * (size_t)(nb * m * k + 1)), *y = malloc(sizeof(double) * (size_t)(nb * k * n + 1));
    assert_true(x && y);
    TU_STATUS_OK(wk_to_host_f64(a, x, (size_t)(nb * m * k)));
    TU_STATUS_OK(wk_to_host_f64(b, y, (size_t)(nb * k * n)));
    for (int64_t q = 0; q < nb; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += x[q * m * k + i * k + p] * y[q * k * n + p * n + j];
                out[q * m * n + i * n + j] = s;
            }
    free(x);
    free(y);
}

static void test_matmul_basic_and_errors(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3}, s34[2] = {3, 4};
    wk_tensor *a = iota(s23, 2), *b = iota(s34, 2);
    wk_tensor *c = TU_OK(wk_matmul(a, b));
    int64_t s24[2] = {2, 4};
    tu_assert_shape(c, s24, 2);
    double ex[8];
    ref_matmul(a, b, ex);
    tu_assert_close(c, ex, 8, 0, 0);
    /* transposed operands (any strides) */
    wk_tensor *bt = TU_OK(wk_t(b));
    wk_tensor *btt = TU_OK(wk_t(bt));
    wk_tensor *c2 = TU_OK(wk_matmul(a, btt));
    tu_assert_close(c2, ex, 8, 0, 0);
    /* f64, f16, bf16 */
    const wk_dtype fds[] = {WK_F64, WK_F16, WK_BF16};
    for (size_t i = 0; i < 3; i++) {
        wk_tensor *ah = TU_OK(wk_to_dtype(a, fds[i])), *bh = TU_OK(wk_to_dtype(b, fds[i]));
        wk_tensor *ch = TU_OK(wk_matmul(ah, bh));
        assert_int_equal(wk_tensor_dtype(ch), fds[i]);
        tu_assert_close(ch, ex, 8, 0, 0.01);
        wk_tensor_free(ch);
        wk_tensor_free(bh);
        wk_tensor_free(ah);
    }
    /* k = 0: zeros */
    int64_t s20[2] = {2, 0}, s03[2] = {0, 3};
    wk_tensor *z1 = TU_OK(wk_ones(s20, 2, WK_F32, wk_cpu())), *z2 = TU_OK(wk_ones(s03, 2, WK_F32, wk_cpu()));
    wk_tensor *zz = TU_OK(wk_matmul(z1, z2));
    int64_t s23b[2] = {2, 3};
    tu_assert_shape(zz, s23b, 2);
    const double e0[6] = {0};
    tu_assert_close(zz, e0, 6, 0, 0);
    /* m = 0 / n = 0 */
    wk_tensor *o34 = TU_OK(wk_ones(s34, 2, WK_F32, wk_cpu()));
    wk_tensor *z3 = TU_OK(wk_matmul(z2, o34)); /* (0,4) */
    assert_int_equal(wk_numel(z3), 0);
    assert_int_equal(wk_dim(z3, 1), 4);
    wk_clear_error();
    TU_FAILS(wk_matmul(a, a), WK_ERR_SHAPE);             /* inner 3 vs 2 */
    int64_t s3 = 3;
    wk_tensor *v = iota(&s3, 1);
    TU_FAILS(wk_matmul(v, b), WK_ERR_SHAPE);             /* rank 1 */
    TU_FAILS(wk_matmul(a, v), WK_ERR_SHAPE);
    int64_t s223[3] = {2, 2, 3}, s334[3] = {3, 3, 4}, s234[3] = {2, 3, 4};
    wk_tensor *ba = iota(s223, 3), *bb = iota(s334, 3), *bc = iota(s234, 3);
    TU_FAILS(wk_matmul(ba, bb), WK_ERR_SHAPE);           /* batch 2 vs 3 */
    TU_FAILS(wk_matmul(ba, b), WK_ERR_SHAPE);            /* ranks differ */
    wk_tensor *bres = TU_OK(wk_matmul(ba, bc));
    double bex[16];
    ref_matmul(ba, bc, bex);
    tu_assert_close(bres, bex, 16, 0, 0);
    wk_tensor *ai = TU_OK(wk_to_dtype(a, WK_I32)), *bi = TU_OK(wk_to_dtype(b, WK_I32));
    assert_null(wk_matmul(ai, bi));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_error_mentions("i32", NULL);
    wk_clear_error();
    wk_tensor *b64 = TU_OK(wk_to_dtype(b, WK_F64));
    assert_null(wk_matmul(a, b64));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_error_mentions("f32", "f64");
    wk_clear_error();
    TU_FAILS(wk_matmul(NULL, b), WK_ERR_ARG);
    wk_tensor *xs[] = {b64, bi, ai, bres, bc, bb, ba, v, o34, z3, zz, z2, z1, c2, btt, bt, c, b, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_matmul_narrowed_batch(void **state) {
    (void)state;
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 2));
    int64_t sx[4] = {2, 4, 3, 5}, sy[4] = {2, 2, 5, 6};
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        wk_tensor *x = TU_OK(wk_randn(sx, 4, 0, 1, dts[k], wk_cpu()));
        wk_tensor *y = TU_OK(wk_randn(sy, 4, 0, 1, dts[k], wk_cpu()));
        for (int64_t start = 0; start <= 2; start++) {
            wk_tensor *xn = TU_OK(wk_narrow(x, 1, start, 2)); /* (2,2,3,5) */
            assert_false(wk_is_contiguous(xn));
            wk_tensor *xc = TU_OK(wk_contiguous(xn));
            wk_tensor *r1 = TU_OK(wk_matmul(xn, y));
            wk_tensor *r2 = TU_OK(wk_matmul(xc, y));
            int64_t so[4] = {2, 2, 3, 6};
            tu_assert_shape(r1, so, 4);
            if (tu_max_abs_diff(r1, r2) != 0)
                fail_msg("%s narrowed (start %lld) matmul differs from the contiguous one by %g", wk_dtype_name(dts[k]),
                         (long long)start, tu_max_abs_diff(r1, r2));
            double ex[72];
            ref_matmul(xc, y, ex);
            tu_assert_close(r1, ex, 72, dts[k] == WK_F64 ? 1e-12 : dts[k] == WK_F32 ? 1e-5 : 0.1,
                            dts[k] == WK_F64 || dts[k] == WK_F32 ? 1e-5 : 0.02);
            /* a transposed rhs batch too */
            wk_tensor *yt = TU_OK(wk_transpose(y, 0, 1));
            wk_tensor *ytc = TU_OK(wk_contiguous(yt));
            wk_tensor *r3 = TU_OK(wk_matmul(xn, yt));
            wk_tensor *r4 = TU_OK(wk_matmul(xc, ytc));
            assert_true(tu_max_abs_diff(r3, r4) == 0);
            wk_tensor *xs[] = {r4, r3, ytc, yt, r2, r1, xc, xn};
            for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
        }
        wk_tensor_free(y);
        wk_tensor_free(x);
    }
}

static void test_broadcast_matmul(void **state) {
    (void)state;
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 3));
    int64_t sa[4] = {2, 1, 3, 4}, sb[3] = {5, 4, 2};
    wk_tensor *a = TU_OK(wk_randn(sa, 4, 0, 1, WK_F64, wk_cpu()));
    wk_tensor *b = TU_OK(wk_randn(sb, 3, 0, 1, WK_F64, wk_cpu()));
    wk_tensor *c = TU_OK(wk_broadcast_matmul(a, b));
    int64_t sc[4] = {2, 5, 3, 2};
    tu_assert_shape(c, sc, 4);
    /* reference: materialise the broadcast operands */
    int64_t sa2[4] = {2, 5, 3, 4}, sb2[4] = {2, 5, 4, 2};
    wk_tensor *abv = TU_OK(wk_broadcast_as(a, sa2, 4)), *bbv = TU_OK(wk_broadcast_as(b, sb2, 4));
    wk_tensor *ab = TU_OK(wk_contiguous(abv)), *bb = TU_OK(wk_contiguous(bbv));
    double ex[60];
    ref_matmul(ab, bb, ex);
    tu_assert_close(c, ex, 60, 1e-12, 1e-12);
    wk_tensor *c2 = TU_OK(wk_matmul(ab, bb));
    assert_true(tu_max_abs_diff(c, c2) < 1e-12);
    /* plain 2-D with a batched side */
    int64_t s43[2] = {4, 3};
    wk_tensor *m = TU_OK(wk_randn(s43, 2, 0, 1, WK_F64, wk_cpu()));
    int64_t s534[3] = {5, 3, 4};
    wk_tensor *bm = TU_OK(wk_randn(s534, 3, 0, 1, WK_F64, wk_cpu()));
    wk_tensor *mm = TU_OK(wk_broadcast_matmul(m, bm));
    int64_t s544[3] = {5, 4, 4};
    tu_assert_shape(mm, s544, 3);
    wk_clear_error();
    int64_t s334[3] = {3, 3, 4};
    wk_tensor *bad = TU_OK(wk_zeros(s334, 3, WK_F64, wk_cpu()));
    int64_t s3342[4] = {3, 3, 4, 2};
    wk_tensor *bad2 = TU_OK(wk_zeros(s3342, 4, WK_F64, wk_cpu()));
    wk_tensor *badt = TU_OK(wk_t(bad)); /* (3,4,3) */
    TU_FAILS(wk_broadcast_matmul(bm, badt), WK_ERR_SHAPE); /* batch 5 vs 3 */
    TU_FAILS(wk_broadcast_matmul(a, bad2), WK_ERR_SHAPE);  /* batch (2,1) vs (3,3) */
    TU_FAILS(wk_broadcast_matmul(a, a), WK_ERR_SHAPE);     /* inner 4 vs 3 */
    int64_t s4 = 4;
    wk_tensor *vec = TU_OK(wk_zeros(&s4, 1, WK_F64, wk_cpu()));
    TU_FAILS(wk_broadcast_matmul(a, vec), WK_ERR_SHAPE);   /* rank 1 */
    wk_tensor *xs[] = {vec, badt, bad2, bad, mm, bm, m, c2, bb, ab, bbv, abv, c, b, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

/* ------------------------------------------------------------ devices */

static void test_devices(void **state) {
    (void)state;
    wk_device *cpu = wk_cpu();
    assert_non_null(cpu);
    assert_ptr_equal(cpu, wk_cpu());
    assert_int_equal(wk_device_kind_of(cpu), WK_DEVICE_CPU);
    assert_string_equal(wk_device_name(cpu), "cpu");
    assert_true(wk_same_device(cpu, wk_cpu()));
    assert_false(wk_same_device(cpu, NULL));
    TU_STATUS_OK(wk_device_synchronize(cpu));
    assert_non_null(strstr(wk_backends(), "cpu"));
    const char *isa = wk_cpu_isa();
    assert_true(strcmp(isa, "avx512") == 0 || strcmp(isa, "avx2") == 0 || strcmp(isa, "scalar") == 0);
    wk_clear_error();
    assert_int_equal(wk_device_synchronize(NULL), WK_ERR_ARG);
    wk_clear_error();
    /* CUDA: "not compiled in" without the backend; with it (WICK_CUDA) and no
     * usable GPU, a device error (a present GPU opens) */
    bool cuda_in = strstr(wk_backends(), "cuda") != NULL;
    wk_device *cu0 = wk_cuda(0);
    if (!cu0 || !cuda_in) {
        assert_null(cu0);
        assert_int_equal(wk_last_status(), cuda_in ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED);
        assert_true(strlen(wk_last_error()) > 0);
    }
    wk_clear_error();
    assert_null(wk_metal(0));
    assert_int_equal(wk_last_status(), WK_ERR_NOT_COMPILED);
    wk_clear_error();
    assert_null(wk_cuda(-1));
    assert_int_equal(wk_last_status(), cuda_in ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED);
    wk_clear_error();
    /* to_device onto the same device is a view */
    int64_t s2 = 2;
    wk_tensor *a = TU_OK(wk_ones(&s2, 1, WK_F32, cpu));
    wk_tensor *b = TU_OK(wk_to_device(a, cpu));
    assert_true(wk_shares_storage(a, b));
    TU_FAILS(wk_to_device(a, NULL), WK_ERR_ARG);
    TU_FAILS(wk_to_device(NULL, cpu), WK_ERR_ARG);
    wk_tensor_free(b);
    wk_tensor_free(a);
}

/* ------------------------------------------------------------ errors */

static void test_error_messages(void **state) {
    (void)state;
    int64_t s3 = 3;
    wk_tensor *f = TU_OK(wk_ones(&s3, 1, WK_F32, wk_cpu()));
    wk_tensor *h = TU_OK(wk_ones(&s3, 1, WK_F16, wk_cpu()));
    wk_clear_error();
    assert_int_equal(wk_last_status(), WK_OK);
    assert_string_equal(wk_last_error(), "");
    TU_FAILS(wk_add(f, h), WK_ERR_DTYPE);
    wk_tensor *r = wk_add(f, h);
    assert_null(r);
    assert_error_mentions("f32", "f16");
    wk_clear_error();
    wk_tensor *cond = TU_OK(wk_ones(&s3, 1, WK_U8, wk_cpu()));
    assert_null(wk_where(cond, f, h));
    assert_error_mentions("f32", "f16");
    wk_clear_error();
    assert_null(wk_where(f, f, f)); /* a float condition */
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    wk_clear_error();
    wk_tensor_free(cond);
    /* integer division by zero */
    const double num[3] = {6, -7, 8}, den[3] = {2, 0, 1};
    const wk_dtype ints[] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64};
    for (size_t k = 0; k < 5; k++) {
        wk_tensor *x = tu_make(num, &s3, 1, ints[k]), *y = tu_make(den, &s3, 1, ints[k]);
        wk_clear_error();
        TU_FAILS(wk_div(x, y), WK_ERR_DIV_ZERO);
        TU_FAILS(wk_binary_scalar(x, 0, WK_DIV), WK_ERR_DIV_ZERO);
        wk_tensor *q = TU_OK(wk_binary_scalar(x, 2, WK_DIV));
        wk_tensor_free(q);
        wk_tensor_free(y);
        wk_tensor_free(x);
    }
    /* i32 truncation and MIN / -1 */
    const double n2[3] = {7, -7, -2147483648.0}, d2[3] = {2, 2, -1};
    wk_tensor *x = tu_make(n2, &s3, 1, WK_I32), *y = tu_make(d2, &s3, 1, WK_I32);
    wk_tensor *q = TU_OK(wk_div(x, y));
    const double eq[3] = {3, -3, -2147483648.0};
    tu_assert_close(q, eq, 3, 0, 0);
    wk_tensor_free(q);
    wk_tensor_free(y);
    wk_tensor_free(x);
    /* float division by zero is fine */
    wk_tensor *fz = TU_OK(wk_binary_scalar(f, 0, WK_DIV));
    wk_tensor_free(fz);
    /* op not defined on a dtype: names both */
    wk_tensor *u = TU_OK(wk_ones(&s3, 1, WK_U32, wk_cpu()));
    wk_clear_error();
    TU_FAILS(wk_exp(u), WK_ERR_DTYPE);
    assert_null(wk_exp(u));
    assert_error_mentions("exp", "u32");
    wk_clear_error();
    assert_null(wk_unary(u, WK_SQRT));
    assert_error_mentions("sqrt", "u32");
    wk_clear_error();
    assert_null(wk_mean_all(u));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_error_mentions("mean", "u32");
    wk_clear_error();
    TU_FAILS(wk_unary(f, WK_UNARY_COUNT), WK_ERR_ARG);
    TU_FAILS(wk_unary(f, (wk_unary_op)-1), WK_ERR_ARG);
    TU_FAILS(wk_binary(f, f, WK_BINARY_COUNT), WK_ERR_ARG);
    TU_FAILS(wk_cmp(f, f, (wk_cmp_op)77), WK_ERR_ARG);
    TU_FAILS(wk_reduce(f, (wk_reduce_op)9, NULL, 0, false), WK_ERR_ARG);
    /* names */
    assert_string_equal(wk_unary_name(WK_EXP), "exp");
    assert_string_equal(wk_unary_name((wk_unary_op)99), "invalid");
    assert_string_equal(wk_binary_name(WK_DIV), "div");
    assert_string_equal(wk_cmp_name(WK_GE), "ge");
    for (int s = 0; s <= WK_ERR_INTERNAL; s++) assert_true(strlen(wk_status_name((wk_status)s)) > 0);
    assert_true(strlen(wk_status_name((wk_status)1234)) > 0);
    wk_tensor_free(u);
    wk_tensor_free(h);
    wk_tensor_free(f);
}

static void test_null_propagation(void **state) {
    (void)state;
    int64_t s3 = 3;
    wk_tensor *x = TU_OK(wk_ones(&s3, 1, WK_F32, wk_cpu()));
    wk_tensor *u = TU_OK(wk_ones(&s3, 1, WK_U32, wk_cpu()));
    wk_clear_error();
    assert_null(wk_add(NULL, x));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_true(strlen(wk_last_error()) > 0);
    wk_clear_error();
    assert_null(wk_add(x, NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    /* the FIRST error is kept through a chain */
    wk_clear_error();
    wk_tensor *r = wk_add(wk_exp(u), x);
    assert_null(r);
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_error_mentions("exp", "u32");
    wk_clear_error();
    r = wk_sum_all(wk_mul(wk_relu(wk_add(x, wk_exp(u))), x));
    assert_null(r);
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_error_mentions("exp", "u32");
    wk_clear_error();
    int64_t bad[2] = {2, 2};
    r = wk_matmul(wk_reshape(x, bad, 2), x);
    assert_null(r);
    assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
    assert_error_mentions("reshape", NULL);
    /* status-returning calls too */
    wk_clear_error();
    float buf[3];
    assert_int_not_equal(wk_to_host_f32(wk_log(u), buf, 3), WK_OK);
    assert_error_mentions("log", "u32");
    wk_clear_error();
    assert_int_not_equal(wk_fill_(wk_exp(u), 1), WK_OK);
    assert_error_mentions("exp", NULL);
    wk_clear_error();
    assert_null(wk_cat((wk_tensor *const[]){x, wk_sqrt(u)}, 2, 0));
    assert_error_mentions("sqrt", NULL);
    wk_clear_error();
    /* success after clear leaves the state clean */
    wk_tensor *ok = TU_OK(wk_add(x, x));
    assert_int_equal(wk_last_status(), WK_OK);
    assert_string_equal(wk_last_error(), "");
    wk_tensor_free(ok);
    wk_tensor_free(u);
    wk_tensor_free(x);
}

/* ------------------------------------------------------------ scopes and references */

static size_t in_use(void) {
    wk_cpu_mem_stats s;
    wk_cpu_mem_stats_get(&s);
    return s.bytes_in_use;
}

static void test_scopes(void **state) {
    (void)state;
    int64_t s = 1000;
    size_t base = in_use();
    /* what one 1000-float tensor adds to bytes_in_use (the allocator may round) */
    wk_tensor *probe = TU_OK(wk_zeros(&s, 1, WK_F32, wk_cpu()));
    const size_t unit = in_use() - base;
    assert_true(unit >= 4000);
    wk_tensor_free(probe);
    assert_int_equal(in_use(), base);
    wk_scope_begin();
    wk_tensor *a = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_tensor *b = TU_OK(wk_add(a, a));
    wk_tensor *c = TU_OK(wk_exp(b));
    wk_tensor *v = TU_OK(wk_narrow(c, 0, 1, 10));
    (void)v;
    assert_true(in_use() >= base + 3 * unit);
    wk_scope_end();
    assert_int_equal(in_use(), base);

    /* wk_keep takes one out */
    wk_scope_begin();
    a = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    b = TU_OK(wk_affine(a, 2, 1));
    wk_tensor *kept = wk_keep(b);
    assert_ptr_equal(kept, b);
    assert_null(wk_keep(NULL));
    wk_scope_end();
    assert_true(in_use() > base);
    double val;
    int64_t i0 = 999;
    TU_STATUS_OK(wk_get(kept, &i0, &val));
    assert_true(val == 3);
    wk_tensor_free(kept);
    assert_int_equal(in_use(), base);

    /* nested scopes */
    wk_scope_begin();
    wk_tensor *outer = TU_OK(wk_zeros(&s, 1, WK_F32, wk_cpu()));
    size_t after_outer = in_use();
    wk_scope_begin();
    TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_tensor *inner_kept = wk_keep(TU_OK(wk_full(&s, 1, 5, WK_F32, wk_cpu())));
    wk_scope_begin();
    TU_OK(wk_ones(&s, 1, WK_F64, wk_cpu()));
    wk_scope_end();
    wk_scope_end();
    assert_int_equal(in_use(), after_outer + unit);
    TU_STATUS_OK(wk_item(TU_OK(wk_sum_all(outer)), &val)); /* outer still alive (sum owned by the scope) */
    assert_true(val == 0);
    wk_scope_end();
    assert_int_equal(in_use(), base + unit);
    TU_STATUS_OK(wk_get(inner_kept, &i0, &val));
    assert_true(val == 5);
    wk_tensor_free(inner_kept);
    assert_int_equal(in_use(), base);

    /* wk_tensor_free inside a scope: no double free */
    wk_scope_begin();
    a = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    b = TU_OK(wk_add(a, a));
    wk_tensor_free(a);
    wk_tensor_free(b);
    wk_tensor *c2 = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_tensor *vv = TU_OK(wk_t(TU_OK(wk_unsqueeze(c2, 0))));
    wk_tensor_free(c2); /* the view keeps the storage alive until the scope ends */
    TU_STATUS_OK(wk_get(vv, (int64_t[]){5, 0}, &val));
    assert_true(val == 1);
    wk_scope_end();
    assert_int_equal(in_use(), base);

    /* retain: an extra reference survives the scope */
    wk_scope_begin();
    a = TU_OK(wk_full(&s, 1, 4, WK_F32, wk_cpu()));
    wk_tensor *ra = wk_tensor_retain(a);
    assert_ptr_equal(ra, a);
    assert_null(wk_tensor_retain(NULL));
    wk_scope_end();
    TU_STATUS_OK(wk_get(ra, &i0, &val));
    assert_true(val == 4);
    wk_tensor_free(ra);
    assert_int_equal(in_use(), base);

    /* retain outside scopes */
    a = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_tensor_retain(a);
    wk_tensor_free(a);
    TU_STATUS_OK(wk_get(a, &i0, &val));
    assert_true(val == 1);
    wk_tensor_free(a);
    assert_int_equal(in_use(), base);
    wk_tensor_free(NULL);

    /* unbalanced end is harmless; deep nesting is balanced */
    wk_scope_end();
    for (int i = 0; i < 100; i++) wk_scope_begin();
    TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    for (int i = 0; i < 100; i++) wk_scope_end();
    assert_int_equal(in_use(), base);
}

/* ------------------------------------------------------------ memory cache */

static void test_memory_cache(void **state) {
    (void)state;
    wk_cpu_mem_stats s0, s1, s2;
    wk_cpu_mem_stats_get(&s0);
    assert_true(s0.cache_limit > 0);
    int64_t n = 1 << 20;
    wk_tensor *a = TU_OK(wk_ones(&n, 1, WK_F32, wk_cpu()));
    wk_tensor *b = TU_OK(wk_ones(&n, 1, WK_F32, wk_cpu()));
    wk_cpu_mem_stats_get(&s0);
    for (int i = 0; i < 10; i++) {
        wk_tensor *c = TU_OK(wk_add(a, b));
        wk_tensor *d = TU_OK(wk_mul(c, b));
        wk_tensor_free(d);
        wk_tensor_free(c);
    }
    wk_cpu_mem_stats_get(&s1);
    if (s1.hits < s0.hits + 15) fail_msg("cache hits grew by %llu over 20 allocations", (unsigned long long)(s1.hits - s0.hits));
    assert_true(s1.bytes_cached >= (size_t)n * 4);
    assert_true(s1.peak_in_use >= 4 * (size_t)n * 4);
    assert_true(s1.bytes_in_use >= 2 * (size_t)n * 4);
    wk_cpu_cache_release();
    wk_cpu_mem_stats_get(&s2);
    assert_int_equal(s2.bytes_cached, 0);
    assert_int_equal(s2.bytes_in_use, s1.bytes_in_use);
    /* after a release, the next allocation is a miss */
    wk_tensor *c = TU_OK(wk_add(a, b));
    wk_cpu_mem_stats_get(&s1);
    assert_true(s1.misses > s2.misses);
    wk_tensor_free(c);
    /* limit 0: nothing is cached */
    size_t old = s2.cache_limit;
    wk_cpu_cache_release();
    TU_STATUS_OK(wk_cpu_cache_set_limit(0));
    c = TU_OK(wk_add(a, b));
    wk_tensor_free(c);
    wk_cpu_mem_stats_get(&s1);
    assert_int_equal(s1.bytes_cached, 0);
    TU_STATUS_OK(wk_cpu_cache_set_limit(old));
    wk_tensor_free(b);
    wk_tensor_free(a);
    wk_cpu_cache_release();
}

/* ------------------------------------------------------------ threads */

static void compute_all(wk_tensor *a, wk_tensor *b, wk_tensor *m1, wk_tensor *m2, void **out, size_t *sizes) {
    wk_tensor *r[5];
    r[0] = TU_OK(wk_add(a, b));
    r[1] = TU_OK(wk_sum_all(a));
    int d0 = 0;
    r[2] = TU_OK(wk_sum(a, &d0, 1, false));
    r[3] = TU_OK(wk_matmul(m1, m2));
    int d1 = 1;
    wk_tensor *a2 = TU_OK(wk_reshape(a, (int64_t[]){4, -1}, 2));
    r[4] = TU_OK(wk_sum(a2, &d1, 1, false));
    wk_tensor_free(a2);
    for (int i = 0; i < 5; i++) {
        sizes[i] = (size_t)wk_numel(r[i]) * wk_dtype_size(wk_tensor_dtype(r[i]));
        out[i] = malloc(sizes[i] ? sizes[i] : 1);
        assert_non_null(out[i]);
        TU_STATUS_OK(wk_to_host(r[i], out[i], sizes[i]));
        wk_tensor_free(r[i]);
    }
}

static void test_threads_deterministic(void **state) {
    (void)state;
    int old = wk_num_threads();
    assert_true(old >= 1);
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 11));
    int64_t n = 3 << 20;
    wk_tensor *a = TU_OK(wk_randn(&n, 1, 0, 1, WK_F32, wk_cpu()));
    wk_tensor *b = TU_OK(wk_randn(&n, 1, 0, 1, WK_F32, wk_cpu()));
    int64_t sm[2] = {300, 200}, sm2[2] = {200, 250};
    wk_tensor *m1 = TU_OK(wk_randn(sm, 2, 0, 1, WK_F32, wk_cpu()));
    wk_tensor *m2 = TU_OK(wk_randn(sm2, 2, 0, 1, WK_F32, wk_cpu()));
    void *r1[5], *r2[5];
    size_t z1[5], z2[5];
    TU_STATUS_OK(wk_set_num_threads(1));
    assert_int_equal(wk_num_threads(), 1);
    compute_all(a, b, m1, m2, r1, z1);
    const char *what[5] = {"add", "sum_all", "sum over dim 0", "matmul", "sum over dim 1 of (4, n/4)"};
    int bad = 0;
    for (int nt = 2; nt <= 3; nt++) {
        TU_STATUS_OK(wk_set_num_threads(nt));
        assert_int_equal(wk_num_threads(), nt);
        compute_all(a, b, m1, m2, r2, z2);
        for (int i = 0; i < 5; i++) {
            assert_int_equal(z1[i], z2[i]);
            if (memcmp(r1[i], r2[i], z1[i]) != 0) {
                print_error("%s differs between 1 and %d threads\n", what[i], nt);
                bad++;
            }
            free(r2[i]);
        }
    }
    for (int i = 0; i < 5; i++) free(r1[i]);
    wk_clear_error();
    assert_int_not_equal(wk_set_num_threads(0), WK_OK);
    assert_int_not_equal(wk_set_num_threads(-3), WK_OK);
    wk_clear_error();
    TU_STATUS_OK(wk_set_num_threads(old));
    wk_tensor_free(m2);
    wk_tensor_free(m1);
    wk_tensor_free(b);
    wk_tensor_free(a);
    if (bad) fail_msg("%d results depend on the thread count", bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant_creation),
        cmocka_unit_test(test_arange),
        cmocka_unit_test(test_eye_from_host),
        cmocka_unit_test(test_rand_seed_reproducible),
        cmocka_unit_test(test_rand_distribution),
        cmocka_unit_test(test_to_host_view_and_sentinel),
        cmocka_unit_test(test_item_get),
        cmocka_unit_test(test_copy_independent),
        cmocka_unit_test(test_slice_set),
        cmocka_unit_test(test_slice_set_overlap_values),
        cmocka_unit_test(test_fill_views),
        cmocka_unit_test(test_copy_inplace),
        cmocka_unit_test(test_cat_stack),
        cmocka_unit_test(test_matmul_basic_and_errors),
        cmocka_unit_test(test_matmul_narrowed_batch),
        cmocka_unit_test(test_broadcast_matmul),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_null_propagation),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_memory_cache),
        cmocka_unit_test(test_threads_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
