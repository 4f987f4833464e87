/* The AVX512-BF16 GEMM kernel (src/cpu/gemm/gemm_bf16_avx512bf16.c), called
 * directly: C (f32) = A @ B for bf16 A, B read through arbitrary strides,
 * against a double-precision reference from the same bf16 values. Both inner
 * products are covered (WICK_BF16_KERNEL=dp: vdpbf16ps, =fma: widen to f32 +
 * FMA). Shapes around the tile and block edges, k = 0 / 1 / odd, transposed,
 * strided and broadcast (stride 0) operands, NaN/Inf staying in their own
 * row/column (padding never mixes them in), 1 vs 2 threads bit-identical, and
 * a smoke check of the public bf16 matmul. Skipped on CPUs without
 * AVX512-BF16. */
#include "testutil.h"

#include "base/env.h"
#include "cpu/gemm/gemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t to_bf16(float f) { /* round to nearest even (finite inputs) */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static double from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) { /* [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static uint16_t *rand_buf(int64_t count) {
    uint16_t *p = malloc(sizeof(uint16_t) * (size_t)(count > 0 ? count : 1));
    assert_non_null(p);
    for (int64_t i = 0; i < count; i++) p[i] = to_bf16((float)(urand() * 4.0));
    return p;
}

/* Run the kernel on A (m x k at a[i*ars + p*acs]) and B (k x n at
 * b[p*brs + j*bcs]) and compare with the double reference: |C - ref| within
 * the f32 summation error of sum |products|. */
static void check(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t ars, int64_t acs, const uint16_t *b,
                  int64_t brs, int64_t bcs, const char *what) {
    float *c = malloc(sizeof(float) * (size_t)(m * n > 0 ? m * n : 1));
    assert_non_null(c);
    for (int64_t i = 0; i < m * n; i++) c[i] = NAN; /* overwritten, never read */
    assert_true(wk__gemm_bf16_avx512bf16(m, n, k, a, ars, acs, b, brs, bcs, c));
    double tol = 2e-6 * sqrt((double)k + 1.0);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int64_t p = 0; p < k; p++) {
                double t = from_bf16(a[i * ars + p * acs]) * from_bf16(b[p * brs + j * bcs]);
                s += t;
                sa += fabs(t);
            }
            double got = c[i * n + j];
            if (!(fabs(got - s) <= tol * sa + 1e-30)) {
                fprintf(stderr, "%s: m=%lld n=%lld k=%lld strides a(%lld,%lld) b(%lld,%lld): C[%lld][%lld] = %.9g, "
                                "expected %.9g (sum|t| %.3g)\n",
                        what, (long long)m, (long long)n, (long long)k, (long long)ars, (long long)acs,
                        (long long)brs, (long long)bcs, (long long)i, (long long)j, got, s, sa);
                free(c);
                fail();
            }
        }
    free(c);
}

/* Row-major, transposed A, transposed B, both. */
static void check_layouts(int64_t m, int64_t n, int64_t k, const char *what) {
    uint16_t *a = rand_buf(m * k), *b = rand_buf(k * n);
    check(m, n, k, a, k, 1, b, n, 1, what);
    check(m, n, k, a, 1, m, b, n, 1, what);
    check(m, n, k, a, k, 1, b, 1, k, what);
    check(m, n, k, a, 1, m, b, 1, k, what);
    free(a);
    free(b);
}

static bool g_has;
static int setup(void **state) {
    (void)state;
    g_has = wk__cpu_has_avx512bf16();
    return 0;
}
#define REQUIRE_BF16()                                                                                  \
    do {                                                                                                \
        if (!g_has) {                                                                                   \
            fprintf(stderr, "skipped: this CPU has no AVX512-BF16 (wk__cpu_has_avx512bf16() false)\n"); \
            skip();                                                                                     \
        }                                                                                               \
    } while (0)

static const char *const g_kernels[2] = {"fma", "dp"};

static void test_detect_is_stable(void **state) {
    (void)state;
    assert_int_equal(wk__cpu_has_avx512bf16(), wk__cpu_has_avx512bf16());
    assert_int_equal(wk__cpu_has_avx512bf16(), g_has);
}

