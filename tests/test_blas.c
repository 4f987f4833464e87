/* The optional system-BLAS hook (src/cpu/gemm/cpu_blas.c, cmake -DWICK_BLAS=...).
 * Without BLAS: wk__blas_name() is NULL and the stubs decline (false, C
 * untouched). With BLAS: the build's BLAS is the one CMake was asked for;
 * wk__blas_gemm_f32/f64 match a naive double reference for row-major,
 * column-major (transposed) and narrowed operands, m/n/k in {1,3,17,64},
 * degenerate dims with meaningless strides, k == 0 and empty C; strides a
 * BLAS cannot express decline and leave C untouched; products spanning
 * several of the 128 x 256 tiles of C are right; the BLAS runs
 * single-threaded under wick's pool and 1 and 2 threads agree bit for bit.
 * wk_matmul through the public API is checked in both builds. */
#include "testutil.h"
#include "cpu/gemm/gemm.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53 * 2 - 1;
}

/* Reference C = A @ B in double, then compare with got (f32 or f64). */
/* got is f32 (gf) or f64 (gd); the tolerance follows the dtype computed in (f32). */
static void ref_check(int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs, const double *b,
                      int64_t brs, int64_t bcs, const float *gf, const double *gd, bool f32, const char *what) {
    double tol = (f32 ? 3e-6 : 1e-13) * (double)(k > 0 ? k : 1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += a[i * ars + p * acs] * b[p * brs + j * bcs];
            double g = gf ? (double)gf[i * n + j] : gd[i * n + j];
            if (!(fabs(g - s) <= tol)) {
                fprintf(stderr, "%s %s m %lld n %lld k %lld strides A (%lld,%lld) B (%lld,%lld) at (%lld,%lld): %.17g vs %.17g\n",
                        what, f32 ? "f32" : "f64", (long long)m, (long long)n, (long long)k, (long long)ars,
                        (long long)acs, (long long)brs, (long long)bcs, (long long)i, (long long)j, g, s);
                fail();
            }
        }
}

/* Run both dtypes on one problem; expect `want` (true = computed and right,
 * false = declined with C untouched). Strides may be 0 or negative: the
 * buffers are then laid out from an offset so every element is in range. */
static void run_case(int64_t m, int64_t n, int64_t k, int64_t ars, int64_t acs, int64_t brs, int64_t bcs, bool want,
                     const char *what) {
    /* element span of each operand: offsets of the lowest and highest element */
    int64_t alo = 0, ahi = 0, blo = 0, bhi = 0;
    if (m > 0 && k > 0) {
        alo = (ars < 0 ? (m - 1) * ars : 0) + (acs < 0 ? (k - 1) * acs : 0);
        ahi = (ars > 0 ? (m - 1) * ars : 0) + (acs > 0 ? (k - 1) * acs : 0);
    }
    if (k > 0 && n > 0) {
        blo = (brs < 0 ? (k - 1) * brs : 0) + (bcs < 0 ? (n - 1) * bcs : 0);
        bhi = (brs > 0 ? (k - 1) * brs : 0) + (bcs > 0 ? (n - 1) * bcs : 0);
    }
    size_t alen = (size_t)(ahi - alo + 1), blen = (size_t)(bhi - blo + 1), clen = (size_t)(m * n > 0 ? m * n : 1);
    double *ad = malloc(sizeof(double) * alen), *bd = malloc(sizeof(double) * blen);
    float *af = malloc(sizeof(float) * alen), *bf = malloc(sizeof(float) * blen);
    double *cd = malloc(sizeof(double) * clen);
    float *cf = malloc(sizeof(float) * clen);
    assert_non_null(ad); assert_non_null(bd); assert_non_null(af); assert_non_null(bf);
    assert_non_null(cd); assert_non_null(cf);
    for (size_t i = 0; i < alen; i++) af[i] = (float)(ad[i] = (double)(float)urand());
    for (size_t i = 0; i < blen; i++) bf[i] = (float)(bd[i] = (double)(float)urand());
    for (size_t i = 0; i < clen; i++) cd[i] = NAN, cf[i] = NAN; /* sentinel: must be overwritten / kept */
    const double *A = ad - alo, *B = bd - blo;
    const float *Af = af - alo, *Bf = bf - blo;

    bool got32 = wk__blas_gemm_f32(m, n, k, Af, ars, acs, Bf, brs, bcs, cf);
    bool got64 = wk__blas_gemm_f64(m, n, k, A, ars, acs, B, brs, bcs, cd);
    if (got32 != want || got64 != want) {
        fprintf(stderr, "%s m %lld n %lld k %lld strides A (%lld,%lld) B (%lld,%lld): returned f32 %d f64 %d, want %d\n",
                what, (long long)m, (long long)n, (long long)k, (long long)ars, (long long)acs, (long long)brs,
                (long long)bcs, got32, got64, want);
        fail();
    }
    if (want) {
        ref_check(m, n, k, A, ars, acs, B, brs, bcs, cf, NULL, true, what);
        ref_check(m, n, k, A, ars, acs, B, brs, bcs, NULL, cd, false, what);
    } else {
        for (size_t i = 0; i < clen; i++) assert_true(isnan(cf[i]) && isnan(cd[i]));
    }
    free(ad); free(bd); free(af); free(bf); free(cd); free(cf);
}

