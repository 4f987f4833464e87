/* The public scans, sorts and composite reductions that record (their
 * untracked bodies: src/ops/scan.c). Each prim validated its arguments, so
 * a result means the dims normalise without further checks. */
#include "autograd/record.h"
#include "ops/prim_scan.h"

/* The dim the scans and sorts work along (a rank-0 tensor: one line, dim 0). */
static int line_dim(const wk_tensor *t, int dim) { return t->layout.rank == 0 ? 0 : dim < 0 ? dim + t->layout.rank : dim; }

wk_tensor *wk_cumsum(const wk_tensor *t, int dim) {
    if (!wk__ag_on1(t)) return wk__prim_cumsum(t, dim);
    wk_tensor *r = wk__prim_cumsum(t, dim);
    return r ? wk__ag_cumsum(r, t, line_dim(t, dim)) : NULL;
}

wk_tensor *wk_cumprod(const wk_tensor *t, int dim) {
    if (!wk__ag_on1(t)) return wk__prim_cumprod(t, dim);
    wk_tensor *r = wk__prim_cumprod(t, dim);
    return r ? wk__ag_cumprod(r, t, line_dim(t, dim)) : NULL;
}

/* Tracked values of sort / top-k: their rule needs the indices even when
 * the caller does not ask for them. v, ix: the prim's outputs (st WK_OK). */
static wk_status order_tracked(const wk_tensor *t, int dim, wk_status st, wk_tensor *v, wk_tensor *ix,
                               wk_tensor **values, wk_tensor **indices, const char *op) {
    *values = NULL;
    if (indices) *indices = NULL;
    if (st != WK_OK) return st;
    v = wk__ag_order(v, t, ix, line_dim(t, dim), op);
    if (!v) {
        wk_tensor_free(ix);
        return wk_last_status();
    }
    *values = v;
    if (indices) *indices = ix;
    else wk_tensor_free(ix);
    return WK_OK;
}

wk_status wk_sort(const wk_tensor *t, int dim, bool descending, wk_tensor **values, wk_tensor **indices) {
    if (!values || !wk__ag_on1(t)) return wk__prim_sort(t, dim, descending, values, indices);
    wk_tensor *v = NULL, *ix = NULL;
    wk_status st = wk__prim_sort(t, dim, descending, &v, &ix);
    return order_tracked(t, dim, st, v, ix, values, indices, "wk_sort");
}

wk_status wk_topk(const wk_tensor *t, int64_t k, int dim, bool largest, wk_tensor **values, wk_tensor **indices) {
    if (!values || !wk__ag_on1(t)) return wk__prim_topk(t, k, dim, largest, values, indices);
    wk_tensor *v = NULL, *ix = NULL;
    wk_status st = wk__prim_topk(t, k, dim, largest, &v, &ix);
    return order_tracked(t, dim, st, v, ix, values, indices, "wk_topk");
}

/* var / std have their own backward rule (rules_linalg.c): the graph keeps
 * x, not the f64 deviations the parts would save. */
static wk_tensor *var_recorded(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased,
                               bool take_sqrt) {
    wk_tensor *(*prim)(const wk_tensor *, const int *, int, bool, bool) = take_sqrt ? wk__prim_std : wk__prim_var;
    if (!wk__ag_on1(t)) return prim(t, dims, ndims, keepdim, unbiased);
    wk__ag_suspend();
    wk_tensor *r = prim(t, dims, ndims, keepdim, unbiased);
    wk__ag_resume();
    if (!r) return NULL;
    int rank = t->layout.rank;
    bool mask[WK_MAX_RANK] = {false};
    double n = 1;
    for (int i = 0; i < ndims; i++) {
        int d = dims[i] < 0 ? dims[i] + rank : dims[i]; /* validated by the body */
        mask[d] = true;
        n *= (double)t->layout.shape[d];
    }
    return wk__ag_var(r, t, mask, keepdim, n - (unbiased ? 1 : 0), take_sqrt);
}

wk_tensor *wk_var(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased) {
    return var_recorded(t, dims, ndims, keepdim, unbiased, false);
}
wk_tensor *wk_std(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased) {
    return var_recorded(t, dims, ndims, keepdim, unbiased, true);
}

/* log_sum_exp has its own backward rule (rules_linalg.c: one exp(x - lse),
 * not the gradient of the max / where / shift chain). */
wk_tensor *wk_log_sum_exp(const wk_tensor *t, const int *dims, int ndims, bool keepdim) {
    if (!wk__ag_on1(t)) return wk__prim_log_sum_exp(t, dims, ndims, keepdim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_log_sum_exp(t, dims, ndims, keepdim);
    wk__ag_resume();
    if (!r) return NULL;
    int rank = t->layout.rank;
    bool mask[WK_MAX_RANK] = {false};
    for (int i = 0; i < ndims; i++) mask[dims[i] < 0 ? dims[i] + rank : dims[i]] = true;
    return wk__ag_log_sum_exp(r, t, mask, keepdim);
}
