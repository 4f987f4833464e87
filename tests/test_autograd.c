/* The autograd core: recording rules, gradient stores, graph lifetime,
 * no-grad regions, in-place safety, higher order, and the foundation's
 * rules (unary list, binary list with broadcasting, affine, sum / mean,
 * views, matmul, copies) against central differences in f64. */
#include "testutil.h"
#include "gradcheck.h"
#include "wick/custom_op.h"
#include "autograd/record.h"
#include "nn/nn_internal.h"
#include "train/train_internal.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static wk_tensor *vals(const int64_t *shape, int rank, double scale, double shift) {
    return TU_OK(tu_values(shape, rank, WK_F64, scale, shift));
}

static void test_simple_gradient(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {5};
    wk_tensor *x = vals(s, 1, 1.0, 0.3);
    TU_STATUS_OK(wk_requires_grad(x, true));
    assert_true(wk_is_leaf(x));
    /* L = sum(x*x + 3x) -> dL/dx = 2x + 3 */
    wk_tensor *l = TU_OK(wk_sum_all(wk_add(wk_mul(x, x), wk_affine(x, 3.0, 0.0))));
    assert_true(wk_is_tracked(l));
    assert_string_equal(wk_grad_fn_name(l), "wk_sum");
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    wk_tensor *g = wk_grad(gs, x);
    assert_non_null(g);
    double xv[5], gv[5];
    TU_STATUS_OK(wk_to_host_f64(x, xv, 5));
    TU_STATUS_OK(wk_to_host_f64(g, gv, 5));
    for (int i = 0; i < 5; i++) assert_true(fabs(gv[i] - (2 * xv[i] + 3)) < 1e-12);
    /* accumulate: a second pass over a fresh graph adds */
    wk_tensor *l2 = TU_OK(wk_sum_all(wk_affine(x, 2.0, 0.0)));
    TU_STATUS_OK(wk_backward(l2, gs, NULL));
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, x), gv, 5));
    for (int i = 0; i < 5; i++) assert_true(fabs(gv[i] - (2 * xv[i] + 5)) < 1e-12);
    assert_int_equal(wk_grad_store_count(gs), 1);
    wk_grad_store_zero(gs);
    assert_null(wk_grad(gs, x));
    wk_grad_store_free(gs);
    wk_scope_end();
}

