/* Scans and order: error paths, edge cases, the tie rules, and large inputs
 * checked against naive references with 1 and 2 threads (the oracle suite,
 * test_oracle_scan.c, covers dtypes and layouts against numpy/torch). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wk_tensor *vec(const double *v, int64_t n, wk_dtype dt) { return tu_make(v, &n, 1, dt); }

static void read_i64(const wk_tensor *t, int64_t *out, int64_t n) {
    assert_int_equal(wk_tensor_dtype(t), WK_I64);
    TU_STATUS_OK(wk_to_host(t, out, (size_t)n * sizeof(int64_t)));
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void **state) {
    (void)state;
    wk_clear_error();
    int64_t shape[] = {2, 3};
    wk_tensor *x = TU_OK(wk_zeros(shape, 2, WK_F32, wk_cpu()));
    wk_tensor *xi = TU_OK(wk_zeros(shape, 2, WK_I32, wk_cpu()));
    wk_tensor *v = (wk_tensor *)1, *ix = (wk_tensor *)1;

    TU_FAILS(wk_cumsum(x, 2), WK_ERR_INDEX);
    TU_FAILS(wk_cumprod(x, -3), WK_ERR_INDEX);
    TU_FAILS(wk_argsort(x, 5, false), WK_ERR_INDEX);
    assert_int_equal(wk_sort(x, 2, false, &v, &ix), WK_ERR_INDEX);
    assert_null(v);
    assert_null(ix);
    assert_non_null(strstr(wk_last_error(), "wk_sort"));
    wk_clear_error();
    /* k out of [0, size] */
    v = ix = (wk_tensor *)1;
    assert_int_equal(wk_topk(x, 4, 1, true, &v, &ix), WK_ERR_ARG);
    assert_null(v);
    assert_null(ix);
    assert_non_null(strstr(wk_last_error(), "k = 4"));
    wk_clear_error();
    assert_int_equal(wk_topk(x, -1, 1, true, &v, NULL), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_topk(x, 1, 7, true, &v, NULL), WK_ERR_INDEX);
    wk_clear_error();
    /* float-only statistics */
    int d0 = 0;
    TU_FAILS(wk_var(xi, &d0, 1, false, true), WK_ERR_DTYPE);
    TU_FAILS(wk_std(xi, &d0, 1, false, true), WK_ERR_DTYPE);
    TU_FAILS(wk_log_sum_exp(xi, &d0, 1, false), WK_ERR_DTYPE);
    int dup[] = {0, -2};
    TU_FAILS(wk_var(x, dup, 2, false, true), WK_ERR_ARG);
    TU_FAILS(wk_log_sum_exp(x, dup, 2, false), WK_ERR_ARG);
    TU_FAILS(wk_prod(x, dup, 2, false), WK_ERR_ARG);
    int bad = 3;
    TU_FAILS(wk_any(x, &bad, 1, false), WK_ERR_INDEX);
    TU_FAILS(wk_all(x, NULL, 1, false), WK_ERR_ARG);
    TU_FAILS(wk_var(x, &bad, 1, false, false), WK_ERR_INDEX);

    /* NULL inputs propagate and keep the first error */
    TU_FAILS(wk_cumsum(NULL, 0), WK_ERR_ARG);
    wk_tensor *bad_t = wk_cumsum(x, 9);   /* records INDEX */
    assert_null(bad_t);
    assert_null(wk_cumprod(bad_t, 0));
    assert_null(wk_argsort(bad_t, 0, false));
    assert_null(wk_var(bad_t, &d0, 1, false, true));
    assert_null(wk_log_sum_exp(bad_t, &d0, 1, false));
    assert_null(wk_prod(bad_t, &d0, 1, false));
    assert_int_equal(wk_sort(bad_t, 0, false, &v, &ix), WK_ERR_INDEX);
    assert_int_equal(wk_topk(bad_t, 1, 0, false, &v, &ix), WK_ERR_INDEX);
    assert_int_equal(wk_last_status(), WK_ERR_INDEX);
    wk_clear_error();
    wk_tensor_free(x);
    wk_tensor_free(xi);
}

