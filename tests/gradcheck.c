/* Gradient checks against central differences (tests/gradcheck.h). */
#include "gradcheck.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

wk_tensor *gc_weights(const int64_t *shape, int rank, wk_dtype dt, uint64_t seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) return NULL;
    uint64_t s = seed * 7919 + 17;
    for (int64_t i = 0; i < n; i++) v[i] = (double)(mix(&s) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    wk_tensor *t = wk_from_host(v, sizeof(double) * (size_t)n, shape, rank, WK_F64, wk_cpu());
    free(v);
    if (!t || dt == WK_F64) return t;
    wk_tensor *c = wk_to_dtype(t, dt);
    wk_tensor_free(t);
    return c;
}

/* L = sum(fn(in) * R), as a double; NAN on error. Untracked. */
static double loss_value(gc_fn fn, void *ctx, wk_tensor *const *in, int nin, uint64_t seed) {
    wk_no_grad_begin();
    wk_scope_begin();
    double v = NAN;
    wk_tensor *y = fn(in, nin, ctx);
    if (y) {
        wk_tensor *r = gc_weights(wk_shape(y), wk_rank(y), wk_tensor_dtype(y), seed);
        wk_tensor *l = wk_sum_all(wk_mul(y, r));
        if (!l || wk_item(l, &v) != WK_OK) v = NAN;
    }
    wk_scope_end();
    wk_no_grad_end();
    return v;
}

static bool want(const gc_opts *o, wk_tensor *const *in, int i) {
    if (!in[i] || !wk_dtype_is_float(wk_tensor_dtype(in[i]))) return false;
    return !o || !o->track || o->track[i];
}

wk_status gc_grads(gc_fn fn, void *ctx, wk_tensor *const *in, int nin, const bool *track, uint64_t seed,
                   wk_tensor **out) {
    gc_opts o = {.track = track};
    for (int i = 0; i < nin; i++) {
        out[i] = NULL;
        if (want(&o, in, i) && wk_requires_grad(in[i], true) != WK_OK) return wk_last_status();
    }
    wk_status st = WK_OK;
    wk_grad_store *gs = wk_grad_store_new();
    wk_scope_begin();
    wk_tensor *y = fn(in, nin, ctx);
    if (!y) st = wk_last_status();
    else if (!wk_is_tracked(y)) {
        /* nothing depends on the tracked inputs: zero gradients */
        for (int i = 0; i < nin; i++)
            if (want(&o, in, i)) out[i] = wk_keep(wk_zeros_like(in[i]));
    } else {
        wk_tensor *r = gc_weights(wk_shape(y), wk_rank(y), wk_tensor_dtype(y), seed);
        wk_tensor *l = wk_sum_all(wk_mul(y, r));
        st = l ? wk_backward(l, gs, NULL) : wk_last_status();
        for (int i = 0; st == WK_OK && i < nin; i++) {
            if (!want(&o, in, i)) continue;
            wk_tensor *g = wk_grad(gs, in[i]);
            out[i] = g ? wk_tensor_retain(g) : wk_keep(wk_zeros_like(in[i]));
        }
    }
    wk_scope_end();
    wk_grad_store_free(gs);
    for (int i = 0; i < nin; i++)
        if (want(&o, in, i)) wk_requires_grad(in[i], false);
    return st;
}

/* Input i's values as a contiguous f64 host array. */
static double *host_vals(const wk_tensor *t) {
    int64_t n = wk_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (v && wk_to_host_f64(t, v, (size_t)n) != WK_OK) {
        free(v);
        return NULL;
    }
    return v;
}

static wk_tensor *from_vals(const double *v, const wk_tensor *like) {
    return wk_from_host(v, sizeof(double) * (size_t)wk_numel(like), wk_shape(like), wk_rank(like), WK_F64, wk_cpu());
}

static double compare(const char *what, const char *kind, int i, const double *a, const double *num, int64_t n,
                      double atol, double rtol) {
    double worst = 0;
    for (int64_t j = 0; j < n; j++) {
        double bound = atol + rtol * fabs(num[j]);
        double e = fabs(a[j] - num[j]) / bound;
        if (isnan(a[j]) != isnan(num[j])) e = INFINITY;
        if (isnan(a[j]) && isnan(num[j])) e = 0;
        if (e > worst) worst = e;
        if (e > 1) {
            print_error("%s: %s of input %d, element %lld: autograd %.10g, differences %.10g\n", what, kind, i,
                        (long long)j, a[j], num[j]);
            fail();
        }
    }
    return worst;
}

