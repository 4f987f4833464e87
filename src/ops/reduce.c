/* Reductions over one or several dims: the untracked op (wk__prim_reduce,
 * ops/prim_reduce.h). The public wk_reduce records in
 * src/autograd/tracked_reduce.c; the one-op wrappers are composite_reduce.c. */
#include "tensor/tensor.h"
#include "tensor/op_lists.h"
#include "ops/prim_reduce.h"


wk_tensor *wk__prim_reduce(const wk_tensor *t, wk_reduce_op op, const int *dims, int ndims, bool keepdim) {
    if ((unsigned)op >= WK_REDUCE_COUNT) { wk__err(WK_ERR_ARG, "wk_reduce", "invalid reduce op %d", (int)op); return NULL; }
    const char *name = wk__reduce_name(op);
    if (!wk__check_in(name, t)) return NULL;
    int rank = t->layout.rank;
    bool mask[WK_MAX_RANK] = {false};
    if (ndims < 0 || (ndims > 0 && !dims)) { wk__err(WK_ERR_ARG, name, "bad dims list"); return NULL; }
    for (int i = 0; i < ndims; i++) {
        int d;
        if (wk__norm_dim(name, dims[i], rank, &d) != WK_OK) return NULL;
        if (mask[d]) { wk__err(WK_ERR_ARG, name, "dim %d listed twice", d); return NULL; }
        mask[d] = true;
    }
    bool arg = op == WK_REDUCE_ARGMAX || op == WK_REDUCE_ARGMIN;
    if (arg && ndims != 1) { wk__err(WK_ERR_ARG, name, "takes exactly one dim, got %d", ndims); return NULL; }
    if (op == WK_REDUCE_MEAN && !wk_dtype_is_float(t->dtype)) {
        wk__err(WK_ERR_DTYPE, name, "not defined for integer dtype %s", wk_dtype_name(t->dtype));
        return NULL;
    }
    int64_t red = 1;
    int64_t oshape[WK_MAX_RANK], kshape[WK_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < rank; i++) {
        if (mask[i]) red *= t->layout.shape[i];
        else oshape[orank++] = t->layout.shape[i];
        kshape[i] = mask[i] ? 1 : t->layout.shape[i];
    }
    /* sum, mean, prod, any and all have an identity (0, NaN, 1, false, true) */
    bool minmax = op == WK_REDUCE_MAX || op == WK_REDUCE_MIN || arg;
    int64_t out_n = 1;
    for (int i = 0; i < orank; i++) out_n *= oshape[i];
    if (minmax && red == 0 && out_n > 0) {
        wk__err(WK_ERR_SHAPE, name, "reduction over an empty dim has no identity");
        return NULL;
    }
    wk_dtype odt = arg ? WK_U32 : (op == WK_REDUCE_ANY || op == WK_REDUCE_ALL) ? WK_U8 : t->dtype;
    wk_tensor *r = keepdim ? wk__tensor_alloc(name, wk__dev(t), odt, kshape, rank)
                           : wk__tensor_alloc(name, wk__dev(t), odt, oshape, orank);
    if (!r || wk_numel(r) == 0) return r;
    if (wk__be(t)->reduce(wk__dev(t), op, t->storage->buf, &t->layout, t->dtype, mask, r->storage->buf) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

/* u8 results: never tracked, so the untracked reduction is the public op */
wk_tensor *wk_any(const wk_tensor *t, const int *d, int n, bool k) { return wk__prim_reduce(t, WK_REDUCE_ANY, d, n, k); }
wk_tensor *wk_all(const wk_tensor *t, const int *d, int n, bool k) { return wk__prim_reduce(t, WK_REDUCE_ALL, d, n, k); }
