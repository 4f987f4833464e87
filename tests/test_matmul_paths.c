/* matmul's special paths against a naive double-precision reference:
 * matrix-vector products (m == 1 or n == 1, the no-packing GEMV path) and
 * the packed GEMM, over row-major, transposed and narrowed operands and
 * batches, f32 and f64. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53 * 2 - 1;
}

/* A (rows x cols) operand in one of three layouts: 0 row-major, 1 a
 * transposed view of a (cols x rows) tensor, 2 narrowed out of a wider one. */
static wk_tensor *operand(int64_t batch, int64_t rows, int64_t cols, int variant, wk_dtype dt) {
    int64_t s[3] = {batch, variant == 1 ? cols : rows, variant == 1 ? rows : cols + (variant == 2 ? 7 : 0)};
    int64_t n = s[0] * s[1] * s[2];
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = urand();
    wk_tensor *t = tu_make(v, s, 3, dt), *r;
    free(v);
    if (variant == 1) r = wk_transpose(t, 1, 2);
    else if (variant == 2) r = wk_narrow(t, 2, 3, cols);
    else r = wk_tensor_retain(t);
    wk_tensor_free(t);
    return TU_OK(r);
}

static void check(int64_t batch, int64_t m, int64_t k, int64_t n, int va, int vb, wk_dtype dt) {
    wk_tensor *a = operand(batch, m, k, va, dt), *b = operand(batch, k, n, vb, dt);
    wk_tensor *c = TU_OK(wk_matmul(a, b));
    double *A = malloc(sizeof(double) * (size_t)(batch * m * k)), *B = malloc(sizeof(double) * (size_t)(batch * k * n));
    double *C = malloc(sizeof(double) * (size_t)(batch * m * n));
    TU_STATUS_OK(wk_to_host_f64(a, A, (size_t)(batch * m * k)));
    TU_STATUS_OK(wk_to_host_f64(b, B, (size_t)(batch * k * n)));
    TU_STATUS_OK(wk_to_host_f64(c, C, (size_t)(batch * m * n)));
    double tol = (dt == WK_F32 ? 2e-6 : 1e-13) * (double)k;
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += A[(q * m + i) * k + p] * B[(q * k + p) * n + j];
                double g = C[(q * m + i) * n + j];
                if (fabs(g - s) > tol) {
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemv_and_gemm),
        cmocka_unit_test(test_gemv_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
