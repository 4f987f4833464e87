/* Training pieces (include/wick/train.h) against torch: optimizer
 * trajectories, losses and their gradients, clipping, layers, and
 * checkpoints. Reference data: tests/oracle/gen_train.py (ctest fixture). */
#include "testutil.h"
#include "wick/safetensors.h"
#include "wick/train.h"
#include "oracle_util.h"
#include "gradcheck.h"
#include "train/train_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[1024];
static bool have_oracle(void) {
    if (!ou_dir("train", g_dir, sizeof g_dir)) {
        print_message("WICK_ORACLE_DIR not set: run through ctest (the oracle_gen_train fixture)\n");
        return false;
    }
    return true;
}

/* dir/file as a CPU tensor of dtype dt (scope-owned). */
static wk_tensor *load_as(const char *file, wk_dtype dt) {
    wk_tensor *t = ou_load(g_dir, file);
    if (!t) fail_msg("cannot load %s/%s: %s", g_dir, file, wk_last_error());
    return dt == wk_tensor_dtype(t) ? t : TU_OK(wk_to_dtype(t, dt));
}

/* max |got - want| / (1 + |want|) over every element */
static double rel_err(const wk_tensor *got, const wk_tensor *want) {
    int64_t n = wk_numel(want);
    assert_int_equal(wk_numel(got), n);
    double *a = malloc(sizeof(double) * (size_t)(n + 1)), *b = malloc(sizeof(double) * (size_t)(n + 1));
    TU_STATUS_OK(wk_to_host_f64(got, a, (size_t)n));
    TU_STATUS_OK(wk_to_host_f64(want, b, (size_t)n));
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / (1 + fabs(b[i]));
        if (isnan(a[i]) != isnan(b[i])) e = INFINITY;
        if (isnan(b[i]) && isnan(a[i])) e = 0;
        if (e > worst) worst = e;
    }
    free(a);
    free(b);
    return worst;
}

/* ------------------------------------------------------------ optimizers */

typedef struct optim_case {
    int id;
    wk_optim_config cfg;
} optim_case;

static int read_optim_cases(optim_case *out, int cap) {
    char path[1200], line[512];
    snprintf(path, sizeof path, "%s/optim.txt", g_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (n < cap && ou_next_line(f, line, sizeof line)) {
        char kind[16];
        int nest;
        optim_case *c = &out[n];
        memset(c, 0, sizeof *c);
        assert_int_equal(sscanf(line, "%d %15s %lf %lf %lf %lf %d %lf %lf %lf", &c->id, kind, &c->cfg.lr,
                                &c->cfg.weight_decay, &c->cfg.momentum, &c->cfg.dampening, &nest, &c->cfg.beta1,
                                &c->cfg.beta2, &c->cfg.eps),
                         10);
        c->cfg.kind = !strcmp(kind, "sgd") ? WK_SGD : !strcmp(kind, "adam") ? WK_ADAM : WK_ADAMW;
        c->cfg.nesterov = nest != 0;
        n++;
    }
    fclose(f);
    return n;
}

/* Gradient of sum(qa * (p - qc)^2) at p, through autograd, into gs. */
static void quad_grad(wk_tensor *p, const wk_tensor *qa, const wk_tensor *qc, wk_grad_store *gs) {
    wk_scope_begin();
    wk_tensor *l = TU_OK(wk_sum_all(wk_mul(qa, wk_sqr(wk_sub(p, qc)))));
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    wk_scope_end();
}

/* Ten steps of case c in dtype dt (fused: the backend's entry, else the
 * composite) against torch's f64 trajectory. */
static double run_trajectory(const optim_case *c, const char *mode, wk_dtype dt, bool composite) {
    wk_scope_begin();
    wk_tensor *p = TU_OK(wk_param_new(load_as("p0.npy", dt)));
    wk_tensor *grads = load_as("grads.npy", dt);
    wk_tensor *qa = load_as("qa.npy", dt), *qc = load_as("qc.npy", dt);
    char file[64];
    snprintf(file, sizeof file, "opt%d_%s.npy", c->id, mode);
    wk_tensor *want = load_as(file, WK_F64);
    wk_optimizer *opt = wk_optimizer_new(&c->cfg, &p, 1);
    assert_non_null(opt);
    wk_grad_store *gs = wk_grad_store_new();
    double worst = 0;
    for (int k = 0; k < 10; k++) {
        wk_grad_store_zero(gs);
        if (!strcmp(mode, "fixed")) TU_STATUS_OK(wk_grad_set(gs, p, wk_select(grads, 0, k)));
        else quad_grad(p, qa, qc, gs);
        if (composite) {
            /* the fallback a backend without optim_step runs, called directly */
            wk_tensor *g = wk_grad(gs, p);
            bool hm = wk__optim_has_m(&opt->cfg), hv = wk__optim_has_v(&opt->cfg);
            if (hm && !opt->m[0]) opt->m[0] = wk_keep(wk_zeros_like(p));
            if (hv && !opt->v[0]) opt->v[0] = wk_keep(wk_zeros_like(p));
            wk_optim_args a = wk__optim_args_for(&opt->cfg, k + 1);
            wk_no_grad_begin();
            TU_STATUS_OK(wk__optim_step_composite(&a, p, g, opt->m[0], opt->v[0]));
            wk_no_grad_end();
        } else {
            TU_STATUS_OK(wk_optimizer_step(opt, gs));
        }
        double e = rel_err(p, wk_select(want, 0, k));
        if (e > worst) worst = e;
    }
    if (!composite) assert_int_equal(wk_optimizer_steps(opt), 10);
    wk_grad_store_free(gs);
    wk_optimizer_free(opt);
    wk_scope_end();
    return worst;
}

static void test_optim_vs_torch(void **state) {
    (void)state;
    if (!have_oracle()) skip();
    optim_case cases[32];
    int n = read_optim_cases(cases, 32);
    assert_true(n >= 9);
    const char *modes[2] = {"fixed", "quad"};
    for (int i = 0; i < n; i++)
        for (int m = 0; m < 2; m++) {
            struct { wk_dtype dt; bool comp; double tol; } runs[] = {
                {WK_F64, false, 1e-12}, {WK_F64, true, 1e-12}, {WK_F32, false, 2e-5},
                {WK_F32, true, 2e-5},   {WK_BF16, false, 6e-2}, {WK_F16, false, 1e-2},
            };
            for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
                double e = run_trajectory(&cases[i], modes[m], runs[r].dt, runs[r].comp);
                if (!(e <= runs[r].tol))
                    fail_msg("optimizer case %d (%s) %s %s: error %.3g > %.3g", cases[i].id, modes[m],
                             wk_dtype_name(runs[r].dt), runs[r].comp ? "composite" : "fused", e, runs[r].tol);
            }
        }
}

