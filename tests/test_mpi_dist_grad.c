/* The differentiable collectives (wick/dist.h): a column-parallel then
 * row-parallel MLP split over the ranks gives the unsplit MLP's loss and
 * gradients (f64, 1e-12), and each tracked collective's gradient against
 * its closed form and against central differences taken across the
 * ranks, uneven all_gather sizes included. Runs as the singleton
 * and under mpirun with 2 and 3 ranks. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "wick/dist.h"

static wk_comm *W;

/* Part r of n split into `size` parts as wk_chunk does (ceil each). */
static void part(int64_t n, int size, int r, int64_t *off, int64_t *len) {
    int64_t per = (n + size - 1) / size, lo = per * r < n ? per * r : n, hi = per * (r + 1) < n ? per * (r + 1) : n;
    *off = lo;
    *len = hi - lo;
}

static wk_tensor *leaf(wk_tensor *t) {
    wk_tensor *p = TU_OK(wk_contiguous(t));
    p = TU_OK(wk_copy(p));
    TU_STATUS_OK(wk_requires_grad(p, true));
    return p;
}

static wk_tensor *mlp_loss(wk_tensor *x, wk_tensor *w1, wk_tensor *b1, wk_tensor *w2, wk_tensor *tgt, bool par) {
    wk_tensor *xin = par ? TU_OK(wk_dist_copy_to_region(W, x)) : x;
    wk_tensor *h = TU_OK(wk_tanh(wk_add(wk_matmul(xin, w1), b1)));
    wk_tensor *y = TU_OK(wk_matmul(h, w2));
    if (par) y = TU_OK(wk_dist_reduce_from_region(W, y));
    wk_tensor *d = TU_OK(wk_sub(y, tgt));
    return TU_OK(wk_mean_all(wk_mul(d, d)));
}

static void test_tp_mlp(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_scope_begin();
    const int64_t B = 4, D = 3, H = 7, O = 2; /* H = 7: uneven parts for 2 and 3 ranks */
    int64_t sx[2] = {B, D}, s1[2] = {D, H}, sb[1] = {H}, s2[2] = {H, O}, st[2] = {B, O};
    wk_tensor *x0 = TU_OK(tu_values(sx, 2, WK_F64, 0.7, -0.2)), *w10 = TU_OK(tu_values(s1, 2, WK_F64, 0.3, 0.1));
    wk_tensor *b10 = TU_OK(tu_values(sb, 1, WK_F64, 0.2, -0.05)), *w20 = TU_OK(tu_values(s2, 2, WK_F64, 0.4, 0.0));
    wk_tensor *tgt = TU_OK(tu_values(st, 2, WK_F64, 0.5, 0.3));
    /* reference: the whole MLP here */
    wk_tensor *x = leaf(x0), *w1 = leaf(w10), *b1 = leaf(b10), *w2 = leaf(w20);
    wk_tensor *lr = mlp_loss(x, w1, b1, w2, tgt, false);
    wk_grad_store *gr = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(lr, gr, NULL));
    /* split: this rank's columns of w1 / b1 and rows of w2 */
    int64_t off, len;
    part(H, N, R, &off, &len);
    wk_tensor *xp = leaf(x0), *w1p = leaf(wk_narrow(w10, 1, off, len)), *b1p = leaf(wk_narrow(b10, 0, off, len));
    wk_tensor *w2p = leaf(wk_narrow(w20, 0, off, len));
    wk_tensor *lp = mlp_loss(xp, w1p, b1p, w2p, tgt, true);
    wk_grad_store *gp = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(lp, gp, NULL));
    double a, b;
    TU_STATUS_OK(wk_item(lr, &a));
    TU_STATUS_OK(wk_item(lp, &b));
    assert_true(fabs(a - b) <= 1e-12);
    assert_true(tu_max_abs_diff(wk_grad(gp, xp), wk_grad(gr, x)) <= 1e-12);
    if (len > 0) {
        assert_true(tu_max_abs_diff(wk_grad(gp, w1p), wk_narrow(wk_grad(gr, w1), 1, off, len)) <= 1e-12);
        assert_true(tu_max_abs_diff(wk_grad(gp, b1p), wk_narrow(wk_grad(gr, b1), 0, off, len)) <= 1e-12);
        assert_true(tu_max_abs_diff(wk_grad(gp, w2p), wk_narrow(wk_grad(gr, w2), 0, off, len)) <= 1e-12);
    }
    wk_grad_store_free(gr);
    wk_grad_store_free(gp);
    wk_scope_end();
}

