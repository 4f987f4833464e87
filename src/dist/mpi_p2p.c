/* The MPI transport: our own duplicate of the caller's communicator (errors
 * returned, never fatal), point-to-point exchanges that poll against the
 * communicator's timeout and name the peer they wait for, and MPI's own
 * init / split / abort. Without MPI compiled in, every entry point is a
 * WK_ERR_NOT_COMPILED (the self communicator never reaches them). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dist/dist_internal.h"
#include "base/error.h"

#ifdef WICK_HAVE_MPI
#include <mpi.h>

static bool g_we_initialised; /* wick called MPI_Init: finalize at exit */
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void mpi_msg(int code, char *buf, size_t len) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(code, s, &n) != MPI_SUCCESS) n = snprintf(s, sizeof s, "MPI error %d", code);
    snprintf(buf, len, "%.*s", n, s);
}

static void finalize_at_exit(void) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

wk_status wk__mpi_init_world(const char *op, int *argc, char ***argv, wk_comm *c) {
    pthread_mutex_lock(&g_init_lock);
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (fin) {
        pthread_mutex_unlock(&g_init_lock);
        return wk__err(WK_ERR_ARG, op, "MPI was already finalized in this process");
    }
    int provided = 0;
    if (!inited) {
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            pthread_mutex_unlock(&g_init_lock);
            char m[300];
            mpi_msg(rc, m, sizeof m);
            return wk__err(WK_ERR_COMM, op, "MPI_Init_thread failed: %s", m);
        }
        g_we_initialised = true;
        atexit(finalize_at_exit);
    } else {
        MPI_Query_thread(&provided);
    }
    pthread_mutex_unlock(&g_init_lock);
    if (provided < MPI_THREAD_SERIALIZED)
        return wk__err(WK_ERR_ARG, op, "MPI was initialised with thread level %d; wick needs at least "
                                       "MPI_THREAD_SERIALIZED (its progress thread calls MPI)", provided);
    MPI_Comm w = MPI_COMM_WORLD;
    return wk__mpi_from(op, &w, c);
}

wk_status wk__mpi_from(const char *op, const void *mpi_comm, wk_comm *c) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) return wk__err(WK_ERR_ARG, op, "MPI is not initialised (call MPI_Init, or use wk_comm_init_mpi)");
    MPI_Comm *dup = malloc(sizeof *dup);
    if (!dup) return wk__err(WK_ERR_OOM, op, "cannot allocate an MPI communicator handle");
    int rc = MPI_Comm_dup(*(const MPI_Comm *)mpi_comm, dup);
    if (rc != MPI_SUCCESS) {
        free(dup);
        char m[300];
        mpi_msg(rc, m, sizeof m);
        return wk__err(WK_ERR_COMM, op, "MPI_Comm_dup failed: %s", m);
    }
    MPI_Comm_set_errhandler(*dup, MPI_ERRORS_RETURN);
    MPI_Comm_rank(*dup, &c->rank);
    MPI_Comm_size(*dup, &c->size);
    c->mpi = dup;
    return WK_OK;
}

wk_status wk__mpi_split(const char *op, wk_comm *parent, int color, int key, wk_comm *c, bool *member) {
    MPI_Comm *nc = malloc(sizeof *nc);
    if (!nc) return wk__err(WK_ERR_OOM, op, "cannot allocate an MPI communicator handle");
    int rc = MPI_Comm_split(*(MPI_Comm *)parent->mpi, color < 0 ? MPI_UNDEFINED : color, key, nc);
    if (rc != MPI_SUCCESS) {
        free(nc);
        char m[300];
        mpi_msg(rc, m, sizeof m);
        return wk__comm_fail(parent, op, -1, "MPI_Comm_split failed: %s", m);
    }
    if (*nc == MPI_COMM_NULL) {
        free(nc);
        *member = false;
        return WK_OK;
    }
    MPI_Comm_set_errhandler(*nc, MPI_ERRORS_RETURN);
    MPI_Comm_rank(*nc, &c->rank);
    MPI_Comm_size(*nc, &c->size);
    c->mpi = nc;
    *member = true;
    return WK_OK;
}