/* The CPU allocator's count of allocations (cache hits + misses). */
static uint64_t cpu_allocs(void) {
    wk_cpu_mem_stats s;
    wk_cpu_mem_stats_get(&s);
    return s.hits + s.misses;
}

static void test_step_allocates_nothing(void **state) {
    (void)state;
    const int64_t n = (int64_t)1 << 17; /* above the threading threshold */
    wk_optim_config cfgs[3] = {{.kind = WK_ADAMW, .lr = 1e-2, .weight_decay = 1e-2},
                               {.kind = WK_SGD, .lr = 1e-2, .momentum = 0.9, .nesterov = true},
                               {.kind = WK_ADAM, .lr = 1e-3, .weight_decay = 0.1}};
    for (int c = 0; c < 3; c++) {
        wk_scope_begin();
        wk_tensor *p = TU_OK(wk_param_new(wk_rand((int64_t[]){n}, 1, -1, 1, WK_F32, wk_cpu())));
        wk_tensor *q = TU_OK(wk_param_new(wk_rand((int64_t[]){4, 8}, 2, -1, 1, WK_BF16, wk_cpu())));
        wk_tensor *ps[2] = {p, q};
        wk_optimizer *opt = wk_optimizer_new(&cfgs[c], ps, 2);
        assert_non_null(opt);
        wk_grad_store *gs = wk_grad_store_new();
        TU_STATUS_OK(wk_grad_set(gs, p, wk_rand((int64_t[]){n}, 1, -1, 1, WK_F32, wk_cpu())));
        /* a broadcast gradient (stride 0), as the gradient of a sum is */
        TU_STATUS_OK(wk_grad_set(gs, q, wk_broadcast_as(wk_rand((int64_t[]){1, 8}, 2, -1, 1, WK_BF16, wk_cpu()),
                                                        (int64_t[]){4, 8}, 2)));
        TU_STATUS_OK(wk_optimizer_step(opt, gs)); /* the first step makes the state */
        uint64_t before = cpu_allocs();
        double v0;
        TU_STATUS_OK(wk_get(p, (int64_t[]){5}, &v0));
        for (int k = 0; k < 5; k++) TU_STATUS_OK(wk_optimizer_step(opt, gs));
        assert_int_equal(cpu_allocs(), before);
        double v1;
        TU_STATUS_OK(wk_get(p, (int64_t[]){5}, &v1));
        assert_true(v0 != v1); /* it did step */
        wk_grad_store_free(gs);
        wk_optimizer_free(opt);
        wk_scope_end();
    }
}

/* Threads split a step by element: the result is the same bits on 1 or 2 threads. */
static void test_step_threads_agree(void **state) {
    (void)state;
    int threads = wk_num_threads();
    const int64_t n = (int64_t)1 << 17;
    wk_tensor *out[2];
    for (int t = 0; t < 2; t++) {
        TU_STATUS_OK(wk_set_num_threads(t + 1));
        TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 7));
        wk_scope_begin();
        wk_tensor *p = TU_OK(wk_param_new(wk_rand((int64_t[]){n}, 1, -1, 1, WK_F32, wk_cpu())));
        wk_optim_config cfg = {.kind = WK_ADAM, .lr = 1e-2};
        wk_optimizer *opt = wk_optimizer_new(&cfg, &p, 1);
        wk_grad_store *gs = wk_grad_store_new();
        TU_STATUS_OK(wk_grad_set(gs, p, wk_rand((int64_t[]){n}, 1, -1, 1, WK_F32, wk_cpu())));
        for (int k = 0; k < 3; k++) TU_STATUS_OK(wk_optimizer_step(opt, gs));
        out[t] = wk_keep(wk_detach(p));
        wk_grad_store_free(gs);
        wk_optimizer_free(opt);
        wk_scope_end();
    }
    TU_STATUS_OK(wk_set_num_threads(threads));
    assert_true(ou_same_bits(out[0], out[1]));
    wk_tensor_free(out[0]);
    wk_tensor_free(out[1]);
}

