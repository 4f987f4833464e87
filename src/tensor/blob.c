/* Tensors over memory wick did not allocate (wk_from_blob, and
 * wk__from_device_blob for a GPU's memory, e.g. DLPack imports): the storage
 * records the owner's release callback instead of a backend buffer, and a
 * read-only flag that every in-place write checks (write_check.c). */
#include "tensor/tensor.h"
#include <stdint.h>

/* The layout over [data, data + nbytes): shape, strides (NULL: row-major)
 * and offset 0; every reachable element must lie inside. */
static wk_status blob_layout(const char *op, size_t nbytes, const int64_t *shape, int rank, const int64_t *strides,
                             wk_dtype dt, wk_layout *l) {
    int64_t n;
    if (wk__check_shape(op, shape, rank, &n) != WK_OK) return wk_last_status();
    wk__layout_contiguous(l, shape, rank, 0);
    /* The strides of size-1 dims, and all strides of an empty view, are
     * never used to reach an element; the row-major ones are kept there so
     * that later views (narrow, unsqueeze) never do arithmetic on a huge
     * unchecked user value. */
    if (n == 0) return WK_OK;
    for (int i = 0; strides && i < rank; i++)
        if (shape[i] != 1) l->stride[i] = strides[i];
    /* highest element index reached, with overflow checks: user strides are
     * arbitrary int64 values */
    int64_t hi = 0;
    for (int i = 0; i < rank; i++) {
        int64_t s = l->stride[i];
        if (l->shape[i] == 1) continue;
        if (s < 0)
            return wk__err(WK_ERR_ARG, op, "stride %lld of dim %d is negative: the view would reach before data",
                           (long long)s, i);
        if (s > (INT64_MAX - hi) / (l->shape[i] - 1))
            return wk__err(WK_ERR_ARG, op, "stride %lld of dim %d reaches past the end of memory", (long long)s, i);
        hi += (l->shape[i] - 1) * s;
    }
    size_t need;
    if (hi == INT64_MAX || wk__dtype_info_bytes(wk_dtype_info_of(dt), hi + 1, &need) != WK_OK || need > nbytes) {
        char a[128], b[128];
        return wk__err(WK_ERR_ARG, op, "shape %s with strides %s of %s reaches element %lld, past the %zu bytes given",
                       wk__shape_str(l->shape, rank, a, sizeof a), wk__shape_str(l->stride, rank, b, sizeof b),
                       wk_dtype_name(dt), (long long)hi, nbytes);
    }
    return WK_OK;
}

/* Both entry points: wk_from_blob (host memory, the CPU device) and
 * wk__from_device_blob (a GPU's memory, that GPU's device). */
static wk_tensor *from_blob(const char *op, bool device_memory, void *data, size_t nbytes, const int64_t *shape,
                            int rank, const int64_t *strides, wk_dtype dt, wk_device *dev, wk_release_fn release,
                            void *ctx, unsigned flags) {
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!di) { wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt); return NULL; }
    if (!device_memory && dev->kind != WK_DEVICE_CPU) {
        wk__err(WK_ERR_DEVICE, op, "wraps host memory on the CPU device only, not %s (copy with wk_from_host)", dev->name);
        return NULL;
    }
    if (device_memory && dev->kind == WK_DEVICE_CPU) {
        wk__err(WK_ERR_DEVICE, op, "wraps a GPU's memory, not the CPU's (wk_from_blob wraps host memory)");
        return NULL;
    }
    if (flags & ~WK_BLOB_READ_ONLY) { wk__err(WK_ERR_ARG, op, "unknown flags 0x%x", flags & ~WK_BLOB_READ_ONLY); return NULL; }
    if (!data && nbytes) { wk__err(WK_ERR_ARG, op, "NULL data for %zu bytes", nbytes); return NULL; }
    if ((uintptr_t)data % di->align) {
        wk__err(WK_ERR_ARG, op, "data %p is not aligned to %u bytes as %s needs", data, (unsigned)di->align, di->name);
        return NULL;
    }
    if (strides && di->block_elems > 1) {
        wk__err(WK_ERR_ARG, op, "a %s blob is contiguous rows of whole blocks: pass NULL strides", di->name);
        return NULL;
    }
    wk_layout l;
    if (blob_layout(op, nbytes, shape, rank, strides, dt, &l) != WK_OK) return NULL;
    if (!wk__check_block_layout(op, dt, &l)) return NULL;
    /* The callback goes in only once the tensor exists: a failure before
     * that leaves the memory the caller's, as documented. */
    wk_storage *s = wk__storage_wrap(op, dev, dt, data, nbytes, NULL, NULL, (flags & WK_BLOB_READ_ONLY) != 0);
    if (!s) return NULL;
    wk_tensor *t = wk__tensor_new(s, &l);
    if (!t) return NULL;
    s->release = release;
    s->release_ctx = ctx;
    return t;
}

wk_tensor *wk_from_blob(void *data, size_t nbytes, const int64_t *shape, int rank, const int64_t *strides, wk_dtype dt,
                        wk_device *dev, wk_release_fn release, void *ctx, unsigned flags) {
    return from_blob("wk_from_blob", false, data, nbytes, shape, rank, strides, dt, dev, release, ctx, flags);
}

wk_tensor *wk__from_device_blob(void *data, size_t nbytes, const int64_t *shape, int rank, const int64_t *strides,
                                wk_dtype dt, wk_device *dev, wk_release_fn release, void *ctx, unsigned flags) {
    return from_blob("wk__from_device_blob", true, data, nbytes, shape, rank, strides, dt, dev, release, ctx, flags);
}

bool wk_is_read_only(const wk_tensor *t) { return t && t->storage->read_only; }
