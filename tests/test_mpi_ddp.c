/* wk_ddp (wick/train.h): data-parallel training equals one process over
 * the global batch. The digits CNN (examples/digits_model.h) and the char
 * transformer (examples/char_model.h), in f64, global batch 12 split evenly
 * over the ranks; every rank also trains the 1-rank reference (the whole
 * batch, plain wk_backward, same init and optimizer) and after each of 50
 * steps every parameter must match it to 1e-6. Then: parameters bitwise
 * equal across ranks, the checkpoint round trip from rank 0, a parameter
 * some ranks never reach, the buckets started during backward, and the
 * errors of wk_ddp_new. Singleton, and under mpirun with 2 and 3 ranks.
 * Data are synthetic (no files). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "train/ddp_internal.h"
#include "train/train_internal.h"

#include "../examples/char_model.h"
#include "../examples/digits_model.h"

#define STEPS 50
#define GB 12 /* global batch: divisible by 1, 2 and 3 */

static wk_comm *W;
static double worst_diff; /* the largest parameter difference to the reference seen */

static double max_param_diff(wk_tensor *const *a, wk_tensor *const *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        double d = tu_max_abs_diff(a[i], b[i]);
        if (!(d <= m)) m = d; /* NaN too */
    }
    return m;
}

/* Every rank's values identical, bit for bit: max and min over the ranks
 * equal this rank's. */
static void assert_same_everywhere(wk_tensor *const *p, int n) {
    for (int i = 0; i < n; i++) {
        wk_tensor *hi = TU_OK(wk_all_reduce(W, p[i], WK_DIST_MAX)), *lo = TU_OK(wk_all_reduce(W, p[i], WK_DIST_MIN));
        assert_true(tu_max_abs_diff(hi, p[i]) == 0.0);
        assert_true(tu_max_abs_diff(lo, p[i]) == 0.0);
        wk_tensor_free(hi);
        wk_tensor_free(lo);
    }
}

/* ------------------------------------------------------------- digits */

#define DN 48 /* synthetic images */

static wk_tensor *digits_loss(const digits_model *m, const wk_tensor *xs, const wk_tensor *ys, int64_t lo,
                              int64_t len) {
    wk_tensor *xb = wk_narrow(xs, 0, lo, len), *yb = wk_narrow(ys, 0, lo, len);
    wk_tensor *logits = digits_model_forward(m, xb);
    wk_tensor *l = wk_cross_entropy(logits, yb, NULL);
    wk_tensor_free(logits);
    return TU_OK(l);
}