static void test_tracking_rules(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {2, 3};
    wk_tensor *x = vals(s, 2, 1.0, 0.0);
    wk_tensor *y = vals(s, 2, 0.5, 1.0);
    /* untracked: nothing recorded */
    wk_tensor *u = TU_OK(wk_add(x, y));
    assert_false(wk_is_tracked(u));
    TU_STATUS_OK(wk_requires_grad(x, true));
    /* integer results never tracked */
    wk_tensor *am = TU_OK(wk_argmax(x, 1, false));
    assert_false(wk_is_tracked(am));
    wk_tensor *cmp = TU_OK(wk_cmp(x, y, WK_LT));
    assert_false(wk_is_tracked(cmp));
    /* an integer tensor cannot require grad */
    wk_tensor *i32 = TU_OK(wk_to_dtype(y, WK_I32));
    assert_int_equal(wk_requires_grad(i32, true), WK_ERR_DTYPE);
    wk_clear_error();
    /* a non-leaf cannot be marked, unmarked only by detach */
    wk_tensor *z = TU_OK(wk_mul(x, y));
    assert_int_equal(wk_requires_grad(z, true), WK_ERR_ARG);
    assert_int_equal(wk_requires_grad(z, false), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor *d = TU_OK(wk_detach(z));
    assert_false(wk_is_tracked(d));
    assert_true(wk_shares_storage(d, z));
    /* no-grad regions nest */
    wk_no_grad_begin();
    wk_no_grad_begin();
    assert_false(wk_grad_enabled());
    wk_no_grad_end();
    assert_false(wk_is_tracked(wk_mul(x, y)));
    wk_no_grad_end();
    assert_true(wk_grad_enabled());
    assert_true(wk_is_tracked(wk_mul(x, y)));
    /* backward of an untracked root; a non-scalar root without grad_output */
    wk_grad_store *gs = wk_grad_store_new();
    assert_int_equal(wk_backward(u, gs, NULL), WK_ERR_ARG);
    assert_int_equal(wk_backward(z, gs, NULL), WK_ERR_SHAPE);
    wk_clear_error();
    /* with a grad_output */
    wk_tensor *go = vals(s, 2, 1.0, 2.0);
    wk_backward_opts o = {.grad_output = go};
    TU_STATUS_OK(wk_backward(z, gs, &o));
    wk_tensor *want = TU_OK(wk_mul(go, y));
    assert_true(tu_max_abs_diff(wk_grad(gs, x), want) < 1e-12);
    /* a wrong grad_output shape */
    int64_t s2[] = {3, 2};
    o.grad_output = vals(s2, 2, 1.0, 0.0);
    wk_tensor *z2 = TU_OK(wk_mul(x, y));
    assert_int_equal(wk_backward(z2, gs, &o), WK_ERR_SHAPE);
    wk_clear_error();
    wk_grad_store_free(gs);
    wk_scope_end();
}

static void test_graph_reuse_and_inplace(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {4};
    wk_tensor *x = vals(s, 1, 1.0, 0.5);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *l = TU_OK(wk_sum_all(wk_exp(x)));
    wk_grad_store *gs = wk_grad_store_new();
    wk_backward_opts keep = {.keep_graph = true};
    TU_STATUS_OK(wk_backward(l, gs, &keep));
    TU_STATUS_OK(wk_backward(l, gs, NULL)); /* frees as it goes */
    assert_int_equal(wk_backward(l, gs, NULL), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "keep_graph"));
    wk_clear_error();
    /* the gradient is twice exp(x) */
    wk_tensor *want = TU_OK(wk_affine(wk_exp(x), 2.0, 0.0));
    assert_true(tu_max_abs_diff(wk_grad(gs, x), want) < 1e-12);

    /* in-place writes into tracked tensors are refused in grad mode */
    assert_int_equal(wk_fill_(x, 1.0), WK_ERR_ARG);
    wk_tensor *y = TU_OK(wk_mul(x, x));
    assert_int_equal(wk_zero_(y), WK_ERR_ARG);
    wk_clear_error();
    /* a saved value written through an untracked alias: backward refuses */
    wk_tensor *e = TU_OK(wk_sum_all(wk_mul(x, x)));
    wk_tensor *alias = TU_OK(wk_detach(x));
    TU_STATUS_OK(wk_fill_(alias, 3.0));
    assert_int_equal(wk_backward(e, gs, NULL), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "modified in place"));
    wk_clear_error();
    /* in a no-grad region the update is allowed (optimizers) */
    wk_no_grad_begin();
    TU_STATUS_OK(wk_fill_(x, 2.0));
    wk_no_grad_end();
    wk_grad_store_free(gs);
    wk_scope_end();
}

/* A chain long enough that recursion over it would overflow the stack. */
static void test_deep_chain(void **state) {
    (void)state;
    int64_t s[] = {1};
    wk_tensor *x = vals(s, 1, 0.0, 1.0);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *y = wk_tensor_retain(x);
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        wk_tensor *z = wk_affine(y, 1.0, 1e-6);
        wk_tensor_free(y);
        y = TU_OK(z);
    }
    wk_grad_store *gs = wk_grad_store_new();
    wk_backward_opts keep = {.keep_graph = true};
    TU_STATUS_OK(wk_backward(y, gs, &keep));
    double g;
    TU_STATUS_OK(wk_item(wk_grad(gs, x), &g));
    assert_true(g == 1.0);
    wk_grad_store_free(gs);
    wk_tensor_free(y); /* frees the whole chain (ASan: no leak, no overflow) */
    wk_tensor_free(x);
}

/* ---- the foundation's rules against finite differences ---- */

typedef struct {
    int which;
} fctx;

static wk_tensor *f_unary(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    return wk_unary(in[0], (wk_unary_op)((fctx *)ctx)->which);
}