double gc_check(const char *what, gc_fn fn, void *ctx, wk_tensor *const *in, int nin, const gc_opts *o) {
    double eps = o && o->eps > 0 ? o->eps : 1e-6;
    double atol = o && o->atol > 0 ? o->atol : 1e-6, rtol = o && o->rtol > 0 ? o->rtol : 1e-5;
    const uint64_t seed = 1234;
    wk_tensor *g[16] = {0};
    assert_true(nin <= 16);
    if (gc_grads(fn, ctx, in, nin, o ? o->track : NULL, seed, g) != WK_OK) {
        print_error("%s: backward failed: %s\n", what, wk_last_error());
        fail();
    }
    double worst = 0;
    wk_tensor *work[16];
    for (int i = 0; i < nin; i++) {
        if (!g[i]) continue;
        int64_t n = wk_numel(in[i]);
        double *v = host_vals(in[i]), *ga = host_vals(g[i]);
        double *num = malloc(sizeof(double) * (size_t)(n ? n : 1));
        assert_non_null(v);
        assert_non_null(ga);
        assert_non_null(num);
        memcpy(work, in, sizeof(wk_tensor *) * (size_t)nin);
        for (int64_t j = 0; j < n; j++) {
            double x0 = v[j];
            v[j] = x0 + eps;
            wk_tensor *p = from_vals(v, in[i]);
            work[i] = p;
            double fp = loss_value(fn, ctx, work, nin, seed);
            wk_tensor_free(p);
            v[j] = x0 - eps;
            p = from_vals(v, in[i]);
            work[i] = p;
            double fm = loss_value(fn, ctx, work, nin, seed);
            wk_tensor_free(p);
            v[j] = x0;
            num[j] = (fp - fm) / (2 * eps);
        }
        double w = compare(what, "gradient", i, ga, num, n, atol, rtol);
        if (w > worst) worst = w;
        free(v);
        free(ga);
        free(num);
    }

    if (o && o->second_order) {
        /* H V against (grad(x + eps V) - grad(x - eps V)) / 2 eps, V random per input */
        wk_tensor *vv[16] = {0}, *hv[16] = {0};
        wk_tensor *xs[16];
        int nx = 0;
        for (int i = 0; i < nin; i++)
            if (g[i]) {
                vv[i] = gc_weights(wk_shape(in[i]), wk_rank(in[i]), WK_F64, 99 + (uint64_t)i);
                assert_non_null(vv[i]);
                assert_int_equal(wk_requires_grad(in[i], true), WK_OK);
                xs[nx++] = in[i];
            }
        wk_scope_begin();
        wk_tensor *y = fn(in, nin, ctx);
        assert_non_null(y);
        wk_tensor *r = gc_weights(wk_shape(y), wk_rank(y), wk_tensor_dtype(y), seed);
        wk_tensor *l = wk_sum_all(wk_mul(y, r));
        wk_tensor *gr[16];
        wk_backward_opts bo = {.create_graph = true};
        if (wk_grad_of(l, xs, nx, &bo, gr) != WK_OK) {
            print_error("%s: create_graph backward failed: %s\n", what, wk_last_error());
            fail();
        }
        wk_tensor *s = NULL;
        for (int k = 0, i = 0; i < nin; i++) {
            if (!g[i]) continue;
            wk_tensor *d = wk_sum_all(wk_mul(gr[k], vv[i]));
            s = s ? wk_add(s, d) : d;
            wk_tensor_free(gr[k]);
            k++;
        }
        wk_tensor *h[16];
        if (!wk_is_tracked(s)) { /* the gradient does not depend on the inputs: H = 0 */
            for (int k = 0; k < nx; k++) h[k] = wk_zeros_like(xs[k]);
        } else if (wk_grad_of(s, xs, nx, NULL, h) != WK_OK) {
            print_error("%s: second backward failed: %s\n", what, wk_last_error());
            fail();
        }
        for (int k = 0, i = 0; i < nin; i++)
            if (g[i]) hv[i] = wk_keep(h[k++]); /* past the scope's end */
        wk_scope_end();
        for (int i = 0; i < nin; i++)
            if (g[i]) wk_requires_grad(in[i], false);
        /* differences of first gradients along V */
        wk_tensor *plus[16], *minus[16], *gp[16], *gm[16];
        for (int i = 0; i < nin; i++) {
            plus[i] = minus[i] = in[i];
            if (!g[i]) continue;
            double *v = host_vals(in[i]), *dv = host_vals(vv[i]);
            int64_t n = wk_numel(in[i]);
            for (int64_t j = 0; j < n; j++) v[j] += eps * dv[j];
            plus[i] = from_vals(v, in[i]);
            for (int64_t j = 0; j < n; j++) v[j] -= 2 * eps * dv[j];
            minus[i] = from_vals(v, in[i]);
            free(v);
            free(dv);
        }
        bool track[16] = {false};
        for (int i = 0; i < nin; i++) track[i] = g[i] != NULL;
        assert_int_equal(gc_grads(fn, ctx, plus, nin, track, seed, gp), WK_OK);
        assert_int_equal(gc_grads(fn, ctx, minus, nin, track, seed, gm), WK_OK);
        for (int i = 0; i < nin; i++) {
            if (!g[i]) continue;
            int64_t n = wk_numel(in[i]);
            double *a = host_vals(hv[i]), *p = host_vals(gp[i]), *m = host_vals(gm[i]);
            for (int64_t j = 0; j < n; j++) p[j] = (p[j] - m[j]) / (2 * eps);
            double w = compare(what, "Hessian-vector product", i, a, p, n, atol * 10, rtol * 10);
            if (w > worst) worst = w;
            free(a);
            free(p);
            free(m);
            wk_tensor_free(plus[i]);
            wk_tensor_free(minus[i]);
            wk_tensor_free(gp[i]);
            wk_tensor_free(gm[i]);
            wk_tensor_free(hv[i]);
            wk_tensor_free(vv[i]);
        }
    }
    for (int i = 0; i < nin; i++) wk_tensor_free(g[i]);
    return worst;
}
