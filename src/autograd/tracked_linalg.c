/* The public vector products and norms: dot, mv and norm have their own
 * backward rules (rules_linalg.c): each body (src/ops/linalg.c) runs with
 * recording suspended and the result gets one node. */
#include "autograd/record.h"
#include "ops/prim_linalg.h"

wk_tensor *wk_dot(const wk_tensor *a, const wk_tensor *b) {
    if (!wk__ag_on2(a, b)) return wk__prim_dot(a, b);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_dot(a, b);
    wk__ag_resume();
    return wk__ag_dot(r, a, b);
}

wk_tensor *wk_mv(const wk_tensor *m, const wk_tensor *v) {
    if (!wk__ag_on2(m, v)) return wk__prim_mv(m, v);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_mv(m, v);
    wk__ag_resume();
    return wk__ag_mv(r, m, v);
}

wk_tensor *wk_norm(const wk_tensor *t, double p, const int *dims, int ndims, bool keepdim) {
    if (!wk__ag_on1(t)) return wk__prim_norm(t, p, dims, ndims, keepdim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_norm(t, p, dims, ndims, keepdim);
    wk__ag_resume();
    if (!r) return NULL;
    /* the dims were validated by the body: no dims means all of them */
    int rank = t->layout.rank;
    bool mask[WK_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) mask[i] = ndims == 0;
    for (int i = 0; i < ndims; i++) mask[dims[i] < 0 ? dims[i] + rank : dims[i]] = true;
    return wk__ag_norm(r, t, p, mask, keepdim);
}
