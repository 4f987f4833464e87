/* Custom ops (include/wick/custom_op.h): op1/2/3 and in-place variants run
 * the CPU callback on views (strides and offsets as given, or contiguous
 * copies on request), an output shape callback, errors naming op and
 * backend when a backend has no callback, and the stored backward. */
#include "testutil.h"

#include <string.h>

#include "wick/custom_op.h"

/* element (flat row-major index k) of an f32 view */
static float at(const wk_custom_view *v, int64_t k) {
    int64_t off = v->offset;
    for (int d = v->rank - 1; d >= 0; d--) {
        off += (k % v->shape[d]) * v->stride[d];
        k /= v->shape[d];
    }
    return ((const float *)v->buf)[off];
}
static float *at_w(const wk_custom_view *v, int64_t k) {
    int64_t off = v->offset;
    for (int d = v->rank - 1; d >= 0; d--) {
        off += (k % v->shape[d]) * v->stride[d];
        k /= v->shape[d];
    }
    return (float *)v->buf + off;
}
static int64_t count(const wk_custom_view *v) {
    int64_t n = 1;
    for (int d = 0; d < v->rank; d++) n *= v->shape[d];
    return n;
}

static int g_calls;

/* out = sum of inputs * user scale */
static wk_status sum_cpu(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    float scale = *(const float *)user;
    g_calls++;
    assert_int_equal(out->offset, 0);
    for (int64_t k = 0; k < count(out); k++) {
        float s = 0;
        for (int i = 0; i < nin; i++) s += at(&in[i], k);
        ((float *)out->buf)[k] = s * scale;
    }
    return WK_OK;
}

/* in[0] += the others */
static wk_status add_inplace_cpu(void *user, int nin, const wk_custom_view *in) {
    (void)user;
    for (int64_t k = 0; k < count(&in[0]); k++)
        for (int i = 1; i < nin; i++) *at_w(&in[0], k) += at(&in[i], k);
    if (nin == 1)
        for (int64_t k = 0; k < count(&in[0]); k++) *at_w(&in[0], k) *= 2;
    return WK_OK;
}

static wk_tensor *vals(const int64_t *shape, int rank, float base) {
    float v[64];
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    for (int64_t i = 0; i < n; i++) v[i] = base + (float)i;
    return tu_f32(v, shape, rank);
}

static void test_op1_op2_op3(void **state) {
    (void)state;
    float scale = 0.5f;
    wk_custom_op_def def = {.name = "scaled_sum", .num_inputs = 1, .user = &scale, .cpu = sum_cpu};
    wk_custom_op *op1 = wk_custom_op_register(&def);
    def.num_inputs = 2;
    wk_custom_op *op2 = wk_custom_op_register(&def);
    def.num_inputs = 3;
    wk_custom_op *op3 = wk_custom_op_register(&def);
    assert_non_null(op1);
    assert_non_null(op2);
    assert_non_null(op3);
    assert_string_equal(wk_custom_op_name(op3), "scaled_sum");
    int64_t s[2] = {3, 4}, st[2] = {4, 3};
    wk_tensor *a = vals(s, 2, 0), *b = vals(s, 2, 100);
    /* c is a transposed view: the callback reads it through its strides */
    wk_tensor *c0 = vals(st, 2, 1000), *c = TU_OK(wk_t(c0));
    assert_false(wk_is_contiguous(c));
    g_calls = 0;
    wk_tensor *y1 = TU_OK(wk_custom_op1(op1, a));
    wk_tensor *y2 = TU_OK(wk_custom_op2(op2, a, b));
    wk_tensor *y3 = TU_OK(wk_custom_op3(op3, a, b, c));
    assert_int_equal(g_calls, 3);
    double w1[12], w2[12], w3[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            int k = i * 4 + j;
            w1[k] = 0.5 * k;
            w2[k] = 0.5 * (k + 100 + k);
            w3[k] = 0.5 * (k + 100 + k + 1000 + j * 3 + i);
        }
    tu_assert_close(y1, w1, 12, 0, 0);
    tu_assert_close(y2, w2, 12, 0, 0);
    tu_assert_close(y3, w3, 12, 0, 0);
    tu_assert_shape(y3, s, 2);
    /* wrong input count */
    TU_FAILS(wk_custom_op2(op1, a, b), WK_ERR_ARG);
    TU_FAILS(wk_custom_op1(op3, a), WK_ERR_ARG);
    /* shape mismatch between inputs is the callback's business, but devices
     * and NULLs are checked */
    TU_FAILS(wk_custom_op1(op1, NULL), WK_ERR_ARG);
    TU_FAILS(wk_custom_op1(NULL, a), WK_ERR_ARG);
    wk_tensor *ts[] = {a, b, c0, c, y1, y2, y3};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) wk_tensor_free(ts[i]);
    wk_custom_op_free(op1);
    wk_custom_op_free(op2);
    wk_custom_op_free(op3);
}