static void test_unary_rules(void **state) {
    (void)state;
    for (int op = 0; op < WK_UNARY_COUNT; op++) {
        wk_scope_begin();
        int64_t s[] = {3, 4};
        /* a domain away from kinks and poles: positive for log/sqrt, |x| >= 0.1 */
        wk_tensor *x = vals(s, 2, 1.0, 0.0);
        double v[12];
        TU_STATUS_OK(wk_to_host_f64(x, v, 12));
        for (int i = 0; i < 12; i++) {
            v[i] = (i % 2 ? -1 : 1) * (0.2 + fabs(v[i]));
            if (op == WK_LOG || op == WK_SQRT || op == WK_RECIP) v[i] = fabs(v[i]);
        }
        wk_tensor *base = TU_OK(wk_from_host(v, sizeof v, (int64_t[]){4, 3}, 2, WK_F64, wk_cpu()));
        wk_tensor *xt = TU_OK(wk_t(base)); /* through a transposed view */
        fctx c = {op};
        char what[64];
        snprintf(what, sizeof what, "unary %s", wk_unary_name((wk_unary_op)op));
        gc_opts o = {.second_order = true, .atol = 1e-5, .rtol = 1e-4};
        gc_check(what, f_unary, &c, &xt, 1, &o);
        wk_scope_end();
    }
}

static wk_tensor *f_binary(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    return wk_binary(in[0], in[1], (wk_binary_op)((fctx *)ctx)->which);
}

static void test_binary_rules(void **state) {
    (void)state;
    for (int op = 0; op < WK_BINARY_COUNT; op++) {
        wk_scope_begin();
        /* (3, 1) against (4): both sides broadcast */
        int64_t sa[] = {3, 1}, sb[] = {4};
        wk_tensor *a = vals(sa, 2, 1.0, op == WK_POW ? 2.0 : 0.3);
        wk_tensor *b = vals(sb, 1, 1.0, op == WK_DIV ? 3.0 : -0.2);
        wk_tensor *in[2] = {a, b};
        fctx c = {op};
        char what[64];
        snprintf(what, sizeof what, "binary %s", wk_binary_name((wk_binary_op)op));
        gc_opts o = {.second_order = op != WK_MAXIMUM && op != WK_MINIMUM, .atol = 1e-5, .rtol = 1e-4};
        gc_check(what, f_binary, &c, in, 2, &o);
        wk_scope_end();
    }
}

static void test_maximum_ties_split(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {3};
    double av[] = {1, 2, 3}, bv[] = {1, 5, 0};
    wk_tensor *a = TU_OK(wk_from_host(av, sizeof av, s, 1, WK_F64, wk_cpu()));
    wk_tensor *b = TU_OK(wk_from_host(bv, sizeof bv, s, 1, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_requires_grad(a, true));
    TU_STATUS_OK(wk_requires_grad(b, true));
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(wk_sum_all(wk_maximum(a, b)), gs, NULL));
    double ga[3], gb[3];
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, a), ga, 3));
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, b), gb, 3));
    assert_true(ga[0] == 0.5 && gb[0] == 0.5); /* the tie: half each, as PyTorch */
    assert_true(ga[1] == 0 && gb[1] == 1);
    assert_true(ga[2] == 1 && gb[2] == 0);
    wk_grad_store_free(gs);
    wk_scope_end();
}

static wk_tensor *f_views(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    (void)ctx;
    /* x (2, 3, 4): permute, narrow, select, reshape, unsqueeze, squeeze,
     * broadcast, transpose, contiguous, flatten, to_dtype round trip */
    int p[] = {2, 0, 1};
    wk_tensor *a = wk_permute(in[0], p, 3);                   /* (4, 2, 3) */
    wk_tensor *b = wk_narrow(a, 0, 1, 2);                     /* (2, 2, 3) */
    wk_tensor *c = wk_select(b, 1, 1);                        /* (2, 3) */
    wk_tensor *d = wk_reshape(c, (int64_t[]){3, 2}, 2);       /* (3, 2) */
    wk_tensor *e = wk_unsqueeze(d, 0);                        /* (1, 3, 2) */
    wk_tensor *f = wk_broadcast_as(e, (int64_t[]){2, 3, 2}, 3);
    wk_tensor *g = wk_contiguous(wk_transpose(f, 0, 2));      /* (2, 3, 2) */
    wk_tensor *h = wk_to_dtype(wk_to_dtype(wk_flatten_all(g), WK_F32), WK_F64);
    wk_tensor *k = wk_squeeze(wk_unsqueeze(h, 1), 1);
    return wk_mul(k, wk_flatten_all(g));
}