static void test_optim_errors_and_skips(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *p = TU_OK(wk_param_new(wk_ones((int64_t[]){3}, 1, WK_F32, wk_cpu())));
    wk_tensor *q = TU_OK(wk_param_new(wk_ones((int64_t[]){2}, 1, WK_F32, wk_cpu())));
    wk_tensor *plain = TU_OK(wk_ones((int64_t[]){3}, 1, WK_F32, wk_cpu()));
    wk_tensor *nonleaf = TU_OK(wk_affine(p, 2.0, 0.0));
    wk_tensor *ints = TU_OK(wk_zeros((int64_t[]){3}, 1, WK_I32, wk_cpu()));
    wk_optim_config ok = {.kind = WK_SGD, .lr = 0.5};
    wk_optim_config bad[] = {
        {.kind = WK_SGD, .lr = -1},         {.kind = WK_SGD, .lr = NAN},
        {.kind = WK_SGD, .nesterov = true}, {.kind = WK_SGD, .momentum = 0.9, .dampening = 0.1, .nesterov = true},
        {.kind = WK_ADAM, .beta1 = 1.0},    {.kind = WK_ADAMW, .beta2 = -0.5},
        {.kind = WK_ADAM, .eps = -1},       {.kind = (wk_optimizer_kind)9},
        {.kind = WK_SGD, .weight_decay = -1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(wk_optimizer_new(&bad[i], &p, 1));
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
    }
    assert_null(wk_optimizer_new(NULL, &p, 1));
    assert_null(wk_optimizer_new(&ok, &plain, 1));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_null(wk_optimizer_new(&ok, &nonleaf, 1));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_null(wk_optimizer_new(&ok, &ints, 1));
    wk_tensor *twice[2] = {p, p};
    assert_null(wk_optimizer_new(&ok, twice, 2));
    assert_null(wk_optimizer_new(&ok, NULL, 1));
    /* defaults: zero fields are torch's */
    wk_optim_config dflt = {.kind = WK_ADAM};
    wk_tensor *ps[2] = {p, q};
    wk_optimizer *opt = wk_optimizer_new(&dflt, ps, 2);
    assert_non_null(opt);
    assert_true(wk_optimizer_lr(opt) == 1e-3);
    TU_STATUS_OK(wk_optimizer_set_lr(opt, 0.1));
    assert_true(wk_optimizer_lr(opt) == 0.1);
    assert_int_equal(wk_optimizer_set_lr(opt, -2), WK_ERR_ARG);
    assert_int_equal(wk_optimizer_step(opt, NULL), WK_ERR_ARG);
    assert_int_equal(wk_optimizer_step(NULL, NULL), WK_ERR_ARG);
    /* q has no gradient: skipped, as torch skips p.grad None */
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_grad_set(gs, p, wk_ones((int64_t[]){3}, 1, WK_F32, wk_cpu())));
    TU_STATUS_OK(wk_optimizer_step(opt, gs));
    assert_int_equal(wk_optimizer_steps(opt), 1);
    double v;
    TU_STATUS_OK(wk_get(q, (int64_t[]){0}, &v));
    assert_true(v == 1.0);
    TU_STATUS_OK(wk_get(p, (int64_t[]){0}, &v));
    assert_true(fabs(v - 0.9) < 1e-6); /* Adam's first step moves by lr */
    assert_null(opt->m[1]);
    assert_int_equal(opt->pstep[0], 1);
    assert_int_equal(opt->pstep[1], 0);
    /* a step under grad mode is unrecorded and refuses nothing: p stays a leaf */
    assert_true(wk_is_leaf(p));
    /* a graph that saved p sees the in-place update and refuses its backward */
    wk_tensor *y = TU_OK(wk_sum_all(wk_mul(p, p)));
    TU_STATUS_OK(wk_optimizer_step(opt, gs));
    wk_grad_store *gs2 = wk_grad_store_new();
    assert_int_equal(wk_backward(y, gs2, NULL), WK_ERR_ARG);
    wk_grad_store_free(gs2);
    wk_grad_store_free(gs);
    wk_optimizer_free(opt);
    wk_optimizer_free(NULL);
    wk_scope_end();
}

/* ------------------------------------------------------------ parameters */

static void test_param_assign(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *init = TU_OK(wk_arange(0, 6, 1, WK_F32, wk_cpu()));
    wk_tensor *p = TU_OK(wk_param_new(init));
    assert_true(wk_is_leaf(p));
    assert_false(wk_shares_storage(p, init));
    assert_null(wk_param_new(wk_zeros((int64_t[]){2}, 1, WK_I64, wk_cpu())));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    /* src sharing p's storage: refused, p untouched */
    assert_int_equal(wk_param_assign_(p, p), WK_ERR_ARG);
    assert_int_equal(wk_param_assign_(p, wk_flip(wk_detach(p), (int[]){0}, 1)), WK_OK); /* flip copies: fine */
    wk_tensor *view = TU_OK(wk_detach(p));
    assert_int_equal(wk_param_assign_(p, view), WK_ERR_ARG);
    assert_int_equal(wk_param_assign_(p, wk_ones((int64_t[]){5}, 1, WK_F32, wk_cpu())), WK_ERR_SHAPE);
    assert_int_equal(wk_param_assign_(p, wk_ones((int64_t[]){6}, 1, WK_F64, wk_cpu())), WK_ERR_DTYPE);
    assert_int_not_equal(wk_param_assign_(p, NULL), WK_OK);
    double v;
    TU_STATUS_OK(wk_get(p, (int64_t[]){0}, &v));
    assert_true(v == 5.0);
    /* any layout of src: a transposed view */
    wk_tensor *m = TU_OK(wk_param_new(wk_zeros((int64_t[]){2, 3}, 2, WK_F32, wk_cpu())));
    TU_STATUS_OK(wk_param_assign_(m, wk_t(wk_reshape(init, (int64_t[]){3, 2}, 2))));
    TU_STATUS_OK(wk_get(m, (int64_t[]){1, 2}, &v));
    assert_true(v == 5.0);
    assert_true(wk_is_leaf(m));
    wk_scope_end();
}

/* ---------------------------------------------------------------- losses */

static wk_reduction red_of(const char *s) {
    return !strcmp(s, "mean") ? WK_REDUCE_MEAN_LOSS : !strcmp(s, "sum") ? WK_REDUCE_SUM_LOSS : WK_REDUCE_NONE_LOSS;
}

