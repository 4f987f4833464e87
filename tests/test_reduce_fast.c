/* The fast reduction paths: vector sum/max/min of contiguous f32 runs at
 * every SIMD level (tails, NaN anywhere), and the column path used when the
 * innermost kept dim is contiguous, both checked against naive loops. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/vmath/vmath.h"

static uint64_t rng = 0x12345678abcdefULL;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

static void test_vector_runs(void **state) {
    (void)state;
    float x[1100];
    for (int level = WK_VMATH_SCALAR; level <= WK_VMATH_AVX512; level++) {
        if (wk__vmath_set_level(level) != 0) continue;   /* not on this CPU */
        for (int n = 1; n <= 1100; n += (n < 80 ? 1 : 97)) {
            for (int i = 0; i < n; i++) x[i] = (float)(urand() * 200 - 100);
            double s = 0;
            float mx = x[0], mn = x[0];
            for (int i = 0; i < n; i++) { s += x[i]; mx = x[i] > mx ? x[i] : mx; mn = x[i] < mn ? x[i] : mn; }
            assert_true(fabs(wk__vsum_f32(x, n) - s) <= 1e-4 * (1 + fabs(s)) + 1e-3);
            assert_true(wk__vmaxmin_f32(x, n, 0) == mx);
            assert_true(wk__vmaxmin_f32(x, n, 1) == mn);
            int k = (int)(urand() * n);
            x[k] = NAN;                                   /* a NaN anywhere wins */
            assert_true(isnan(wk__vmaxmin_f32(x, n, 0)));
            assert_true(isnan(wk__vmaxmin_f32(x, n, 1)));
        }
    }
    wk__vmath_set_level(-1);
}

/* The contiguous f32 sum: 64 f32 lanes added in double in a fixed order, the
 * same code at every level, so the same bits at every level; and at least as
 * accurate as one f32 accumulator per lane (checked against a double sum:
 * the error bound of 64 independent f32 chains, plus the final rounding). */
static void test_vector_sum_levels(void **state) {
    (void)state;
    enum { N = 20000 };
    float *x = malloc(sizeof(float) * N);
    assert_non_null(x);
    for (int i = 0; i < N; i++) x[i] = (float)(urand() * 2 - 0.9) * (i % 7 == 0 ? 1000.0f : 1.0f);
    static const int lens[] = {1, 2, 7, 8, 9, 31, 63, 64, 65, 127, 128, 129, 1000, 1024, 4097, 20000};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        int n = lens[k];
        float first = 0;
        int have = 0;
        double s = 0, sa = 0;
        for (int i = 0; i < n; i++) { s += x[i]; sa += fabs(x[i]); }
        for (int level = WK_VMATH_SCALAR; level <= WK_VMATH_AVX512; level++) {
            if (wk__vmath_set_level(level) != 0) continue;
            float got = wk__vsum_f32(x, n);
            if (!have) { first = got; have = 1; }
            if (memcmp(&got, &first, sizeof got) != 0)
                fail_msg("n=%d: %a at %s, %a at the first level", n, (double)got, wk__vmath_isa(), (double)first);
            double chain = (double)(n + 63) / 64; /* elements per lane */
            double tol = chain * 0x1p-24 * sa + 0x1p-24 * fabs(s) + 1e-30;
            if (!(fabs((double)got - s) <= tol))
                fail_msg("n=%d [%s]: %.9g, exact %.9g (tol %.3g)", n, wk__vmath_isa(), (double)got, s, tol);
        }
    }
    wk__vmath_set_level(-1);
    free(x);
}

/* Sum and mean over the last dim of f32 rows (one contiguous run per
 * output: cpu_reduce's direct path): each output is the bits of
 * wk__vsum_f32 of its row (mean: that / n, rounded once), for one and two
 * kept dims, rows at an offset (a narrowed view) and mean. */
static void test_last_dim_rows(void **state) {
    (void)state;
    int64_t shape[3] = {2, 3, 1001};
    int64_t n = shape[0] * shape[1] * shape[2];
    double *v = malloc(sizeof(double) * (size_t)n);
    float *xf = malloc(sizeof(float) * (size_t)n), got[6];
    assert_true(v && xf);
    for (int64_t i = 0; i < n; i++) { v[i] = urand() * 10 - 4; xf[i] = (float)v[i]; }
    wk_tensor *t3 = tu_make(v, shape, 3, WK_F32);
    wk_tensor *t2 = TU_OK(wk_reshape(t3, (int64_t[]){6, 1001}, 2));
    wk_tensor *tn = TU_OK(wk_narrow(t2, 1, 1, 1000)); /* rows start at an offset, stride 1001 */
    int last = -1;
    for (int op = 0; op < 2; op++)
        for (int which = 0; which < 3; which++) {
            wk_tensor *src = which == 0 ? t3 : which == 1 ? t2 : tn;
            int64_t len = which == 2 ? 1000 : 1001, off = which == 2 ? 1 : 0;
            wk_tensor *r = op == 0 ? TU_OK(wk_sum(src, &last, 1, false)) : TU_OK(wk_mean(src, &last, 1, false));
            assert_int_equal(wk_numel(r), 6);
            TU_STATUS_OK(wk_to_host_f32(r, got, 6));
            for (int o = 0; o < 6; o++) {
                double s = 0;
                s += wk__vsum_f32(xf + o * 1001 + off, len);
                float want = (float)(op == 1 ? s / (double)len : s);
                if (memcmp(&got[o], &want, sizeof want) != 0)
                    fail_msg("%s view %d row %d: %a, want %a", op ? "mean" : "sum", which, o, (double)got[o], (double)want);
            }
            wk_tensor_free(r);
        }
    wk_tensor_free(tn);
    wk_tensor_free(t2);
    wk_tensor_free(t3);
    free(xf);
    free(v);
}