static void test_ddp_digits(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_device *dev = wk_cpu();
    /* images: smooth patterns, label = which of 10 pattern families */
    double xv[DN * 64];
    int64_t yv[DN];
    for (int i = 0; i < DN; i++) {
        yv[i] = i % 10;
        for (int k = 0; k < 64; k++)
            xv[i * 64 + k] = sin(0.37 * (double)(yv[i] + 1) * (double)(k % 8) + 0.11 * (double)(k / 8) * (double)(i % 10)) +
                             0.05 * cos((double)(i * 64 + k));
    }
    int64_t sx[4] = {DN, 1, 8, 8}, sy[1] = {DN};
    wk_tensor *xs = TU_OK(wk_from_host(xv, sizeof xv, sx, 4, WK_F64, dev));
    wk_tensor *ys = TU_OK(wk_from_host(yv, sizeof yv, sy, 1, WK_I64, dev));
    digits_model ref = {0}, m = {0};
    TU_STATUS_OK(digits_model_init_dt(&ref, 7, WK_F64, dev));
    /* the ddp model starts elsewhere on ranks > 0: wk_ddp_new must bring rank 0's */
    TU_STATUS_OK(digits_model_init_dt(&m, R == 0 ? 7 : 100 + (uint64_t)R, WK_F64, dev));
    wk_ddp_opts dopt = {.bucket_mb = 0.02}; /* ~20 KiB: a few buckets */
    wk_ddp *d = wk_ddp_new(W, m.params, DIGITS_NPARAMS, &dopt);
    assert_non_null(d);
    assert_true(max_param_diff(m.params, ref.params, DIGITS_NPARAMS) == 0.0);
    wk_optim_config cfg = {.kind = WK_ADAMW, .lr = 3e-3, .weight_decay = 1e-2};
    wk_optimizer *oref = wk_optimizer_new(&cfg, ref.params, DIGITS_NPARAMS);
    wk_optimizer *opt = wk_optimizer_new(&cfg, m.params, DIGITS_NPARAMS);
    wk_grad_store *gr = wk_grad_store_new(), *gs = wk_grad_store_new();
    assert_true(oref && opt && gr && gs);
    int64_t per = GB / N;
    double lref = 0, lddp = 0;
    for (int s = 0; s < STEPS; s++) {
        wk_scope_begin();
        int64_t lo = (int64_t)(s * GB) % DN; /* DN is a multiple of GB */
        wk_tensor *l = digits_loss(&ref, xs, ys, lo, GB);
        wk_grad_store_zero(gr);
        TU_STATUS_OK(wk_backward(l, gr, NULL));
        TU_STATUS_OK(wk_optimizer_step(oref, gr));
        TU_STATUS_OK(wk_item(l, &lref));
        wk_tensor *ll = digits_loss(&m, xs, ys, lo + R * per, per);
        wk_grad_store_zero(gs);
        TU_STATUS_OK(wk_ddp_backward(d, ll, gs, NULL));
        TU_STATUS_OK(wk_optimizer_step(opt, gs));
        TU_STATUS_OK(wk_item(ll, &lddp));
        double diff = max_param_diff(m.params, ref.params, DIGITS_NPARAMS);
        if (diff > worst_diff) worst_diff = diff;
        if (!(diff <= 1e-6)) fail_msg("digits step %d: parameters differ from the reference by %g", s, diff);
        wk_scope_end();
    }
    double aref = digits_accuracy(&ref, xs, ys), addp = digits_accuracy(&m, xs, ys);
    assert_true(aref >= 0 && aref == addp);
    assert_true(aref > 0.3); /* it learned something */
    assert_same_everywhere(m.params, DIGITS_NPARAMS);
    wk__ddp_stats st;
    wk__ddp_get_stats(d, &st);
    assert_true(wk__ddp_bucket_count(d) > 1);
    /* every bucket started from the hook, while backward was still running */
    assert_int_equal(st.buckets, (int64_t)STEPS * wk__ddp_bucket_count(d));
    assert_int_equal(st.started_in_pass, st.buckets);
    if (R == 0)
        printf("digits: %d ranks, %d buckets (%lld of %lld all_reduces done before backward ended), loss %.6f (ref %.6f), accuracy %.4f, max |ddp - ref| %.3g\n", N,
               wk__ddp_bucket_count(d), (long long)st.done_in_pass, (long long)st.buckets, lddp, lref, addp, worst_diff);

    /* checkpoint: save on rank 0, scramble everywhere, load -> the saved values and state */
    char path[256];
    int64_t pid = getpid(), one = 1;
    wk_tensor *pid_t = TU_OK(wk_from_host(&pid, sizeof pid, &one, 1, WK_I64, dev));
    wk_tensor *pt = TU_OK(wk_broadcast(W, pid_t, 0));
    TU_STATUS_OK(wk_to_host(pt, &pid, sizeof pid));
    wk_tensor_free(pid_t);
    wk_tensor_free(pt);
    snprintf(path, sizeof path, "/tmp/wick_test_ddp_%lld.safetensors", (long long)pid);
    TU_STATUS_OK(wk_ddp_checkpoint_save(d, path, digits_param_names(), opt));
    wk_optimizer *fresh = wk_optimizer_new(&cfg, m.params, DIGITS_NPARAMS);
    wk_scope_begin();
    wk_tensor *saved[DIGITS_NPARAMS];
    for (int i = 0; i < DIGITS_NPARAMS; i++) {
        saved[i] = TU_OK(wk_copy(m.params[i]));
        TU_STATUS_OK(wk_param_assign_(m.params[i], TU_OK(wk_affine(saved[i], 0.5, (double)R))));
    }
    TU_STATUS_OK(wk_ddp_checkpoint_load(d, path, digits_param_names(), fresh));
    assert_true(max_param_diff(m.params, saved, DIGITS_NPARAMS) == 0.0);
    assert_int_equal(wk_optimizer_steps(fresh), STEPS);
    for (int i = 0; i < DIGITS_NPARAMS; i++) {
        assert_true(fresh->m[i] && fresh->v[i]);
        assert_true(tu_max_abs_diff(fresh->m[i], opt->m[i]) == 0.0);
        assert_true(tu_max_abs_diff(fresh->v[i], opt->v[i]) == 0.0);
        assert_int_equal(fresh->pstep[i], opt->pstep[i]);
    }
    wk_scope_end();
    TU_STATUS_OK(wk_barrier(W));
    if (R == 0) unlink(path);
    /* a missing file fails on every rank, the others naming rank 0 */
    wk_status miss = wk_ddp_checkpoint_load(d, "/nonexistent/wick_ddp.safetensors", digits_param_names(), NULL);
    assert_int_not_equal(miss, WK_OK);
    if (R > 0) assert_non_null(strstr(wk_last_error(), "failed on rank 0"));
    wk_optimizer_free(fresh);

    wk_grad_store_free(gr);
    wk_grad_store_free(gs);
    wk_optimizer_free(oref);
    wk_optimizer_free(opt);
    wk_ddp_free(d);
    digits_model_free(&ref);
    digits_model_free(&m);
    wk_tensor_free(xs);
    wk_tensor_free(ys);
}

