/* CPU buffer allocator with a size-bucketed cache of freed buffers (see
 * cpu_alloc.h), and the public wk_cpu_mem_stats_get / wk_cpu_cache_release /
 * wk_cpu_cache_set_limit.
 *
 *  - Size classes: <= 64 bytes -> 64; otherwise, for 2^k < n <= 2^(k+1), n is
 *    rounded up to a multiple of 2^(k-3) (8 classes per power of two, waste
 *    < 1/8). Each class has a LIFO free list threaded through the cached
 *    blocks themselves (the first word holds the next pointer), guarded by
 *    one mutex; the system allocator is called outside the lock.
 *  - Blocks below 256 KiB come from posix_memalign (64-byte aligned). Classes
 *    of >= 256 KiB are mmap'ed and munmap'ed when released or evicted. Why:
 *    glibc raises its mmap threshold to the size of each mmap'ed chunk it
 *    frees (up to 32 MiB), after which such sizes come from its heap, and
 *    freed heap memory stays resident: in a create/free loop of mixed sizes
 *    RSS ran 150-470 MiB above in-use + cached, so WICK_CPU_CACHE_MB did not
 *    bound what the process held. Classes >= 2 MiB are 2 MiB aligned (the
 *    mapping is over-reserved by 2 MiB and the ends unmapped) and
 *    madvise(MADV_HUGEPAGE)d (failure is ignored). Under AddressSanitizer
 *    every class comes from posix_memalign instead, so ASan's redzones and
 *    LeakSanitizer cover large buffers too (RSS there is ASan's business).
 *  - wk_cpu_cache_release also asks glibc (malloc_trim) to hand back the
 *    free pages of its heap, which the small classes leave behind.
 *  - wk__cpu_alloc_set_fail_hook (tests only) fails chosen allocations.
 *  - A freed block is cached if the cache stays within the limit
 *    (WICK_CPU_CACHE_MB, default 1024 MiB; 0 caches nothing), else returned
 *    to the system. Lowering the limit evicts the largest blocks first.
 *  - Statistics count class sizes (the bytes actually held), not the sizes
 *    requested: bytes_in_use is the sum of the class sizes of live blocks.
 *  - Under AddressSanitizer cached blocks are poisoned (all but the link
 *    word), so a use after wk__cpu_free is still reported although the block
 *    is not returned to the system; cached blocks stay reachable from the
 *    static free lists, so LeakSanitizer does not report them at exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, pthread_setname_np, MADV_HUGEPAGE */
#endif
#include "cpu/memory/cpu_alloc.h"
#include "base/env.h"

#include "wick/wick.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

#if defined(__SANITIZE_ADDRESS__)
#define WK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WK_ASAN 1
#endif
#endif
#ifdef WK_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define MIN_CLASS ((size_t)64)
#define HUGE_SIZE ((size_t)2 << 20)
#define MAP_SIZE ((size_t)256 << 10) /* classes from here up are mmap'ed */
#define NBUCKETS (1 + 8 * (64 - 6))
#define DEFAULT_LIMIT_MB 1024

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_free[NBUCKETS];
static size_t g_in_use, g_cached, g_peak, g_limit;
static uint64_t g_hits, g_misses;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic(wk__cpu_alloc_fail_fn) g_fail_hook;

static void init_limit(void) {
    size_t limit = (size_t)DEFAULT_LIMIT_MB << 20;
    int64_t mb; /* parsed and range-checked ([0, 2^40]) by base/env.c */
    if (wk__env_get(WK_ENV_CPU_CACHE_MB, &mb) && (uint64_t)mb <= (uint64_t)(SIZE_MAX >> 20)) limit = (size_t)mb << 20;
    g_limit = limit;
}

static inline void init(void) { pthread_once(&g_once, init_limit); }

/* Bucket index and class size for n bytes; -1 if n is too large. */
static int size_class(size_t n, size_t *csize) {
    if (n <= MIN_CLASS) {
        *csize = MIN_CLASS;
        return 0;
    }
    if (n > (SIZE_MAX >> 1)) return -1;
    unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1) */
    size_t step = (size_t)1 << (k - 3);
    size_t c = (n + step - 1) & ~(step - 1);
    *csize = c;
    int j = (int)((c - ((size_t)1 << k)) >> (k - 3)); /* 1..8 */
    return 1 + (int)(k - 6) * 8 + (j - 1);
}

#ifdef WK_ASAN
static int mapped(size_t cs) { return (void)cs, 0; }
#else
static int mapped(size_t cs) { return cs >= MAP_SIZE; }
#endif

static void advise_huge(void *p, size_t cs) {
#ifdef MADV_HUGEPAGE
    if (cs >= HUGE_SIZE) {
        int rc = madvise(p, cs & ~(HUGE_SIZE - 1), MADV_HUGEPAGE);
        (void)rc; /* only a hint: THP may be disabled */
    }
#else
    (void)p, (void)cs;
#endif
}

/* A private anonymous mapping of cs bytes (class sizes from MAP_SIZE up are
 * multiples of 32 KiB, hence of the page); from 2 MiB up it starts on a
 * 2 MiB boundary: 2 MiB more is reserved and the unaligned ends unmapped. */
