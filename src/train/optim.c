/* Optimizers (train.h): torch.optim's SGD (momentum, dampening, Nesterov,
 * L2 weight decay), Adam and AdamW. A step runs in place on each
 * parameter's storage under no-grad through the backend's optim_step entry
 * (or the composite of public ops, optim_composite.c, when it has none),
 * and allocates nothing once the state buffers exist: they are made on a
 * parameter's first step, like torch's lazily created state. */
#include "train/train_internal.h"
#include "wick/train.h"
#include "autograd/node.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool wk__optim_has_m(const wk_optim_config *c) { return c->kind != WK_SGD || c->momentum != 0.0; }
bool wk__optim_has_v(const wk_optim_config *c) { return c->kind != WK_SGD; }

wk_optim_config wk__optim_config_resolve(const wk_optim_config *c) {
    wk_optim_config r = *c;
    if (r.lr == 0.0) r.lr = 1e-3;
    if (r.beta1 == 0.0) r.beta1 = 0.9;
    if (r.beta2 == 0.0) r.beta2 = 0.999;
    if (r.eps == 0.0) r.eps = 1e-8;
    return r;
}

wk_status wk__optim_config_check(const char *op, const wk_optim_config *c) {
    if (c->kind != WK_SGD && c->kind != WK_ADAM && c->kind != WK_ADAMW)
        return wk__err(WK_ERR_ARG, op, "unknown optimizer kind %d", (int)c->kind);
    /* !(x >= 0) also refuses NaN */
    if (!(c->lr >= 0.0) || !isfinite(c->lr)) return wk__err(WK_ERR_ARG, op, "lr %g must be finite and >= 0", c->lr);
    if (!(c->weight_decay >= 0.0) || !isfinite(c->weight_decay))
        return wk__err(WK_ERR_ARG, op, "weight_decay %g must be finite and >= 0", c->weight_decay);
    if (c->kind == WK_SGD) {
        if (!(c->momentum >= 0.0) || !isfinite(c->momentum))
            return wk__err(WK_ERR_ARG, op, "momentum %g must be finite and >= 0", c->momentum);
        if (!isfinite(c->dampening)) return wk__err(WK_ERR_ARG, op, "dampening %g must be finite", c->dampening);
        if (c->nesterov && (c->momentum <= 0.0 || c->dampening != 0.0))
            return wk__err(WK_ERR_ARG, op, "nesterov needs momentum > 0 and dampening 0 (got %g, %g)", c->momentum,
                           c->dampening);
    } else {
        if (!(c->beta1 >= 0.0 && c->beta1 < 1.0)) return wk__err(WK_ERR_ARG, op, "beta1 %g must be in [0, 1)", c->beta1);
        if (!(c->beta2 >= 0.0 && c->beta2 < 1.0)) return wk__err(WK_ERR_ARG, op, "beta2 %g must be in [0, 1)", c->beta2);
        if (!(c->eps >= 0.0) || !isfinite(c->eps)) return wk__err(WK_ERR_ARG, op, "eps %g must be finite and >= 0", c->eps);
    }
    return WK_OK;
}

wk_optim_args wk__optim_args_for(const wk_optim_config *c, int64_t t) {
    wk_optim_args a = {0};
    a.kind = c->kind == WK_SGD ? WK_OPTIM_SGD : c->kind == WK_ADAM ? WK_OPTIM_ADAM : WK_OPTIM_ADAMW;
    a.lr = c->lr;
    a.weight_decay = c->weight_decay;
    a.momentum = c->momentum;
    a.dampening = c->dampening;
    a.nesterov = c->nesterov;
    a.first_step = t == 1;
    a.beta1 = c->beta1;
    a.beta2 = c->beta2;
    a.eps = c->eps;
    a.bias_correction1 = 1.0 - pow(c->beta1, (double)t);
    a.bias_correction2 = 1.0 - pow(c->beta2, (double)t);
    return a;
}

void wk_optimizer_free(wk_optimizer *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->n; i++) {
        if (opt->p) wk_tensor_free(opt->p[i]);
        if (opt->m) wk_tensor_free(opt->m[i]);
        if (opt->v) wk_tensor_free(opt->v[i]);
        if (opt->scratch) wk_tensor_free(opt->scratch[i]);
    }
    free(opt->p);
    free(opt->m);
    free(opt->v);
    free(opt->scratch);
    free(opt->pstep);
    free(opt);
}

