/* Storage lifetime. Bytes live on one device and are freed through its
 * backend when the last view lets go. */
#include "core/tensor.h"
#include <stdlib.h>

wk_storage *wk__storage_new(const char *op, wk_device *dev, wk_dtype dt, int64_t numel) {
    size_t es = wk_dtype_size(dt);
    if (!es) {
        wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt);
        return NULL;
    }
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / es) {
        wk__err(WK_ERR_OOM, op, "%lld elements of %s do not fit in memory", (long long)numel, wk_dtype_name(dt));
        return NULL;
    }
    wk_storage *s = malloc(sizeof *s);
    if (!s) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a storage header");
        return NULL;
    }
    s->nbytes = (size_t)numel * es;
    if (dev->be->alloc(dev, s->nbytes, &s->buf) != WK_OK) {
        wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes for %lld %s elements on %s", s->nbytes, (long long)numel,
                wk_dtype_name(dt), dev->name);
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->dev = dev;
    s->dtype = dt;
    return s;
}

void wk__storage_release(wk_storage *s) {
    if (!s) return;
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        s->dev->be->free(s->dev, s->buf, s->nbytes);
        free(s);
    }
}
