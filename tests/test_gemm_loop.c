/* The GEMM loop nest (src/cpu/gemm/gemm_loop.c) and its kernel contract
 * (wk_gemm_ukr, src/cpu/gemm/gemm.h), called directly:
 *  - every registered kernel pair of every SIMD level this CPU has (f32,
 *    f64, f16 and bf16 widened while packing, bf16 on vdpbf16ps) against a
 *    double reference, with its blocking shrunk (a copy of the ukr with
 *    small kc / mc / nc) so small products cross many k slices, row blocks
 *    and column panels, over row-major, transposed and strided operands;
 *  - B read in place, packed per strip and packed as a panel give the same
 *    bits, and so do 1 and 2 threads;
 *  - C is written only inside m x n (a guard after it stays untouched);
 *  - a toy block type (int8 in units of 4 k values, a scale in g->extra,
 *    a 3 x 5 tile) plugged in through the contract as a quantized type
 *    would be: exact integer results, k not a multiple of the unit;
 *  - k = 0 zeroes C; an allocation failure returns false. */
#include "testutil.h"

#include "cpu/memory/cpu_alloc.h"
#include "cpu/gemm/gemm.h"
#include "cpu/vmath/vmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand(void) { /* [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * 0x1p-53 * 2 - 1;
}

typedef enum { T_F32, T_F64, T_F16, T_BF16 } elt;
static size_t elt_size(elt t) { return t == T_F64 ? 8 : t == T_F32 ? 4 : 2; }

/* A rows x cols operand in one of three layouts (0 row-major, 1 transposed,
 * 2 strided: every other column, rows padded), its values also as doubles
 * (row-major) for the reference. */
typedef struct {
    void *p;
    int64_t rs, cs;
    double *ref;
} operand;

static operand make(elt t, int64_t rows, int64_t cols, int layout) {
    operand o = {0};
    if (layout == 0) o.rs = cols, o.cs = 1;
    else if (layout == 1) o.rs = 1, o.cs = rows;
    else o.rs = 2 * cols + 3, o.cs = 2;
    int64_t span = (rows - 1) * o.rs + (cols - 1) * o.cs + 1;
    o.p = calloc((size_t)span, elt_size(t));
    o.ref = malloc(sizeof(double) * (size_t)(rows * cols));
    assert_non_null(o.p);
    assert_non_null(o.ref);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            int64_t at = i * o.rs + j * o.cs;
            float f = (float)urand();
            double v;
            switch (t) {
            case T_F32: ((float *)o.p)[at] = f; v = f; break;
            case T_F64: v = urand(); ((double *)o.p)[at] = v; break;
            case T_F16: ((uint16_t *)o.p)[at] = wk_f32_to_f16(f); v = wk_f16_to_f32(wk_f32_to_f16(f)); break;
            case T_BF16: ((uint16_t *)o.p)[at] = wk_f32_to_bf16(f); v = wk_bf16_to_f32(wk_f32_to_bf16(f)); break;
            }
            o.ref[i * cols + j] = v;
        }
    return o;
}
static void drop(operand *o) {
    free(o->p);
    free(o->ref);
}

#define GUARD 64

/* C = A @ B through u; C has a guard of GUARD elements after m x n that
 * must stay as it was. Returns C (caller frees). */
static void *run(const wk_gemm_ukr *u, int64_t m, int64_t n, int64_t k, const operand *a, const operand *b) {
    size_t cs = (size_t)u->c_size, bytes = cs * (size_t)(m * n + GUARD);
    unsigned char *c = malloc(bytes);
    assert_non_null(c);
    memset(c, 0xA5, bytes);
    wk_gemm_args g = {m, n, k, a->p, a->rs, a->cs, b->p, b->rs, b->cs, c, NULL};
    assert_true(wk__gemm_run(u, &g));
    for (size_t i = cs * (size_t)(m * n); i < bytes; i++)
        if (c[i] != 0xA5) {
            fprintf(stderr, "%s: m %lld n %lld k %lld wrote past C (byte %zu)\n", u->name, (long long)m,
                    (long long)n, (long long)k, i);
            fail();
        }
    return c;
}

