/* The public views that record (their untracked bodies: src/tensor/views.c).
 * Each prim validated its arguments, so a non-NULL result means the dims
 * and indices the rules take normalise without further checks. */
#include "autograd/record.h"
#include "tensor/prim_views.h"

wk_tensor *wk_reshape(const wk_tensor *t, const int64_t *shape, int rank) {
    if (!wk__ag_on1(t)) return wk__prim_reshape(t, shape, rank);
    return wk__ag_reshape(wk__prim_reshape(t, shape, rank), t);
}

wk_tensor *wk_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len) {
    if (!wk__ag_on1(t)) return wk__prim_narrow(t, dim, start, len);
    wk_tensor *r = wk__prim_narrow(t, dim, start, len);
    if (!r) return NULL;
    return wk__ag_narrow(r, t, dim < 0 ? dim + t->layout.rank : dim, start, len);
}

wk_tensor *wk_transpose(const wk_tensor *t, int d0, int d1) {
    if (!wk__ag_on1(t)) return wk__prim_transpose(t, d0, d1);
    wk_tensor *r = wk__prim_transpose(t, d0, d1);
    if (!r) return NULL;
    int rank = t->layout.rank, a = d0 < 0 ? d0 + rank : d0, b = d1 < 0 ? d1 + rank : d1;
    int perm[WK_MAX_RANK];
    for (int i = 0; i < rank; i++) perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return wk__ag_permute(r, t, perm);
}

wk_tensor *wk_permute(const wk_tensor *t, const int *dims, int rank) {
    if (!wk__ag_on1(t)) return wk__prim_permute(t, dims, rank);
    wk_tensor *r = wk__prim_permute(t, dims, rank);
    if (!r) return NULL;
    int nd[WK_MAX_RANK];
    for (int i = 0; i < rank; i++) nd[i] = dims[i] < 0 ? dims[i] + rank : dims[i];
    return wk__ag_permute(r, t, nd);
}

wk_tensor *wk_broadcast_as(const wk_tensor *t, const int64_t *shape, int rank) {
    if (!wk__ag_on1(t)) return wk__prim_broadcast_as(t, shape, rank);
    return wk__ag_broadcast(wk__prim_broadcast_as(t, shape, rank), t);
}

wk_tensor *wk_squeeze(const wk_tensor *t, int dim) {
    if (!wk__ag_on1(t)) return wk__prim_squeeze(t, dim);
    wk_tensor *r = wk__prim_squeeze(t, dim);
    if (!r) return NULL;
    int d = dim < 0 ? dim + t->layout.rank : dim;
    /* a dim that is not of size 1 is left alone: the same value */
    if (t->layout.shape[d] != 1) return wk__ag_identity(r, t, "wk_squeeze");
    return wk__ag_reshape(r, t);
}

wk_tensor *wk_unsqueeze(const wk_tensor *t, int dim) {
    if (!wk__ag_on1(t)) return wk__prim_unsqueeze(t, dim);
    return wk__ag_reshape(wk__prim_unsqueeze(t, dim), t);
}

wk_tensor *wk_select(const wk_tensor *t, int dim, int64_t index) {
    if (!wk__ag_on1(t)) return wk__prim_select(t, dim, index);
    wk_tensor *r = wk__prim_select(t, dim, index);
    if (!r) return NULL;
    int d = dim < 0 ? dim + t->layout.rank : dim;
    return wk__ag_select(r, t, d, index < 0 ? index + t->layout.shape[d] : index);
}
