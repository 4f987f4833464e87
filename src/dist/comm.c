/* Communicators: creation, identity, errors, and the issue-order job queue
 * with its progress thread (asynchronous collectives run there, so the
 * caller's compute overlaps them). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dist/dist_internal.h"
#include "autograd/node.h"
#include "base/env.h"
#include "base/error.h"
#include "tensor/tensor.h"

struct wk_dist_work { wk__dist_job *job; };

const char *wk_dist_op_name(wk_dist_op op) {
    static const char *const n[] = {"sum", "avg", "max", "min", "prod"};
    return (unsigned)op < WK_DIST_OP_COUNT ? n[op] : "invalid";
}

bool wk_dist_has_mpi(void) {
#ifdef WICK_HAVE_MPI
    return true;
#else
    return false;
#endif
}

bool wk_dist_has_nccl(void) {
#ifdef WICK_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

static double default_timeout(const wk_comm_opts *o) {
    if (o && o->timeout_s > 0) return o->timeout_s;
    const char *e = getenv("WICK_DIST_TIMEOUT");
    if (e && *e) {
        char *end;
        double v = strtod(e, &end);
        if (end != e && v > 0) return v;
    }
    return 60.0;
}

static wk_comm *comm_alloc(const char *op, wk_comm_backend b, const wk_comm_opts *o) {
    wk_comm *c = calloc(1, sizeof *c);
    if (!c) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a communicator");
        return NULL;
    }
    c->backend = b;
    c->rank = 0;
    c->size = 1;
    c->timeout_s = default_timeout(o);
    atomic_init(&c->broken, false);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cv, NULL);
    return c;
}

void *wk__comm_scratch(wk_comm *c, const char *op, size_t n) {
    if (n <= c->scratch_cap) return c->scratch;
    size_t cap = n < 65536 ? 65536 : n + n / 4;
    void *p = realloc(c->scratch, cap);
    if (!p) {
        wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of receive buffer", cap);
        return NULL;
    }
    c->scratch = p;
    c->scratch_cap = cap;
    return p;
}

static void comm_release(wk_comm *c) {
    free(c->scratch);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cv);
    free(c);
}

wk_comm *wk__comm_new(const char *op, wk_comm_backend b, const wk_comm_opts *o) { return comm_alloc(op, b, o); }
void wk__comm_delete(wk_comm *c) { comm_release(c); }

wk_comm *wk_comm_self(const wk_comm_opts *opts) { return comm_alloc("wk_comm_self", WK_COMM_SELF, opts); }

wk_comm *wk_comm_init_mpi(int *argc, char ***argv, const wk_comm_opts *opts) {
    const char *op = "wk_comm_init_mpi";
#ifndef WICK_HAVE_MPI
    (void)argc, (void)argv, (void)opts;
    wk__err(WK_ERR_NOT_COMPILED, op, "this wick was built without MPI (install libopenmpi-dev and rebuild)");
    return NULL;
#else
    wk_comm *c = comm_alloc(op, WK_COMM_MPI, opts);
    if (!c) return NULL;
    if (wk__mpi_init_world(op, argc, argv, c) != WK_OK) {
        comm_release(c);
        return NULL;
    }
    return c;
#endif
}

wk_comm *wk_comm_from_mpi(const void *mpi_comm, const wk_comm_opts *opts) {
    const char *op = "wk_comm_from_mpi";
#ifndef WICK_HAVE_MPI
    (void)mpi_comm, (void)opts;
    wk__err(WK_ERR_NOT_COMPILED, op, "this wick was built without MPI");
    return NULL;
#else
    if (!mpi_comm) {
        wk__err(WK_ERR_ARG, op, "NULL MPI communicator");
        return NULL;
    }
    wk_comm *c = comm_alloc(op, WK_COMM_MPI, opts);
    if (!c) return NULL;
    if (wk__mpi_from(op, mpi_comm, c) != WK_OK) {
        comm_release(c);
        return NULL;
    }
    return c;
#endif
}

wk_comm *wk_comm_split(wk_comm *parent, int color, int key) {
    const char *op = "wk_comm_split";
    if (!wk__comm_check(op, parent)) return NULL;
    if (parent->backend == WK_COMM_NCCL) {
        wk__err(WK_ERR_ARG, op, "split the MPI communicator the NCCL one was made from, then make NCCL ones from the parts");
        return NULL;
    }
    wk_comm_opts o = {parent->timeout_s};
    if (parent->backend == WK_COMM_SELF) {
        if (color < 0) return NULL;
        return comm_alloc(op, WK_COMM_SELF, &o);
    }
    wk_comm *c = comm_alloc(op, WK_COMM_MPI, &o);
    if (!c) return NULL;
    bool member = false;
    /* the split is collective over parent: wait for parent's queued work first */
    wk_status st = wk_barrier(parent) == WK_OK ? wk__mpi_split(op, parent, color, key, c, &member) : wk_last_status();
    if (st != WK_OK || !member) {
        comm_release(c);
        return NULL;
    }
    return c;
}

