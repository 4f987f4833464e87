/* Scans and order: cumsum/cumprod, sort/argsort, top-k (backend entries).
 * The untracked ops (wk__prim_*, ops/prim_scan.h); the public tracked ones
 * are src/autograd/tracked_scan.c. The statistics built from reductions
 * (var/std, log_sum_exp) are stats.c. */
#include "tensor/tensor.h"
#include "ops/prim_elementwise.h"
#include "ops/prim_copy.h"
#include "ops/prim_reduce.h"
#include "ops/prim_scan.h"
#include "tensor/prim_views.h"
#include <math.h>

/* A rank-0 tensor is seen as one line of length 1 along dim 0 / -1. */
static bool line_layout(const char *op, const wk_tensor *t, int dim, wk_layout *l, int *d) {
    *l = t->layout;
    if (l->rank == 0) {
        if (dim != 0 && dim != -1) {
            wk__err(WK_ERR_INDEX, op, "dim %d out of range for rank 0", dim);
            return false;
        }
        l->rank = 1;
        l->shape[0] = 1;
        l->stride[0] = 1;
        *d = 0;
        return true;
    }
    return wk__norm_dim(op, dim, l->rank, d) == WK_OK;
}

static wk_tensor *scan(const char *op, const wk_tensor *t, int dim, bool prod) {
    if (!wk__check_in(op, t)) return NULL;
    wk_layout l;
    int d;
    if (!line_layout(op, t, dim, &l, &d)) return NULL;
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank);
    if (!r || wk_numel(r) == 0) return r;
    if (wk__be(t)->scan(wk__dev(t), t->storage->buf, &l, r->storage->buf, t->dtype, d, prod) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

wk_tensor *wk__prim_cumsum(const wk_tensor *t, int dim) { return scan("wk_cumsum", t, dim, false); }
wk_tensor *wk__prim_cumprod(const wk_tensor *t, int dim) { return scan("wk_cumprod", t, dim, true); }

/* Shared by sort and top-k: k < 0 means a full sort. */
static wk_status order(const char *op, const wk_tensor *t, int dim, bool desc, int64_t k, wk_tensor **values,
                       wk_tensor **indices) {
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!wk__check_in(op, t)) return wk_last_status();
    wk_layout l;
    int d;
    if (!line_layout(op, t, dim, &l, &d)) return wk_last_status();
    int64_t n = l.shape[d];
    if (k >= 0 && k > n) return wk__err(WK_ERR_ARG, op, "k = %lld out of range [0, %lld] for dim %d",
                                        (long long)k, (long long)n, dim);
    int rank = t->layout.rank;
    if (k == 0 && rank == 0)   /* a rank-0 result cannot hold zero elements */
        return wk__err(WK_ERR_ARG, op, "k = 0 on a rank-0 tensor (its one element has no empty slice)");
    int64_t shape[WK_MAX_RANK];
    for (int i = 0; i < rank; i++) shape[i] = t->layout.shape[i];
    if (k >= 0 && rank > 0) shape[d] = k;
    wk_tensor *v = NULL, *ix = NULL;
    if (values && !(v = wk__tensor_alloc(op, wk__dev(t), t->dtype, shape, rank))) return wk_last_status();
    if (indices && !(ix = wk__tensor_alloc(op, wk__dev(t), WK_I64, shape, rank))) {
        wk_tensor_free(v);
        return wk_last_status();
    }
    int64_t out_n = 1;
    for (int i = 0; i < rank; i++) out_n *= shape[i];
    if ((v || ix) && out_n > 0) {
        void *vb = v ? v->storage->buf : NULL, *ib = ix ? ix->storage->buf : NULL;
        wk_status st = k >= 0 ? wk__be(t)->topk(wk__dev(t), t->storage->buf, &l, t->dtype, d, k, desc, vb, ib)
                              : wk__be(t)->sort(wk__dev(t), t->storage->buf, &l, t->dtype, d, desc, vb, ib);
        if (st != WK_OK) {
            wk_tensor_free(v);
            wk_tensor_free(ix);
            return st;
        }
    }
    if (values) *values = v;
    if (indices) *indices = ix;
    return WK_OK;
}

wk_status wk__prim_sort(const wk_tensor *t, int dim, bool descending, wk_tensor **values, wk_tensor **indices) {
    return order("wk_sort", t, dim, descending, -1, values, indices);
}

wk_tensor *wk_argsort(const wk_tensor *t, int dim, bool descending) {
    wk_tensor *ix = NULL;
    if (order("wk_argsort", t, dim, descending, -1, NULL, &ix) != WK_OK) return NULL;
    return ix;
}

wk_status wk__prim_topk(const wk_tensor *t, int64_t k, int dim, bool largest, wk_tensor **values, wk_tensor **indices) {
    if (k < 0) {
        if (values) *values = NULL;
        if (indices) *indices = NULL;
        if (!wk__check_in("wk_topk", t)) return wk_last_status();
        return wk__err(WK_ERR_ARG, "wk_topk", "k = %lld is negative", (long long)k);
    }
    return order("wk_topk", t, dim, largest, k, values, indices);
}
