#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- GPU tests: skip without a device, compare with the CPU backend ---- */

wk_device *tu_cuda_or_skip(void) {
    wk_clear_error();
    /* dry run of the GPU tests' own logic on a machine without a GPU: the
     * "device" is the CPU, so every comparison is CPU against CPU */
    const char *dry = getenv("WICK_TEST_GPU_AS_CPU");
    if (dry && dry[0] == '1') return wk_cpu();
    wk_device *d = wk_cuda(0);
    if (!d) {
        wk_status st = wk_last_status();
        assert_true(st == WK_ERR_DEVICE || st == WK_ERR_NOT_COMPILED);
        printf("skipped (no CUDA device): %s\n", wk_last_error());
        fflush(stdout);
        wk_clear_error();
        skip();
    }
    return d;
}

/* CPU tensor of a shape with values from a formula (varied signs, fractions). */
wk_tensor *tu_values(const int64_t *shape, int rank, wk_dtype dt, double scale, double shift) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) v[i] = shift + scale * sin((double)i * 0.731 + 0.2) * (1.0 + (double)(i % 7) / 3.0);
    wk_tensor *t = tu_make(v, shape, rank, dt);
    free(v);
    return t;
}

wk_tensor *tu_to_device(const wk_tensor *t, wk_device *g) {
    wk_tensor *r = wk_to_device(t, g);
    if (!r) fprintf(stderr, "to_gpu: %s\n", wk_last_error());
    assert_non_null(r);
    assert_true(wk_same_device(wk_tensor_device(r), g));
    return r;
}

/* Assert a GPU result equals a CPU reference within atol + rtol*|ref| (NaNs
 * match NaNs); moves the GPU result to the CPU first. */
void tu_assert_matches(const char *what, const wk_tensor *gpu, const wk_tensor *ref, double atol, double rtol) {
    assert_non_null(gpu);
    assert_non_null(ref);
    assert_int_equal(wk_rank(gpu), wk_rank(ref));
    for (int i = 0; i < wk_rank(ref); i++) assert_int_equal(wk_dim(gpu, i), wk_dim(ref, i));
    assert_int_equal(wk_tensor_dtype(gpu), wk_tensor_dtype(ref));
    wk_tensor *back = wk_to_device(gpu, wk_cpu());
    if (!back) fprintf(stderr, "%s: readback: %s\n", what, wk_last_error());
    assert_non_null(back);
    int64_t n = wk_numel(ref);
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1)), *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_true(x && y);
    TU_STATUS_OK(wk_to_host_f64(back, x, (size_t)n));
    TU_STATUS_OK(wk_to_host_f64(ref, y, (size_t)n));
    for (int64_t i = 0; i < n; i++) {
        bool ok = (isnan(x[i]) && isnan(y[i])) || x[i] == y[i] || fabs(x[i] - y[i]) <= atol + rtol * fabs(y[i]);
        if (!ok) {
            fprintf(stderr, "%s (%s): element %lld: cuda %.17g, cpu %.17g\n", what,
                    wk_dtype_name(wk_tensor_dtype(ref)), (long long)i, x[i], y[i]);
            free(x);
            free(y);
            fail();
        }
    }
    free(x);
    free(y);
    wk_tensor_free(back);
}

double tu_tol(wk_dtype dt) {
    switch (dt) {
    case WK_F64: return 1e-12;
    case WK_F32: return 2e-6;
    case WK_F16: return 2e-3;
    case WK_BF16: return 1.6e-2;
    case WK_F8E4M3: return 1.3e-1;
    default: return 0.0;
    }
}

int64_t tu_opnd_count(int kind, int64_t m, int64_t n) {
    return kind == TU_ROW ? n : kind == TU_COL ? m : kind == TU_SCALAR ? 1 : m * n;
}

void tu_opnd_make(tu_opnd *o, int kind, int64_t m, int64_t n, wk_dtype dt, void (*fill)(void *, int64_t, wk_dtype)) {
    o->kind = kind;
    int64_t cnt = tu_opnd_count(kind, m, n);
    size_t es = wk_dtype_size(dt);
    o->host = malloc((size_t)cnt * es);
    assert_non_null(o->host);
    fill(o->host, cnt, dt);
    int64_t shape[2] = {m, n};
    int rank = 2;
    if (kind == TU_ROW) { shape[0] = n; rank = 1; }
    if (kind == TU_COL) shape[1] = 1;
    if (kind == TU_SCALAR) rank = 0;
    if (kind == TU_TRANSPOSED) { shape[0] = n; shape[1] = m; }
    wk_tensor *s = TU_OK(wk_from_host(o->host, (size_t)cnt * es, shape, rank, dt, wk_cpu()));
    if (kind == TU_TRANSPOSED) {
        o->t = TU_OK(wk_t(s));
        wk_tensor_free(s);
    } else
        o->t = s;
}

int64_t tu_opnd_at(const tu_opnd *o, int64_t i, int64_t j, int64_t m, int64_t n) {
    switch (o->kind) {
    case TU_ROW: return j;
    case TU_COL: return i;
    case TU_SCALAR: return 0;
    case TU_TRANSPOSED: return j * m + i;
    default: return i * n + j;
    }
}

void tu_opnd_free(tu_opnd *o) {
    free(o->host);
    wk_tensor_free(o->t);
}
