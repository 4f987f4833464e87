/* Storage lifetime. Bytes live on one device and, when the last view lets
 * go, are freed through its backend (wick's own allocations) or handed back
 * to their owner's release callback (memory wick only wraps). */
#include "tensor/tensor.h"
#include <stdlib.h>

static wk_storage *header(const char *op, wk_device *dev, wk_dtype dt, size_t nbytes) {
    wk_storage *s = malloc(sizeof *s);
    if (!s) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a storage header");
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->dev = dev;
    s->dtype = dt;
    s->nbytes = nbytes;
    s->buf = NULL;
    s->owner = WK_OWNER_BACKEND;
    s->release = NULL;
    s->release_ctx = NULL;
    s->read_only = false;
    atomic_init(&s->version, 0);
    return s;
}

wk_storage *wk__storage_new(const char *op, wk_device *dev, wk_dtype dt, int64_t numel) {
    size_t nbytes;
    if (wk__dtype_bytes_for(op, dt, numel, &nbytes) != WK_OK) return NULL;
    wk_storage *s = header(op, dev, dt, nbytes);
    if (!s) return NULL;
    if (dev->be->alloc(dev, s->nbytes, &s->buf) != WK_OK) {
        wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes for %lld %s elements on %s", s->nbytes, (long long)numel,
                wk_dtype_name(dt), dev->name);
        free(s);
        return NULL;
    }
    return s;
}

wk_storage *wk__storage_wrap(const char *op, wk_device *dev, wk_dtype dt, void *buf, size_t nbytes,
                             wk_release_fn release, void *ctx, bool read_only) {
    if (!wk_dtype_info_of(dt)) {
        wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt);
        return NULL;
    }
    if (!buf && nbytes) {
        wk__err(WK_ERR_ARG, op, "NULL data for %zu bytes", nbytes);
        return NULL;
    }
    wk_storage *s = header(op, dev, dt, nbytes);
    if (!s) return NULL;
    s->buf = buf;
    s->owner = WK_OWNER_EXTERNAL;
    s->release = release;
    s->release_ctx = ctx;
    s->read_only = read_only;
    return s;
}

void wk__storage_release(wk_storage *s) {
    if (!s) return;
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        switch (s->owner) {
        case WK_OWNER_BACKEND: s->dev->be->free(s->dev, s->buf, s->nbytes); break;
        case WK_OWNER_EXTERNAL:
            /* a GPU's memory (wk__from_device_blob) may still be read by
             * queued kernels: its owner may reuse it once release returns */
            if (s->release && s->dev->kind != WK_DEVICE_CPU) (void)s->dev->be->synchronize(s->dev);
            if (s->release) s->release(s->release_ctx, s->buf, s->nbytes);
            break;
        }
        free(s);
    }
}
