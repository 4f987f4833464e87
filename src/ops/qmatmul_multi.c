/* wk__prim_qmatmul_multi (ops/prim_qmatmul.h): one x times several weights
 * of one dtype, the results side by side. A decode step's q, k, v (or gate,
 * up) projections read the same x; run as one backend call they convert x
 * once and share one parallel region, without concatenating the weights
 * (which would copy them out of a mapped file). Untracked: inference only. */
#include "ops/prim_join.h"
#include "ops/prim_qmatmul.h"
#include <string.h>

/* The composite when the backend has no entry: one qmatmul per weight,
 * then one cat. */
static wk_tensor *by_parts(const wk_tensor *x, const wk_tensor *const *ws, int nw) {
    wk_tensor *parts[WK__QMM_MULTI_MAX] = {0};
    wk_tensor *r = NULL;
    int i = 0;
    for (; i < nw; i++)
        if (!(parts[i] = wk__prim_qmatmul(x, ws[i]))) break;
    if (i == nw) r = wk__prim_cat(parts, nw, x->layout.rank - 1);
    for (int j = 0; j < i; j++) wk_tensor_free(parts[j]);
    return r;
}

wk_tensor *wk__prim_qmatmul_multi(const wk_tensor *x, const wk_tensor *const *ws, int nw) {
    const char *op = "wk_qmatmul_multi";
    if (!ws || nw < 1 || nw > WK__QMM_MULTI_MAX) {
        wk__err(WK_ERR_ARG, op, "%s (%d weights; 1..%d)", ws ? "weight count out of range" : "weights are NULL", nw,
                WK__QMM_MULTI_MAX);
        return NULL;
    }
    int64_t ntot = 0;
    for (int i = 0; i < nw; i++) {
        if (!wk__qmatmul_check(op, x, ws[i])) return NULL;
        if (ws[i]->dtype != ws[0]->dtype) {
            wk__err(WK_ERR_DTYPE, op, "weight %d is %s, weight 0 %s: one dtype for all", i,
                    wk_dtype_name(ws[i]->dtype), wk_dtype_name(ws[0]->dtype));
            return NULL;
        }
        ntot += ws[i]->layout.shape[0]; /* <= 8 sizes of existing tensors: no overflow */
    }
    const wk_backend *be = wk__be(ws[0]);
    if (nw == 1 || !be->qmatmul_multi) return nw == 1 ? wk__prim_qmatmul(x, ws[0]) : by_parts(x, ws, nw);
    const wk_layout *lx = &x->layout;
    int r = lx->rank;
    int64_t oshape[WK_MAX_RANK];
    memcpy(oshape, lx->shape, sizeof(int64_t) * (size_t)r);
    oshape[r - 1] = ntot;
    wk_tensor *out = wk__tensor_alloc(op, wk__dev(x), x->dtype, oshape, r);
    if (!out || wk_numel(out) == 0) return out;
    const void *wb[WK__QMM_MULTI_MAX];
    wk_layout lw[WK__QMM_MULTI_MAX];
    for (int i = 0; i < nw; i++) {
        wb[i] = ws[i]->storage->buf;
        lw[i] = ws[i]->layout;
    }
    if (be->qmatmul_multi(wk__dev(x), x->storage->buf, lx, x->dtype, nw, wb, lw, ws[0]->dtype, out->storage->buf) !=
        WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}
