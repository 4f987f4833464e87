/* matmul's paths against a naive double-precision reference computed from
 * the same (rounded) inputs: matrix-vector products (m == 1 or n == 1, the
 * no-packing GEMV path) and the packed GEMM, over row-major, transposed and
 * narrowed operands and batches; sizes that are not multiples of any
 * register block (1, 3, 17, 255, 1023), k = 1, and 2048^3; f32, f64, f16
 * and bf16 (f16/bf16 to within one output rounding plus f32 summation
 * error); every SIMD level this CPU has (scalar, AVX2, AVX-512, which
 * each have their own micro-kernels); 1 and 2 threads bit-identical. */
#include "cpu/memory/cpu_cache.h"
#include "cpu/vmath/vmath.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53 * 2 - 1;
}

static wk_tensor *operand(int64_t batch, int64_t rows, int64_t cols, int variant, wk_dtype dt) {
    return tu_matrix_operand(batch, rows, cols, variant, dt, urand);
}

static void check(int64_t batch, int64_t m, int64_t k, int64_t n, int va, int vb, wk_dtype dt) {
    wk_tensor *a = operand(batch, m, k, va, dt), *b = operand(batch, k, n, vb, dt);
    wk_tensor *c = TU_OK(wk_matmul(a, b));
    double *A = malloc(sizeof(double) * (size_t)(batch * m * k)), *B = malloc(sizeof(double) * (size_t)(batch * k * n));
    double *C = malloc(sizeof(double) * (size_t)(batch * m * n));
    TU_STATUS_OK(wk_to_host_f64(a, A, (size_t)(batch * m * k)));
    TU_STATUS_OK(wk_to_host_f64(b, B, (size_t)(batch * k * n)));
    TU_STATUS_OK(wk_to_host_f64(c, C, (size_t)(batch * m * n)));
    /* inputs are in [-1, 1): f32 summation error grows ~k * 2^-24; narrow
     * floats also round the result once (2^-8 bf16, 2^-11 f16, relative) */
    double tol = (dt == WK_F64 ? 1e-13 : 2e-6) * (double)k;
    double rel = dt == WK_BF16 ? 0x1p-8 : dt == WK_F16 ? 0x1p-11 : 0;
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += A[(q * m + i) * k + p] * B[(q * k + p) * n + j];
                double g = C[(q * m + i) * n + j];
                if (fabs(g - s) > tol + rel * fabs(s)) {
                    fprintf(stderr, "%s batch %lld m %lld k %lld n %lld va %d vb %d at (%lld,%lld,%lld): %g vs %g\n",
                            wk_dtype_name(dt), (long long)batch, (long long)m, (long long)k, (long long)n, va, vb,
                            (long long)q, (long long)i, (long long)j, g, s);
                    fail();
                }
            }
    free(A); free(B); free(C);
    wk_tensor_free(a); wk_tensor_free(b); wk_tensor_free(c);
}

static void test_gemv_and_gemm(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{1, 300, 700}, {1, 1000, 33}, {700, 300, 1}, {45, 1000, 1}, {1, 17, 2000},
                                 {1, 1, 1000}, {1000, 1, 1}, {37, 129, 65}, {6, 256, 32}};
    wk_dtype dts[2] = {WK_F32, WK_F64};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int va = 0; va < 3; va++)
            for (int vb = 0; vb < 3; vb++)
                for (int d = 0; d < 2; d++)
                    check(s % 3 == 0 ? 2 : 1, shapes[s][0], shapes[s][1], shapes[s][2], va, vb, dts[d]);
}

/* Large enough to cross the thread threshold: 1 and 2 threads agree bit for bit. */
static void test_gemv_threads(void **state) {
    (void)state;
    wk_tensor *x = operand(1, 1, 4096, 0, WK_F32), *w = operand(1, 4096, 1024, 1, WK_F32);
    wk_set_num_threads(1);
    wk_tensor *c1 = TU_OK(wk_matmul(x, w));
    wk_set_num_threads(2);
    wk_tensor *c2 = TU_OK(wk_matmul(x, w));
    assert_true(tu_max_abs_diff(c1, c2) == 0.0);
    wk_tensor_free(x); wk_tensor_free(w); wk_tensor_free(c1); wk_tensor_free(c2);
}

/* Runs fn at every SIMD level this CPU supports, then restores the default. */
static void each_level(void (*fn)(void)) {
    for (int level = WK_VMATH_SCALAR; level <= wk__vmath_max_level(); level++) {
        assert_int_equal(wk__vmath_set_level(level), 0);
        fn();
    }
    wk__vmath_set_level(-1);
}

/* Sizes off every register block (MR 4/6/8, NR 8/16/32), k = 1, and k long
 * enough for several k slices; all four float dtypes; transposed and
 * narrowed operands. */
