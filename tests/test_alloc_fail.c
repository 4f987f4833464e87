/* Allocation-failure injection: a small program touching most of wick
 * (creation, views, elementwise and broadcasting ops, reductions, a GEMM
 * that packs, conv2d, cat, index ops, sort, cumsum, casts, .npy and .npz
 * files, nested scopes with wk_keep, 2 pool threads) runs once counting the
 * allocations it makes (K), then once for every N = 1..K with exactly the
 * N-th allocation failing. Each run must stop at the first failing call with
 * WK_ERR_OOM, every call before it having given the same result as the
 * clean run (or, where a kernel has a fallback for its scratch buffer --
 * max_pool2d's and upsample_bilinear2d's row buffers -- run through with
 * every result identical), and leave nothing behind: the CPU allocator's bytes_in_use and
 * the count of live host blocks return to what they were (and, in the
 * sanitizer build, LeakSanitizer reports nothing at exit).
 *
 * Allocations counted: every wk__cpu_alloc (through the allocator's fail
 * hook, so a cache hit can fail too) and every malloc / calloc / realloc /
 * posix_memalign / aligned_alloc that wick_static's objects make: this
 * executable is linked with -Wl,--wrap=... (tests/CMakeLists.txt), which
 * sends those references to the __wrap_ functions below. Allocations inside
 * other libraries (libc's own, cmocka, zlib) are not seen. */
#include "testutil.h"

#include "cpu/cpu_alloc.h"

#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the counting wrappers ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
void __wrap_free(void *p);

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
void __wrap_free(void *p) {
    if (p) atomic_fetch_sub(&g_live, 1);
    __real_free(p);
}

/* ---- the program ---- */

#define MAXSTEPS 128
#define BIG (1 << 17) /* elements: above WK_PAR_MIN_ELEMS, so the pool threads work */

typedef struct {
    int n;                  /* calls that succeeded */
    double sum[MAXSTEPS];   /* a checksum of each result */
    wk_status st;           /* status of the call that failed (WK_OK if none) */
    char msg[256];          /* its message */
} trace;

static double g_buf[BIG];
static char g_npy[4096], g_npz[4096];

static int fail_with(trace *tr, wk_status st) {
    tr->st = st == WK_OK ? WK_ERR_INTERNAL : st; /* a NULL without a status is a bug too */
    snprintf(tr->msg, sizeof tr->msg, "%s", wk_last_error());
    return 0;
}

/* A tensor result: its elements read back (also a wick call that may fail)
 * and weighted by position, so a wrong order shows. */
static int step_t(trace *tr, wk_tensor *t) {
    if (!t) return fail_with(tr, wk_last_status());
    int64_t n = wk_numel(t);
    if (n > BIG || tr->n == MAXSTEPS) return fail_with(tr, WK_ERR_INTERNAL);
    wk_status st = wk_to_host_f64(t, g_buf, (size_t)n);
    if (st != WK_OK) return fail_with(tr, st);
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += g_buf[i] * (double)(1 + i % 7);
    tr->sum[tr->n++] = s;
    return 1;
}

static int step_s(trace *tr, wk_status st) {
    if (st != WK_OK) return fail_with(tr, st);
    if (tr->n == MAXSTEPS) return fail_with(tr, WK_ERR_INTERNAL);
    tr->sum[tr->n++] = 0;
    return 1;
}

#define T(var, expr)                          \
    do {                                      \
        var = (expr);                         \
        if (!step_t(tr, var)) goto done;      \
    } while (0)
#define S(expr)                               \
    do {                                      \
        if (!step_s(tr, (expr))) goto done;   \
    } while (0)