static void test_shapes(void **state) {
    (void)state;
    REQUIRE_BF16();
    static const int64_t S[] = {1, 2, 3, 17, 31, 32, 33, 255, 256, 1023};
    for (int kern = 0; kern < 2; kern++) {
        setenv("WICK_BF16_KERNEL", g_kernels[kern], 1);
        wk__env_reload(); /* read once: re-read it */
        for (int im = 0; im < 10; im++)
            for (int in = 0; in < 10; in++)
                for (int ik = 0; ik < 10; ik++) {
                    int64_t m = S[im], n = S[in], k = S[ik];
                    /* the full grid for small products, a sparse third of it above */
                    if (m * n * k > 300000 && (im + in + ik + kern) % 3) continue;
                    if (m * n * k > 5000000) continue;
                    uint16_t *a = rand_buf(m * k), *b = rand_buf(k * n);
                    int v = (im + 2 * in + ik) & 3; /* layout by position in the grid */
                    check(m, n, k, a, v & 1 ? 1 : k, v & 1 ? m : 1, b, v & 2 ? 1 : n, v & 2 ? k : 1,
                          g_kernels[kern]);
                    free(a);
                    free(b);
                }
    }
    unsetenv("WICK_BF16_KERNEL");
    wk__env_reload(); /* read once: re-read it */
}

static void test_layouts_and_blocks(void **state) {
    (void)state;
    REQUIRE_BF16();
    for (int kern = 0; kern < 2; kern++) {
        setenv("WICK_BF16_KERNEL", g_kernels[kern], 1);
        wk__env_reload(); /* read once: re-read it */
        check_layouts(1, 1, 1, g_kernels[kern]);
        check_layouts(5, 7, 1, g_kernels[kern]);        /* k == 1 */
        check_layouts(13, 29, 3, g_kernels[kern]);      /* odd k */
        check_layouts(15, 33, 257, g_kernels[kern]);    /* past one FMA-path k block, odd */
        check_layouts(29, 65, 513, g_kernels[kern]);    /* past one dp-path k block, odd */
        check_layouts(700, 40, 30, g_kernels[kern]);    /* more rows than one A block */
        check_layouts(3, 2100, 20, g_kernels[kern]);    /* more columns than one B panel */
        check_layouts(1, 300, 600, g_kernels[kern]);    /* row vector @ matrix */
        check_layouts(300, 1, 600, g_kernels[kern]);    /* matrix @ column vector */
    }
    unsetenv("WICK_BF16_KERNEL");
    wk__env_reload(); /* read once: re-read it */
}

static void test_k_zero(void **state) {
    (void)state;
    REQUIRE_BF16();
    uint16_t dummy = 0x3F80;
    float c[6];
    for (int i = 0; i < 6; i++) c[i] = NAN;
    assert_true(wk__gemm_bf16_avx512bf16(2, 3, 0, &dummy, 0, 1, &dummy, 3, 1, c));
    for (int i = 0; i < 6; i++) {
        assert_true(c[i] == 0.0f);
        assert_false(signbit(c[i]));
    }
    /* m or n == 0: nothing written, success */
    assert_true(wk__gemm_bf16_avx512bf16(0, 3, 4, &dummy, 0, 0, &dummy, 0, 0, c));
    assert_true(wk__gemm_bf16_avx512bf16(3, 0, 4, &dummy, 0, 0, &dummy, 0, 0, c));
}

/* Narrowed views with strides inside bigger buffers, element strides of 2 and
 * 3, and stride 0 (broadcast rows / columns). */
static void test_strides(void **state) {
    (void)state;
    REQUIRE_BF16();
    const int64_t R = 80, C = 90; /* parent buffers R x C, row-major */
    uint16_t *pa = rand_buf(R * C * 3), *pb = rand_buf(R * C * 3);
    for (int kern = 0; kern < 2; kern++) {
        const char *w = g_kernels[kern];
        setenv("WICK_BF16_KERNEL", w, 1);
        wk__env_reload(); /* read once: re-read it */
        /* narrowed: A = parent[5:5+37, 7:7+41], B = parent[2:2+41, 3:3+45] */
        check(37, 45, 41, pa + 5 * C + 7, C, 1, pb + 2 * C + 3, C, 1, w);
        /* narrowed and transposed */
        check(37, 45, 41, pa + 5 * C + 7, 1, C, pb + 2 * C + 3, 1, C, w);
        /* every other column / row (stride 2), odd sizes */
        check(33, 31, 35, pa + 1, 2 * C, 2, pb + 3, 2 * C, 2, w);
        check(33, 31, 35, pa + 1, 2, 2 * C, pb + 3, 2, 2 * C, w);
        /* stride 3 in both directions of both operands */
        check(19, 40, 29, pa, 3 * C, 3, pb, 3, 3 * C, w);
        /* stride 0: every row of A the same; every column of B the same */
        check(20, 35, 50, pa, 0, 1, pb, 35, 1, w);
        check(20, 35, 50, pa, 50, 1, pb, 1, 0, w);
        /* stride 0 along k: A[i][p] = A[i][0] */
        check(20, 35, 50, pa, 1, 0, pb, 35, 1, w);
    }
    unsetenv("WICK_BF16_KERNEL");
    wk__env_reload(); /* read once: re-read it */
    free(pa);
    free(pb);
}