static void test_view_rules(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {2, 3, 4};
    wk_tensor *x = vals(s, 3, 1.0, 0.1);
    gc_opts o = {.atol = 1e-4, .rtol = 1e-4, .eps = 1e-3}; /* the f32 round trip */
    gc_check("views", f_views, NULL, &x, 1, &o);
    wk_scope_end();
}

static wk_tensor *f_reduce(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    int which = ((fctx *)ctx)->which;
    int dims[] = {0, 2};
    wk_tensor *s = which == 0 ? wk_sum(in[0], dims, 2, which == 0) : wk_mean(in[0], dims, 2, false);
    return wk_mul(s, s);
}

static void test_reduce_rules(void **state) {
    (void)state;
    for (int w = 0; w < 2; w++) {
        wk_scope_begin();
        int64_t s[] = {2, 3, 4};
        wk_tensor *x = vals(s, 3, 1.0, 0.1);
        fctx c = {w};
        gc_opts o = {.second_order = true};
        gc_check(w ? "mean" : "sum", f_reduce, &c, &x, 1, &o);
        wk_scope_end();
    }
}

static wk_tensor *f_mlp(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    (void)ctx;
    /* tanh(x W1 + b1) W2 with a batched broadcast_matmul on a transposed W2 */
    wk_tensor *h = wk_tanh(wk_add(wk_matmul(in[0], in[1]), in[2]));
    return wk_broadcast_matmul(wk_unsqueeze(h, 0), wk_t(in[3]));
}

static void test_mlp_second_order(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *in[4] = {
        vals((int64_t[]){5, 3}, 2, 1.0, 0.0),
        vals((int64_t[]){3, 4}, 2, 0.7, 0.1),
        vals((int64_t[]){4}, 1, 0.3, 0.0),
        vals((int64_t[]){2, 4}, 2, 0.9, -0.1),
    };
    gc_opts o = {.second_order = true};
    gc_check("mlp", f_mlp, NULL, in, 4, &o);
    wk_scope_end();
}

static void test_grad_of_and_retain(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {3};
    wk_tensor *x = vals(s, 1, 1.0, 0.0);
    wk_tensor *w = vals(s, 1, 1.0, 1.0);
    TU_STATUS_OK(wk_requires_grad(x, true));
    TU_STATUS_OK(wk_requires_grad(w, true));
    wk_tensor *h = TU_OK(wk_mul(x, w));
    TU_STATUS_OK(wk_retain_grad(h));
    wk_tensor *l = TU_OK(wk_sum_all(wk_sqr(h)));
    wk_grad_store *gs = wk_grad_store_new();
    wk_backward_opts keep = {.keep_graph = true};
    TU_STATUS_OK(wk_backward(l, gs, &keep));
    wk_tensor *want = TU_OK(wk_affine(h, 2.0, 0.0));
    assert_true(tu_max_abs_diff(wk_grad(gs, h), want) < 1e-12);
    assert_int_equal(wk_grad_store_count(gs), 3);
    /* grad_of: only what was asked, nothing stored elsewhere */
    wk_tensor *out[2];
    wk_tensor *xs[2] = {x, wk_detach(x)};
    TU_STATUS_OK(wk_grad_of(l, xs, 2, NULL, out));
    assert_true(tu_max_abs_diff(out[0], wk_grad(gs, x)) < 1e-12);
    double z[3];
    TU_STATUS_OK(wk_to_host_f64(out[1], z, 3)); /* untracked: zeros */
    assert_true(z[0] == 0 && z[1] == 0 && z[2] == 0);
    wk_tensor_free(out[0]);
    wk_tensor_free(out[1]);
    wk_grad_store_free(gs);
    wk_scope_end();
}


/* ---- a custom op records; its stored callback is the rule ---- */

static wk_status cube_cpu(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out) {
    (void)user;
    (void)nin;
    const double *x = in[0].buf;
    double *y = out->buf;
    int64_t n = 1;
    for (int d = 0; d < out->rank; d++) n *= out->shape[d];
    /* out is contiguous; the input arrives contiguous (contiguous_inputs) */
    for (int64_t i = 0; i < n; i++) {
        double v = x[in[0].offset + i];
        y[i] = v * v * v;
    }
    return WK_OK;
}