/* ------------------------------------------------------------------- scans */

static void test_cumsum_basic(void **state) {
    (void)state;
    double v[] = {1, 2, 3, 4, 5, 6};
    int64_t shape[] = {2, 3};
    wk_tensor *x = tu_make(v, shape, 2, WK_F32);
    wk_tensor *a = TU_OK(wk_cumsum(x, 1));
    tu_assert_close(a, (double[]){1, 3, 6, 4, 9, 15}, 6, 0, 0);
    wk_tensor *b = TU_OK(wk_cumsum(x, 0));
    tu_assert_close(b, (double[]){1, 2, 3, 5, 7, 9}, 6, 0, 0);
    wk_tensor *c = TU_OK(wk_cumprod(x, -1));
    tu_assert_close(c, (double[]){1, 2, 6, 4, 20, 120}, 6, 0, 0);
    /* transposed input: the scan follows the logical dim */
    wk_tensor *xt = TU_OK(wk_t(x));
    wk_tensor *d = TU_OK(wk_cumsum(xt, 0));
    tu_assert_close(d, (double[]){1, 4, 3, 9, 6, 15}, 6, 0, 0);
    wk_tensor *ts[] = {x, a, b, c, xt, d};
    for (int i = 0; i < 6; i++) wk_tensor_free(ts[i]);
}

static void test_scan_int_wrap(void **state) {
    (void)state;
    double v[] = {200, 100, 10};
    wk_tensor *x = vec(v, 3, WK_U8);
    wk_tensor *s = TU_OK(wk_cumsum(x, 0));
    assert_int_equal(wk_tensor_dtype(s), WK_U8);
    tu_assert_close(s, (double[]){200, 44, 54}, 3, 0, 0);   /* 300 mod 256 = 44 */
    wk_tensor *p = TU_OK(wk_cumprod(x, 0));
    tu_assert_close(p, (double[]){200, (200 * 100) % 256, (200 * 100 * 10) % 256}, 3, 0, 0);
    int64_t big[] = {INT64_MAX, 1, 1};
    int64_t n = 3;
    wk_tensor *y = TU_OK(wk_from_host(big, sizeof big, &n, 1, WK_I64, wk_cpu()));
    wk_tensor *ys = TU_OK(wk_cumsum(y, 0));
    int64_t got[3];
    read_i64(ys, got, 3);
    assert_true(got[0] == INT64_MAX && got[1] == INT64_MIN && got[2] == INT64_MIN + 1);
    double sv[] = {-30000, -30000, 5};
    wk_tensor *z = vec(sv, 3, WK_I16);
    wk_tensor *zs = TU_OK(wk_cumsum(z, 0));
    tu_assert_close(zs, (double[]){-30000, 5536, 5541}, 3, 0, 0);
    wk_tensor *ts[] = {x, s, p, y, ys, z, zs};
    for (int i = 0; i < 7; i++) wk_tensor_free(ts[i]);
}

static void test_scan_edge(void **state) {
    (void)state;
    /* empty dims, rank 0 */
    int64_t es[] = {0, 5};
    wk_tensor *e = TU_OK(wk_zeros(es, 2, WK_F32, wk_cpu()));
    wk_tensor *r = TU_OK(wk_cumsum(e, 1));
    tu_assert_shape(r, es, 2);
    wk_tensor_free(r);
    r = TU_OK(wk_cumprod(e, 0));
    tu_assert_shape(r, es, 2);
    wk_tensor_free(r);
    wk_tensor *s = TU_OK(wk_full(NULL, 0, 3.5, WK_F64, wk_cpu()));
    r = TU_OK(wk_cumsum(s, -1));
    assert_int_equal(wk_rank(r), 0);
    tu_assert_close(r, (double[]){3.5}, 1, 0, 0);
    wk_tensor_free(r);
    TU_FAILS(wk_cumsum(s, 1), WK_ERR_INDEX);
    /* f16 accumulates in f32: 4096 ones give 4096 (an f16 accumulator sticks at 2048) */
    int64_t n = 4096;
    wk_tensor *h = TU_OK(wk_ones(&n, 1, WK_F16, wk_cpu()));
    r = TU_OK(wk_cumsum(h, 0));
    double last;
    int64_t idx = 4095;
    TU_STATUS_OK(wk_get(r, &idx, &last));
    assert_true(last == 4096.0);
    wk_tensor_free(r);
    /* broadcast input (stride 0 along the scanned dim) */
    double v[] = {1, 2, 3};
    int64_t one3[] = {1, 3}, four3[] = {4, 3};
    wk_tensor *x = tu_make(v, one3, 2, WK_F32);
    wk_tensor *b = TU_OK(wk_broadcast_as(x, four3, 2));
    r = TU_OK(wk_cumsum(b, 0));
    tu_assert_close(r, (double[]){1, 2, 3, 2, 4, 6, 3, 6, 9, 4, 8, 12}, 12, 0, 0);
    wk_tensor_free(r);
    wk_tensor *ts[] = {e, s, h, x, b};
    for (int i = 0; i < 5; i++) wk_tensor_free(ts[i]);
}