static void compare(const wk_gemm_ukr *u, const void *c, int64_t m, int64_t n, int64_t k, const operand *a,
                    const operand *b, double tol_per_k) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int64_t p = 0; p < k; p++) {
                double t = a->ref[i * k + p] * b->ref[p * n + j];
                s += t;
                sa += fabs(t);
            }
            double got = u->c_size == 8 ? ((const double *)c)[i * n + j] : ((const float *)c)[i * n + j];
            if (!(fabs(got - s) <= tol_per_k * (double)(k + 1) * (sa + 1e-3))) {
                fprintf(stderr, "%s: m %lld n %lld k %lld: C[%lld][%lld] = %.17g, expected %.17g\n", u->name,
                        (long long)m, (long long)n, (long long)k, (long long)i, (long long)j, got, s);
                fail();
            }
        }
}

/* One product through u in all three ways of feeding B, 1 and 2 threads:
 * correct, and the same bits every time. */
static void check_all_ways(const wk_gemm_ukr *base, elt t, int64_t m, int64_t n, int64_t k, int la, int lb,
                           bool small_blocks) {
    operand a = make(t, m, k, la), b = make(t, k, n, lb);
    wk_gemm_ukr direct = *base, strip = *base, panel = *base;
    if (small_blocks) {
        /* several k slices, row blocks and column panels in a small product */
        direct.kc = strip.kc = panel.kc = 8 * base->kq * 3;
        direct.nc = panel.nc = 3 * base->nr; /* strip keeps the type's: all of n in one panel */
    }
    direct.direct_b_max_m = INT64_MAX;            /* in place where the type can */
    strip.b_direct = panel.b_direct = NULL;       /* never in place */
    strip.mc = (m + base->mr - 1) / base->mr * base->mr; /* A in one block: per-strip packing */
    panel.mc = base->mr;                          /* many blocks: panel packing */
    size_t bytes = (size_t)(m * n) * (size_t)base->c_size;
    void *ref = NULL;
    const wk_gemm_ukr *ways[3] = {&direct, &strip, &panel};
    for (int threads = 1; threads <= 2; threads++) {
        wk_set_num_threads(threads);
        for (int w = 0; w < 3; w++) {
            void *c = run(ways[w], m, n, k, &a, &b);
            if (!ref) {
                compare(ways[w], c, m, n, k, &a, &b, t == T_F64 ? 1e-15 : 1e-7);
                ref = c;
                continue;
            }
            if (memcmp(ref, c, bytes) != 0) {
                fprintf(stderr, "%s: m %lld n %lld k %lld layouts %d/%d: way %d on %d threads differs\n", base->name,
                        (long long)m, (long long)n, (long long)k, la, lb, w, threads);
                fail();
            }
            free(c);
        }
    }
    wk_set_num_threads(1);
    free(ref);
    drop(&a);
    drop(&b);
}

/* The kernel pairs of one SIMD level. */
static int level_ukrs(int level, const wk_gemm_ukr **out) {
    int n = 0;
    if (level == WK_VMATH_SCALAR) {
        out[n++] = &wk__ukr_f32_generic, out[n++] = &wk__ukr_f64_generic;
        out[n++] = &wk__ukr_f16_generic, out[n++] = &wk__ukr_bf16_generic;
    } else if (level == WK_VMATH_AVX2) {
        out[n++] = &wk__ukr_f32_avx2, out[n++] = &wk__ukr_f64_avx2;
        out[n++] = &wk__ukr_f16_avx2, out[n++] = &wk__ukr_bf16_avx2;
    } else {
        out[n++] = &wk__ukr_f32_avx512, out[n++] = &wk__ukr_f64_avx512;
        out[n++] = &wk__ukr_f16_avx512, out[n++] = &wk__ukr_bf16_avx512;
        if (wk__cpu_has_avx512bf16()) out[n++] = &wk__ukr_bf16dp_avx512bf16;
    }
    return n;
}
static elt ukr_elt(const wk_gemm_ukr *u, int i) {
    (void)u;
    return i == 0 ? T_F32 : i == 1 ? T_F64 : i == 2 ? T_F16 : T_BF16;
}