wk_optimizer *wk_optimizer_new(const wk_optim_config *cfg, wk_tensor *const *params, int n) {
    const char *op = "wk_optimizer_new";
    if (!cfg) {
        wk__err(WK_ERR_ARG, op, "NULL config");
        return NULL;
    }
    if (n < 0 || (n > 0 && !params)) {
        wk__err(WK_ERR_ARG, op, "bad parameter list (n = %d)", n);
        return NULL;
    }
    wk_optim_config c = wk__optim_config_resolve(cfg);
    if (wk__optim_config_check(op, &c) != WK_OK) return NULL;
    for (int i = 0; i < n; i++) {
        const wk_tensor *p = params[i];
        if (!wk__check_in(op, p)) return NULL;
        if (!wk_dtype_is_float(p->dtype)) {
            wk__err(WK_ERR_DTYPE, op, "parameter %d is %s: only float parameters", i, wk_dtype_name(p->dtype));
            return NULL;
        }
        if (!wk_is_leaf(p)) {
            wk__err(WK_ERR_ARG, op, "parameter %d is not a tracked leaf (wk_param_new / wk_requires_grad)", i);
            return NULL;
        }
        if (!wk__layout_is_contiguous(&p->layout) || p->storage->read_only) {
            wk__err(WK_ERR_ARG, op, "parameter %d must be contiguous and writable", i);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (params[j] == p || params[j]->node == p->node) {
                wk__err(WK_ERR_ARG, op, "parameter %d is listed twice (also %d)", i, j);
                return NULL;
            }
    }
    wk_optimizer *o = calloc(1, sizeof *o);
    if (!o) goto oom;
    o->cfg = c;
    o->n = n;
    size_t k = (size_t)(n ? n : 1);
    o->p = calloc(k, sizeof *o->p);
    o->m = calloc(k, sizeof *o->m);
    o->v = calloc(k, sizeof *o->v);
    o->scratch = calloc(k, sizeof *o->scratch);
    o->pstep = calloc(k, sizeof *o->pstep);
    if (!o->p || !o->m || !o->v || !o->scratch || !o->pstep) goto oom;
    /* own headers (wk__alias), not retains: a caller's scope-owned parameter
     * freed with the optimizer would otherwise take its scope's reference */
    for (int i = 0; i < n; i++) {
        if (!(o->p[i] = wk__alias(params[i]))) goto oom;
        wk_keep(o->p[i]);
    }
    return o;
oom:
    wk_optimizer_free(o);
    wk__err(WK_ERR_OOM, op, "cannot allocate an optimizer over %d parameters", n);
    return NULL;
}

wk_status wk_optimizer_set_lr(wk_optimizer *opt, double lr) {
    if (!opt) return wk__err(WK_ERR_ARG, "wk_optimizer_set_lr", "NULL optimizer");
    if (!(lr >= 0.0) || !isfinite(lr)) return wk__err(WK_ERR_ARG, "wk_optimizer_set_lr", "lr %g must be finite and >= 0", lr);
    opt->cfg.lr = lr;
    return WK_OK;
}
double wk_optimizer_lr(const wk_optimizer *opt) { return opt ? opt->cfg.lr : NAN; }
int64_t wk_optimizer_steps(const wk_optimizer *opt) { return opt ? opt->steps : -1; }

static void *data_of(const wk_tensor *t) {
    return t ? (char *)t->storage->buf + t->layout.offset * (int64_t)wk_dtype_size(t->dtype) : NULL;
}

/* A zero-filled contiguous tensor like p, owned by the optimizer. */
static wk_tensor *state_like(const wk_tensor *p) {
    wk_tensor *t = wk_zeros(p->layout.shape, p->layout.rank, p->dtype, p->storage->dev);
    return t ? wk_keep(t) : NULL;
}

static wk_status step_one(wk_optimizer *o, int i, const wk_tensor *g) {
    const char *op = "wk_optimizer_step";
    wk_tensor *p = o->p[i];
    bool hm = wk__optim_has_m(&o->cfg), hv = wk__optim_has_v(&o->cfg);
    if (hm && !o->m[i] && !(o->m[i] = state_like(p))) return wk_last_status();
    if (hv && !o->v[i] && !(o->v[i] = state_like(p))) return wk_last_status();
    if (!wk__layout_is_contiguous(&g->layout)) {
        /* a broadcast or strided gradient (e.g. of a sum): copied into a
         * buffer kept for the next steps, so the step still allocates nothing */
        if (!o->scratch[i] && !(o->scratch[i] = state_like(p))) return wk_last_status();
        if (wk_copy_(o->scratch[i], g) != WK_OK) return wk_last_status();
        g = o->scratch[i];
    }
    wk_optim_args a = wk__optim_args_for(&o->cfg, o->pstep[i] + 1);
    const wk_backend *be = wk__be(p);
    wk_status st;
    if (be->optim_step)
        st = be->optim_step(wk__dev(p), &a, data_of(p), data_of(g), hm ? data_of(o->m[i]) : NULL,
                            hv ? data_of(o->v[i]) : NULL, wk_numel(p), p->dtype);
    else
        st = wk__optim_step_composite(&a, p, g, hm ? o->m[i] : NULL, hv ? o->v[i] : NULL);
    if (st != WK_OK) return wk_last_status() != WK_OK ? wk_last_status() : wk__err(st, op, "optimizer step failed");
    /* an in-place write: graphs that saved p refuse a backward over the new values */
    wk__storage_bump(p->storage);
    o->pstep[i]++;
    return WK_OK;
}

wk_status wk_optimizer_step(wk_optimizer *opt, const wk_grad_store *gs) {
    const char *op = "wk_optimizer_step";
    if (!opt) return wk__err(WK_ERR_ARG, op, "NULL optimizer");
    if (!gs) return wk__err(WK_ERR_ARG, op, "NULL gradient store");
    /* every parameter's count is <= steps: one check guards all increments */
    if (opt->steps >= WK__OPTIM_MAX_STEPS)
        return wk__err(WK_ERR_ARG, op, "the optimizer has taken %lld steps, the most it counts", (long long)opt->steps);
    /* check every gradient first: a bad one leaves every parameter as it was */
    for (int i = 0; i < opt->n; i++) {
        const wk_tensor *p = opt->p[i], *g = wk_grad(gs, p);
        if (!g) continue;
        bool ok = g->dtype == p->dtype && g->storage->dev == p->storage->dev && g->layout.rank == p->layout.rank;
        for (int d = 0; ok && d < p->layout.rank; d++) ok = g->layout.shape[d] == p->layout.shape[d];
        if (!ok) return wk__err(WK_ERR_SHAPE, op, "parameter %d's gradient does not match it (shape, dtype, device)", i);
    }
    wk_status st = WK_OK;
    wk_no_grad_begin();
    for (int i = 0; i < opt->n && st == WK_OK; i++) {
        const wk_tensor *g = wk_grad(gs, opt->p[i]);
        if (g && wk_numel(g) > 0) st = step_one(opt, i, g);
    }
    wk_no_grad_end();
    if (st == WK_OK) opt->steps++;
    return st;
}