/* Large scans against a naive double reference, 1 and 2 threads bitwise equal. */
static void test_scan_large(void **state) {
    (void)state;
    int saved = wk_num_threads();
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 7));
    /* one long line (the chunked path) */
    int64_t n = (INT64_C(1) << 20) + 12345;
    wk_tensor *x = TU_OK(wk_rand(&n, 1, -1, 1, WK_F32, wk_cpu()));
    float *xv = malloc(sizeof(float) * (size_t)n), *r1 = malloc(sizeof(float) * (size_t)n),
          *r2 = malloc(sizeof(float) * (size_t)n);
    assert_true(xv && r1 && r2);
    TU_STATUS_OK(wk_to_host(x, xv, sizeof(float) * (size_t)n));
    wk_set_num_threads(1);
    wk_tensor *a = TU_OK(wk_cumsum(x, 0));
    wk_set_num_threads(2);
    wk_tensor *b = TU_OK(wk_cumsum(x, 0));
    TU_STATUS_OK(wk_to_host(a, r1, sizeof(float) * (size_t)n));
    TU_STATUS_OK(wk_to_host(b, r2, sizeof(float) * (size_t)n));
    assert_memory_equal(r1, r2, sizeof(float) * (size_t)n);
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += xv[i];
        if (fabs(r1[i] - s) > 1e-5 * (1 + fabs(s))) {
            fprintf(stderr, "cumsum %lld: %g vs %g\n", (long long)i, r1[i], s);
            fail();
        }
    }
    wk_tensor_free(a);
    wk_tensor_free(b);
    /* many lines along dim 0 of a (1024, 1025) view (parallel over blocks) */
    int64_t sh[] = {1024, 1025};
    wk_tensor *nx = TU_OK(wk_narrow(x, 0, 0, 1024 * 1025));
    wk_tensor *m = TU_OK(wk_reshape(nx, sh, 2));
    wk_set_num_threads(1);
    a = TU_OK(wk_cumprod(m, 0));
    wk_set_num_threads(2);
    b = TU_OK(wk_cumprod(m, 0));
    assert_true(tu_max_abs_diff(a, b) == 0);
    double got;
    int64_t ix[] = {3, 700};
    TU_STATUS_OK(wk_get(a, ix, &got));
    double want = 1;
    for (int i = 0; i <= 3; i++) want *= xv[i * 1025 + 700];
    assert_true(fabs(got - want) <= 1e-6 * fabs(want) + 1e-30);
    wk_tensor_free(a);
    wk_tensor_free(b);
    wk_tensor_free(m);
    wk_tensor_free(nx);
    wk_tensor_free(x);
    free(xv);
    free(r1);
    free(r2);
    wk_set_num_threads(saved);
}

/* ------------------------------------------------------------- sort, top-k */

