/* The public joins: wk_cat is the untracked cat (src/ops/join.c) with one
 * node when an input is tracked (src/autograd/rules_join.c); wk_stack is a
 * composite of unsqueeze and cat and records through them. */
#include "autograd/record.h"
#include "ops/prim_join.h"

wk_tensor *wk_cat(wk_tensor *const *ts, int n, int dim) {
    if (n < 1 || !wk__ag_onn(ts, n)) return wk__prim_cat(ts, n, dim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_cat(ts, n, dim);
    wk__ag_resume();
    return wk__ag_cat(r, ts, n, dim);
}

wk_tensor *wk_stack(wk_tensor *const *ts, int n, int dim) {
    const char *op = "wk_stack";
    if (n < 1) { wk__err(WK_ERR_ARG, op, "needs at least one tensor, got n = %d", n); return NULL; }
    if (!ts) { wk__err(WK_ERR_ARG, op, "NULL tensor array with n = %d", n); return NULL; }
    if (n > 4096) { wk__err(WK_ERR_ARG, op, "at most 4096 tensors, got %d", n); return NULL; }
    for (int i = 0; i < n; i++)
        if (!wk__check_in_blocks(op, ts[i])) return NULL;
    for (int i = 1; i < n; i++) {
        const wk_layout *a = &ts[0]->layout, *b = &ts[i]->layout;
        bool same = a->rank == b->rank;
        for (int k = 0; same && k < a->rank; k++) same = a->shape[k] == b->shape[k];
        if (!same) {
            char x[128], y[128];
            wk__err(WK_ERR_SHAPE, op, "tensor %d has shape %s, tensor 0 has %s", i,
                    wk__shape_str(b->shape, b->rank, x, sizeof x), wk__shape_str(a->shape, a->rank, y, sizeof y));
            return NULL;
        }
    }
    /* the result's shape is checked here so that its error names wk_stack */
    int rank = ts[0]->layout.rank, d;
    if (rank == WK_MAX_RANK) { wk__err(WK_ERR_SHAPE, op, "rank would exceed %d", WK_MAX_RANK); return NULL; }
    if (wk__norm_dim(op, dim, rank + 1, &d) != WK_OK) return NULL;
    int64_t shape[WK_MAX_RANK];
    for (int i = 0, k = 0; i <= rank; i++) shape[i] = i == d ? n : ts[0]->layout.shape[k++];
    if (wk__check_shape(op, shape, rank + 1, NULL) != WK_OK) return NULL;
    wk_tensor *views[4096];
    wk_tensor *r = NULL;
    int k = 0;
    for (; k < n; k++)
        if (!(views[k] = wk_unsqueeze(ts[k], dim))) break;
    if (k == n) r = wk_cat(views, n, dim);
    while (k > 0) wk_tensor_free(views[--k]);
    return r;
}
