/* The public copies, casts, moves and in-place copies that record (their
 * untracked bodies: src/ops/readback.c). */
#include "autograd/record.h"
#include "ops/prim_copy.h"

wk_tensor *wk_copy(const wk_tensor *t) {
    if (!wk__ag_on1(t)) return wk__prim_copy(t);
    return wk__ag_identity(wk__prim_copy(t), t, "wk_copy");
}

wk_tensor *wk_contiguous(const wk_tensor *t) {
    if (!wk__ag_on1(t)) return wk__prim_contiguous(t);
    wk_tensor *r = wk__prim_contiguous(t);
    if (!r) return NULL;
    /* a strided t is copied (wk_copy's node), a contiguous one aliased */
    return wk__ag_identity(r, t, wk__layout_is_contiguous(&t->layout) ? "wk_contiguous" : "wk_copy");
}

wk_tensor *wk_to_dtype(const wk_tensor *t, wk_dtype dt) {
    if (!wk__ag_on1(t)) return wk__prim_to_dtype(t, dt);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_to_dtype(t, dt);
    wk__ag_resume();
    return wk__ag_to_dtype(r, t);
}

wk_tensor *wk_to_device(const wk_tensor *t, wk_device *dev) {
    if (!wk__ag_on1(t)) return wk__prim_to_device(t, dev);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_to_device(t, dev);
    wk__ag_resume();
    return wk__ag_to_device(r, t);
}

/* Autograd's in-place writes (wk_copy_, wk_slice_set): when src or a
 * non-leaf dst is tracked, the node is made first (an allocation failure
 * writes nothing), the write runs unrecorded, and dst is rebased onto the
 * node (rules_join.c). Untracked writes (the KV cache's) take the plain
 * path after one pointer test. */
wk_status wk_copy_(wk_tensor *dst, const wk_tensor *src) {
    if (!wk__ag_inplace_on(dst, src)) return wk__prim_copy_(dst, src);
    wk__node *n = wk__ag_copy_node(dst, src);
    if (!n) return wk_last_status();
    wk__ag_suspend();
    wk_status st = wk__prim_copy_(dst, src);
    wk__ag_resume();
    return wk__ag_rebase(dst, n, st);
}

wk_status wk_slice_set(wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset) {
    if (!wk__ag_inplace_on(dst, src)) return wk__prim_slice_set(dst, src, dim, offset);
    wk__node *n = wk__ag_slice_set_node(dst, src, dim, offset);
    if (!n) return wk_last_status();
    wk__ag_suspend();
    wk_status st = wk__prim_slice_set(dst, src, dim, offset);
    wk__ag_resume();
    return wk__ag_rebase(dst, n, st);
}