/* ---------------------------------------------------------------- both builds */

/* wk_matmul through the public API (whichever GEMM serves it) against the
 * naive reference: row-major, transposed, narrowed, batched. */
static wk_tensor *api_operand(int64_t batch, int64_t rows, int64_t cols, int variant, wk_dtype dt) {
    return tu_matrix_operand(batch, rows, cols, variant, dt, urand);
}

static void api_check(int64_t batch, int64_t m, int64_t k, int64_t n, int va, int vb, wk_dtype dt) {
    wk_tensor *a = api_operand(batch, m, k, va, dt), *b = api_operand(batch, k, n, vb, dt);
    wk_tensor *c = TU_OK(wk_matmul(a, b));
    size_t na = (size_t)(batch * m * k), nb = (size_t)(batch * k * n), nc = (size_t)(batch * m * n);
    double *A = malloc(sizeof(double) * (na ? na : 1)), *B = malloc(sizeof(double) * (nb ? nb : 1));
    double *C = malloc(sizeof(double) * (nc ? nc : 1));
    TU_STATUS_OK(wk_to_host_f64(a, A, na));
    TU_STATUS_OK(wk_to_host_f64(b, B, nb));
    TU_STATUS_OK(wk_to_host_f64(c, C, nc));
    for (int64_t q = 0; q < batch; q++)
        ref_check(m, n, k, A + q * m * k, k, 1, B + q * k * n, n, 1, NULL, C + q * m * n, dt == WK_F32, "wk_matmul");
    free(A); free(B); free(C);
    wk_tensor_free(a); wk_tensor_free(b); wk_tensor_free(c);
}

static void test_public_matmul(void **state) {
    (void)state;
    const int64_t dims[] = {1, 3, 17, 64};
    wk_dtype dts[2] = {WK_F32, WK_F64};
    for (int d = 0; d < 2; d++)
        for (int im = 0; im < 4; im++)
            for (int in = 0; in < 4; in++)
                for (int ik = 0; ik < 4; ik++)
                    for (int va = 0; va < 3; va++)
                        for (int vb = 0; vb < 3; vb++)
                            if ((im + in + ik + va + vb) % 3 == 0) /* a third of the grid is plenty here */
                                api_check(1, dims[im], dims[ik], dims[in], va, vb, dts[d]);
    for (int d = 0; d < 2; d++) {
        api_check(3, 40, 33, 29, 1, 2, dts[d]);  /* batched, transposed x narrowed */
        api_check(2, 65, 0, 7, 0, 0, dts[d]);    /* k == 0: zeros */
        api_check(1, 130, 70, 90, 2, 1, dts[d]); /* a real GEMM */
    }
}

/* ------------------------------------------------------------- default build */
#ifndef WICK_TEST_EXPECT_BLAS

