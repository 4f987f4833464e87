/* The CPU buffer cache (src/cpu/memory/cpu_alloc.c): size classes and reuse (the
 * hit counter rises), alignment (64 bytes; 2 MiB from 2 MiB up), the limit
 * (0 caches nothing; lowering it evicts), wk_cpu_cache_release, the
 * statistics, many threads at once, WICK_CPU_CACHE_MB parsing (in a child
 * process of this test binary), large blocks leaving the resident set when
 * released or evicted, and the allocation-failure hook. */
#include "testutil.h"

#include "cpu/memory/cpu_alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static wk_cpu_mem_stats stats(void) {
    wk_cpu_mem_stats s;
    memset(&s, 0xff, sizeof s);
    wk_cpu_mem_stats_get(&s);
    return s;
}

/* The class of n as the allocator documents it. */
static size_t class_of(size_t n) {
    if (n <= 64) return 64;
    size_t p = 1;
    while (p < n - 1 && p * 2 <= n - 1) p *= 2; /* 2^k <= n-1 */
    size_t step = p / 8;
    return (n + step - 1) / step * step;
}

static void test_reuse_and_alignment(void **state) {
    (void)state;
    TU_STATUS_OK(wk_cpu_cache_set_limit(1024 * MiB));
    wk_cpu_cache_release();
    static const size_t sizes[] = {0, 1, 63, 64, 65, 100, 127, 128, 129, 1000, 4096, 4097, 100000,
                                   2 * MiB - 1, 2 * MiB, 2 * MiB + 1, 10 * MiB, 33333333};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        wk_cpu_mem_stats s0 = stats();
        unsigned char *p = wk__cpu_alloc(n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        if (n >= 2 * MiB) assert_int_equal((uintptr_t)p % (2 * MiB), 0);
        memset(p, 0x5a, n);
        wk_cpu_mem_stats s1 = stats();
        assert_int_equal(s1.bytes_in_use, s0.bytes_in_use + class_of(n));
        assert_true(s1.peak_in_use >= s1.bytes_in_use);
        wk__cpu_free(p, n);
        wk_cpu_mem_stats s2 = stats();
        assert_int_equal(s2.bytes_in_use, s0.bytes_in_use);
        assert_int_equal(s2.bytes_cached, s1.bytes_cached + class_of(n));
        /* the same size (and any size of the same class) comes back from the cache */
        size_t m = n > 64 ? class_of(n) : 1;
        unsigned char *q = wk__cpu_alloc(m);
        wk_cpu_mem_stats s3 = stats();
        assert_ptr_equal(q, p);
        assert_int_equal(s3.hits, s2.hits + 1);
        assert_int_equal(s3.misses, s2.misses);
        memset(q, 1, m);
        wk__cpu_free(q, m);
    }
    /* 0 bytes: valid, distinct pointers */
    void *a = wk__cpu_alloc(0), *b = wk__cpu_alloc(0);
    assert_true(a && b && a != b);
    wk__cpu_free(a, 0);
    wk__cpu_free(b, 0);
    wk__cpu_free(NULL, 100); /* no-op */
    /* a too-large request fails cleanly */
    assert_null(wk__cpu_alloc(SIZE_MAX - 10));
    wk_cpu_cache_release();
}