/* ---------------------------------------------------------- char model */

static wk_tensor *char_loss(const char_model *m, const int64_t *x, const int64_t *y, int64_t B) {
    int64_t T = m->cfg.ctx, s[2] = {B, T}, n = B * T, flat[2] = {n, CHAR_VOCAB};
    wk_device *dev = wk_cpu();
    wk_tensor *ids = wk_from_host(x, (size_t)n * sizeof *x, s, 2, WK_I64, dev);
    wk_tensor *tgt = wk_from_host(y, (size_t)n * sizeof *y, &n, 1, WK_I64, dev);
    wk_tensor *logits = char_model_forward(m, ids), *lf = wk_reshape(logits, flat, 2);
    wk_tensor *l = wk_cross_entropy(lf, tgt, NULL);
    wk_tensor_free(lf);
    wk_tensor_free(logits);
    return TU_OK(l);
}

static void test_ddp_char(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_device *dev = wk_cpu();
    static const char text[] = "the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. "
                               "sphinx of black quartz, judge my vow! how vexingly quick daft zebras jump.";
    int64_t len = (int64_t)sizeof text - 1;
    char_config cc = {.dim = 16, .heads = 2, .layers = 1, .ctx = 8};
    char_model ref, m;
    TU_STATUS_OK(char_model_init_dt(&ref, &cc, 3, WK_F64, dev));
    TU_STATUS_OK(char_model_init_dt(&m, &cc, 3, WK_F64, dev));
    wk_ddp_opts dopt = {.bucket_mb = 0.01}; /* ~10 KiB: about 4 buckets */
    wk_ddp *d = wk_ddp_new(W, m.params, m.nparams, &dopt);
    assert_non_null(d);
    wk_optim_config cfg = {.kind = WK_ADAMW, .lr = 1e-2, .weight_decay = 1e-2};
    wk_optimizer *oref = wk_optimizer_new(&cfg, ref.params, ref.nparams);
    wk_optimizer *opt = wk_optimizer_new(&cfg, m.params, m.nparams);
    wk_grad_store *gr = wk_grad_store_new(), *gs = wk_grad_store_new();
    int64_t per = GB / N, T = cc.ctx;
    int64_t x[GB * 8], y[GB * 8];
    uint64_t rng = 1;
    double first = 0, lref = 0, lddp = 0, worst = 0;
    for (int s = 0; s < STEPS; s++) {
        char_batch((const unsigned char *)text, len, GB, T, &rng, x, y);
        wk_scope_begin();
        wk_tensor *l = char_loss(&ref, x, y, GB);
        wk_grad_store_zero(gr);
        TU_STATUS_OK(wk_backward(l, gr, NULL));
        TU_STATUS_OK(wk_optimizer_step(oref, gr));
        TU_STATUS_OK(wk_item(l, &lref));
        wk_tensor *ll = char_loss(&m, x + R * per * T, y + R * per * T, per);
        wk_grad_store_zero(gs);
        TU_STATUS_OK(wk_ddp_backward(d, ll, gs, NULL));
        TU_STATUS_OK(wk_optimizer_step(opt, gs));
        TU_STATUS_OK(wk_item(ll, &lddp));
        if (s == 0) first = lref;
        double diff = max_param_diff(m.params, ref.params, m.nparams);
        if (diff > worst) worst = diff;
        if (!(diff <= 1e-6)) fail_msg("char step %d: parameters differ from the reference by %g", s, diff);
        wk_scope_end();
    }
    if (worst > worst_diff) worst_diff = worst;
    assert_true(lref < 0.8 * first);
    /* the final full-batch loss is the same */
    wk_scope_begin();
    double fr, fd;
    TU_STATUS_OK(wk_item(char_loss(&ref, x, y, GB), &fr));
    TU_STATUS_OK(wk_item(char_loss(&m, x, y, GB), &fd));
    assert_true(fabs(fr - fd) <= 1e-9);
    wk_scope_end();
    assert_same_everywhere(m.params, m.nparams);
    wk__ddp_stats st;
    wk__ddp_get_stats(d, &st);
    assert_true(wk__ddp_bucket_count(d) > 1);
    assert_int_equal(st.started_in_pass, st.buckets);
    if (R == 0)
        printf("char: %d ranks, %d params, %d buckets (%lld of %lld all_reduces done before backward ended), loss %.4f -> %.4f (ddp shard %.4f), final %.9f vs %.9f, "
               "max |ddp - ref| %.3g\n",
               N, m.nparams, wk__ddp_bucket_count(d), (long long)st.done_in_pass, (long long)st.buckets, first, lref, lddp, fr, fd, worst);
    wk_grad_store_free(gr);
    wk_grad_store_free(gs);
    wk_optimizer_free(oref);
    wk_optimizer_free(opt);
    wk_ddp_free(d);
    char_model_free(&ref);
    char_model_free(&m);
}

