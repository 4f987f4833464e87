/* Custom ops (include/wick/custom_op.h) record like built-in ones; their
 * rule is the op's stored backward callback. The node holds a reference to
 * the op (dropped when the node is freed), so wk_custom_op_free before the
 * backward is safe; the callback's user data is the user's to keep alive.
 * An op without a callback still records, so the failure comes at
 * backward, naming the op, rather than a silently missing gradient. A
 * gradient of the wrong shape, dtype or device is the callback's error,
 * reported as such (not as a wick bug). */
#include "autograd/record.h"
#include "wick/custom_op.h"

/* The callback's gradient for input i against what the input was. */
static wk_status check_grad(const wk__bw_ctx *c, const wk_custom_op *op, int i, const wk_tensor *g) {
    const wk__edge *e = &c->n->in[i];
    const char *fn = "wk_custom_op_backward";
    char a[160], b[160];
    bool same = g->layout.rank == e->rank;
    for (int d = 0; same && d < e->rank; d++) same = g->layout.shape[d] == e->shape[d];
    if (!same)
        return wk__err(WK_ERR_SHAPE, fn,
                       "op '%s': the backward callback returned a gradient of shape %s for input %d, whose shape is %s",
                       wk_custom_op_name(op), wk__shape_str(g->layout.shape, g->layout.rank, a, sizeof a), i,
                       wk__shape_str(e->shape, e->rank, b, sizeof b));
    if (g->dtype != e->dtype)
        return wk__err(WK_ERR_DTYPE, fn,
                       "op '%s': the backward callback returned a %s gradient for input %d, whose dtype is %s",
                       wk_custom_op_name(op), wk_dtype_name(g->dtype), i, wk_dtype_name(e->dtype));
    if (g->storage->dev != e->dev)
        return wk__err(WK_ERR_DEVICE, fn,
                       "op '%s': the backward callback returned input %d's gradient on %s, the input is on %s",
                       wk_custom_op_name(op), i, wk_device_name(g->storage->dev), wk_device_name(e->dev));
    return WK_OK;
}

static void custom_node_free(wk__node *n) { wk__custom_op_release(n->args.custom.op); }

static wk_status custom_backward(wk__bw_ctx *c) {
    const wk_custom_op *op = c->n->args.custom.op;
    int nin = c->n->nin;
    const wk_tensor *in[3];
    for (int i = 0; i < nin; i++)
        if (!(in[i] = wk__bw_saved(c, i))) return wk_last_status();
    wk_tensor *out = wk__bw_saved(c, nin);
    if (!out) return wk_last_status();
    wk_tensor *gi[3] = {NULL, NULL, NULL};
    wk_status st = wk_custom_op_backward(op, in, out, c->g, gi);
    for (int i = 0; i < nin; i++) {
        if (st == WK_OK && gi[i] && wk__bw_need(c, i)) {
            st = check_grad(c, op, i, gi[i]);
            if (st == WK_OK) st = wk__bw_set(c, i, gi[i]);
        }
        wk_tensor_free(gi[i]);
    }
    return st;
}

wk_tensor *wk__ag_custom(wk_tensor *r, const wk_custom_op *op, int nin, const wk_tensor *const *in) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_CUSTOM, wk_custom_op_name(op), custom_backward, nin, in);
    if (n) {
        /* the node's own reference: the op lives as long as the graph */
        wk__custom_op_retain(op);
        n->args.custom.op = op;
        n->on_free = custom_node_free;
        for (int i = 0; i < nin; i++) wk__node_save(n, in[i]);
        wk__node_save_out(n, r);
    }
    return wk__node_attach(n, r);
}