static void test_release_and_limit(void **state) {
    (void)state;
    wk_cpu_mem_stats s0 = stats();
    assert_true(s0.cache_limit > 0); /* default 1024 MiB unless WICK_CPU_CACHE_MB says otherwise */
    void *p[10];
    for (int i = 0; i < 10; i++) p[i] = wk__cpu_alloc(3000 + (size_t)i * 5000);
    for (int i = 0; i < 10; i++) wk__cpu_free(p[i], 3000 + (size_t)i * 5000);
    assert_true(stats().bytes_cached > 0);
    wk_cpu_cache_release();
    wk_cpu_mem_stats s1 = stats();
    assert_int_equal(s1.bytes_cached, 0);
    /* after a release the next allocation is a miss */
    void *q = wk__cpu_alloc(3000);
    assert_int_equal(stats().misses, s1.misses + 1);
    wk__cpu_free(q, 3000);

    /* limit 0: nothing is cached, frees go straight back */
    TU_STATUS_OK(wk_cpu_cache_set_limit(0));
    assert_int_equal(stats().bytes_cached, 0);
    assert_int_equal(stats().cache_limit, 0);
    for (int i = 0; i < 5; i++) {
        void *r = wk__cpu_alloc(1000);
        wk__cpu_free(r, 1000);
        assert_int_equal(stats().bytes_cached, 0);
    }
    /* a small limit is respected */
    TU_STATUS_OK(wk_cpu_cache_set_limit(10000));
    for (int i = 0; i < 10; i++) p[i] = wk__cpu_alloc(3000);
    for (int i = 0; i < 10; i++) wk__cpu_free(p[i], 3000);
    wk_cpu_mem_stats s2 = stats();
    assert_true(s2.bytes_cached <= 10000);
    assert_true(s2.bytes_cached >= 10000 - class_of(3000)); /* as many as fit */
    /* lowering the limit evicts down to it */
    TU_STATUS_OK(wk_cpu_cache_set_limit(4000));
    assert_true(stats().bytes_cached <= 4000);
    TU_STATUS_OK(wk_cpu_cache_set_limit(s0.cache_limit));
    assert_int_equal(stats().cache_limit, s0.cache_limit);
    wk_cpu_cache_release();
    wk_cpu_mem_stats_get(NULL); /* no crash */
}

/* Peak and in-use follow live blocks. */
static void test_stats(void **state) {
    (void)state;
    wk_cpu_cache_release();
    wk_cpu_mem_stats s0 = stats();
    void *a = wk__cpu_alloc(MiB), *b = wk__cpu_alloc(3 * MiB);
    wk_cpu_mem_stats s1 = stats();
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use + class_of(MiB) + class_of(3 * MiB));
    assert_true(s1.peak_in_use >= s1.bytes_in_use);
    wk__cpu_free(a, MiB);
    wk__cpu_free(b, 3 * MiB);
    wk_cpu_mem_stats s2 = stats();
    assert_int_equal(s2.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(s2.peak_in_use, s1.peak_in_use);
    wk_cpu_cache_release();
}

static void *hammer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    enum { K = 16 };
    unsigned char *live[K] = {0};
    size_t sz[K] = {0};
    intptr_t bad = 0;
    for (int it = 0; it < 20000; it++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % K);
        if (live[k]) {
            unsigned char tag = (unsigned char)(k + 1 + (uintptr_t)arg);
            if (live[k][0] != tag || live[k][sz[k] - 1] != tag) bad++;
            wk__cpu_free(live[k], sz[k]);
            live[k] = NULL;
        } else {
            sz[k] = 1 + (seed >> 12) % 20000;
            live[k] = wk__cpu_alloc(sz[k]);
            if (!live[k]) {
                bad++;
                continue;
            }
            memset(live[k], (unsigned char)(k + 1 + (uintptr_t)arg), sz[k]);
        }
    }
    for (int k = 0; k < K; k++)
        if (live[k]) wk__cpu_free(live[k], sz[k]);
    return (void *)bad;
}

static void test_threads(void **state) {
    (void)state;
    wk_cpu_cache_release();
    wk_cpu_mem_stats s0 = stats();
    TU_STATUS_OK(wk_cpu_cache_set_limit(MiB)); /* some frees cached, some returned */
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, hammer, (void *)(i * 40)), 0);
    intptr_t bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (intptr_t)r;
    }
    assert_int_equal(bad, 0);
    wk_cpu_mem_stats s1 = stats();
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_true(s1.bytes_cached <= MiB);
    assert_true(s1.hits > s0.hits);
    TU_STATUS_OK(wk_cpu_cache_set_limit(s0.cache_limit));
    wk_cpu_cache_release();
}

/* Blocks left in the cache at exit (several in one class, chained through
 * each other) must not be reported by LeakSanitizer in sanitizer builds. */
