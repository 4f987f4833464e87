/* wk__prim_qmatmul_multi (ops/prim_qmatmul.h, the CPU entry
 * cpu/quantized/qmatmul_multi.c) and the layer kit's
 * wk__linear_multi_forward: one x times several weights equals wk_cat of
 * the separate wk_qmatmul results BIT FOR BIT, for block and f16 / bf16
 * weights, decode (M < 16: one region over all rows) and prefill row counts
 * (per-weight panel GEMMs), f32 / f16 / strided x, row-strided weights, at
 * every SIMD level the CPU has (AVX-512 with and without VNNI), 1 and 2
 * threads; the kit's fallbacks (biases, f32 weights, tracked x); the
 * argument errors. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/quantized/qdot.h"
#include "cpu/vmath/vmath.h"
#include "nn/layers.h"
#include "ops/prim_qmatmul.h"
#include "testutil.h"
#include "wick/autograd.h"
#include "wick/nn.h"
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53 * 2 - 1;
}

/* An (n, k) weight of dtype dt from random floats; rows_off > 0: a narrow
 * of a taller one (rows at an offset). */
static wk_tensor *make_w(wk_dtype dt, int64_t n, int64_t k, int64_t rows_off) {
    int64_t rows = n + rows_off;
    float *h = malloc(sizeof(float) * (size_t)(rows * k));
    for (int64_t i = 0; i < rows * k; i++) h[i] = (float)urand();
    wk_tensor *f = TU_OK(wk_from_host(h, sizeof(float) * (size_t)(rows * k), (int64_t[]){rows, k}, 2, WK_F32, wk_cpu()));
    free(h);
    wk_tensor *w = TU_OK(wk_to_dtype(f, dt));
    wk_tensor_free(f);
    if (!rows_off) return w;
    wk_tensor *v = TU_OK(wk_narrow(w, 0, rows_off, n));
    wk_tensor_free(w);
    return v;
}

/* x (m, k): 0 plain f32, 1 f16, 2 a transposed f32 view */
static wk_tensor *make_x(int64_t m, int64_t k, int kind) {
    int64_t r = kind == 2 ? k : m, c = kind == 2 ? m : k;
    float *h = malloc(sizeof(float) * (size_t)(r * c));
    for (int64_t i = 0; i < r * c; i++) h[i] = (float)urand();
    wk_tensor *x = TU_OK(wk_from_host(h, sizeof(float) * (size_t)(r * c), (int64_t[]){r, c}, 2, WK_F32, wk_cpu()));
    free(h);
    if (kind == 0) return x;
    wk_tensor *y = kind == 1 ? TU_OK(wk_to_dtype(x, WK_F16)) : TU_OK(wk_transpose(x, 0, 1));
    wk_tensor_free(x);
    return y;
}

/* multi == cat of the separate products, bit for bit */
static void same_as_parts(const wk_tensor *x, wk_tensor *const *ws, int nw) {
    wk_tensor *parts[WK__QMM_MULTI_MAX];
    for (int i = 0; i < nw; i++) parts[i] = TU_OK(wk_qmatmul(x, ws[i]));
    wk_tensor *ref = TU_OK(wk_cat(parts, nw, 1));
    wk_tensor *y = TU_OK(wk__prim_qmatmul_multi(x, (const wk_tensor *const *)ws, nw));
    tu_assert_shape(y, wk_shape(ref), 2);
    assert_int_equal(wk_tensor_dtype(y), wk_tensor_dtype(ref));
    size_t nb = wk_dtype_size(wk_tensor_dtype(y)) * (size_t)wk_numel(y);
    void *a = malloc(nb ? nb : 1), *b = malloc(nb ? nb : 1);
    TU_STATUS_OK(wk_to_host(y, a, nb));
    TU_STATUS_OK(wk_to_host(ref, b, nb));
    assert_memory_equal(a, b, nb);
    free(a);
    free(b);
    for (int i = 0; i < nw; i++) wk_tensor_free(parts[i]);
    wk_tensor_free(ref);
    wk_tensor_free(y);
}

