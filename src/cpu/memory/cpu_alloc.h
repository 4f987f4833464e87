/* CPU buffer allocator with a size-bucketed cache of freed buffers.
 * Why: on these VMs first-touching a fresh 4 KiB page costs ~11 us, so an
 * allocating op on 64 MiB pays ~190 ms unless the buffer is reused.
 * Buckets: sizes are rounded up to a class with at most 1/8 waste (8 classes
 * per power of two, minimum 64 bytes); memory is 64-byte aligned; classes of
 * >= 256 KiB are mapped with mmap and unmapped when they leave the cache (so
 * the C library's heap never keeps them); classes of >= 2 MiB are 2 MiB
 * aligned and madvise(MADV_HUGEPAGE)d. The cache keeps at most `limit` bytes
 * (WICK_CPU_CACHE_MB, default 1024); beyond that freed buffers go back to
 * the system. Thread safe. */
#ifndef WICK_CPU_ALLOC_H
#define WICK_CPU_ALLOC_H
#include <stddef.h>

/* Returns NULL on failure (caller reports WK_ERR_OOM). nbytes 0 gives a
 * valid unique pointer. Contents are undefined. */
void *wk__cpu_alloc(size_t nbytes);
/* p must come from wk__cpu_alloc with the same nbytes. NULL is fine. */
void  wk__cpu_free(void *p, size_t nbytes);

/* Allocation-failure injection for tests: while a hook is set, every
 * wk__cpu_alloc first asks it, and returns NULL (before looking at the
 * cache, so the outcome does not depend on what is cached) when it returns
 * non-zero. NULL removes the hook. It is compiled into every build (a
 * WICK_TESTING variant would mean a second object library, i.e. compiling
 * src/ twice); the cost is one atomic (acquire) load per allocation, beside
 * the mutex the allocation takes anyway. The hook may be called from any
 * thread. */
typedef int (*wk__cpu_alloc_fail_fn)(size_t nbytes);
void  wk__cpu_alloc_set_fail_hook(wk__cpu_alloc_fail_fn fn);

#endif