/* wk_reduce against a naive loop on a [a, b, c] tensor (optionally a
 * permuted view), for the dim sets that take the column path. */
static void check_reduce(wk_dtype dt, const int64_t *shape, const int *dims, int nd, wk_reduce_op op, bool nan) {
    int64_t n = shape[0] * shape[1] * shape[2];
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = urand() * 10 - 5;
    if (nan) v[n / 3] = NAN;
    wk_tensor *t = tu_make(v, shape, 3, dt);
    wk_tensor *r = TU_OK(wk_reduce(t, op, dims, nd, false));
    bool red[3] = {false, false, false};
    for (int i = 0; i < nd; i++) red[dims[i]] = true;
    int64_t on = wk_numel(r);
    double *got = malloc(sizeof(double) * (size_t)on);
    TU_STATUS_OK(wk_to_host_f64(r, got, (size_t)on));
    int64_t oi = 0;
    for (int64_t i0 = 0; i0 < (red[0] ? 1 : shape[0]); i0++)
        for (int64_t i1 = 0; i1 < (red[1] ? 1 : shape[1]); i1++)
            for (int64_t i2 = 0; i2 < (red[2] ? 1 : shape[2]); i2++, oi++) {
                double acc = op == WK_REDUCE_SUM || op == WK_REDUCE_MEAN ? 0 : NAN;
                int64_t cnt = 0;
                bool first = true;
                for (int64_t j0 = red[0] ? 0 : i0; j0 < (red[0] ? shape[0] : i0 + 1); j0++)
                    for (int64_t j1 = red[1] ? 0 : i1; j1 < (red[1] ? shape[1] : i1 + 1); j1++)
                        for (int64_t j2 = red[2] ? 0 : i2; j2 < (red[2] ? shape[2] : i2 + 1); j2++) {
                            double x = v[(j0 * shape[1] + j1) * shape[2] + j2];
                            if (dt == WK_F32) x = (float)x;
                            cnt++;
                            if (op == WK_REDUCE_SUM || op == WK_REDUCE_MEAN) acc += x;
                            else if (first || isnan(x) || (!isnan(acc) && (op == WK_REDUCE_MAX ? x > acc : x < acc))) acc = x;
                            first = false;
                        }
                if (op == WK_REDUCE_MEAN) acc /= (double)cnt;
                double g = got[oi];
                /* f16: the inputs were rounded to f16 (not the reference's) and so is the result */
                double tol = dt == WK_F16 ? 0.02 * sqrt((double)cnt) + 2e-3 * fabs(acc) : 1e-4 * (1 + fabs(acc));
                bool ok = (isnan(acc) && isnan(g)) || fabs(g - acc) <= tol;
                if (!ok) fprintf(stderr, "%s reduce op %d out %lld: got %g want %g\n", wk_dtype_name(dt), (int)op,
                                 (long long)oi, g, acc);
                assert_true(ok);
            }
    free(got);
    free(v);
    wk_tensor_free(r);
    wk_tensor_free(t);
}

static void test_column_path(void **state) {
    (void)state;
    int64_t s1[3] = {37, 3, 100}, s2[3] = {5, 9, 600}, s3[3] = {2, 1, 17};
    int d0[1] = {0}, d01[2] = {0, 1}, d1[1] = {1};
    wk_reduce_op ops[4] = {WK_REDUCE_SUM, WK_REDUCE_MEAN, WK_REDUCE_MAX, WK_REDUCE_MIN};
    wk_dtype dts[3] = {WK_F32, WK_F64, WK_F16};
    for (int k = 0; k < 4; k++)
        for (int d = 0; d < 3; d++) {
            check_reduce(dts[d], s1, d0, 1, ops[k], false);
            check_reduce(dts[d], s1, d01, 2, ops[k], false);
            check_reduce(dts[d], s2, d1, 1, ops[k], false);
            check_reduce(dts[d], s2, d01, 2, ops[k], k >= 2);
            check_reduce(dts[d], s3, d0, 1, ops[k], false);
        }
}

/* A large column reduction crosses the thread threshold. */
static void test_column_large(void **state) {
    (void)state;
    int64_t s[2] = {3000, 700};
    wk_tensor *t = TU_OK(wk_ones(s, 2, WK_F32, wk_cpu()));
    int d0 = 0;
    wk_tensor *r = TU_OK(wk_sum(t, &d0, 1, false));
    double v[700];
    TU_STATUS_OK(wk_to_host_f64(r, v, 700));
    for (int i = 0; i < 700; i++) assert_true(v[i] == 3000.0);
    wk_tensor_free(r);
    wk_tensor_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_runs),
        cmocka_unit_test(test_vector_sum_levels),
        cmocka_unit_test(test_last_dim_rows),
        cmocka_unit_test(test_column_path),
        cmocka_unit_test(test_column_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
