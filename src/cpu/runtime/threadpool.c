/* The CPU thread pool, and wk_num_threads / wk_set_num_threads.
 *
 * Design
 *  - One process-wide pool, created lazily by the first parallel region that
 *    needs it, grown (never shrunk) when wk_set_num_threads raises the count.
 *    [0, n) is cut into at most wk_num_threads() pieces of ceil(n/nt) rounded
 *    up to the grain; piece i is run with tid = i.
 *  - A region is published in one 64-bit word: generation << 24 | pieces << 12
 *    | next unclaimed piece. The caller and the workers claim pieces from it
 *    with a CAS (the generation must match), so a worker that is asleep or
 *    descheduled when the region starts never delays it: the caller simply
 *    runs the unclaimed pieces itself (on VMs waking an idle vCPU takes tens
 *    of microseconds). The caller then waits only for pieces that workers
 *    claimed.
 *  - Workers spin on the word (with pause) for ~100 us after each region, then
 *    sleep on their own condition variable. A region that needs m helpers
 *    wakes only workers 0..m-1, as a tree: the caller wakes worker 0, worker i
 *    wakes 2i+1 and 2i+2, so the caller pays for at most one futex wake and
 *    idle extra workers (after lowering the thread count) stay asleep. The
 *    sleeping flag and the generation are a seq_cst store/load pair on both
 *    sides, so no wake-up is lost. The caller spins ~50 us, then sleeps,
 *    waiting for the claimed pieces. With spinning workers a region costs
 *    about 1 us here.
 *  - Regions are serialized by a mutex: a second user thread that calls
 *    wk__parallel_for while a region runs waits for it, then gets the pool.
 *    A call made from inside a region (from fn, on the caller or a worker)
 *    runs serially on the calling thread.
 *  - Exit: an atexit handler stops and joins the workers (nothing leaked, no
 *    thread outlives the library); if a region is still running on another
 *    thread at exit, the workers are told to stop and are not joined. After
 *    shutdown every region runs serially. In a child after fork() the pool is
 *    reset and re-created on demand.
 *  - Changing the thread count while other threads run parallel regions is
 *    allowed, but a caller that sized per-thread buffers from an earlier
 *    wk_num_threads() must not race with it (tid < the count at call time).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, pthread_setname_np, MADV_HUGEPAGE */
#endif
#include "cpu/runtime/threadpool.h"

#include "base/env.h"
#include "base/error.h"
#include "wick/wick.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WK_MAX_THREADS 1024
#define WORKER_SPIN_NS 100000  /* a worker spins this long before sleeping */
#define CALLER_SPIN_NS 50000   /* the caller spins this long before sleeping */

/* ------------------------------------------------------------ thread count */

static pthread_once_t g_nt_once = PTHREAD_ONCE_INIT;
static atomic_int g_nthreads;

static int cpu_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0) return c;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (c > WK_MAX_THREADS ? WK_MAX_THREADS : (int)c) : 1;
}

static void nt_init(void) {
    int n = cpu_count();
    if (n > WK_MAX_THREADS) n = WK_MAX_THREADS;
    int64_t v;
    /* env.c checks the range [1, 1024] = [1, WK_MAX_THREADS] */
    if (wk__env_get(WK_ENV_NUM_THREADS, &v) && v <= WK_MAX_THREADS) n = (int)v;
    atomic_store(&g_nthreads, n);
}

int wk_num_threads(void) {
    pthread_once(&g_nt_once, nt_init);
    return atomic_load_explicit(&g_nthreads, memory_order_relaxed);
}

wk_status wk_set_num_threads(int n) {
    if (n < 1 || n > WK_MAX_THREADS)
        return wk__err(WK_ERR_ARG, "wk_set_num_threads", "thread count must be in 1..%d, got %d", WK_MAX_THREADS, n);
    pthread_once(&g_nt_once, nt_init);
    atomic_store(&g_nthreads, n);
    return WK_OK;
}

/* ------------------------------------------------------------------- pool */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One per worker; never freed while the worker may run, never moved. */
typedef struct wslot {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int sleeping;
    int idx;
    uint64_t gen0; /* generation at creation */
} wslot;

static pthread_mutex_t g_run_mu = PTHREAD_MUTEX_INITIALIZER;  /* one region at a time; pool growth */
static pthread_mutex_t g_done_mu = PTHREAD_MUTEX_INITIALIZER; /* the caller sleeps under this */
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;

static pthread_t g_threads[WK_MAX_THREADS]; /* under g_run_mu */
static wslot *g_slot[WK_MAX_THREADS];       /* slots 0..g_nworkers-1 are live */
static atomic_int g_nworkers;
static int g_hooks_done;                    /* atexit/atfork registered (under g_run_mu) */

