/* Gradients on CUDA against the same gradients on the CPU: small models
 * built from public ops, run forward + backward on both devices from the
 * same parameter values, every parameter's gradient compared (f32, and f64
 * for the MLP). An MLP (matmul, bias broadcast, tanh, squares, sums), the
 * fused nn ops (softmax / log_softmax along an inner dim, rms_norm,
 * layer_norm, attention: causal + q_offset + GQA + mask), a conv + max /
 * avg pool + upsample net. Where the CPU has no gradient for a model (the
 * op's rule is not in this build), that model is skipped, saying so.
 *
 * Needs a GPU: without one the program exits 77 (ctest's skip). With
 * WICK_TEST_GPU_AS_CPU=1 (the test_cuda_grad_dry entry) the CPU stands in,
 * so the models, shapes and tolerances run on every machine. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wick/autograd.h"
#include "wick/nn.h"
#include "tensor/tensor.h" /* the device's backend entries, for the direct checks */

static wk_device *g_dev;

#define NP_MAX 8
typedef wk_tensor *(*model_fn)(wk_tensor *const *p, wk_tensor *const *c);

/* Build the model on dev from CPU parameter values p0 (tracked) and
 * constants c0; backward; the gradients (on dev) into grads. false when a
 * parameter got no gradient (no rule for an op in this build). */
static bool run_model(model_fn f, wk_device *dev, wk_tensor *const *p0, int np, wk_tensor *const *c0, int nc,
                      wk_grad_store *gs, wk_tensor **grads) {
    wk_tensor *p[NP_MAX], *c[NP_MAX];
    for (int i = 0; i < np; i++) {
        p[i] = tu_to_device(p0[i], dev);
        TU_STATUS_OK(wk_requires_grad(p[i], true));
    }
    for (int i = 0; i < nc; i++) c[i] = tu_to_device(c0[i], dev);
    wk_tensor *loss = f(p, c);
    if (!loss) fprintf(stderr, "model: %s\n", wk_last_error());
    assert_non_null(loss);
    if (!wk_is_tracked(loss)) return false;
    wk_status st = wk_backward(loss, gs, NULL);
    if (st != WK_OK) fprintf(stderr, "backward: %s\n", wk_last_error());
    TU_STATUS_OK(st);
    for (int i = 0; i < np; i++) {
        grads[i] = wk_grad(gs, p[i]);
        if (!grads[i]) return false;
    }
    return true;
}

static void compare_model(const char *what, model_fn f, wk_tensor *const *p0, int np, wk_tensor *const *c0, int nc,
                          double tol) {
    wk_grad_store *gc = wk_grad_store_new(), *gg = wk_grad_store_new();
    assert_true(gc && gg);
    wk_tensor *rc[NP_MAX], *rg[NP_MAX];
    bool ok_cpu = run_model(f, wk_cpu(), p0, np, c0, nc, gc, rc);
    if (!ok_cpu) {
        printf("%s: skipped (no CPU gradient: an op's rule is not in this build)\n", what);
        fflush(stdout);
        wk_grad_store_free(gc);
        wk_grad_store_free(gg);
        wk_clear_error();
        skip();
    }
    assert_true(run_model(f, g_dev, p0, np, c0, nc, gg, rg));
    for (int i = 0; i < np; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s: grad of parameter %d", what, i);
        tu_assert_matches(name, rg[i], rc[i], tol, tol);
    }
    wk_grad_store_free(gc);
    wk_grad_store_free(gg);
}

static wk_tensor *vals(const int64_t *shape, int rank, wk_dtype dt, double scale, double shift) {
    return TU_OK(tu_values(shape, rank, dt, scale, shift));
}

/* ------------------------------------------------------------- the MLP */

static wk_tensor *mlp(wk_tensor *const *p, wk_tensor *const *c) {
    wk_tensor *h = wk_unary(wk_add(wk_matmul(c[0], p[0]), p[1]), WK_TANH);
    wk_tensor *y = wk_matmul(h, p[2]);
    wk_tensor *d = wk_sub(y, c[1]);
    return wk_mean_all(wk_mul(d, d));
}