static void test_every_kernel_every_way(void **state) {
    (void)state;
    /* (m, n, k): short M (2 row strips at most for MR >= 4), a few row
     * strips under many strips, odd k (the pair type pads), one column */
    const int64_t shapes[][3] = {{3, 70, 50}, {13, 150, 77}, {29, 97, 1}, {40, 300, 130}, {17, 1, 33}};
    for (int level = WK_VMATH_SCALAR; level <= wk__vmath_max_level(); level++) {
        const wk_gemm_ukr *us[5];
        int nu = level_ukrs(level, us);
        for (int i = 0; i < nu; i++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                check_all_ways(us[i], ukr_elt(us[i], i), shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3),
                               (int)((s + (size_t)i) % 3), true);
        /* the type's own blocking, big enough for the threads to split it */
        for (int i = 0; i < nu; i++) check_all_ways(us[i], ukr_elt(us[i], i), 50, 1100, 700, i % 2, 0, false);
    }
}

/* ---- a toy block type through the contract: int8 values in units of 4
 * consecutive k (a_unit = b_unit = 4 bytes), C = scale * A @ B in f32 with
 * scale in g->extra, a 3 x 5 tile. A quantized type plugs in the same way
 * with real blocks; this one checks the loop nest's sizing of strips in
 * units, the rounding of kc to the unit, zero padding of a partial unit,
 * and that extra reaches the micro-kernel. ---- */
enum { TOY_MR = 3, TOY_NR = 5, TOY_KQ = 4 };

static void toy_pack_a(const wk_gemm_args *g, int64_t i0, int64_t mr, int64_t p0, int64_t kc, void *vdst) {
    int8_t *d = vdst; /* [units][MR][4] */
    const int8_t *a = g->a;
    int64_t units = (kc + TOY_KQ - 1) / TOY_KQ;
    for (int64_t q = 0; q < units; q++)
        for (int64_t r = 0; r < TOY_MR; r++)
            for (int64_t t = 0; t < TOY_KQ; t++) {
                int64_t p = q * TOY_KQ + t;
                d[(q * TOY_MR + r) * TOY_KQ + t] = r < mr && p < kc ? a[(i0 + r) * g->ars + (p0 + p) * g->acs] : 0;
            }
}
static void toy_pack_b(const wk_gemm_args *g, int64_t j0, int64_t nr, int64_t p0, int64_t kc, void *vdst) {
    int8_t *d = vdst; /* [units][NR][4] */
    const int8_t *b = g->b;
    int64_t units = (kc + TOY_KQ - 1) / TOY_KQ;
    for (int64_t q = 0; q < units; q++)
        for (int64_t j = 0; j < TOY_NR; j++)
            for (int64_t t = 0; t < TOY_KQ; t++) {
                int64_t p = q * TOY_KQ + t;
                d[(q * TOY_NR + j) * TOY_KQ + t] = j < nr && p < kc ? b[(p0 + p) * g->brs + (j0 + j) * g->bcs] : 0;
            }
}
static const float *g_toy_scale;
static void toy_micro(int64_t kc, const void *ap, const void *bp, int64_t ldb, void *vc, int64_t ldc, int64_t mr,
                      int64_t nr, bool first) {
    assert_int_equal(ldb, TOY_NR * TOY_KQ);
    const int8_t *a = ap, *b = bp;
    float *c = vc;
    int64_t units = (kc + TOY_KQ - 1) / TOY_KQ;
    for (int64_t r = 0; r < mr; r++)
        for (int64_t j = 0; j < nr; j++) {
            int32_t s = 0;
            for (int64_t q = 0; q < units; q++)
                for (int t = 0; t < TOY_KQ; t++)
                    s += a[(q * TOY_MR + r) * TOY_KQ + t] * b[(q * TOY_NR + j) * TOY_KQ + t];
            float v = (float)s * *g_toy_scale;
            c[r * ldc + j] = first ? v : c[r * ldc + j] + v;
        }
}

