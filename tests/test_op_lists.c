/* The op lists (include/wick/wick_ops.h) and what is generated from them:
 * names, one-op wrappers, the backward-rule tables, the integer rules, and
 * the shared integer math's division paths (base/op_math.h). */
#include "testutil.h"
#include "tensor/op_lists.h"

#include <stdint.h>
#include <string.h>

/* Every list line has its wrapper: a table of them, built from the lists. */
typedef wk_tensor *(*unary_fn)(const wk_tensor *);
typedef wk_tensor *(*binary_fn)(const wk_tensor *, const wk_tensor *);
#define UNARY_ROW(e, n, ...) {e, wk_##n, #n},
#define BINARY_ROW(e, n, ...) {e, wk_##n, #n},
static const struct { wk_unary_op op; unary_fn fn; const char *name; } k_unary[] = {WK_UNARY_OPS(UNARY_ROW)};
static const struct { wk_binary_op op; binary_fn fn; const char *name; } k_binary[] = {WK_BINARY_OPS(BINARY_ROW)};

static wk_tensor *from_f64(const double *v, int64_t n, wk_dtype dt) {
    int64_t shape[1] = {n};
    wk_tensor *t = wk_from_host(v, (size_t)n * sizeof(double), shape, 1, WK_F64, wk_cpu());
    wk_tensor *r = wk_to_dtype(t, dt);
    wk_tensor_free(t);
    return r;
}

static bool same_bits(const wk_tensor *a, const wk_tensor *b) {
    if (!a || !b) return a == b;
    size_t n = (size_t)wk_numel(a) * wk_dtype_size(wk_tensor_dtype(a));
    if (wk_numel(a) != wk_numel(b) || wk_tensor_dtype(a) != wk_tensor_dtype(b)) return false;
    char x[1024], y[1024];
    if (n > sizeof x || wk_to_host(a, x, n) != WK_OK || wk_to_host(b, y, n) != WK_OK) return false;
    return memcmp(x, y, n) == 0;
}

static void test_names_and_counts(void **state) {
    (void)state;
    assert_int_equal(sizeof k_unary / sizeof k_unary[0], WK_UNARY_COUNT);
    assert_int_equal(sizeof k_binary / sizeof k_binary[0], WK_BINARY_COUNT);
    /* list order is the numeric order, unchanged for the older values */
    assert_int_equal(WK_EXP, 0);
    assert_int_equal(WK_SIGMOID, 19);
    assert_int_equal(WK_UNARY_COUNT, 20);
    assert_int_equal(WK_ADD, 0);
    assert_int_equal(WK_MINIMUM, 5);
    assert_int_equal(WK_POW, 6);
    assert_int_equal(WK_GE, 5);
    assert_int_equal(WK_CMP_COUNT, 6);
    assert_int_equal(WK_REDUCE_ALL, 8);
    assert_int_equal(WK_REDUCE_COUNT, 9);
    for (int i = 0; i < WK_UNARY_COUNT; i++) {
        assert_int_equal(k_unary[i].op, i);
        assert_string_equal(wk_unary_name(k_unary[i].op), k_unary[i].name);
    }
    for (int i = 0; i < WK_BINARY_COUNT; i++) {
        assert_int_equal(k_binary[i].op, i);
        assert_string_equal(wk_binary_name(k_binary[i].op), k_binary[i].name);
    }
    assert_string_equal(wk_unary_name(WK_GELU_ERF), "gelu_erf");
    assert_string_equal(wk_cmp_name(WK_LE), "le");
    assert_string_equal(wk_unary_name(WK_UNARY_COUNT), "invalid");
    assert_string_equal(wk_binary_name((wk_binary_op)-1), "invalid");
    assert_string_equal(wk_cmp_name(WK_CMP_COUNT), "invalid");
}

/* Each generated wrapper is the generic call with its own op. */
static void test_wrappers_are_their_op(void **state) {
    (void)state;
    static const double xs[6] = {-1.5, -0.25, 0.0, 0.5, 2.0, 3.75};
    static const double ys[6] = {2.0, -3.0, 1.5, 0.5, -2.0, 4.0};
    wk_tensor *x = from_f64(xs, 6, WK_F32), *y = from_f64(ys, 6, WK_F32);
    for (int i = 0; i < WK_UNARY_COUNT; i++) {
        wk_tensor *a = k_unary[i].fn(x), *b = wk_unary(x, k_unary[i].op);
        assert_non_null(a);
        assert_true(same_bits(a, b));
        /* and not some other op's result (each op differs from the next on these inputs) */
        wk_tensor *c = wk_unary(x, (wk_unary_op)((i + 1) % WK_UNARY_COUNT));
        assert_false(same_bits(a, c));
        wk_tensor_free(a);
        wk_tensor_free(b);
        wk_tensor_free(c);
    }
    for (int i = 0; i < WK_BINARY_COUNT; i++) {
        wk_tensor *a = k_binary[i].fn(x, y), *b = wk_binary(x, y, k_binary[i].op);
        assert_non_null(a);
        assert_true(same_bits(a, b));
        wk_tensor_free(a);
        wk_tensor_free(b);
    }
    /* an op value off the list is an argument error, never a kernel call */
    assert_null(wk_unary(x, WK_UNARY_COUNT));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_null(wk_binary(x, y, WK_BINARY_COUNT));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    /* reduction wrappers by form: DIMS has _all, ARG takes one dim */
    wk_tensor *s = wk_sum_all(x), *m = wk_argmax(x, 0, false);
    double v;
    assert_int_equal(wk_item(s, &v), WK_OK);
    assert_true(v == 4.5);
    assert_int_equal(wk_item(m, &v), WK_OK);
    assert_true(v == 5);
    wk_tensor_free(s);
    wk_tensor_free(m);
    wk_tensor_free(x);
    wk_tensor_free(y);
}