static void *map_block(size_t cs) {
    size_t align = cs >= HUGE_SIZE ? HUGE_SIZE : 0;
    size_t len = cs + align;
    if (len < cs) return NULL;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (!align) return m;
    uintptr_t a = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
    size_t head = (size_t)(a - (uintptr_t)m), tail = len - head - cs;
    if (head) munmap(m, head);
    if (tail) munmap((char *)a + cs, tail);
    return (void *)a;
}

static void *sys_alloc(size_t cs) {
    void *p = NULL;
    if (mapped(cs)) {
        p = map_block(cs);
    } else {
        size_t align = cs >= HUGE_SIZE ? HUGE_SIZE : MIN_CLASS;
        if (posix_memalign(&p, align, cs) != 0) p = NULL;
    }
    if (p) advise_huge(p, cs);
    return p;
}

static void sys_free(void *p, size_t cs) {
    UNPOISON(p, cs);
    if (mapped(cs)) munmap(p, cs);
    else free(p);
}

void wk__cpu_alloc_set_fail_hook(wk__cpu_alloc_fail_fn fn) {
    atomic_store_explicit(&g_fail_hook, fn, memory_order_release);
}

/* Push/pop on a free list; called with g_mu held. */
static void push(int b, void *p, size_t cs) {
    *(void **)p = g_free[b];
    g_free[b] = p;
    /* the link word stays readable: LeakSanitizer does not follow pointers
     * stored in poisoned memory, so the rest of the chain would look leaked */
    POISON((char *)p + sizeof(void *), cs - sizeof(void *));
}

static void *pop(int b, size_t cs) {
    void *p = g_free[b];
    if (!p) return NULL;
    UNPOISON(p, cs);
    g_free[b] = *(void **)p;
    return p;
}

void *wk__cpu_alloc(size_t nbytes) {
    wk__cpu_alloc_fail_fn hook = atomic_load_explicit(&g_fail_hook, memory_order_acquire);
    if (hook && hook(nbytes)) return NULL;
    init();
    size_t cs;
    int b = size_class(nbytes, &cs);
    if (b < 0) return NULL;
    pthread_mutex_lock(&g_mu);
    void *p = pop(b, cs);
    if (p) {
        g_cached -= cs;
        g_hits++;
    } else {
        g_misses++;
    }
    g_in_use += cs;
    if (g_in_use > g_peak) g_peak = g_in_use;
    pthread_mutex_unlock(&g_mu);
    if (!p) {
        p = sys_alloc(cs);
        if (!p) {
            pthread_mutex_lock(&g_mu);
            g_in_use -= cs;
            pthread_mutex_unlock(&g_mu);
        }
    }
    return p;
}

void wk__cpu_free(void *p, size_t nbytes) {
    if (!p) return;
    init();
    size_t cs;
    int b = size_class(nbytes, &cs);
    if (b < 0) { /* cannot come from wk__cpu_alloc */
        free(p);
        return;
    }
    pthread_mutex_lock(&g_mu);
    g_in_use = g_in_use >= cs ? g_in_use - cs : 0;
    if (g_limit >= cs && g_cached <= g_limit - cs) {
        push(b, p, cs);
        g_cached += cs;
        p = NULL;
    }
    pthread_mutex_unlock(&g_mu);
    if (p) sys_free(p, cs);
}

/* Size of the blocks in bucket b. */
static size_t bucket_size(int b) {
    if (b == 0) return MIN_CLASS;
    int k = (b - 1) / 8 + 6, j = (b - 1) % 8 + 1;
    return ((size_t)1 << k) + (size_t)j * ((size_t)1 << (k - 3));
}

/* Detach blocks (largest first) until at most `keep` bytes stay cached;
 * called with g_mu held. Returns a chain (through the first word) to free. */
static void *evict_to(size_t keep) {
    void *chain = NULL;
    for (int b = NBUCKETS - 1; b >= 0 && g_cached > keep; b--) {
        size_t cs = bucket_size(b);
        void *p;
        while (g_cached > keep && (p = pop(b, cs)) != NULL) {
            g_cached -= cs;
            /* p is unpoisoned: chain it as (next, size) for freeing outside the lock */
            ((void **)p)[0] = chain;
            ((size_t *)p)[1] = cs;
            chain = p;
        }
    }
    return chain;
}

static void free_chain(void *chain) {
    while (chain) {
        void *next = ((void **)chain)[0];
        size_t cs = ((size_t *)chain)[1];
        sys_free(chain, cs);
        chain = next;
    }
}

void wk_cpu_mem_stats_get(wk_cpu_mem_stats *out) {
    if (!out) return;
    init();
    pthread_mutex_lock(&g_mu);
    out->bytes_in_use = g_in_use;
    out->bytes_cached = g_cached;
    out->peak_in_use = g_peak;
    out->cache_limit = g_limit;
    out->hits = g_hits;
    out->misses = g_misses;
    pthread_mutex_unlock(&g_mu);
}

void wk_cpu_cache_release(void) {
    init();
    pthread_mutex_lock(&g_mu);
    void *chain = evict_to(0);
    pthread_mutex_unlock(&g_mu);
    free_chain(chain);
#ifdef __GLIBC__
    malloc_trim(0); /* free pages inside glibc's heap (small classes, headers) go back too */
#endif
}

wk_status wk_cpu_cache_set_limit(size_t bytes) {
    init();
    pthread_mutex_lock(&g_mu);
    g_limit = bytes;
    void *chain = evict_to(bytes);
    pthread_mutex_unlock(&g_mu);
    free_chain(chain);
    return WK_OK;
}