static void test_losses_vs_torch(void **state) {
    (void)state;
    if (!have_oracle()) skip();
    char path[1200], line[512];
    snprintf(path, sizeof path, "%s/losses.txt", g_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int cases = 0;
    while (ou_next_line(f, line, sizeof line)) {
        int id;
        char loss[16], red[8], ign[16], xf[64], tf[64], gf[64], vf[64], df[64];
        double sm, delta;
        assert_int_equal(sscanf(line, "%d %15s %7s %15s %lf %lf %63s %63s %63s %63s %63s", &id, loss, red, ign, &sm,
                                &delta, xf, tf, gf, vf, df),
                         11);
        const wk_dtype dts[2] = {WK_F64, WK_F32};
        for (int di = 0; di < 2; di++) {
            wk_dtype dt = dts[di];
            double tol = dt == WK_F64 ? 1e-10 : 2e-5;
            wk_scope_begin();
            wk_tensor *x = TU_OK(wk_param_new(load_as(xf, dt)));
            bool cls = !strcmp(loss, "ce") || !strcmp(loss, "nll");
            wk_tensor *t = load_as(tf, cls ? WK_I64 : dt);
            wk_class_loss_opts o = {.reduction = red_of(red), .label_smoothing = sm};
            if (strcmp(ign, "-")) {
                o.has_ignore_index = true;
                o.ignore_index = atoll(ign);
            }
            wk_tensor *l = NULL;
            if (!strcmp(loss, "mse")) l = wk_mse_loss(x, t, o.reduction);
            else if (!strcmp(loss, "huber")) l = wk_huber_loss(x, t, delta, o.reduction);
            else if (!strcmp(loss, "bce")) l = wk_bce_with_logits(x, t, o.reduction);
            else if (!strcmp(loss, "ce")) l = wk_cross_entropy(x, t, &o);
            else l = wk_nll_loss(x, t, &o);
            if (!l) fail_msg("loss case %d: %s", id, wk_last_error());
            double e = rel_err(l, load_as(vf, WK_F64));
            if (!(e <= tol)) fail_msg("loss case %d (%s %s) %s: value error %.3g", id, loss, red, wk_dtype_name(dt), e);
            wk_backward_opts bo = {0};
            if (strcmp(gf, "-")) bo.grad_output = load_as(gf, dt);
            wk_grad_store *gs = wk_grad_store_new();
            TU_STATUS_OK(wk_backward(l, gs, &bo));
            e = rel_err(wk_grad(gs, x), load_as(df, WK_F64));
            if (!(e <= tol)) fail_msg("loss case %d (%s %s) %s: gradient error %.3g", id, loss, red, wk_dtype_name(dt), e);
            wk_grad_store_free(gs);
            wk_scope_end();
        }
        cases++;
    }
    fclose(f);
    assert_true(cases >= 39);
}

/* Second order through the cross-entropy rule: the Hessian-vector product
 * of a tiny classifier against finite differences (the rule is written with
 * public ops, so create_graph differentiates it). */
static wk_tensor *ce_of_linear(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    const wk_class_loss_opts *o = ctx;
    wk_tensor *ids = wk_from_host((int64_t[]){2, 0, 1}, 3 * sizeof(int64_t), (int64_t[]){3}, 1, WK_I64, wk_cpu());
    wk_tensor *r = wk_cross_entropy(wk_matmul(in[0], in[1]), ids, o);
    return r;
}

static void test_cross_entropy_gradcheck(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = TU_OK(wk_rand((int64_t[]){3, 4}, 2, -1, 1, WK_F64, wk_cpu()));
    wk_tensor *w = TU_OK(wk_rand((int64_t[]){4, 5}, 2, -1, 1, WK_F64, wk_cpu()));
    wk_tensor *in[2] = {x, w};
    wk_class_loss_opts opts[3] = {{.reduction = WK_REDUCE_MEAN_LOSS, .label_smoothing = 0.2},
                                  {.reduction = WK_REDUCE_NONE_LOSS, .has_ignore_index = true, .ignore_index = 0},
                                  {.reduction = WK_REDUCE_SUM_LOSS}};
    for (int i = 0; i < 3; i++) gc_check("cross_entropy", ce_of_linear, &opts[i], in, 2, NULL);
    wk_scope_end();
}

static void test_cross_entropy_memory(void **state) {
    (void)state;
    /* the graph keeps the logits and (N) ids / mask, not an (N, C) log-softmax */
    const int64_t N = 256, C = 1000;
    wk_scope_begin();
    wk_tensor *x = TU_OK(wk_param_new(wk_rand((int64_t[]){N, C}, 2, -1, 1, WK_F32, wk_cpu())));
    wk_tensor *ids = TU_OK(wk_to_dtype(wk_arange(0, (double)N, 1, WK_I64, wk_cpu()), WK_I32));
    wk_cpu_mem_stats a, b;
    wk_cpu_mem_stats_get(&a);
    wk_tensor *l = wk_keep(TU_OK(wk_cross_entropy(x, ids, NULL)));
    wk_cpu_mem_stats_get(&b);
    assert_true(b.bytes_in_use < a.bytes_in_use + (size_t)(N * C * 4 / 4));
    wk_scope_end();
    wk_tensor_free(l);
}

static void test_loss_errors(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = TU_OK(wk_zeros((int64_t[]){3, 4}, 2, WK_F32, wk_cpu()));
    wk_tensor *y = TU_OK(wk_zeros((int64_t[]){3, 5}, 2, WK_F32, wk_cpu()));
    wk_tensor *ids = TU_OK(wk_from_host((int32_t[]){0, 3, 4}, 12, (int64_t[]){3}, 1, WK_I32, wk_cpu()));
    wk_tensor *ok_ids = TU_OK(wk_from_host((int32_t[]){0, 3, 1}, 12, (int64_t[]){3}, 1, WK_I32, wk_cpu()));
    TU_FAILS(wk_mse_loss(x, y, WK_REDUCE_MEAN_LOSS), WK_ERR_SHAPE);
    TU_FAILS(wk_mse_loss(x, NULL, WK_REDUCE_MEAN_LOSS), WK_ERR_ARG);
    TU_FAILS(wk_mse_loss(x, x, (wk_reduction)7), WK_ERR_ARG);
    TU_FAILS(wk_huber_loss(x, x, 0.0, WK_REDUCE_MEAN_LOSS), WK_ERR_ARG);
    TU_FAILS(wk_huber_loss(x, x, NAN, WK_REDUCE_MEAN_LOSS), WK_ERR_ARG);
    TU_FAILS(wk_bce_with_logits(x, wk_to_dtype(x, WK_F64), WK_REDUCE_SUM_LOSS), WK_ERR_DTYPE);
    TU_FAILS(wk_cross_entropy(x, ids, NULL), WK_ERR_INDEX); /* 4 is outside [0, 4) */
    TU_FAILS(wk_cross_entropy(x, wk_to_dtype(ok_ids, WK_F32), NULL), WK_ERR_DTYPE);
    TU_FAILS(wk_cross_entropy(wk_reshape(x, (int64_t[]){12}, 1), ok_ids, NULL), WK_ERR_SHAPE);
    TU_FAILS(wk_cross_entropy(x, wk_narrow(ok_ids, 0, 0, 2), NULL), WK_ERR_SHAPE);
    wk_class_loss_opts o = {.label_smoothing = 1.0};
    TU_FAILS(wk_cross_entropy(x, ok_ids, &o), WK_ERR_ARG);
    o.label_smoothing = 0.1;
    TU_FAILS(wk_nll_loss(x, ok_ids, &o), WK_ERR_ARG);
    /* an ignore_index that matches the bad id makes it fine */
    wk_class_loss_opts ig = {.has_ignore_index = true, .ignore_index = 4};
    wk_tensor *l = TU_OK(wk_cross_entropy(x, ids, &ig));
    double v;
    TU_STATUS_OK(wk_item(l, &v));
    assert_true(fabs(v - log(4.0)) < 1e-6);
    /* every row ignored: the mean is NaN, as torch's 0 / 0 */
    wk_class_loss_opts all = {.has_ignore_index = true, .ignore_index = 0};
    wk_tensor *zeros = TU_OK(wk_zeros((int64_t[]){3}, 1, WK_U8, wk_cpu()));
    TU_STATUS_OK(wk_item(TU_OK(wk_cross_entropy(x, zeros, &all)), &v));
    assert_true(isnan(v));
    all.reduction = WK_REDUCE_SUM_LOSS;
    TU_STATUS_OK(wk_item(TU_OK(wk_cross_entropy(x, zeros, &all)), &v));
    assert_true(v == 0.0);
    wk_scope_end();
}

/* -------------------------------------------------------------- clipping */

static void test_clip_vs_torch(void **state) {
    (void)state;
    if (!have_oracle()) skip();
    const int mx[2] = {1, 100};
    for (int k = 0; k < 2; k++) {
        wk_scope_begin();
        wk_tensor *ps[3];
        wk_grad_store *gs = wk_grad_store_new();
        char f[64];
        for (int i = 0; i < 3; i++) {
            snprintf(f, sizeof f, "clip_g%d.npy", i);
            wk_tensor *g = load_as(f, WK_F64);
            ps[i] = TU_OK(wk_param_new(wk_zeros_like(g)));
            TU_STATUS_OK(wk_grad_set(gs, ps[i], g));
        }
        double total = 0;
        TU_STATUS_OK(wk_clip_grad_norm(gs, ps, 3, mx[k], &total));
        snprintf(f, sizeof f, "clip_%d_total.npy", mx[k]);
        double want;
        TU_STATUS_OK(wk_item(load_as(f, WK_F64), &want));
        assert_true(fabs(total - want) < 1e-12);
        for (int i = 0; i < 3; i++) {
            snprintf(f, sizeof f, "clip_%d_g%d.npy", mx[k], i);
            assert_true(rel_err(wk_grad(gs, ps[i]), load_as(f, WK_F64)) < 1e-12);
        }
        assert_int_equal(wk_clip_grad_norm(gs, ps, 3, -1, NULL), WK_ERR_ARG);
        assert_int_equal(wk_clip_grad_norm(NULL, ps, 3, 1, NULL), WK_ERR_ARG);
        wk_grad_store_free(gs);
        wk_scope_end();
    }
}

/* ---------------------------------------------------------------- layers */

static void assert_within(const wk_tensor *t, double bound, bool expect_spread) {
    int64_t n = wk_numel(t);
    double *v = malloc(sizeof(double) * (size_t)n), mx = 0;
    TU_STATUS_OK(wk_to_host_f64(t, v, (size_t)n));
    for (int64_t i = 0; i < n; i++) {
        assert_true(fabs(v[i]) <= bound);
        if (fabs(v[i]) > mx) mx = fabs(v[i]);
    }
    if (expect_spread) assert_true(mx > 0.8 * bound); /* uniform over the whole range, not a narrower one */
    free(v);
}

static void test_layer_init(void **state) {
    (void)state;
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 42));
    wk_linear l;
    TU_STATUS_OK(wk_linear_init(&l, 64, 32, true, WK_F32, wk_cpu()));
    tu_assert_shape(l.weight, (int64_t[]){32, 64}, 2);
    tu_assert_shape(l.bias, (int64_t[]){32}, 1);
    assert_true(wk_is_leaf(l.weight) && wk_is_leaf(l.bias));
    assert_within(l.weight, 1.0 / 8.0, true);
    assert_within(l.bias, 1.0 / 8.0, true);
    wk_tensor *ps[4];
    assert_int_equal(wk_linear_params(&l, ps, 4), 2);
    assert_ptr_equal(ps[0], l.weight);
    assert_int_equal(wk_linear_params(&l, NULL, 0), 2);
    wk_linear_free(&l);
    assert_null(l.weight);
    TU_STATUS_OK(wk_linear_init(&l, 5, 3, false, WK_BF16, wk_cpu()));
    assert_null(l.bias);
    assert_int_equal(wk_tensor_dtype(l.weight), WK_BF16);
    wk_linear_free(&l);
    assert_int_equal(wk_linear_init(&l, 0, 3, true, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    assert_int_equal(wk_linear_init(&l, 3, 3, true, WK_I32, wk_cpu()), WK_ERR_DTYPE);
    assert_int_equal(wk_linear_init(NULL, 3, 3, true, WK_F32, wk_cpu()), WK_ERR_ARG);

    wk_conv2d_layer c;
    wk_conv_params cp = {.padding = 1, .groups = 2};
    TU_STATUS_OK(wk_conv2d_layer_init(&c, 8, 16, 3, 3, &cp, true, WK_F32, wk_cpu()));
    tu_assert_shape(c.weight, (int64_t[]){16, 4, 3, 3}, 4);
    assert_within(c.weight, 1.0 / 6.0, true); /* fan_in 4 * 3 * 3 */
    assert_within(c.bias, 1.0 / 6.0, true);
    assert_int_equal(wk_conv2d_layer_params(&c, ps, 4), 2);
    wk_conv2d_layer_free(&c);
    assert_int_equal(wk_conv2d_layer_init(&c, 6, 16, 3, 3, &(wk_conv_params){.groups = 4}, true, WK_F32, wk_cpu()),
                     WK_ERR_SHAPE);

    wk_embedding_layer e;
    TU_STATUS_OK(wk_embedding_layer_init(&e, 100, 100, WK_F32, wk_cpu()));
    wk_scope_begin();
    double mean, sd;
    TU_STATUS_OK(wk_item(wk_mean_all(e.weight), &mean));
    TU_STATUS_OK(wk_item(wk_sqrt(wk_mean_all(wk_sqr(e.weight))), &sd));
    assert_true(fabs(mean) < 0.05 && fabs(sd - 1.0) < 0.05); /* N(0, 1) */
    wk_tensor *ids = TU_OK(wk_from_host((int32_t[]){3, 7}, 8, (int64_t[]){2}, 1, WK_I32, wk_cpu()));
    wk_tensor *y = TU_OK(wk_embedding_layer_forward(&e, ids));
    tu_assert_shape(y, (int64_t[]){2, 100}, 2);
    assert_true(tu_max_abs_diff(wk_select(y, 0, 1), wk_select(e.weight, 0, 7)) == 0.0);
    wk_scope_end();
    assert_int_equal(wk_embedding_layer_params(&e, ps, 4), 1);
    wk_embedding_layer_free(&e);

    wk_norm_layer nl;
    TU_STATUS_OK(wk_norm_layer_init(&nl, 6, false, 1e-5, WK_F32, wk_cpu()));
    assert_int_equal(wk_norm_layer_params(&nl, ps, 4), 2);
    wk_scope_begin();
    double s;
    TU_STATUS_OK(wk_item(wk_sum_all(nl.weight), &s));
    assert_true(s == 6.0);
    TU_STATUS_OK(wk_item(wk_sum_all(wk_abs(nl.bias)), &s));
    assert_true(s == 0.0);
    /* forward against the formula: (x - mean) / sqrt(var + eps) */
    wk_tensor *x = TU_OK(wk_rand((int64_t[]){3, 6}, 2, -2, 2, WK_F32, wk_cpu()));
    wk_tensor *mu = wk_mean(x, (int[]){1}, 1, true);
    wk_tensor *xc = wk_sub(x, mu);
    wk_tensor *want = wk_div(xc, wk_sqrt(wk_affine(wk_mean(wk_sqr(xc), (int[]){1}, 1, true), 1.0, 1e-5)));
    assert_true(tu_max_abs_diff(TU_OK(wk_norm_layer_forward(&nl, x)), TU_OK(want)) < 1e-5);
    wk_scope_end();
    wk_norm_layer_free(&nl);
    TU_STATUS_OK(wk_norm_layer_init(&nl, 6, true, 1e-6, WK_F32, wk_cpu()));
    assert_null(nl.bias);
    assert_int_equal(wk_norm_layer_params(&nl, ps, 4), 1);
    wk_scope_begin();
    x = TU_OK(wk_rand((int64_t[]){3, 6}, 2, -2, 2, WK_F32, wk_cpu()));
    want = wk_div(x, wk_sqrt(wk_affine(wk_mean(wk_sqr(x), (int[]){1}, 1, true), 1.0, 1e-6)));
    assert_true(tu_max_abs_diff(TU_OK(wk_norm_layer_forward(&nl, x)), TU_OK(want)) < 1e-5);
    wk_scope_end();
    wk_norm_layer_free(&nl);
    assert_int_equal(wk_norm_layer_init(&nl, 0, true, 1e-6, WK_F32, wk_cpu()), WK_ERR_SHAPE);
}

static void test_layers_vs_torch(void **state) {
    (void)state;
    if (!have_oracle()) skip();
    wk_scope_begin();
    wk_linear l;
    TU_STATUS_OK(wk_linear_init(&l, 6, 3, true, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_param_assign_(l.weight, load_as("lin_w.npy", WK_F64)));
    TU_STATUS_OK(wk_param_assign_(l.bias, load_as("lin_b.npy", WK_F64)));
    wk_tensor *y = TU_OK(wk_linear_forward(&l, load_as("lin_x.npy", WK_F64)));
    assert_true(rel_err(y, load_as("lin_y.npy", WK_F64)) < 1e-12);
    /* a rank-1 input */
    wk_tensor *y1 = TU_OK(wk_linear_forward(&l, wk_select(wk_select(load_as("lin_x.npy", WK_F64), 0, 1), 0, 2)));
    tu_assert_shape(y1, (int64_t[]){3}, 1);
    assert_true(rel_err(y1, wk_select(wk_select(load_as("lin_y.npy", WK_F64), 0, 1), 0, 2)) < 1e-12);
    TU_FAILS(wk_linear_forward(&l, wk_zeros((int64_t[]){2, 5}, 2, WK_F64, wk_cpu())), WK_ERR_SHAPE);
    wk_linear_free(&l);
    wk_conv2d_layer c;
    wk_conv_params cp = {.stride = 2, .padding = 1, .groups = 2};
    TU_STATUS_OK(wk_conv2d_layer_init(&c, 4, 6, 3, 2, &cp, true, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_param_assign_(c.weight, load_as("conv_w.npy", WK_F64)));
    TU_STATUS_OK(wk_param_assign_(c.bias, load_as("conv_b.npy", WK_F64)));
    y = TU_OK(wk_conv2d_layer_forward(&c, load_as("conv_x.npy", WK_F64)));
    assert_true(rel_err(y, load_as("conv_y.npy", WK_F64)) < 1e-12);
    wk_conv2d_layer_free(&c);
    wk_scope_end();
}

/* Linear's gradients (matmul and add rules) against finite differences. */
static wk_linear *g_lin;
static wk_tensor *linear_fn(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    (void)ctx;
    wk_linear l = {in[1], in[2]};
    (void)g_lin;
    return wk_linear_forward(&l, in[0]);
}

static void test_linear_gradcheck(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *in[3] = {TU_OK(wk_rand((int64_t[]){2, 3, 4}, 3, -1, 1, WK_F64, wk_cpu())),
                        TU_OK(wk_rand((int64_t[]){5, 4}, 2, -1, 1, WK_F64, wk_cpu())),
                        TU_OK(wk_rand((int64_t[]){5}, 1, -1, 1, WK_F64, wk_cpu()))};
    gc_check("linear", linear_fn, NULL, in, 3, NULL);
    wk_scope_end();
}

/* Norm layers' gradients (the fused nn rules of wip/grad_nn) against
 * finite differences: x, weight and (layer norm) bias. */
static wk_tensor *norm_fn(wk_tensor *const *in, int nin, void *ctx) {
    wk_norm_layer n = {in[1], nin > 2 ? in[2] : NULL, 1e-5, *(const bool *)ctx};
    return wk_norm_layer_forward(&n, in[0]);
}

static void test_norm_layer_gradcheck(void **state) {
    (void)state;
    wk_scope_begin();
    for (int rms = 0; rms < 2; rms++) {
        bool r = rms != 0;
        wk_tensor *in[3] = {TU_OK(wk_rand((int64_t[]){2, 3, 6}, 3, -2, 2, WK_F64, wk_cpu())),
                            TU_OK(wk_rand((int64_t[]){6}, 1, 0.5, 1.5, WK_F64, wk_cpu())),
                            TU_OK(wk_rand((int64_t[]){6}, 1, -1, 1, WK_F64, wk_cpu()))};
        gc_check(r ? "rms norm layer" : "layer norm layer", norm_fn, &r, in, r ? 2 : 3, NULL);
    }
    wk_scope_end();
}

/* cross_entropy's rule is written with public ops: under create_graph its
 * gradient is differentiated again (through softmax's rule) */
static void test_cross_entropy_second_order(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *in[2] = {TU_OK(wk_rand((int64_t[]){3, 4}, 2, -1, 1, WK_F64, wk_cpu())),
                        TU_OK(wk_rand((int64_t[]){4, 5}, 2, -1, 1, WK_F64, wk_cpu()))};
    wk_class_loss_opts o = {.reduction = WK_REDUCE_MEAN_LOSS, .label_smoothing = 0.1, .has_ignore_index = true,
                            .ignore_index = 1};
    gc_opts go = {.second_order = true};
    gc_check("cross_entropy (second order)", ce_of_linear, &o, in, 2, &go);
    wk_scope_end();
}

/* Conv2d layer: the bias's gradient (its reshape and broadcast add) against
 * finite differences; the weight's and input's come from conv2d's rule
 * (wip/grad_conv's tests), so only the bias is tracked here. */
static wk_tensor *conv_fn(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    wk_conv2d_layer c = {in[1], in[2], *(const wk_conv_params *)ctx};
    return wk_conv2d_layer_forward(&c, in[0]);
}

static void test_conv_layer_bias_gradcheck(void **state) {
    (void)state;
    wk_scope_begin();
    wk_conv_params cp = {.stride = 2, .padding = 1};
    wk_tensor *in[3] = {TU_OK(wk_rand((int64_t[]){2, 3, 5, 5}, 4, -1, 1, WK_F64, wk_cpu())),
                        TU_OK(wk_rand((int64_t[]){4, 3, 3, 3}, 4, -1, 1, WK_F64, wk_cpu())),
                        TU_OK(wk_rand((int64_t[]){4}, 1, -1, 1, WK_F64, wk_cpu()))};
    const bool track[3] = {false, false, true};
    gc_opts o = {.track = track};
    gc_check("conv2d layer bias", conv_fn, &cp, in, 3, &o);
    wk_scope_end();
}

/* ----------------------------------------------------------- checkpoints */

static void tmp_path(char *out, size_t cap, const char *tag) {
    snprintf(out, cap, "/tmp/wick_test_train_%d_%s.safetensors", (int)getpid(), tag);
}

/* Two parameters, an optimizer, and a fixed gradient for each. */
typedef struct model {
    wk_tensor *p[2];
    wk_optimizer *opt;
    wk_grad_store *gs;
} model;

static void model_make(model *m, const wk_optim_config *cfg, uint64_t seed) {
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), seed));
    wk_scope_begin(); /* the random inits */
    m->p[0] = wk_keep(TU_OK(wk_param_new(wk_rand((int64_t[]){3, 4}, 2, -1, 1, WK_F32, wk_cpu()))));
    m->p[1] = wk_keep(TU_OK(wk_param_new(wk_rand((int64_t[]){5}, 1, -1, 1, WK_F32, wk_cpu()))));
    wk_scope_end();
    m->opt = wk_optimizer_new(cfg, m->p, 2);
    assert_non_null(m->opt);
    m->gs = wk_grad_store_new();
}
static void model_step(model *m, int k, bool second) {
    wk_scope_begin();
    wk_grad_store_zero(m->gs);
    /* the gradient of sum(p^2 * (k + 1)) + ... : fixed per step */
    wk_tensor *l = wk_sum_all(wk_affine(wk_sqr(m->p[0]), k + 1.0, 0.0));
    if (second) l = wk_add(l, wk_sum_all(wk_sin(m->p[1])));
    TU_STATUS_OK(wk_backward(TU_OK(l), m->gs, NULL));
    TU_STATUS_OK(wk_optimizer_step(m->opt, m->gs));
    wk_scope_end();
}
static void model_free(model *m) {
    wk_optimizer_free(m->opt);
    wk_grad_store_free(m->gs);
    wk_tensor_free(m->p[0]);
    wk_tensor_free(m->p[1]);
}