/* The backward column: one rule per op, each with its formula. */
static void test_backward_tables(void **state) {
    (void)state;
    for (int i = 0; i < WK_UNARY_COUNT; i++) assert_true((unsigned)wk__unary_backward[i] < WK__BW_COUNT);
    for (int i = 0; i < WK_BINARY_COUNT; i++) assert_true((unsigned)wk__binary_backward[i] < WK__BW_COUNT);
    for (int i = 0; i < WK__BW_COUNT; i++) assert_true(wk__backward_formula[i] && wk__backward_formula[i][0]);
    assert_int_equal(wk__unary_backward[WK_EXP], BW_EXP);
    assert_int_equal(wk__unary_backward[WK_FLOOR], BW_ZERO);
    assert_int_equal(wk__unary_backward[WK_SIGMOID], BW_SIGMOID);
    assert_int_equal(wk__binary_backward[WK_POW], BW_POW);
    assert_string_equal(wk__backward_formula[BW_EXP], "g * y");
    /* integer rules from the same lines */
    assert_int_equal(wk__unary_int_rule[WK_EXP], INT_NONE);
    assert_int_equal(wk__unary_int_rule[WK_ROUND], INT_ID);
    assert_int_equal(wk__unary_int_rule[WK_SIGN], INT_DEF);
}

/* Integer division through the shared math: the 32-bit, unsigned 32-bit
 * and 64-bit paths give C's truncated quotient of the dtype's values. */
static void check_div(wk_dtype dt, const int64_t *x, const int64_t *y, const int64_t *want, int n) {
    int64_t shape[1] = {n};
    wk_tensor *a64 = wk_from_host(x, (size_t)n * 8, shape, 1, WK_I64, wk_cpu());
    wk_tensor *b64 = wk_from_host(y, (size_t)n * 8, shape, 1, WK_I64, wk_cpu());
    wk_tensor *a = wk_to_dtype(a64, dt), *b = wk_to_dtype(b64, dt);
    wk_tensor *q = wk_div(a, b), *q64 = wk_to_dtype(q, WK_I64);
    int64_t got[16];
    assert_non_null(q64);
    assert_int_equal(wk_to_host(q64, got, (size_t)n * 8), WK_OK);
    for (int i = 0; i < n; i++) {
        if (got[i] != want[i]) fail_msg("%s div [%d]: %lld / %lld gave %lld, want %lld", wk_dtype_name(dt), i,
                                        (long long)x[i], (long long)y[i], (long long)got[i], (long long)want[i]);
    }
    wk_tensor *objs[] = {a64, b64, a, b, q, q64};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) wk_tensor_free(objs[i]);
}

static void test_int_division_paths(void **state) {
    (void)state;
    {
        const int64_t x[] = {4000000000, 4000000000, 4294967295, 7, 3000000000};
        const int64_t y[] = {3, 4000000001, 2, 4294967295, 1000000000};
        const int64_t w[] = {1333333333, 0, 2147483647, 0, 3};
        check_div(WK_U32, x, y, w, 5);
    }
    {
        const int64_t x[] = {INT32_MIN, INT32_MIN, -7, 7, INT32_MAX, -1};
        const int64_t y[] = {-1, 7, 2, -2, INT32_MIN, INT32_MIN};
        const int64_t w[] = {INT32_MIN, INT32_MIN / 7, -3, -3, 0, 0};
        check_div(WK_I32, x, y, w, 6);
    }
    {
        const int64_t x[] = {(int64_t)1 << 40, -((int64_t)1 << 40), INT64_MIN, INT64_MIN, 5, -9};
        const int64_t y[] = {3, 7, -1, (int64_t)1 << 33, (int64_t)1 << 35, 4};
        const int64_t w[] = {((int64_t)1 << 40) / 3, -((int64_t)1 << 40) / 7, INT64_MIN, INT64_MIN / ((int64_t)1 << 33),
                             0, -2};
        check_div(WK_I64, x, y, w, 6);
    }
    {
        const int64_t x[] = {INT16_MIN, INT16_MIN, -32767, 255};
        const int64_t y[] = {-1, 3, -2, 16};
        const int64_t w[] = {INT16_MIN, INT16_MIN / 3, 16383, 15};
        check_div(WK_I16, x, y, w, 4);
    }
    {
        const int64_t x[] = {255, 254, 0};
        const int64_t y[] = {2, 255, 9};
        const int64_t w[] = {127, 0, 0};
        check_div(WK_U8, x, y, w, 3);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_counts),
        cmocka_unit_test(test_wrappers_are_their_op),
        cmocka_unit_test(test_backward_tables),
        cmocka_unit_test(test_int_division_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
