/* wk_qmatmul (include/wick/nn.h): y = x . w^T with w a block-quantized or
 * f16/bf16 (N, K) weight and x (..., K) f32/f16/bf16. Checks only; the
 * backend's qmatmul entry computes (CPU: cpu/quantized/qmatmul.c). Untracked
 * (ops/prim_qmatmul.h); the public op records in src/autograd/tracked_qmatmul.c. */
#include "ops/prim_qmatmul.h"
#include <string.h>

static bool float_x(wk_dtype dt) { return dt == WK_F32 || dt == WK_F16 || dt == WK_BF16; }

bool wk__qmatmul_check(const char *op, const wk_tensor *x, const wk_tensor *w) {
    if (!wk__check_in_blocks(op, x) || !wk__check_in_blocks(op, w)) return false;
    if (wk__dev(x) != wk__dev(w)) {
        wk__err(WK_ERR_DEVICE, op, "device mismatch: x on %s, w on %s", wk__dev(x)->name, wk__dev(w)->name);
        return false;
    }
    if (!float_x(x->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "x must be f32, f16 or bf16, got %s", wk_dtype_name(x->dtype));
        return false;
    }
    if (!wk_dtype_is_quantized(w->dtype) && w->dtype != WK_F16 && w->dtype != WK_BF16) {
        wk__err(WK_ERR_DTYPE, op, "weight dtype %s is neither a block-quantized dtype nor f16/bf16 (use wk_matmul)",
                wk_dtype_name(w->dtype));
        return false;
    }
    const wk_layout *lx = &x->layout, *lw = &w->layout;
    char sx[96], sw[96];
    wk__shape_str(lx->shape, lx->rank, sx, sizeof sx);
    wk__shape_str(lw->shape, lw->rank, sw, sizeof sw);
    if (lw->rank != 2) {
        wk__err(WK_ERR_SHAPE, op, "w must be a 2-D (N, K) matrix, got %s shape %s", wk_dtype_name(w->dtype), sw);
        return false;
    }
    if (lx->rank < 1) {
        wk__err(WK_ERR_SHAPE, op, "x must have rank >= 1 (..., K), got a scalar");
        return false;
    }
    int r = lx->rank;
    if (lx->shape[r - 1] != lw->shape[1]) {
        wk__err(WK_ERR_SHAPE, op, "inner dims differ: x %s has K = %lld, w %s has K = %lld", sx,
                (long long)lx->shape[r - 1], sw, (long long)lw->shape[1]);
        return false;
    }
    /* the kernels stream whole rows of w: each row contiguous (of whole
     * blocks for a block dtype), rows at any stride */
    if (!wk__check_block_layout(op, w->dtype, lw)) return false;
    if (lw->shape[1] > 1 && lw->stride[1] != 1 && lw->shape[0] > 0) {
        wk__err(WK_ERR_SHAPE, op, "w %s %s must have contiguous rows (stride %lld along K; use wk_contiguous)",
                wk_dtype_name(w->dtype), sw, (long long)lw->stride[1]);
        return false;
    }
    if (lw->shape[0] > 1 && lw->stride[0] < 0) {
        wk__err(WK_ERR_SHAPE, op, "w %s must not have a negative row stride", sw);
        return false;
    }
    return true;
}

wk_tensor *wk__prim_qmatmul(const wk_tensor *x, const wk_tensor *w) {
    const char *op = "wk_qmatmul";
    if (!wk__qmatmul_check(op, x, w)) return NULL;
    const wk_layout *lx = &x->layout, *lw = &w->layout;
    int r = lx->rank;
    const wk_backend *be = wk__be(w);
    if (!be->qmatmul) {
        wk__err(WK_ERR_NOT_COMPILED, op, "backend %s has no qmatmul entry (weight %s)", be->name,
                wk_dtype_name(w->dtype));
        return NULL;
    }
    int64_t oshape[WK_MAX_RANK];
    memcpy(oshape, lx->shape, sizeof(int64_t) * (size_t)r);
    oshape[r - 1] = lw->shape[0];
    wk_tensor *out = wk__tensor_alloc(op, wk__dev(x), x->dtype, oshape, r);
    if (!out || wk_numel(out) == 0) return out;
    if (be->qmatmul(wk__dev(x), x->storage->buf, lx, x->dtype, w->storage->buf, lw, w->dtype, out->storage->buf) !=
        WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}
