/* Pooling and resampling: error paths, hand-checked values, edge cases
 * (empty, one element, NaN, exact integers, non-contiguous views) and
 * 1-thread == 2-thread results on inputs large enough to be split. The wide
 * comparison with PyTorch is tests/test_oracle_pool.c. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void assert_err_mentions(const char *a, const char *b) {
    const char *e = wk_last_error();
    if (!strstr(e, a) || (b && !strstr(e, b))) fail_msg("error '%s' lacks '%s' / '%s'", e, a, b ? b : "");
}

/* the call must fail with status st and a message naming op and `what` */
#define FAILS_WITH(call, st, op, what)                                                                                \
    do {                                                                                                              \
        wk_tensor *r_ = (call);                                                                                       \
        if (r_) {                                                                                                     \
            wk_tensor_free(r_);                                                                                       \
            fail_msg("%s succeeded", #call);                                                                          \
        }                                                                                                             \
        assert_int_equal(wk_last_status(), (st));                                                                     \
        assert_err_mentions((op), (what));                                                                            \
        wk_clear_error();                                                                                             \
    } while (0)

static wk_tensor *arange4(int64_t n, int64_t c, int64_t h, int64_t w, wk_dtype dt) {
    int64_t shape[4] = {n, c, h, w};
    int64_t cnt = n * c * h * w;
    double *v = malloc(sizeof(double) * (size_t)(cnt ? cnt : 1));
    for (int64_t i = 0; i < cnt; i++) v[i] = (double)i;
    wk_tensor *t = tu_make(v, shape, 4, dt);
    free(v);
    return t;
}

static void test_errors(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = arange4(1, 2, 5, 6, WK_F32);
    /* NULL input */
    assert_null(wk_max_pool2d(NULL, 2, 2, 2, 2, 0, 0));
    assert_int_not_equal(wk_last_status(), WK_OK);
    wk_clear_error();
    assert_null(wk_avg_pool2d(NULL, 2, 2, 2, 2, 0, 0, true));
    wk_clear_error();
    assert_null(wk_upsample_nearest1d(NULL, 3));
    wk_clear_error();
    assert_null(wk_upsample_nearest2d(NULL, 3, 3));
    wk_clear_error();
    assert_null(wk_upsample_bilinear2d(NULL, 3, 3, false));
    wk_clear_error();
    /* parameters */
    FAILS_WITH(wk_max_pool2d(x, 0, 2, 1, 1, 0, 0), WK_ERR_ARG, "wk_max_pool2d", "kernel H");
    FAILS_WITH(wk_max_pool2d(x, 2, -1, 1, 1, 0, 0), WK_ERR_ARG, "wk_max_pool2d", "kernel W");
    FAILS_WITH(wk_avg_pool2d(x, 2, 2, 0, 1, 0, 0, true), WK_ERR_ARG, "wk_avg_pool2d", "stride H");
    FAILS_WITH(wk_avg_pool2d(x, 2, 2, 1, -3, 0, 0, true), WK_ERR_ARG, "wk_avg_pool2d", "stride W");
    FAILS_WITH(wk_max_pool2d(x, 3, 3, 1, 1, 2, 0), WK_ERR_ARG, "wk_max_pool2d", "padding H");
    FAILS_WITH(wk_max_pool2d(x, 3, 3, 1, 1, 0, -1), WK_ERR_ARG, "wk_max_pool2d", "padding W");
    FAILS_WITH(wk_max_pool2d(x, 2, 2, 1, 1, 2, 0), WK_ERR_ARG, "wk_max_pool2d", "got 2");
    FAILS_WITH(wk_max_pool2d(x, 6, 2, 1, 1, 0, 0), WK_ERR_SHAPE, "wk_max_pool2d", "output size too small");
    FAILS_WITH(wk_avg_pool2d(x, 2, 9, 1, 1, 0, 1, false), WK_ERR_SHAPE, "wk_avg_pool2d", "input W 6");
    /* huge values: no overflow, just errors */
    FAILS_WITH(wk_max_pool2d(x, INT64_MAX, 2, 1, 1, INT64_MAX / 2 - 3, 0), WK_ERR_SHAPE, "wk_max_pool2d", "output");
    /* a kernel far larger than the image with padding k/2 is valid (PyTorch's rule): every window is a full column */
    wk_tensor *hk = TU_OK(wk_max_pool2d(x, INT64_MAX, 2, 1, 1, INT64_MAX / 2, 0));
    tu_assert_shape(hk, (int64_t[]){1, 2, 5, 5}, 4);
    double hv[50];
    TU_STATUS_OK(wk_to_host_f64(hk, hv, 50));
    assert_true(hv[0] == 25 && hv[4] == 29 && hv[49] == 59);
    wk_tensor *ha = TU_OK(wk_avg_pool2d(x, INT64_MAX, INT64_MAX, 1, 1, INT64_MAX / 2, INT64_MAX / 2, true));
    tu_assert_shape(ha, (int64_t[]){1, 2, 5, 6}, 4);
    FAILS_WITH(wk_max_pool2d(x, 2, 2, INT64_MAX, INT64_MIN, 0, 0), WK_ERR_ARG, "wk_max_pool2d", "stride W");
    wk_tensor *ok = TU_OK(wk_max_pool2d(x, 2, 2, INT64_MAX, INT64_MAX, 1, 1));
    int64_t s11[4] = {1, 2, 1, 1};
    tu_assert_shape(ok, s11, 4);
    /* ranks */
    int64_t s3[3] = {2, 5, 6};
    wk_tensor *x3 = TU_OK(wk_zeros(s3, 3, WK_F32, wk_cpu()));
    FAILS_WITH(wk_max_pool2d(x3, 2, 2, 2, 2, 0, 0), WK_ERR_SHAPE, "wk_max_pool2d", "[2, 5, 6]");
    FAILS_WITH(wk_avg_pool2d(x3, 2, 2, 2, 2, 0, 0, true), WK_ERR_SHAPE, "wk_avg_pool2d", "rank-4");
    FAILS_WITH(wk_upsample_nearest2d(x3, 4, 4), WK_ERR_SHAPE, "wk_upsample_nearest2d", "rank-4");
    FAILS_WITH(wk_upsample_bilinear2d(x3, 4, 4, true), WK_ERR_SHAPE, "wk_upsample_bilinear2d", "rank-4");
    FAILS_WITH(wk_upsample_nearest1d(x, 4), WK_ERR_SHAPE, "wk_upsample_nearest1d", "rank-3");
    /* sizes */
    FAILS_WITH(wk_upsample_nearest2d(x, 0, 4), WK_ERR_SHAPE, "wk_upsample_nearest2d", "[0, 4]");
    FAILS_WITH(wk_upsample_bilinear2d(x, 3, -1, false), WK_ERR_SHAPE, "wk_upsample_bilinear2d", "-1");
    FAILS_WITH(wk_upsample_nearest1d(x3, 0), WK_ERR_SHAPE, "wk_upsample_nearest1d", "output size 0");
    int64_t s0[4] = {1, 2, 0, 3};
    wk_tensor *e = TU_OK(wk_zeros(s0, 4, WK_F32, wk_cpu()));
    FAILS_WITH(wk_upsample_nearest2d(e, 2, 2), WK_ERR_SHAPE, "wk_upsample_nearest2d", "[1, 2, 0, 3]");
    FAILS_WITH(wk_max_pool2d(e, 1, 1, 1, 1, 0, 0), WK_ERR_SHAPE, "wk_max_pool2d", "input H is 0");
    FAILS_WITH(wk_avg_pool2d(e, 2, 2, 1, 1, 1, 1, false), WK_ERR_SHAPE, "wk_avg_pool2d", "input H is 0");
    /* dtypes */
    wk_tensor *xi = arange4(1, 1, 4, 4, WK_I32);
    FAILS_WITH(wk_avg_pool2d(xi, 2, 2, 2, 2, 0, 0, true), WK_ERR_DTYPE, "wk_avg_pool2d", "i32");
    FAILS_WITH(wk_upsample_bilinear2d(xi, 8, 8, false), WK_ERR_DTYPE, "wk_upsample_bilinear2d", "i32");
    wk_tensor *xu = arange4(1, 1, 4, 4, WK_U8);
    FAILS_WITH(wk_avg_pool2d(xu, 2, 2, 2, 2, 0, 0, false), WK_ERR_DTYPE, "wk_avg_pool2d", "u8");
    wk_scope_end();
}

static void test_values(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = arange4(1, 1, 4, 4, WK_F32);
    const double mx[] = {5, 7, 13, 15}, av[] = {2.5, 4.5, 10.5, 12.5};
    tu_assert_close(TU_OK(wk_max_pool2d(x, 2, 2, 2, 2, 0, 0)), mx, 4, 0, 0);
    tu_assert_close(TU_OK(wk_avg_pool2d(x, 2, 2, 2, 2, 0, 0, true)), av, 4, 0, 0);
    /* padding: 3x3 stride 2 pad 1 -> 2x2; windows rows/cols {-1..1}, {1..3} */
    const double mxp[] = {5, 7, 13, 15};
    tu_assert_close(TU_OK(wk_max_pool2d(x, 3, 3, 2, 2, 1, 1)), mxp, 4, 0, 0);
    const double inc[] = {(0 + 1 + 4 + 5) / 9.0, (1 + 2 + 3 + 5 + 6 + 7) / 9.0, (4 + 5 + 8 + 9 + 12 + 13) / 9.0,
                          (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0};
    const double exc[] = {(0 + 1 + 4 + 5) / 4.0, (1 + 2 + 3 + 5 + 6 + 7) / 6.0, (4 + 5 + 8 + 9 + 12 + 13) / 6.0,
                          (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0};
    tu_assert_close(TU_OK(wk_avg_pool2d(x, 3, 3, 2, 2, 1, 1, true)), inc, 4, 1e-6, 1e-6);
    tu_assert_close(TU_OK(wk_avg_pool2d(x, 3, 3, 2, 2, 1, 1, false)), exc, 4, 1e-6, 1e-6);
    /* max pool of a padded all-negative plane never returns the padding */
    int64_t s1[4] = {1, 1, 2, 2};
    double neg[] = {-5, -6, -7, -8};
    wk_tensor *xn = tu_make(neg, s1, 4, WK_F64);
    const double nm[] = {-5, -5, -6, -5, -5, -6, -7, -7, -8};
    tu_assert_close(TU_OK(wk_max_pool2d(xn, 2, 2, 1, 1, 1, 1)), nm, 9, 0, 0);
    /* NaN propagates; inf is an ordinary value */
    double nv[] = {1, NAN, 3, 4, -INFINITY, 2, INFINITY, 0, 7};
    int64_t s33[4] = {1, 1, 3, 3};
    for (int d = 0; d < 4; d++) {
        wk_dtype dt = (wk_dtype[]){WK_F32, WK_F64, WK_F16, WK_BF16}[d];
        wk_tensor *t = tu_make(nv, s33, 4, dt);
        double got[4];
        TU_STATUS_OK(wk_to_host_f64(TU_OK(wk_max_pool2d(t, 2, 2, 1, 1, 0, 0)), got, 4));
        assert_true(isnan(got[0]) && isnan(got[1]));
        assert_true(got[2] == INFINITY && got[3] == 7);
    }
    /* integers: exact at the extremes (not representable in f64) */
    int64_t big[4] = {INT64_MAX - 1, INT64_MIN, INT64_MAX, INT64_MIN + 1};
    wk_tensor *xb = TU_OK(wk_from_host(big, sizeof big, s1, 4, WK_I64, wk_cpu()));
    int64_t got64[4];
    TU_STATUS_OK(wk_to_host(TU_OK(wk_max_pool2d(xb, 2, 2, 1, 1, 0, 0)), got64, sizeof got64));
    assert_true(got64[0] == INT64_MAX);
    TU_STATUS_OK(wk_to_host(TU_OK(wk_upsample_nearest2d(xb, 2, 2)), got64, sizeof got64));
    assert_memory_equal(got64, big, sizeof big);
    uint32_t u[4] = {4000000000u, 1, 4294967295u, 7};
    wk_tensor *xu = TU_OK(wk_from_host(u, sizeof u, s1, 4, WK_U32, wk_cpu()));
    uint32_t gu;
    TU_STATUS_OK(wk_to_host(TU_OK(wk_max_pool2d(xu, 2, 2, 2, 2, 0, 0)), &gu, sizeof gu));
    assert_int_equal(gu, 4294967295u);
    /* nearest: 2x up and a 3 -> 7 ratio */
    int64_t s12[4] = {1, 1, 1, 3};
    double r3[] = {10, 20, 30};
    const double up2[] = {10, 10, 20, 20, 30, 30}, up7[] = {10, 10, 10, 20, 20, 30, 30};
    tu_assert_close(TU_OK(wk_upsample_nearest2d(tu_make(r3, s12, 4, WK_F32), 1, 6)), up2, 6, 0, 0);
    tu_assert_close(TU_OK(wk_upsample_nearest2d(tu_make(r3, s12, 4, WK_I16), 1, 7)), up7, 7, 0, 0);
    const double dn2[] = {10, 20};
    tu_assert_close(TU_OK(wk_upsample_nearest1d(tu_make(r3, (int64_t[]){1, 1, 3}, 3, WK_U8), 2)), dn2, 2, 0, 0);
    /* bilinear, 1 x 3 -> 1 x 5 */
    const double ac[] = {10, 15, 20, 25, 30};
    const double nac[] = {10, 14, 20, 26, 30};
    tu_assert_close(TU_OK(wk_upsample_bilinear2d(tu_make(r3, s12, 4, WK_F64), 1, 5, true)), ac, 5, 1e-12, 0);
    tu_assert_close(TU_OK(wk_upsample_bilinear2d(tu_make(r3, s12, 4, WK_F64), 1, 5, false)), nac, 5, 1e-12, 0);
    /* same size: exact copy; output 1 with align_corners: the first element */
    wk_tensor *xr = arange4(2, 3, 5, 7, WK_F32);
    assert_true(tu_max_abs_diff(TU_OK(wk_upsample_bilinear2d(xr, 5, 7, false)), xr) == 0);
    assert_true(tu_max_abs_diff(TU_OK(wk_upsample_bilinear2d(xr, 5, 7, true)), xr) == 0);
    assert_true(tu_max_abs_diff(TU_OK(wk_upsample_nearest2d(xr, 5, 7)), xr) == 0);
    double one;
    TU_STATUS_OK(wk_to_host_f64(TU_OK(wk_upsample_bilinear2d(arange4(1, 1, 5, 7, WK_F32), 1, 1, true)), &one, 1));
    assert_true(one == 0);
    wk_scope_end();
}

static void test_edges(void **state) {
    (void)state;
    wk_scope_begin();
    /* empty batch / channels: empty results of the right shape */
    wk_tensor *e = arange4(0, 3, 5, 5, WK_F32);
    int64_t se[4] = {0, 3, 2, 2};
    tu_assert_shape(TU_OK(wk_max_pool2d(e, 2, 2, 2, 2, 0, 0)), se, 4);
    tu_assert_shape(TU_OK(wk_avg_pool2d(e, 3, 3, 2, 2, 1, 1, false)), (int64_t[]){0, 3, 3, 3}, 4);
    tu_assert_shape(TU_OK(wk_upsample_bilinear2d(e, 7, 9, true)), (int64_t[]){0, 3, 7, 9}, 4);
    wk_tensor *e1 = TU_OK(wk_zeros((int64_t[]){2, 0, 4}, 3, WK_F16, wk_cpu()));
    tu_assert_shape(TU_OK(wk_upsample_nearest1d(e1, 9)), (int64_t[]){2, 0, 9}, 3);
    /* one element */
    double v = 3.5;
    wk_tensor *x1 = tu_make(&v, (int64_t[]){1, 1, 1, 1}, 4, WK_BF16);
    tu_assert_close(TU_OK(wk_max_pool2d(x1, 1, 1, 1, 1, 0, 0)), &v, 1, 0, 0);
    tu_assert_close(TU_OK(wk_avg_pool2d(x1, 1, 1, 1, 1, 0, 0, true)), &v, 1, 0, 0);
    double up[6] = {3.5, 3.5, 3.5, 3.5, 3.5, 3.5};
    tu_assert_close(TU_OK(wk_upsample_bilinear2d(x1, 2, 3, false)), up, 6, 0, 0);
    tu_assert_close(TU_OK(wk_upsample_nearest2d(x1, 3, 2)), up, 6, 0, 0);
    /* every dtype through nearest (a copy), max pool on each */
    for (int d = 0; d < WK_ELEM_DTYPE_COUNT; d++) {
        wk_tensor *t = arange4(1, 2, 3, 4, (wk_dtype)d);
        wk_tensor *n = TU_OK(wk_upsample_nearest2d(t, 6, 8));
        wk_tensor *back = TU_OK(wk_max_pool2d(n, 2, 2, 2, 2, 0, 0));
        assert_true(tu_max_abs_diff(back, t) == 0);
        assert_int_equal(wk_tensor_dtype(back), d);
    }
    /* non-contiguous: a transposed input equals its contiguous copy */
    wk_tensor *x = arange4(2, 3, 6, 9, WK_F32);
    wk_tensor *xt = TU_OK(wk_transpose(x, 2, 3));
    wk_tensor *xc = TU_OK(wk_contiguous(xt));
    assert_true(tu_max_abs_diff(TU_OK(wk_max_pool2d(xt, 3, 2, 2, 1, 1, 1)),
                                TU_OK(wk_max_pool2d(xc, 3, 2, 2, 1, 1, 1))) == 0);
    assert_true(tu_max_abs_diff(TU_OK(wk_avg_pool2d(xt, 3, 2, 2, 1, 1, 1, false)),
                                TU_OK(wk_avg_pool2d(xc, 3, 2, 2, 1, 1, 1, false))) == 0);
    assert_true(tu_max_abs_diff(TU_OK(wk_upsample_bilinear2d(xt, 13, 5, false)),
                                TU_OK(wk_upsample_bilinear2d(xc, 13, 5, false))) == 0);
    assert_true(tu_max_abs_diff(TU_OK(wk_upsample_nearest2d(xt, 13, 5)),
                                TU_OK(wk_upsample_nearest2d(xc, 13, 5))) == 0);
    wk_tensor *l0 = TU_OK(wk_reshape(arange4(1, 1, 5, 3, WK_I32), (int64_t[]){1, 5, 3}, 3));
    wk_tensor *l1 = TU_OK(wk_narrow(TU_OK(wk_transpose(l0, 1, 2)), 2, 1, 4));
    /* l1: [1, 3, 4] non-contiguous; compare with its copy */
    assert_true(tu_max_abs_diff(TU_OK(wk_upsample_nearest1d(l1, 11)),
                                TU_OK(wk_upsample_nearest1d(TU_OK(wk_contiguous(l1)), 11))) == 0);
    /* broadcast input (stride 0 over N) */
    wk_tensor *b = TU_OK(wk_broadcast_as(arange4(1, 2, 5, 5, WK_F64), (int64_t[]){3, 2, 5, 5}, 4));
    wk_tensor *bc = TU_OK(wk_contiguous(b));
    assert_true(tu_max_abs_diff(TU_OK(wk_avg_pool2d(b, 2, 2, 1, 1, 1, 1, true)),
                                TU_OK(wk_avg_pool2d(bc, 2, 2, 1, 1, 1, 1, true))) == 0);
    wk_scope_end();
}

/* Inputs large enough to be split over threads: 1 and 2 threads agree bitwise. */
static void test_threads(void **state) {
    (void)state;
    wk_scope_begin();
    int saved = wk_num_threads();
    int64_t shape[4] = {3, 17, 40, 36};
    wk_tensor *x = TU_OK(wk_randn(shape, 4, 0, 1, WK_F32, wk_cpu()));
    wk_tensor *xt = TU_OK(wk_transpose(x, 2, 3));
    wk_tensor *xh = TU_OK(wk_to_dtype(x, WK_BF16));
    wk_tensor *r[2][7];
    for (int t = 0; t < 2; t++) {
        TU_STATUS_OK(wk_set_num_threads(t + 1));
        r[t][0] = TU_OK(wk_max_pool2d(x, 3, 3, 2, 2, 1, 1));
        r[t][1] = TU_OK(wk_avg_pool2d(xt, 3, 3, 1, 1, 1, 1, false));
        r[t][2] = TU_OK(wk_upsample_bilinear2d(x, 80, 50, false));
        r[t][3] = TU_OK(wk_upsample_bilinear2d(xt, 81, 70, true));
        r[t][4] = TU_OK(wk_upsample_nearest2d(xh, 61, 90));
        r[t][5] = TU_OK(wk_avg_pool2d(xh, 2, 2, 2, 2, 0, 0, true));
        r[t][6] = TU_OK(wk_max_pool2d(xh, 2, 3, 1, 2, 1, 0));
    }
    TU_STATUS_OK(wk_set_num_threads(saved));
    for (int i = 0; i < 7; i++) {
        size_t n = (size_t)wk_numel(r[0][i]) * wk_dtype_size(wk_tensor_dtype(r[0][i]));
        unsigned char *a = malloc(n), *b = malloc(n);
        TU_STATUS_OK(wk_to_host(r[0][i], a, n));
        TU_STATUS_OK(wk_to_host(r[1][i], b, n));
        assert_memory_equal(a, b, n);
        free(a);
        free(b);
    }
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
