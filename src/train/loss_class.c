/* Classification losses (train.h): cross_entropy on logits and nll_loss on
 * log-probabilities, (N, C) with integer targets (N), as
 * torch.nn.functional's: ignore_index rows add nothing and do not count for
 * the mean; label smoothing (cross_entropy) mixes the uniform distribution
 * in: loss_i = (1 - eps) (-logp[i, y_i]) + eps / C * (-sum_c logp[i, c]),
 * and the mean divides both parts by the rows counted (torch's formula).
 * The forward runs unrecorded; rules_loss.c's rule is attached to the result. */
#include "train/train_internal.h"
#include "wick/train.h"
#include "autograd/record.h"
#include <math.h>
#include <stdlib.h>

static wk_tensor *class_loss(const char *op, const wk_tensor *x, const wk_tensor *t, const wk_class_loss_opts *opts,
                             bool ce) {
    wk_class_loss_opts o = {0};
    if (opts) o = *opts;
    if (!wk__check_in(op, x) || !wk__check_in(op, t)) return NULL;
    if (!wk_dtype_is_float(x->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "the input must be float, got %s", wk_dtype_name(x->dtype));
        return NULL;
    }
    if (wk_dtype_is_float(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "targets must be an integer dtype (class ids), got %s", wk_dtype_name(t->dtype));
        return NULL;
    }
    if (!wk_same_device(wk__dev(x), wk__dev(t))) {
        wk__err(WK_ERR_DEVICE, op, "input and targets are on different devices");
        return NULL;
    }
    if (x->layout.rank != 2 || t->layout.rank != 1 || t->layout.shape[0] != x->layout.shape[0]) {
        char a[160], b[160];
        wk__err(WK_ERR_SHAPE, op, "input must be (N, C) and targets (N); got %s and %s",
                wk__shape_str(x->layout.shape, x->layout.rank, a, sizeof a),
                wk__shape_str(t->layout.shape, t->layout.rank, b, sizeof b));
        return NULL;
    }
    if (o.reduction != WK_REDUCE_MEAN_LOSS && o.reduction != WK_REDUCE_SUM_LOSS && o.reduction != WK_REDUCE_NONE_LOSS) {
        wk__err(WK_ERR_ARG, op, "unknown reduction %d", (int)o.reduction);
        return NULL;
    }
    if (!(o.label_smoothing >= 0.0 && o.label_smoothing < 1.0) || (!ce && o.label_smoothing != 0.0)) {
        wk__err(WK_ERR_ARG, op, ce ? "label_smoothing %g must be in [0, 1)" : "label_smoothing %g: nll_loss has none",
                o.label_smoothing);
        return NULL;
    }
    const int64_t N = x->layout.shape[0], C = x->layout.shape[1];
    if (C < 1) {
        wk__err(WK_ERR_SHAPE, op, "no classes (C = 0)");
        return NULL;
    }
    /* the targets on the host: checked, and turned into safe ids (an
     * ignored row reads class 0, then masked out) and the row mask */
    int64_t *ids = malloc(sizeof *ids * (size_t)(N ? N : 1));
    uint8_t *mask = malloc((size_t)(N ? N : 1));
    wk_tensor *r = NULL;
    if (!ids || !mask) {
        wk__err(WK_ERR_OOM, op, "cannot allocate %lld targets", (long long)N);
        goto out;
    }
    bool opened = wk__scope_open();
    wk__ag_suspend();
    wk_tensor *t64 = opened ? wk_to_dtype(t, WK_I64) : NULL;
    if (!t64 || wk_to_host(t64, ids, sizeof *ids * (size_t)N) != WK_OK) goto body_out;
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
        if (o.has_ignore_index && ids[i] == o.ignore_index) {
            ids[i] = 0;
            mask[i] = 0;
            continue;
        }
        if (ids[i] < 0 || ids[i] >= C) {
            wk__err(WK_ERR_INDEX, op, "target %lld of row %lld is outside [0, %lld)", (long long)ids[i], (long long)i,
                    (long long)C);
            goto body_out;
        }
        mask[i] = 1;
        count++;
    }
    wk_device *dev = wk__dev(x);
    wk_tensor *tid = wk_from_host(ids, sizeof *ids * (size_t)N, (int64_t[]){N, 1}, 2, WK_I64, dev);
    wk_tensor *tmask = wk_from_host(mask, (size_t)N, (int64_t[]){N, 1}, 2, WK_U8, dev);
    double eps = o.label_smoothing;
    double scale = o.reduction == WK_REDUCE_MEAN_LOSS ? 1.0 / (double)count : 1.0; /* 0 rows: inf, the loss NaN as torch's */
    wk_tensor *logp = ce ? wk_log_softmax(x, 1) : (wk_tensor *)x;
    wk_tensor *li = wk_neg(wk_gather(logp, tid, 1)); /* (N, 1) */
    if (ce && eps > 0.0)
        li = wk_add(wk_affine(li, 1.0 - eps, 0.0), wk_affine(wk_sum(logp, (int[]){1}, 1, true), -eps / (double)C, 0.0));
    wk_tensor *zero = wk_zeros(NULL, 0, x->dtype, dev);
    li = wk_reshape(wk_where(tmask, li, zero), (int64_t[]){N}, 1);
    wk_tensor *res = o.reduction == WK_REDUCE_NONE_LOSS ? wk_contiguous(li) : wk_affine(wk_sum_all(li), scale, 0.0);
    if (res) {
        r = wk_keep(res);
        wk__ag_resume();
        if (wk__ag_on1(x))
            r = wk__ag_class_loss(r, x, tid, tmask, ce, eps, scale, o.reduction == WK_REDUCE_NONE_LOSS);
        wk__ag_suspend();
    }
body_out:
    wk__ag_resume();
    wk_scope_end();
out:
    free(ids);
    free(mask);
    return wk__hand_over(r);
}

wk_tensor *wk_cross_entropy(const wk_tensor *logits, const wk_tensor *targets, const wk_class_loss_opts *opts) {
    return class_loss("wk_cross_entropy", logits, targets, opts, true);
}

wk_tensor *wk_nll_loss(const wk_tensor *logp, const wk_tensor *targets, const wk_class_loss_opts *opts) {
    return class_loss("wk_nll_loss", logp, targets, opts, false);
}