static void test_cached_at_exit(void **state) {
    (void)state;
    void *p[6];
    for (int i = 0; i < 6; i++) p[i] = wk__cpu_alloc(200);
    for (int i = 0; i < 6; i++) wk__cpu_free(p[i], 200);
    void *big[3];
    for (int i = 0; i < 3; i++) big[i] = wk__cpu_alloc(3 * MiB);
    for (int i = 0; i < 3; i++) wk__cpu_free(big[i], 3 * MiB);
    assert_true(stats().bytes_cached >= 6 * class_of(200) + 3 * class_of(3 * MiB));
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Resident bytes of this process (/proc/self/statm, second field). */
static size_t rss(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    unsigned long size = 0, res = 0;
    assert_int_equal(fscanf(f, "%lu %lu", &size, &res), 2);
    fclose(f);
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* A big block leaves the resident set when the cache lets it go: on
 * wk_cpu_cache_release, and at once when it does not fit the limit. Under
 * ASan large blocks come from ASan's allocator (redzones, quarantine), so
 * RSS says nothing there. */
static void test_big_block_leaves_rss(void **state) {
    (void)state;
#ifdef UNDER_ASAN
    skip();
#endif
    wk_cpu_mem_stats s0 = stats();
    wk_cpu_cache_release();
    static const size_t sizes[] = {300 << 10, 3 * MiB, 64 * MiB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        size_t r0 = rss();
        unsigned char *p = wk__cpu_alloc(n);
        assert_non_null(p);
        memset(p, 0x77, n);
        size_t r1 = rss();
        assert_true(r1 >= r0 + n - n / 8);
        wk__cpu_free(p, n); /* cached: still resident */
        assert_true(rss() + n / 8 >= r1);
        wk_cpu_cache_release();
        size_t r2 = rss();
        if (r2 + n - n / 8 > r1) fail_msg("%zu bytes released: RSS %zu -> %zu", n, r1, r2);
    }
    /* a block that does not fit the limit goes back to the system on free */
    TU_STATUS_OK(wk_cpu_cache_set_limit(16 * MiB));
    size_t r0 = rss();
    unsigned char *p = wk__cpu_alloc(64 * MiB);
    assert_non_null(p);
    memset(p, 1, 64 * MiB);
    wk__cpu_free(p, 64 * MiB);
    assert_int_equal(stats().bytes_cached, 0);
    assert_true(rss() < r0 + 8 * MiB);
    TU_STATUS_OK(wk_cpu_cache_set_limit(s0.cache_limit));
}

/* In a create/free loop of mixed sizes with a small cache, what the process
 * holds stays within in_use + cached plus a little (glibc's heap used to
 * keep evicted multi-MiB blocks: hundreds of MiB over the counts). */
static void test_rss_bounded_by_counts(void **state) {
    (void)state;
#ifdef UNDER_ASAN
    skip();
#endif
    wk_cpu_mem_stats s0 = stats();
    wk_cpu_cache_release();
    TU_STATUS_OK(wk_cpu_cache_set_limit(32 * MiB));
    size_t base = rss();
    enum { K = 12 };
    unsigned char *live[K] = {0};
    size_t sz[K] = {0};
    unsigned seed = 12345;
    size_t worst = 0;
    for (int it = 0; it < 600; it++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % K);
        wk__cpu_free(live[k], sz[k]);
        seed = seed * 1103515245u + 12345u;
        sz[k] = ((size_t)1 << (12 + (seed >> 10) % 12)) + (seed >> 4) % 4096; /* 4 KiB .. 8 MiB */
        live[k] = wk__cpu_alloc(sz[k]);
        assert_non_null(live[k]);
        memset(live[k], it & 0xff, sz[k]);
        wk_cpu_mem_stats s = stats();
        size_t held = rss() - base, counted = s.bytes_in_use + s.bytes_cached;
        if (held > counted && held - counted > worst) worst = held - counted;
    }
    for (int k = 0; k < K; k++) wk__cpu_free(live[k], sz[k]);
    if (worst > 6 * MiB) fail_msg("RSS ran %zu KiB above in_use + cached", worst >> 10);
    wk_cpu_cache_release();
    assert_true(rss() < base + 8 * MiB);
    TU_STATUS_OK(wk_cpu_cache_set_limit(s0.cache_limit));
}

static size_t g_hook_calls, g_hook_last, g_hook_fail_at;
static int fail_hook(size_t nbytes) {
    g_hook_last = nbytes;
    return ++g_hook_calls == g_hook_fail_at;
}

/* The hook sees every request and fails exactly the one it picks, cache hit
 * or not, leaving the statistics as they were. */
static void test_fail_hook(void **state) {
    (void)state;
    void *warm = wk__cpu_alloc(5000);
    wk__cpu_free(warm, 5000); /* 5000 is now a cache hit */
    g_hook_calls = 0;
    g_hook_fail_at = 2;
    wk__cpu_alloc_set_fail_hook(fail_hook);
    void *a = wk__cpu_alloc(777);
    assert_non_null(a);
    assert_int_equal(g_hook_last, 777);
    wk_cpu_mem_stats s0 = stats();
    assert_null(wk__cpu_alloc(5000)); /* the 2nd: fails although cached */
    assert_int_equal(g_hook_last, 5000);
    wk_cpu_mem_stats s1 = stats();
    assert_int_equal(s1.bytes_in_use, s0.bytes_in_use);
    assert_int_equal(s1.bytes_cached, s0.bytes_cached);
    assert_int_equal(s1.hits, s0.hits);
    assert_int_equal(s1.misses, s0.misses);
    void *b = wk__cpu_alloc(5000); /* the 3rd succeeds, from the cache */
    assert_non_null(b);
    assert_int_equal(stats().hits, s1.hits + 1);
    assert_int_equal(g_hook_calls, 3);
    wk__cpu_alloc_set_fail_hook(NULL);
    void *c = wk__cpu_alloc(100);
    assert_non_null(c);
    assert_int_equal(g_hook_calls, 3); /* removed: not asked any more */
    wk__cpu_free(a, 777);
    wk__cpu_free(b, 5000);
    wk__cpu_free(c, 100);
}

static char g_self[4096];

/* Run this binary with WICK_CPU_CACHE_MB=value: the limit it reports, and
 * whether it warned. */
static size_t child_limit(const char *value, int *warned) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "WICK_CPU_CACHE_MB='%s' '%s' --print-limit 2>&1", value, g_self);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    size_t lim = (size_t)-1;
    *warned = 0;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "limit=", 6) == 0) lim = (size_t)strtoull(line + 6, NULL, 10);
        else if (strstr(line, "WICK_CPU_CACHE_MB")) *warned = 1;
    }
    assert_int_equal(pclose(p), 0);
    return lim;
}

