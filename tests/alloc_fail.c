/* The allocation-failure harness (alloc_fail.h).
 *
 * Allocations counted: every wk__cpu_alloc (through the allocator's fail
 * hook, so a cache hit can fail too) and every malloc / calloc / realloc /
 * posix_memalign / aligned_alloc / strdup that the executable's objects
 * make (wick_static's included), and every fopen / opendir (each allocates
 * its stream) and mmap (failed as ENOMEM): the test is linked with -Wl,--wrap=...
 * (tests/CMakeLists.txt), which sends those references to the __wrap_
 * functions below. Allocations inside other libraries (cmocka, zlib, libc's
 * own beyond those two) are not seen. */
#include "alloc_fail.h"

#include "cpu/memory/cpu_alloc.h"

#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the counting wrappers ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
FILE *__real_fopen(const char *path, const char *mode);
DIR *__real_opendir(const char *path);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
FILE *__wrap_fopen(const char *path, const char *mode);
DIR *__wrap_opendir(const char *path);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

static atomic_int g_active;      /* count (and maybe fail) only while the program runs */
static atomic_long g_count;      /* allocations seen in this run */
static atomic_long g_fail_at;    /* which one fails (0: none) */
static atomic_int g_failed;      /* it happened */
static atomic_long g_live;       /* host blocks from the wrappers not yet freed */

static void *g_site[16]; /* the call stack of the failed allocation, for messages */
static int g_nsite;

/* True when this allocation is the one to fail. */
static int inject(void) {
    if (!atomic_load(&g_active)) return 0;
    long c = atomic_fetch_add(&g_count, 1) + 1;
    if (c != atomic_load(&g_fail_at)) return 0;
    atomic_store(&g_failed, 1);
    g_nsite = backtrace(g_site, 16);
    return 1;
}

/* Print where the failed allocation was made (addresses: addr2line -e). */
static void print_site(void) {
    fprintf(stderr, "the failed allocation was made at:\n");
    backtrace_symbols_fd(g_site, g_nsite, 2);
}

static int cpu_hook(size_t nbytes) {
    (void)nbytes;
    return inject();
}

static void *live(void *p) {
    if (p) atomic_fetch_add(&g_live, 1);
    return p;
}

void *__wrap_malloc(size_t n) { return inject() ? NULL : live(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t m) { return inject() ? NULL : live(__real_calloc(n, m)); }
void *__wrap_aligned_alloc(size_t align, size_t n) { return inject() ? NULL : live(__real_aligned_alloc(align, n)); }
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    if (inject()) return 12; /* ENOMEM */
    int rc = __real_posix_memalign(p, align, n);
    if (rc == 0) live(*p);
    return rc;
}
void *__wrap_realloc(void *p, size_t n) {
    if (inject()) return NULL; /* p stays valid, as with a real failure */
    void *q = __real_realloc(p, n);
    if (!p) live(q);
    return q;
}
char *__wrap_strdup(const char *s) { return inject() ? NULL : live(__real_strdup(s)); }
/* fopen and opendir allocate their streams inside libc: failing them as
 * ENOMEM stands for those allocations (their blocks are not counted live) */
FILE *__wrap_fopen(const char *path, const char *mode) {
    if (inject()) return errno = ENOMEM, NULL;
    return __real_fopen(path, mode);
}
DIR *__wrap_opendir(const char *path) {
    if (inject()) return errno = ENOMEM, NULL;
    return __real_opendir(path);
}
/* a mapping (a model file's, or the CPU allocator's for big blocks) that
 * fails as ENOMEM: the address space or the map count ran out */
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (inject()) return errno = ENOMEM, MAP_FAILED;
    return __real_mmap(addr, len, prot, flags, fd, off);
}
void __wrap_free(void *p) {
    if (p) atomic_fetch_sub(&g_live, 1);
    __real_free(p);
}

/* ---- the trace ---- */

static double g_buf[AF_BIG];

int af_fail_with(af_trace *tr, wk_status st) {
    tr->st = st == WK_OK ? WK_ERR_INTERNAL : st;
    snprintf(tr->msg, sizeof tr->msg, "%s", wk_last_error());
    return 0;
}

int af_step_t(af_trace *tr, wk_tensor *t) {
    if (!t) return af_fail_with(tr, wk_last_status());
    if (tr->n == AF_MAXSTEPS) return af_fail_with(tr, WK_ERR_INTERNAL);
    int64_t n = wk_numel(t);
    double s = 0;
    wk_dtype dt = wk_tensor_dtype(t);
    if (wk_dtype_is_quantized(dt)) {
        const wk_dtype_info *di = wk_dtype_info_of(dt);
        size_t nb = (size_t)(n / di->block_elems * di->block_bytes);
        if (nb > sizeof g_buf) return af_fail_with(tr, WK_ERR_INTERNAL);
        wk_status st = wk_to_host(t, g_buf, nb);
        if (st != WK_OK) return af_fail_with(tr, st);
        const unsigned char *b = (const unsigned char *)g_buf;
        for (size_t i = 0; i < nb; i++) s += (double)b[i] * (double)(1 + i % 7);
    } else {
        if (n > AF_BIG) return af_fail_with(tr, WK_ERR_INTERNAL);
        wk_status st = wk_to_host_f64(t, g_buf, (size_t)n);
        if (st != WK_OK) return af_fail_with(tr, st);
        for (int64_t i = 0; i < n; i++) s += g_buf[i] * (double)(1 + i % 7);
    }
    tr->sum[tr->n++] = s;
    return 1;
}

