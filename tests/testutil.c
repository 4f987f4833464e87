#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

wk_tensor *tu_ok_(wk_tensor *t, const char *expr, const char *file, int line) {
    if (!t) {
        fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, expr, wk_last_error());
        _fail(file, line);
    }
    return t;
}

void tu_status_ok_(wk_status s, const char *expr, const char *file, int line) {
    if (s != WK_OK) {
        fprintf(stderr, "%s:%d: %s returned %s: %s\n", file, line, expr, wk_status_name(s), wk_last_error());
        _fail(file, line);
    }
}

void tu_fails_(wk_tensor *t, wk_status st, const char *expr, const char *file, int line) {
    if (t) {
        fprintf(stderr, "%s:%d: %s succeeded, expected %s\n", file, line, expr, wk_status_name(st));
        wk_tensor_free(t);
        _fail(file, line);
    }
    if (wk_last_status() != st) {
        fprintf(stderr, "%s:%d: %s failed with %s (%s), expected %s\n", file, line, expr,
                wk_status_name(wk_last_status()), wk_last_error(), wk_status_name(st));
        _fail(file, line);
    }
    wk_clear_error();
}

wk_tensor *tu_f32(const float *v, const int64_t *shape, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    wk_tensor *t = wk_from_host(v, (size_t)n * sizeof(float), shape, rank, WK_F32, wk_cpu());
    return TU_OK(t);
}

wk_tensor *tu_make(const double *v, const int64_t *shape, int rank, wk_dtype dt) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    wk_tensor *t64 = TU_OK(wk_from_host(v, (size_t)n * sizeof(double), shape, rank, WK_F64, wk_cpu()));
    wk_tensor *t = TU_OK(wk_to_dtype(t64, dt));
    wk_tensor_free(t64);
    return t;
}

void tu_assert_shape(const wk_tensor *t, const int64_t *shape, int rank) {
    assert_non_null(t);
    assert_int_equal(wk_rank(t), rank);
    for (int i = 0; i < rank; i++) assert_int_equal(wk_shape(t)[i], shape[i]);
}

void tu_assert_close(const wk_tensor *t, const double *expected, int64_t n, double atol, double rtol) {
    assert_non_null(t);
    assert_int_equal(wk_numel(t), n);
    double *got = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(got);
    tu_status_ok_(wk_to_host_f64(t, got, (size_t)n), "wk_to_host_f64", __FILE__, __LINE__);
    for (int64_t i = 0; i < n; i++) {
        double e = expected[i], g = got[i];
        bool ok = (isnan(e) && isnan(g)) || (isinf(e) && g == e) || fabs(g - e) <= atol + rtol * fabs(e);
        if (!ok) {
            fprintf(stderr, "element %lld: got %.9g expected %.9g\n", (long long)i, g, e);
            free(got);
            fail();
        }
    }
    free(got);
}

double tu_max_abs_diff(const wk_tensor *a, const wk_tensor *b) {
    int64_t n = wk_numel(a);
    assert_int_equal(n, wk_numel(b));
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_true(x && y);
    assert_int_equal(wk_to_host_f64(a, x, (size_t)n), WK_OK);
    assert_int_equal(wk_to_host_f64(b, y, (size_t)n), WK_OK);
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]);
        if (d > m || isnan(d)) m = d;
    }
    free(x);
    free(y);
    return m;
}

wk_tensor *tu_matrix_operand(int64_t batch, int64_t rows, int64_t cols, int variant, wk_dtype dt,
                             double (*rnd)(void)) {
    int64_t s[3] = {batch, variant == 1 ? cols : rows, variant == 1 ? rows : cols + (variant == 2 ? 7 : 0)};
    int64_t n = s[0] * s[1] * s[2];
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = rnd();
    wk_tensor *t = tu_make(v, s, 3, dt), *r;
    free(v);
    if (variant == 1) r = wk_transpose(t, 1, 2);
    else if (variant == 2) r = wk_narrow(t, 2, 3, cols);
    else r = wk_tensor_retain(t);
    wk_tensor_free(t);
    return TU_OK(r);
}
