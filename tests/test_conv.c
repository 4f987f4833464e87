/* Convolutions: argument checks and error messages, defaults, empty inputs,
 * broadcast (stride-0) inputs, the blocked paths of large problems against a
 * naive reference, and 1 vs 2 threads. Values on ordinary shapes are covered
 * by the torch oracle (test_oracle_conv.c). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wk_tensor *randn(const int64_t *shape, int rank, wk_dtype dt) {
    return TU_OK(wk_randn(shape, rank, 0.0, 1.0, dt, wk_cpu()));
}

static void assert_err_contains(const char *s) {
    const char *e = wk_last_error();
    if (!strstr(e, s)) fail_msg("error '%s' does not contain '%s'", e, s);
}

static void test_null_and_dtype(void **state) {
    (void)state;
    int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {3, 2, 3, 3};
    wk_tensor *x = randn(xs, 4, WK_F32), *w = randn(ws, 4, WK_F32);
    assert_null(wk_conv2d(NULL, w, NULL));
    assert_null(wk_conv2d(x, NULL, NULL));
    assert_null(wk_conv_transpose2d(NULL, NULL, NULL));
    wk_clear_error();
    wk_tensor *w64 = TU_OK(wk_to_dtype(w, WK_F64));
    TU_FAILS(wk_conv2d(x, w64, NULL), WK_ERR_DTYPE);
    wk_tensor *xi = TU_OK(wk_to_dtype(x, WK_I32)), *wi = TU_OK(wk_to_dtype(w, WK_I32));
    TU_FAILS(wk_conv2d(xi, wi, NULL), WK_ERR_DTYPE);
    assert_null(wk_conv2d(xi, wi, NULL));
    assert_err_contains("i32");
    wk_clear_error();
    wk_tensor *x8 = TU_OK(wk_to_dtype(x, WK_F8E4M3)), *w8 = TU_OK(wk_to_dtype(w, WK_F8E4M3));
    TU_FAILS(wk_conv2d(x8, w8, NULL), WK_ERR_DTYPE);
    TU_FAILS(wk_conv_transpose2d(x8, w8, NULL), WK_ERR_DTYPE);
    wk_tensor *xu = TU_OK(wk_to_dtype(x, WK_U8)), *wu = TU_OK(wk_to_dtype(w, WK_U8));
    TU_FAILS(wk_conv2d(xu, wu, NULL), WK_ERR_DTYPE);
    wk_tensor *tensors[] = {x, w, w64, xi, wi, x8, w8, xu, wu};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

static void test_shape_errors(void **state) {
    (void)state;
    int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {6, 2, 3, 3}, w1s[3] = {6, 4, 3}, x1s[3] = {1, 4, 5};
    wk_tensor *x = randn(xs, 4, WK_F32), *w = randn(ws, 4, WK_F32);
    wk_tensor *x1 = randn(x1s, 3, WK_F32), *w1 = randn(w1s, 3, WK_F32);
    /* rank */
    TU_FAILS(wk_conv2d(x1, w, NULL), WK_ERR_SHAPE);
    TU_FAILS(wk_conv1d(x, w1, NULL), WK_ERR_SHAPE);
    TU_FAILS(wk_conv2d(x, w1, NULL), WK_ERR_SHAPE);
    /* weight dim 1 must be cin/groups: 2 with groups 2, not with groups 1 */
    wk_conv_params g2 = {.groups = 2};
    wk_tensor *y = TU_OK(wk_conv2d(x, w, &g2));
    int64_t ys[4] = {1, 6, 3, 3};
    tu_assert_shape(y, ys, 4);
    wk_tensor_free(y);
    assert_null(wk_conv2d(x, w, NULL));
    assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
    assert_err_contains("[6, 2, 3, 3]");
    assert_err_contains("[1, 4, 5, 5]");
    wk_clear_error();
    /* channels not divisible by groups */
    wk_conv_params g3 = {.groups = 3};
    TU_FAILS(wk_conv2d(x, w, &g3), WK_ERR_SHAPE);
    wk_conv_params g4 = {.groups = 4};
    TU_FAILS(wk_conv2d(x, w, &g4), WK_ERR_SHAPE); /* cout 6 % 4 */
    /* output too small: 5 + 0 < 3*(3-1)+1 */
    wk_conv_params d3 = {.dilation = 3, .groups = 2};
    assert_null(wk_conv2d(x, w, &d3));
    assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
    assert_err_contains("dilation 3");
    wk_clear_error();
    /* transposed weight dim 0 must be cin */
    TU_FAILS(wk_conv_transpose2d(x, w, NULL), WK_ERR_SHAPE);
    /* transposed output < 1: (1-1)*1 - 2*2 + 3 + 0 = -1 */
    int64_t xt[4] = {1, 6, 1, 1};
    wk_tensor *xt1 = randn(xt, 4, WK_F32);
    wk_conv_params pp = {.padding = 2};
    TU_FAILS(wk_conv_transpose2d(xt1, w, &pp), WK_ERR_SHAPE);
    /* kernel size 0 */
    int64_t wz[4] = {6, 2, 0, 3};
    wk_tensor *w0 = TU_OK(wk_zeros(wz, 4, WK_F32, wk_cpu()));
    TU_FAILS(wk_conv2d(x, w0, &g2), WK_ERR_SHAPE);
    wk_tensor *tensors[] = {x, w, x1, w1, xt1, w0};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