/* --------------------------------------------- unused parameters, sum */

static void test_ddp_unused(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_scope_begin();
    int64_t s[1] = {4};
    wk_tensor *a = TU_OK(wk_param_new(TU_OK(tu_values(s, 1, WK_F64, 1.0, 0.0))));
    wk_tensor *b = TU_OK(wk_param_new(TU_OK(tu_values(s, 1, WK_F64, 2.0, 0.5))));
    wk_tensor *c = TU_OK(wk_param_new(TU_OK(tu_values(s, 1, WK_F64, 3.0, 1.0))));
    wk_tensor *ps[3] = {a, b, c};
    for (int sum = 0; sum < 2; sum++) {
        wk_ddp_opts o = {.bucket_mb = 1e-5, .sum = sum}; /* 10 bytes: one bucket each */
        wk_ddp *d = wk_ddp_new(W, ps, 3, &o);
        assert_non_null(d);
        assert_int_equal(wk__ddp_bucket_count(d), 3);
        /* L = sum((R + 1) a) + [rank 0 only] sum(b * b); c never used */
        wk_tensor *l = TU_OK(wk_sum_all(wk_affine(a, R + 1.0, 0.0)));
        if (R == 0) l = TU_OK(wk_add(l, wk_sum_all(wk_mul(b, b))));
        wk_grad_store *gs = wk_grad_store_new();
        TU_STATUS_OK(wk_ddp_backward(d, l, gs, NULL));
        double k = sum ? 1.0 : 1.0 / N;
        /* a: sum over ranks of (R + 1) = N (N + 1) / 2 */
        wk_tensor *wa = TU_OK(wk_full(s, 1, k * N * (N + 1) / 2.0, WK_F64, wk_cpu()));
        assert_true(tu_max_abs_diff(wk_grad(gs, a), wa) <= 1e-12);
        /* b: rank 0's 2b, the others' zeros */
        assert_non_null(wk_grad(gs, b));
        assert_true(tu_max_abs_diff(wk_grad(gs, b), wk_affine(b, 2.0 * k, 0.0)) <= 1e-12);
        /* c: no rank reached it: no gradient */
        assert_null(wk_grad(gs, c));
        wk_grad_store_free(gs);
        wk_ddp_free(d);
    }
    wk_scope_end();
}

/* ---------------------------------------------------------- errors */

static void test_ddp_errors(void **state) {
    (void)state;
    int R = wk_comm_rank(W), N = wk_comm_size(W);
    wk_scope_begin();
    int64_t s3[1] = {3}, s4[1] = {4};
    /* shapes differing between ranks: refused on every rank */
    wk_tensor *p = TU_OK(wk_param_new(TU_OK(wk_zeros(R == 0 ? s3 : s4, 1, WK_F64, wk_cpu()))));
    wk_ddp *d = wk_ddp_new(W, &p, 1, NULL);
    if (N > 1) {
        assert_null(d);
        assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
        assert_non_null(strstr(wk_last_error(), "differ between ranks"));
    } else {
        assert_non_null(d);
        wk_ddp_free(d);
    }
    /* a parameter that is not a leaf: refused (every rank: one refused) */
    wk_tensor *nl = TU_OK(wk_affine(p, 2.0, 0.0));
    assert_null(wk_ddp_new(W, &nl, 1, NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "not a tracked leaf"));
    /* only rank 0's is bad: the others are told another rank refused */
    wk_tensor *q = TU_OK(wk_param_new(TU_OK(wk_zeros(s3, 1, WK_F64, wk_cpu()))));
    wk_tensor *mine = R == 0 ? TU_OK(wk_zeros(s3, 1, WK_F64, wk_cpu())) : q;
    assert_null(wk_ddp_new(W, &mine, 1, NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    /* NULLs and n = 0 */
    assert_null(wk_ddp_new(W, NULL, 0, NULL));
    assert_null(wk_ddp_new(NULL, &q, 1, NULL));
    assert_int_equal(wk_ddp_backward(NULL, q, NULL, NULL), WK_ERR_ARG);
    wk_scope_end();
}

int main(int argc, char **argv) {
    W = wk_comm_init_mpi(&argc, &argv, NULL);
    if (!W) {
        fprintf(stderr, "test_mpi_ddp: %s\n", wk_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ddp_digits),
        cmocka_unit_test(test_ddp_char),
        cmocka_unit_test(test_ddp_unused),
        cmocka_unit_test(test_ddp_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (wk_comm_rank(W) == 0) printf("max parameter difference to the 1-rank reference: %.3g\n", worst_diff);
    wk_comm_free(W);
    return rc;
}
