/* Elementwise losses (train.h) as composites of recorded public ops: their
 * gradients come from the parts' rules (sub, sqr, abs, where, maximum, ...),
 * so they need no rule of their own. torch.nn.functional's formulas. */
#include "train/train_internal.h"
#include "wick/train.h"
#include <math.h>

/* Shared argument checks: float pred, target of the same shape, dtype and device. */
static bool check_pair(const char *op, const wk_tensor *a, const wk_tensor *b, wk_reduction red) {
    if (!wk__check_in(op, a) || !wk__check_in(op, b) || !wk__check_same(op, a, b)) return false;
    if (!wk_dtype_is_float(a->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "float inputs only, got %s", wk_dtype_name(a->dtype));
        return false;
    }
    bool ok = a->layout.rank == b->layout.rank;
    for (int d = 0; ok && d < a->layout.rank; d++) ok = a->layout.shape[d] == b->layout.shape[d];
    if (!ok) {
        char x[160], y[160];
        wk__err(WK_ERR_SHAPE, op, "input %s and target %s must have one shape",
                wk__shape_str(a->layout.shape, a->layout.rank, x, sizeof x),
                wk__shape_str(b->layout.shape, b->layout.rank, y, sizeof y));
        return false;
    }
    if (red != WK_REDUCE_MEAN_LOSS && red != WK_REDUCE_SUM_LOSS && red != WK_REDUCE_NONE_LOSS) {
        wk__err(WK_ERR_ARG, op, "unknown reduction %d", (int)red);
        return false;
    }
    return true;
}

/* The per-element losses l (a scope-owned temporary) reduced; the result
 * leaves the scope the caller opened. */
static wk_tensor *reduce_out(wk_tensor *l, wk_reduction red) {
    wk_tensor *r = red == WK_REDUCE_MEAN_LOSS ? wk_mean_all(l) : red == WK_REDUCE_SUM_LOSS ? wk_sum_all(l)
                                                                                          : wk_contiguous(l);
    return r ? wk_keep(r) : NULL;
}

wk_tensor *wk_mse_loss(const wk_tensor *pred, const wk_tensor *target, wk_reduction red) {
    if (!check_pair("wk_mse_loss", pred, target, red)) return NULL;
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    wk_tensor *r = reduce_out(wk_sqr(wk_sub(pred, target)), red);
    wk_scope_end();
    return wk__hand_over(r);
}

wk_tensor *wk_huber_loss(const wk_tensor *pred, const wk_tensor *target, double delta, wk_reduction red) {
    const char *op = "wk_huber_loss";
    if (!check_pair(op, pred, target, red)) return NULL;
    if (!(delta > 0.0) || !isfinite(delta)) {
        wk__err(WK_ERR_ARG, op, "delta %g must be finite and > 0", delta);
        return NULL;
    }
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    /* |d| < delta ? 0.5 d^2 : delta (|d| - delta / 2); where() sends each
     * element's gradient to the branch it took: d, or delta * sign(d) */
    wk_tensor *d = wk_sub(pred, target);
    wk_tensor *a = wk_abs(d);
    wk_tensor *quad = wk_affine(wk_sqr(d), 0.5, 0.0);
    wk_tensor *lin = wk_affine(a, delta, -0.5 * delta * delta);
    wk_tensor *r = reduce_out(wk_where(wk_cmp_scalar(a, delta, WK_LT), quad, lin), red);
    wk_scope_end();
    return wk__hand_over(r);
}

wk_tensor *wk_bce_with_logits(const wk_tensor *logits, const wk_tensor *target, wk_reduction red) {
    if (!check_pair("wk_bce_with_logits", logits, target, red)) return NULL;
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    /* max(x, 0) - x t + log(1 + exp(-|x|)): exp never overflows, and the
     * value is exact for large |x|. maximum() splits a tie's gradient, so
     * at x = 0 the gradient is 1/2 - t = sigmoid(0) - t, as it should be
     * (relu's would give -t there). */
    wk_tensor *zero = wk_zeros(NULL, 0, logits->dtype, wk__dev(logits));
    wk_tensor *softplus = wk_log(wk_affine(wk_exp(wk_neg(wk_abs(logits))), 1.0, 1.0));
    wk_tensor *l = wk_add(wk_sub(wk_maximum(logits, zero), wk_mul(logits, target)), softplus);
    wk_tensor *r = reduce_out(l, red);
    wk_scope_end();
    return wk__hand_over(r);
}