static void all_cases(void) {
    static const wk_dtype dts[] = {WK_Q4_0, WK_Q4_1, WK_Q8_0, WK_Q5_1, WK_IQ4_NL, WK_Q4_K,
                                   WK_Q6_K, WK_IQ4_XS, WK_F16, WK_BF16};
    static const int64_t ms[] = {1, 3, 9, 16, 17};
    /* 300 rows x 512: above the threshold of a parallel region at M = 1 */
    static const int64_t ns[3] = {192, 37, 71};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        wk_tensor *ws[3];
        for (int i = 0; i < 3; i++) ws[i] = make_w(dts[d], ns[i], 512, i == 1 ? 5 : 0);
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int kind = 0; kind < 3; kind++) {
                if (kind == 1 && (dts[d] == WK_F16 || dts[d] == WK_BF16)) continue; /* half w takes f32 x only in the kit */
                wk_tensor *x = make_x(ms[mi], 512, kind);
                for (int t = 1; t <= 2; t++) {
                    TU_STATUS_OK(wk_set_num_threads(t));
                    for (int nw = 1; nw <= 3; nw++) same_as_parts(x, ws, nw);
                }
                wk_tensor_free(x);
            }
        for (int i = 0; i < 3; i++) wk_tensor_free(ws[i]);
    }
}

static void test_multi_all_levels(void **state) {
    (void)state;
    for (int level = WK_VMATH_SCALAR; level <= wk__vmath_max_level(); level++) {
        assert_int_equal(wk__vmath_set_level(level), 0);
        all_cases();
        if (level == WK_VMATH_AVX512 && wk__cpu_has_avx512vnni()) {
            wk__qmm_force(WK_QMM_NO_VNNI);
            all_cases();
            wk__qmm_force(WK_QMM_AUTO);
        }
    }
    wk__vmath_set_level(-1);
    TU_STATUS_OK(wk_set_num_threads(2));
}

/* The kit: the one-product path, and the fallbacks (a bias, f32 weights,
 * a tracked x) give the cat of the separate forwards. */
static void kit_case(const wk_linear *a, const wk_linear *b, const wk_tensor *x) {
    const wk_linear *ls[2] = {a, b};
    /* one backend call only where every condition holds */
    bool one = !wk_is_tracked(x) && !a->bias && !b->bias && wk_tensor_dtype(a->weight) == wk_tensor_dtype(b->weight) &&
               wk_tensor_dtype(a->weight) != WK_F32;
    assert_int_equal(wk__linear_multi_is_one(ls, 2, x), one);
    wk_tensor *p[2] = {TU_OK(wk_linear_forward(a, x)), TU_OK(wk_linear_forward(b, x))};
    wk_tensor *ref = TU_OK(wk_cat(p, 2, 1));
    wk_tensor *y = TU_OK(wk__linear_multi_forward(ls, 2, x));
    tu_assert_shape(y, wk_shape(ref), 2);
    assert_true(tu_max_abs_diff(y, ref) == 0);
    wk_tensor_free(p[0]);
    wk_tensor_free(p[1]);
    wk_tensor_free(ref);
    wk_tensor_free(y);
}

static void test_layer_kit(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = make_x(2, 256, 0);
    wk_linear qa = {.weight = make_w(WK_Q4_K, 40, 256, 0)}, qb = {.weight = make_w(WK_Q4_K, 24, 256, 0)};
    kit_case(&qa, &qb, x);
    wk_linear biased = {.weight = make_w(WK_Q4_K, 24, 256, 0), .bias = make_x(1, 24, 0)};
    wk_tensor *bias1 = TU_OK(wk_reshape(biased.bias, (int64_t[]){24}, 1));
    biased.bias = bias1;
    kit_case(&qa, &biased, x);
    wk_linear fa = {.weight = make_w(WK_F32, 40, 256, 0)}, fb = {.weight = make_w(WK_F32, 8, 256, 0)};
    kit_case(&fa, &fb, x);
    wk_linear mixed = {.weight = make_w(WK_Q8_0, 8, 256, 0)};
    kit_case(&qa, &mixed, x); /* two dtypes: separate products */
    wk_tensor *xt = make_x(2, 256, 0);
    TU_STATUS_OK(wk_requires_grad(xt, true));
    kit_case(&qa, &qb, xt);
    /* a tracked x keeps its graph through the fallback */
    const wk_linear *ls[2] = {&qa, &qb};
    wk_tensor *y = TU_OK(wk__linear_multi_forward(ls, 2, xt));
    assert_true(wk_is_tracked(y));
    wk_scope_end();
}