static void test_stubs(void **state) {
    (void)state;
    assert_null(wk__blas_name());
    run_case(3, 4, 5, 5, 1, 4, 1, false, "stub");
    run_case(17, 17, 17, 1, 17, 1, 17, false, "stub");
    run_case(2, 3, 0, 0, 1, 3, 1, false, "stub");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stubs),
        cmocka_unit_test(test_public_matmul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* ---------------------------------------------------------------- BLAS build */
#else

/* Present only when the test links that BLAS (weak: NULL otherwise). */
extern int openblas_get_num_threads(void) __attribute__((weak));
extern int64_t bli_thread_get_num_threads(void) __attribute__((weak));

static void test_name(void **state) {
    (void)state;
    assert_non_null(wk__blas_name());
    assert_string_equal(wk__blas_name(), WICK_TEST_EXPECT_BLAS);
}

/* An r x c operand in layout v: 0 row-major (rs = c, cs = 1), 1 column-major
 * (a transposed view: rs = 1, cs = r), 2 row-major narrowed out of a wider
 * buffer (rs = c + 5), 3 column-major narrowed (cs = r + 4). */
static void op_strides(int64_t r, int64_t c, int v, int64_t *rs, int64_t *cs) {
    switch (v) {
    case 0: *rs = c; *cs = 1; break;
    case 1: *rs = 1; *cs = r; break;
    case 2: *rs = c + 5; *cs = 1; break;
    default: *rs = 1; *cs = r + 4; break;
    }
}

/* Every layout pair over m, n, k in {1, 3, 17, 64}. */
static void test_layouts(void **state) {
    (void)state;
    const int64_t dims[] = {1, 3, 17, 64};
    for (int im = 0; im < 4; im++)
        for (int in = 0; in < 4; in++)
            for (int ik = 0; ik < 4; ik++)
                for (int va = 0; va < 4; va++)
                    for (int vb = 0; vb < 4; vb++) {
                        int64_t m = dims[im], n = dims[in], k = dims[ik], ars, acs, brs, bcs;
                        op_strides(m, k, va, &ars, &acs);
                        op_strides(k, n, vb, &brs, &bcs);
                        run_case(m, n, k, ars, acs, brs, bcs, true, "layouts");
                    }
}

/* A stride that is never stepped does not matter (m == 1, k == 1, n == 1). */
static void test_degenerate_dims(void **state) {
    (void)state;
    const int64_t junk[] = {0, -7, 1, 2, 1000};
    for (int j = 0; j < 5; j++) {
        int64_t s = junk[j];
        run_case(1, 9, 6, s, 1, 9, 1, true, "m==1 any ars");       /* row vector, row-major */
        run_case(1, 9, 6, s, 3, 9, 1, true, "m==1 strided row");   /* A's row stepped by 3: as Trans */
        run_case(8, 9, 1, 1, s, 9, 1, true, "k==1 any acs");       /* A is a column */
        run_case(8, 9, 1, 1, 8, s, 1, true, "k==1 any brs");       /* B is a row */
        run_case(8, 1, 6, 6, 1, 1, s, true, "n==1 any bcs");       /* B is a column */
        run_case(8, 1, 6, 6, 1, 2, s, true, "n==1 strided column");
        run_case(1, 1, 1, s, s, s, s, true, "1x1x1");
    }
}

static void test_empty_and_k0(void **state) {
    (void)state;
    run_case(5, 7, 0, 0, 0, 0, 0, true, "k==0"); /* C zeroed */
    run_case(1, 1, 0, 3, 1, 1, 1, true, "k==0 1x1");
    run_case(0, 7, 5, 5, 1, 7, 1, true, "m==0");
    run_case(5, 0, 5, 5, 1, 0, 1, true, "n==0");
    run_case(0, 0, 0, 0, 0, 0, 0, true, "all 0");
    /* an empty C is never written: NULL is fine */
    assert_true(wk__blas_gemm_f32(0, 4, 4, NULL, 4, 1, NULL, 4, 1, NULL));
    assert_true(wk__blas_gemm_f64(4, 0, 4, NULL, 4, 1, NULL, 0, 1, NULL));
}

/* Strides a CBLAS leading dimension cannot express: declined, C untouched. */
static void test_inexpressible(void **state) {
    (void)state;
    run_case(4, 5, 6, 0, 1, 5, 1, false, "A rows broadcast");
    run_case(4, 5, 6, 6, 0, 5, 1, false, "A cols broadcast");
    run_case(4, 5, 6, 12, 2, 5, 1, false, "A cols step 2");
    run_case(4, 5, 6, 2, 8, 5, 1, false, "A rows step 2 (col-major)");
    run_case(4, 5, 6, 3, 1, 5, 1, false, "A ld < cols (overlapping rows)");
    run_case(4, 5, 6, 1, 3, 5, 1, false, "A col-major ld < rows");
    run_case(4, 5, 6, -6, 1, 5, 1, false, "A negative row stride");
    run_case(4, 5, 6, 6, -1, 5, 1, false, "A negative col stride");
    run_case(4, 5, 6, 6, 1, 0, 1, false, "B rows broadcast");
    run_case(4, 5, 6, 6, 1, 5, 0, false, "B cols broadcast");
    run_case(4, 5, 6, 6, 1, 10, 2, false, "B cols step 2");
    run_case(4, 5, 6, 6, 1, -5, 1, false, "B negative row stride");
    run_case(1, 5, 6, 6, 0, 5, 1, false, "m==1 broadcast row");
    run_case(4, 1, 6, 6, 1, 0, 1, false, "n==1 broadcast column");
    /* sizes and leading dimensions past 32-bit BLAS ints (nothing is read) */
    float f = 0;
    double d = 0;
    int64_t big = (int64_t)INT_MAX + 1;
    assert_false(wk__blas_gemm_f32(2, 2, 2, &f, big, 1, &f, 2, 1, &f));
    assert_false(wk__blas_gemm_f64(2, 2, 2, &d, 1, big, &d, 2, 1, &d));
    assert_false(wk__blas_gemm_f32(2, 2, 2, &f, 2, 1, &f, big, 1, &f));
    assert_false(wk__blas_gemm_f64(big, 2, 2, &d, 2, 1, &d, 2, 1, &d));
    assert_false(wk__blas_gemm_f64(2, big, 2, &d, 2, 1, &d, big, 1, &d));
    assert_false(wk__blas_gemm_f32(2, 2, big, &f, big, 1, &f, 2, 1, &f));
    assert_true(f == 0 && d == 0);
}

/* C is cut into 128 x 256 tiles spread over the thread pool: products that
 * cross tile edges (whole and partial tiles), every layout pair. */
static void test_tiles(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{300, 600, 20}, {129, 257, 3}, {1, 700, 9}, {700, 1, 9}, {256, 512, 1}};
    for (int s = 0; s < 5; s++)
        for (int va = 0; va < 4; va++)
            for (int vb = 0; vb < 4; vb++) {
                int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ars, acs, brs, bcs;
                op_strides(m, k, va, &ars, &acs);
                op_strides(k, n, vb, &brs, &bcs);
                run_case(m, n, k, ars, acs, brs, bcs, true, "tiles");
            }
}

