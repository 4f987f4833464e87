/* Gradient clipping by the joint L2 norm (torch.nn.utils.clip_grad_norm_,
 * norm_type 2): total = ||(||g_1||, ..., ||g_n||)||, every gradient scaled
 * by min(1, max_norm / (total + 1e-6)). */
#include "train/train_internal.h"
#include "wick/train.h"
#include <math.h>

/* ||g||_2 as a double; narrow dtypes are widened first so the sum of
 * squares cannot overflow f16's range. */
static wk_status norm_of(const wk_tensor *g, double *out) {
    if (!wk__scope_open()) {
        wk_scope_end();
        return wk_last_status();
    }
    const wk_tensor *w = g;
    if (g->dtype != WK_F32 && g->dtype != WK_F64) w = wk_to_dtype(g, WK_F32);
    wk_tensor *n = wk_norm(w, 2.0, NULL, 0, false);
    wk_status st = n ? wk_item(n, out) : wk_last_status();
    wk_scope_end();
    return st;
}

wk_status wk_clip_grad_norm(wk_grad_store *gs, wk_tensor *const *params, int n, double max_norm, double *total_norm) {
    const char *op = "wk_clip_grad_norm";
    if (!gs) return wk__err(WK_ERR_ARG, op, "NULL gradient store");
    if (n < 0 || (n > 0 && !params)) return wk__err(WK_ERR_ARG, op, "bad parameter list (n = %d)", n);
    if (!(max_norm >= 0.0)) return wk__err(WK_ERR_ARG, op, "max_norm %g must be >= 0", max_norm);
    for (int i = 0; i < n; i++)
        if (!wk__check_in(op, params[i])) return wk_last_status();
    wk_status st = WK_OK;
    double sq = 0.0;
    wk_no_grad_begin();
    for (int i = 0; i < n && st == WK_OK; i++) {
        const wk_tensor *g = wk_grad(gs, params[i]);
        double v = 0.0;
        if (g && (st = norm_of(g, &v)) == WK_OK) sq += v * v;
    }
    double total = sqrt(sq);
    double coef = max_norm / (total + 1e-6);
    /* torch multiplies by the clamped coefficient only when it is below 1
     * (1.13: always, by min(coef, 1), which leaves the values as they are) */
    if (st == WK_OK && !(coef >= 1.0)) {
        for (int i = 0; i < n && st == WK_OK; i++) {
            wk_tensor *g = wk_grad(gs, params[i]);
            if (!g) continue;
            wk_tensor *s = wk__scope_open() ? wk_affine(g, coef, 0.0) : NULL;
            st = s ? wk_grad_set(gs, params[i], s) : wk_last_status();
            wk_scope_end();
        }
    }
    wk_no_grad_end();
    if (st == WK_OK && total_norm) *total_norm = total;
    return st;
}
