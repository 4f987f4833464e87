/* The CPU thread pool (src/cpu/runtime/threadpool.c): every index covered exactly
 * once for many (n, grain, threads) combinations, tids and piece alignment,
 * the serial cases, nested regions, regions from several user threads at
 * once, fork(), wk_set_num_threads errors and WICK_NUM_THREADS parsing (in a
 * child process of this test binary). */
#include "testutil.h"

#include "cpu/runtime/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct cover_ctx {
    atomic_int *hits;
    int64_t n, grain;
    int nthreads;
    atomic_int calls;
    atomic_int bad_tid, bad_align, empty_calls;
    atomic_int tid_seen[64];
} cover_ctx;

static void cover_fn(void *c, int64_t b, int64_t e, int tid) {
    cover_ctx *x = c;
    atomic_fetch_add(&x->calls, 1);
    if (tid < 0 || tid >= x->nthreads) atomic_store(&x->bad_tid, 1);
    else if (tid < 64) atomic_fetch_add(&x->tid_seen[tid], 1);
    if (b % x->grain != 0 || b < 0 || e > x->n || b > e) atomic_store(&x->bad_align, 1);
    if (b == e) atomic_fetch_add(&x->empty_calls, 1);
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&x->hits[i], 1);
}

/* Run one region and check it; returns the number of calls of fn. */
static int run_cover(int64_t n, int64_t grain, int64_t min_par) {
    cover_ctx c;
    memset(&c, 0, sizeof c);
    c.hits = calloc((size_t)(n > 0 ? n : 1), sizeof(atomic_int));
    assert_non_null(c.hits);
    c.n = n;
    c.grain = grain < 1 ? 1 : grain;
    c.nthreads = wk_num_threads();
    wk__parallel_for(n, grain, min_par, cover_fn, &c);
    for (int64_t i = 0; i < n; i++)
        if (atomic_load(&c.hits[i]) != 1)
            fail_msg("n=%lld grain=%lld threads=%d: index %lld hit %d times", (long long)n, (long long)grain, c.nthreads,
                     (long long)i, atomic_load(&c.hits[i]));
    if (atomic_load(&c.bad_tid)) fail_msg("n=%lld grain=%lld: tid out of range", (long long)n, (long long)grain);
    if (atomic_load(&c.bad_align)) fail_msg("n=%lld grain=%lld: piece not grain-aligned", (long long)n, (long long)grain);
    int calls = atomic_load(&c.calls);
    if (calls > c.nthreads) fail_msg("n=%lld: %d pieces for %d threads", (long long)n, calls, c.nthreads);
    /* each tid is used by at most one piece */
    for (int t = 0; t < 64; t++) assert_true(atomic_load(&c.tid_seen[t]) <= 1);
    if (n > 0 && atomic_load(&c.empty_calls)) fail_msg("n=%lld: fn called with an empty range", (long long)n);
    free(c.hits);
    return calls;
}

static void test_coverage(void **state) {
    (void)state;
    int old = wk_num_threads();
    static const int64_t ns[] = {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 64, 100, 1000, 1023, 1025, 4097, 65536, 100003};
    static const int64_t gs[] = {0, 1, 2, 3, 7, 16, 64, 100, 1000, 4096, 1 << 20};
    for (int nt = 1; nt <= 6; nt++) {
        TU_STATUS_OK(wk_set_num_threads(nt));
        assert_int_equal(wk_num_threads(), nt);
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t b = 0; b < sizeof gs / sizeof gs[0]; b++) run_cover(ns[a], gs[b], 0);
        /* enough work for every thread: nt pieces */
        assert_int_equal(run_cover(1000, 1, 0), nt);
        /* below min_parallel: one call on the caller */
        assert_int_equal(run_cover(1000, 1, 1001), 1);
        /* n == 0: at most one (empty) call */
        assert_true(run_cover(0, 1, 0) <= 1);
        /* grain larger than n: one piece */
        assert_int_equal(run_cover(50, 64, 0), 1);
    }
    TU_STATUS_OK(wk_set_num_threads(old));
}

/* Many back-to-back regions (exercises the spin/sleep hand-off). */
static void test_many_regions(void **state) {
    (void)state;
    int old = wk_num_threads();
    TU_STATUS_OK(wk_set_num_threads(4));
    for (int r = 0; r < 3000; r++) run_cover(64 + r % 200, 1 + r % 5, 0);
    /* with gaps long enough for the workers to fall asleep */
    for (int r = 0; r < 20; r++) {
        usleep(1000 + (r % 3) * 1000);
        run_cover(5000, 8, 0);
    }
    TU_STATUS_OK(wk_set_num_threads(old));
}

typedef struct nest_ctx {
    atomic_int *ok;
    atomic_int inner_parallel;
} nest_ctx;

static void inner_fn(void *c, int64_t b, int64_t e, int tid) {
    atomic_int *cnt = c;
    if (tid != 0 || b != 0) atomic_store(&cnt[100], 1); /* nested calls run serially */
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&cnt[i], 1);
}

static void outer_fn(void *c, int64_t b, int64_t e, int tid) {
    (void)tid;
    nest_ctx *x = c;
    for (int64_t i = b; i < e; i++) {
        atomic_int cnt[101];
        for (int k = 0; k < 101; k++) atomic_init(&cnt[k], 0);
        wk__parallel_for(100, 1, 0, inner_fn, cnt);
        int good = !atomic_load(&cnt[100]);
        for (int k = 0; k < 100; k++) good &= atomic_load(&cnt[k]) == 1;
        if (good) atomic_fetch_add(&x->ok[i], 1);
    }
}