static void test_env(void **state) {
    (void)state;
    if (!g_self[0]) skip();
    int w;
    assert_int_equal(child_limit("", &w), 1024 * MiB);
    assert_int_equal(w, 0);
    assert_int_equal(child_limit("16", &w), 16 * MiB);
    assert_int_equal(w, 0);
    assert_int_equal(child_limit("0", &w), 0);
    assert_int_equal(w, 0);
    static const char *bad[] = {"abc", "-3", "12MB", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(child_limit(bad[i], &w), 1024 * MiB);
        if (!w) fail_msg("WICK_CPU_CACHE_MB=%s: no warning", bad[i]);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print-limit") == 0) {
        wk_cpu_mem_stats s;
        wk_cpu_mem_stats_get(&s);
        printf("limit=%zu\n", s.cache_limit);
        /* with limit 0 nothing stays cached */
        void *p = wk__cpu_alloc(100);
        wk__cpu_free(p, 100);
        wk_cpu_mem_stats_get(&s);
        return s.cache_limit == 0 && s.bytes_cached != 0;
    }
    ssize_t len = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (len > 0) g_self[len] = 0;
    else g_self[0] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_alignment),
        cmocka_unit_test(test_release_and_limit),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_big_block_leaves_rss),
        cmocka_unit_test(test_rss_bounded_by_counts),
        cmocka_unit_test(test_fail_hook),
        cmocka_unit_test(test_cached_at_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
