/* Backward rules of the quantized-weight ops (src/ops/qmatmul.c,
 * quantize.c). Block-quantized values are frozen: no gradient is computed
 * for them; what flows is the gradient of the float values around them. */
#include "autograd/record.h"

/* y = x . w^T: dx = g . W, dW = g^T . x over the flattened leading dims,
 * W the weight's values in g's dtype (dequantized for a block dtype). */
static wk_status qmatmul_backward(wk__bw_ctx *c) {
    const wk_tensor *g = c->g;
    int r = wk_rank(g);
    int64_t n = wk_dim(g, r - 1), m = n ? wk_numel(g) / n : 0;
    wk_tensor *g2 = wk_reshape(g, (int64_t[2]){m, n}, 2);
    wk_status st = g2 ? WK_OK : wk_last_status();
    if (st == WK_OK && wk__bw_need(c, 0)) {
        wk_tensor *w = wk__bw_saved(c, 1);
        wk_tensor *wv = !w ? NULL
                        : wk_dtype_is_quantized(w->dtype) ? wk_dequantize(w, g->dtype)
                                                          : wk_to_dtype(w, g->dtype);
        wk_tensor *dx = wv ? wk_matmul(g2, wv) : NULL;
        st = wk__bw_set(c, 0, dx ? wk_reshape(dx, c->n->in[0].shape, c->n->in[0].rank) : NULL);
    }
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *x = wk__bw_saved(c, 0);
        int64_t k = x ? wk_dim(x, wk_rank(x) - 1) : 0;
        wk_tensor *x2 = x ? wk_reshape(x, (int64_t[2]){m, k}, 2) : NULL;
        wk_tensor *dw = x2 ? wk_matmul(wk_t(g2), x2) : NULL;
        st = wk__bw_set(c, 1, dw ? wk_to_dtype(dw, c->n->in[1].dtype) : NULL);
    }
    return st;
}

wk_tensor *wk__ag_qmatmul(wk_tensor *r, const wk_tensor *x, const wk_tensor *w) {
    if (!r) return NULL;
    /* a block-quantized weight is frozen: no edge to it */
    const wk_tensor *in[2] = {x, wk_dtype_is_quantized(w->dtype) ? NULL : w};
    wk__node *n = wk__node_new(WK__OP_QMATMUL, "wk_qmatmul", qmatmul_backward, 2, in);
    if (n) {
        wk__node_save(n, n->in[1].node ? x : NULL); /* dW reads x */
        wk__node_save(n, n->in[0].node ? w : NULL); /* dx reads w */
    }
    return wk__node_attach(n, r);
}

/* Straight through: dL/dq = dL/d(dequantize(q)) as f32 (a block dtype's
 * gradient has no block form); the node that made q (wk_to_dtype of a
 * float) converts it back to that float's dtype. */
static wk_status dequantize_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, wk_to_dtype(c->g, WK_F32)); }

wk_tensor *wk__ag_dequantize(wk_tensor *r, const wk_tensor *w) {
    if (!r) return NULL;
    /* a block-quantized leaf (a model's weight) is frozen: untracked result */
    if (!w->node || !w->node->backward) return r;
    wk__node *n = wk__node_new(WK__OP_DEQUANTIZE, "wk_dequantize", dequantize_backward, 1, &w);
    if (n) n->in[0].dtype = WK_F32;
    return wk__node_attach(n, r);
}