static void stop_thread(wk_comm *c) {
    pthread_mutex_lock(&c->lock);
    bool had = c->has_thread;
    c->stopping = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    if (had) pthread_join(c->thread, NULL);
}

void wk_comm_free(wk_comm *c) {
    if (!c) return;
    stop_thread(c); /* drains the queue first */
    if (c->backend == WK_COMM_NCCL) wk__nccl_free(c);
    if (c->backend == WK_COMM_MPI) wk__mpi_free(c);
    comm_release(c);
}

wk_status wk_comm_abort(wk_comm *c, int code) {
    const char *op = "wk_comm_abort";
    if (!c) return wk__err(WK_ERR_ARG, op, "NULL communicator");
    if (c->backend != WK_COMM_MPI)
        return wk__err(WK_ERR_ARG, op, "a %s communicator has no job to end: report the error and exit",
                       c->backend == WK_COMM_SELF ? "self" : "NCCL");
    fflush(NULL);
    wk__mpi_abort(c, code); /* MPI_Abort: what the caller asked for, ending every rank */
    return wk__err(WK_ERR_COMM, op, "MPI_Abort returned");
}

int wk_comm_rank(const wk_comm *c) { return c ? c->rank : -1; }
int wk_comm_size(const wk_comm *c) { return c ? c->size : -1; }
wk_comm_backend wk_comm_backend_of(const wk_comm *c) { return c ? c->backend : WK_COMM_SELF; }
double wk_comm_timeout(const wk_comm *c) { return c ? c->timeout_s : 0; }
bool wk_comm_ok(const wk_comm *c) { return c && !atomic_load(&c->broken); }

bool wk__comm_check(const char *op, const wk_comm *c) {
    if (!c) {
        wk__err(WK_ERR_ARG, op, "NULL communicator");
        return false;
    }
    if (atomic_load(&c->broken)) {
        wk__err(WK_ERR_COMM, op, "rank %d of %d: the communicator is broken by an earlier failure", c->rank, c->size);
        return false;
    }
    return true;
}

wk_status wk__comm_fail(wk_comm *c, const char *op, int peer, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    atomic_store(&c->broken, true);
    if (peer >= 0) return wk__err(WK_ERR_COMM, op, "rank %d of %d: %s rank %d", c->rank, c->size, what, peer);
    return wk__err(WK_ERR_COMM, op, "rank %d of %d: %s", c->rank, c->size, what);
}

/* ------------------------------------------------------------------ jobs */

void *wk__dist_host_ptr(const wk_tensor *t) {
    const wk_dtype_info *di = wk_dtype_info_of(t->dtype);
    int64_t off = t->layout.offset / di->block_elems * di->block_bytes;
    return (char *)t->storage->buf + off;
}

size_t wk__dist_nbytes(const wk_tensor *t) {
    const wk_dtype_info *di = wk_dtype_info_of(t->dtype);
    return (size_t)(wk_numel(t) / di->block_elems * di->block_bytes);
}

