/* The optimizer step as public ops: what a backend without an optim_step
 * entry runs. Each line is torch.optim's single-tensor formula; temporaries
 * come and go in a scope (this path may allocate; the CPU's fused entry,
 * src/cpu/cpu_optim.c, does not). */
#include "train/train_internal.h"
#include <math.h>

static wk_status sgd(const wk_optim_args *a, wk_tensor *p, const wk_tensor *g, wk_tensor *m) {
    const wk_tensor *d = g;
    if (a->weight_decay != 0.0) d = wk_add(g, wk_affine(p, a->weight_decay, 0.0));
    if (a->momentum != 0.0) {
        if (!m) return wk__err(WK_ERR_INTERNAL, "wk_optimizer_step", "SGD momentum without its buffer");
        wk_status st = a->first_step ? wk_copy_(m, d)
                                     : wk_copy_(m, wk_add(wk_affine(m, a->momentum, 0.0),
                                                          wk_affine(d, 1.0 - a->dampening, 0.0)));
        if (st != WK_OK) return st;
        d = a->nesterov ? wk_add(d, wk_affine(m, a->momentum, 0.0)) : m;
    }
    return wk_copy_(p, wk_add(p, wk_affine(d, -a->lr, 0.0)));
}

static wk_status adam(const wk_optim_args *a, wk_tensor *p, const wk_tensor *g, wk_tensor *m, wk_tensor *v) {
    if (!m || !v) return wk__err(WK_ERR_INTERNAL, "wk_optimizer_step", "Adam without its moment buffers");
    wk_status st = WK_OK;
    if (a->kind == WK_OPTIM_ADAMW && a->weight_decay != 0.0)
        st = wk_copy_(p, wk_affine(p, 1.0 - a->lr * a->weight_decay, 0.0));
    else if (a->kind == WK_OPTIM_ADAM && a->weight_decay != 0.0)
        g = wk_add(g, wk_affine(p, a->weight_decay, 0.0));
    if (st == WK_OK) st = wk_copy_(m, wk_add(m, wk_affine(wk_sub(g, m), 1.0 - a->beta1, 0.0)));
    if (st == WK_OK) st = wk_copy_(v, wk_add(wk_affine(v, a->beta2, 0.0), wk_affine(wk_sqr(g), 1.0 - a->beta2, 0.0)));
    if (st != WK_OK) return st;
    wk_tensor *denom = wk_affine(wk_sqrt(v), 1.0 / sqrt(a->bias_correction2), a->eps);
    return wk_copy_(p, wk_sub(p, wk_affine(wk_div(m, denom), a->lr / a->bias_correction1, 0.0)));
}

wk_status wk__optim_step_composite(const wk_optim_args *a, wk_tensor *p, const wk_tensor *g, wk_tensor *m,
                                   wk_tensor *v) {
    wk_no_grad_begin();
    wk_status st = WK_ERR_ARG;
    if (!wk__scope_open()) st = wk_last_status();
    else switch (a->kind) {
    case WK_OPTIM_SGD: st = sgd(a, p, g, m); break;
    case WK_OPTIM_ADAM:
    case WK_OPTIM_ADAMW: st = adam(a, p, g, m, v); break;
    }
    wk_scope_end();
    wk_no_grad_end();
    return st;
}
