/* The dist floor's private parts: the communicator, its transport (MPI
 * point-to-point with timeouts, or nothing for a size-1 world) and the
 * work queue its progress thread drains. Collectives are wick's own ring
 * and tree algorithms over point-to-point messages (collectives.c), so
 * every dtype reduces the same way, results are bit-identical on every
 * rank, and a wait always knows which peer it is waiting for. */
#ifndef WICK_DIST_INTERNAL_H
#define WICK_DIST_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include "wick/dist.h"

/* Tags: user send / recv streams take 0 .. WK__TAG_USER_MAX; collectives a
 * tag of their own above (MPI guarantees at least 32767). A message's order
 * between one pair on one tag is MPI's non-overtaking order. */
#define WK__TAG_USER_MAX 16383
#define WK__TAG_COLL 30000
#define WK__TAG_P2P_HDR 16384 /* + user tag: the shape header of a wk_send */

typedef struct wk__dist_job wk__dist_job;

struct wk_comm {
    wk_comm_backend backend;
    int rank, size;
    double timeout_s;
    atomic_bool broken;
    void *mpi;          /* MPI_Comm * (our duplicate) when backend is MPI */
    void *nccl;         /* the NCCL side (nccl_comm.c) */
    wk_device *dev;     /* NCCL: the CUDA device */
    /* Issue order: one job runs at a time, in the order the calls were made. */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    bool busy;          /* a job is running (inline on a caller, or on the thread) */
    wk__dist_job *head, *tail;
    /* async sends and receives that are posted but not yet complete: they
     * leave the queue at once (so a send never waits behind the peer's own
     * send, nor a receive behind another: isend / irecv exchanges in any
     * order cannot deadlock); the progress thread polls them between jobs,
     * oldest first */
    wk__dist_job *posted;
    /* receive scratch reused by every job (jobs run one at a time): a fresh
     * malloc of a large buffer per call is an mmap and a page fault per
     * page, which cost as much as the transfer itself at 256 KiB */
    void *scratch;
    size_t scratch_cap;
    pthread_t thread;
    bool has_thread, stopping;
};

/* A queued or inline collective: run(job) fills result / status / msg. */
struct wk__dist_job {
    wk__dist_job *next;
    wk_comm *c;
    wk_tensor *(*run)(wk__dist_job *j); /* returns the result (NULL for send / barrier / errors) */
    const char *op;
    wk_tensor *x;       /* input (a reference of the job's) */
    int a, b;           /* op-specific ints: dim, root, peer, tag, op */
    wk_tensor *result;
    wk_status status;
    char msg[512];
    atomic_bool done;
    bool is_async;      /* runs on the progress thread (a send may then be posted and finish later) */
    void *post;         /* a posted send's or receive's requests (mpi_p2p.c), polled by wk__p2p_poll */
    /* a posted receive's next step once post completes (got: bytes
     * received): 1 done (result set), 0 posted again (post set), -1 an
     * error (recorded here); NULL: done when post completes (a send) */
    int (*advance)(wk__dist_job *j, size_t got);
    int phase;
    wk_tensor *keep;    /* the host bytes a posted send reads until it completes */
    int64_t hdr[2 + WK_MAX_RANK]; /* a posted send's shape header */
};

/* ---- a bare communicator of backend b (rank 0 of 1, opts' timeout), and
 * its release without any backend teardown (comm.c) ---- */
wk_comm *wk__comm_new(const char *op, wk_comm_backend b, const wk_comm_opts *o);
void      wk__comm_delete(wk_comm *c);