static void odd_shapes(void) {
    const int64_t shapes[][3] = {{3, 17, 5},  {17, 1, 33},   {255, 3, 17}, {3, 255, 255}, {17, 1023, 3},
                                 {1023, 17, 3}, {2, 1023, 255}, {33, 700, 65}, {255, 255, 255},
                                 {1, 255, 1023}, {1023, 255, 1}};
    wk_dtype dts[4] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 4; d++)
            check(1, shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3), (int)((s + d) % 3), dts[d]);
}
static void test_odd_shapes_all_levels(void **state) {
    (void)state;
    each_level(odd_shapes);
}

/* f16 / bf16 through every path (GEMV-sized, blocked, batched). */
static void test_narrow_floats(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{1, 300, 70}, {70, 300, 1}, {64, 64, 64}, {31, 129, 47}, {128, 576, 96}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int v = 0; v < 3; v++) {
            check(s % 2 ? 2 : 1, shapes[s][0], shapes[s][1], shapes[s][2], v, 2 - v, WK_BF16);
            check(s % 2 ? 2 : 1, shapes[s][0], shapes[s][1], shapes[s][2], v, (v + 1) % 3, WK_F16);
        }
}

/* 1 and 2 threads give the same bits for the blocked GEMM: row split, the
 * column-strip split of short M, and k long enough for several slices. */
static void test_gemm_threads(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{300, 1000, 200}, {16, 900, 2000}, {256, 2304, 196}};
    wk_dtype dts[3] = {WK_F32, WK_F64, WK_BF16};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++) {
            wk_tensor *a = operand(1, shapes[s][0], shapes[s][1], (int)s % 2, dts[d]);
            wk_tensor *b = operand(1, shapes[s][1], shapes[s][2], 0, dts[d]);
            wk_set_num_threads(1);
            wk_tensor *c1 = TU_OK(wk_matmul(a, b));
            wk_set_num_threads(2);
            wk_tensor *c2 = TU_OK(wk_matmul(a, b));
            assert_true(tu_max_abs_diff(c1, c2) == 0.0);
            wk_tensor_free(a); wk_tensor_free(b); wk_tensor_free(c1); wk_tensor_free(c2);
        }
}

/* 2048^3 f32: 512 sampled outputs against the double reference. */
static void test_large_2048(void **state) {
    (void)state;
    const int64_t N = 2048;
    wk_tensor *a = operand(1, N, N, 0, WK_F32), *b = operand(1, N, N, 1, WK_F32);
    wk_tensor *c = TU_OK(wk_matmul(a, b));
    float *A = malloc(sizeof(float) * (size_t)(N * N)), *B = malloc(sizeof(float) * (size_t)(N * N));
    float *C = malloc(sizeof(float) * (size_t)(N * N));
    TU_STATUS_OK(wk_to_host_f32(a, A, (size_t)(N * N)));
    TU_STATUS_OK(wk_to_host_f32(b, B, (size_t)(N * N)));
    TU_STATUS_OK(wk_to_host_f32(c, C, (size_t)(N * N)));
    for (int t = 0; t < 512; t++) {
        int64_t i = (int64_t)((urand() + 1) / 2 * N), j = (int64_t)((urand() + 1) / 2 * N);
        if (t == 0) i = j = 0;
        if (t == 1) i = j = N - 1;
        double s = 0;
        for (int64_t p = 0; p < N; p++) s += (double)A[i * N + p] * (double)B[p * N + j];
        if (fabs(C[i * N + j] - s) > 2e-6 * (double)N) {
            fprintf(stderr, "2048^3 at (%lld,%lld): %g vs %g\n", (long long)i, (long long)j, C[i * N + j], s);
            fail();
        }
    }
    free(A); free(B); free(C);
    wk_tensor_free(a); wk_tensor_free(b); wk_tensor_free(c);
}

/* Block sizes derived from the cache sizes stay within the kernels' rules:
 * kc a multiple of 8, mc of MR, nc of NR, all positive and bounded. */
static void test_blocking(void **state) {
    (void)state;
    const wk_cpu_caches *c = wk__cpu_caches();
    assert_true(c->l1d >= (16 << 10) && c->l2 >= (128 << 10) && c->l3_per_core >= c->l2);
    const int64_t tiles[][3] = {{8, 32, 4}, {8, 16, 8}, {6, 16, 4}, {6, 8, 8}, {4, 16, 4}, {4, 8, 8}};
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        int64_t kc, mc, nc, mr = tiles[i][0], nr = tiles[i][1];
        wk__gemm_blocking(mr, nr, tiles[i][2], &kc, &mc, &nc);
        assert_true(kc >= 64 && kc <= 1024 && kc % 8 == 0);
        assert_true(mc >= mr && mc % mr == 0 && mc <= 4096);
        assert_true(nc >= nr && nc % nr == 0 && nc <= 8192);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocking),
        cmocka_unit_test(test_gemv_and_gemm),
        cmocka_unit_test(test_gemv_threads),
        cmocka_unit_test(test_odd_shapes_all_levels),
        cmocka_unit_test(test_narrow_floats),
        cmocka_unit_test(test_gemm_threads),
        cmocka_unit_test(test_large_2048),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
