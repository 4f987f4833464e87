/* Backward rules of the linalg composites that do not record through their
 * parts: dot and mv (their bodies re-view vectors as matrices with internal
 * views, which would cut the graph), the vector norm (through its parts the
 * gradient at a zero norm is 0 * inf = NaN; PyTorch gives 0) and
 * log_sum_exp (one exp instead of the max / where / shift chain, and the
 * graph keeps only x and the result), and var / std (x instead of the f64
 * deviations). tril / triu and round_to record through their parts (where,
 * affine, round: tests/test_grad_elem.c checks them). */
#include "autograd/record.h"
#include <math.h>

/* ---- dot, mv ---- */

static wk_status dot_backward(wk__bw_ctx *c) {
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) {
        wk_tensor *b = wk__bw_saved(c, 1);
        st = b ? wk__bw_set(c, 0, wk_mul(b, c->g)) : wk_last_status();
    }
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *a = wk__bw_saved(c, 0);
        st = a ? wk__bw_set(c, 1, wk_mul(a, c->g)) : wk_last_status();
    }
    return st;
}

wk_tensor *wk__ag_dot(wk_tensor *r, const wk_tensor *a, const wk_tensor *b) {
    if (!r) return NULL;
    const wk_tensor *in[2] = {a, b};
    wk__node *n = wk__node_new(WK__OP_DOT, "wk_dot", dot_backward, 2, in);
    if (n) { /* each side's gradient reads the other side only */
        wk__node_save(n, n->in[1].node ? a : NULL);
        wk__node_save(n, n->in[0].node ? b : NULL);
    }
    return wk__node_attach(n, r);
}

/* y = m v: dm = g v^T (an outer product by broadcasting), dv = m^T g. */
static wk_status mv_backward(wk__bw_ctx *c) {
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) {
        wk_tensor *v = wk__bw_saved(c, 1);
        st = v ? wk__bw_set(c, 0, wk_mul(wk_unsqueeze(c->g, 1), wk_unsqueeze(v, 0))) : wk_last_status();
    }
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *m = wk__bw_saved(c, 0);
        st = m ? wk__bw_set(c, 1, wk_mv(wk_t(m), c->g)) : wk_last_status();
    }
    return st;
}

wk_tensor *wk__ag_mv(wk_tensor *r, const wk_tensor *m, const wk_tensor *v) {
    if (!r) return NULL;
    const wk_tensor *in[2] = {m, v};
    wk__node *n = wk__node_new(WK__OP_MV, "wk_mv", mv_backward, 2, in);
    if (n) {
        wk__node_save(n, n->in[1].node ? m : NULL);
        wk__node_save(n, n->in[0].node ? v : NULL);
    }
    return wk__node_attach(n, r);
}

/* ---- reductions with their own rule: each family's args keep the reduced
 * dims as .red (wk__reduced), as rules_reduce.c's nodes do, so
 * wk__ag_expand_reduced serves here too ---- */

static wk__reduced reduced(const wk_tensor *x, const bool *mask, bool keepdim) {
    uint32_t bits = 0;
    for (int d = 0; d < x->layout.rank; d++)
        if (mask[d]) bits |= (uint32_t)1 << d;
    return (wk__reduced){.dims = bits, .keepdim = keepdim};
}

/* narrow floats are computed in f32, as the forward ops do */
static wk_dtype acc_of(wk_dtype dt) { return dt == WK_F64 ? WK_F64 : WK_F32; }
static wk_tensor *as(const wk_tensor *t, wk_dtype dt) {
    return t && t->dtype != dt ? wk_to_dtype(t, dt) : (wk_tensor *)t;
}

/* torch.linalg.vector_norm's backward (r the norm, broadcast to x):
 *   p = 0: 0            p = 1: sign(x) g          p = +-inf: amax's even split
 *   p = 2: x g / r      other p: sign(x) |x|^(p-1) g / r^(p-1)
 * with 0 where r == 0 (p >= 1) or where x == 0 (p < 1, as g r^(1-p)). */
