/* meshgrid: each output is a broadcast view of one input (its one stride on
 * its own dim, stride 0 on the others), like torch's expand; nothing is
 * copied, so the outputs are for reading (wk_contiguous before writing).
 * A composite: tracked inputs take recorded public views, so it lives in
 * the autograd floor (moved from src/core/meshgrid.c). */
#include "autograd/node.h"

/* Tracked inputs: the same view made of recorded public ops (a reshape that
 * puts the input's elements on its dim, then broadcast_as), so each output's
 * gradient is summed back over the dims it was broadcast along. */
static wk_tensor *grid_tracked(const wk_tensor *t, const wk_layout *l, int pos) {
    int64_t s[WK_MAX_RANK];
    for (int d = 0; d < l->rank; d++) s[d] = d == pos ? l->shape[d] : 1;
    wk_tensor *r = wk_reshape(t, s, l->rank);
    wk_tensor *b = r ? wk_broadcast_as(r, l->shape, l->rank) : NULL;
    wk_tensor_free(r);
    return b;
}

wk_status wk_meshgrid(wk_tensor *const *ts, int n, wk_meshgrid_indexing indexing, wk_tensor **out) {
    const char *op = "wk_meshgrid";
    if (!out) return wk__err(WK_ERR_ARG, op, "NULL output array");
    /* out is written only for a valid n: a bad n says nothing of its size */
    if (n < 1 || n > WK_MAX_RANK) return wk__err(WK_ERR_ARG, op, "needs 1 to %d tensors, got %d", WK_MAX_RANK, n);
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (!ts) return wk__err(WK_ERR_ARG, op, "NULL tensor array");
    if (indexing != WK_MESHGRID_IJ && indexing != WK_MESHGRID_XY)
        return wk__err(WK_ERR_ARG, op, "invalid indexing %d", (int)indexing);
    for (int i = 0; i < n; i++) {
        if (!wk__check_in(op, ts[i])) return wk_last_status();
        if (i > 0 && !wk__check_same(op, ts[0], ts[i])) return wk_last_status();
        if (ts[i]->layout.rank > 1) {
            char b[128];
            return wk__err(WK_ERR_SHAPE, op, "tensor %d must have rank 0 or 1, got %s", i,
                           wk__shape_str(ts[i]->layout.shape, ts[i]->layout.rank, b, sizeof b));
        }
    }
    /* "xy": the first two inputs take each other's place in the output */
    int pos[WK_MAX_RANK];
    for (int i = 0; i < n; i++) pos[i] = i;
    if (indexing == WK_MESHGRID_XY && n >= 2) pos[0] = 1, pos[1] = 0;
    wk_layout l = {.rank = n};
    for (int i = 0; i < n; i++) l.shape[pos[i]] = wk__layout_numel(&ts[i]->layout);
    bool ag = wk__ag_onn(ts, n);
    for (int i = 0; i < n; i++) {
        const wk_layout *src = &ts[i]->layout;
        wk_layout li = l;
        if (ag) {
            if (!(out[i] = grid_tracked(ts[i], &l, pos[i]))) {
                for (int j = 0; j < i; j++) wk_tensor_free(out[j]), out[j] = NULL;
                return wk_last_status();
            }
            continue;
        }
        for (int d = 0; d < n; d++) li.stride[d] = 0;
        li.stride[pos[i]] = src->rank == 1 ? src->stride[0] : 0;
        li.offset = src->offset;
        out[i] = wk__tensor_view(ts[i], &li);
        if (!out[i]) {
            for (int j = 0; j < i; j++) wk_tensor_free(out[j]), out[j] = NULL;
            return wk_last_status();
        }
    }
    return WK_OK;
}