static void test_param_errors(void **state) {
    (void)state;
    int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {2, 2, 3, 3};
    wk_tensor *x = randn(xs, 4, WK_F32), *w = randn(ws, 4, WK_F32);
    wk_conv_params bad[] = {
        {.padding = -1}, {.stride = -1}, {.dilation = -2}, {.groups = -1}, {.output_padding = -1},
        {.stride = (int64_t)1 << 40}, {.padding = INT64_MAX},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        TU_FAILS(wk_conv2d(x, w, &bad[i]), WK_ERR_ARG);
        TU_FAILS(wk_conv_transpose2d(x, w, &bad[i]), WK_ERR_ARG);
    }
    /* output_padding: forward never; transposed < max(stride, dilation) */
    wk_conv_params op1 = {.output_padding = 1};
    TU_FAILS(wk_conv2d(x, w, &op1), WK_ERR_ARG);
    TU_FAILS(wk_conv_transpose2d(x, w, &op1), WK_ERR_ARG);
    assert_null(wk_conv_transpose2d(x, w, &op1));
    assert_err_contains("output_padding 1");
    wk_clear_error();
    wk_conv_params op1s2 = {.output_padding = 1, .stride = 2};
    wk_tensor *y = TU_OK(wk_conv_transpose2d(x, w, &op1s2));
    int64_t ys[4] = {1, 2, 12, 12};
    tu_assert_shape(y, ys, 4);
    wk_tensor_free(y);
    wk_conv_params op1d2 = {.output_padding = 1, .dilation = 2};
    y = TU_OK(wk_conv_transpose2d(x, w, &op1d2));
    wk_tensor_free(y);
    wk_conv_params op2s2 = {.output_padding = 2, .stride = 2};
    TU_FAILS(wk_conv_transpose2d(x, w, &op2s2), WK_ERR_ARG);
    /* NULL params = zeros = defaults */
    wk_conv_params z = {0};
    wk_tensor *a = TU_OK(wk_conv2d(x, w, NULL)), *b = TU_OK(wk_conv2d(x, w, &z));
    assert_true(tu_max_abs_diff(a, b) == 0.0);
    wk_tensor_free(a);
    wk_tensor_free(b);
    wk_tensor_free(x);
    wk_tensor_free(w);
}

