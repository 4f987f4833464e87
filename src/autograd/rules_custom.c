/* Custom ops (include/wick/custom_op.h) record like built-in ones; their
 * rule is the op's stored backward callback. The op must outlive the
 * graphs it recorded in (the node keeps a pointer, as it keeps the
 * callback's user data). An op without a callback still records, so the
 * failure comes at backward, naming the op, rather than a silently
 * missing gradient. */
#include "autograd/record.h"
#include "wick/custom_op.h"

static wk_status custom_backward(wk__bw_ctx *c) {
    const wk_custom_op *op = (const wk_custom_op *)(intptr_t)c->n->ai[0];
    int nin = c->n->nin;
    const wk_tensor *in[3];
    for (int i = 0; i < nin; i++)
        if (!(in[i] = wk__bw_saved(c, i))) return wk_last_status();
    wk_tensor *out = wk__bw_saved(c, nin);
    if (!out) return wk_last_status();
    wk_tensor *gi[3] = {NULL, NULL, NULL};
    wk_status st = wk_custom_op_backward(op, in, out, c->g, gi);
    for (int i = 0; i < nin; i++) {
        if (st == WK_OK && gi[i] && wk__bw_need(c, i)) st = wk__bw_set(c, i, gi[i]);
        wk_tensor_free(gi[i]);
    }
    return st;
}

wk_tensor *wk__ag_custom(wk_tensor *r, const wk_custom_op *op, int nin, const wk_tensor *const *in) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(wk_custom_op_name(op), custom_backward, nin, in);
    if (n) {
        n->ai[0] = (int64_t)(intptr_t)op;
        for (int i = 0; i < nin; i++) wk__node_save(n, in[i]);
        wk__node_save_out(n, r);
    }
    return wk__node_attach(n, r);
}
