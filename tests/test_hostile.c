/* Hostile use of the public API (issue 10, section 6): sizes whose sum or
 * product overflows, NULL for every pointer argument, the error state's
 * documented semantics, and scopes nested far beyond any fixed depth.
 *
 * The huge shapes are stride-0 views (wk_broadcast_as of a one-element
 * tensor): legal, free to make, and describing up to 2^56 elements each.
 * Every call must fail cleanly with the named status, never wrap a size and
 * write past a buffer (the cat case did that in Release before the fix). */
#include "testutil.h"

#include "tensor/tensor.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Out-of-memory must be a clean error here, also under ASan. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#define E56 (INT64_C(1) << 56)

static size_t in_use(void) {
    wk_cpu_mem_stats s;
    wk_cpu_mem_stats_get(&s);
    return s.bytes_in_use;
}

/* The call failed with status st, recorded by THIS call (the state is
 * cleared first) under the op's name. */
#define FAILS_T(call, st, op)                                                                                          \
    do {                                                                                                               \
        wk_clear_error();                                                                                              \
        wk_tensor *r_ = (call);                                                                                        \
        check_failed_(r_ != NULL, (st), (op), #call, __LINE__);                                                        \
    } while (0)
#define FAILS_S(call, st, op)                                                                                          \
    do {                                                                                                               \
        wk_clear_error();                                                                                              \
        wk_status s_ = (call);                                                                                         \
        if (s_ != WK_OK && s_ != wk_last_status())                                                                     \
            fail_msg("line %d: %s returned %s but recorded %s", __LINE__, #call, wk_status_name(s_),                 \
                     wk_status_name(wk_last_status()));                                                                \
        check_failed_(s_ == WK_OK, (st), (op), #call, __LINE__);                                                       \
    } while (0)

static void check_failed_(bool succeeded, wk_status st, const char *op, const char *expr, int line) {
    if (succeeded) fail_msg("line %d: %s succeeded, expected %s", line, expr, wk_status_name(st));
    if (wk_last_status() != st)
        fail_msg("line %d: %s: %s (%s), expected %s", line, expr, wk_status_name(wk_last_status()), wk_last_error(),
                 wk_status_name(st));
    size_t n = strlen(op);
    const char *m = wk_last_error();
    if (strncmp(m, op, n) != 0 || m[n] != ':') fail_msg("line %d: %s: message '%s' does not name %s", line, expr, m, op);
    wk_clear_error();
}

/* A u8 view of `shape` over one element (all strides 0). */
static wk_tensor *huge_view(const int64_t *shape, int rank) {
    int64_t one[WK_MAX_RANK];
    for (int i = 0; i < rank; i++) one[i] = 1;
    wk_tensor *base = TU_OK(wk_zeros(one, rank, WK_U8, wk_cpu()));
    wk_tensor *v = TU_OK(wk_broadcast_as(base, shape, rank));
    wk_tensor_free(base);
    return v;
}

/* ------------------------------------------------------------ overflow */

static void test_cat_sum_overflow(void **state) {
    (void)state;
    size_t base = in_use();
    const int64_t big = E56, s3 = 3;
    wk_tensor *v = huge_view(&big, 1);
    wk_tensor *small = TU_OK(wk_zeros(&s3, 1, WK_U8, wk_cpu()));
    wk_tensor *ts[257];
    /* 256 x 2^56 = 2^64 wraps to 0; + 3 would give a 3-element buffer that
     * 2^56-element copies then overrun */
    for (int i = 0; i < 256; i++) ts[i] = v;
    ts[256] = small;
    FAILS_T(wk_cat(ts, 257, 0), WK_ERR_SHAPE, "wk_cat");
    /* the case: 257 of them (wraps to 2^56) */
    ts[256] = v;
    FAILS_T(wk_cat(ts, 257, 0), WK_ERR_SHAPE, "wk_cat");
    /* no wrap, but over the element limit: a shape error, not an allocation */
    FAILS_T(wk_cat(ts, 2, 0), WK_ERR_SHAPE, "wk_cat");
    /* and on a middle dim of a rank-3 view */
    const int64_t s3d[3] = {2, INT64_C(1) << 54, 2};
    wk_tensor *w = huge_view(s3d, 3);
    wk_tensor *tw[130];
    for (int i = 0; i < 130; i++) tw[i] = w;
    FAILS_T(wk_cat(tw, 130, 1), WK_ERR_SHAPE, "wk_cat");
    /* roll is a cat of two narrows: fine on a huge view (no overflow) */
    wk_tensor *rv = wk_roll(v, 5, 0);
    if (rv) wk_tensor_free(rv);
    else wk_clear_error(); /* 2^56 bytes may not be allocatable: OOM is clean */
    /* stack: n equal shapes, the result n x 2^56 */
    wk_tensor *st[2] = {v, v};
    FAILS_T(wk_stack(st, 2, 0), WK_ERR_SHAPE, "wk_stack");
    /* a legal cat still works */
    wk_tensor *ok[3] = {small, small, small};
    wk_tensor *c = TU_OK(wk_cat(ok, 3, 0));
    assert_int_equal(wk_dim(c, 0), 9);
    wk_tensor_free(c);
    wk_tensor_free(w);
    wk_tensor_free(v);
    wk_tensor_free(small);
    assert_int_equal(in_use(), base);
}

static void test_pad_repeat_overflow(void **state) {
    (void)state;
    const int64_t s4 = 4, big = E56;
    wk_tensor *t = TU_OK(wk_zeros(&s4, 1, WK_F32, wk_cpu()));
    wk_tensor *v = huge_view(&big, 1);
    FAILS_T(wk_pad_with_zeros(t, 0, INT64_MAX, 1), WK_ERR_SHAPE, "wk_pad_with_zeros");
    FAILS_T(wk_pad_with_zeros(t, 0, INT64_MAX - 4, INT64_MAX), WK_ERR_SHAPE, "wk_pad_with_zeros");
    FAILS_T(wk_pad_with_same(t, 0, INT64_MAX - 1, 2), WK_ERR_SHAPE, "wk_pad_with_same");
    FAILS_T(wk_pad_with_zeros(v, 0, 1, 0), WK_ERR_SHAPE, "wk_pad_with_zeros");
    FAILS_T(wk_pad_with_same(v, 0, 0, 1), WK_ERR_SHAPE, "wk_pad_with_same");
    const int64_t r1[1] = {INT64_MAX / 2}, r2[2] = {INT64_C(1) << 32, INT64_C(1) << 32}, r3[1] = {INT64_MAX};
    FAILS_T(wk_repeat(t, r1, 1), WK_ERR_SHAPE, "wk_repeat");
    FAILS_T(wk_repeat(t, r2, 2), WK_ERR_SHAPE, "wk_repeat");
    FAILS_T(wk_repeat(v, r3, 1), WK_ERR_SHAPE, "wk_repeat");
    const int64_t r4[1] = {2};
    FAILS_T(wk_repeat(v, r4, 1), WK_ERR_SHAPE, "wk_repeat");
    wk_tensor *p = TU_OK(wk_pad_with_zeros(t, 0, 2, 3));
    assert_int_equal(wk_dim(p, 0), 9);
    wk_tensor_free(p);
    wk_tensor_free(v);
    wk_tensor_free(t);
}

static void test_shape_products(void **state) {
    (void)state;
    const int64_t s4 = 4;
    wk_tensor *t = TU_OK(wk_zeros(&s4, 1, WK_F32, wk_cpu()));
    /* reshape: products that wrap int64 (2^32 * 2^32 = 2^64 -> 0) */
    const int64_t wrap[3] = {INT64_C(1) << 32, INT64_C(1) << 32, 4};
    FAILS_T(wk_reshape(t, wrap, 3), WK_ERR_SHAPE, "wk_reshape");
    const int64_t hole[3] = {-1, INT64_C(1) << 40, INT64_C(1) << 40};
    FAILS_T(wk_reshape(t, hole, 3), WK_ERR_SHAPE, "wk_reshape");
    const int64_t zero_wrap[3] = {0, INT64_MAX, INT64_MAX};
    wk_tensor *empty = TU_OK(wk_zeros((const int64_t[1]){0}, 1, WK_F32, wk_cpu()));
    FAILS_T(wk_reshape(empty, zero_wrap, 3), WK_ERR_SHAPE, "wk_reshape");
    /* creation */
    FAILS_T(wk_zeros(wrap, 3, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_zeros");
    FAILS_T(wk_empty(zero_wrap, 3, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_empty");
    FAILS_T(wk_eye(INT64_C(1) << 32, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_eye");
    FAILS_T(wk_eye(-1, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_eye");
    FAILS_T(wk_arange(0, 1e300, 1, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_arange");
    FAILS_T(wk_arange(-DBL_MAX, DBL_MAX, 1e-300, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_arange");
    FAILS_T(wk_arange(0, 0x1p57, 1, WK_U8, wk_cpu()), WK_ERR_SHAPE, "wk_arange");
    FAILS_T(wk_rand(wrap, 3, 0, 1, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_rand");
    FAILS_T(wk_from_host(NULL, 0, zero_wrap, 3, WK_F32, wk_cpu()), WK_ERR_SHAPE, "wk_from_host");
    /* views */
    FAILS_T(wk_broadcast_as(t, wrap, 3), WK_ERR_SHAPE, "wk_broadcast_as");
    FAILS_T(wk_broadcast_left(t, wrap, 2), WK_ERR_SHAPE, "wk_broadcast_as");
    /* binary op of two legal views whose broadcast is too large */
    const int64_t a_s[2] = {E56, 1}, b_s[2] = {1, E56};
    wk_tensor *a = huge_view(a_s, 2), *b = huge_view(b_s, 2);
    FAILS_T(wk_add(a, b), WK_ERR_SHAPE, "add"); /* binary ops are named by the op */
    /* upsample to a huge output */
    wk_tensor *img = TU_OK(wk_zeros((const int64_t[4]){1, 1, 2, 2}, 4, WK_F32, wk_cpu()));
    FAILS_T(wk_upsample_nearest2d(img, INT64_C(1) << 40, INT64_C(1) << 40), WK_ERR_SHAPE, "wk_upsample_nearest2d");
    wk_tensor_free(img);
    wk_tensor_free(a);
    wk_tensor_free(b);
    wk_tensor_free(empty);
    wk_tensor_free(t);
}

static void test_matmul_batch_overflow(void **state) {
    (void)state;
    /* both operands legal (2^56 elements each); the broadcast lhs operand
     * batch x m x k = 2^84 elements would wrap int64 */
    const int64_t as[3] = {1, INT64_C(1) << 28, INT64_C(1) << 28}, bs[3] = {INT64_C(1) << 28, INT64_C(1) << 28, 1};
    wk_tensor *x = TU_OK(wk_zeros((const int64_t[3]){1, 1, 1}, 3, WK_F32, wk_cpu()));
    wk_tensor *a = TU_OK(wk_broadcast_as(x, as, 3)), *b = TU_OK(wk_broadcast_as(x, bs, 3));
    FAILS_T(wk_broadcast_matmul(a, b), WK_ERR_SHAPE, "wk_broadcast_matmul");
    /* a tiny output (2 x 2 x 1) over a 2^57-element broadcast lhs: refused
     * instead of running 2^57 multiply-adds */
    const int64_t cs[3] = {1, 2, INT64_C(1) << 55}, ds[3] = {2, INT64_C(1) << 55, 1};
    wk_tensor *c = TU_OK(wk_broadcast_as(x, cs, 3)), *d = TU_OK(wk_broadcast_as(x, ds, 3));
    FAILS_T(wk_broadcast_matmul(c, d), WK_ERR_SHAPE, "wk_broadcast_matmul");
    /* rank-4 batch dims that broadcast to a product over the limit */
    const int64_t es[4] = {INT64_C(1) << 30, 1, 2, 2}, fs[4] = {1, INT64_C(1) << 30, 2, 2};
    wk_tensor *x4 = TU_OK(wk_zeros((const int64_t[4]){1, 1, 1, 1}, 4, WK_F32, wk_cpu()));
    wk_tensor *e = TU_OK(wk_broadcast_as(x4, es, 4)), *f = TU_OK(wk_broadcast_as(x4, fs, 4));
    FAILS_T(wk_broadcast_matmul(e, f), WK_ERR_SHAPE, "wk_broadcast_matmul");
    /* a small broadcast matmul still works */
    wk_tensor *g = TU_OK(wk_ones((const int64_t[3]){3, 2, 4}, 3, WK_F32, wk_cpu()));
    wk_tensor *h = TU_OK(wk_ones((const int64_t[2]){4, 5}, 2, WK_F32, wk_cpu()));
    wk_tensor *gh = TU_OK(wk_broadcast_matmul(g, h));
    assert_int_equal(wk_numel(gh), 30);
    double v;
    TU_STATUS_OK(wk_get(gh, (const int64_t[3]){2, 1, 4}, &v));
    assert_true(v == 4);
    wk_tensor *all[] = {x, a, b, c, d, x4, e, f, g, h, gh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

static void test_conv_pool_sizes(void **state) {
    (void)state;
    wk_tensor *x = TU_OK(wk_ones((const int64_t[3]){1, 1, 8}, 3, WK_F32, wk_cpu()));
    wk_tensor *w = TU_OK(wk_ones((const int64_t[3]){1, 1, 3}, 3, WK_F32, wk_cpu()));
    wk_conv_params p = {INT64_MAX / 2, 1, 1, 1, 0};
    FAILS_T(wk_conv1d(x, w, &p), WK_ERR_ARG, "wk_conv1d");
    p = (wk_conv_params){0, INT64_MAX, 1, 1, 0};
    FAILS_T(wk_conv1d(x, w, &p), WK_ERR_ARG, "wk_conv1d");
    p = (wk_conv_params){0, 1, INT64_MAX, 1, 0};
    FAILS_T(wk_conv1d(x, w, &p), WK_ERR_ARG, "wk_conv1d");
    /* transposed: (in - 1) * stride large enough that the output is too big */
    p = (wk_conv_params){0, INT64_C(1) << 30, 1, 1, 0};
    wk_tensor *xb = TU_OK(wk_ones((const int64_t[4]){1, 1, 1, 1}, 4, WK_F32, wk_cpu()));
    const int64_t xs[4] = {1, 1, INT64_C(1) << 20, INT64_C(1) << 20};
    wk_tensor *xv = TU_OK(wk_broadcast_as(xb, xs, 4));
    wk_tensor *w2 = TU_OK(wk_ones((const int64_t[4]){1, 1, 1, 1}, 4, WK_F32, wk_cpu()));
    FAILS_T(wk_conv_transpose2d(xv, w2, &p), WK_ERR_SHAPE, "wk_conv_transpose2d");
    /* a huge input view: the output would exceed any shape */
    const int64_t xs1[3] = {INT64_C(1) << 40, 1, INT64_C(1) << 16};
    wk_tensor *x1 = TU_OK(wk_broadcast_as(x, (const int64_t[3]){1, 1, 8}, 3));
    wk_tensor *xbase = TU_OK(wk_ones((const int64_t[3]){1, 1, 1}, 3, WK_F32, wk_cpu()));
    wk_tensor *xh = TU_OK(wk_broadcast_as(xbase, xs1, 3));
    FAILS_T(wk_conv1d(xh, w, NULL), WK_ERR_SHAPE, "wk_conv1d");
    /* pooling: kernels and paddings far past the input */
    wk_tensor *img = TU_OK(wk_ones((const int64_t[4]){1, 1, 2, 2}, 4, WK_F32, wk_cpu()));
    FAILS_T(wk_max_pool2d(img, INT64_MAX, 1, 1, 1, 0, 0), WK_ERR_SHAPE, "wk_max_pool2d");
    FAILS_T(wk_avg_pool2d(img, 1, 1, 1, 1, INT64_MAX, 0, true), WK_ERR_ARG, "wk_avg_pool2d");
    FAILS_T(wk_max_pool2d(img, 2, 2, 0, 1, 0, 0), WK_ERR_ARG, "wk_max_pool2d");
    /* a kernel of INT64_MAX with padding INT64_MAX/2 is legal (padding <=
     * kernel/2): every window covers the whole plane; no size wraps */
    wk_tensor *m = TU_OK(wk_max_pool2d(img, INT64_MAX, INT64_MAX, 1, 1, INT64_MAX / 2, INT64_MAX / 2));
    tu_assert_shape(m, (const int64_t[4]){1, 1, 2, 2}, 4);
    const double ones[4] = {1, 1, 1, 1};
    tu_assert_close(m, ones, 4, 0, 0);
    wk_tensor *av = TU_OK(wk_avg_pool2d(img, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX / 2,
                                        INT64_MAX / 2, false));
    tu_assert_shape(av, (const int64_t[4]){1, 1, 1, 1}, 4);
    tu_assert_close(av, ones, 1, 0, 0);
    wk_tensor *all[] = {x, w, xb, xv, w2, x1, xbase, xh, img, m, av};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

/* ------------------------------------------------------------ NULL pointers */

static void test_null_arrays_and_outputs(void **state) {
    (void)state;
    size_t base = in_use();
    wk_device *cpu = wk_cpu();
    const int64_t s23[2] = {2, 3};
    wk_tensor *t = TU_OK(wk_ones(s23, 2, WK_F32, cpu));
    wk_tensor *out[4] = {NULL};
    float fb[6];
    double db[6], v;
    int cnt;
    /* creation: NULL shape with rank > 0, NULL device, NULL data */
    FAILS_T(wk_zeros(NULL, 2, WK_F32, cpu), WK_ERR_ARG, "wk_zeros");
    FAILS_T(wk_ones(NULL, 1, WK_F32, cpu), WK_ERR_ARG, "wk_ones");
    FAILS_T(wk_full(NULL, 1, 2.0, WK_F32, cpu), WK_ERR_ARG, "wk_full");
    FAILS_T(wk_empty(NULL, 1, WK_F32, cpu), WK_ERR_ARG, "wk_empty");
    FAILS_T(wk_rand(NULL, 1, 0, 1, WK_F32, cpu), WK_ERR_ARG, "wk_rand");
    FAILS_T(wk_randn(NULL, 1, 0, 1, WK_F32, cpu), WK_ERR_ARG, "wk_randn");
    FAILS_T(wk_from_host(fb, sizeof fb, NULL, 2, WK_F32, cpu), WK_ERR_ARG, "wk_from_host");
    FAILS_T(wk_from_host(NULL, sizeof fb, s23, 2, WK_F32, cpu), WK_ERR_ARG, "wk_from_host");
    FAILS_T(wk_zeros(s23, 2, WK_F32, NULL), WK_ERR_ARG, "wk_zeros");
    FAILS_T(wk_arange(0, 3, 1, WK_F32, NULL), WK_ERR_ARG, "wk_arange");
    FAILS_T(wk_eye(3, WK_F32, NULL), WK_ERR_ARG, "wk_eye");
    FAILS_T(wk_rand(s23, 2, 0, 1, WK_F32, NULL), WK_ERR_ARG, "wk_rand");
    FAILS_T(wk_to_device(t, NULL), WK_ERR_ARG, "wk_to_device");
    /* rank 0 with a NULL shape is a scalar, as documented by "rank entries" */
    wk_tensor *sc = TU_OK(wk_full(NULL, 0, 2.5, WK_F32, cpu));
    TU_STATUS_OK(wk_item(sc, &v));
    assert_true(v == 2.5);
    /* readback: NULL buffers and outputs */
    FAILS_S(wk_to_host(t, NULL, sizeof fb), WK_ERR_ARG, "wk_to_host");
    FAILS_S(wk_to_host_f32(t, NULL, 6), WK_ERR_ARG, "wk_to_host_f32");
    FAILS_S(wk_to_host_f64(t, NULL, 6), WK_ERR_ARG, "wk_to_host_f64");
    FAILS_S(wk_item(sc, NULL), WK_ERR_ARG, "wk_item");
    FAILS_S(wk_get(t, NULL, &v), WK_ERR_ARG, "wk_get");
    FAILS_S(wk_get(t, (const int64_t[2]){0, 0}, NULL), WK_ERR_ARG, "wk_get");
    (void)db;
    /* views: arrays with a count > 0 */
    FAILS_T(wk_reshape(t, NULL, 2), WK_ERR_ARG, "wk_reshape");
    FAILS_T(wk_permute(t, NULL, 2), WK_ERR_ARG, "wk_permute");
    FAILS_T(wk_broadcast_as(t, NULL, 2), WK_ERR_ARG, "wk_broadcast_as");
    FAILS_T(wk_broadcast_left(t, NULL, 1), WK_ERR_ARG, "wk_broadcast_left");
    wk_tensor *bl = TU_OK(wk_broadcast_left(t, NULL, 0)); /* nothing to add: fine */
    tu_assert_shape(bl, s23, 2);
    wk_tensor_free(bl);
    FAILS_S(wk_chunk(t, 2, 0, NULL, &cnt), WK_ERR_ARG, "wk_chunk");
    FAILS_S(wk_chunk(t, 2, 0, out, NULL), WK_ERR_ARG, "wk_chunk");
    FAILS_S(wk_split(t, NULL, 2, 1, out), WK_ERR_ARG, "wk_split");
    FAILS_S(wk_split(t, (const int64_t[2]){1, 2}, 2, 1, NULL), WK_ERR_ARG, "wk_split");
    /* reductions and friends: dims arrays */
    FAILS_T(wk_reduce(t, WK_REDUCE_SUM, NULL, 1, false), WK_ERR_ARG, "sum");
    FAILS_T(wk_sum(t, NULL, 1, false), WK_ERR_ARG, "sum");
    FAILS_T(wk_mean(t, NULL, 1, false), WK_ERR_ARG, "mean");
    FAILS_T(wk_max(t, NULL, 1, false), WK_ERR_ARG, "max");
    FAILS_T(wk_min(t, NULL, 1, false), WK_ERR_ARG, "min");
    FAILS_T(wk_var(t, NULL, 1, false, true), WK_ERR_ARG, "wk_var");
    FAILS_T(wk_std(t, NULL, 1, false, true), WK_ERR_ARG, "wk_std");
    FAILS_T(wk_log_sum_exp(t, NULL, 1, false), WK_ERR_ARG, "wk_log_sum_exp");
    FAILS_T(wk_prod(t, NULL, 1, false), WK_ERR_ARG, "prod");
    FAILS_T(wk_any(t, NULL, 1, false), WK_ERR_ARG, "any");
    FAILS_T(wk_all(t, NULL, 1, false), WK_ERR_ARG, "all");
    FAILS_T(wk_flip(t, NULL, 1), WK_ERR_ARG, "wk_flip");
    FAILS_T(wk_repeat(t, NULL, 2), WK_ERR_ARG, "wk_repeat");
    /* joins: the array itself, and a NULL element (a NULL tensor input) */
    FAILS_T(wk_cat(NULL, 2, 0), WK_ERR_ARG, "wk_cat");
    FAILS_T(wk_stack(NULL, 2, 0), WK_ERR_ARG, "wk_stack");
    wk_tensor *pair[2] = {t, NULL};
    FAILS_T(wk_cat(pair, 2, 0), WK_ERR_ARG, "wk_cat");
    FAILS_T(wk_stack(pair, 2, 0), WK_ERR_ARG, "wk_stack");
    /* sort / topk: both outputs NULL is "nothing wanted", still checked */
    TU_STATUS_OK(wk_sort(t, 1, false, NULL, NULL));
    TU_STATUS_OK(wk_topk(t, 1, 1, true, NULL, NULL));
    /* devices and memory */
    FAILS_S(wk_device_synchronize(NULL), WK_ERR_ARG, "wk_device_synchronize");
    FAILS_S(wk_device_set_seed(NULL, 1), WK_ERR_ARG, "wk_device_set_seed");
    FAILS_S(wk_device_memory_stats(cpu, NULL), WK_ERR_ARG, "wk_device_memory_stats");
    wk_memory_stats ms;
    FAILS_S(wk_device_memory_stats(NULL, &ms), WK_ERR_ARG, "wk_device_memory_stats");
    FAILS_S(wk_device_release_cache(NULL, NULL), WK_ERR_ARG, "wk_device_release_cache");
    wk_cpu_mem_stats_get(NULL); /* void: must simply not crash */
    assert_false(wk_dtype_from_name(NULL, NULL));
    wk_dtype dt;
    assert_false(wk_dtype_from_name(NULL, &dt));
    assert_true(wk_dtype_from_name("f16", NULL));
    assert_null(wk_tensor_describe(t, NULL, 16));
    /* I/O: paths, names, outputs */
    char **names = NULL;
    wk_tensor **ts = NULL;
    FAILS_T(wk_npy_load(NULL, cpu), WK_ERR_ARG, "wk_npy_load");
    FAILS_T(wk_npy_load_bytes(NULL, 16, cpu), WK_ERR_ARG, "wk_npy_load_bytes");
    FAILS_S(wk_npy_save(NULL, t), WK_ERR_ARG, "wk_npy_save");
    FAILS_T(wk_npy_load("/nonexistent/x.npy", NULL), WK_ERR_ARG, "wk_npy_load");
    FAILS_T(wk_npy_load_bytes("\x93NUMPY", 6, NULL), WK_ERR_ARG, "wk_npy_load_bytes");
    FAILS_S(wk_npz_load("/nonexistent/x.npz", NULL, &names, &ts, &cnt), WK_ERR_ARG, "wk_npz_load");
    FAILS_S(wk_npz_load(NULL, cpu, &names, &ts, &cnt), WK_ERR_ARG, "wk_npz_load");
    FAILS_S(wk_npz_load("x.npz", cpu, NULL, &ts, &cnt), WK_ERR_ARG, "wk_npz_load");
    FAILS_S(wk_npz_load("x.npz", cpu, &names, NULL, &cnt), WK_ERR_ARG, "wk_npz_load");
    FAILS_S(wk_npz_load("x.npz", cpu, &names, &ts, NULL), WK_ERR_ARG, "wk_npz_load");
    const char *nm[1] = {"a"};
    const char *nnull[1] = {NULL};
    wk_tensor *one[1] = {t};
    FAILS_S(wk_npz_save(NULL, nm, one, 1), WK_ERR_ARG, "wk_npz_save");
    FAILS_S(wk_npz_save("/tmp/never_written.npz", NULL, one, 1), WK_ERR_ARG, "wk_npz_save");
    FAILS_S(wk_npz_save("/tmp/never_written.npz", nm, NULL, 1), WK_ERR_ARG, "wk_npz_save");
    FAILS_S(wk_npz_save("/tmp/never_written.npz", nnull, one, 1), WK_ERR_ARG, "wk_npz_save");
    wk_npz_free(NULL, NULL, 3); /* void: must not crash */
    /* nothing leaked by any of the failures */
    wk_tensor_free(sc);
    wk_tensor_free(t);
    assert_int_equal(in_use(), base);
    wk_clear_error();
}

/* NULL tensor inputs everywhere: a clean WK_ERR_ARG naming the op. */
static void test_null_tensors(void **state) {
    (void)state;
    wk_tensor *t = TU_OK(wk_ones((const int64_t[2]){2, 3}, 2, WK_F32, wk_cpu()));
    FAILS_T(wk_add(NULL, t), WK_ERR_ARG, "add");
    FAILS_T(wk_matmul(t, NULL), WK_ERR_ARG, "wk_matmul");
    FAILS_T(wk_conv1d(NULL, t, NULL), WK_ERR_ARG, "wk_conv1d");
    FAILS_T(wk_where(NULL, t, t), WK_ERR_ARG, "wk_where");
    FAILS_T(wk_index_select(t, NULL, 0), WK_ERR_ARG, "wk_index_select");
    FAILS_T(wk_embedding(NULL, t), WK_ERR_ARG, "wk_embedding");
    FAILS_T(wk_masked_fill(t, NULL, 0), WK_ERR_ARG, "wk_masked_fill");
    FAILS_T(wk_upsample_nearest1d(NULL, 4), WK_ERR_ARG, "wk_upsample_nearest1d");
    FAILS_S(wk_copy_(t, NULL), WK_ERR_ARG, "wk_copy_");
    FAILS_S(wk_slice_set(NULL, t, 0, 0), WK_ERR_ARG, "wk_slice_set");
    FAILS_S(wk_fill_(NULL, 1), WK_ERR_ARG, "wk_fill_");
    FAILS_S(wk_print(NULL), WK_ERR_ARG, "wk_print");
    FAILS_S(wk_npy_save("/tmp/never_written.npy", NULL), WK_ERR_ARG, "wk_npy_save");
    wk_tensor *vs = NULL, *is = NULL;
    FAILS_S(wk_sort(NULL, 0, false, &vs, &is), WK_ERR_ARG, "wk_sort");
    assert_null(vs);
    assert_null(is);
    wk_tensor_free(t);
}

/* ------------------------------------------------------------ error state */

static void test_error_state_semantics(void **state) {
    (void)state;
    wk_tensor *t = TU_OK(wk_ones((const int64_t[2]){2, 3}, 2, WK_F32, wk_cpu()));
    wk_clear_error();
    assert_int_equal(wk_last_status(), WK_OK);
    assert_string_equal(wk_last_error(), "");
    /* a failure records its status and message */
    assert_null(wk_transpose(t, 0, 5));
    assert_int_equal(wk_last_status(), WK_ERR_INDEX);
    char first[1024];
    snprintf(first, sizeof first, "%s", wk_last_error());
    assert_non_null(strstr(first, "wk_transpose"));
    /* a success does not clear it */
    wk_tensor *u = TU_OK(wk_exp(t));
    assert_int_equal(wk_last_status(), WK_ERR_INDEX);
    assert_string_equal(wk_last_error(), first);
    /* a NULL input while an error is pending keeps it (first cause wins) */
    assert_null(wk_exp(wk_transpose(t, 9, 0)));
    assert_int_equal(wk_last_status(), WK_ERR_INDEX);
    assert_non_null(strstr(wk_last_error(), "wk_transpose"));
    assert_null(wk_add(NULL, u));
    assert_non_null(strstr(wk_last_error(), "wk_transpose"));
    /* a real failure replaces it */
    wk_tensor *four = TU_OK(wk_ones((const int64_t[1]){4}, 1, WK_F32, wk_cpu()));
    assert_null(wk_add(t, four));
    wk_tensor_free(four);
    assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
    assert_non_null(strstr(wk_last_error(), "add: "));
    /* after a clear, a NULL input is itself the first cause */
    wk_clear_error();
    assert_null(wk_neg(NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_string_equal(wk_last_error(), "neg: NULL tensor argument"); /* unary ops: named by the op */
    /* one expression, checked once at the end: the innermost failure shows */
    wk_clear_error();
    wk_scope_begin();
    wk_tensor *r = wk_sum_all(wk_mul(wk_exp(wk_reshape(t, (const int64_t[1]){7}, 1)), u));
    assert_null(r);
    assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
    assert_non_null(strstr(wk_last_error(), "wk_reshape"));
    wk_scope_end();
    wk_clear_error();
    wk_tensor_free(u);
    wk_tensor_free(t);
}

static void *other_thread(void *arg) {
    (void)arg;
    /* each thread has its own state: the main thread's error is not here */
    intptr_t ok = wk_last_status() == WK_OK && wk_last_error()[0] == 0;
    wk_tensor *r = wk_neg(NULL); /* no cmocka asserts off the main thread: a flag */
    ok = ok && !r && wk_last_status() == WK_ERR_ARG;
    return (void *)ok;
}

static void test_error_state_per_thread(void **state) {
    (void)state;
    wk_clear_error();
    assert_null(wk_zeros(NULL, 1, WK_F32, wk_cpu()));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
    void *res = NULL;
    pthread_join(th, &res);
    assert_true(res != NULL);
    /* the other thread's failure did not touch this one's message */
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_zeros"));
    wk_clear_error();
}

/* ------------------------------------------------------------ scopes */

static void test_deep_scopes(void **state) {
    (void)state;
    size_t base = in_use();
    enum { DEPTH = 5000 };
    static wk_tensor *at[DEPTH];
    const int64_t s = 16;
    /* past the old 64-level limit every level still owns its tensors */
    for (int i = 0; i < DEPTH; i++) {
        wk_scope_begin();
        at[i] = TU_OK(wk_full(&s, 1, (double)i, WK_F32, wk_cpu()));
    }
    assert_int_equal(wk_last_status(), WK_OK);
    size_t full = in_use();
    assert_true(full > base);
    for (int i = DEPTH - 1; i >= 0; i--) {
        /* tensors of outer levels are alive, the inner ones are gone */
        double v;
        TU_STATUS_OK(wk_get(at[i], (const int64_t[1]){3}, &v));
        assert_true(v == (double)i);
        wk_scope_end();
        if (i == 100) {
            /* the 4900 levels above freed their tensors */
            assert_true(in_use() < full);
        }
    }
    assert_int_equal(in_use(), base);
    /* keep at a deep level hands the tensor to the caller */
    for (int i = 0; i < 200; i++) wk_scope_begin();
    wk_tensor *kept = wk_keep(TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu())));
    for (int i = 0; i < 200; i++) wk_scope_end();
    double v;
    TU_STATUS_OK(wk_get(kept, (const int64_t[1]){0}, &v));
    assert_true(v == 1);
    wk_tensor_free(kept);
    assert_int_equal(in_use(), base);
    /* an unbalanced end is harmless */
    wk_scope_end();
    wk_scope_end();
    assert_int_equal(in_use(), base);
}

/* A begin that cannot grow the stack: WK_ERR_OOM recorded, no scope opened
 * (tensors go to the enclosing scope), and its end still balances it. */
static void test_failed_scope_begin(void **state) {
    (void)state;
    size_t base = in_use();
    const int64_t s = 16;
    wk_clear_error();
    wk_scope_begin(); /* outer: works */
    wk_tensor *a = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk__scope_fail_next_begin();
    wk_scope_begin(); /* fails */
    assert_int_equal(wk_last_status(), WK_ERR_OOM);
    assert_non_null(strstr(wk_last_error(), "wk_scope_begin"));
    wk_clear_error();
    wk_scope_begin(); /* nested inside the failed one: also counted as failed */
    wk_tensor *b = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_scope_end();
    wk_scope_end(); /* balances the failed begin: b still alive (owned by outer) */
    double v;
    TU_STATUS_OK(wk_get(b, (const int64_t[1]){0}, &v));
    TU_STATUS_OK(wk_get(a, (const int64_t[1]){0}, &v));
    assert_true(v == 1);
    wk_scope_end(); /* outer: frees a and b */
    assert_int_equal(in_use(), base);
    /* the next begin works again and owns its tensors */
    wk_scope_begin();
    TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    assert_true(in_use() > base);
    wk_scope_end();
    assert_int_equal(in_use(), base);
    /* at depth 0 a failed begin leaves tensors to the caller */
    wk__scope_fail_next_begin();
    wk_scope_begin();
    wk_clear_error();
    wk_tensor *c = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_scope_end();
    TU_STATUS_OK(wk_get(c, (const int64_t[1]){0}, &v));
    wk_tensor_free(c);
    assert_int_equal(in_use(), base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cat_sum_overflow),
        cmocka_unit_test(test_pad_repeat_overflow),
        cmocka_unit_test(test_shape_products),
        cmocka_unit_test(test_matmul_batch_overflow),
        cmocka_unit_test(test_conv_pool_sizes),
        cmocka_unit_test(test_null_arrays_and_outputs),
        cmocka_unit_test(test_null_tensors),
        cmocka_unit_test(test_error_state_semantics),
        cmocka_unit_test(test_error_state_per_thread),
        cmocka_unit_test(test_deep_scopes),
        cmocka_unit_test(test_failed_scope_begin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