/* Work is split by wick's pool, the BLAS itself runs single-threaded, and 1
 * and 2 threads agree bit for bit (OpenBLAS's own threading would not). */
static void test_threads(void **state) {
    (void)state;
    int saved = wk_num_threads();
    const int64_t shapes[][3] = {{300, 200, 1000}, {16, 2000, 900}, {1000, 1000, 64}, {320, 320, 320}};
    for (int s = 0; s < 4; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
        float *c1 = malloc(sizeof(float) * (size_t)(m * n)), *c2 = malloc(sizeof(float) * (size_t)(m * n));
        double *ad = malloc(sizeof(double) * (size_t)(m * k)), *bd = malloc(sizeof(double) * (size_t)(k * n));
        double *d1 = malloc(sizeof(double) * (size_t)(m * n)), *d2 = malloc(sizeof(double) * (size_t)(m * n));
        for (int64_t i = 0; i < m * k; i++) a[i] = (float)(ad[i] = urand());
        for (int64_t i = 0; i < k * n; i++) b[i] = (float)(bd[i] = urand());
        TU_STATUS_OK(wk_set_num_threads(1));
        assert_true(wk__blas_gemm_f32(m, n, k, a, k, 1, b, n, 1, c1));
        assert_true(wk__blas_gemm_f64(m, n, k, ad, 1, m, bd, n, 1, d1));
        TU_STATUS_OK(wk_set_num_threads(2));
        assert_true(wk__blas_gemm_f32(m, n, k, a, k, 1, b, n, 1, c2));
        assert_true(wk__blas_gemm_f64(m, n, k, ad, 1, m, bd, n, 1, d2));
        assert_memory_equal(c1, c2, sizeof(float) * (size_t)(m * n));
        assert_memory_equal(d1, d2, sizeof(double) * (size_t)(m * n));
        free(a); free(b); free(c1); free(c2); free(ad); free(bd); free(d1); free(d2);
    }
    if (openblas_get_num_threads) assert_int_equal(openblas_get_num_threads(), 1);
    if (bli_thread_get_num_threads) assert_int_equal(bli_thread_get_num_threads(), 1);
    TU_STATUS_OK(wk_set_num_threads(saved));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_degenerate_dims),
        cmocka_unit_test(test_empty_and_k0),
        cmocka_unit_test(test_inexpressible),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_public_matmul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