static void test_mlp(void **state) {
    (void)state;
    wk_scope_begin();
    const wk_dtype dts[2] = {WK_F32, WK_F64};
    for (int di = 0; di < 2; di++) {
        wk_dtype dt = dts[di];
        int64_t sx[2] = {8, 5}, s1[2] = {5, 16}, sb[1] = {16}, s2[2] = {16, 3}, sy[2] = {8, 3};
        wk_tensor *p[3] = {vals(s1, 2, dt, 0.4, 0.1), vals(sb, 1, dt, 0.2, -0.05), vals(s2, 2, dt, 0.3, 0.0)};
        wk_tensor *c[2] = {vals(sx, 2, dt, 1.0, 0.2), vals(sy, 2, dt, 0.5, 0.1)};
        compare_model(dt == WK_F32 ? "mlp f32" : "mlp f64", mlp, p, 3, c, 2, dt == WK_F32 ? 1e-4 : 1e-10);
    }
    wk_scope_end();
}

/* ------------------------------------------------------- fused nn ops */

static wk_tensor *softmax_model(wk_tensor *const *p, wk_tensor *const *c) {
    wk_tensor *a = wk_mul(wk_softmax(p[0], 1), c[0]);
    wk_tensor *b = wk_mul(wk_log_softmax(p[0], 2), c[1]);
    return wk_add(wk_sum_all(a), wk_sum_all(b));
}

static wk_tensor *norm_model(wk_tensor *const *p, wk_tensor *const *c) {
    wk_tensor *a = wk_mul(wk_rms_norm(p[0], p[1], 1e-5), c[0]);
    wk_tensor *b = wk_mul(wk_layer_norm(p[0], p[1], p[2], 1e-5), c[1]);
    wk_tensor *n = wk_mul(wk_layer_norm(p[0], NULL, NULL, 1e-5), c[1]); /* without weight / bias */
    return wk_add(wk_add(wk_sum_all(a), wk_sum_all(b)), wk_sum_all(n));
}

static wk_tensor *attention_model(wk_tensor *const *p, wk_tensor *const *c) {
    wk_attention_opts o = {.mask = c[1], .scale = 0.0, .causal = true, .q_offset = 2};
    wk_tensor *y = wk_attention(p[0], p[1], p[2], &o);
    return wk_sum_all(wk_mul(y, c[0]));
}

static void test_softmax_grad(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[3] = {3, 40, 7};
    wk_tensor *p[1] = {vals(s, 3, WK_F32, 2.0, 0.1)};
    wk_tensor *c[2] = {vals(s, 3, WK_F32, 1.0, 0.3), vals(s, 3, WK_F32, 0.7, -0.2)};
    compare_model("softmax / log_softmax", softmax_model, p, 1, c, 2, 1e-4);
    wk_scope_end();
}

static void test_norm_grad(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[3] = {2, 5, 48}, sw[1] = {48};
    wk_tensor *p[3] = {vals(s, 3, WK_F32, 1.5, 0.2), vals(sw, 1, WK_F32, 0.5, 1.0), vals(sw, 1, WK_F32, 0.3, 0.0)};
    wk_tensor *c[2] = {vals(s, 3, WK_F32, 1.0, 0.3), vals(s, 3, WK_F32, 0.7, -0.2)};
    compare_model("rms_norm / layer_norm", norm_model, p, 3, c, 2, 2e-4);
    wk_scope_end();
}

static void test_attention_grad(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t sq[4] = {2, 4, 6, 16}, sk[4] = {2, 2, 8, 16}, sv[4] = {2, 2, 8, 12}, so[4] = {2, 4, 6, 12};
    int64_t sm[4] = {1, 1, 6, 8};
    wk_tensor *p[3] = {vals(sq, 4, WK_F32, 1.0, 0.1), vals(sk, 4, WK_F32, 1.0, -0.1), vals(sv, 4, WK_F32, 1.0, 0.0)};
    wk_tensor *c[2] = {vals(so, 4, WK_F32, 1.0, 0.2), vals(sm, 4, WK_F32, 0.5, 0.0)};
    compare_model("attention (causal, q_offset, GQA, mask)", attention_model, p, 3, c, 2, 2e-4);
    wk_scope_end();
}