/* output shape callback: a row-sum op (N, M) -> (N) in f64 */
static wk_status rowsum_shape(void *user, int nin, const wk_custom_view *in, int64_t *shape, int *rank, wk_dtype *dt) {
    (void)user, (void)nin;
    if (in[0].rank != 2) return WK_ERR_SHAPE;
    shape[0] = in[0].shape[0];
    *rank = 1;
    *dt = WK_F64;
    return WK_OK;
}
static wk_status rowsum_cpu(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    (void)user, (void)nin;
    /* contiguous_inputs: row-major with offset 0 */
    assert_int_equal(in[0].offset, 0);
    assert_int_equal(in[0].stride[1], 1);
    const float *x = in[0].buf;
    for (int64_t i = 0; i < in[0].shape[0]; i++) {
        double s = 0;
        for (int64_t j = 0; j < in[0].shape[1]; j++) s += x[i * in[0].shape[1] + j];
        ((double *)out->buf)[i] = s;
    }
    return WK_OK;
}

static void test_out_shape_and_contiguous_inputs(void **state) {
    (void)state;
    wk_custom_op_def def = {.name = "rowsum", .num_inputs = 1, .out_shape = rowsum_shape, .cpu = rowsum_cpu,
                            .contiguous_inputs = true};
    wk_custom_op *op = wk_custom_op_register(&def);
    assert_non_null(op);
    int64_t s[2] = {2, 3};
    wk_tensor *a0 = vals(s, 2, 1), *a = TU_OK(wk_t(a0)); /* (3, 2), strided */
    wk_tensor *y = TU_OK(wk_custom_op1(op, a));
    assert_int_equal(wk_tensor_dtype(y), WK_F64);
    int64_t ys[1] = {3};
    tu_assert_shape(y, ys, 1);
    const double want[3] = {1 + 4, 2 + 5, 3 + 6};
    tu_assert_close(y, want, 3, 0, 0);
    /* the shape callback's refusal is the op's error */
    int64_t s3[3] = {1, 2, 3};
    wk_tensor *b = vals(s3, 3, 0);
    TU_FAILS(wk_custom_op1(op, b), WK_ERR_SHAPE);
    wk_tensor_free(b);
    wk_tensor_free(y);
    wk_tensor_free(a);
    wk_tensor_free(a0);
    wk_custom_op_free(op);
}

static void test_inplace(void **state) {
    (void)state;
    wk_custom_op_def def = {.name = "acc", .num_inputs = 2, .cpu_inplace = add_inplace_cpu};
    wk_custom_op *op2 = wk_custom_op_register(&def);
    def.num_inputs = 1;
    wk_custom_op *op1 = wk_custom_op_register(&def);
    def.num_inputs = 3;
    wk_custom_op *op3 = wk_custom_op_register(&def);
    int64_t s[2] = {4, 4};
    wk_tensor *base = vals(s, 2, 0);
    /* write through a narrowed, strided view of base */
    wk_tensor *col = TU_OK(wk_narrow(base, 1, 1, 2));
    int64_t cs[2] = {4, 2};
    wk_tensor *b = vals(cs, 2, 10), *c = vals(cs, 2, 20);
    TU_STATUS_OK(wk_custom_inplace2(op2, col, b));
    TU_STATUS_OK(wk_custom_inplace3(op3, col, b, c));
    TU_STATUS_OK(wk_custom_inplace1(op1, col));
    double want[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int k = i * 4 + j;
            double v = k;
            if (j == 1 || j == 2) {
                double bv = 10 + i * 2 + (j - 1), cv = 20 + i * 2 + (j - 1);
                v = (v + bv + bv + cv) * 2;
            }
            want[k] = v;
        }
    tu_assert_close(base, want, 16, 0, 0);
    /* an op without an out-of-place callback */
    wk_tensor *y = wk_custom_op2(op2, col, b);
    assert_null(y);
    assert_int_equal(wk_last_status(), WK_ERR_NOT_COMPILED);
    assert_non_null(strstr(wk_last_error(), "'acc'"));
    wk_clear_error();
    assert_int_equal(wk_custom_inplace1(op2, col), WK_ERR_ARG);
    wk_clear_error();
    /* the built-in in-place rules hold for custom ops too: no write into a
     * destination where two indices share one element, none into read-only
     * storage; the callback never runs and the bytes stay */
    wk_tensor *row = TU_OK(wk_narrow(base, 0, 0, 1));
    wk_tensor *bc = TU_OK(wk_broadcast_as(row, s, 2));
    assert_int_equal(wk_custom_inplace1(op1, bc), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_custom_inplace1"));
    wk_clear_error();
    float ro_data[4] = {1, 2, 3, 4};
    wk_tensor *ro = TU_OK(wk_from_blob(ro_data, sizeof ro_data, (int64_t[]){4}, 1, NULL, WK_F32, wk_cpu(), NULL, NULL,
                                       WK_BLOB_READ_ONLY));
    assert_int_equal(wk_custom_inplace1(op1, ro), WK_ERR_ARG);
    wk_clear_error();
    assert_true(ro_data[0] == 1 && ro_data[3] == 4);
    tu_assert_close(base, want, 16, 0, 0);
    wk_tensor_free(bc);
    wk_tensor_free(row);
    wk_tensor_free(ro);
    wk_tensor *ts[] = {base, col, b, c};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) wk_tensor_free(ts[i]);
    wk_custom_op_free(op1);
    wk_custom_op_free(op2);
    wk_custom_op_free(op3);
}