/* A NaN / Inf poisons exactly its own row (from A) or column (from B); zero
 * padding of partial tiles and of odd k must never multiply it in elsewhere. */
static void test_nonfinite_stay_local(void **state) {
    (void)state;
    REQUIRE_BF16();
    const int64_t m = 17, n = 35, k = 7;
    for (int kern = 0; kern < 2; kern++) {
        setenv("WICK_BF16_KERNEL", g_kernels[kern], 1);
        wk__env_reload(); /* read once: re-read it */
        uint16_t a[17 * 7], b[7 * 35];
        for (int64_t i = 0; i < m * k; i++) a[i] = to_bf16(1.0f + (float)(i % 5));
        for (int64_t i = 0; i < k * n; i++) b[i] = to_bf16(0.5f + (float)(i % 3));
        a[16 * k + k - 1] = 0x7FC0;       /* NaN at the last row, last (odd) k */
        b[(k - 1) * n + n - 1] = 0x7F80;  /* +Inf at the last column, last k */
        float c[17 * 35];
        assert_true(wk__gemm_bf16_avx512bf16(m, n, k, a, k, 1, b, n, 1, c));
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float v = c[i * n + j];
                if (i == m - 1)
                    assert_true(isnan(v));
                else if (j == n - 1)
                    assert_true(isinf(v) && v > 0);
                else
                    assert_true(isfinite(v));
            }
    }
    unsetenv("WICK_BF16_KERNEL");
    wk__env_reload(); /* read once: re-read it */
}

/* 1 and 2 threads give bit-identical C, with the row split, the column split
 * and several k blocks. */
static void test_threads_bit_identical(void **state) {
    (void)state;
    REQUIRE_BF16();
    static const int64_t shapes[][3] = {{300, 200, 700}, {20, 1500, 600}, {3, 2100, 300}, {257, 33, 1100}};
    int saved = wk_num_threads();
    for (int kern = 0; kern < 2; kern++) {
        setenv("WICK_BF16_KERNEL", g_kernels[kern], 1);
        wk__env_reload(); /* read once: re-read it */
        for (int s = 0; s < 4; s++) {
            int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            uint16_t *a = rand_buf(m * k), *b = rand_buf(k * n);
            float *c1 = malloc(sizeof(float) * (size_t)(m * n)), *c2 = malloc(sizeof(float) * (size_t)(m * n));
            assert_non_null(c1);
            assert_non_null(c2);
            for (int tr = 0; tr < 2; tr++) {
                int64_t acs = tr ? m : 1, ars = tr ? 1 : k;
                TU_STATUS_OK(wk_set_num_threads(1));
                assert_true(wk__gemm_bf16_avx512bf16(m, n, k, a, ars, acs, b, n, 1, c1));
                TU_STATUS_OK(wk_set_num_threads(2));
                assert_true(wk__gemm_bf16_avx512bf16(m, n, k, a, ars, acs, b, n, 1, c2));
                assert_memory_equal(c1, c2, sizeof(float) * (size_t)(m * n));
            }
            if (s == 0) check(m, n, k, a, k, 1, b, n, 1, "threads=2");
            free(a);
            free(b);
            free(c1);
            free(c2);
        }
    }
    unsetenv("WICK_BF16_KERNEL");
    wk__env_reload(); /* read once: re-read it */
    TU_STATUS_OK(wk_set_num_threads(saved));
}

/* The public bf16 matmul still works (small integers: exact in bf16). */
static void test_public_matmul_bf16(void **state) {
    (void)state;
    const int64_t m = 9, k = 13, n = 11;
    double av[9 * 13], bv[13 * 11], ref[9 * 11];
    for (int64_t i = 0; i < m * k; i++) av[i] = (double)((i * 7) % 5) - 2.0;
    for (int64_t i = 0; i < k * n; i++) bv[i] = (double)((i * 3) % 5) - 2.0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += av[i * k + p] * bv[p * n + j];
            ref[i * n + j] = s;
        }
    int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
    wk_tensor *a = tu_make(av, sa, 2, WK_BF16), *b = tu_make(bv, sb, 2, WK_BF16);
    wk_tensor *c = TU_OK(wk_matmul(a, b));
    tu_assert_shape(c, sc, 2);
    assert_int_equal(wk_tensor_dtype(c), WK_BF16);
    tu_assert_close(c, ref, m * n, 0, 0);
    wk_tensor_free(c);
    wk_tensor_free(a);
    wk_tensor_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_is_stable),
        cmocka_unit_test(test_k_zero),
        cmocka_unit_test(test_layouts_and_blocks),
        cmocka_unit_test(test_strides),
        cmocka_unit_test(test_nonfinite_stay_local),
        cmocka_unit_test(test_threads_bit_identical),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_public_matmul_bf16),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
