/* The public reduction that records (its untracked body: src/ops/reduce.c). */
#include "autograd/record.h"
#include "ops/prim_reduce.h"

wk_tensor *wk_reduce(const wk_tensor *t, wk_reduce_op op, const int *dims, int ndims, bool keepdim) {
    if (!wk__ag_on1(t)) return wk__prim_reduce(t, op, dims, ndims, keepdim);
    wk_tensor *r = wk__prim_reduce(t, op, dims, ndims, keepdim);
    if (!r) return NULL;
    /* the dims were validated by the body */
    int rank = t->layout.rank;
    bool mask[WK_MAX_RANK] = {false};
    for (int i = 0; i < ndims; i++) mask[dims[i] < 0 ? dims[i] + rank : dims[i]] = true;
    return wk__ag_reduce(r, t, op, mask, keepdim);
}
