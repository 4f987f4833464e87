/* matmul: the shape checks of candle's Tensor::matmul, then one backend call
 * that must be right for ANY strides, batch strides included (seed 002).
 * Untracked (ops/prim_matmul.h); the public ops record in
 * src/autograd/tracked_matmul.c. */
#include "base/checked.h"
#include "tensor/tensor.h"
#include "ops/prim_matmul.h"

static wk_tensor *matmul_checked(const char *op, const wk_tensor *a, const wk_layout *la, const wk_tensor *b,
                                 const wk_layout *lb) {
    int r = la->rank;
    int64_t m = la->shape[r - 2], k = la->shape[r - 1], n = lb->shape[r - 1];
    int64_t shape[WK_MAX_RANK];
    for (int i = 0; i < r - 2; i++) shape[i] = la->shape[i];
    shape[r - 2] = m;
    shape[r - 1] = n;
    if (wk_dtype_is_int(a->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(a->dtype));
        return NULL;
    }
    wk_tensor *out = wk__tensor_alloc(op, wk__dev(a), a->dtype, shape, r);
    if (!out) return NULL;
    int64_t cnt = wk_numel(out);
    wk_status st;
    if (cnt == 0) st = WK_OK;
    else if (k == 0) st = wk__be(a)->fill(wk__dev(a), out->storage->buf, &out->layout, a->dtype, 0.0);
    else st = wk__be(a)->matmul(wk__dev(a), a->storage->buf, la, b->storage->buf, lb, out->storage->buf, a->dtype);
    if (st != WK_OK) { wk_tensor_free(out); return NULL; }
    return out;
}

static bool mm_shapes(const char *op, const wk_tensor *a, const wk_tensor *b) {
    if (!wk__check_same(op, a, b)) return false;
    if (a->layout.rank < 2 || b->layout.rank < 2) {
        char x[128], y[128];
        wk__err(WK_ERR_SHAPE, op, "needs rank >= 2 on both sides: lhs %s, rhs %s (wk_mv and wk_dot take vectors)",
                wk__shape_str(a->layout.shape, a->layout.rank, x, sizeof x),
                wk__shape_str(b->layout.shape, b->layout.rank, y, sizeof y));
        return false;
    }
    if (a->layout.shape[a->layout.rank - 1] != b->layout.shape[b->layout.rank - 2]) {
        char x[128], y[128];
        wk__err(WK_ERR_SHAPE, op, "inner dims differ: lhs %s, rhs %s",
                wk__shape_str(a->layout.shape, a->layout.rank, x, sizeof x),
                wk__shape_str(b->layout.shape, b->layout.rank, y, sizeof y));
        return false;
    }
    return true;
}

wk_tensor *wk__prim_matmul(const wk_tensor *a, const wk_tensor *b) {
    const char *op = "wk_matmul";
    if (!mm_shapes(op, a, b)) return NULL;
    bool ok = a->layout.rank == b->layout.rank;
    for (int i = 0; ok && i < a->layout.rank - 2; i++) ok = a->layout.shape[i] == b->layout.shape[i];
    if (!ok) {
        char x[128], y[128];
        wk__err(WK_ERR_SHAPE, op, "batch dims differ: lhs %s, rhs %s (use wk_broadcast_matmul to broadcast them)",
                wk__shape_str(a->layout.shape, a->layout.rank, x, sizeof x),
                wk__shape_str(b->layout.shape, b->layout.rank, y, sizeof y));
        return NULL;
    }
    return matmul_checked(op, a, &a->layout, b, &b->layout);
}

wk_tensor *wk__prim_broadcast_matmul(const wk_tensor *a, const wk_tensor *b) {
    const char *op = "wk_broadcast_matmul";
    if (!mm_shapes(op, a, b)) return NULL;
    int ra = a->layout.rank, rb = b->layout.rank;
    int64_t batch[WK_MAX_RANK];
    int rbatch;
    if (wk__broadcast_shapes(op, a->layout.shape, ra - 2, b->layout.shape, rb - 2, batch, &rbatch) != WK_OK) return NULL;
    int64_t sa[WK_MAX_RANK], sb[WK_MAX_RANK];
    for (int i = 0; i < rbatch; i++) sa[i] = sb[i] = batch[i];
    sa[rbatch] = a->layout.shape[ra - 2];
    sa[rbatch + 1] = a->layout.shape[ra - 1];
    sb[rbatch] = b->layout.shape[rb - 2];
    sb[rbatch + 1] = b->layout.shape[rb - 1];
    /* the broadcast operands are views the backend iterates: batch x m x k
     * (and batch x k x n) must stay a valid element count, like any shape */
    if (!wk__shape_fits(sa, rbatch + 2) || !wk__shape_fits(sb, rbatch + 2)) {
        char x[128], y[128];
        wk__err(WK_ERR_SHAPE, op, "broadcast batch too large: lhs %s, rhs %s (an operand would exceed 2^56 elements)",
                wk__shape_str(a->layout.shape, ra, x, sizeof x), wk__shape_str(b->layout.shape, rb, y, sizeof y));
        return NULL;
    }
    wk_layout la, lb;
    /* stride-0 batch dims: the backend handles them without materialising */
    if (wk__layout_broadcast(op, &a->layout, sa, rbatch + 2, &la) != WK_OK ||
        wk__layout_broadcast(op, &b->layout, sb, rbatch + 2, &lb) != WK_OK)
        return NULL;
    return matmul_checked(op, a, &la, b, &lb);
}
