/* Internal tensor and storage structures (opaque to users). */
#ifndef WICK_CORE_TENSOR_H
#define WICK_CORE_TENSOR_H
#include <stdatomic.h>
#include "tensor/backend.h"
#include "base/dtype.h"
#include "base/error.h"
#include "tensor/layout.h"

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

/* Who frees a storage's bytes when the last view lets go. */
typedef enum wk_storage_owner {
    WK_OWNER_BACKEND = 0,   /* allocated by dev->be->alloc, freed by dev->be->free */
    WK_OWNER_EXTERNAL       /* memory wick did not allocate: release(ctx, buf, nbytes), if set */
} wk_storage_owner;

/* Reference-counted bytes on one device. */
typedef struct wk_storage {
    atomic_int refs;
    wk_device *dev;
    wk_dtype dtype;
    size_t nbytes;
    void *buf;
    wk_storage_owner owner;
    wk_release_fn release;      /* WK_OWNER_EXTERNAL only; may be NULL */
    void *release_ctx;
    bool read_only;             /* in-place writes are refused (wk__check_writable) */
    /* bumped by every in-place write (wk__check_writable): autograd's saved
     * values remember it and refuse a backward over data written since */
    atomic_uint version;
} wk_storage;

struct wk_tensor {
    atomic_int refs;
    wk_dtype dtype;             /* beside refs: no padding, so the autograd field keeps the header at 184 bytes */
    uint64_t id;
    wk_storage *storage;
    wk_layout layout;
    /* scope bookkeeping: the slot that owns the creation reference, or -1 */
    int64_t scope_slot;
    /* autograd (src/autograd/node.h): the node that recorded this tensor, or
     * its leaf node; NULL when untracked. One reference owned. */
    struct wk__node *node;
};

/* What the tensor floor asks of the graph a tensor belongs to (the autograd
 * floor above it fills the table: src/autograd/node.c). The tensor floor
 * never names an autograd function; it calls through this table, and only
 * for a tensor whose node is set. The autograd floor stores wk__graph (a
 * release store, in the one function that allocates nodes) before it
 * attaches its first node, so wherever t->node != NULL, wk__graph is set:
 * the store is sequenced before the attach on the recording thread, and a
 * tensor reaches any other thread only through some synchronisation, which
 * carries the store with it. The pointer is _Atomic because two threads may
 * record their first nodes at once (both store the same value); loads are
 * acquire (free on x86, one ldar on arm64) and happen only for tracked
 * tensors, never on an untracked op's path. */
struct wk__node;
typedef struct wk__graph_ops {
    /* drop the tensor's one reference to its node (tensor.c, on free) */
    void (*release)(struct wk__node *n);
    /* the in-place write check's autograd half (write_check.c): false, with
     * the error recorded naming op, when t may not be written in place */
    bool (*check_inplace)(const char *op, const wk_tensor *t);
} wk__graph_ops;
extern const wk__graph_ops *_Atomic wk__graph;
static inline const wk__graph_ops *wk__graph_get(void) { return atomic_load_explicit(&wk__graph, memory_order_acquire); }

/* Storage version bump of every in-place write (write_check.c, the
 * optimizers): autograd's saved values compare against it. */
static inline void wk__storage_bump(wk_storage *s) { atomic_fetch_add_explicit(&s->version, 1, memory_order_relaxed); }

/* storage.c: storage lifetime */
wk_storage *wk__storage_new(const char *op, wk_device *dev, wk_dtype dt, int64_t numel);
void        wk__storage_release(wk_storage *s);
/* A storage over external memory (a caller's buffer, a mapped file): buf
 * holds nbytes and stays valid until release(ctx, buf, nbytes) is called,
 * once, when the last reference goes. On failure (NULL) release is NOT
 * called: the memory stays the caller's. */
wk_storage *wk__storage_wrap(const char *op, wk_device *dev, wk_dtype dt, void *buf, size_t nbytes,
                             wk_release_fn release, void *ctx, bool read_only);