static void program(trace *tr) {
    memset(tr, 0, sizeof *tr);
    wk_device *cpu = wk_cpu();
    wk_tensor *kept = NULL, **arrs = NULL;
    char **names = NULL;
    int count = 0, inner = 0;
    wk_clear_error();
    wk_device_set_seed(cpu, 1234);
    /* a begin that cannot grow the scope stack records WK_ERR_OOM (it
     * returns nothing); its end below still balances it */
    wk_scope_begin();
    S(wk_last_status());
    wk_tensor *a, *r, *v, *e, *x, *ma, *mb, *mm, *cx, *cw, *cy, *c, *ids, *y, *gi, *g, *z, *sc, *sv = NULL, *si = NULL;
    wk_tensor *cs, *h, *big, *bs, *bc, *l, *t1, *t2, *p, *m, *tv = NULL, *ti = NULL, *parts[2] = {0};
    T(a, wk_arange(0, 24, 1, WK_F32, cpu));
    T(a, wk_reshape(a, (int64_t[]){2, 3, 4}, 3));
    T(r, wk_rand((int64_t[]){3, 4}, 2, -1, 1, WK_F32, cpu));
    /* views, then a copy of a strided one */
    T(v, wk_transpose(a, 0, 2));
    T(v, wk_narrow(v, 0, 1, 2));
    T(v, wk_permute(v, (int[]){2, 0, 1}, 3));
    T(v, wk_contiguous(v));
    /* elementwise, broadcasting binary, reduction */
    T(e, wk_exp(r));
    T(e, wk_mul(e, r));
    T(x, wk_add(a, r));
    T(x, wk_sum(x, (int[]){1}, 1, false));
    /* a GEMM that packs B (B a transposed view) on both threads */
    T(ma, wk_rand((int64_t[]){128, 96}, 2, -1, 1, WK_F32, cpu));
    T(mb, wk_rand((int64_t[]){96, 96}, 2, -1, 1, WK_F32, cpu));
    T(mb, wk_t(mb));
    T(mm, wk_matmul(ma, mb));
    T(mm, wk_to_dtype(mm, WK_F16));
    T(mm, wk_matmul(mm, wk_to_dtype(mb, WK_F16))); /* f16: widened copies + f32 scratch */
    T(cx, wk_rand((int64_t[]){1, 3, 12, 12}, 4, -1, 1, WK_F32, cpu));
    T(cw, wk_rand((int64_t[]){4, 3, 3, 3}, 4, -1, 1, WK_F32, cpu));
    T(cy, wk_conv2d(cx, cw, &(wk_conv_params){.padding = 1}));
    T(c, wk_narrow(a, 0, 1, 1));
    T(c, wk_cat((wk_tensor *[]){a, c, a}, 3, 0));
    /* index_select, gather, scatter */
    T(ids, wk_from_host((int64_t[]){3, 0, 1, 1}, 4 * sizeof(int64_t), (int64_t[]){4}, 1, WK_I64, cpu));
    T(y, wk_index_select(a, ids, 2));
    T(gi, wk_narrow(wk_broadcast_as(ids, (int64_t[]){2, 3, 4}, 3), 2, 1, 2));
    T(g, wk_gather(a, gi, 2));
    T(z, wk_zeros((int64_t[]){2, 3, 4}, 3, WK_F32, cpu));
    T(sc, wk_scatter(z, gi, g, 2));
    S(wk_sort(r, -1, false, &sv, &si));
    T(sv, sv);
    T(si, si);
    T(cs, wk_cumsum(a, 1));
    T(h, wk_to_dtype(r, WK_BF16));
    T(h, wk_to_dtype(h, WK_I32));
    /* more of the op surface: pooling, resampling, transposed and 1-d
     * convs, top-k, more reductions, joins, selections, paddings */
    T(p, wk_max_pool2d(cx, 2, 2, 2, 2, 0, 0));
    T(p, wk_avg_pool2d(cx, 3, 3, 1, 1, 1, 1, false));
    T(p, wk_upsample_bilinear2d(cx, 7, 9, false));
    T(p, wk_upsample_nearest2d(cx, 5, 20));
    T(p, wk_conv_transpose2d(cy, wk_narrow(cw, 1, 0, 2), &(wk_conv_params){.stride = 2}));
    T(p, wk_conv1d(wk_reshape(cx, (int64_t[]){1, 3, 144}, 3), wk_reshape(wk_narrow(cw, 3, 0, 1), (int64_t[]){4, 3, 3}, 3),
                   &(wk_conv_params){.dilation = 2}));
    S(wk_topk(wk_reshape(cx, (int64_t[]){3, 144}, 2), 5, 1, true, &tv, &ti));
    T(tv, tv);
    T(ti, ti);
    T(m, wk_var(cx, (int[]){2, 3}, 2, false, true));
    T(m, wk_max(cx, (int[]){1}, 1, true));
    T(m, wk_argmax(cx, -1, false));
    T(m, wk_log_sum_exp(e, (int[]){0}, 1, false));
    T(m, wk_prod(e, (int[]){1}, 1, true));
    S(wk_split(a, (int64_t[]){2, 2}, 2, 2, parts));
    T(m, wk_stack(parts, 2, 1));
    T(m, wk_where(wk_cmp_scalar(a, 10, WK_GT), a, wk_neg(a)));
    T(m, wk_masked_fill(a, wk_cmp(a, wk_full((int64_t[]){4}, 1, 5, WK_F32, cpu), WK_LT), -1));
    T(m, wk_embedding(ids, wk_reshape(a, (int64_t[]){6, 4}, 2)));
    T(m, wk_index_add(a, ids, wk_ones((int64_t[]){2, 3, 4}, 3, WK_F32, cpu), 2));
    T(m, wk_scatter_add(z, gi, g, 2));
    T(m, wk_repeat(r, (int64_t[]){2, 1, 3}, 3));
    T(m, wk_roll(a, -5, 2));
    T(m, wk_pad_with_same(wk_pad_with_zeros(r, 1, 2, 1), 0, 1, 3));
    T(m, wk_matmul(wk_to_dtype(wk_narrow(ma, 0, 0, 1), WK_BF16), wk_to_dtype(mb, WK_BF16))); /* bf16 row x matrix */
    T(m, wk_matmul(wk_to_dtype(ma, WK_BF16), wk_to_dtype(mb, WK_BF16)));
    T(m, wk_matmul(wk_to_dtype(ma, WK_F64), wk_to_dtype(mb, WK_F64)));
    /* a big vector: reduce, scan and sort on the pool */
    T(big, wk_rand((int64_t[]){BIG}, 1, -1, 1, WK_F32, cpu));
    T(bs, wk_sum(big, (int[]){0}, 1, true));
    T(bc, wk_cumsum(big, 0));
    T(bc, wk_argsort(wk_reshape(big, (int64_t[]){64, BIG / 64}, 2), 1, true));
    /* files */
    S(wk_npy_save(g_npy, c));
    T(l, wk_npy_load(g_npy, cpu));
    S(wk_npz_save(g_npz, (const char *const[]){"a", "cy"}, (wk_tensor *const[]){a, cy}, 2));
    S(wk_npz_load(g_npz, cpu, &names, &arrs, &count));
    if (count != 2) {
        fail_with(tr, WK_ERR_INTERNAL);
        goto done;
    }
    T(l, arrs[0]);
    T(l, arrs[1]);
    /* a nested scope: one result kept, the rest freed at its end */
    wk_scope_begin();
    inner = 1;
    S(wk_last_status());
    T(t1, wk_mul(a, a));
    T(t2, wk_sub(t1, wk_add(a, a)));
    kept = wk_keep(t2);
    wk_scope_end();
    inner = 0;
    T(kept, kept);
done:
    if (inner) wk_scope_end();
    wk_npz_free(names, arrs, count); /* before the scope ends: it drops the scope's references */
    wk_scope_end();
    wk_tensor_free(kept);
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

static run_info run(long fail_at, trace *tr) {
    wk_cpu_cache_release(); /* the same cache state every run */
    atomic_store(&g_count, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_fail_at, fail_at);
    atomic_store(&g_active, 1);
    program(tr);
    atomic_store(&g_active, 0);
    wk_cpu_cache_release(); /* cached blocks are not leaks: return them before counting */
    run_info ri = {atomic_load(&g_count), atomic_load(&g_failed)};
    return ri;
}

static void test_every_allocation_fails_cleanly(void **state) {
    (void)state;
    char dir[] = "/tmp/wick_allocfail_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(g_npy, sizeof g_npy, "%s/t.npy", dir);
    snprintf(g_npz, sizeof g_npz, "%s/t.npz", dir);
    TU_STATUS_OK(wk_set_num_threads(2));
    g_nsite = backtrace(g_site, 16); /* loads what backtrace needs before any run */
    wk__cpu_alloc_set_fail_hook(cpu_hook);

    /* the clean run (twice: the first starts the pool threads and any
     * once-only state, which then stays outside the counted runs) */
    static trace ref, tr;
    run(0, &ref);
    if (ref.st != WK_OK) fail_msg("clean run failed at call %d: %s", ref.n + 1, ref.msg);
    size_t used0 = in_use();
    long live0 = atomic_load(&g_live);
    run_info ri = run(0, &ref);
    assert_int_equal(ref.st, WK_OK);
    assert_int_equal(in_use(), used0);
    assert_int_equal(atomic_load(&g_live), live0);
    long K = ri.allocs;
    assert_true(K > 50);
    print_message("%d calls, %ld allocations; failing each in turn\n", ref.n, K);

    const char *verbose = getenv("WICK_ALLOCFAIL_VERBOSE");
    long oom_runs = 0, absorbed = 0, unreached = 0;
    for (long n = 1; n <= K; n++) {
        ri = run(n, &tr);
        if (ri.failed && tr.st == WK_OK && tr.n == ref.n) {
            /* a kernel with a fallback for its scratch (max_pool2d's row
             * buffer) computed the result another way: allowed, since every
             * result is checked against the clean run below */
            if (verbose) print_site();
            absorbed++;
        } else if (ri.failed) {
            /* it stopped at a call with WK_ERR_OOM */
            if (tr.st != WK_ERR_OOM) print_site();
            if (tr.st != WK_ERR_OOM)
                fail_msg("allocation %ld of %ld failed: call %d gave %s (%s), not WK_ERR_OOM", n, K, tr.n + 1,
                         wk_status_name(tr.st), tr.msg);
            if (!tr.msg[0]) fail_msg("allocation %ld: WK_ERR_OOM without a message", n);
            oom_runs++;
        } else {
            /* thread timing may make a run allocate less (it never did
             * here): then it must have run through */
            if (tr.st != WK_OK) fail_msg("allocation %ld never failed, yet call %d gave %s", n, tr.n + 1, tr.msg);
            unreached++;
        }
        /* the calls before it gave the clean results */
        assert_true(tr.n <= ref.n);
        for (int i = 0; i < tr.n; i++)
            if (tr.sum[i] != ref.sum[i])
                fail_msg("allocation %ld failed: call %d gave %.17g, the clean run %.17g", n, i + 1, tr.sum[i],
                         ref.sum[i]);
        /* and nothing stayed behind */
        if (in_use() != used0 || atomic_load(&g_live) != live0) print_site();
        if (in_use() != used0) fail_msg("allocation %ld failed: %zu bytes of tensor memory left", n, in_use() - used0);
        if (atomic_load(&g_live) != live0)
            fail_msg("allocation %ld failed: %ld host blocks left", n, atomic_load(&g_live) - live0);
    }
    print_message("%ld runs stopped with WK_ERR_OOM, %ld absorbed the failure, %ld did not reach it\n", oom_runs,
                  absorbed, unreached);
    assert_int_equal(oom_runs + absorbed + unreached, K);
    assert_true(absorbed <= 4); /* those two kernels, one buffer per piece, two pieces on two threads */
    assert_true(unreached <= K / 20);

    /* the hook off: the program runs as before */
    wk__cpu_alloc_set_fail_hook(NULL);
    run(0, &tr);
    assert_int_equal(tr.st, WK_OK);
    assert_int_equal(tr.n, ref.n);
    unlink(g_npy);
    unlink(g_npz);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