static wk_status never(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    (void)user, (void)nin, (void)in, (void)out;
    fail_msg("the CUDA callback must not run on the CPU");
    return WK_ERR_INTERNAL;
}
static wk_status failing(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    (void)user, (void)nin, (void)in, (void)out;
    return WK_ERR_DIV_ZERO;
}

static void test_missing_backend_and_failures(void **state) {
    (void)state;
    /* a CUDA-only op on the CPU: the error names op and backend */
    wk_custom_op_def def = {.name = "gpu_only", .num_inputs = 1, .cuda = never};
    wk_custom_op *op = wk_custom_op_register(&def);
    assert_non_null(op);
    int64_t s[1] = {5};
    wk_tensor *a = vals(s, 1, 0);
    assert_null(wk_custom_op1(op, a));
    assert_int_equal(wk_last_status(), WK_ERR_NOT_COMPILED);
    assert_non_null(strstr(wk_last_error(), "'gpu_only'"));
    assert_non_null(strstr(wk_last_error(), "backend cpu"));
    wk_clear_error();
    assert_int_equal(wk_custom_inplace1(op, a), WK_ERR_NOT_COMPILED);
    assert_non_null(strstr(wk_last_error(), "in-place cpu callback"));
    wk_clear_error();
    wk_custom_op_free(op);
    /* a callback's failure status comes back, naming the op */
    wk_custom_op_def fdef = {.name = "fails", .num_inputs = 1, .cpu = failing};
    op = wk_custom_op_register(&fdef);
    TU_FAILS(wk_custom_op1(op, a), WK_ERR_DIV_ZERO);
    wk_custom_op_free(op);
    /* bad definitions */
    wk_custom_op_def bad = {.name = "x", .num_inputs = 4, .cpu = failing};
    assert_null(wk_custom_op_register(&bad));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    bad.num_inputs = 1;
    bad.cpu = NULL;
    assert_null(wk_custom_op_register(&bad));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    bad.cpu = failing;
    bad.name = NULL;
    assert_null(wk_custom_op_register(&bad));
    wk_clear_error();
    wk_tensor_free(a);
}

/* backward of out = a * b: grad_a = g * b, grad_b = g * a */
static wk_status mul_backward(void *user, int nin, const wk_tensor *const *in, const wk_tensor *out,
                              const wk_tensor *g, wk_tensor **gi) {
    (void)user, (void)out;
    assert_int_equal(nin, 2);
    gi[0] = wk_mul(g, in[1]);
    gi[1] = wk_mul(g, in[0]);
    return gi[0] && gi[1] ? WK_OK : wk_last_status();
}
static wk_status mul_cpu(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    (void)user, (void)nin;
    for (int64_t k = 0; k < count(out); k++) ((float *)out->buf)[k] = at(&in[0], k) * at(&in[1], k);
    return WK_OK;
}

static void test_backward_stored(void **state) {
    (void)state;
    wk_custom_op_def def = {.name = "mul", .num_inputs = 2, .cpu = mul_cpu, .backward = mul_backward};
    wk_custom_op *op = wk_custom_op_register(&def);
    assert_true(wk_custom_op_has_backward(op));
    int64_t s[1] = {4};
    wk_tensor *a = vals(s, 1, 1), *b = vals(s, 1, 10);
    wk_tensor *y = TU_OK(wk_custom_op2(op, a, b));
    wk_tensor *g = TU_OK(wk_ones(s, 1, WK_F32, wk_cpu()));
    const wk_tensor *ins[2] = {a, b};
    wk_tensor *gi[2];
    TU_STATUS_OK(wk_custom_op_backward(op, ins, y, g, gi));
    const double ga[4] = {10, 11, 12, 13}, gb[4] = {1, 2, 3, 4};
    tu_assert_close(gi[0], ga, 4, 0, 0);
    tu_assert_close(gi[1], gb, 4, 0, 0);
    wk_tensor_free(gi[0]);
    wk_tensor_free(gi[1]);
    /* no backward: a clean error naming the op */
    wk_custom_op_def nd = {.name = "nograd", .num_inputs = 2, .cpu = mul_cpu};
    wk_custom_op *op2 = wk_custom_op_register(&nd);
    assert_false(wk_custom_op_has_backward(op2));
    assert_int_equal(wk_custom_op_backward(op2, ins, y, g, gi), WK_ERR_NOT_COMPILED);
    assert_non_null(strstr(wk_last_error(), "'nograd'"));
    assert_null(gi[0]);
    wk_clear_error();
    wk_tensor *ts[] = {a, b, y, g};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) wk_tensor_free(ts[i]);
    wk_custom_op_free(op);
    wk_custom_op_free(op2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op1_op2_op3),
        cmocka_unit_test(test_out_shape_and_contiguous_inputs),
        cmocka_unit_test(test_inplace),
        cmocka_unit_test(test_missing_backend_and_failures),
        cmocka_unit_test(test_backward_stored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
