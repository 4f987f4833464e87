/* Backward of sort / topk values: each value's gradient goes back to the
 * element it came from (the indices the op found), zeros elsewhere. The
 * indices themselves are integers and never tracked; argsort records
 * nothing. */
#include "autograd/record.h"

static wk_status order_backward(wk__bw_ctx *c) {
    const wk__edge *e = &c->n->in[0];
    if (e->rank == 0) return wk__bw_set(c, 0, c->g); /* one element: the value is x */
    wk_tensor *z = wk_zeros(e->shape, e->rank, e->dtype, e->dev);
    if (!z || wk_numel(c->g) == 0) return wk__bw_set(c, 0, z);
    wk_tensor *ix = wk__bw_saved(c, 0);
    if (!ix) return wk_last_status();
    /* the indices of one line are distinct: add and set agree; add is the
     * adjoint of gather, so the rule stays linear in g for create_graph */
    return wk__bw_set(c, 0, wk_scatter_add(z, ix, c->g, c->n->args.order.dim));
}

wk_tensor *wk__ag_order(wk_tensor *values, const wk_tensor *x, const wk_tensor *ix, int dim, const char *op) {
    if (!values) return NULL;
    wk__node *n = wk__node_new(WK__OP_ORDER, op, order_backward, 1, &x);
    if (n) n->args.order.dim = dim;
    wk__node_save(n, ix);
    return wk__node_attach(n, values);
}
