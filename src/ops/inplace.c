/* In-place writes, the only mutation paths (as in candle): fills, and the
 * untracked copy_ / slice_set (ops/prim_copy.h) whose public forms record in
 * src/autograd/tracked_copy.c. Every one passes wk__check_writable first. */
#include "tensor/block_bytes.h"
#include "ops/quantize.h"
#include "tensor/tensor.h"
#include "ops/prim_quantize.h"
#include "ops/prim_copy.h"
#include <stdlib.h>
#include <string.h>

static wk_status fill_named(const char *op, wk_tensor *t, double value) {
    if (!wk__check_in(op, t)) return wk_last_status();
    wk_status st = wk__check_writable(op, t, &t->layout);
    if (st != WK_OK) return st;
    if (wk_numel(t) == 0) return WK_OK;
    return wk__be(t)->fill(wk__dev(t), t->storage->buf, &t->layout, t->dtype, value);
}
wk_status wk_fill_(wk_tensor *t, double value) { return fill_named("wk_fill_", t, value); }
wk_status wk_zero_(wk_tensor *t) { return fill_named("wk_zero_", t, 0.0); }
wk_status wk_one_(wk_tensor *t) { return fill_named("wk_one_", t, 1.0); }

/* Overlap between src and dst views of the same storage would make the copy
 * order-dependent; copy src out first in that case. */
static wk_status copy_into(const char *op, wk_tensor *dst, const wk_layout *ld, const wk_tensor *src) {
    wk_status ws = wk__check_writable(op, dst, ld);
    if (ws != WK_OK) return ws;
    if (wk__layout_numel(ld) == 0) return WK_OK;
    if (src->storage == dst->storage) {
        wk_tensor *tmp = wk__prim_copy(src);
        if (!tmp) return wk_last_status();
        wk_status st = wk__be(dst)->copy_strided(wk__dev(dst), tmp->storage->buf, &tmp->layout, dst->storage->buf, ld,
                                                  dst->dtype);
        wk_tensor_free(tmp);
        return st;
    }
    return wk__be(dst)->copy_strided(wk__dev(dst), src->storage->buf, &src->layout, dst->storage->buf, ld, dst->dtype);
}

wk_status wk__prim_copy_(wk_tensor *dst, const wk_tensor *src) {
    const char *op = "wk_copy_";
    if (!wk__check_same(op, dst, src)) return wk_last_status();
    if (dst->layout.rank != src->layout.rank ||
        memcmp(dst->layout.shape, src->layout.shape, sizeof(int64_t) * (size_t)dst->layout.rank) != 0) {
        char a[128], b[128];
        return wk__err(WK_ERR_SHAPE, op, "dst %s and src %s differ",
                       wk__shape_str(dst->layout.shape, dst->layout.rank, a, sizeof a),
                       wk__shape_str(src->layout.shape, src->layout.rank, b, sizeof b));
    }
    return copy_into(op, dst, &dst->layout, src);
}

wk_status wk__prim_slice_set(wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset) {
    const char *op = "wk_slice_set";
    if (!wk__check_same(op, dst, src)) return wk_last_status();
    int d;
    if (wk__norm_dim(op, dim, dst->layout.rank, &d) != WK_OK) return wk_last_status();
    bool ok = src->layout.rank == dst->layout.rank;
    for (int i = 0; ok && i < dst->layout.rank; i++)
        if (i != d && src->layout.shape[i] != dst->layout.shape[i]) ok = false;
    if (!ok) {
        char a[128], b[128];
        return wk__err(WK_ERR_SHAPE, op, "src %s does not fit dst %s outside dim %d",
                       wk__shape_str(src->layout.shape, src->layout.rank, a, sizeof a),
                       wk__shape_str(dst->layout.shape, dst->layout.rank, b, sizeof b), d);
    }
    int64_t len = src->layout.shape[d];
    if (offset < 0 || offset > dst->layout.shape[d] - len)
        return wk__err(WK_ERR_INDEX, op, "offset %lld + length %lld exceeds dim %d of size %lld", (long long)offset,
                       (long long)len, d, (long long)dst->layout.shape[d]);
    wk_layout ld = dst->layout;
    ld.offset += offset * ld.stride[d];
    ld.shape[d] = len;
    return copy_into(op, dst, &ld, src);
}