/* blob.c: wk_from_blob's contract (wick.h) over memory of a GPU device dev
 * (CUDA) instead of host memory: data must be a device pointer of dev
 * (wick cannot check that); the layout checks are wk_from_blob's. The
 * producer's queued writes must be finished (or ordered before wick's
 * stream) before wick reads. release is called once the last view is gone
 * and after dev's queued work has finished (storage.c waits for the
 * device), so the owner may reuse the memory at once. Used by the Python
 * binding's DLPack import. */
wk_tensor *wk__from_device_blob(void *data, size_t nbytes, const int64_t *shape, int rank, const int64_t *strides,
                                wk_dtype dt, wk_device *dev, wk_release_fn release, void *ctx, unsigned flags);
/* cuda/runtime/cuda_device.c: the stream a CUDA device's work is queued on (its
 * cudaStream_t as an integer), for a producer that must order its own
 * writes before wick's reads (the DLPack stream protocol); 0 for any other
 * device and without the CUDA backend. */
uintptr_t wk__device_stream(const wk_device *dev);
/* The in-place write check (write_check.c): the view l of t's storage may be
 * written by op. Errors (naming op): read-only storage (WK_ERR_ARG); a layout
 * in which two indices reach one element, e.g. a stride-0 broadcast dim
 * (WK_ERR_ARG, PyTorch's "more than one element of the written-to tensor
 * refers to a single memory location"). */
wk_status   wk__check_writable(const char *op, const wk_tensor *t, const wk_layout *l);
/* True when two distinct indices of l reach the same element. */
bool        wk__layout_self_overlaps(const wk_layout *l);
/* indexing.c: how many scatter / scatter_add inputs (src or ids sharing the
 * destination's storage) were copied out before the write, process-wide;
 * tests read it to see that the alias path ran. */
uint64_t    wk__scatter_alias_copies(void);

/* tensor.c: wrap a storage + layout into a tensor (takes the storage
 * reference; releases it on failure). Registers in the current scope. */
wk_tensor *wk__tensor_new(wk_storage *s, const wk_layout *l);
/* New tensor sharing t's storage with another layout (a view). */
wk_tensor *wk__tensor_view(const wk_tensor *t, const wk_layout *l);
/* Fresh contiguous tensor of a shape (contents undefined). */
wk_tensor *wk__tensor_alloc(const char *op, wk_device *dev, wk_dtype dt, const int64_t *shape, int rank);

/* tensor.c: wk_scope_begin, and whether it opened a scope. false: it could
 * not (WK_ERR_OOM recorded; tensors made now would belong to the enclosing
 * scope or to nobody): the caller still calls wk_scope_end to balance it,
 * then fails. Every wick function that opens a scope uses this. */
bool wk__scope_open(void);
/* tensor.c, for tests: the next wk_scope_begin on this thread fails as if
 * growing the scope stack ran out of memory. */
void wk__scope_fail_next_begin(void);
/* The same for the k-th begin on this thread from now (k = 1: the next;
 * k <= 0: none), to reach the scopes nested inside a call. */
void wk__scope_fail_begin_number(int k);

/* Argument checks used by every op. They record the error and return false.
 * wk__check_in also refuses block-quantized dtypes (the default for any op);
 * the few ops defined on whole blocks (row views and gathers, copies,
 * to_dtype, quantize/dequantize, qmatmul) use wk__check_in_blocks and check
 * the block geometry themselves. */
bool wk__check_in(const char *op, const wk_tensor *t);
bool wk__check_in_blocks(const char *op, const wk_tensor *t);
/* A layout a block dtype can have: rank >= 1, the last dim contiguous and a
 * whole number of blocks, every row starting on a block boundary (true for
 * element dtypes). Records WK_ERR_SHAPE naming op otherwise. */
bool wk__check_block_layout(const char *op, wk_dtype dt, const wk_layout *l);
bool wk__check_same(const char *op, const wk_tensor *a, const wk_tensor *b);

static inline const wk_backend *wk__be(const wk_tensor *t) { return t->storage->dev->be; }
static inline wk_device *wk__dev(const wk_tensor *t) { return t->storage->dev; }

#endif
