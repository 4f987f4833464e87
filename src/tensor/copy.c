/* The one data-moving step of the tensor floor: a strided view copied into
 * a fresh contiguous tensor by the backend's copy_strided (block dtypes as
 * rows of bytes). reshape's copy path (views.c) needs it, so it lives here;
 * the public wk_copy / wk_contiguous record in src/autograd/tracked_copy.c. */
#include "tensor/tensor.h"
#include "tensor/block_bytes.h"
#include "tensor/copy.h"

wk_tensor *wk__prim_copy(const wk_tensor *t) {
    const char *op = "wk_copy";
    if (!wk__check_in_blocks(op, t)) return NULL;
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank);
    if (!r) return NULL;
    /* block dtypes copy their rows as bytes */
    wk_dtype bdt;
    wk_layout ls = wk__block_bytes_layout(&t->layout, t->dtype, &bdt);
    wk_layout ld = wk__block_bytes_layout(&r->layout, r->dtype, &bdt);
    if (wk_numel(r) && wk__be(t)->copy_strided(wk__dev(t), t->storage->buf, &ls, r->storage->buf, &ld, bdt) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

wk_tensor *wk__prim_contiguous(const wk_tensor *t) {
    if (!wk__check_in_blocks("wk_contiguous", t)) return NULL;
    if (!wk__layout_is_contiguous(&t->layout)) return wk__prim_copy(t);
    return wk__tensor_view(t, &t->layout);
}