static void test_sort_ties_nan(void **state) {
    (void)state;
    /* ties keep index order; NaN last ascending, first descending; -0 == +0 */
    double v[] = {2, NAN, 1, 2, -0.0, 1, NAN, 0.0, -INFINITY};
    wk_tensor *x = vec(v, 9, WK_F32);
    wk_tensor *val, *ix;
    TU_STATUS_OK(wk_sort(x, 0, false, &val, &ix));
    int64_t got[9];
    read_i64(ix, got, 9);
    int64_t want_asc[] = {8, 4, 7, 2, 5, 0, 3, 1, 6};
    assert_memory_equal(got, want_asc, sizeof want_asc);
    tu_assert_close(val, (double[]){-INFINITY, 0, 0, 1, 1, 2, 2, NAN, NAN}, 9, 0, 0);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    TU_STATUS_OK(wk_sort(x, 0, true, &val, &ix));
    read_i64(ix, got, 9);
    int64_t want_desc[] = {1, 6, 0, 3, 2, 5, 4, 7, 8};
    assert_memory_equal(got, want_desc, sizeof want_desc);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    /* argsort = sort's indices; values only */
    ix = TU_OK(wk_argsort(x, -1, true));
    read_i64(ix, got, 9);
    assert_memory_equal(got, want_desc, sizeof want_desc);
    wk_tensor_free(ix);
    TU_STATUS_OK(wk_sort(x, 0, false, &val, NULL));
    assert_int_equal(wk_tensor_dtype(val), WK_F32);
    wk_tensor_free(val);
    TU_STATUS_OK(wk_sort(x, 0, false, NULL, NULL));
    /* the tie rule of top-k: equal values go to the lower index */
    TU_STATUS_OK(wk_topk(x, 4, 0, true, &val, &ix));
    read_i64(ix, got, 4);
    int64_t want_top[] = {1, 6, 0, 3};
    assert_memory_equal(got, want_top, sizeof want_top);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    TU_STATUS_OK(wk_topk(x, 3, 0, false, NULL, &ix));
    read_i64(ix, got, 3);
    int64_t want_bot[] = {8, 4, 7};
    assert_memory_equal(got, want_bot, sizeof want_bot);
    wk_tensor_free(ix);
    wk_tensor_free(x);
}

