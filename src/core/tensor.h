/* Internal tensor and storage structures (opaque to users). */
#ifndef WICK_CORE_TENSOR_H
#define WICK_CORE_TENSOR_H
#include <stdatomic.h>
#include "backend.h"
#include "core/error.h"
#include "core/layout.h"

struct wk_device {
    wk_device_kind kind;
    int ordinal;
    uint64_t instance;          /* identity: two opens of one GPU differ */
    const wk_backend *be;
    const wk_backend_desc *desc; /* the registered backend that opened it */
    char name[48];
    /* the seed of the device's generator: written by the backend's set_seed
     * (under the backend's own lock), read by wk_device_seed */
    uint64_t seed;
    /* backend-private state (the CPU's generator, ...), owned by the backend */
    void *priv;
};

/* Reference-counted bytes on one device. */
typedef struct wk_storage {
    atomic_int refs;
    wk_device *dev;
    wk_dtype dtype;
    size_t nbytes;
    void *buf;
} wk_storage;

struct wk_tensor {
    atomic_int refs;
    uint64_t id;
    wk_storage *storage;
    wk_layout layout;
    wk_dtype dtype;
    /* scope bookkeeping: the slot that owns the creation reference, or -1 */
    int64_t scope_slot;
};

/* storage.c: storage lifetime */
wk_storage *wk__storage_new(const char *op, wk_device *dev, wk_dtype dt, int64_t numel);
void        wk__storage_release(wk_storage *s);

/* tensor.c: wrap a storage + layout into a tensor (takes the storage
 * reference; releases it on failure). Registers in the current scope. */
wk_tensor *wk__tensor_new(wk_storage *s, const wk_layout *l);
/* New tensor sharing t's storage with another layout (a view). */
wk_tensor *wk__tensor_view(const wk_tensor *t, const wk_layout *l);
/* Fresh contiguous tensor of a shape (contents undefined). */
wk_tensor *wk__tensor_alloc(const char *op, wk_device *dev, wk_dtype dt, const int64_t *shape, int rank);

/* Argument checks used by every op. They record the error and return false. */
bool wk__check_in(const char *op, const wk_tensor *t);
bool wk__check_same(const char *op, const wk_tensor *a, const wk_tensor *b);

static inline const wk_backend *wk__be(const wk_tensor *t) { return t->storage->dev->be; }
static inline wk_device *wk__dev(const wk_tensor *t) { return t->storage->dev; }

#endif
