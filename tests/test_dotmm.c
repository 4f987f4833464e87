/* The dot-form product (cpu/gemm/dotmm.h): at every SIMD level, with 1 and
 * 2 threads, for k with every tail length, n not a multiple of the tile and
 * M across the tile heights, each output (a) equals bit for bit the same
 * row computed alone (M = 1) against the same weight row alone (N = 1), and
 * (b) is within f32 rounding of a double-precision dot. f32, f16 and bf16
 * weights. */
#include "tensor/tensor.h"
#include "cpu/gemm/dotmm.h"
#include "cpu/vmath/vmath.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float rnd(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static double w_at(const void *w, int64_t i, wk_dotmm_wtype wt) {
    if (wt == WK_DOTMM_F32) return ((const float *)w)[i];
    uint16_t h = ((const uint16_t *)w)[i];
    return wt == WK_DOTMM_F16 ? wk_f16_to_f32(h) : wk_bf16_to_f32(h);
}

static void check(int64_t m, int64_t n, int64_t k, wk_dotmm_wtype wt) {
    unsigned s = (unsigned)(m * 7919 + n * 131 + k * 17 + wt);
    size_t es = wt == WK_DOTMM_F32 ? 4 : 2;
    int64_t xs = k + 3, wrs = k + 5; /* row strides past k: only k is read */
    float *x = malloc(sizeof(float) * (size_t)(m * xs + 1));
    uint8_t *w = malloc(es * (size_t)(n * wrs + 1));
    float *out = malloc(sizeof(float) * (size_t)(m * n + 1)), one;
    for (int64_t i = 0; i < m * xs; i++) x[i] = rnd(&s);
    for (int64_t i = 0; i < n * wrs; i++) {
        float v = rnd(&s);
        if (wt == WK_DOTMM_F32) ((float *)w)[i] = v;
        else ((uint16_t *)w)[i] = wt == WK_DOTMM_F16 ? wk_f32_to_f16(v) : wk_f32_to_bf16(v);
    }
    wk__dotmm(m, n, k, x, xs, w, wrs, wt, out, n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const uint8_t *wj = w + (size_t)(j * wrs) * es;
            wk__dotmm(1, 1, k, x + i * xs, xs, wj, wrs, wt, &one, 1);
            if (memcmp(&one, &out[i * n + j], sizeof one) != 0)
                fail_msg("%s wt %d m %lld n %lld k %lld: (%lld, %lld) %.9g alone, %.9g in the block", wk_cpu_isa(),
                         (int)wt, (long long)m, (long long)n, (long long)k, (long long)i, (long long)j, one,
                         out[i * n + j]);
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                double t = (double)x[i * xs + p] * w_at(wj, p, wt);
                ref += t;
                mag += fabs(t);
            }
            if (fabs(out[i * n + j] - ref) > 1e-6 * (double)(k + 1) * mag + 1e-30)
                fail_msg("%s wt %d k %lld: %.9g vs %.9g", wk_cpu_isa(), (int)wt, (long long)k, out[i * n + j], ref);
        }
    free(x);
    free(w);
    free(out);
}

static void test_dotmm_invariant(void **state) {
    (void)state;
    static const int64_t ks[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 577};
    for (int level = WK_VMATH_SCALAR; level <= wk__vmath_max_level(); level++) {
        assert_int_equal(wk__vmath_set_level(level), 0);
        for (int t = 1; t <= 2; t++) {
            TU_STATUS_OK(wk_set_num_threads(t));
            for (int wt = 0; wt < 3; wt++)
                for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
                    for (int64_t m = 1; m <= 9; m += 2) check(m, 11, ks[ki], (wk_dotmm_wtype)wt);
            /* past one thread slice and one block */
            check(5, 83, 577, WK_DOTMM_F32);
            check(6, 83, 200, WK_DOTMM_F16);
        }
    }
    wk__vmath_set_level(-1);
    TU_STATUS_OK(wk_set_num_threads(2));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dotmm_invariant)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
