/* Gradients through the quantized-weight ops: wk_qmatmul records with
 * respect to its float input x (a block-quantized weight is frozen: no
 * gradient to it; an f16 / bf16 weight gets one), checked against the same
 * product with the dequantized f32 weight; wk_dequantize of a fake-quantized
 * tracked tensor (wk_to_dtype of a tracked float to a block dtype) passes the
 * gradient straight through to the float; wk_quantize of a tracked tensor is
 * an error naming the op. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static wk_tensor *randn(const int64_t *shape, int rank) {
    return TU_OK(wk_randn(shape, rank, 0.0, 1.0, WK_F32, wk_cpu()));
}

/* max |a - b| over all elements, both read as f32 */
static double max_diff(const wk_tensor *a, const wk_tensor *b) {
    int64_t n = wk_numel(a);
    assert_int_equal(n, wk_numel(b));
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1)), *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    assert_non_null(x);
    assert_non_null(y);
    TU_STATUS_OK(wk_to_host_f32(a, x, (size_t)n));
    TU_STATUS_OK(wk_to_host_f32(b, y, (size_t)n));
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i] - (double)y[i]));
    free(x);
    free(y);
    return m;
}

static double max_abs(const wk_tensor *a) {
    int64_t n = wk_numel(a);
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    assert_non_null(x);
    TU_STATUS_OK(wk_to_host_f32(a, x, (size_t)n));
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i]));
    free(x);
    return m;
}

/* dL/dx of qmatmul(x, w) against dL/dx of x . dequantize(w)^T, for a
 * grad_output g of the product's shape. */
