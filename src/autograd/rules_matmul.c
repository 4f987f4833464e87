/* Backward of matmul and broadcast_matmul: dA = dC B^T, dB = A^T dC, each
 * summed over the batch dims broadcasting expanded. Any strides: the
 * transposes are views the GEMM reads as they are. */
#include "autograd/record.h"

static wk_status matmul_backward(wk__bw_ctx *c) {
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) {
        wk_tensor *b = wk__bw_saved(c, 1);
        st = b ? wk__bw_set_sum(c, 0, wk_broadcast_matmul(c->g, wk_t(b))) : wk_last_status();
    }
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *a = wk__bw_saved(c, 0);
        st = a ? wk__bw_set_sum(c, 1, wk_broadcast_matmul(wk_t(a), c->g)) : wk_last_status();
    }
    return st;
}

wk_tensor *wk__ag_matmul(wk_tensor *r, const wk_tensor *a, const wk_tensor *b, const char *op) {
    if (!r) return NULL;
    const wk_tensor *in[2] = {a, b};
    wk__node *n = wk__node_new(WK__OP_MATMUL, op, matmul_backward, 2, in);
    /* each side's gradient reads the other side only */
    if (n) {
        wk__node_save(n, n->in[1].node ? a : NULL);
        wk__node_save(n, n->in[0].node ? b : NULL);
    }
    return wk__node_attach(n, r);
}
