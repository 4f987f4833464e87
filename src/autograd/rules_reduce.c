/* Backward rules of the reductions of the op list. sum and mean spread the
 * gradient back over the reduced dims; max / min (rules_reduce_minmax, a
 * later part of this file) send it to the extremes. */
#include "autograd/record.h"
#include <math.h>

#define NAME_ENTRY(e, n, ...) [e] = "wk_" #n,
static const char *const k_names[] = {WK_REDUCE_OPS(NAME_ENTRY)};

/* g (the reduced shape, keepdim or not) as a view of x's shape: unsqueeze
 * the reduced dims (unless kept) and broadcast. */
wk_tensor *wk__ag_expand_reduced(const wk_tensor *g, const wk__node *n);

wk_tensor *wk__ag_expand_reduced(const wk_tensor *g, const wk__node *n) {
    const wk__edge *e = &n->in[0];
    bool keepdim = n->ai[1] != 0;
    int64_t ks[WK_MAX_RANK];
    for (int d = 0; d < e->rank; d++) ks[d] = (n->ai[2] >> d) & 1 ? 1 : e->shape[d];
    wk_tensor *k = keepdim ? wk__alias(g) : wk_reshape(g, ks, e->rank);
    if (!k) return NULL;
    wk_tensor *b = wk_broadcast_as(k, e->shape, e->rank);
    wk_tensor_free(k);
    return b;
}

static wk_status sum_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, wk__ag_expand_reduced(c->g, c->n)); }

static wk_status mean_backward(wk__bw_ctx *c) {
    double cnt = c->n->ad[0];
    return wk__bw_set(c, 0, wk__ag_expand_reduced(wk_affine(c->g, cnt > 0 ? 1.0 / cnt : NAN, 0.0), c->n));
}

wk_tensor *wk__ag_reduce(wk_tensor *r, const wk_tensor *x, wk_reduce_op op, const bool *mask, bool keepdim) {
    if (!r) return NULL;
    wk__bw_fn fn = NULL;
    switch (op) {
    case WK_REDUCE_SUM: fn = sum_backward; break;
    case WK_REDUCE_MEAN: fn = mean_backward; break;
    case WK_REDUCE_MAX: case WK_REDUCE_MIN: case WK_REDUCE_PROD: /* TODO(autograd helper): rules */
    case WK_REDUCE_ARGMAX: case WK_REDUCE_ARGMIN: case WK_REDUCE_ANY: case WK_REDUCE_ALL:
    case WK_REDUCE_COUNT: return r; /* integer results: never tracked */
    }
    wk__node *n = wk__node_new(k_names[op], fn, 1, &x);
    if (n) {
        n->ai[0] = op;
        n->ai[1] = keepdim;
        int64_t bits = 0;
        double cnt = 1;
        for (int d = 0; d < x->layout.rank; d++)
            if (mask[d]) {
                bits |= (int64_t)1 << d;
                cnt *= (double)x->layout.shape[d];
            }
        n->ai[2] = bits;
        n->ad[0] = cnt;
    }
    return wk__node_attach(n, r);
}