wk__dist_job *wk__dist_job_new(wk_comm *c, const char *op, const wk_tensor *x, wk_tensor *(*run)(wk__dist_job *),
                               int a, int b) {
    wk__dist_job *j = calloc(1, sizeof *j);
    if (!j) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a job");
        return NULL;
    }
    j->c = c;
    j->op = op;
    j->run = run;
    j->a = a;
    j->b = b;
    atomic_init(&j->done, false);
    if (x) {
        /* the job's own reference, outside any scope of the caller's */
        j->x = wk__alias(x);
        if (!j->x) {
            free(j);
            return NULL;
        }
        wk_keep(j->x);
    }
    return j;
}

static void job_free(wk__dist_job *j) {
    if (!j) return;
    wk_tensor_free(j->keep);
    wk_tensor_free(j->x);
    wk_tensor_free(j->result);
    free(j);
}

/* Run on this thread with no scope of the caller's: errors are captured in
 * the job, the result is a reference the job owns. */
static void job_exec(wk__dist_job *j) {
    if (!wk__comm_check(j->op, j->c)) {
        j->status = wk_last_status();
        snprintf(j->msg, sizeof j->msg, "%s", wk_last_error());
        return;
    }
    wk_status before = wk_last_status();
    char saved[512];
    snprintf(saved, sizeof saved, "%s", wk_last_error());
    wk_clear_error();
    j->result = j->run(j);
    if (j->result) wk_keep(j->result);
    j->status = wk_last_status();
    snprintf(j->msg, sizeof j->msg, "%s", wk_last_error());
    if (j->result && j->status != WK_OK) j->status = WK_OK; /* a stale error from inside: the job succeeded */
    wk_clear_error();
    if (before != WK_OK) wk__err_restore(before, saved); /* put the caller's pending error back */
}

/* After the job ran: its result in the caller's scope, or its error here. */
static wk_tensor *job_finish(wk__dist_job *j, wk_status *st) {
    wk_tensor *out = NULL;
    if (st) *st = j->status;
    if (j->status != WK_OK) {
        wk__err_restore(j->status, j->msg);
    } else if (j->result) {
        out = wk__alias(j->result);
    }
    job_free(j);
    return out;
}

/* Two posted receives from one peer on one tag must take their messages
 * in posting order: a later one waits while an earlier one has not yet
 * posted its payload receive (phase 1: its header not in). */
static bool blocked_by_earlier(const wk_comm *c, const wk__dist_job *j) {
    if (!j->advance) return false;
    for (const wk__dist_job *e = c->posted; e && e != j; e = e->next)
        if (e->advance && e->phase == 1 && e->a == j->a && e->b == j->b) return true;
    return false;
}

/* Poll the posted jobs once, oldest first (this thread holds busy);
 * returns whether any remain. */
static bool poll_posted(wk_comm *c) {
    wk__dist_job **pp = &c->posted;
    while (*pp) {
        wk__dist_job *j = *pp;
        if (blocked_by_earlier(c, j)) {
            pp = &j->next;
            continue;
        }
        size_t got = 0;
        int r = wk__p2p_poll(c, j->op, j->post, &got);
        if (r != 0) j->post = NULL;
        if (r > 0 && j->advance) {
            r = j->advance(j, got);
            if (r == 0) continue; /* posted its next step: poll it again */
        }
        if (r == 0) {
            pp = &j->next;
            continue;
        }
        if (r < 0) {
            j->status = wk_last_status();
            snprintf(j->msg, sizeof j->msg, "%s", wk_last_error());
            wk_clear_error();
            wk_tensor_free(j->result);
            j->result = NULL;
        }
        *pp = j->next;
        pthread_mutex_lock(&c->lock);
        atomic_store(&j->done, true);
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->lock);
    }
    return c->posted != NULL;
}

void wk__comm_progress(wk_comm *c) {
    if (c->posted) poll_posted(c);
}