static wk_status cube_backward(void *user, int nin, const wk_tensor *const *in, const wk_tensor *out,
                               const wk_tensor *g, wk_tensor **gin) {
    (void)user;
    (void)nin;
    (void)out;
    gin[0] = wk_mul(g, wk_affine(wk_sqr(in[0]), 3.0, 0.0));
    return gin[0] ? WK_OK : wk_last_status();
}

static const wk_custom_op *g_cube, *g_cube_nobw;
static wk_tensor *f_cube(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    (void)ctx;
    return wk_custom_op1(g_cube, wk_t(in[0]));
}

static void test_custom_op(void **state) {
    (void)state;
    wk_custom_op_def def = {.name = "cube", .num_inputs = 1, .cpu = cube_cpu, .backward = cube_backward,
                            .contiguous_inputs = true};
    wk_custom_op *op = wk_custom_op_register(&def);
    assert_non_null(op);
    def.name = "cube_nobw";
    def.backward = NULL;
    wk_custom_op *op2 = wk_custom_op_register(&def);
    assert_non_null(op2);
    g_cube = op;
    g_cube_nobw = op2;
    wk_scope_begin();
    wk_tensor *x = vals((int64_t[]){3, 2}, 2, 1.0, 0.2);
    gc_check("custom cube", f_cube, NULL, &x, 1, NULL);
    /* no callback: recorded, and backward names the op */
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *y = TU_OK(wk_custom_op1(g_cube_nobw, x));
    assert_true(wk_is_tracked(y));
    wk_grad_store *gs = wk_grad_store_new();
    assert_int_equal(wk_backward(wk_sum_all(y), gs, NULL), WK_ERR_NOT_COMPILED);
    assert_non_null(strstr(wk_last_error(), "cube_nobw"));
    wk_clear_error();
    wk_grad_store_free(gs);
    wk_scope_end();
    wk_custom_op_free(op);
    wk_custom_op_free(op2);
}

/* ---- passes on two threads over graphs that share the same leaves ---- */

static wk_tensor *g_shared_w;
static void *train_thread(void *arg) {
    double scale = *(double *)arg, *ok = arg;
    wk_grad_store *gs = wk_grad_store_new();
    wk_tensor *x = tu_values((int64_t[]){4, 3}, 2, WK_F64, scale, 0.0);
    *ok = 1;
    for (int it = 0; it < 300 && gs && x; it++) {
        wk_scope_begin();
        wk_tensor *l = wk_sum_all(wk_sqr(wk_matmul(x, g_shared_w)));
        if (!l || wk_backward(l, gs, NULL) != WK_OK) *ok = 0;
        wk_scope_end();
    }
    /* each pass adds 2 x^T (x w) to this thread's store: 300 of them */
    wk_scope_begin();
    wk_tensor *want = wk_affine(wk_matmul(wk_t(x), wk_matmul(x, g_shared_w)), 600.0, 0.0);
    if (!want || tu_max_abs_diff(wk_grad(gs, g_shared_w), want) > 1e-8) *ok = 0;
    wk_scope_end();
    wk_tensor_free(x);
    wk_grad_store_free(gs);
    return NULL;
}

static void test_threads_share_leaves(void **state) {
    (void)state;
    g_shared_w = vals((int64_t[]){3, 2}, 2, 1.0, 0.1);
    TU_STATUS_OK(wk_requires_grad(g_shared_w, true));
    double a = 1.0, b = 0.5;
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, train_thread, &a), 0);
    assert_int_equal(pthread_create(&t2, NULL, train_thread, &b), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_true(a == 1 && b == 1);
    wk_tensor_free(g_shared_w);
}

/* wk_grad_set(gs, t, NULL) forgets t (the count drops), and the entries
 * left behind stay reachable whatever the order of removals (the table's
 * deletion shifts probe runs; many keys make runs that wrap and collide). */