static void test_errors(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = make_x(2, 64, 0), *x32 = make_x(2, 32, 0);
    wk_tensor *w1 = make_w(WK_Q4_0, 8, 64, 0), *w2 = make_w(WK_Q8_0, 8, 64, 0), *wf = make_w(WK_F32, 8, 64, 0);
    const wk_tensor *ok[9] = {w1, w1, w1, w1, w1, w1, w1, w1, w1};
    TU_FAILS(wk__prim_qmatmul_multi(x, NULL, 2), WK_ERR_ARG);
    TU_FAILS(wk__prim_qmatmul_multi(x, ok, 0), WK_ERR_ARG);
    TU_FAILS(wk__prim_qmatmul_multi(x, ok, 9), WK_ERR_ARG);
    TU_FAILS(wk__prim_qmatmul_multi(x, (const wk_tensor *[]){w1, w2}, 2), WK_ERR_DTYPE);
    TU_FAILS(wk__prim_qmatmul_multi(x, (const wk_tensor *[]){w1, wf}, 2), WK_ERR_DTYPE);
    TU_FAILS(wk__prim_qmatmul_multi(x, (const wk_tensor *[]){w1, NULL}, 2), WK_ERR_ARG);
    TU_FAILS(wk__prim_qmatmul_multi(NULL, ok, 2), WK_ERR_ARG);
    TU_FAILS(wk__prim_qmatmul_multi(x32, ok, 2), WK_ERR_SHAPE);
    wk_tensor *y = TU_OK(wk__prim_qmatmul_multi(x, ok, 8)); /* the most */
    assert_int_equal(wk_shape(y)[1], 64);
    wk_tensor *x0 = TU_OK(wk_narrow(x, 0, 0, 0));
    assert_int_equal(wk_shape(TU_OK(wk__prim_qmatmul_multi(x0, ok, 2)))[0], 0);
    wk_linear l1 = {.weight = w1}, none = {0};
    TU_FAILS(wk__linear_multi_forward((const wk_linear *[]){&l1, &none}, 2, x), WK_ERR_ARG);
    TU_FAILS(wk__linear_multi_forward((const wk_linear *[]){&l1, &l1}, 2, NULL), WK_ERR_ARG);
    TU_FAILS(wk__linear_multi_forward(NULL, 2, x), WK_ERR_ARG);
    TU_FAILS(wk__linear_multi_forward((const wk_linear *[]){&l1}, 0, x), WK_ERR_ARG);
    TU_FAILS(wk__linear_multi_forward((const wk_linear *[]){&l1, &l1}, 2, x32), WK_ERR_SHAPE);
    wk_scope_end();
}

/* ---- a CPU backend without the entry: the composite (qmatmul per weight,
 * then a cat) gives the same bytes ---- */

static wk_backend g_tab;
static wk_backend_desc g_desc;
static wk_device g_dev;
static wk_device *no_multi_open(int ordinal) { return ordinal == 0 ? &g_dev : NULL; }
static int no_multi_count(void) { return 1; }

static void test_composite_without_entry(void **state) {
    (void)state;
    g_tab = wk__cpu_backend;
    g_tab.name = "cpu-no-qmatmul-multi";
    g_tab.qmatmul_multi = NULL;
    g_desc = (wk_backend_desc){.name = g_tab.name, .kind = WK_DEVICE_CPU, .ops = &g_tab, .open = no_multi_open,
                               .device_count = no_multi_count};
    /* a CPU-kind device (host buffers) sharing the CPU's private state */
    g_dev = (wk_device){.kind = WK_DEVICE_CPU, .ordinal = 0, .instance = 1001, .be = &g_tab, .desc = &g_desc,
                        .name = "cpu-no-qmatmul-multi", .seed = 0, .priv = wk_cpu()->priv};
    assert_int_equal(wk__backend_register(&g_desc), WK_OK);
    wk_scope_begin();
    wk_tensor *x = make_x(3, 256, 0);
    wk_tensor *ws[2] = {make_w(WK_Q4_K, 40, 256, 0), make_w(WK_Q4_K, 24, 256, 0)};
    wk_tensor *y = TU_OK(wk__prim_qmatmul_multi(x, (const wk_tensor *const *)ws, 2));
    wk_tensor *xo = TU_OK(wk_to_device(x, &g_dev));
    wk_tensor *wo[2] = {TU_OK(wk_to_device(ws[0], &g_dev)), TU_OK(wk_to_device(ws[1], &g_dev))};
    wk_tensor *yo = TU_OK(wk__prim_qmatmul_multi(xo, (const wk_tensor *const *)wo, 2));
    assert_true(wk_tensor_device(yo) == &g_dev);
    wk_linear la = {.weight = wo[0]}, lb = {.weight = wo[1]}, ca = {.weight = ws[0]}, cb = {.weight = ws[1]};
    assert_false(wk__linear_multi_is_one((const wk_linear *[]){&la, &lb}, 2, xo)); /* no entry */
    assert_true(wk__linear_multi_is_one((const wk_linear *[]){&ca, &cb}, 2, x));
    assert_true(tu_max_abs_diff(y, TU_OK(wk_to_device(yo, wk_cpu()))) == 0);
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_all_levels),
        cmocka_unit_test(test_layer_kit),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_composite_without_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