static void test_empty(void **state) {
    (void)state;
    /* batch 0 */
    int64_t xs[4] = {0, 2, 5, 5}, ws[4] = {3, 2, 3, 3};
    wk_tensor *x = TU_OK(wk_zeros(xs, 4, WK_F32, wk_cpu())), *w = randn(ws, 4, WK_F32);
    wk_tensor *y = TU_OK(wk_conv2d(x, w, NULL));
    int64_t ys[4] = {0, 3, 3, 3};
    tu_assert_shape(y, ys, 4);
    wk_tensor_free(y);
    /* zero input channels: all-zero output */
    int64_t xc[4] = {2, 0, 4, 4}, wc[4] = {3, 0, 3, 3};
    wk_tensor *x0 = TU_OK(wk_zeros(xc, 4, WK_F64, wk_cpu())), *w0 = TU_OK(wk_zeros(wc, 4, WK_F64, wk_cpu()));
    y = TU_OK(wk_conv2d(x0, w0, NULL));
    int64_t y0s[4] = {2, 3, 2, 2};
    tu_assert_shape(y, y0s, 4);
    double zeros[24] = {0};
    tu_assert_close(y, zeros, 24, 0, 0);
    wk_tensor_free(y);
    /* zero output channels */
    int64_t wo[4] = {0, 2, 3, 3};
    wk_tensor *wz = TU_OK(wk_zeros(wo, 4, WK_F32, wk_cpu()));
    int64_t x1s[4] = {1, 2, 5, 5};
    wk_tensor *x1 = randn(x1s, 4, WK_F32);
    y = TU_OK(wk_conv2d(x1, wz, NULL));
    assert_int_equal(wk_numel(y), 0);
    wk_tensor_free(y);
    wk_tensor *tensors[] = {x, w, x0, w0, wz, x1};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

/* Naive 1-d reference in double (forward or transposed). */
static void ref_conv1d(const double *x, const double *w, double *y, int64_t n, int64_t cin, int64_t l, int64_t cout,
                       int64_t k, int64_t ol, int64_t s, int64_t p, int64_t d, int64_t g, bool tr) {
    int64_t cig = cin / g, cog = cout / g;
    memset(y, 0, sizeof(double) * (size_t)(n * cout * ol));
    for (int64_t b = 0; b < n; b++)
        for (int64_t gi = 0; gi < g; gi++)
            for (int64_t ci = 0; ci < cig; ci++)
                for (int64_t co = 0; co < cog; co++)
                    for (int64_t kk = 0; kk < k; kk++) {
                        int64_t C = gi * cig + ci, O = gi * cog + co;
                        double wv = tr ? w[(C * cog + co) * k + kk] : w[(O * cig + ci) * k + kk];
                        if (!tr) {
                            for (int64_t o = 0; o < ol; o++) {
                                int64_t i = o * s - p + kk * d;
                                if (i >= 0 && i < l) y[(b * cout + O) * ol + o] += wv * x[(b * cin + C) * l + i];
                            }
                        } else {
                            for (int64_t i = 0; i < l; i++) {
                                int64_t o = i * s - p + kk * d;
                                if (o >= 0 && o < ol) y[(b * cout + O) * ol + o] += wv * x[(b * cin + C) * l + i];
                            }
                        }
                    }
}

static void check_vs_ref(wk_tensor *x, wk_tensor *w, const wk_conv_params *p, bool tr) {
    int64_t n = wk_dim(x, 0), cin = wk_dim(x, 1), l = wk_dim(x, 2), k = wk_dim(w, 2);
    int saved = wk_num_threads();
    wk_set_num_threads(1);
    wk_tensor *y1 = TU_OK(tr ? wk_conv_transpose1d(x, w, p) : wk_conv1d(x, w, p));
    wk_set_num_threads(2);
    wk_tensor *y2 = TU_OK(tr ? wk_conv_transpose1d(x, w, p) : wk_conv1d(x, w, p));
    wk_set_num_threads(saved);
    assert_true(tu_max_abs_diff(y1, y2) == 0.0);
    int64_t cout = wk_dim(y1, 1), ol = wk_dim(y1, 2);
    int64_t nx = wk_numel(x), nw = wk_numel(w), ny = wk_numel(y1);
    double *xv = malloc(sizeof(double) * (size_t)nx), *wv = malloc(sizeof(double) * (size_t)nw),
           *yv = malloc(sizeof(double) * (size_t)ny);
    assert_non_null(xv);
    assert_non_null(wv);
    assert_non_null(yv);
    TU_STATUS_OK(wk_to_host_f64(x, xv, (size_t)nx));
    TU_STATUS_OK(wk_to_host_f64(w, wv, (size_t)nw));
    int64_t g = p->groups ? p->groups : 1;
    ref_conv1d(xv, wv, yv, n, cin, l, cout, k, ol, p->stride ? p->stride : 1, p->padding,
               p->dilation ? p->dilation : 1, g, tr);
    int64_t red = tr ? (cin / g) * k : (cin / g) * k;
    tu_assert_close(y1, yv, ny, 1e-5 * sqrt((double)red), 1e-4);
    free(xv);
    free(wv);
    free(yv);
    wk_tensor_free(y1);
    wk_tensor_free(y2);
}

/* Column buffers over the 32 MB cap: the position blocks must join up. */
static void test_blocked_large(void **state) {
    (void)state;
    int64_t xs[3] = {1, 2048, 1000}, ws[3] = {2, 2048, 5};
    wk_tensor *x = randn(xs, 3, WK_F32), *w = randn(ws, 3, WK_F32);
    wk_conv_params p = {.padding = 2, .stride = 1};
    check_vs_ref(x, w, &p, false);
    wk_tensor_free(x);
    wk_tensor_free(w);
    /* transposed: cout_g * k = 10240 rows of columns */
    int64_t xt[3] = {1, 2, 1000}, wt[3] = {2, 2048, 5};
    x = randn(xt, 3, WK_F32);
    w = randn(wt, 3, WK_F32);
    wk_conv_params pt = {.padding = 1, .stride = 2, .output_padding = 1};
    check_vs_ref(x, w, &pt, true);
    wk_tensor_free(x);
    wk_tensor_free(w);
    /* narrowed input, dilation */
    int64_t xb[3] = {1, 1024, 1200}, wb[3] = {2, 1024, 7};
    wk_tensor *xbig = randn(xb, 3, WK_F32), *wbf = randn(wb, 3, WK_F32);
    wk_tensor *xn = TU_OK(wk_narrow(xbig, 2, 100, 1100));
    wk_conv_params pb = {.dilation = 2};
    check_vs_ref(xn, wbf, &pb, false);
    wk_tensor_free(xn);
    wk_tensor_free(xbig);
    wk_tensor_free(wbf);
}

/* Depthwise with many pairs (spread over the pool) and a stride-0 input. */
static void test_depthwise_broadcast(void **state) {
    (void)state;
    int64_t xs[3] = {3, 64, 500}, ws[3] = {64, 1, 3};
    wk_tensor *x = randn(xs, 3, WK_F64), *w = randn(ws, 3, WK_F64);
    wk_conv_params p = {.padding = 1, .groups = 64};
    check_vs_ref(x, w, &p, false);
    int64_t wts[3] = {64, 2, 3};
    wk_tensor *wt = randn(wts, 3, WK_F64);
    wk_conv_params pt = {.padding = 1, .groups = 64, .stride = 2, .output_padding = 1};
    check_vs_ref(x, wt, &pt, true);
    /* broadcast x over the batch and the length */
    int64_t one[3] = {1, 64, 1};
    wk_tensor *x1 = randn(one, 3, WK_F64);
    wk_tensor *xb = TU_OK(wk_broadcast_as(x1, xs, 3));
    check_vs_ref(xb, w, &p, false);
    check_vs_ref(xb, wt, &pt, true);
    wk_tensor *tensors[] = {x, w, wt, x1, xb};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

/* conv1d equals conv2d on a height-1 input; 1x1 conv2d equals matmul. */
static void test_consistency(void **state) {
    (void)state;
    int64_t xs[3] = {2, 6, 11}, ws[3] = {4, 3, 3};
    wk_tensor *x = randn(xs, 3, WK_F64), *w = randn(ws, 3, WK_F64);
    int64_t x4s[4] = {2, 6, 1, 11}, w4s[4] = {4, 3, 1, 3};
    wk_tensor *x4 = TU_OK(wk_reshape(x, x4s, 4)), *w4 = TU_OK(wk_reshape(w, w4s, 4));
    wk_conv_params p = {.padding = 1, .groups = 2, .stride = 2};
    wk_tensor *a = TU_OK(wk_conv1d(x, w, &p));
    int64_t as[3] = {2, 4, 6};
    tu_assert_shape(a, as, 3);
    /* conv2d would pad the height too: compare unpadded */
    wk_conv_params p0 = {.groups = 2, .stride = 1};
    wk_tensor *b = TU_OK(wk_conv1d(x, w, &p0)), *c = TU_OK(wk_conv2d(x4, w4, &p0));
    int64_t flat[3] = {2, 4, 9};
    wk_tensor *c3 = TU_OK(wk_reshape(c, flat, 3));
    assert_true(tu_max_abs_diff(b, c3) < 1e-12);
    wk_tensor *tensors[] = {x, w, x4, w4, a, b, c, c3};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

/* 1x1 stride-1 conv2d is a GEMM on the input as it lies; position blocks
 * (2 threads) and a transposed (non-mergeable) input must agree with matmul. */
static void test_1x1(void **state) {
    (void)state;
    int64_t xs[4] = {2, 16, 30, 31}, ws[4] = {8, 16, 1, 1};
    wk_tensor *x = randn(xs, 4, WK_F32), *w = randn(ws, 4, WK_F32);
    int64_t w2s[2] = {8, 16}, x2s[3] = {2, 16, 930}, y4s[4] = {2, 8, 30, 31};
    wk_tensor *w2 = TU_OK(wk_reshape(w, w2s, 2)), *x3 = TU_OK(wk_reshape(x, x2s, 3));
    wk_tensor *ref3 = TU_OK(wk_broadcast_matmul(w2, x3)), *ref = TU_OK(wk_reshape(ref3, y4s, 4));
    int saved = wk_num_threads();
    for (int nt = 1; nt <= 2; nt++) {
        wk_set_num_threads(nt);
        wk_tensor *y = TU_OK(wk_conv2d(x, w, NULL));
        assert_true(tu_max_abs_diff(y, ref) < 1e-5);
        /* the same values through a transposed view: im2col path */
        wk_tensor *xt = TU_OK(wk_transpose(x, 2, 3)), *xtc = TU_OK(wk_contiguous(xt));
        wk_tensor *xb = TU_OK(wk_transpose(xtc, 2, 3));
        wk_tensor *y2 = TU_OK(wk_conv2d(xb, w, NULL));
        assert_true(tu_max_abs_diff(y2, ref) < 1e-5);
        wk_tensor *tensors[] = {y, xt, xtc, xb, y2};
        for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
    }
    wk_set_num_threads(saved);
    wk_tensor *tensors[] = {x, w, w2, x3, ref3, ref};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_and_dtype),     cmocka_unit_test(test_shape_errors),
        cmocka_unit_test(test_param_errors),       cmocka_unit_test(test_empty),
        cmocka_unit_test(test_blocked_large),      cmocka_unit_test(test_depthwise_broadcast),
        cmocka_unit_test(test_consistency),        cmocka_unit_test(test_1x1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
