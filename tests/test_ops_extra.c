/* The "more ops" section of wick.h: error paths (ranks, dtypes, devices,
 * NULLs, bad arguments), the view / aliasing properties the header
 * promises, and edge cases the oracle (test_oracle_ops_extra.c, numpy /
 * torch over dtypes and layouts) does not express: strided vector columns,
 * writes through views, overlapping src and dst, the fast path of the
 * scale-factor upsampling agreeing bit for bit with the sized call. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wk_tensor *vec(const double *v, int64_t n, wk_dtype dt) { return tu_make(v, &n, 1, dt); }

static wk_tensor *iota(const int64_t *shape, int rank, wk_dtype dt) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    wk_tensor *a = TU_OK(wk_arange(0, (double)n, 1, dt, wk_cpu()));
    wk_tensor *r = TU_OK(wk_reshape(a, shape, rank));
    wk_tensor_free(a);
    return r;
}

static void assert_error_names(const char *op) {
    if (!strstr(wk_last_error(), op)) {
        fprintf(stderr, "error '%s' does not name %s\n", wk_last_error(), op);
        fail();
    }
}

/* ------------------------------------------------------------------ errors */

static void test_null_inputs(void **state) {
    (void)state;
    wk_clear_error();
    int64_t s2[] = {2, 3};
    wk_tensor *x = TU_OK(wk_zeros(s2, 2, WK_F32, wk_cpu()));
    TU_FAILS(wk_round_to(NULL, 1), WK_ERR_ARG);
    TU_FAILS(wk_norm(NULL, 2, NULL, 0, false), WK_ERR_ARG);
    TU_FAILS(wk_dot(NULL, x), WK_ERR_ARG);
    TU_FAILS(wk_dot(x, NULL), WK_ERR_ARG);
    TU_FAILS(wk_mv(NULL, x), WK_ERR_ARG);
    TU_FAILS(wk_tril(NULL, 0), WK_ERR_ARG);
    TU_FAILS(wk_triu(NULL, 0), WK_ERR_ARG);
    TU_FAILS(wk_slice_assign(NULL, NULL, NULL, NULL, 0, x), WK_ERR_ARG);
    TU_FAILS(wk_upsample_nearest1d_scale(NULL, 2), WK_ERR_ARG);
    TU_FAILS(wk_upsample_nearest2d_scale(NULL, 2, 2), WK_ERR_ARG);
    TU_FAILS(wk_upsample_bilinear2d_scale(NULL, 2, 2, false), WK_ERR_ARG);
    assert_int_equal(wk_slice_assign_(NULL, NULL, NULL, NULL, 0, x), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_slice_assign_(x, NULL, NULL, NULL, 0, NULL), WK_ERR_ARG);
    wk_clear_error();
    /* the first error is kept through a chain */
    wk_tensor *bad = wk_reshape(x, (int64_t[]){7}, 1);
    assert_null(bad);
    wk_status first = wk_last_status();
    TU_FAILS(wk_norm(wk_tril(bad, 0), 2, NULL, 0, false), first);
    /* meshgrid: NULL array, NULL element, NULL out; outputs all NULL on failure */
    wk_tensor *out[3] = {(wk_tensor *)1, (wk_tensor *)1, (wk_tensor *)1};
    wk_tensor *v = TU_OK(vec((double[]){1, 2}, 2, WK_F32));
    wk_tensor *ts[3] = {v, NULL, v};
    assert_int_equal(wk_meshgrid(ts, 3, WK_MESHGRID_IJ, out), WK_ERR_ARG);
    for (int i = 0; i < 3; i++) assert_null(out[i]);
    wk_clear_error();
    assert_int_equal(wk_meshgrid(NULL, 1, WK_MESHGRID_IJ, out), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_meshgrid(ts, 1, WK_MESHGRID_IJ, NULL), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_meshgrid(ts, 0, WK_MESHGRID_IJ, out), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_meshgrid(ts, WK_MAX_RANK + 1, WK_MESHGRID_IJ, out), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_meshgrid(ts, 1, (wk_meshgrid_indexing)7, out), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor_free(v);
    wk_tensor_free(x);
}

static void test_dtype_and_shape_errors(void **state) {
    (void)state;
    wk_clear_error();
    wk_tensor *f = TU_OK(vec((double[]){1, 2, 3}, 3, WK_F32));
    wk_tensor *d = TU_OK(vec((double[]){1, 2, 3}, 3, WK_F64));
    wk_tensor *i = TU_OK(vec((double[]){1, 2, 3}, 3, WK_I32));
    int64_t s23[] = {2, 3};
    wk_tensor *m = TU_OK(wk_ones(s23, 2, WK_F32, wk_cpu()));
    TU_FAILS(wk_dot(f, d), WK_ERR_DTYPE);
    TU_FAILS(wk_dot(i, i), WK_ERR_DTYPE);
    assert_null(wk_mv(m, d));
    assert_error_names("wk_mv");
    wk_clear_error();
    TU_FAILS(wk_mv(m, m), WK_ERR_SHAPE);
    TU_FAILS(wk_mv(f, f), WK_ERR_SHAPE);
    assert_null(wk_dot(m, f));
    assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
    assert_error_names("wk_dot");
    wk_clear_error();
    TU_FAILS(wk_round_to(i, 2), WK_ERR_DTYPE);
    TU_FAILS(wk_norm(i, 2, NULL, 0, false), WK_ERR_DTYPE);
    TU_FAILS(wk_norm(f, NAN, NULL, 0, false), WK_ERR_ARG);
    TU_FAILS(wk_norm(f, 2, NULL, 1, false), WK_ERR_ARG);
    TU_FAILS(wk_norm(f, 2, (int[]){0, 0}, 2, false), WK_ERR_ARG);
    TU_FAILS(wk_norm(f, 2, (int[]){1}, 1, false), WK_ERR_INDEX);
    TU_FAILS(wk_norm(f, 2, (int[]){0}, -1, false), WK_ERR_ARG);
    TU_FAILS(wk_tril(f, 0), WK_ERR_SHAPE);
    assert_null(wk_triu(f, 0));
    assert_error_names("wk_triu");
    wk_clear_error();
    /* meshgrid: dtype mismatch and a rank-2 input */
    wk_tensor *out[2];
    assert_int_equal(wk_meshgrid((wk_tensor *[]){f, d}, 2, WK_MESHGRID_IJ, out), WK_ERR_DTYPE);
    assert_null(out[0]);
    assert_null(out[1]);
    wk_clear_error();
    assert_int_equal(wk_meshgrid((wk_tensor *[]){f, m}, 2, WK_MESHGRID_XY, out), WK_ERR_SHAPE);
    assert_error_names("wk_meshgrid");
    wk_clear_error();
    /* slice assignment: dtype mismatch, src not broadcastable, bad ranges */
    wk_tensor *md = TU_OK(wk_ones(s23, 2, WK_F64, wk_cpu()));
    int64_t st[] = {0, 0}, en[] = {2, 3};
    TU_FAILS(wk_slice_assign(m, st, en, NULL, 2, md), WK_ERR_DTYPE);
    TU_FAILS(wk_slice_assign(m, st, (int64_t[]){2, 2}, NULL, 2, f), WK_ERR_SHAPE);
    TU_FAILS(wk_slice_assign(m, st, (int64_t[]){2, 4}, NULL, 2, f), WK_ERR_INDEX);
    TU_FAILS(wk_slice_assign(m, st, en, (int64_t[]){1, 0}, 2, f), WK_ERR_ARG);
    TU_FAILS(wk_slice_assign(m, NULL, en, NULL, 2, f), WK_ERR_ARG);
    TU_FAILS(wk_slice_assign(m, st, en, NULL, -1, f), WK_ERR_ARG);
    TU_FAILS(wk_slice_assign(m, st, en, NULL, 3, f), WK_ERR_ARG);
    assert_int_equal(wk_slice_assign_(m, (int64_t[]){INT64_MIN, 0}, en, NULL, 2, f), WK_ERR_INDEX);
    assert_error_names("wk_slice_assign_");
    wk_clear_error();
    /* failed in-place calls leave dst untouched */
    double got[6];
    TU_STATUS_OK(wk_to_host_f64(m, got, 6));
    for (int k = 0; k < 6; k++) assert_true(got[k] == 1.0);
    /* upsampling: ranks, dtypes, scales */
    int64_t s4[] = {1, 1, 2, 2};
    wk_tensor *x4 = TU_OK(wk_ones(s4, 4, WK_F32, wk_cpu()));
    wk_tensor *x4i = TU_OK(wk_ones(s4, 4, WK_U8, wk_cpu()));
    TU_FAILS(wk_upsample_nearest1d_scale(x4, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_upsample_nearest2d_scale(m, 2, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_upsample_bilinear2d_scale(x4i, 1.5, 1.5, false), WK_ERR_DTYPE);
    TU_FAILS(wk_upsample_bilinear2d_scale(x4, 1.5, 0, false), WK_ERR_ARG);
    TU_FAILS(wk_upsample_nearest2d_scale(x4, 0.4, 1), WK_ERR_SHAPE);
    TU_FAILS(wk_upsample_nearest2d_scale(x4, 1e300, 1), WK_ERR_SHAPE);
    assert_null(wk_upsample_nearest2d_scale(x4, -INFINITY, 1));
    assert_error_names("wk_upsample_nearest2d_scale");
    wk_clear_error();
    wk_tensor *tmp[] = {f, d, i, m, md, x4, x4i};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

static void test_devices(void **state) {
    (void)state;
    if (wk_cuda_device_count() < 1) {
        print_message("no CUDA device: device-mismatch checks skipped\n");
        skip();
    }
    wk_device *g = wk_cuda(0);
    assert_non_null(g);
    wk_tensor *a = TU_OK(vec((double[]){1, 2, 3}, 3, WK_F32));
    wk_tensor *b = TU_OK(wk_to_device(a, g));
    int64_t s23[] = {2, 3};
    wk_tensor *m = TU_OK(wk_ones(s23, 2, WK_F32, g));
    TU_FAILS(wk_dot(a, b), WK_ERR_DEVICE);
    TU_FAILS(wk_mv(m, a), WK_ERR_DEVICE);
    TU_FAILS(wk_slice_assign(m, (int64_t[]){0}, (int64_t[]){1}, NULL, 1, a), WK_ERR_DEVICE);
    wk_tensor *out[2];
    assert_int_equal(wk_meshgrid((wk_tensor *[]){a, b}, 2, WK_MESHGRID_IJ, out), WK_ERR_DEVICE);
    wk_clear_error();
    /* and the ops themselves on the GPU agree with the CPU */
    wk_tensor *r = TU_OK(wk_mv(m, b));
    double v[2];
    TU_STATUS_OK(wk_to_host_f64(r, v, 2));
    assert_true(v[0] == 6 && v[1] == 6);
    wk_tensor *tmp[] = {a, b, m, r};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

/* ---------------------------------------------------------- products/norms */

static void test_dot_mv_strided(void **state) {
    (void)state;
    wk_clear_error();
    /* a (4, 5) matrix; its column 2 is a stride-5 vector */
    int64_t s45[] = {4, 5};
    wk_tensor *m = iota(s45, 2, WK_F32);
    wk_tensor *col = TU_OK(wk_select(m, 1, 2)); /* 2, 7, 12, 17 */
    assert_int_equal(wk_strides(col)[0], 5);
    wk_tensor *row = TU_OK(wk_select(m, 0, 1)); /* 5..9 */
    wk_tensor *d = TU_OK(wk_dot(col, col));
    assert_int_equal(wk_rank(d), 0);
    double v;
    TU_STATUS_OK(wk_item(d, &v));
    assert_true(v == 4 + 49 + 144 + 289);
    /* m^T (5, 4) as a transposed view times the strided column */
    wk_tensor *mt = TU_OK(wk_t(m));
    wk_tensor *r = TU_OK(wk_mv(mt, col));
    tu_assert_shape(r, (int64_t[]){5}, 1);
    double want[5], got[5];
    for (int j = 0; j < 5; j++) {
        want[j] = 0;
        for (int i = 0; i < 4; i++) want[j] += (double)(i * 5 + j) * (double)(i * 5 + 2);
    }
    TU_STATUS_OK(wk_to_host_f64(r, got, 5));
    for (int j = 0; j < 5; j++) assert_true(got[j] == want[j]);
    /* mv of a (4, 5) by a row: one dot per row */
    wk_tensor *r2 = TU_OK(wk_mv(m, row));
    double g2[4];
    TU_STATUS_OK(wk_to_host_f64(r2, g2, 4));
    for (int i = 0; i < 4; i++) {
        double w = 0;
        for (int j = 0; j < 5; j++) w += (double)(i * 5 + j) * (double)(5 + j);
        assert_true(g2[i] == w);
    }
    /* empty: dot of (0) is 0, mv (3, 0) gives zeros, mv (0, 3) is empty */
    wk_tensor *e = TU_OK(wk_zeros((int64_t[]){0}, 1, WK_F64, wk_cpu()));
    wk_tensor *de = TU_OK(wk_dot(e, e));
    TU_STATUS_OK(wk_item(de, &v));
    assert_true(v == 0);
    wk_tensor *m30 = TU_OK(wk_ones((int64_t[]){3, 0}, 2, WK_F64, wk_cpu()));
    wk_tensor *z = TU_OK(wk_mv(m30, e));
    tu_assert_shape(z, (int64_t[]){3}, 1);
    tu_assert_close(z, (double[]){0, 0, 0}, 3, 0, 0);
    /* bf16 / f16 accumulate in f32: 4096 ones dot 4096 ones = 4096 exactly */
    for (int k = 0; k < 2; k++) {
        wk_tensor *o = TU_OK(wk_ones((int64_t[]){4096}, 1, k ? WK_BF16 : WK_F16, wk_cpu()));
        wk_tensor *dd = TU_OK(wk_dot(o, o));
        TU_STATUS_OK(wk_item(dd, &v));
        assert_true(v == 4096);
        wk_tensor_free(dd);
        wk_tensor_free(o);
    }
    wk_tensor *tmp[] = {m, col, row, d, mt, r, r2, e, de, m30, z};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

static void test_norm_values(void **state) {
    (void)state;
    wk_clear_error();
    wk_tensor *x = TU_OK(tu_make((double[]){3, -4, 0, 0, 0, -12}, (int64_t[]){2, 3}, 2, WK_F32));
    double v[2];
    struct {
        double p;
        double want[2];
    } cases[] = {{2, {5, 12}}, {1, {7, 12}}, {INFINITY, {4, 12}}, {-INFINITY, {0, 0}}, {0, {2, 1}}, {-1, {0, 0}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        wk_tensor *n = TU_OK(wk_norm(x, cases[c].p, (int[]){-1}, 1, false));
        tu_assert_shape(n, (int64_t[]){2}, 1);
        TU_STATUS_OK(wk_to_host_f64(n, v, 2));
        if (fabs(v[0] - cases[c].want[0]) > 1e-6 || fabs(v[1] - cases[c].want[1]) > 1e-6) {
            fprintf(stderr, "p=%g: got %g %g\n", cases[c].p, v[0], v[1]);
            fail();
        }
        wk_tensor_free(n);
    }
    /* all dims, keepdim keeps rank 2 */
    wk_tensor *n = TU_OK(wk_norm(x, 2, NULL, 0, true));
    tu_assert_shape(n, (int64_t[]){1, 1}, 2);
    tu_assert_close(n, (double[]){13}, 1, 1e-6, 0);
    wk_tensor_free(n);
    /* f16: 300^2 overflows f16 but the norm is computed in f32 */
    wk_tensor *h = TU_OK(vec((double[]){300, 400}, 2, WK_F16));
    n = TU_OK(wk_norm(h, 2, NULL, 0, false));
    assert_int_equal(wk_tensor_dtype(n), WK_F16);
    tu_assert_close(n, (double[]){500}, 1, 0, 0);
    wk_tensor_free(n);
    wk_tensor_free(h);
    wk_tensor_free(x);
}

static void test_round_to_values(void **state) {
    (void)state;
    wk_clear_error();
    wk_tensor *x = TU_OK(vec((double[]){1234.5678, -2.5, 0.125, -0.0049, 15.0, -150.0}, 6, WK_F64));
    double got[6];
    wk_tensor *r = TU_OK(wk_round_to(x, 2));
    TU_STATUS_OK(wk_to_host_f64(r, got, 6));
    double w2[] = {1234.57, -2.5, 0.13, -0.0, 15.0, -150.0};
    for (int i = 0; i < 6; i++) assert_true(fabs(got[i] - w2[i]) < 1e-12);
    wk_tensor_free(r);
    r = TU_OK(wk_round_to(x, -1));
    TU_STATUS_OK(wk_to_host_f64(r, got, 6));
    double wm1[] = {1230, -0.0, 0, -0.0, 20, -150}; /* 1.5 -> 2 (half away), -15 -> -15 */
    for (int i = 0; i < 6; i++) assert_true(fabs(got[i] - wm1[i]) < 1e-9);
    wk_tensor_free(r);
    r = TU_OK(wk_round_to(x, 0));
    TU_STATUS_OK(wk_to_host_f64(r, got, 6));
    assert_true(got[1] == -3.0); /* half away from zero, not to even */
    wk_tensor_free(r);
    wk_tensor_free(x);
}

/* -------------------------------------------------------------- triangles */

static void test_tril_triu_views(void **state) {
    (void)state;
    wk_clear_error();
    /* batched, transposed, with a broadcast batch: (2, 3, 4) from (1, 4, 3) */
    int64_t sb[] = {1, 4, 3};
    wk_tensor *b = iota(sb, 3, WK_I32);
    wk_tensor *bt = TU_OK(wk_transpose(b, 1, 2));
    wk_tensor *x = TU_OK(wk_broadcast_as(bt, (int64_t[]){2, 3, 4}, 3));
    wk_tensor *lo = TU_OK(wk_tril(x, 1));
    wk_tensor *up = TU_OK(wk_triu(x, 2));
    assert_true(wk_is_contiguous(lo));
    assert_false(wk_shares_storage(lo, x));
    int32_t gl[24], gu[24];
    TU_STATUS_OK(wk_to_host(lo, gl, sizeof gl));
    TU_STATUS_OK(wk_to_host(up, gu, sizeof gu));
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                int32_t v = j * 3 + i; /* x[n][i][j] = b[0][j][i] */
                assert_int_equal(gl[n * 12 + i * 4 + j], j - i <= 1 ? v : 0);
                assert_int_equal(gu[n * 12 + i * 4 + j], j - i >= 2 ? v : 0);
            }
    /* NaN above the diagonal becomes 0, not NaN (a select, not a product) */
    wk_tensor *nanm = TU_OK(wk_full((int64_t[]){2, 2}, 2, NAN, WK_F32, wk_cpu()));
    wk_tensor *ln = TU_OK(wk_tril(nanm, 0));
    double g[4];
    TU_STATUS_OK(wk_to_host_f64(ln, g, 4));
    assert_true(isnan(g[0]) && g[1] == 0 && isnan(g[2]) && isnan(g[3]));
    wk_tensor *tmp[] = {b, bt, x, lo, up, nanm, ln};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

/* ---------------------------------------------------------------- meshgrid */

static void test_meshgrid_views(void **state) {
    (void)state;
    wk_clear_error();
    wk_tensor *a = TU_OK(vec((double[]){1, 2, 3}, 3, WK_F32));
    int64_t s25[] = {2, 5};
    wk_tensor *m = iota(s25, 2, WK_F32);
    wk_tensor *col = TU_OK(wk_select(m, 1, 3)); /* 3, 8: stride 5, offset 3 */
    wk_tensor *out[2];
    TU_STATUS_OK(wk_meshgrid((wk_tensor *[]){a, col}, 2, WK_MESHGRID_XY, out));
    /* xy: shape (len(col), len(a)) = (2, 3); views with stride 0 */
    for (int i = 0; i < 2; i++) tu_assert_shape(out[i], (int64_t[]){2, 3}, 2);
    assert_true(wk_shares_storage(out[0], a));
    assert_true(wk_shares_storage(out[1], m));
    assert_int_equal(wk_strides(out[0])[0], 0);
    assert_int_equal(wk_strides(out[0])[1], 1);
    assert_int_equal(wk_strides(out[1])[0], 5);
    assert_int_equal(wk_strides(out[1])[1], 0);
    tu_assert_close(out[0], (double[]){1, 2, 3, 1, 2, 3}, 6, 0, 0);
    tu_assert_close(out[1], (double[]){3, 3, 3, 8, 8, 8}, 6, 0, 0);
    /* a view: a later write into the input shows through */
    TU_STATUS_OK(wk_fill_(a, 7));
    tu_assert_close(out[0], (double[]){7, 7, 7, 7, 7, 7}, 6, 0, 0);
    /* wk_contiguous gives an independent copy for writing */
    wk_tensor *c = TU_OK(wk_contiguous(out[1]));
    assert_false(wk_shares_storage(c, m));
    wk_tensor *one[1];
    TU_STATUS_OK(wk_meshgrid((wk_tensor *[]){a}, 1, WK_MESHGRID_XY, one));
    tu_assert_shape(one[0], (int64_t[]){3}, 1);
    wk_tensor *tmp[] = {a, m, col, out[0], out[1], c, one[0]};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

/* ------------------------------------------------------------ slice assign */

static void test_slice_assign_views(void **state) {
    (void)state;
    wk_clear_error();
    int64_t s45[] = {4, 5};
    wk_tensor *t = TU_OK(wk_zeros(s45, 2, WK_F32, wk_cpu()));
    wk_tensor *src = TU_OK(vec((double[]){1, 2}, 2, WK_F32));
    /* the copying form leaves t alone */
    wk_tensor *r = TU_OK(wk_slice_assign(t, (int64_t[]){0, 1}, (int64_t[]){4, 5}, (int64_t[]){2, 2}, 2, src));
    assert_false(wk_shares_storage(r, t));
    double g[20];
    TU_STATUS_OK(wk_to_host_f64(t, g, 20));
    for (int i = 0; i < 20; i++) assert_true(g[i] == 0);
    double want[20] = {0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0};
    tu_assert_close(r, want, 20, 0, 0);
    /* the in-place form through a transposed view: every view of the storage sees it */
    wk_tensor *tt = TU_OK(wk_t(t)); /* (5, 4) */
    wk_tensor *s0 = TU_OK(wk_full(NULL, 0, 9, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_slice_assign_(tt, (int64_t[]){-2}, (int64_t[]){5}, NULL, 1, s0)); /* rows 3, 4 of t^T */
    TU_STATUS_OK(wk_to_host_f64(t, g, 20));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) assert_true(g[i * 5 + j] == (j >= 3 ? 9 : 0));
    /* src a view of dst that overlaps the slice: read before written */
    wk_tensor *a = TU_OK(wk_arange(0, 6, 1, WK_F64, wk_cpu()));
    wk_tensor *head = TU_OK(wk_narrow(a, 0, 0, 4));
    TU_STATUS_OK(wk_slice_assign_(a, (int64_t[]){2}, (int64_t[]){6}, NULL, 1, head));
    tu_assert_close(a, (double[]){0, 1, 0, 1, 2, 3}, 6, 0, 0);
    /* one-element and empty slices; a huge step takes one element */
    wk_tensor *s9 = TU_OK(wk_full(NULL, 0, 9, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_slice_assign_(a, (int64_t[]){5}, (int64_t[]){6}, (int64_t[]){INT64_MAX}, 1, s9));
    TU_STATUS_OK(wk_slice_assign_(a, (int64_t[]){6}, (int64_t[]){6}, NULL, 1, s9)); /* empty: a no-op */
    wk_tensor *two = TU_OK(vec((double[]){1, 2}, 2, WK_F64));
    /* numpy: shape (2,) does not broadcast into an empty slice */
    assert_int_equal(wk_slice_assign_(a, (int64_t[]){6}, (int64_t[]){6}, NULL, 1, two), WK_ERR_SHAPE);
    wk_clear_error();
    wk_tensor_free(two);
    tu_assert_close(a, (double[]){0, 1, 0, 1, 2, 9}, 6, 0, 0);
    wk_tensor *tmp[] = {t, src, r, tt, s0, a, head, s9};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

/* ---------------------------------------------------------------- upsample */

static void test_upsample_scale_paths(void **state) {
    (void)state;
    wk_clear_error();
    int64_t s[] = {2, 3, 5, 7};
    wk_tensor *x = TU_OK(tu_values(s, 4, WK_F32, 1.0, 0.25));
    /* scale 2 / 0.5 and align_corners: the backend path, bit-identical to the sized call */
    wk_tensor *a = TU_OK(wk_upsample_nearest2d_scale(x, 2.0, 3.0));
    wk_tensor *b = TU_OK(wk_upsample_nearest2d(x, 10, 21));
    assert_true(tu_max_abs_diff(a, b) == 0);
    wk_tensor_free(a);
    wk_tensor_free(b);
    a = TU_OK(wk_upsample_bilinear2d_scale(x, 2.0, 3.0, false));
    b = TU_OK(wk_upsample_bilinear2d(x, 10, 21, false));
    assert_true(tu_max_abs_diff(a, b) == 0);
    wk_tensor_free(a);
    wk_tensor_free(b);
    /* 7 * 0.5 = 3.5 -> 3: the ratio is 2, not 7/3, so the results differ */
    a = TU_OK(wk_upsample_bilinear2d_scale(x, 1.0, 0.5, false));
    b = TU_OK(wk_upsample_bilinear2d(x, 5, 3, false));
    assert_true(tu_max_abs_diff(a, b) > 1e-3);
    wk_tensor_free(a);
    wk_tensor_free(b);
    a = TU_OK(wk_upsample_bilinear2d_scale(x, 1.5, 1.7, true));
    b = TU_OK(wk_upsample_bilinear2d(x, 7, 11, true));
    assert_true(tu_max_abs_diff(a, b) == 0);
    wk_tensor_free(a);
    wk_tensor_free(b);
    /* scale 1.7 on 5 -> 8: the mapping uses 1/1.7, not 5/8 */
    wk_tensor *l = TU_OK(tu_make((double[]){0, 1, 2, 3, 4}, (int64_t[]){1, 1, 5}, 3, WK_I64));
    wk_tensor *u = TU_OK(wk_upsample_nearest1d_scale(l, 1.7));
    tu_assert_close(u, (double[]){0, 0, 1, 1, 2, 2, 3, 4}, 8, 0, 0);
    wk_tensor *us = TU_OK(wk_upsample_nearest1d(l, 8));
    tu_assert_close(us, (double[]){0, 0, 1, 1, 2, 3, 3, 4}, 8, 0, 0);
    wk_tensor_free(u);
    wk_tensor_free(us);
    /* 3 -> 6 with scale 2.3: floor(i / 2.3), not the 2x shortcut i / 2 */
    wk_tensor *l3 = TU_OK(wk_narrow(l, 2, 1, 3)); /* 1, 2, 3 (offset view) */
    u = TU_OK(wk_upsample_nearest1d_scale(l3, 2.3));
    tu_assert_close(u, (double[]){1, 1, 1, 2, 2, 3}, 6, 0, 0);
    wk_tensor_free(u);
    /* a result never aliases the input, even when the mapping is the identity */
    u = TU_OK(wk_upsample_nearest1d_scale(l, 1.0));
    assert_false(wk_shares_storage(u, l));
    tu_assert_close(u, (double[]){0, 1, 2, 3, 4}, 5, 0, 0);
    wk_tensor_free(u);
    /* composite bilinear of a bf16 input rounds once from f32 */
    wk_tensor *xb = TU_OK(wk_to_dtype(x, WK_BF16));
    a = TU_OK(wk_upsample_bilinear2d_scale(xb, 1.5, 1.7, false));
    assert_int_equal(wk_tensor_dtype(a), WK_BF16);
    wk_tensor *xf = TU_OK(wk_to_dtype(xb, WK_F32));
    b = TU_OK(wk_upsample_bilinear2d_scale(xf, 1.5, 1.7, false));
    wk_tensor *bb = TU_OK(wk_to_dtype(b, WK_BF16));
    assert_true(tu_max_abs_diff(a, bb) == 0);
    wk_tensor *tmp[] = {x, l, l3, xb, a, xf, b, bb};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_inputs),       cmocka_unit_test(test_dtype_and_shape_errors),
        cmocka_unit_test(test_devices),           cmocka_unit_test(test_dot_mv_strided),
        cmocka_unit_test(test_norm_values),       cmocka_unit_test(test_round_to_values),
        cmocka_unit_test(test_tril_triu_views),   cmocka_unit_test(test_meshgrid_views),
        cmocka_unit_test(test_slice_assign_views), cmocka_unit_test(test_upsample_scale_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
