/* cat: each input is copied into its slice of one output. Untracked: the
 * public wk_cat (src/autograd/tracked_join.c) records one node (each
 * input's gradient is its narrow of the output's); wk_stack, a composite of
 * unsqueeze and cat, lives there too. */
#include "tensor/block_bytes.h"
#include "base/checked.h"
#include "ops/prim_join.h"

/* wk__check_same, also for two block tensors: cat copies whole rows (along
 * the last dim: whole blocks), which is a byte copy. */
static bool check_pair(const char *op, const wk_tensor *a, const wk_tensor *b) {
    if (!wk__check_in_blocks(op, a) || !wk__check_in_blocks(op, b)) return false;
    if (!wk_dtype_is_quantized(a->dtype) && !wk_dtype_is_quantized(b->dtype)) return wk__check_same(op, a, b);
    if (a->dtype != b->dtype) {
        wk__err(WK_ERR_DTYPE, op, "dtype mismatch: %s and %s (no implicit casts; use wk_to_dtype)",
                wk_dtype_name(a->dtype), wk_dtype_name(b->dtype));
        return false;
    }
    if (wk__dev(a) != wk__dev(b)) {
        wk__err(WK_ERR_DEVICE, op, "device mismatch: %s vs %s", wk__dev(a)->name, wk__dev(b)->name);
        return false;
    }
    return true;
}

wk_tensor *wk__prim_cat(wk_tensor *const *ts, int n, int dim) {
    const char *op = "wk_cat";
    if (n < 1) { wk__err(WK_ERR_ARG, op, "needs at least one tensor, got n = %d", n); return NULL; }
    if (!ts) { wk__err(WK_ERR_ARG, op, "NULL tensor array with n = %d", n); return NULL; }
    for (int i = 0; i < n; i++)
        if (!check_pair(op, ts[0], ts[i])) return NULL;
    const wk_layout *l0 = &ts[0]->layout;
    int d;
    if (wk__norm_dim(op, dim, l0->rank, &d) != WK_OK) return NULL;
    int64_t shape[WK_MAX_RANK];
    for (int i = 0; i < l0->rank; i++) shape[i] = l0->shape[i];
    shape[d] = 0;
    for (int k = 0; k < n; k++) {
        const wk_layout *l = &ts[k]->layout;
        bool ok = l->rank == l0->rank;
        for (int i = 0; ok && i < l0->rank; i++)
            if (i != d && l->shape[i] != l0->shape[i]) ok = false;
        if (!ok) {
            char a[128], b[128];
            wk__err(WK_ERR_SHAPE, op, "tensor %d has shape %s, tensor 0 has %s (must match outside dim %d)", k,
                    wk__shape_str(l->shape, l->rank, a, sizeof a), wk__shape_str(l0->shape, l0->rank, b, sizeof b), d);
            return NULL;
        }
        /* n stride-0 views of 2^56 elements each are legal inputs; their
         * sum is not (257 of them wrap int64 back to a small size) */
        if (wk__add_overflow_i64(shape[d], l->shape[d], &shape[d]) || shape[d] > WK__MAX_NUMEL) {
            char a[128];
            wk__err(WK_ERR_SHAPE, op, "dim %d of the result overflows: %d tensors of shape %s and more", d, k + 1,
                    wk__shape_str(l->shape, l->rank, a, sizeof a));
            return NULL;
        }
    }
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(ts[0]), ts[0]->dtype, shape, l0->rank);
    if (!r) return NULL;
    int64_t off = 0;
    for (int k = 0; k < n; k++) {
        wk_layout ld = r->layout;
        ld.offset = off * ld.stride[d];
        ld.shape[d] = ts[k]->layout.shape[d];
        off += ld.shape[d];
        if (wk__layout_numel(&ld) == 0) continue;
        wk_dtype bdt;
        wk_layout bs = wk__block_bytes_layout(&ts[k]->layout, r->dtype, &bdt);
        wk_layout bd = wk__block_bytes_layout(&ld, r->dtype, &bdt);
        if (wk__be(r)->copy_strided(wk__dev(r), ts[k]->storage->buf, &bs, r->storage->buf, &bd, bdt) != WK_OK) {
            wk_tensor_free(r);
            return NULL;
        }
    }
    return r;
}