static void toy_case(int64_t m, int64_t n, int64_t k, int64_t kc, int64_t mc, int64_t nc, int threads) {
    int8_t *a = malloc((size_t)(m * k > 0 ? m * k : 1)), *b = malloc((size_t)(k * n > 0 ? k * n : 1));
    float *c = malloc(sizeof(float) * (size_t)(m * n + GUARD));
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    for (int64_t i = 0; i < m * k; i++) a[i] = (int8_t)(urand() * 100);
    for (int64_t i = 0; i < k * n; i++) b[i] = (int8_t)(urand() * 100);
    for (int64_t i = 0; i < m * n + GUARD; i++) c[i] = -7.0f;
    const float scale = 0.5f;
    wk_gemm_ukr toy = {.name = "toy i8x4", .mr = TOY_MR, .nr = TOY_NR, .kq = TOY_KQ, .a_unit = TOY_KQ,
                       .b_unit = TOY_KQ, .c_size = 4, .kc = kc, .mc = mc, .nc = nc,
                       .b_packed_ld = TOY_NR * TOY_KQ, .pack_a = toy_pack_a, .pack_b = toy_pack_b,
                       .micro = toy_micro};
    g_toy_scale = &scale;
    /* B stored transposed (k contiguous per column), as weight rows are */
    int8_t *bt = malloc((size_t)(k * n > 0 ? k * n : 1));
    assert_non_null(bt);
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++) bt[j * k + p] = b[p * n + j];
    wk_gemm_args g = {m, n, k, a, k, 1, bt, 1, k, c, &scale};
    wk_set_num_threads(threads);
    assert_true(wk__gemm_run(&toy, &g));
    wk_set_num_threads(1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t s = 0;
            for (int64_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
            /* every partial sum is an integer below 2^24 times 0.5: exact */
            if (c[i * n + j] != (float)s * scale) {
                fprintf(stderr, "toy m %lld n %lld k %lld kc %lld: C[%lld][%lld] = %g, expected %g\n", (long long)m,
                        (long long)n, (long long)k, (long long)kc, (long long)i, (long long)j, c[i * n + j],
                        (double)s * scale);
                fail();
            }
        }
    for (int64_t i = m * n; i < m * n + GUARD; i++) assert_true(c[i] == -7.0f);
    free(a);
    free(b);
    free(bt);
    free(c);
}

static void test_toy_block_type(void **state) {
    (void)state;
    /* k a multiple of the unit and not; kc 8 (one slice per two units) and
     * the cache default; blocks and panels smaller than the product */
    toy_case(7, 11, 32, 8, 3, 5, 1);
    toy_case(7, 11, 30, 8, 3, 5, 1);
    toy_case(10, 23, 37, 0, 0, 0, 1);
    toy_case(31, 64, 1000, 16, 6, 10, 2);
    toy_case(2, 200, 64, 8, 0, 0, 2);
    toy_case(1, 1, 3, 0, 0, 0, 1);
}

static void test_k_zero_and_empty(void **state) {
    (void)state;
    float c[6];
    for (int i = 0; i < 6; i++) c[i] = 1.0f;
    float dummy = 0;
    wk_gemm_args g = {2, 3, 0, &dummy, 0, 1, &dummy, 3, 1, c, NULL};
    assert_true(wk__gemm_run(&wk__ukr_f32_generic, &g));
    for (int i = 0; i < 6; i++) assert_true(c[i] == 0.0f);
    c[0] = 5.0f;
    wk_gemm_args e = {0, 3, 4, &dummy, 0, 0, &dummy, 0, 0, c, NULL};
    assert_true(wk__gemm_run(&wk__ukr_f32_generic, &e));
    assert_true(c[0] == 5.0f);
}

static int fail_all(size_t nbytes) {
    (void)nbytes;
    return 1;
}

static void test_oom_is_false(void **state) {
    (void)state;
    operand a = make(T_F32, 40, 50, 0), b = make(T_F32, 50, 300, 0);
    float *c = malloc(sizeof(float) * 40 * 300);
    assert_non_null(c);
    wk_gemm_args g = {40, 300, 50, a.p, a.rs, a.cs, b.p, b.rs, b.cs, c, NULL};
    wk__cpu_alloc_set_fail_hook(fail_all);
    bool ok = wk__gemm_run(&wk__ukr_f32_generic, &g);
    wk__cpu_alloc_set_fail_hook(NULL);
    assert_false(ok);
    assert_true(wk__gemm_run(&wk__ukr_f32_generic, &g));
    free(c);
    drop(&a);
    drop(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_k_zero_and_empty),
        cmocka_unit_test(test_toy_block_type),
        cmocka_unit_test(test_every_kernel_every_way),
        cmocka_unit_test(test_oom_is_false),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
