/* Backward rules of the views: each sends the gradient back to the input's
 * shape (reshape back, pad a narrow with zeros, invert a permutation, sum a
 * broadcast). Views that are made from other views (flatten, t, split,
 * chunk, broadcast_left) record through those. */
#include "autograd/record.h"

static wk_status reshape_backward(wk__bw_ctx *c) {
    const wk__edge *e = &c->n->in[0];
    return wk__bw_set(c, 0, wk_reshape(c->g, e->shape, e->rank));
}

wk_tensor *wk__ag_reshape(wk_tensor *r, const wk_tensor *x) {
    if (!r) return NULL;
    return wk__node_attach(wk__node_new(WK__OP_RESHAPE, "wk_reshape", reshape_backward, 1, &x), r);
}

static wk_status identity_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, c->g); }

wk_tensor *wk__ag_identity(wk_tensor *r, const wk_tensor *x, const char *op) {
    if (!r) return NULL;
    return wk__node_attach(wk__node_new(WK__OP_IDENTITY, op, identity_backward, 1, &x), r);
}

static wk_status narrow_backward(wk__bw_ctx *c) {
    const wk__edge *e = &c->n->in[0];
    const wk__args_narrow *a = &c->n->args.narrow;
    int d = a->dim;
    int64_t start = a->start, len = a->len;
    wk_tensor *g = a->select ? wk_unsqueeze(c->g, d) : (wk_tensor *)c->g; /* select: the dim comes back */
    return wk__bw_set(c, 0, wk_pad_with_zeros(g, d, start, e->shape[d] - start - len));
}

wk_tensor *wk__ag_narrow(wk_tensor *r, const wk_tensor *x, int dim, int64_t start, int64_t len) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_NARROW, "wk_narrow", narrow_backward, 1, &x);
    if (n) n->args.narrow = (wk__args_narrow){.dim = dim, .select = false, .start = start, .len = len};
    return wk__node_attach(n, r);
}

wk_tensor *wk__ag_select(wk_tensor *r, const wk_tensor *x, int dim, int64_t index) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_NARROW, "wk_select", narrow_backward, 1, &x);
    if (n) n->args.narrow = (wk__args_narrow){.dim = dim, .select = true, .start = index, .len = 1};
    return wk__node_attach(n, r);
}

static wk_status permute_backward(wk__bw_ctx *c) {
    int r = c->n->in[0].rank, inv[WK_MAX_RANK];
    for (int i = 0; i < r; i++) inv[c->n->args.permute.dims[i]] = i;
    return wk__bw_set(c, 0, wk_permute(c->g, inv, r));
}

wk_tensor *wk__ag_permute(wk_tensor *r, const wk_tensor *x, const int *dims) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_PERMUTE, "wk_permute", permute_backward, 1, &x);
    if (n) /* rank <= WK_MAX_RANK always; the bound is for the compiler */
        for (int i = 0; i < x->layout.rank && i < WK_MAX_RANK; i++) n->args.permute.dims[i] = (uint8_t)dims[i];
    return wk__node_attach(n, r);
}

static wk_status broadcast_backward(wk__bw_ctx *c) { return wk__bw_set_sum(c, 0, c->g); }

wk_tensor *wk__ag_broadcast(wk_tensor *r, const wk_tensor *x) {
    if (!r) return NULL;
    return wk__node_attach(wk__node_new(WK__OP_BROADCAST, "wk_broadcast_as", broadcast_backward, 1, &x), r);
}