static wk_status norm_backward(wk__bw_ctx *c) {
    const wk__edge *e = &c->n->in[0];
    double p = c->n->args.norm.p;
    if (p == 0) return wk__bw_set(c, 0, wk_zeros(e->shape, e->rank, e->dtype, e->dev));
    wk_tensor *x0 = wk__bw_saved(c, 0);
    if (!x0) return wk_last_status();
    wk_dtype acc = acc_of(e->dtype);
    wk_tensor *x = as(x0, acc), *g = as(wk__ag_expand_reduced(c->g, c->n), acc);
    if (p == 1) return wk__bw_set(c, 0, as(wk_mul(wk_sign(x), g), e->dtype));
    wk_tensor *r0 = wk__bw_saved(c, 1);
    if (!r0) return wk_last_status();
    wk_tensor *r = as(wk__ag_expand_reduced(r0, c->n), acc);
    wk_tensor *nil = wk_zeros(NULL, 0, acc, e->dev);
    wk_tensor *d;
    if (isinf(p)) {
        int dims[WK_MAX_RANK], nd = 0;
        for (int i = 0; i < e->rank; i++)
            if ((c->n->args.norm.red.dims >> i) & 1) dims[nd++] = i;
        wk_tensor *m = wk_cmp(wk_abs(x), r, WK_EQ);
        wk_tensor *mf = m ? wk_to_dtype(m, acc) : NULL;
        wk_tensor *cnt = mf ? wk_sum(mf, dims, nd, true) : NULL;
        d = wk_mul(wk_mul(wk_sign(x), mf), wk_div(g, cnt));
    } else if (p < 1) {
        wk_tensor *xs = wk_where(wk_cmp_scalar(x, 0.0, WK_EQ), nil,
                                 wk_mul(wk_sign(x), wk_powf(wk_abs(x), p - 1.0)));
        d = wk_mul(xs, wk_mul(g, wk_powf(r, 1.0 - p)));
    } else {
        wk_tensor *xs = p == 2 ? x : p < 2 ? wk_mul(wk_sign(x), wk_powf(wk_abs(x), p - 1.0))
                                           : wk_mul(x, wk_powf(wk_abs(x), p - 2.0));
        wk_tensor *den = p == 2 ? r : wk_powf(r, p - 1.0);
        wk_tensor *scale = wk_where(wk_cmp_scalar(r, 0.0, WK_EQ), nil, wk_div(g, den));
        d = wk_mul(xs, scale);
    }
    return wk__bw_set(c, 0, as(d, e->dtype));
}

wk_tensor *wk__ag_norm(wk_tensor *r, const wk_tensor *x, double p, const bool *mask, bool keepdim) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_NORM, "wk_norm", norm_backward, 1, &x);
    if (n) {
        n->args.norm = (wk__args_norm){.red = reduced(x, mask, keepdim), .p = p};
        if (p != 0) {
            wk__node_save(n, x);
            if (p != 1) wk__node_save_out(n, r);
        }
    }
    return wk__node_attach(n, r);
}

/* d lse / dx = exp(x - lse): the softmax of the slice. */
static wk_status lse_backward(wk__bw_ctx *c) {
    const wk__edge *e = &c->n->in[0];
    wk_tensor *x0 = wk__bw_saved(c, 0), *r0 = wk__bw_saved(c, 1);
    if (!x0 || !r0) return wk_last_status();
    wk_dtype acc = acc_of(e->dtype);
    wk_tensor *x = as(x0, acc), *g = as(wk__ag_expand_reduced(c->g, c->n), acc);
    wk_tensor *r = as(wk__ag_expand_reduced(r0, c->n), acc);
    return wk__bw_set(c, 0, as(wk_mul(g, wk_exp(wk_sub(x, r))), e->dtype));
}

wk_tensor *wk__ag_log_sum_exp(wk_tensor *r, const wk_tensor *x, const bool *mask, bool keepdim) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_LOG_SUM_EXP, "wk_log_sum_exp", lse_backward, 1, &x);
    if (n) n->args.lse.red = reduced(x, mask, keepdim);
    wk__node_save(n, x);
    wk__node_save_out(n, r);
    return wk__node_attach(n, r);
}

/* var / std: dvar/dx = 2 (x - mean) / den; dstd/dx = (x - mean) / (den std)
 * (den = n - correction; no degrees of freedom: NaN, as torch). In f64,
 * as the forward computes. Through its parts the graph would keep the f64
 * deviations (twice the input's bytes for f32); this rule keeps x (and
 * std's result). */
static wk_status var_backward(wk__bw_ctx *c) {
    const wk__edge *e = &c->n->in[0];
    const wk__args_var *a = &c->n->args.var;
    double den = a->den;
    bool take_sqrt = a->take_sqrt;
    wk_tensor *x0 = wk__bw_saved(c, 0);
    if (!x0) return wk_last_status();
    int dims[WK_MAX_RANK], nd = 0;
    for (int i = 0; i < e->rank; i++)
        if ((a->red.dims >> i) & 1) dims[nd++] = i;
    wk_tensor *x = as(x0, WK_F64), *g = as(wk__ag_expand_reduced(c->g, c->n), WK_F64);
    wk_tensor *dev = wk_sub(x, wk_mean(x, dims, nd, true));
    wk_tensor *d;
    if (take_sqrt) {
        wk_tensor *r0 = wk__bw_saved(c, 1);
        if (!r0) return wk_last_status();
        wk_tensor *s = as(wk__ag_expand_reduced(r0, c->n), WK_F64);
        d = wk_div(wk_mul(g, dev), wk_affine(s, den > 0 ? den : NAN, 0.0));
    } else {
        d = wk_mul(g, wk_affine(dev, den > 0 ? 2.0 / den : NAN, 0.0));
    }
    return wk__bw_set(c, 0, as(d, e->dtype));
}

wk_tensor *wk__ag_var(wk_tensor *r, const wk_tensor *x, const bool *mask, bool keepdim, double den, bool take_sqrt) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_VAR, take_sqrt ? "wk_std" : "wk_var", var_backward, 1, &x);
    if (n) n->args.var = (wk__args_var){.red = reduced(x, mask, keepdim), .take_sqrt = take_sqrt, .den = den};
    wk__node_save(n, x);
    if (take_sqrt) wk__node_save_out(n, r);
    return wk__node_attach(n, r);
}