static void check_qmatmul_x(const int64_t *xshape, int xrank, wk_dtype wdt) {
    const int64_t N = 5, K = xshape[xrank - 1];
    wk_tensor *x = randn(xshape, xrank);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *wf = randn((int64_t[]){N, K}, 2);
    wk_tensor *w = TU_OK(wk_dtype_is_quantized(wdt) ? wk_quantize(wf, wdt) : wk_to_dtype(wf, wdt));
    wk_tensor *y = TU_OK(wk_qmatmul(x, w));
    wk_tensor *g = randn(wk_shape(y), wk_rank(y));
    wk_backward_opts o = {.grad_output = g};
    wk_tensor *gx = NULL;
    TU_STATUS_OK(wk_grad_of(y, &x, 1, &o, &gx));
    /* the reference: the same product through the recorded f32 matmul */
    wk_tensor *wd = TU_OK(wk_dtype_is_quantized(wdt) ? wk_dequantize(w, WK_F32) : wk_to_dtype(w, WK_F32));
    wk_tensor *wt = TU_OK(wk_t(wd));
    wk_tensor *x2 = TU_OK(wk_reshape(x, (int64_t[]){-1, K}, 2));
    wk_tensor *y2 = TU_OK(wk_matmul(x2, wt));
    wk_tensor *g2 = TU_OK(wk_reshape(g, (int64_t[]){-1, N}, 2));
    wk_backward_opts o2 = {.grad_output = g2};
    wk_tensor *gx2 = NULL;
    TU_STATUS_OK(wk_grad_of(y2, &x, 1, &o2, &gx2));
    tu_assert_shape(gx, xshape, xrank);
    double scale = max_abs(gx2);
    assert_true(scale > 0.1);
    double d = max_diff(gx, gx2);
    if (d > 1e-4 * scale) fail_msg("qmatmul dx (%s) differs from the dequantized matmul's by %g", wk_dtype_name(wdt), d);
    wk_tensor *all[] = {x, wf, w, y, g, gx, wd, wt, x2, y2, g2, gx2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

static void test_qmatmul_grad_x(void **state) {
    (void)state;
    check_qmatmul_x((int64_t[]){3, 64}, 2, WK_Q8_0);
    check_qmatmul_x((int64_t[]){2, 3, 64}, 3, WK_Q4_0);
    check_qmatmul_x((int64_t[]){64}, 1, WK_Q8_0);
    check_qmatmul_x((int64_t[]){2, 256}, 2, WK_Q4_K);
    check_qmatmul_x((int64_t[]){4, 32}, 2, WK_F16);
}

/* A block-quantized weight is frozen: a tracked x gets its gradient, the
 * weight none (even marked), and the product is tracked. */
static void test_qmatmul_frozen_weight(void **state) {
    (void)state;
    wk_tensor *x = randn((int64_t[]){2, 32}, 2);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *wf = randn((int64_t[]){3, 32}, 2);
    wk_tensor *w = TU_OK(wk_quantize(wf, WK_Q8_0));
    wk_tensor *y = TU_OK(wk_qmatmul(x, w));
    assert_true(wk_is_tracked(y));
    wk_tensor *s = TU_OK(wk_sum_all(y));
    wk_grad_store *gs = wk_grad_store_new();
    assert_non_null(gs);
    TU_STATUS_OK(wk_backward(s, gs, NULL));
    assert_non_null(wk_grad(gs, x));
    assert_null(wk_grad(gs, w));
    wk_grad_store_free(gs);
    /* an untracked x: an untracked product */
    wk_tensor *u = randn((int64_t[]){2, 32}, 2);
    wk_tensor *yu = TU_OK(wk_qmatmul(u, w));
    assert_false(wk_is_tracked(yu));
    wk_tensor *all[] = {x, wf, w, y, s, u, yu};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

/* An f16 weight that requires grad gets dW = g^T x (in f16). */
static void test_qmatmul_grad_f16_weight(void **state) {
    (void)state;
    wk_tensor *x = randn((int64_t[]){3, 32}, 2);
    wk_tensor *wf = randn((int64_t[]){4, 32}, 2);
    wk_tensor *w = TU_OK(wk_to_dtype(wf, WK_F16));
    TU_STATUS_OK(wk_requires_grad(w, true));
    wk_tensor *y = TU_OK(wk_qmatmul(x, w));
    wk_tensor *g = randn(wk_shape(y), wk_rank(y));
    wk_backward_opts o = {.grad_output = g};
    wk_tensor *gw = NULL;
    TU_STATUS_OK(wk_grad_of(y, &w, 1, &o, &gw));
    assert_int_equal(wk_tensor_dtype(gw), WK_F16);
    wk_tensor *gt = TU_OK(wk_t(g));
    wk_tensor *ref = TU_OK(wk_matmul(gt, x));
    double d = max_diff(gw, ref), scale = max_abs(ref);
    if (d > 2e-3 * scale) fail_msg("qmatmul dW (f16) differs from g^T x by %g (scale %g)", d, scale);
    wk_tensor *all[] = {x, wf, w, y, g, gw, gt, ref};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

/* wk_dequantize(wk_to_dtype(x, Q8_0)): the gradient reaches x unchanged
 * (straight through the quantization). */
static void test_dequantize_straight_through(void **state) {
    (void)state;
    wk_tensor *x = randn((int64_t[]){4, 64}, 2);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *q = TU_OK(wk_to_dtype(x, WK_Q8_0));
    wk_tensor *d = TU_OK(wk_dequantize(q, WK_F32));
    assert_true(wk_is_tracked(d));
    wk_tensor *g = randn(wk_shape(d), wk_rank(d));
    wk_backward_opts o = {.grad_output = g, .keep_graph = true}; /* q's node serves both passes */
    wk_tensor *gx = NULL;
    TU_STATUS_OK(wk_grad_of(d, &x, 1, &o, &gx));
    assert_true(max_diff(gx, g) == 0.0);
    /* dequantized to f16: the gradient comes back as x's f32 */
    wk_tensor *d16 = TU_OK(wk_dequantize(q, WK_F16));
    wk_tensor *g16 = TU_OK(wk_to_dtype(g, WK_F16));
    o.grad_output = g16;
    wk_tensor *gx16 = NULL;
    TU_STATUS_OK(wk_grad_of(d16, &x, 1, &o, &gx16));
    assert_int_equal(wk_tensor_dtype(gx16), WK_F32);
    assert_true(max_diff(gx16, g16) == 0.0);
    wk_tensor *all[] = {x, q, d, g, gx, d16, g16, gx16};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

/* wk_quantize of a tensor that requires grad, grad mode on: WK_ERR_ARG
 * naming the op and why; detached, untracked or in no-grad mode it works. */
static void test_quantize_tracked_is_error(void **state) {
    (void)state;
    wk_tensor *x = randn((int64_t[]){2, 32}, 2);
    TU_STATUS_OK(wk_requires_grad(x, true));
    assert_null(wk_quantize(x, WK_Q8_0));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    const char *msg = wk_last_error();
    assert_non_null(strstr(msg, "wk_quantize"));
    assert_non_null(strstr(msg, "grad"));
    wk_tensor *y = TU_OK(wk_affine(x, 2.0, 0.0)); /* a tracked non-leaf too */
    TU_FAILS(wk_quantize(y, WK_Q4_0), WK_ERR_ARG);
    wk_no_grad_begin();
    wk_tensor *q = TU_OK(wk_quantize(x, WK_Q8_0));
    wk_no_grad_end();
    wk_tensor *dx = TU_OK(wk_detach(x));
    wk_tensor *q2 = TU_OK(wk_quantize(dx, WK_Q8_0));
    wk_tensor *all[] = {x, y, q, dx, q2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qmatmul_grad_x),
        cmocka_unit_test(test_qmatmul_frozen_weight),
        cmocka_unit_test(test_qmatmul_grad_f16_weight),
        cmocka_unit_test(test_dequantize_straight_through),
        cmocka_unit_test(test_quantize_tracked_is_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