/* ------------------------------------------------------ conv + pool net */

static wk_tensor *conv_model(wk_tensor *const *p, wk_tensor *const *c) {
    wk_conv_params cp = {.padding = 1, .stride = 1};
    wk_tensor *h = wk_unary(wk_conv2d(c[0], p[0], &cp), WK_TANH);
    wk_tensor *m = wk_max_pool2d(h, 3, 3, 2, 2, 1, 1);
    wk_tensor *a = wk_avg_pool2d(h, 2, 2, 2, 2, 0, 0, false);
    return wk_add(wk_sum_all(wk_mul(m, m)), wk_sum_all(wk_mul(a, c[1])));
}

static void test_conv_pool_grad(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t sx[4] = {2, 3, 9, 8}, sw[4] = {4, 3, 3, 3}, sa[4] = {2, 4, 4, 4};
    wk_tensor *p[1] = {vals(sw, 4, WK_F32, 0.5, 0.05)};
    wk_tensor *c[2] = {vals(sx, 4, WK_F32, 1.0, 0.1), vals(sa, 4, WK_F32, 1.0, -0.3)};
    compare_model("conv + max / avg pool", conv_model, p, 1, c, 2, 2e-4);
    wk_scope_end();
}

/* ------------------------------------------ the backend entries directly */

static void *dptr(const wk_tensor *t) { return t->storage->buf; }

/* Three AdamW steps (then one Adam with weight decay, one SGD nesterov)
 * through the device's optim_step on f32 buffers, against the same steps
 * in f64 on the host from the device's state read back each step. */
static void test_optim_entry(void **state) {
    (void)state;
    const wk_backend *be = g_dev->be;
    if (!be->optim_step) {
        printf("optim_step: skipped (the device's backend has no entry in this build)\n");
        skip();
    }
    wk_scope_begin();
    enum { N = 1000 };
    int64_t n = N;
    wk_tensor *w = tu_to_device(vals(&n, 1, WK_F32, 1.0, 0.1), g_dev);
    wk_tensor *m = TU_OK(wk_zeros(&n, 1, WK_F32, g_dev)), *v = TU_OK(wk_zeros(&n, 1, WK_F32, g_dev));
    static double hw[N], hm[N], hv[N], hg[N], ow[N], om[N], ov[N];
    const wk_optim_kind kinds[5] = {WK_OPTIM_ADAMW, WK_OPTIM_ADAMW, WK_OPTIM_ADAMW, WK_OPTIM_ADAM, WK_OPTIM_SGD};
    for (int step = 1; step <= 5; step++) {
        wk_tensor *g = tu_to_device(vals(&n, 1, WK_F32, 0.5 * step, 0.05 * step), g_dev);
        TU_STATUS_OK(wk_to_host_f64(w, hw, N));
        TU_STATUS_OK(wk_to_host_f64(m, hm, N));
        TU_STATUS_OK(wk_to_host_f64(v, hv, N));
        TU_STATUS_OK(wk_to_host_f64(g, hg, N));
        wk_optim_args a;
        memset(&a, 0, sizeof a);
        a.kind = kinds[step - 1];
        a.lr = 1e-2;
        a.weight_decay = 0.1;
        a.beta1 = 0.9;
        a.beta2 = 0.999;
        a.eps = 1e-8;
        a.bias_correction1 = 1 - pow(0.9, step);
        a.bias_correction2 = 1 - pow(0.999, step);
        a.momentum = 0.9;
        a.nesterov = true;
        a.first_step = false;
        for (int i = 0; i < N; i++) {
            double wi = hw[i], gi = hg[i], mi = hm[i], vi = hv[i];
            if (a.kind == WK_OPTIM_SGD) {
                gi += a.weight_decay * wi;
                mi = a.momentum * mi + gi;
                gi += a.momentum * mi;
                wi -= a.lr * gi;
            } else {
                if (a.kind == WK_OPTIM_ADAMW) wi *= 1 - a.lr * a.weight_decay;
                else gi += a.weight_decay * wi;
                mi = a.beta1 * mi + (1 - a.beta1) * gi;
                vi = a.beta2 * vi + (1 - a.beta2) * gi * gi;
                wi -= a.lr / a.bias_correction1 * mi / (sqrt(vi) / sqrt(a.bias_correction2) + a.eps);
            }
            hw[i] = wi;
            hm[i] = mi;
            hv[i] = vi;
        }
        TU_STATUS_OK(be->optim_step(g_dev, &a, dptr(w), dptr(g), dptr(m), a.kind == WK_OPTIM_SGD ? NULL : dptr(v), n,
                                    WK_F32));
        TU_STATUS_OK(wk_to_host_f64(w, ow, N));
        TU_STATUS_OK(wk_to_host_f64(m, om, N));
        TU_STATUS_OK(wk_to_host_f64(v, ov, N));
        for (int i = 0; i < N; i++) {
            if (fabs(ow[i] - hw[i]) > 1e-5 * (1 + fabs(hw[i])) || fabs(om[i] - hm[i]) > 1e-5 * (1 + fabs(hm[i])) ||
                fabs(ov[i] - hv[i]) > 1e-5 * (1 + fabs(hv[i]))) {
                fprintf(stderr, "optim step %d element %d: w %g vs %g, m %g vs %g, v %g vs %g\n", step, i, ow[i],
                        hw[i], om[i], hm[i], ov[i], hv[i]);
                fail();
            }
        }
    }
    wk_scope_end();
}