/* ---- errors that name the collective, this rank and the peer ---- */
wk_status wk__comm_fail(wk_comm *c, const char *op, int peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool      wk__comm_check(const char *op, const wk_comm *c);

/* ---- transport (mpi_p2p.c): blocking exchanges with the timeout ---- */
/* Post a send of sn bytes to `to` and a receive of rn bytes from `from`
 * (either may be skipped with a peer of -1), wait for both. A short or long
 * message is WK_ERR_COMM naming the peer and both sizes. */
wk_status wk__p2p_exchange(wk_comm *c, const char *op, const void *sbuf, size_t sn, int to, void *rbuf, size_t rn,
                           int from, int tag);
/* A receive of at most cap bytes whose size the sender chose (*got). */
wk_status wk__p2p_recv_any(wk_comm *c, const char *op, void *rbuf, size_t cap, size_t *got, int from, int tag);
wk_status wk__mpi_barrier(wk_comm *c, const char *op);
/* Post the sends of a header and a payload to peer without waiting; *post
 * is their handle. wk__p2p_poll: 1 complete (post freed), 0 pending, -1 an
 * error or the timeout (recorded, naming the peer; post freed). */
wk_status wk__p2p_post_send(wk_comm *c, const char *op, const void *hdr, size_t hn, int htag, const void *buf,
                            size_t n, int peer, int tag, void **post);
/* Post one receive of at most cap bytes from peer without waiting. */
wk_status wk__p2p_post_recv(wk_comm *c, const char *op, void *buf, size_t cap, int peer, int tag, void **post);
/* got (may be NULL): the bytes the (first) request received. */
int       wk__p2p_poll(wk_comm *c, const char *op, void *post, size_t *got);
wk_status wk__mpi_init_world(const char *op, int *argc, char ***argv, wk_comm *c);
wk_status wk__mpi_from(const char *op, const void *mpi_comm, wk_comm *c);
wk_status wk__mpi_split(const char *op, wk_comm *parent, int color, int key, wk_comm *c, bool *member);
void      wk__mpi_free(wk_comm *c);
void      wk__mpi_abort(wk_comm *c, int code);

/* ---- the reduction kernels (reduce_kernels.c): acc[i] = acc[i] op src[i] */
bool wk__dist_reducible(wk_dtype dt, wk_dist_op op);
void wk__dist_reduce(wk_dtype dt, wk_dist_op op, void *acc, const void *src, int64_t n);
/* acc[i] /= k (float dtypes: AVG's last step) */
void wk__dist_divide(wk_dtype dt, void *acc, int64_t n, int k);

/* ---- jobs (comm.c) ---- */
/* Advance the posted sends and receives once; only the holder of busy
 * (the running job) calls it: a blocking job's waits call it, so a posted
 * receive's payload is posted while this rank blocks in a send to the very
 * peer that waits for it (irecv, then a blocking send, on both sides). */
void wk__comm_progress(wk_comm *c);
/* Run j in issue order: inline on this thread when nothing is queued,
 * else after the queue; returns the job's result, re-raising its error on
 * this thread. Frees j. */
wk_tensor *wk__dist_run_sync(wk__dist_job *j);
/* The same, also giving the job's status (WK_OK, or the error it raised
 * here; a NULL job: the pending error that made it NULL). */
wk_tensor *wk__dist_run_sync_status(wk__dist_job *j, wk_status *st);
/* Queue j on the progress thread (started on first use). */
wk_dist_work *wk__dist_run_async(wk__dist_job *j);
wk__dist_job *wk__dist_job_new(wk_comm *c, const char *op, const wk_tensor *x,
                               wk_tensor *(*run)(wk__dist_job *), int a, int b);

/* ---- NCCL (nccl_comm.c) ---- */
wk_tensor *wk__nccl_run(wk__dist_job *j); /* the NCCL side of a job; WK_ERR_NOT_COMPILED without it */
void       wk__nccl_free(wk_comm *c);

/* The communicator's scratch, at least n bytes (NULL + WK_ERR_OOM). Valid
 * until the next call; only the job running now may use it. */
void *wk__comm_scratch(wk_comm *c, const char *op, size_t n);

/* Bytes of a contiguous CPU tensor's first element. */
void  *wk__dist_host_ptr(const wk_tensor *t);
size_t wk__dist_nbytes(const wk_tensor *t);

#endif /* WICK_DIST_INTERNAL_H */