static void *progress_main(void *arg) {
    wk_comm *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        if (c->head && !c->busy) {
            wk__dist_job *j = c->head;
            c->head = j->next;
            if (!c->head) c->tail = NULL;
            c->busy = true;
            pthread_mutex_unlock(&c->lock);
            job_exec(j);
            pthread_mutex_lock(&c->lock);
            c->busy = false;
            if (j->post && j->status == WK_OK) {
                /* completes later (poll_posted): appended, oldest first */
                wk__dist_job **end = &c->posted;
                while (*end) end = &(*end)->next;
                j->next = NULL;
                *end = j;
            } else {
                atomic_store(&j->done, true);
            }
            pthread_cond_broadcast(&c->cv);
            continue;
        }
        if (c->posted && !c->busy) {
            c->busy = true;
            pthread_mutex_unlock(&c->lock);
            bool more = poll_posted(c);
            pthread_mutex_lock(&c->lock);
            c->busy = false;
            pthread_cond_broadcast(&c->cv);
            if (more && !c->head) {
                /* nothing queued: look again in 20 us (or when a job arrives) */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 20000;
                if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
                pthread_cond_timedwait(&c->cv, &c->lock, &ts);
            }
            continue;
        }
        if (c->stopping && !c->head && !c->posted) break;
        pthread_cond_wait(&c->cv, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

wk_tensor *wk__dist_run_sync(wk__dist_job *j) { return wk__dist_run_sync_status(j, NULL); }

static wk_tensor *wait_status(wk_dist_work *w, wk_status *st);

wk_tensor *wk__dist_run_sync_status(wk__dist_job *j, wk_status *st) {
    if (!j) {
        if (st) *st = wk_last_status() != WK_OK ? wk_last_status() : WK_ERR_INTERNAL;
        return NULL;
    }
    wk_comm *c = j->c;
    pthread_mutex_lock(&c->lock);
    if (!c->busy && !c->head) {
        /* nothing before us: run here, saving the hand-off to the thread */
        c->busy = true;
        pthread_mutex_unlock(&c->lock);
        job_exec(j);
        pthread_mutex_lock(&c->lock);
        c->busy = false;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->lock);
        return job_finish(j, st);
    }
    pthread_mutex_unlock(&c->lock);
    wk_dist_work *w = wk__dist_run_async(j);
    if (!w && st) *st = wk_last_status();
    return w ? wait_status(w, st) : NULL;
}

wk_dist_work *wk__dist_run_async(wk__dist_job *j) {
    if (!j) return NULL;
    wk_comm *c = j->c;
    wk_dist_work *w = malloc(sizeof *w);
    if (!w) {
        wk__err(WK_ERR_OOM, j->op, "cannot allocate a work handle");
        job_free(j);
        return NULL;
    }
    w->job = j;
    j->is_async = true;
    pthread_mutex_lock(&c->lock);
    if (!c->has_thread) {
        if (pthread_create(&c->thread, NULL, progress_main, c) != 0) {
            pthread_mutex_unlock(&c->lock);
            wk__err(WK_ERR_OOM, j->op, "cannot start the communicator's progress thread");
            job_free(j);
            free(w);
            return NULL;
        }
        c->has_thread = true;
    }
    if (c->tail) c->tail->next = j;
    else c->head = j;
    c->tail = j;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->lock);
    return w;
}

wk_tensor *wk_dist_wait(wk_dist_work *w) {
    if (!w) {
        wk__err(WK_ERR_ARG, "wk_dist_wait", "NULL work handle");
        return NULL;
    }
    return wait_status(w, NULL);
}

wk_status wk_dist_wait_status(wk_dist_work *w, wk_tensor **out) {
    if (out) *out = NULL;
    if (!w) return wk__err(WK_ERR_ARG, "wk_dist_wait_status", "NULL work handle");
    wk_status st = WK_OK;
    wk_tensor *r = wait_status(w, &st);
    if (out) *out = r;
    else wk_tensor_free(r);
    return st;
}

static wk_tensor *wait_status(wk_dist_work *w, wk_status *st) {
    wk__dist_job *j = w->job;
    wk_comm *c = j->c;
    pthread_mutex_lock(&c->lock);
    while (!atomic_load(&j->done)) pthread_cond_wait(&c->cv, &c->lock);
    pthread_mutex_unlock(&c->lock);
    free(w);
    return job_finish(j, st);
}

bool wk_dist_test(const wk_dist_work *w) { return w && atomic_load(&w->job->done); }