/* The device's backward entries against the CPU backend's, where both
 * exist (the CPU's come with the CPU half of the autograd work). */
static void test_backward_entries(void **state) {
    (void)state;
    const wk_backend *gb = g_dev->be, *cb = wk_cpu()->be;
    int ran = 0;
    wk_scope_begin();
    int64_t s[3] = {3, 33, 40}, sw[1] = {40};
    wk_tensor *y0 = vals(s, 3, WK_F32, 1.0, 0.1), *g0 = vals(s, 3, WK_F32, 0.7, -0.2), *w0 = vals(sw, 1, WK_F32, 0.5, 1.0);
    wk_tensor *y1 = tu_to_device(y0, g_dev), *g1 = tu_to_device(g0, g_dev), *w1 = tu_to_device(w0, g_dev);
    if (gb->softmax_backward && cb->softmax_backward) {
        for (int dim = 0; dim < 3; dim++)
            for (int lp = 0; lp < 2; lp++) {
                wk_tensor *rc = TU_OK(wk_zeros(s, 3, WK_F32, wk_cpu())), *rg = TU_OK(wk_zeros(s, 3, WK_F32, g_dev));
                TU_STATUS_OK(cb->softmax_backward(wk_cpu(), dptr(y0), &y0->layout, dptr(g0), &g0->layout, WK_F32, dim,
                                                  lp, dptr(rc)));
                TU_STATUS_OK(gb->softmax_backward(g_dev, dptr(y1), &y1->layout, dptr(g1), &g1->layout, WK_F32, dim, lp,
                                                  dptr(rg)));
                tu_assert_matches("softmax_backward entry", rg, rc, 1e-5, 1e-5);
            }
        ran++;
    }
    if (gb->norm_backward && cb->norm_backward) {
        for (int rms = 0; rms < 2; rms++) {
            wk_tensor *dxc = TU_OK(wk_zeros(s, 3, WK_F32, wk_cpu())), *dxg = TU_OK(wk_zeros(s, 3, WK_F32, g_dev));
            wk_tensor *dwc = TU_OK(wk_zeros(sw, 1, WK_F32, wk_cpu())), *dwg = TU_OK(wk_zeros(sw, 1, WK_F32, g_dev));
            wk_tensor *dbc = TU_OK(wk_zeros(sw, 1, WK_F32, wk_cpu())), *dbg = TU_OK(wk_zeros(sw, 1, WK_F32, g_dev));
            TU_STATUS_OK(cb->norm_backward(wk_cpu(), dptr(y0), &y0->layout, dptr(w0), &w0->layout, dptr(g0),
                                           &g0->layout, WK_F32, 1e-5, rms, dptr(dxc), dptr(dwc),
                                           rms ? NULL : dptr(dbc)));
            TU_STATUS_OK(gb->norm_backward(g_dev, dptr(y1), &y1->layout, dptr(w1), &w1->layout, dptr(g1), &g1->layout,
                                           WK_F32, 1e-5, rms, dptr(dxg), dptr(dwg), rms ? NULL : dptr(dbg)));
            tu_assert_matches("norm_backward dx", dxg, dxc, 1e-4, 1e-4);
            tu_assert_matches("norm_backward dw", dwg, dwc, 1e-4, 1e-4);
            if (!rms) tu_assert_matches("norm_backward db", dbg, dbc, 1e-4, 1e-4);
        }
        ran++;
    }
    if (gb->pool2d_backward && cb->pool2d_backward) {
        int64_t sx[4] = {2, 3, 9, 8}, so[4] = {2, 3, 5, 4};
        wk_tensor *x0 = vals(sx, 4, WK_F32, 1.0, 0.0), *go = vals(so, 4, WK_F32, 1.0, 0.3);
        wk_tensor *x1 = tu_to_device(x0, g_dev), *gg = tu_to_device(go, g_dev);
        wk_pool_params p = {.k = {3, 3}, .s = {2, 2}, .p = {1, 1}, .is_max = true, .count_include_pad = false};
        for (int mx = 0; mx < 2; mx++) {
            p.is_max = mx;
            wk_tensor *rc = TU_OK(wk_zeros(sx, 4, WK_F32, wk_cpu())), *rg = TU_OK(wk_zeros(sx, 4, WK_F32, g_dev));
            TU_STATUS_OK(cb->pool2d_backward(wk_cpu(), dptr(x0), &x0->layout, dptr(go), &go->layout, WK_F32, &p,
                                             dptr(rc)));
            TU_STATUS_OK(gb->pool2d_backward(g_dev, dptr(x1), &x1->layout, dptr(gg), &gg->layout, WK_F32, &p, dptr(rg)));
            tu_assert_matches("pool2d_backward entry", rg, rc, 1e-5, 1e-5);
        }
        ran++;
    }
    if (gb->upsample2d_backward && cb->upsample2d_backward) {
        int64_t sx[4] = {2, 3, 4, 5}, so[4] = {2, 3, 9, 11};
        wk_tensor *go = vals(so, 4, WK_F32, 1.0, 0.3), *gg = tu_to_device(go, g_dev);
        wk_tensor *shape_c = TU_OK(wk_zeros(sx, 4, WK_F32, wk_cpu()));
        for (int mode = 0; mode < 3; mode++) {
            wk_tensor *rc = TU_OK(wk_zeros(sx, 4, WK_F32, wk_cpu())), *rg = TU_OK(wk_zeros(sx, 4, WK_F32, g_dev));
            TU_STATUS_OK(cb->upsample2d_backward(wk_cpu(), dptr(go), &go->layout, dptr(rc), &shape_c->layout, WK_F32,
                                                 mode > 0, mode == 2));
            TU_STATUS_OK(gb->upsample2d_backward(g_dev, dptr(gg), &gg->layout, dptr(rg), &shape_c->layout, WK_F32,
                                                 mode > 0, mode == 2));
            tu_assert_matches("upsample2d_backward entry", rg, rc, 1e-5, 1e-5);
        }
        ran++;
    }
    wk_scope_end();
    if (!ran) {
        printf("backward entries: skipped (the CPU or the device backend has none in this build)\n");
        skip();
    }
}

int main(void) {
    const char *dry = getenv("WICK_TEST_GPU_AS_CPU");
    if (dry && dry[0] == '1') {
        g_dev = wk_cpu();
    } else {
        g_dev = wk_cuda(0);
        if (!g_dev) {
            printf("skipped (no CUDA device): %s\n", wk_last_error());
            return 77;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_softmax_grad),
        cmocka_unit_test(test_norm_grad),
        cmocka_unit_test(test_attention_grad),
        cmocka_unit_test(test_conv_pool_grad),
        cmocka_unit_test(test_optim_entry),
        cmocka_unit_test(test_backward_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