static void test_store_drop(void **state) {
    (void)state;
    wk_scope_begin();
    enum { N = 300 };
    wk_tensor *ps[N];
    wk_grad_store *gs = wk_grad_store_new();
    for (int i = 0; i < N; i++) {
        ps[i] = TU_OK(wk_full((int64_t[]){2}, 1, 0.0, WK_F64, wk_cpu()));
        TU_STATUS_OK(wk_requires_grad(ps[i], true));
        TU_STATUS_OK(wk_grad_set(gs, ps[i], wk_full((int64_t[]){2}, 1, (double)i, WK_F64, wk_cpu())));
    }
    assert_int_equal(wk_grad_store_count(gs), N);
    TU_STATUS_OK(wk_grad_set(gs, ps[0], NULL));
    TU_STATUS_OK(wk_grad_set(gs, ps[0], NULL)); /* dropping what is not there: a no-op */
    for (int i = 3; i < N; i += 3) TU_STATUS_OK(wk_grad_set(gs, ps[i], NULL));
    for (int i = N - 2; i > 0; i -= 3) TU_STATUS_OK(wk_grad_set(gs, ps[i], NULL));
    int left = 0;
    for (int i = 0; i < N; i++) {
        wk_tensor *g = wk_grad(gs, ps[i]);
        bool dropped = i % 3 == 0 || (N - 2 - i) % 3 == 0;
        if (dropped) {
            assert_null(g);
            continue;
        }
        left++;
        assert_non_null(g);
        double v[2];
        TU_STATUS_OK(wk_to_host_f64(g, v, 2));
        assert_true(v[0] == (double)i && v[1] == (double)i);
    }
    assert_int_equal(wk_grad_store_count(gs), left);
    /* a dropped tensor can get a gradient again */
    TU_STATUS_OK(wk_grad_set(gs, ps[3], wk_full((int64_t[]){2}, 1, 7.0, WK_F64, wk_cpu())));
    assert_int_equal(wk_grad_store_count(gs), left + 1);
    assert_non_null(wk_grad(gs, ps[3]));
    /* prune: the entries of freed leaves go, those of live ones stay */
    for (int i = 1; i < N; i += 2) wk_tensor_free(ps[i]);
    int odd_left = 0;
    for (int i = 1; i < N; i += 2) odd_left += i == 3 || !(i % 3 == 0 || (N - 2 - i) % 3 == 0); /* 3: re-added */
    assert_int_equal(wk_grad_store_prune(gs), odd_left);
    assert_int_equal(wk_grad_store_count(gs), left + 1 - odd_left);
    for (int i = 0; i < N; i += 2) {
        bool dropped = i % 3 == 0 || (N - 2 - i) % 3 == 0;
        if (dropped) assert_null(wk_grad(gs, ps[i]));
        else assert_non_null(wk_grad(gs, ps[i]));
    }
    /* a freed leaf whose graph still lives keeps its entry (a backward could add to it) */
    wk_tensor *q = TU_OK(wk_full((int64_t[]){2}, 1, 1.0, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_requires_grad(q, true));
    wk_tensor *y = TU_OK(wk_mul(q, q));
    TU_STATUS_OK(wk_grad_set(gs, q, wk_full((int64_t[]){2}, 1, 1.0, WK_F64, wk_cpu())));
    int64_t before = wk_grad_store_count(gs);
    wk_tensor_free(q);
    assert_int_equal(wk_grad_store_prune(gs), 0);
    wk_tensor_free(y);
    assert_int_equal(wk_grad_store_prune(gs), 1);
    assert_int_equal(wk_grad_store_count(gs), before - 1);
    assert_int_equal(wk_grad_store_prune(NULL), 0);
    wk_grad_store_free(gs);
    wk_scope_end();
}

/* What a node records: its op id (the rule family, told apart without
 * string compares) and the family's typed args; the floors above autograd
 * (nn, train) in their reserved id ranges, read through their accessors. */
static void test_node_records(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[] = {2, 3, 4};
    wk_tensor *x = vals(s, 3, 0.5, -0.2);
    TU_STATUS_OK(wk_requires_grad(x, true));
    assert_int_equal(x->node->op, WK__OP_LEAF);
    wk_tensor *m = TU_OK(wk_mul(x, x));
    assert_int_equal(m->node->op, WK__OP_BINARY);
    assert_int_equal(m->node->args.binary.op, WK_MUL);
    wk_tensor *e = TU_OK(wk_exp(x));
    assert_int_equal(e->node->op, WK__OP_UNARY);
    assert_int_equal(e->node->args.unary.op, WK_EXP);
    wk_tensor *nw = TU_OK(wk_narrow(x, 2, 1, 2)), *sel = TU_OK(wk_select(x, 1, 2));
    assert_int_equal(nw->node->op, WK__OP_NARROW);
    assert_int_equal(sel->node->op, WK__OP_NARROW);
    assert_false(nw->node->args.narrow.select);
    assert_true(sel->node->args.narrow.select);
    assert_int_equal(nw->node->args.narrow.dim, 2);
    assert_int_equal(nw->node->args.narrow.start, 1);
    assert_int_equal(nw->node->args.narrow.len, 2);
    assert_int_equal(sel->node->args.narrow.start, 2);
    int dims[] = {0, 2};
    wk_tensor *r = TU_OK(wk_mean(x, dims, 2, true));
    assert_int_equal(r->node->op, WK__OP_REDUCE);
    assert_int_equal(r->node->args.reduce.op, WK_REDUCE_MEAN);
    assert_int_equal(r->node->args.reduce.red.dims, 5u);
    assert_true(r->node->args.reduce.red.keepdim);
    assert_true(r->node->args.reduce.count == 8.0);
    assert_ptr_equal(wk__ag_reduced_of(r->node), &r->node->args.reduce.red);
    int perm[] = {2, 0, 1};
    wk_tensor *p = TU_OK(wk_permute(x, perm, 3));
    assert_int_equal(p->node->op, WK__OP_PERMUTE);
    assert_int_equal(p->node->args.permute.dims[0], 2);
    assert_int_equal(p->node->args.permute.dims[2], 1);
    /* nn: its own range, its own struct */
    wk_tensor *sm = TU_OK(wk_log_softmax(x, -1));
    assert_int_equal(sm->node->op, WK__OP_SOFTMAX);
    assert_true(sm->node->op >= WK__OP_NN_FIRST && sm->node->op < WK__OP_TRAIN_FIRST);
    assert_int_equal(wk__nn_args_of(sm->node)->softmax.dim, 2);
    assert_true(wk__nn_args_of(sm->node)->softmax.logp);
    /* train: the class loss */
    int64_t ls[] = {3, 4}, ids[] = {0, 3, 1}, ns[] = {3};
    wk_tensor *logits = vals(ls, 2, 0.3, 0.1);
    TU_STATUS_OK(wk_requires_grad(logits, true));
    wk_tensor *tg = TU_OK(wk_from_host(ids, sizeof ids, ns, 1, WK_I64, wk_cpu()));
    wk_class_loss_opts o = {.reduction = WK_REDUCE_SUM_LOSS, .label_smoothing = 0.25};
    wk_tensor *ce = TU_OK(wk_cross_entropy(logits, tg, &o));
    assert_int_equal(ce->node->op, WK__OP_CLASS_LOSS);
    assert_true(ce->node->op >= WK__OP_TRAIN_FIRST && ce->node->op < WK__OP_LIMIT);
    const wk__args_class_loss *cl = &wk__train_args_of(ce->node)->class_loss;
    assert_true(cl->ce);
    assert_false(cl->none);
    assert_true(cl->eps == 0.25 && cl->scale == 1.0);
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_gradient),    cmocka_unit_test(test_tracking_rules),
        cmocka_unit_test(test_graph_reuse_and_inplace), cmocka_unit_test(test_deep_chain),
        cmocka_unit_test(test_unary_rules),        cmocka_unit_test(test_binary_rules),
        cmocka_unit_test(test_maximum_ties_split), cmocka_unit_test(test_view_rules),
        cmocka_unit_test(test_reduce_rules),       cmocka_unit_test(test_mlp_second_order),
        cmocka_unit_test(test_grad_of_and_retain), cmocka_unit_test(test_custom_op),
        cmocka_unit_test(test_threads_share_leaves), cmocka_unit_test(test_store_drop),
        cmocka_unit_test(test_node_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
