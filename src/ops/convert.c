/* Casts and device moves, untracked (wk__prim_to_dtype / wk__prim_to_device,
 * ops/prim_copy.h); the public ones record in src/autograd/tracked_copy.c.
 * Block dtypes convert through ops/quantize.c. */
#include "tensor/block_bytes.h"
#include "ops/quantize.h"
#include "tensor/tensor.h"
#include "ops/prim_quantize.h"
#include "ops/prim_copy.h"
#include <stdlib.h>
#include <string.h>

wk_tensor *wk__prim_to_dtype(const wk_tensor *t, wk_dtype dt) {
    const char *op = "wk_to_dtype";
    if (!wk__check_in_blocks(op, t)) return NULL;
    if (!wk_dtype_info_of(dt)) { wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt); return NULL; }
    if (dt == t->dtype) return wk__tensor_view(t, &t->layout);
    if (wk_dtype_is_quantized(t->dtype) || wk_dtype_is_quantized(dt)) return wk__to_dtype_blocks(op, t, dt);
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), dt, t->layout.shape, t->layout.rank);
    if (!r) return NULL;
    if (wk_numel(r) && wk__be(t)->cast(wk__dev(t), t->storage->buf, &t->layout, t->dtype, r->storage->buf, dt) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

/* Moves copy exactly the view's elements once where they can:
 *  - to the CPU: the source backend's to_host gathers the view straight
 *    into the new tensor's storage;
 *  - from a contiguous CPU view: from_host reads the CPU buffer in place;
 *  - between two devices of one backend that has the optional copy_between
 *    entry (CUDA to CUDA): a device-to-device (peer) copy, no host round trip;
 *  - anything else through a host staging buffer.
 * Every step is a contract entry of the backends involved. */
wk_tensor *wk__prim_to_device(const wk_tensor *t, wk_device *dev) {
    const char *op = "wk_to_device";
    if (!wk__check_in_blocks(op, t)) return NULL; /* block dtypes move their bytes */
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    wk_device *src = wk__dev(t);
    if (dev == src) return wk__tensor_view(t, &t->layout);
    /* byte counts through the dtype's block geometry, like every other sizing */
    size_t nb, off;
    if (wk__dtype_bytes_for(op, t->dtype, wk_numel(t), &nb) != WK_OK ||
        wk__dtype_bytes_for(op, t->dtype, t->layout.offset, &off) != WK_OK)
        return NULL;
    if (dev->kind == WK_DEVICE_CPU || (src->kind == WK_DEVICE_CPU && wk__layout_is_contiguous(&t->layout)) ||
        (src->be == dev->be && src->be->copy_between)) {
        wk_tensor *r = wk__tensor_alloc(op, dev, t->dtype, t->layout.shape, t->layout.rank);
        if (!r || nb == 0) return r;
        wk_status st;
        wk_dtype bdt;
        wk_layout bl = wk__block_bytes_layout(&t->layout, t->dtype, &bdt);
        if (dev->kind == WK_DEVICE_CPU)
            st = wk__be(t)->to_host(src, t->storage->buf, &bl, bdt, r->storage->buf);
        else if (src->kind == WK_DEVICE_CPU)
            st = dev->be->from_host(dev, r->storage->buf, 0, (const char *)t->storage->buf + off, nb);
        else
            st = src->be->copy_between(src, t->storage->buf, &bl, bdt, dev, r->storage->buf);
        if (st != WK_OK) {
            wk_tensor_free(r);
            return NULL;
        }
        return r;
    }
    void *tmp = malloc(nb ? nb : 1);
    if (!tmp) { wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of staging memory", nb); return NULL; }
    wk_tensor *r = NULL;
    if (wk_to_host(t, tmp, nb) == WK_OK) r = wk_from_host(tmp, nb, t->layout.shape, t->layout.rank, t->dtype, dev);
    free(tmp);
    return r;
}