void wk__mpi_free(wk_comm *c) {
    if (!c->mpi) return;
    int fin = 0;
    MPI_Finalized(&fin);
    /* a broken communicator may have requests that never complete: leave it
     * (freeing would wait on them) */
    if (!fin && !atomic_load(&c->broken)) MPI_Comm_free((MPI_Comm *)c->mpi);
    free(c->mpi);
    c->mpi = NULL;
}

void wk__mpi_abort(wk_comm *c, int code) { MPI_Abort(*(MPI_Comm *)c->mpi, code); }

/* Poll reqs until all complete or the timeout: first a plain spin of
 * PURE_SPIN_S, then spin yielding (so ranks sharing a core still progress),
 * then sleep in growing steps up to 1 ms.
 *
 * Why the plain spin first: a message above Open MPI's eager limit (4 KiB
 * in shared memory) moves only while the receiver calls MPI_Test, and a
 * sched_yield on a core with other runnable work gives the core away for a
 * whole time slice, stalling the transfer with it. bench_dist_allreduce on
 * 2 ranks of a 2-core machine loaded by other work, best of 24 calls, three
 * runs each: 1 MiB all_reduce 223-492 us yielding from the start, 211-250 us
 * with this spin (MPI's own 209-244 us); 4 MiB 2.4-11 ms vs 1.4-7.5 ms (MPI
 * 1.1-1.5 ms). 200 us covers a ring step of up to ~1 MiB, and is what a rank
 * can lose when its peer waits for this very core (oversubscribed). */
#define PURE_SPIN_S 200e-6
static wk_status wait_all(wk_comm *c, const char *op, MPI_Request *r, const int *peer, const char *const *what,
                          int n, MPI_Status *stt) {
    bool done[2] = {false, false};
    int left = 0;
    for (int i = 0; i < n; i++) {
        done[i] = r[i] == MPI_REQUEST_NULL;
        left += !done[i];
    }
    double t0 = now_s(), deadline = t0 + c->timeout_s;
    long spins = 0, sleep_ns = 20000;
    bool pure = true, spinning = true;
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (done[i]) continue;
            int flag = 0;
            int rc = MPI_Test(&r[i], &flag, &stt[i]);
            if (rc != MPI_SUCCESS) {
                char m[300];
                mpi_msg(rc, m, sizeof m);
                return wk__comm_fail(c, op, peer[i], "MPI failed (%s) while %s", m, what[i]);
            }
            if (flag) {
                done[i] = true;
                left--;
            }
        }
        if (!left) break;
        if ((spins & 15) == 15 && c->posted) wk__comm_progress(c);
        if (pure) {
            if ((++spins & 15) == 0 && now_s() - t0 >= PURE_SPIN_S) pure = false, spins = 0;
            continue;
        }
        /* then spin yielding until 2 ms (a peer a little behind costs no
         * sleep; a rank or compute thread sharing this core still runs) */
        if (spinning) {
            if ((++spins & 15) == 0) {
                sched_yield();
                double t = now_s();
                if (t > deadline) goto timeout;
                spinning = t - t0 < 2e-3;
            }
            continue;
        }
        if (now_s() > deadline) goto timeout;
        if (c->posted) wk__comm_progress(c);
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
    return WK_OK;
timeout:
    for (int i = 0; i < n; i++)
        if (!done[i]) {
            /* prefer naming the receive: the peer we have heard nothing from */
            int k = i;
            for (int j = i; j < n; j++)
                if (!done[j] && strncmp(what[j], "waiting for", 11) == 0) k = j;
            return wk__comm_fail(c, op, peer[k], "timed out after %.1f s %s", c->timeout_s, what[k]);
        }
    return wk__comm_fail(c, op, -1, "timed out after %.1f s", c->timeout_s);
}