static void test_nested(void **state) {
    (void)state;
    int old = wk_num_threads();
    TU_STATUS_OK(wk_set_num_threads(3));
    atomic_int ok[300];
    for (int i = 0; i < 300; i++) atomic_init(&ok[i], 0);
    nest_ctx c = {ok, 0};
    wk__parallel_for(300, 1, 0, outer_fn, &c);
    for (int i = 0; i < 300; i++) assert_int_equal(atomic_load(&ok[i]), 1);
    TU_STATUS_OK(wk_set_num_threads(old));
}

static void *user_thread(void *arg) {
    intptr_t id = (intptr_t)arg;
    for (int r = 0; r < 300; r++) run_cover(500 + r + (int64_t)id * 7, 1 + (r + id) % 9, 0);
    return NULL;
}

/* Regions started from several application threads at once are serialized. */
static void test_concurrent_callers(void **state) {
    (void)state;
    int old = wk_num_threads();
    TU_STATUS_OK(wk_set_num_threads(3));
    pthread_t th[4];
    for (intptr_t i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, user_thread, (void *)i), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    TU_STATUS_OK(wk_set_num_threads(old));
}

/* A child of fork() has no workers: the pool must start afresh there. */
static void test_fork(void **state) {
    (void)state;
    int old = wk_num_threads();
    TU_STATUS_OK(wk_set_num_threads(3));
    run_cover(10000, 1, 0); /* the pool exists now */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a hang fails the test instead of blocking it */
        cover_ctx c;
        memset(&c, 0, sizeof c);
        c.hits = calloc(10000, sizeof(atomic_int));
        c.n = 10000;
        c.grain = 1;
        c.nthreads = 3;
        for (int r = 0; r < 50; r++) wk__parallel_for(10000, 1, 0, cover_fn, &c);
        int good = 1;
        for (int i = 0; i < 10000; i++) good &= atomic_load(&c.hits[i]) == 50;
        free(c.hits);
        _exit(good ? 0 : 3);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    TU_STATUS_OK(wk_set_num_threads(old));
}

static void test_set_num_threads_errors(void **state) {
    (void)state;
    int old = wk_num_threads();
    assert_true(old >= 1 && old <= 1024);
    static const int badv[] = {0, -1, -3, 1025, 1 << 30};
    for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
        wk_clear_error();
        assert_int_equal(wk_set_num_threads(badv[i]), WK_ERR_ARG);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        assert_true(strlen(wk_last_error()) > 0);
        assert_int_equal(wk_num_threads(), old);
    }
    wk_clear_error();
    TU_STATUS_OK(wk_set_num_threads(1024));
    assert_int_equal(wk_num_threads(), 1024);
    TU_STATUS_OK(wk_set_num_threads(1));
    run_cover(1000, 1, 0);
    TU_STATUS_OK(wk_set_num_threads(old));
}

/* Run this binary with WICK_NUM_THREADS=value; returns the thread count it
 * printed, and whether it printed a warning on stderr. */
static char g_self[4096];

static int child_threads(const char *value, int *warned) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "WICK_NUM_THREADS='%s' '%s' --print-threads 2>&1", value, g_self);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512];
    int n = -1;
    *warned = 0;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "threads=", 8) == 0) n = atoi(line + 8);
        else if (strstr(line, "WICK_NUM_THREADS")) *warned = 1;
    }
    assert_int_equal(pclose(p), 0);
    return n;
}

static void test_env(void **state) {
    (void)state;
    if (!g_self[0]) skip();
    int w, def = child_threads("", &w);
    assert_true(def >= 1);
    assert_int_equal(w, 0);
    assert_int_equal(child_threads("3", &w), 3);
    assert_int_equal(w, 0);
    assert_int_equal(child_threads("1", &w), 1);
    static const char *bad[] = {"abc", "0", "-3", "1025", "4x", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(child_threads(bad[i], &w), def);
        if (!w) fail_msg("WICK_NUM_THREADS=%s: no warning", bad[i]);
    }
}

static void count_fn(void *c, int64_t b, int64_t e, int tid) {
    (void)tid;
    atomic_int *h = c;
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&h[i], 1);
}

/* For the child process: one region, checked without cmocka; 0 if fine. */
static int run_cover_quiet_ok(void) {
    enum { N = 100000 };
    atomic_int *h = calloc(N, sizeof *h);
    if (!h) return 2;
    wk__parallel_for(N, 16, 0, count_fn, h);
    int good = 1;
    for (int i = 0; i < N; i++) good &= atomic_load(&h[i]) == 1;
    free(h);
    return good ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print-threads") == 0) {
        printf("threads=%d\n", wk_num_threads());
        /* exercise the pool in the child too */
        return run_cover_quiet_ok();
    }
    ssize_t len = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (len > 0) g_self[len] = 0;
    else g_self[0] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_num_threads_errors),
        cmocka_unit_test(test_coverage),
        cmocka_unit_test(test_many_regions),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_concurrent_callers),
        cmocka_unit_test(test_fork),
        cmocka_unit_test(test_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
