/* The CUDA buffer pool's bookkeeping (see cuda_pool.h). Pure C: built in
 * every configuration so its tests run on machines without CUDA. */
#include "cuda/memory/cuda_pool.h"
#include <pthread.h>
#include <stdlib.h>

#define WK_CUPOOL_MIN 32u     /* smallest class and the granule below 256 bytes */
#define WK_CUPOOL_BINS 512    /* 8 classes per octave, 64 octaves */

typedef struct bin {
    void **blocks;
    size_t count, cap;
} bin;

struct wk_cupool {
    pthread_mutex_t lock;
    wk_cupool_alloc_fn alloc;
    wk_cupool_free_fn free_fn;
    wk_cupool_sync_fn sync;
    void *ctx;
    wk_cupool_stats st;
    bin bins[WK_CUPOOL_BINS];
};

static int floor_log2(size_t n) {
    int k = 0;
    while (n >>= 1) k++;
    return k;
}

size_t wk__cupool_class_size(size_t n) {
    if (n > SIZE_MAX / 2) return 0;
    if (n <= 256) return n <= WK_CUPOOL_MIN ? WK_CUPOOL_MIN : (n + WK_CUPOOL_MIN - 1) / WK_CUPOOL_MIN * WK_CUPOOL_MIN;
    size_t g = (size_t)1 << (floor_log2(n) - 3);
    return (n + g - 1) / g * g;
}

/* Bin of a class size: 0..7 for 32..256, then 8 per octave. */
static size_t bin_of(size_t cls) {
    if (cls <= 256) return cls / WK_CUPOOL_MIN - 1;
    int k = floor_log2(cls);
    size_t j = (cls - ((size_t)1 << k)) >> (k - 3);
    return 8 + (size_t)(k - 8) * 8 + j;
}

wk_cupool *wk__cupool_new(wk_cupool_alloc_fn alloc, wk_cupool_free_fn free_fn, wk_cupool_sync_fn sync, void *ctx) {
    if (!alloc || !free_fn) return NULL;
    wk_cupool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->alloc = alloc;
    p->free_fn = free_fn;
    p->sync = sync;
    p->ctx = ctx;
    return p;
}

/* Caller holds the lock. */
static size_t release_locked(wk_cupool *p) {
    if (p->st.bytes_cached == 0) return 0;
    if (p->sync) p->sync(p->ctx);
    size_t released = 0;
    for (size_t b = 0; b < WK_CUPOOL_BINS; b++) {
        bin *bn = &p->bins[b];
        if (!bn->count) continue;
        /* every block of a bin has the bin's class size: recover it from the index */
        size_t cls;
        if (b < 8) cls = (b + 1) * WK_CUPOOL_MIN;
        else {
            int k = 8 + (int)((b - 8) / 8);
            cls = ((size_t)1 << k) + ((b - 8) % 8) * ((size_t)1 << (k - 3));
        }
        for (size_t i = 0; i < bn->count; i++) p->free_fn(p->ctx, bn->blocks[i], cls);
        released += cls * bn->count;
        bn->count = 0;
    }
    p->st.bytes_cached -= released;
    return released;
}

void wk__cupool_destroy(wk_cupool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    release_locked(p);
    pthread_mutex_unlock(&p->lock);
    for (size_t b = 0; b < WK_CUPOOL_BINS; b++) free(p->bins[b].blocks);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

wk_status wk__cupool_alloc(wk_cupool *p, size_t nbytes, void **ptr) {
    *ptr = NULL;
    size_t cls = wk__cupool_class_size(nbytes);
    if (!cls) return WK_ERR_OOM;
    bin *bn = &p->bins[bin_of(cls)];
    pthread_mutex_lock(&p->lock);
    wk_status st = WK_OK;
    if (bn->count) {
        *ptr = bn->blocks[--bn->count];
        p->st.bytes_cached -= cls;
        p->st.hits++;
    } else {
        p->st.misses++;
        if (p->alloc(p->ctx, cls, ptr) != 0 || !*ptr) {
            p->st.failures++;
            *ptr = NULL;
            /* give the cache back to the device and try once more */
            if (release_locked(p) == 0 || p->alloc(p->ctx, cls, ptr) != 0 || !*ptr) {
                *ptr = NULL;
                st = WK_ERR_OOM;
            }
        }
    }
    if (st == WK_OK) {
        p->st.bytes_in_use += cls;
        if (p->st.bytes_in_use > p->st.peak_in_use) p->st.peak_in_use = p->st.bytes_in_use;
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

void wk__cupool_free(wk_cupool *p, void *ptr, size_t nbytes) {
    if (!p || !ptr) return;
    size_t cls = wk__cupool_class_size(nbytes);
    bin *bn = &p->bins[bin_of(cls)];
    pthread_mutex_lock(&p->lock);
    p->st.bytes_in_use -= cls;
    if (bn->count == bn->cap) {
        size_t cap = bn->cap ? bn->cap * 2 : 8;
        void **nb = realloc(bn->blocks, cap * sizeof *nb);
        if (!nb) {
            /* no room to remember it: give it straight back (after the queued work) */
            if (p->sync) p->sync(p->ctx);
            p->free_fn(p->ctx, ptr, cls);
            pthread_mutex_unlock(&p->lock);
            return;
        }
        bn->blocks = nb;
        bn->cap = cap;
    }
    bn->blocks[bn->count++] = ptr;
    p->st.bytes_cached += cls;
    pthread_mutex_unlock(&p->lock);
}

size_t wk__cupool_release(wk_cupool *p) {
    if (!p) return 0;
    pthread_mutex_lock(&p->lock);
    size_t r = release_locked(p);
    pthread_mutex_unlock(&p->lock);
    return r;
}

void wk__cupool_stats(wk_cupool *p, wk_cupool_stats *out) {
    if (!p || !out) return;
    pthread_mutex_lock(&p->lock);
    *out = p->st;
    pthread_mutex_unlock(&p->lock);
}