/* all_reduce_tracked: L = sum(w * sum_r x_r) on every rank -> dL/dx = N w
 * (each rank's backward all_reduces its w). Also second order: the
 * recorded backward is itself differentiable (create_graph). */
static void test_all_reduce_grad(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_scope_begin();
    int64_t s[2] = {2, 3};
    wk_tensor *x = leaf(TU_OK(tu_values(s, 2, WK_F64, 1.0, 0.1 * R)));
    wk_tensor *w = TU_OK(tu_values(s, 2, WK_F64, 0.5, -0.3));
    wk_tensor *y = TU_OK(wk_dist_all_reduce_tracked(W, x));
    assert_string_equal(wk_grad_fn_name(y), "wk_dist_all_reduce_tracked");
    wk_tensor *l = TU_OK(wk_sum_all(wk_mul(w, y)));
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    assert_true(tu_max_abs_diff(wk_grad(gs, x), wk_affine(w, (double)N, 0.0)) <= 1e-12);
    /* the forward: every rank's values summed (tu_values' shift is additive) */
    wk_tensor *want = TU_OK(tu_values(s, 2, WK_F64, 1.0, 0.0));
    want = TU_OK(wk_affine(want, (double)N, 0.1 * N * (N - 1) / 2.0));
    assert_true(tu_max_abs_diff(y, want) <= 1e-12);
    /* untracked input: no node */
    assert_null(wk_grad_fn_name(TU_OK(wk_dist_all_reduce_tracked(W, w))));
    wk_grad_store_free(gs);
    wk_scope_end();
}

/* all_gather_tracked with rank r holding r + 1 rows (uneven, not wk_chunk's
 * split) and with equal rows (wk_chunk's: reduce_scatter): L = sum(w *
 * gathered) on every rank -> dL/dx_r = N * w's rows of rank r. */
static void test_all_gather_grad(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    for (int even = 0; even < 2; even++) {
        wk_scope_begin();
        int64_t rows = even ? 2 : R + 1, total = even ? 2 * N : (int64_t)N * (N + 1) / 2;
        int64_t off = even ? 2 * R : (int64_t)R * (R + 1) / 2;
        int64_t s[2] = {rows, 3}, sw[2] = {3, total};
        wk_tensor *x = leaf(TU_OK(tu_values(s, 2, WK_F64, 1.0, R)));
        /* gathered along dim -2 of the transpose: columns, to exercise a dim
         * other than 0 */
        wk_tensor *xt = TU_OK(wk_transpose(x, 0, 1));
        wk_tensor *g = TU_OK(wk_dist_all_gather_tracked(W, xt, -1));
        tu_assert_shape(g, sw, 2);
        wk_tensor *w = TU_OK(tu_values(sw, 2, WK_F64, 0.25, 0.5));
        wk_tensor *l = TU_OK(wk_sum_all(wk_mul(w, g)));
        wk_grad_store *gs = wk_grad_store_new();
        TU_STATUS_OK(wk_backward(l, gs, NULL));
        wk_tensor *want = TU_OK(wk_transpose(wk_affine(wk_narrow(w, 1, off, rows), (double)N, 0.0), 0, 1));
        assert_true(tu_max_abs_diff(wk_grad(gs, x), want) <= 1e-12);
        /* the forward: this rank's columns are x's */
        assert_true(tu_max_abs_diff(wk_narrow(g, 1, off, rows), xt) == 0.0);
        wk_grad_store_free(gs);
        wk_scope_end();
    }
}

/* copy_to_region: identity forward, all_reduce backward; reduce_from_region:
 * all_reduce forward, identity backward. Central differences can't see
 * another rank's loss, so the check is the closed form. */
static void test_region_grads(void **state) {
    (void)state;
    int N = wk_comm_size(W);
    wk_scope_begin();
    int64_t s[1] = {5};
    wk_tensor *x = leaf(TU_OK(tu_values(s, 1, WK_F64, 1.0, 0.0)));
    wk_tensor *w = TU_OK(tu_values(s, 1, WK_F64, -0.5, 0.25));
    wk_tensor *c = TU_OK(wk_dist_copy_to_region(W, x));
    assert_true(tu_max_abs_diff(c, x) == 0.0);
    wk_tensor *r = TU_OK(wk_dist_reduce_from_region(W, x));
    assert_true(tu_max_abs_diff(r, wk_affine(x, (double)N, 0.0)) <= 1e-12);
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(TU_OK(wk_sum_all(wk_mul(w, c))), gs, NULL));
    assert_true(tu_max_abs_diff(wk_grad(gs, x), wk_affine(w, (double)N, 0.0)) <= 1e-12);
    wk_grad_store_zero(gs);
    TU_STATUS_OK(wk_backward(TU_OK(wk_sum_all(wk_mul(w, r))), gs, NULL));
    assert_true(tu_max_abs_diff(wk_grad(gs, x), w) <= 1e-12);
    /* errors: NULL communicator, not a crash */
    assert_null(wk_dist_copy_to_region(NULL, x));
    assert_null(wk_dist_all_reduce_tracked(NULL, x));
    wk_grad_store_free(gs);
    wk_scope_end();
}

