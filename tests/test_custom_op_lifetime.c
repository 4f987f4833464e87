/* Custom ops and autograd (include/wick/custom_op.h), two defects:
 *  - the op freed (wk_custom_op_free) between the forward that recorded it
 *    and the backward: the node kept a raw pointer and read freed memory.
 *    Now the op is reference counted and each recorded node holds one
 *    (run this under ASan to see the old read);
 *  - a backward callback returning a gradient of the wrong shape (dtype)
 *    was reported as WK_ERR_INTERNAL "(a wick bug)": it is the callback's
 *    error, WK_ERR_SHAPE (WK_ERR_DTYPE) naming the op, the input and both
 *    shapes. */
#include "testutil.h"
#include "wick/autograd.h"
#include "wick/custom_op.h"
#include "wick/train.h"
#include <string.h>

static int64_t count(const wk_custom_view *v) {
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++) n *= v->shape[d];
    return n;
}

/* out = a * b elementwise (contiguous inputs) */
static wk_status mul_cpu(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    (void)user, (void)nin;
    const float *a = (const float *)in[0].buf + in[0].offset, *b = (const float *)in[1].buf + in[1].offset;
    for (int64_t k = 0; k < count(out); k++) ((float *)out->buf)[k] = a[k] * b[k];
    return WK_OK;
}

static int g_backward_calls;

/* grad_a = g * b, grad_b = g * a */
static wk_status mul_backward(void *user, int nin, const wk_tensor *const *in, const wk_tensor *out,
                              const wk_tensor *g, wk_tensor **gi) {
    (void)user, (void)out, (void)nin;
    g_backward_calls++;
    gi[0] = wk_mul(g, in[1]);
    gi[1] = wk_mul(g, in[0]);
    return gi[0] && gi[1] ? WK_OK : wk_last_status();
}

/* what the wrong callbacks return for input 1 */
enum { WRONG_SHAPE, WRONG_RANK, WRONG_DTYPE };
static wk_status wrong_backward(void *user, int nin, const wk_tensor *const *in, const wk_tensor *out,
                                const wk_tensor *g, wk_tensor **gi) {
    (void)out, (void)nin, (void)in;
    int how = *(const int *)user;
    gi[0] = wk_mul(g, in[1]);
    int64_t s2[2] = {2, 3}, s3[1] = {3};
    if (how == WRONG_SHAPE) gi[1] = wk_ones(s3, 1, WK_F32, wk_cpu());
    else if (how == WRONG_RANK) gi[1] = wk_ones(s2, 2, WK_F32, wk_cpu());
    else gi[1] = wk_to_dtype(g, WK_F64);
    return gi[0] && gi[1] ? WK_OK : wk_last_status();
}

static wk_tensor *param(const float *v) {
    int64_t s[1] = {4};
    wk_tensor *x = TU_OK(wk_from_host(v, 4 * sizeof(float), s, 1, WK_F32, wk_cpu()));
    wk_tensor *p = TU_OK(wk_param_new(x));
    wk_tensor_free(x);
    return p;
}

static const float A[4] = {1, 2, 3, 4}, B[4] = {10, -20, 0.5f, 7};

/* record, free the op, then backward: the gradients are right */
static void backward_after_free(void **state) {
    (void)state;
    wk_custom_op_def def = {.name = "mul_freed", .num_inputs = 2, .cpu = mul_cpu, .backward = mul_backward,
                            .contiguous_inputs = true};
    wk_custom_op *op = wk_custom_op_register(&def);
    assert_non_null(op);
    wk_tensor *a = param(A), *b = param(B);
    wk_tensor *y = TU_OK(wk_custom_op2(op, a, b));
    wk_tensor *l = TU_OK(wk_sum_all(y));
    wk_custom_op_free(op); /* the caller's reference: the graph keeps its own */
    g_backward_calls = 0;
    wk_grad_store *gs = wk_grad_store_new();
    assert_non_null(gs);
    wk_backward_opts o = {.keep_graph = true};
    TU_STATUS_OK(wk_backward(l, gs, &o));
    assert_int_equal(g_backward_calls, 1);
    double ga[4], gb[4];
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, a), ga, 4));
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, b), gb, 4));
    for (int i = 0; i < 4; i++) {
        assert_true(ga[i] == (double)B[i]);
        assert_true(gb[i] == (double)A[i]);
    }
    /* a second pass through the kept graph: the op is still there */
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    assert_int_equal(g_backward_calls, 2);
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, a), ga, 4));
    for (int i = 0; i < 4; i++) assert_true(ga[i] == 2.0 * B[i]);
    wk_grad_store_free(gs);
    /* the last references go with the graph (ASan's leak check sees the op) */
    wk_tensor_free(l);
    wk_tensor_free(y);
    wk_tensor_free(a);
    wk_tensor_free(b);
}

/* the graph freed first, the op after: also fine (either order) */
static void free_graph_then_op(void **state) {
    (void)state;
    wk_custom_op_def def = {.name = "mul_order", .num_inputs = 2, .cpu = mul_cpu, .backward = mul_backward,
                            .contiguous_inputs = true};
    wk_custom_op *op = wk_custom_op_register(&def);
    assert_non_null(op);
    wk_tensor *a = param(A), *b = param(B);
    for (int i = 0; i < 3; i++) wk_tensor_free(TU_OK(wk_custom_op2(op, a, b)));
    /* the op still works for its caller */
    wk_tensor *y = TU_OK(wk_custom_op2(op, a, b));
    wk_tensor_free(y);
    wk_custom_op_free(op);
    wk_tensor_free(a);
    wk_tensor_free(b);
}

static void wrong_gradient_is_the_callbacks(void **state) {
    (void)state;
    const struct {
        int how;
        wk_status st;
        const char *msg;
    } cases[3] = {
        {WRONG_SHAPE, WK_ERR_SHAPE,
         "op 'mul_wrong': the backward callback returned a gradient of shape [3] for input 1, whose shape is [4]"},
        {WRONG_RANK, WK_ERR_SHAPE,
         "op 'mul_wrong': the backward callback returned a gradient of shape [2, 3] for input 1, whose shape is [4]"},
        {WRONG_DTYPE, WK_ERR_DTYPE, "op 'mul_wrong': the backward callback returned a f64 gradient for input 1"},
    };
    for (int k = 0; k < 3; k++) {
        int how = cases[k].how;
        wk_custom_op_def def = {.name = "mul_wrong", .num_inputs = 2, .cpu = mul_cpu, .backward = wrong_backward,
                                .user = &how, .contiguous_inputs = true};
        wk_custom_op *op = wk_custom_op_register(&def);
        assert_non_null(op);
        wk_tensor *a = param(A), *b = param(B);
        wk_tensor *y = TU_OK(wk_custom_op2(op, a, b));
        wk_tensor *l = TU_OK(wk_sum_all(y));
        wk_grad_store *gs = wk_grad_store_new();
        wk_clear_error();
        wk_status st = wk_backward(l, gs, NULL);
        if (st != cases[k].st || !strstr(wk_last_error(), cases[k].msg) || strstr(wk_last_error(), "wick bug"))
            fail_msg("case %d: %s '%s'; wanted %s '%s'", k, wk_status_name(st), wk_last_error(),
                     wk_status_name(cases[k].st), cases[k].msg);
        wk_clear_error();
        wk_grad_store_free(gs);
        wk_tensor_free(l);
        wk_tensor_free(y);
        wk_tensor_free(a);
        wk_tensor_free(b);
        wk_custom_op_free(op);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backward_after_free),
        cmocka_unit_test(free_graph_then_op),
        cmocka_unit_test(wrong_gradient_is_the_callbacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