/* generation << 24 | pieces << 12 | next piece to claim */
static _Atomic uint64_t g_word;
#define W_GEN(w) ((w) >> 24)
#define W_PIECES(w) ((int)(((w) >> 12) & 0xfff))
#define W_NEXT(w) ((int)((w) & 0xfff))

static atomic_int g_done;          /* pieces finished in the current region */
static atomic_int g_caller_waiting;
static atomic_int g_shutdown;

/* The region being run; written before g_word is published, read only after
 * a successful claim (the caller waits for every claimed piece). */
static struct {
    wk_range_fn fn;
    void *ctx;
    int64_t n, chunk;
} g_job;

static _Thread_local int tl_in_region;

static void run_piece(int piece) {
    int64_t b = (int64_t)piece * g_job.chunk;
    int64_t e = b + g_job.chunk;
    if (e > g_job.n || e < b) e = g_job.n;
    if (b < e) g_job.fn(g_job.ctx, b, e, piece);
}

/* Claim the next piece of generation gen: its index, or -1. */
static int claim(uint64_t gen, int *pieces) {
    uint64_t w = atomic_load_explicit(&g_word, memory_order_acquire);
    for (;;) {
        if (W_GEN(w) != gen || W_NEXT(w) >= W_PIECES(w)) return -1;
        if (atomic_compare_exchange_weak_explicit(&g_word, &w, w + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *pieces = W_PIECES(w);
            return W_NEXT(w);
        }
    }
}

static void wake_slot(wslot *sl) {
    pthread_mutex_lock(&sl->mu);
    pthread_cond_signal(&sl->cv);
    pthread_mutex_unlock(&sl->mu);
}

/* Wake worker i if it sleeps and the region of word w needs it (helpers
 * 0..pieces-2) and still has unclaimed pieces. */
static void wake_if_needed(int i, uint64_t w) {
    if (i >= W_PIECES(w) - 1 || i >= atomic_load_explicit(&g_nworkers, memory_order_acquire)) return;
    if (W_NEXT(atomic_load(&g_word)) >= W_PIECES(w)) return;
    wslot *sl = g_slot[i];
    if (atomic_load(&sl->sleeping)) wake_slot(sl);
}

/* Wait until the generation differs from gen, or shutdown. Returns the word. */
static uint64_t wait_for_work(wslot *sl, uint64_t gen) {
    uint64_t w;
    int64_t start = 0;
    for (unsigned i = 1;; i++) {
        w = atomic_load_explicit(&g_word, memory_order_acquire);
        if (W_GEN(w) != gen || atomic_load_explicit(&g_shutdown, memory_order_relaxed)) return w;
        cpu_relax();
        if ((i & 63) == 0) {
            int64_t t = now_ns();
            if (!start) start = t;
            else if (t - start > WORKER_SPIN_NS) break;
        }
    }
    pthread_mutex_lock(&sl->mu);
    atomic_store(&sl->sleeping, 1);
    while (W_GEN(w = atomic_load(&g_word)) == gen && !atomic_load(&g_shutdown))
        pthread_cond_wait(&sl->cv, &sl->mu);
    atomic_store(&sl->sleeping, 0);
    pthread_mutex_unlock(&sl->mu);
    return w;
}

static void *worker_main(void *arg) {
    wslot *sl = arg;
    uint64_t gen = sl->gen0;
    tl_in_region = 1; /* anything fn starts here runs serially */
    for (;;) {
        uint64_t w = wait_for_work(sl, gen);
        if (W_GEN(w) != gen) {
            gen = W_GEN(w);
            wake_if_needed(2 * sl->idx + 1, w);
            wake_if_needed(2 * sl->idx + 2, w);
            int p, pieces = 0;
            while ((p = claim(gen, &pieces)) >= 0) {
                run_piece(p);
                if (atomic_fetch_add(&g_done, 1) + 1 == pieces && atomic_load(&g_caller_waiting)) {
                    pthread_mutex_lock(&g_done_mu);
                    pthread_cond_signal(&g_done_cv);
                    pthread_mutex_unlock(&g_done_mu);
                }
            }
        }
        if (atomic_load(&g_shutdown)) break;
    }
    return NULL;
}

static void pool_shutdown(void) {
    atomic_store(&g_shutdown, 1);
    int have_lock = pthread_mutex_trylock(&g_run_mu) == 0;
    int nw = atomic_load(&g_nworkers);
    for (int i = 0; i < nw; i++) wake_slot(g_slot[i]);
    if (!have_lock) return; /* a region is running on another thread (or the
                             * process is exiting from inside one): do not wait */
    for (int i = 0; i < nw; i++) pthread_join(g_threads[i], NULL);
    for (int i = 0; i < nw; i++) {
        pthread_mutex_destroy(&g_slot[i]->mu);
        pthread_cond_destroy(&g_slot[i]->cv);
        free(g_slot[i]);
        g_slot[i] = NULL;
    }
    atomic_store(&g_nworkers, 0);
    pthread_mutex_unlock(&g_run_mu);
}

/* In the child of fork() only the forking thread exists: forget the workers
 * (their slots are reused) and re-initialise the locks. */
static void pool_atfork_child(void) {
    pthread_mutex_init(&g_run_mu, NULL);
    pthread_mutex_init(&g_done_mu, NULL);
    pthread_cond_init(&g_done_cv, NULL);
    atomic_store(&g_nworkers, 0);
    atomic_store(&g_caller_waiting, 0);
}

/* Make sure `want` workers exist (called under g_run_mu). Returns how many
 * can be used (<= want). */
static int ensure_workers(int want) {
    int nw = atomic_load(&g_nworkers);
    if (want <= nw) return want;
    if (want > WK_MAX_THREADS) want = WK_MAX_THREADS;
    if (!g_hooks_done) {
        g_hooks_done = 1;
        atexit(pool_shutdown);
        pthread_atfork(NULL, NULL, pool_atfork_child);
    }
    /* workers take no signals: handlers run on the application's threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    uint64_t gen = W_GEN(atomic_load(&g_word));
    while (nw < want) {
        wslot *sl = g_slot[nw]; /* reused after fork() */
        if (!sl && !(sl = malloc(sizeof *sl))) break;
        g_slot[nw] = sl;
        pthread_mutex_init(&sl->mu, NULL);
        pthread_cond_init(&sl->cv, NULL);
        atomic_init(&sl->sleeping, 0);
        sl->idx = nw;
        sl->gen0 = gen;
        if (pthread_create(&g_threads[nw], NULL, worker_main, sl) != 0) break;
#if defined(__GLIBC__)
        pthread_setname_np(g_threads[nw], "wick-worker");
#endif
        nw++;
        atomic_store(&g_nworkers, nw);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return nw < want ? nw : want;
}

void wk__parallel_for(int64_t n, int64_t grain, int64_t min_parallel, wk_range_fn fn, void *ctx) {
    if (!fn || n < 0) return;
    if (grain < 1) grain = 1;
    int nt = wk_num_threads();
    if (n < min_parallel || nt <= 1 || n <= grain || tl_in_region || atomic_load(&g_shutdown)) {
        fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&g_run_mu);
    if (atomic_load(&g_shutdown)) {
        pthread_mutex_unlock(&g_run_mu);
        fn(ctx, 0, n, 0);
        return;
    }
    /* pieces: ceil(n / nt) rounded up to a multiple of grain */
    int64_t chunk = 0, pieces = 0;
    for (int pass = 0; pass < 2; pass++) {
        chunk = n / nt + (n % nt != 0);
        if (chunk % grain) chunk = chunk > n - grain ? n : chunk + (grain - chunk % grain);
        pieces = n / chunk + (n % chunk != 0);
        if (pieces <= 1) break;
        int have = ensure_workers((int)pieces - 1) + 1;
        if (have >= pieces) break;
        nt = have; /* thread creation failed: fewer pieces */
    }
    if (pieces <= 1) {
        pthread_mutex_unlock(&g_run_mu);
        fn(ctx, 0, n, 0);
        return;
    }
    g_job.fn = fn;
    g_job.ctx = ctx;
    g_job.n = n;
    g_job.chunk = chunk;
    atomic_store(&g_done, 0);
    uint64_t gen = W_GEN(atomic_load_explicit(&g_word, memory_order_relaxed)) + 1;
    uint64_t w = gen << 24 | (uint64_t)pieces << 12;
    atomic_store(&g_word, w);
    wake_if_needed(0, w);

    tl_in_region = 1;
    int p, np = 0;
    while ((p = claim(gen, &np)) >= 0) {
        run_piece(p);
        atomic_fetch_add(&g_done, 1);
    }
    tl_in_region = 0;

    int64_t start = 0;
    for (unsigned i = 1; atomic_load_explicit(&g_done, memory_order_acquire) != (int)pieces; i++) {
        cpu_relax();
        if ((i & 63) == 0) {
            int64_t t = now_ns();
            if (!start) start = t;
            else if (t - start > CALLER_SPIN_NS) {
                pthread_mutex_lock(&g_done_mu);
                atomic_store(&g_caller_waiting, 1);
                while (atomic_load(&g_done) != (int)pieces) pthread_cond_wait(&g_done_cv, &g_done_mu);
                atomic_store(&g_caller_waiting, 0);
                pthread_mutex_unlock(&g_done_mu);
                break;
            }
        }
    }
    pthread_mutex_unlock(&g_run_mu);
}