int af_step_s(af_trace *tr, wk_status st) {
    if (st != WK_OK) return af_fail_with(tr, st);
    return af_step_v(tr, 0);
}

int af_step_v(af_trace *tr, double v) {
    if (tr->n == AF_MAXSTEPS) return af_fail_with(tr, WK_ERR_INTERNAL);
    tr->sum[tr->n++] = v;
    return 1;
}

/* ---- the runs ---- */

static size_t in_use(void) {
    wk_cpu_mem_stats s;
    wk_cpu_mem_stats_get(&s);
    return s.bytes_in_use;
}

typedef struct {
    long allocs;     /* allocations counted */
    int failed;      /* the chosen one happened */
} run_info;

static run_info run(af_program prog, long fail_at, af_trace *tr) {
    wk_cpu_cache_release(); /* the same cache state every run */
    atomic_store(&g_count, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_fail_at, fail_at);
    atomic_store(&g_active, 1);
    memset(tr, 0, sizeof *tr);
    wk_clear_error();
    prog(tr);
    atomic_store(&g_active, 0);
    wk_cpu_cache_release(); /* cached blocks are not leaks: return them before counting */
    run_info ri = {atomic_load(&g_count), atomic_load(&g_failed)};
    return ri;
}

af_result af_fail_each(const char *name, af_program prog) {
    g_nsite = backtrace(g_site, 16); /* loads what backtrace needs before any run */
    wk__cpu_alloc_set_fail_hook(cpu_hook);
    static af_trace ref, tr;
    run(prog, 0, &ref);
    if (ref.st != WK_OK) fail_msg("%s: clean run failed at call %d: %s", name, ref.n + 1, ref.msg);
    size_t used0 = in_use();
    long live0 = atomic_load(&g_live);
    run_info ri = run(prog, 0, &ref);
    assert_int_equal(ref.st, WK_OK);
    assert_int_equal(in_use(), used0);
    assert_int_equal(atomic_load(&g_live), live0);
    af_result res = {.calls = ref.n, .allocs = ri.allocs};
    long K = ri.allocs;
    print_message("%s: %d calls, %ld allocations; failing each in turn\n", name, ref.n, K);

    const char *verbose = getenv("WICK_ALLOCFAIL_VERBOSE");
    for (long n = 1; n <= K; n++) {
        ri = run(prog, n, &tr);
        if (ri.failed && tr.st == WK_OK && tr.n == ref.n) {
            /* a kernel with a fallback for its scratch computed the result
             * another way: allowed, since every result is checked below */
            if (verbose) print_site();
            res.absorbed++;
        } else if (ri.failed) {
            /* it stopped at a call with WK_ERR_OOM */
            if (tr.st != WK_ERR_OOM) print_site();
            if (tr.st != WK_ERR_OOM)
                fail_msg("%s: allocation %ld of %ld failed: call %d gave %s (%s), not WK_ERR_OOM", name, n, K,
                         tr.n + 1, wk_status_name(tr.st), tr.msg);
            if (!tr.msg[0]) fail_msg("%s: allocation %ld: WK_ERR_OOM without a message", name, n);
            res.oom_runs++;
        } else {
            /* thread timing may make a run allocate less: then it must have run through */
            if (tr.st != WK_OK)
                fail_msg("%s: allocation %ld never failed, yet call %d gave %s", name, n, tr.n + 1, tr.msg);
            res.unreached++;
        }
        /* the calls before it gave the clean results */
        assert_true(tr.n <= ref.n);
        for (int i = 0; i < tr.n; i++)
            if (tr.sum[i] != ref.sum[i])
                fail_msg("%s: allocation %ld failed: call %d gave %.17g, the clean run %.17g", name, n, i + 1,
                         tr.sum[i], ref.sum[i]);
        /* and nothing stayed behind */
        if (in_use() != used0 || atomic_load(&g_live) != live0) print_site();
        if (in_use() != used0)
            fail_msg("%s: allocation %ld failed: %zu bytes of tensor memory left", name, n, in_use() - used0);
        if (atomic_load(&g_live) != live0)
            fail_msg("%s: allocation %ld failed: %ld host blocks left", name, n, atomic_load(&g_live) - live0);
    }
    print_message("%s: %ld runs stopped with WK_ERR_OOM, %ld absorbed the failure, %ld did not reach it\n", name,
                  res.oom_runs, res.absorbed, res.unreached);
    assert_int_equal(res.oom_runs + res.absorbed + res.unreached, K);

    /* the hook off: the program runs as before */
    wk__cpu_alloc_set_fail_hook(NULL);
    run(prog, 0, &tr);
    assert_int_equal(tr.st, WK_OK);
    assert_int_equal(tr.n, ref.n);
    return res;
}
