/* Backward rules of cross_entropy and nll_loss (src/train/loss_class.c).
 * One rule per loss, so the gradient needs no rule of the ops the forward
 * used and the graph keeps only the logits, the (N, 1) class ids and the
 * (N, 1) mask of counted rows, never the (N, C) log-probabilities:
 *   cross_entropy: dx = (softmax(x) - q) * g * scale, q = (1 - eps) onehot + eps / C
 *   nll_loss:      dlogp = -onehot * g * scale
 * rows the mask leaves out (ignore_index) get 0, and scale is 1 / (rows
 * counted) for the mean, 1 otherwise. Written with public ops: under
 * create_graph the gradient is itself differentiable. */
#include "autograd/record.h"
#include "train/train_internal.h"
#include "wick/nn.h"

static wk_status class_loss_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    const wk__args_class_loss *a = &wk__train_args_of(c->n)->class_loss;
    bool ce = a->ce, none = a->none;
    double eps = a->eps, scale = a->scale;
    wk_tensor *ids = wk__bw_saved(c, 1), *mask = wk__bw_saved(c, 2);
    wk_tensor *x = ce ? wk__bw_saved(c, 0) : NULL;
    if (!ids || !mask || (ce && !x)) return wk_last_status();
    const wk__edge *e = &n->in[0];
    int64_t C = e->shape[1];
    /* onehot (N, C): class index == target id */
    wk_tensor *cls = wk_reshape(wk_arange(0.0, (double)C, 1.0, WK_I64, e->dev), (int64_t[]){1, C}, 2);
    wk_tensor *onehot = wk_to_dtype(wk_cmp(cls, ids, WK_EQ), e->dtype);
    wk_tensor *wg = wk_affine(c->g, scale, 0.0);
    if (none) wg = wk_reshape(wg, (int64_t[]){e->shape[0], 1}, 2);
    wk_tensor *d = ce ? wk_sub(wk_softmax(x, 1), wk_affine(onehot, 1.0 - eps, eps / (double)C)) : wk_neg(onehot);
    wk_tensor *zero = wk_zeros(NULL, 0, e->dtype, e->dev);
    return wk__bw_set(c, 0, wk_where(mask, wk_mul(d, wg), zero));
}

wk_tensor *wk__ag_class_loss(wk_tensor *r, const wk_tensor *x, const wk_tensor *ids, const wk_tensor *mask, bool ce,
                             double eps, double scale, bool none) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_CLASS_LOSS, ce ? "wk_cross_entropy" : "wk_nll_loss", class_loss_backward, 1, &x);
    if (n) {
        wk__train_args_of(n)->class_loss = (wk__args_class_loss){.ce = ce, .none = none, .eps = eps, .scale = scale};
        wk__node_save(n, ce ? x : NULL); /* nll's gradient does not read its input */
        wk__node_save(n, ids);
        wk__node_save(n, mask);
    }
    return wk__node_attach(n, r);
}
