/* Backward rules of the reductions of the op list. sum and mean spread the
 * gradient back over the reduced dims; max / min (rules_reduce_minmax, a
 * later part of this file) send it to the extremes. */
#include "autograd/record.h"
#include <math.h>

#define NAME_ENTRY(e, n, ...) [e] = "wk_" #n,
static const char *const k_names[] = {WK_REDUCE_OPS(NAME_ENTRY)};

/* The reduced dims a reduction's node records: each reduction family's
 * args keep them as .red (declared in record.h). */
const wk__reduced *wk__ag_reduced_of(const wk__node *n) {
    switch (n->op) {
    case WK__OP_NORM: return &n->args.norm.red;
    case WK__OP_LOG_SUM_EXP: return &n->args.lse.red;
    case WK__OP_VAR: return &n->args.var.red;
    default: return &n->args.reduce.red; /* WK__OP_REDUCE */
    }
}

/* g (the reduced shape, keepdim or not) as a view of x's shape: unsqueeze
 * the reduced dims (unless kept) and broadcast. (Declared in record.h.) */
wk_tensor *wk__ag_expand_reduced(const wk_tensor *g, const wk__node *n) {
    const wk__edge *e = &n->in[0];
    uint32_t bits = wk__ag_reduced_of(n)->dims;
    int64_t ks[WK_MAX_RANK];
    for (int d = 0; d < e->rank; d++) ks[d] = (bits >> d) & 1 ? 1 : e->shape[d];
    /* a reshape even when the dims were kept (a view): retaining a
     * scope-owned g and then freeing it would take the scope's reference and
     * leak the retain's */
    wk_tensor *k = wk_reshape(g, ks, e->rank);
    if (!k) return NULL;
    wk_tensor *b = wk_broadcast_as(k, e->shape, e->rank);
    wk_tensor_free(k);
    return b;
}

static wk_status sum_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, wk__ag_expand_reduced(c->g, c->n)); }

static wk_status mean_backward(wk__bw_ctx *c) {
    double cnt = c->n->args.reduce.count;
    return wk__bw_set(c, 0, wk__ag_expand_reduced(wk_affine(c->g, cnt > 0 ? 1.0 / cnt : NAN, 0.0), c->n));
}

/* ---- max / min / prod (grad_elem) ---- */

/* g (the reduced shape) with the reduced dims back as size 1 (keepdim
 * form): g itself or a scope-owned view; the rule never frees it (a
 * retain/free pair would take a scope-owned g from its scope). */
static wk_tensor *keep_form(const wk_tensor *g, const wk__node *n) {
    const wk__reduced *rd = &n->args.reduce.red;
    if (rd->keepdim) return (wk_tensor *)g;
    const wk__edge *e = &n->in[0];
    int64_t ks[WK_MAX_RANK];
    for (int d = 0; d < e->rank; d++) ks[d] = (rd->dims >> d) & 1 ? 1 : e->shape[d];
    return wk_reshape(g, ks, e->rank);
}

/* The reduced dims of node n as a dims list; their count. */
static int reduced_dims(const wk__node *n, int *dims) {
    int nd = 0;
    uint32_t bits = n->args.reduce.red.dims;
    for (int d = 0; d < n->in[0].rank; d++)
        if ((bits >> d) & 1) dims[nd++] = d;
    return nd;
}

/* Float mask (1 where cmp holds) in x's dtype: a constant of the graph. */
static wk_tensor *fmask(const wk_tensor *a, const wk_tensor *b, wk_cmp_op op) {
    wk_tensor *m = wk_cmp(a, b, op);
    return m ? wk_to_dtype(m, a->dtype) : NULL;
}

/* amax / amin: the gradient is split evenly among the elements equal to the
 * extreme (PyTorch's amax rule, so ties do not pick an arbitrary winner). */
static wk_status minmax_backward(wk__bw_ctx *c) {
    wk_tensor *x = wk__bw_saved(c, 0), *y = wk__bw_saved(c, 1);
    if (!x || !y) return wk_last_status();
    int dims[WK_MAX_RANK], nd = reduced_dims(c->n, dims);
    wk_tensor *yk = keep_form(y, c->n), *gk = keep_form(c->g, c->n);
    wk_tensor *m = fmask(x, yk, WK_EQ);
    wk_tensor *cnt = m ? wk_sum(m, dims, nd, true) : NULL;
    wk_tensor *d = wk_mul(m, wk_div(gk, cnt));
    return wk__bw_set(c, 0, d); /* m has x's shape, so d has it too */
}