/* Central differences across the ranks: every rank runs the forward with
 * one element of rank k's input moved by +-h, and the loss (the same on
 * every rank: it is made global by the collective) gives the numeric
 * derivative. The loss is replicated, so every rank's backward adds its
 * copy's gradient: all_reduce and all_gather give N times the numeric one,
 * reduce_from_region (identity backward) exactly it. */
typedef wk_tensor *(*glob_fn)(const wk_tensor *x, const wk_tensor *w);

static wk_tensor *f_all_reduce(const wk_tensor *x, const wk_tensor *w) {
    return wk_sum_all(wk_mul(w, wk_sin(wk_dist_all_reduce_tracked(W, wk_mul(x, x)))));
}
static wk_tensor *f_all_gather(const wk_tensor *x, const wk_tensor *w) {
    return wk_sum_all(wk_mul(w, wk_tanh(wk_dist_all_gather_tracked(W, wk_exp(x), 0))));
}
static wk_tensor *f_reduce_from(const wk_tensor *x, const wk_tensor *w) {
    (void)w;
    wk_tensor *r = wk_dist_reduce_from_region(W, wk_sin(x));
    return wk_sum_all(wk_mul(r, r));
}

static void numeric_check(glob_fn f, int64_t rows, int64_t wrows, double factor) {
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_scope_begin();
    int64_t s[2] = {rows, 2}, sw[2] = {wrows, 2};
    double xv[64];
    wk_tensor *x0 = TU_OK(tu_values(s, 2, WK_F64, 0.6, 0.05 * R));
    TU_STATUS_OK(wk_to_host(x0, xv, sizeof(double) * (size_t)(rows * 2)));
    wk_tensor *w = TU_OK(tu_values(sw, 2, WK_F64, 0.9, 0.1));
    wk_tensor *x = leaf(x0);
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(TU_OK(f(x, w)), gs, NULL));
    double g[64];
    TU_STATUS_OK(wk_to_host(wk_grad(gs, x), g, sizeof(double) * (size_t)(rows * 2)));
    const double h = 1e-6;
    for (int k = 0; k < N; k++) {
        /* rank k's element count: every rank runs the same loop length */
        int64_t nk = rows * 2, one = 1;
        wk_tensor *nt = TU_OK(wk_broadcast(W, TU_OK(wk_full(&one, 1, (double)nk, WK_F64, wk_cpu())), k));
        double nkd;
        TU_STATUS_OK(wk_item(nt, &nkd));
        for (int64_t e = 0; e < (int64_t)nkd; e++) {
            double l[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                double xp[64];
                memcpy(xp, xv, sizeof(double) * (size_t)(rows * 2));
                if (R == k) xp[e] += sgn ? -h : h;
                wk_tensor *xt = TU_OK(wk_from_host(xp, sizeof(double) * (size_t)(rows * 2), s, 2, WK_F64, wk_cpu()));
                TU_STATUS_OK(wk_item(TU_OK(f(xt, w)), &l[sgn]));
            }
            if (R == k) {
                double num = (l[0] - l[1]) / (2 * h);
                if (!(fabs(g[e] - factor * num) <= 1e-6 * (1 + fabs(g[e]))))
                    fail_msg("rank %d element %lld: analytic %.10g, %g x numeric %.10g", R, (long long)e, g[e], factor,
                             num);
            }
        }
    }
    wk_grad_store_free(gs);
    wk_scope_end();
}

static void test_numeric(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    numeric_check(f_all_reduce, 3, 3, N);
    /* uneven rows: rank r holds r + 1 */
    numeric_check(f_all_gather, R + 1, (int64_t)N * (N + 1) / 2, N);
    numeric_check(f_reduce_from, 2, 2, 1.0);
}

int main(int argc, char **argv) {
    W = wk_comm_init_mpi(&argc, &argv, NULL);
    if (!W) {
        fprintf(stderr, "test_mpi_dist_grad: %s\n", wk_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_mlp),
        cmocka_unit_test(test_all_reduce_grad),
        cmocka_unit_test(test_all_gather_grad),
        cmocka_unit_test(test_region_grads),
        cmocka_unit_test(test_numeric),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    wk_comm_free(W);
    return rc;
}