static void test_checkpoint_roundtrip(void **state) {
    (void)state;
    const char *names[2] = {"layer.w", "layer.b"};
    wk_optim_config cfgs[3] = {{.kind = WK_ADAMW, .lr = 0.05, .weight_decay = 0.1, .beta1 = 0.8},
                               {.kind = WK_SGD, .lr = 0.1, .momentum = 0.9, .dampening = 0.1},
                               {.kind = WK_SGD, .lr = 0.1}};
    char path[256];
    tmp_path(path, sizeof path, "rt");
    for (int c = 0; c < 3; c++) {
        model a, b;
        model_make(&a, &cfgs[c], 1);
        /* p[1] gets no gradient in the first step: its step count lags */
        model_step(&a, 0, false);
        model_step(&a, 1, true);
        TU_STATUS_OK(wk_checkpoint_save(path, names, a.p, 2, a.opt));
        wk_optim_config other = cfgs[c];
        other.lr = 0.7; /* restored from the file */
        model_make(&b, &other, 99);
        TU_STATUS_OK(wk_checkpoint_load(path, names, b.p, 2, b.opt));
        assert_true(wk_optimizer_lr(b.opt) == cfgs[c].lr);
        assert_int_equal(wk_optimizer_steps(b.opt), 2);
        for (int k = 2; k < 5; k++) {
            model_step(&a, k, true);
            model_step(&b, k, true);
        }
        for (int i = 0; i < 2; i++) assert_true(ou_same_bits(a.p[i], b.p[i]));
        /* parameters only (no optimizer) */
        model_free(&b);
        model_make(&b, &cfgs[c], 5);
        TU_STATUS_OK(wk_checkpoint_save(path, names, a.p, 2, NULL));
        TU_STATUS_OK(wk_checkpoint_load(path, names, b.p, 2, NULL));
        for (int i = 0; i < 2; i++) assert_true(ou_same_bits(a.p[i], b.p[i]));
        /* no optimizer state in that file */
        assert_int_equal(wk_checkpoint_load(path, names, b.p, 2, b.opt), WK_ERR_FORMAT);
        model_free(&a);
        model_free(&b);
    }
    unlink(path);
}

