/* The CUDA backend's buffer pool. Its bookkeeping is plain C with the device
 * allocator injected as callbacks, so it is unit-tested without a GPU
 * (tests/test_cuda.c); src/cuda/runtime/cuda_device.c plugs in cudaMalloc/cudaFree.
 *
 * Size classes: a request of n bytes is rounded up to a multiple of
 * 2^(floor(log2 n) - 3) (32 bytes at least), so a block never wastes more
 * than 1/8 of a request of 256 bytes or more (32 bytes below that), and each
 * power-of-two octave holds 8 classes - not the power-of-two rounding of
 * candle's Metal pool (seed 002), which wastes up to half.
 *
 * Reuse is stream-ordered: one device has one stream and every op queues on
 * it, so a block freed by the host while queued work still reads it may be
 * handed to LATER work at once - the stream runs that work after the earlier
 * work. No event per block is needed. Cached blocks are returned to the
 * device only after `sync` (a wait for the stream) so no queued work can
 * still use them.
 *
 * Allocation failure: the pool releases its cache and retries once; if that
 * fails too it returns WK_ERR_OOM and stays usable. Thread-safe (one mutex). */
#ifndef WICK_CUDA_POOL_H
#define WICK_CUDA_POOL_H
#include <stddef.h>
#include <stdint.h>
#include "wick/wick.h"

/* Device allocator: 0 on success (*ptr set), nonzero on failure. */
typedef int (*wk_cupool_alloc_fn)(void *ctx, size_t nbytes, void **ptr);
typedef void (*wk_cupool_free_fn)(void *ctx, void *ptr, size_t nbytes);
/* Wait until no queued work can use a freed block (may be NULL). */
typedef void (*wk_cupool_sync_fn)(void *ctx);

typedef struct wk_cupool_stats {
    size_t bytes_in_use;   /* live blocks, by class size */
    size_t bytes_cached;   /* freed blocks kept for reuse */
    size_t peak_in_use;    /* highest bytes_in_use */
    uint64_t hits;         /* allocations served from the cache */
    uint64_t misses;       /* allocations that went to the device */
    uint64_t failures;     /* device allocations that failed (before a retry) */
} wk_cupool_stats;

typedef struct wk_cupool wk_cupool;

/* NULL when out of host memory. */
wk_cupool *wk__cupool_new(wk_cupool_alloc_fn alloc, wk_cupool_free_fn free_fn, wk_cupool_sync_fn sync, void *ctx);
/* Returns every cached block; blocks still in use are the caller's. */
void       wk__cupool_destroy(wk_cupool *p);
/* The class (bytes actually reserved) for a request; 0 if it cannot be
 * represented (n > SIZE_MAX / 2). Requests of 0 bytes get the smallest class. */
size_t     wk__cupool_class_size(size_t n);
/* WK_OK and *ptr, or WK_ERR_OOM (nothing recorded: the caller names the op). */
wk_status  wk__cupool_alloc(wk_cupool *p, size_t nbytes, void **ptr);
/* Back into the cache; nbytes is the size that was requested. */
void       wk__cupool_free(wk_cupool *p, void *ptr, size_t nbytes);
/* Return every cached block to the device (after sync); returns the bytes released. */
size_t     wk__cupool_release(wk_cupool *p);
void       wk__cupool_stats(wk_cupool *p, wk_cupool_stats *out);

#endif