/* prod, exact with zeros and without dividing by one: with P the product of
 * the slice's nonzero elements and z the number of its zeros,
 *   z == 0: dy/dx_i = P / x_i
 *   z == 1: dy/dx_i = P at the zero, 0 elsewhere
 *   z >= 2: 0
 * The "0 elsewhere" of z == 1 is written as P * x_zero / x_i (x_zero the
 * zero itself, through a where), so its derivative along x_zero is right
 * and second order is exact for slices with at most one zero. A slice
 * without zeros anywhere takes the cheap y / x (what PyTorch does). */
static wk_status prod_backward(wk__bw_ctx *c) {
    wk_tensor *x = wk__bw_saved(c, 0);
    if (!x) return wk_last_status();
    int dims[WK_MAX_RANK], nd = reduced_dims(c->n, dims);
    wk_tensor *gk = keep_form(c->g, c->n);
    wk_tensor *zero = wk_cmp_scalar(x, 0.0, WK_EQ);
    int all[WK_MAX_RANK];
    for (int d = 0; d < x->layout.rank; d++) all[d] = d;
    wk_tensor *anyz = zero ? wk_any(zero, all, x->layout.rank, false) : NULL;
    double has_zero = 0;
    if (!anyz || wk_item(anyz, &has_zero) != WK_OK) return wk_last_status();
    if (has_zero == 0) {
        wk_tensor *y = wk__bw_saved(c, 1);
        if (!y) return wk_last_status();
        wk_tensor *yk = keep_form(y, c->n);
        return wk__bw_set(c, 0, wk_mul(wk_div(yk, x), gk));
    }
    wk_tensor *one = wk_ones(NULL, 0, x->dtype, wk__dev(x)), *nil = wk_zeros(NULL, 0, x->dtype, wk__dev(x));
    wk_tensor *xnz = wk_where(zero, one, x);                   /* x with its zeros as 1: a safe divisor */
    wk_tensor *p = wk_prod(xnz, dims, nd, true);                /* P */
    wk_tensor *cnt = wk_sum(wk_to_dtype(zero, WK_F32), dims, nd, true);
    wk_tensor *xz = wk_sum(wk_where(zero, x, nil), dims, nd, true); /* the zero (value 0; slope 1) */
    wk_tensor *fac = wk_where(wk_cmp_scalar(cnt, 0.0, WK_EQ), one, xz);
    wk_tensor *single = wk_to_dtype(wk_cmp_scalar(cnt, 1.0, WK_EQ), x->dtype);
    wk_tensor *d = wk_where(zero, wk_mul(p, single), wk_div(wk_mul(p, fac), xnz));
    return wk__bw_set(c, 0, wk_mul(d, gk));
}

wk_tensor *wk__ag_reduce(wk_tensor *r, const wk_tensor *x, wk_reduce_op op, const bool *mask, bool keepdim) {
    if (!r) return NULL;
    wk__bw_fn fn = NULL;
    switch (op) {
    case WK_REDUCE_SUM: fn = sum_backward; break;
    case WK_REDUCE_MEAN: fn = mean_backward; break;
    case WK_REDUCE_MAX: case WK_REDUCE_MIN: fn = minmax_backward; break;
    case WK_REDUCE_PROD: fn = prod_backward; break;
    case WK_REDUCE_ARGMAX: case WK_REDUCE_ARGMIN: case WK_REDUCE_ANY: case WK_REDUCE_ALL:
    case WK_REDUCE_COUNT: return r; /* integer results: never tracked */
    }
    wk__node *n = wk__node_new(WK__OP_REDUCE, k_names[op], fn, 1, &x);
    if (n) {
        uint32_t bits = 0;
        double cnt = 1;
        for (int d = 0; d < x->layout.rank; d++)
            if (mask[d]) {
                bits |= (uint32_t)1 << d;
                cnt *= (double)x->layout.shape[d];
            }
        n->args.reduce = (wk__args_reduce){.red = {.dims = bits, .keepdim = keepdim}, .op = op, .count = cnt};
        /* max / min read x and y; prod reads x (and y on its zero-free path) */
        if (op == WK_REDUCE_MAX || op == WK_REDUCE_MIN || op == WK_REDUCE_PROD) {
            wk__node_save(n, x);
            wk__node_save_out(n, r);
        }
    }
    return wk__node_attach(n, r);
}