wk_status wk__p2p_exchange(wk_comm *c, const char *op, const void *sbuf, size_t sn, int to, void *rbuf, size_t rn,
                           int from, int tag) {
    MPI_Comm comm = *(MPI_Comm *)c->mpi;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    int peer[2] = {from, to};
    const char *what[2] = {"waiting for", "sending to"};
    if ((from >= 0 && rn > (size_t)INT32_MAX) || (to >= 0 && sn > (size_t)INT32_MAX))
        return wk__err(WK_ERR_ARG, op, "message over 2 GiB (split it)");
    /* MPI wants a valid pointer even for 0 bytes; a longer message than rn
     * fails the receive (MPI_ERR_TRUNCATE), a shorter one is caught below */
    static char spare;
    int rc = MPI_SUCCESS;
    if (from >= 0) rc = MPI_Irecv(rn ? rbuf : &spare, (int)rn, MPI_BYTE, from, tag, comm, &r[0]);
    if (rc == MPI_SUCCESS && to >= 0) rc = MPI_Isend(sn ? sbuf : &spare, (int)sn, MPI_BYTE, to, tag, comm, &r[1]);
    if (rc != MPI_SUCCESS) {
        char m[300];
        mpi_msg(rc, m, sizeof m);
        return wk__comm_fail(c, op, from >= 0 ? from : to, "cannot post a message (%s) with", m);
    }
    wk_status s = wait_all(c, op, r, peer, what, 2, st);
    if (s != WK_OK) return s;
    if (from >= 0) {
        int got = 0;
        MPI_Get_count(&st[0], MPI_BYTE, &got);
        if ((size_t)got != rn)
            return wk__comm_fail(c, op, from, "expected %zu bytes but got %d (shapes or dtypes differ between ranks) from",
                                 rn, got);
    }
    return WK_OK;
}

wk_status wk__p2p_recv_any(wk_comm *c, const char *op, void *rbuf, size_t cap, size_t *got, int from, int tag) {
    MPI_Comm comm = *(MPI_Comm *)c->mpi;
    MPI_Request r[1] = {MPI_REQUEST_NULL};
    MPI_Status st[1];
    int peer[1] = {from};
    const char *what[1] = {"waiting for"};
    if (cap > (size_t)INT32_MAX) cap = INT32_MAX;
    int rc = MPI_Irecv(rbuf, (int)cap, MPI_BYTE, from, tag, comm, &r[0]);
    if (rc != MPI_SUCCESS) {
        char m[300];
        mpi_msg(rc, m, sizeof m);
        return wk__comm_fail(c, op, from, "cannot post a receive (%s) from", m);
    }
    wk_status s = wait_all(c, op, r, peer, what, 1, st);
    if (s != WK_OK) return s;
    int n = 0;
    MPI_Get_count(&st[0], MPI_BYTE, &n);
    *got = (size_t)(n < 0 ? 0 : n);
    return WK_OK;
}