static void test_topk_edge(void **state) {
    (void)state;
    double v[] = {3, 1, 2, 5, 4, 0};
    int64_t shape[] = {2, 3};
    wk_tensor *x = tu_make(v, shape, 2, WK_I32);
    wk_tensor *val, *ix;
    /* k = 0: empty results of shape (2, 0) */
    TU_STATUS_OK(wk_topk(x, 0, 1, true, &val, &ix));
    int64_t s20[] = {2, 0};
    tu_assert_shape(val, s20, 2);
    tu_assert_shape(ix, s20, 2);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    /* k = size: a full sort */
    TU_STATUS_OK(wk_topk(x, 3, 1, false, &val, &ix));
    tu_assert_close(val, (double[]){1, 2, 3, 0, 4, 5}, 6, 0, 0);
    assert_int_equal(wk_tensor_dtype(val), WK_I32);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    /* along dim 0 of a transposed view */
    wk_tensor *xt = TU_OK(wk_t(x));   /* [[3,5],[1,4],[2,0]] */
    TU_STATUS_OK(wk_topk(xt, 1, 0, true, &val, &ix));
    int64_t s12[] = {1, 2};
    tu_assert_shape(val, s12, 2);
    tu_assert_close(val, (double[]){3, 5}, 2, 0, 0);
    int64_t got[2];
    read_i64(ix, got, 2);
    assert_true(got[0] == 0 && got[1] == 0);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    /* empty dim: k must be 0 */
    int64_t es[] = {3, 0};
    wk_tensor *e = TU_OK(wk_zeros(es, 2, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_topk(e, 0, 1, true, &val, &ix));
    tu_assert_shape(val, es, 2);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    assert_int_equal(wk_topk(e, 1, 1, true, &val, &ix), WK_ERR_ARG);
    wk_clear_error();
    TU_STATUS_OK(wk_sort(e, 1, false, &val, &ix));
    tu_assert_shape(ix, es, 2);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    /* rank 0 */
    wk_tensor *s = TU_OK(wk_full(NULL, 0, 2, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_topk(s, 1, 0, true, &val, &ix));
    assert_int_equal(wk_rank(val), 0);
    int64_t i0;
    read_i64(ix, &i0, 1);
    assert_int_equal(i0, 0);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    assert_int_equal(wk_topk(s, 0, 0, true, &val, &ix), WK_ERR_ARG);
    assert_null(val);
    wk_clear_error();
    wk_tensor *ts[] = {x, xt, e, s};
    for (int i = 0; i < 4; i++) wk_tensor_free(ts[i]);
}

static int cmp_desc_stable(const void *a, const void *b) {
    const double *x = a, *y = b;   /* pairs (value, index) */
    if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Heap top-k and radix sort on many lines with ties, vs qsort; 1 vs 2 threads. */
static void test_order_large(void **state) {
    (void)state;
    int saved = wk_num_threads();
    int64_t rows = 32000, cols = 8, k = 32;
    int64_t shape[] = {rows, cols};
    double *v = malloc(sizeof(double) * (size_t)(rows * cols));
    assert_non_null(v);
    uint64_t st = 12345;
    for (int64_t i = 0; i < rows * cols; i++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        v[i] = (double)((st >> 33) % 5000) * 0.25;   /* many ties */
    }
    wk_tensor *x = tu_make(v, shape, 2, WK_F32);
    wk_tensor *v1, *i1, *v2, *i2;
    wk_set_num_threads(1);
    TU_STATUS_OK(wk_topk(x, k, 0, true, &v1, &i1));
    wk_set_num_threads(2);
    TU_STATUS_OK(wk_topk(x, k, 0, true, &v2, &i2));
    assert_true(tu_max_abs_diff(v1, v2) == 0 && tu_max_abs_diff(i1, i2) == 0);
    int64_t *gi = malloc(sizeof(int64_t) * (size_t)(k * cols));
    double *pairs = malloc(sizeof(double) * 2 * (size_t)rows);
    assert_true(gi && pairs);
    read_i64(i1, gi, k * cols);
    for (int64_t c = 0; c < cols; c++) {
        for (int64_t r = 0; r < rows; r++) { pairs[2 * r] = v[r * cols + c]; pairs[2 * r + 1] = (double)r; }
        qsort(pairs, (size_t)rows, 2 * sizeof(double), cmp_desc_stable);
        for (int64_t j = 0; j < k; j++) assert_int_equal(gi[j * cols + c], (int64_t)pairs[2 * j + 1]);
    }
    wk_tensor *ts[] = {v1, i1, v2, i2};
    for (int i = 0; i < 4; i++) wk_tensor_free(ts[i]);
    /* full descending sort of the same columns (radix path, parallel lines) */
    wk_tensor *xt = TU_OK(wk_t(x));
    wk_set_num_threads(1);
    TU_STATUS_OK(wk_sort(xt, 1, true, &v1, &i1));
    wk_set_num_threads(2);
    TU_STATUS_OK(wk_sort(xt, 1, true, &v2, &i2));
    assert_true(tu_max_abs_diff(v1, v2) == 0 && tu_max_abs_diff(i1, i2) == 0);
    int64_t *all = malloc(sizeof(int64_t) * (size_t)(rows * cols));
    assert_non_null(all);
    read_i64(i1, all, rows * cols);
    int64_t c = 5;
    for (int64_t r = 0; r < rows; r++) { pairs[2 * r] = v[r * cols + c]; pairs[2 * r + 1] = (double)r; }
    qsort(pairs, (size_t)rows, 2 * sizeof(double), cmp_desc_stable);
    for (int64_t j = 0; j < rows; j++) assert_int_equal(all[c * rows + j], (int64_t)pairs[2 * j + 1]);
    wk_tensor *ts2[] = {v1, i1, v2, i2, xt, x};
    for (int i = 0; i < 6; i++) wk_tensor_free(ts2[i]);
    free(all);
    free(gi);
    free(pairs);
    free(v);
    wk_set_num_threads(saved);
}

static void test_sort_int_extremes(void **state) {
    (void)state;
    int64_t v[] = {INT64_MAX, INT64_MIN, -1, 0, INT64_MAX - 1, INT64_MIN + 1};
    int64_t n = 6;
    wk_tensor *x = TU_OK(wk_from_host(v, sizeof v, &n, 1, WK_I64, wk_cpu()));
    wk_tensor *val, *ix;
    TU_STATUS_OK(wk_sort(x, 0, false, &val, &ix));
    int64_t got[6], want[] = {INT64_MIN, INT64_MIN + 1, -1, 0, INT64_MAX - 1, INT64_MAX};
    TU_STATUS_OK(wk_to_host(val, got, sizeof got));
    assert_memory_equal(got, want, sizeof want);
    wk_tensor_free(val);
    wk_tensor_free(ix);
    wk_tensor_free(x);
    uint32_t u[] = {4000000000u, 1, 2147483648u, 0};
    n = 4;
    x = TU_OK(wk_from_host(u, sizeof u, &n, 1, WK_U32, wk_cpu()));
    TU_STATUS_OK(wk_topk(x, 2, 0, true, &val, NULL));
    tu_assert_close(val, (double[]){4000000000.0, 2147483648.0}, 2, 0, 0);
    wk_tensor_free(val);
    wk_tensor_free(x);
}

/* ------------------------------------------------ statistics and reductions */

static void test_var_std_lse(void **state) {
    (void)state;
    double v[] = {1, 2, 3, 4, 10, 10, 10, 10};
    int64_t shape[] = {2, 4};
    wk_tensor *x = tu_make(v, shape, 2, WK_F32);
    int d1 = 1;
    wk_tensor *a = TU_OK(wk_var(x, &d1, 1, false, true));
    tu_assert_close(a, (double[]){5.0 / 3.0, 0}, 2, 1e-6, 1e-6);
    wk_tensor *b = TU_OK(wk_std(x, &d1, 1, true, false));
    int64_t k21[] = {2, 1};
    tu_assert_shape(b, k21, 2);
    tu_assert_close(b, (double[]){sqrt(1.25), 0}, 2, 1e-6, 1e-6);
    /* one element, unbiased: NaN */
    int64_t one = 1;
    wk_tensor *o = tu_make((double[]){3}, &one, 1, WK_F64);
    int d0 = 0;
    wk_tensor *c = TU_OK(wk_var(o, &d0, 1, false, true));
    double r;
    TU_STATUS_OK(wk_item(c, &r));
    assert_true(isnan(r));
    /* log_sum_exp: large values, all -inf row, bf16 result dtype */
    double w[] = {1000, 1000, -INFINITY, -INFINITY};
    int64_t s22[] = {2, 2};
    wk_tensor *y = tu_make(w, s22, 2, WK_F32);
    wk_tensor *l = TU_OK(wk_log_sum_exp(y, &d1, 1, false));
    tu_assert_close(l, (double[]){1000 + log(2.0), -INFINITY}, 2, 1e-4, 1e-6);
    wk_tensor *yb = TU_OK(wk_to_dtype(y, WK_BF16));
    wk_tensor *lb = TU_OK(wk_log_sum_exp(yb, &d1, 1, true));
    assert_int_equal(wk_tensor_dtype(lb), WK_BF16);
    /* empty reduction: -inf */
    int64_t e3[] = {0, 3};
    wk_tensor *e = TU_OK(wk_zeros(e3, 2, WK_F32, wk_cpu()));
    wk_tensor *le = TU_OK(wk_log_sum_exp(e, &d0, 1, false));
    tu_assert_close(le, (double[]){-INFINITY, -INFINITY, -INFINITY}, 3, 0, 0);
    wk_tensor *ts[] = {x, a, b, o, c, y, l, yb, lb, e, le};
    for (int i = 0; i < 11; i++) wk_tensor_free(ts[i]);
}

static void test_prod_any_all(void **state) {
    (void)state;
    double v[] = {1, 2, 0, 4, NAN, 3};
    int64_t shape[] = {2, 3};
    wk_tensor *x = tu_make(v, shape, 2, WK_F32);
    int d1 = 1, d0 = 0;
    wk_tensor *p = TU_OK(wk_prod(x, &d1, 1, false));
    tu_assert_close(p, (double[]){0, NAN}, 2, 0, 0);
    wk_tensor *a = TU_OK(wk_any(x, &d0, 1, false));
    assert_int_equal(wk_tensor_dtype(a), WK_U8);
    tu_assert_close(a, (double[]){1, 1, 1}, 3, 0, 0);   /* NaN counts as nonzero */
    wk_tensor *l = TU_OK(wk_all(x, &d1, 1, true));
    tu_assert_close(l, (double[]){0, 1}, 2, 0, 0);
    /* empty reductions: prod 1, any 0, all 1 */
    int64_t e[] = {0, 2};
    wk_tensor *z = TU_OK(wk_zeros(e, 2, WK_I32, wk_cpu()));
    wk_tensor *pz = TU_OK(wk_prod(z, &d0, 1, false));
    tu_assert_close(pz, (double[]){1, 1}, 2, 0, 0);
    wk_tensor *az = TU_OK(wk_any(z, &d0, 1, false));
    tu_assert_close(az, (double[]){0, 0}, 2, 0, 0);
    wk_tensor *lz = TU_OK(wk_all(z, &d0, 1, false));
    tu_assert_close(lz, (double[]){1, 1}, 2, 0, 0);
    /* wk_reduce with the enum values */
    wk_tensor *rr = TU_OK(wk_reduce(x, WK_REDUCE_ANY, &d1, 1, false));
    assert_int_equal(wk_tensor_dtype(rr), WK_U8);
    /* integer prod wraps */
    double iv[] = {65536, 65536, 3};
    wk_tensor *xi = vec(iv, 3, WK_I32);
    wk_tensor *pi = TU_OK(wk_prod(xi, &d0, 1, false));
    tu_assert_close(pi, (double[]){0}, 1, 0, 0);
    /* max of an empty reduction is still an error */
    TU_FAILS(wk_max(z, &d0, 1, false), WK_ERR_SHAPE);
    wk_tensor *ts[] = {x, p, a, l, z, pz, az, lz, rr, xi, pi};
    for (int i = 0; i < 11; i++) wk_tensor_free(ts[i]);
}

/* Inside a scope every result and temporary is released at wk_scope_end
 * (LSan checks the leak side); a kept result survives. */
static void test_scoped(void **state) {
    (void)state;
    double v[] = {1, 5, 2, 8, 3, 3};
    int64_t shape[] = {2, 3};
    int d1 = 1;
    wk_scope_begin();
    wk_tensor *x = tu_make(v, shape, 2, WK_F32);
    wk_tensor *xb = TU_OK(wk_to_dtype(x, WK_BF16));
    wk_tensor *xd = TU_OK(wk_to_dtype(x, WK_F64));
    TU_OK(wk_var(x, &d1, 1, false, true));
    TU_OK(wk_std(xb, &d1, 1, true, false));
    TU_OK(wk_var(xd, &d1, 1, false, true));
    TU_OK(wk_log_sum_exp(x, &d1, 1, false));
    TU_OK(wk_log_sum_exp(xb, &d1, 1, true));
    TU_OK(wk_cumsum(x, 1));
    TU_OK(wk_prod(x, &d1, 1, false));
    wk_tensor *val, *ix;
    TU_STATUS_OK(wk_sort(x, 1, true, &val, &ix));
    TU_STATUS_OK(wk_topk(x, 2, 1, true, &val, &ix));
    wk_tensor *kept = wk_keep(TU_OK(wk_std(x, &d1, 1, false, true)));
    wk_scope_end();
    /* x is gone; the kept result is still valid */
    tu_assert_close(kept, (double[]){sqrt(13.0 / 3.0), sqrt(25.0 / 3.0)}, 2, 1e-5, 1e-5);
    wk_tensor_free(kept);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cumsum_basic),
        cmocka_unit_test(test_scan_int_wrap),
        cmocka_unit_test(test_scan_edge),
        cmocka_unit_test(test_scan_large),
        cmocka_unit_test(test_sort_ties_nan),
        cmocka_unit_test(test_topk_edge),
        cmocka_unit_test(test_order_large),
        cmocka_unit_test(test_sort_int_extremes),
        cmocka_unit_test(test_var_std_lse),
        cmocka_unit_test(test_prod_any_all),
        cmocka_unit_test(test_scoped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