/* Write a file with the given tensors and metadata (for hostile cases). */
static void write_file(const char *path, int n, const char *const *names, wk_tensor *const *ts, int nm,
                       const char *const *k, const char *const *v) {
    TU_STATUS_OK(wk_safetensors_save(path, n, names, ts, nm, k, v));
}

static void test_checkpoint_hostile(void **state) {
    (void)state;
    const char *names[2] = {"w", "b"};
    char path[256];
    tmp_path(path, sizeof path, "bad");
    model m;
    wk_optim_config cfg = {.kind = WK_ADAM, .lr = 0.01};
    model_make(&m, &cfg, 3);
    model_step(&m, 0, true);
    wk_scope_begin();
    wk_tensor *w = TU_OK(wk_copy(m.p[0])), *b = TU_OK(wk_copy(m.p[1]));
    wk_tensor *w_bad = TU_OK(wk_zeros((int64_t[]){4, 3}, 2, WK_F32, wk_cpu()));
    wk_tensor *b_f64 = TU_OK(wk_zeros((int64_t[]){5}, 1, WK_F64, wk_cpu()));
    double before;
    TU_STATUS_OK(wk_get(m.p[0], (int64_t[]){0, 0}, &before));
    /* parameters: missing, wrong shape, wrong dtype */
    write_file(path, 1, (const char *[]){"w"}, (wk_tensor *[]){w}, 0, NULL, NULL);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, NULL), WK_ERR_FORMAT);
    assert_non_null(strstr(wk_last_error(), "\"b\""));
    write_file(path, 2, names, (wk_tensor *[]){w_bad, b}, 0, NULL, NULL);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, NULL), WK_ERR_FORMAT);
    write_file(path, 2, names, (wk_tensor *[]){w, b_f64}, 0, NULL, NULL);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, NULL), WK_ERR_FORMAT);
    /* optimizer metadata: each line breaks one thing of a good set */
    const char *keys[] = {"optim.kind", "optim.lr",   "optim.weight_decay", "optim.momentum", "optim.dampening",
                          "optim.beta1", "optim.beta2", "optim.eps",        "optim.nesterov", "optim.steps",
                          "optim.w.step", "optim.b.step"};
    enum { NK = sizeof keys / sizeof keys[0] };
    const char *good[NK] = {"adam", "0.01", "0", "0", "0", "0.9", "0.999", "1e-08", "false", "1", "1", "1"};
    wk_tensor *ts[6] = {w, b, w, w, b, b};
    const char *tn[6] = {"w", "b", "optim.w.m", "optim.w.v", "optim.b.m", "optim.b.v"};
    write_file(path, 6, tn, ts, NK, keys, good);
    TU_STATUS_OK(wk_checkpoint_load(path, names, m.p, 2, m.opt)); /* the good set loads */
    struct { int key; const char *value; } breaks[] = {
        {0, "sgd"}, {1, "abc"}, {1, "nan"}, {1, "-1"}, {5, "1.5"}, {7, ""}, {8, "yes"}, {9, "-3"},
        {9, "1x"},  {10, "2"},  {10, "0"},  {11, "99999999999999999999"},
    };
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        const char *vals[NK];
        memcpy(vals, good, sizeof vals);
        vals[breaks[i].key] = breaks[i].value;
        write_file(path, 6, tn, ts, NK, keys, vals);
        wk_status s = wk_checkpoint_load(path, names, m.p, 2, m.opt);
        if (s != WK_ERR_FORMAT) fail_msg("break %zu (%s = \"%s\"): status %d", i, keys[breaks[i].key], breaks[i].value, s);
    }
    /* a state tensor missing, mis-shaped, or present without a step */
    write_file(path, 5, tn, ts, NK, keys, good);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, m.opt), WK_ERR_FORMAT);
    wk_tensor *ts2[6] = {w, b, w, w, b, w};
    write_file(path, 6, tn, ts2, NK, keys, good);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, m.opt), WK_ERR_FORMAT);
    write_file(path, 6, tn, ts, NK - 1, keys, good);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, m.opt), WK_ERR_FORMAT);
    /* not a safetensors file at all, a truncated one, a missing one */
    FILE *f = fopen(path, "wb");
    fwrite("\xff\xff\xff\xff\xff\xff\xff\x7f{", 1, 9, f);
    fclose(f);
    assert_int_equal(wk_checkpoint_load(path, names, m.p, 2, m.opt), WK_ERR_FORMAT);
    unlink(path);
    assert_int_not_equal(wk_checkpoint_load(path, names, m.p, 2, NULL), WK_OK);
    /* bad arguments */
    assert_int_equal(wk_checkpoint_load(NULL, names, m.p, 2, NULL), WK_ERR_ARG);
    assert_int_equal(wk_checkpoint_save(path, (const char *[]){"w", NULL}, m.p, 2, NULL), WK_ERR_ARG);
    assert_int_equal(wk_checkpoint_save(path, names, (wk_tensor *[]){m.p[1], m.p[0]}, 2, m.opt), WK_ERR_ARG);
    assert_int_equal(wk_checkpoint_save(path, (const char *[]){"w", "w"}, m.p, 2, NULL), WK_ERR_ARG);
    /* none of the failed loads wrote into the parameter: it has the good set's values */
    double after;
    TU_STATUS_OK(wk_get(m.p[0], (int64_t[]){0, 0}, &after));
    double want;
    TU_STATUS_OK(wk_get(w, (int64_t[]){0, 0}, &want));
    assert_true(after == want);
    (void)before;
    wk_scope_end();
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optim_vs_torch),         cmocka_unit_test(test_step_allocates_nothing),
        cmocka_unit_test(test_step_threads_agree),     cmocka_unit_test(test_optim_errors_and_skips),
        cmocka_unit_test(test_param_assign),           cmocka_unit_test(test_losses_vs_torch),
        cmocka_unit_test(test_cross_entropy_gradcheck), cmocka_unit_test(test_cross_entropy_memory),
        cmocka_unit_test(test_loss_errors),            cmocka_unit_test(test_clip_vs_torch),
        cmocka_unit_test(test_layer_init),             cmocka_unit_test(test_layers_vs_torch),
        cmocka_unit_test(test_linear_gradcheck),       cmocka_unit_test(test_checkpoint_roundtrip),
        cmocka_unit_test(test_checkpoint_hostile),     cmocka_unit_test(test_norm_layer_gradcheck),
        cmocka_unit_test(test_cross_entropy_second_order), cmocka_unit_test(test_conv_layer_bias_gradcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