wk_status wk__mpi_barrier(wk_comm *c, const char *op) {
    /* a dissemination barrier over our own messages, so a missing rank is
     * named and the timeout holds */
    char s = 1, r = 0;
    for (int d = 1; d < c->size; d *= 2) {
        int to = (c->rank + d) % c->size, from = (c->rank - d + c->size) % c->size;
        wk_status st = wk__p2p_exchange(c, op, &s, 1, to, &r, 1, from, WK__TAG_COLL + 1);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

typedef struct posted_send {
    MPI_Request r[2];
    int peer;
    double deadline;
} posted_send;

wk_status wk__p2p_post_send(wk_comm *c, const char *op, const void *hdr, size_t hn, int htag, const void *buf,
                            size_t n, int peer, int tag, void **post) {
    static char spare;
    if (n > (size_t)INT32_MAX || hn > (size_t)INT32_MAX) return wk__err(WK_ERR_ARG, op, "message over 2 GiB (split it)");
    posted_send *p = malloc(sizeof *p);
    if (!p) return wk__err(WK_ERR_OOM, op, "cannot allocate a send handle");
    MPI_Comm comm = *(MPI_Comm *)c->mpi;
    p->r[0] = p->r[1] = MPI_REQUEST_NULL;
    p->peer = peer;
    p->deadline = now_s() + c->timeout_s;
    int rc = MPI_Isend(hn ? hdr : &spare, (int)hn, MPI_BYTE, peer, htag, comm, &p->r[0]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(n ? buf : &spare, (int)n, MPI_BYTE, peer, tag, comm, &p->r[1]);
    if (rc != MPI_SUCCESS) {
        free(p); /* a posted header may dangle: the communicator is broken below */
        char m[300];
        mpi_msg(rc, m, sizeof m);
        return wk__comm_fail(c, op, peer, "cannot post a send (%s) to", m);
    }
    *post = p;
    return WK_OK;
}

wk_status wk__p2p_post_recv(wk_comm *c, const char *op, void *buf, size_t cap, int peer, int tag, void **post) {
    static char spare;
    if (cap > (size_t)INT32_MAX) return wk__err(WK_ERR_ARG, op, "message over 2 GiB (split it)");
    posted_send *p = malloc(sizeof *p);
    if (!p) return wk__err(WK_ERR_OOM, op, "cannot allocate a receive handle");
    p->r[0] = p->r[1] = MPI_REQUEST_NULL;
    p->peer = peer;
    p->deadline = now_s() + c->timeout_s;
    int rc = MPI_Irecv(cap ? buf : &spare, (int)cap, MPI_BYTE, peer, tag, *(MPI_Comm *)c->mpi, &p->r[0]);
    if (rc != MPI_SUCCESS) {
        free(p);
        char m[300];
        mpi_msg(rc, m, sizeof m);
        return wk__comm_fail(c, op, peer, "cannot post a receive (%s) from", m);
    }
    *post = p;
    return WK_OK;
}

int wk__p2p_poll(wk_comm *c, const char *op, void *post, size_t *got) {
    posted_send *p = post;
    int flag = 0;
    MPI_Status st[2];
    int rc = MPI_Testall(2, p->r, &flag, st);
    if (rc != MPI_SUCCESS) {
        char m[300];
        mpi_msg(rc, m, sizeof m);
        wk__comm_fail(c, op, p->peer, "MPI failed (%s) with", m);
        free(p);
        return -1;
    }
    if (flag) {
        if (got) {
            int n = 0;
            MPI_Get_count(&st[0], MPI_BYTE, &n);
            *got = (size_t)(n < 0 ? 0 : n);
        }
        free(p);
        return 1;
    }
    if (now_s() > p->deadline) {
        wk__comm_fail(c, op, p->peer, "timed out after %.1f s waiting for", c->timeout_s);
        free(p);
        return -1;
    }
    return 0;
}

#else /* no MPI */

static wk_status none(const char *op) { return wk__err(WK_ERR_NOT_COMPILED, op, "this wick was built without MPI"); }
wk_status wk__mpi_init_world(const char *op, int *argc, char ***argv, wk_comm *c) {
    (void)argc, (void)argv, (void)c;
    return none(op);
}
wk_status wk__mpi_from(const char *op, const void *mpi_comm, wk_comm *c) {
    (void)mpi_comm, (void)c;
    return none(op);
}
wk_status wk__mpi_split(const char *op, wk_comm *parent, int color, int key, wk_comm *c, bool *member) {
    (void)parent, (void)color, (void)key, (void)c, (void)member;
    return none(op);
}
void wk__mpi_free(wk_comm *c) { (void)c; }
void wk__mpi_abort(wk_comm *c, int code) { (void)c, (void)code; }
wk_status wk__p2p_exchange(wk_comm *c, const char *op, const void *sbuf, size_t sn, int to, void *rbuf, size_t rn,
                           int from, int tag) {
    (void)c, (void)sbuf, (void)sn, (void)to, (void)rbuf, (void)rn, (void)from, (void)tag;
    return none(op);
}
wk_status wk__p2p_recv_any(wk_comm *c, const char *op, void *rbuf, size_t cap, size_t *got, int from, int tag) {
    (void)c, (void)rbuf, (void)cap, (void)got, (void)from, (void)tag;
    return none(op);
}
wk_status wk__mpi_barrier(wk_comm *c, const char *op) {
    (void)c;
    return none(op);
}
wk_status wk__p2p_post_send(wk_comm *c, const char *op, const void *hdr, size_t hn, int htag, const void *buf,
                            size_t n, int peer, int tag, void **post) {
    (void)c, (void)hdr, (void)hn, (void)htag, (void)buf, (void)n, (void)peer, (void)tag, (void)post;
    return none(op);
}
wk_status wk__p2p_post_recv(wk_comm *c, const char *op, void *buf, size_t cap, int peer, int tag, void **post) {
    (void)c, (void)buf, (void)cap, (void)peer, (void)tag, (void)post;
    return none(op);
}
int wk__p2p_poll(wk_comm *c, const char *op, void *post, size_t *got) {
    (void)c, (void)post, (void)got;
    none(op);
    return -1;
}
#endif
