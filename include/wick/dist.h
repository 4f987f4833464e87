/* wick — beyond one process: communicators and collectives over MPI (CPU
 * tensors) and NCCL (CUDA tensors), for tensor-, pipeline- and data-parallel
 * work (the model floor's --tp / --pp, the DDP wrapper in train.h).
 *
 *   wk_comm *w = wk_comm_init_mpi(&argc, &argv, NULL);  // MPI_Init if nobody did
 *   wk_tensor *s = wk_all_reduce(w, x, WK_DIST_SUM);     // a new tensor, every rank the same
 *   wk_comm_free(w);                                     // MPI_Finalize if wick did MPI_Init
 *
 * Every rank of a communicator must issue the same collectives in the same
 * order (as in MPI and NCCL), with matching shapes and dtypes; a mismatch is
 * an error naming the collective and the peer where it can be seen (sizes),
 * and at worst a timeout, never memory corruption.
 *
 * Tensors: any layout (views, broadcasts, transposes: a non-contiguous input
 * is packed first) and every element dtype (u8, u32, i16, i32, i64, bf16,
 * f16, f32, f64, f8e4m3); GGML block dtypes only where no arithmetic is
 * needed (broadcast, all_gather along dim 0 ... -2, send / recv). Results
 * are new contiguous tensors on the input's device. Reductions run in wick's
 * own fixed order (a ring: each chunk is reduced along the ring, then passed
 * on), so every rank gets bit-identical results and a run is repeatable;
 * half types are summed in f32 at each hop and rounded back.
 *
 * Errors (wk_last_error) name the collective, this rank and the peer:
 *   "wk_all_reduce: rank 0 of 2: timed out after 30.0 s waiting for rank 1"
 * status WK_ERR_COMM for a peer that failed, vanished, or did not arrive
 * within the communicator's timeout (opts.timeout_s; default 60 s or the
 * environment's WICK_DIST_TIMEOUT, in seconds). After a WK_ERR_COMM the
 * communicator is broken: every later call on it fails at once (the
 * program should report and exit; wk_comm_abort ends every MPI rank). A peer
 * process that dies makes Open MPI's launcher end the job as well.
 *
 * Threads: a communicator may be used from any thread, one call at a time
 * per communicator being issued in the order the ranks agree on; the
 * asynchronous forms run on the communicator's own progress thread, in
 * issue order, so compute overlaps communication. MPI is initialised with
 * MPI_THREAD_MULTIPLE when wick does it; a caller that initialised MPI
 * itself must have asked for at least MPI_THREAD_SERIALIZED.
 */
#ifndef WICK_DIST_H
#define WICK_DIST_H
#include "wick/autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_comm wk_comm;

typedef enum wk_dist_op {
    WK_DIST_SUM = 0,
    WK_DIST_AVG,   /* the sum divided by the size; float dtypes only (WK_ERR_DTYPE otherwise) */
    WK_DIST_MAX,
    WK_DIST_MIN,
    WK_DIST_PROD,
    WK_DIST_OP_COUNT
} wk_dist_op;

typedef enum wk_comm_backend {
    WK_COMM_SELF = 0, /* one process, no library: collectives are copies (tests, single-rank code paths) */
    WK_COMM_MPI,      /* Open MPI (or any MPI-3), host memory */
    WK_COMM_NCCL      /* NCCL over CUDA devices (bootstrapped through an MPI communicator) */
} wk_comm_backend;

typedef struct wk_comm_opts {
    /* seconds a collective waits for a peer before WK_ERR_COMM; <= 0: the
     * environment's WICK_DIST_TIMEOUT, else 60 */
    double timeout_s;
} wk_comm_opts;

/* True when this build has MPI (NCCL) compiled in. */
bool wk_dist_has_mpi(void);
bool wk_dist_has_nccl(void);

/* The world communicator over MPI_COMM_WORLD. Calls MPI_Init_thread
 * (MPI_THREAD_MULTIPLE) if MPI is not yet initialised (argc / argv may be
 * NULL), and then MPI_Finalize when the last communicator wick made is
 * freed. Without MPI compiled in: NULL, WK_ERR_NOT_COMPILED. Launched
 * without mpirun, it is a world of size 1 (MPI's singleton). */
wk_comm *wk_comm_init_mpi(int *argc, char ***argv, const wk_comm_opts *opts);
/* A communicator over a caller's MPI communicator (mpi_comm points to an
 * MPI_Comm, which wick duplicates, so its traffic never mixes with the
 * caller's). MPI must be initialised (WK_ERR_ARG otherwise). */
wk_comm *wk_comm_from_mpi(const void *mpi_comm, const wk_comm_opts *opts);
/* A communicator of size 1 needing no library (collectives are copies,
 * send / recv to self are refused). */
wk_comm *wk_comm_self(const wk_comm_opts *opts);
/* NCCL communicator over CUDA device dev (one device per rank), its unique
 * id broadcast over the MPI (or self) communicator boot, whose ranks it
 * takes. Collectives then take tensors on dev and run on dev's stream;
 * NCCL's own reduction order applies (results agree across ranks but need
 * not match the MPI ring's bits for inexact float sums), i16 is reduced as
 * i32 and f8e4m3 as f32 (NCCL has no i16, and f8 only on sm90+), and NCCL
 * send / recv have no tags: between one pair, receive in the order sent.
 * A timeout aborts the NCCL communicator (ncclCommAbort) and names the
 * collective and this rank, not the peer (NCCL does not tell). NULL,
 * WK_ERR_NOT_COMPILED without NCCL. */
wk_comm *wk_comm_init_nccl(wk_comm *boot, wk_device *dev, const wk_comm_opts *opts);
/* Sub-groups (MPI_Comm_split): ranks with the same color form one
 * communicator, ordered by key (then by their rank here). Collective over
 * c: every rank calls it. color < 0: this rank joins none (returns NULL
 * with no error recorded). */
wk_comm *wk_comm_split(wk_comm *c, int color, int key);
/* Frees; waits for this communicator's pending asynchronous work first.
 * NULL: nothing. */
void wk_comm_free(wk_comm *c);
/* Ends every process of an MPI communicator's job (MPI_Abort, exit code
 * code): for a program that cannot go on, never a reaction of wick's own.
 * Returns only when there is no job to end (a self or NCCL communicator,
 * NULL: WK_ERR_ARG), so the caller then exits as it would anyway. */
wk_status wk_comm_abort(wk_comm *c, int code);

int             wk_comm_rank(const wk_comm *c);  /* -1 for NULL */
int             wk_comm_size(const wk_comm *c);  /* -1 for NULL */
wk_comm_backend wk_comm_backend_of(const wk_comm *c);
double          wk_comm_timeout(const wk_comm *c);
/* False once a WK_ERR_COMM has broken it. */
bool            wk_comm_ok(const wk_comm *c);

/* ------------------------------------------------------- collectives */

/* op over every rank's x (same shape and dtype on every rank). */
wk_tensor *wk_all_reduce(wk_comm *c, const wk_tensor *x, wk_dist_op op);
/* Every rank's x concatenated along dim (rank order). Sizes along dim may
 * differ between ranks (all other dims must agree); dim < 0 counts from the
 * end. */
wk_tensor *wk_all_gather(wk_comm *c, const wk_tensor *x, int dim);
/* op over every rank's x (same shape on all), then rank r keeps part r of
 * dim split as wk_chunk would split it into size parts (ceil(n/size) each,
 * the last ones smaller or empty: uneven sizes allowed). */
wk_tensor *wk_reduce_scatter(wk_comm *c, const wk_tensor *x, int dim, wk_dist_op op);
/* root's x on every rank. Other ranks' x gives the shape and dtype they
 * expect (it may be NULL: then they take root's, sent first). */
wk_tensor *wk_broadcast(wk_comm *c, const wk_tensor *x, int root);
/* Point to point: x to rank peer / a tensor from rank peer (its shape and
 * dtype travel with it). tag >= 0 separates streams between one pair. */
wk_status  wk_send(wk_comm *c, const wk_tensor *x, int peer, int tag);
wk_tensor *wk_recv(wk_comm *c, int peer, int tag);
wk_status  wk_barrier(wk_comm *c);

/* ------------------------------------------- asynchronous forms */

/* A pending collective: started at once on the communicator's progress
 * thread (in issue order, after the communicator's earlier work); the
 * inputs are referenced (not copied) until it completes: do not write into
 * them meanwhile. Sends and receives (wk_recv too) are posted and then
 * leave the order: a pending receive never holds up the calls after it,
 * so exchanges work whichever side posts first; receives from one peer on
 * one tag take its messages in the order they were issued. */
typedef struct wk_dist_work wk_dist_work;
wk_dist_work *wk_all_reduce_async(wk_comm *c, const wk_tensor *x, wk_dist_op op);
wk_dist_work *wk_all_gather_async(wk_comm *c, const wk_tensor *x, int dim);
wk_dist_work *wk_reduce_scatter_async(wk_comm *c, const wk_tensor *x, int dim, wk_dist_op op);
wk_dist_work *wk_broadcast_async(wk_comm *c, const wk_tensor *x, int root);
wk_dist_work *wk_send_async(wk_comm *c, const wk_tensor *x, int peer, int tag);
wk_dist_work *wk_recv_async(wk_comm *c, int peer, int tag);
/* Block until done. Returns the result (a new reference; NULL for send, and
 * NULL + the collective's error on failure) and frees w. */
wk_tensor *wk_dist_wait(wk_dist_work *w);
/* The same, returning the job's own status (WK_OK, or the error it also
 * records here) and its result in *out (may be NULL: then a result is
 * freed): tells a send's success from a failure without clearing errors. */
wk_status  wk_dist_wait_status(wk_dist_work *w, wk_tensor **out);
/* Done yet (never blocks)? */
bool       wk_dist_test(const wk_dist_work *w);

/* ------------------------------------------- differentiable forms
 * Tracked ops for autograd (wick/autograd.h): each records a node when its
 * input is tracked, and its backward runs the adjoint collective on the
 * same communicator (so every rank must run backward through the same
 * ops in the same order, as the forward). */

/* all_reduce sum; backward: all_reduce sum of the gradient. */
wk_tensor *wk_dist_all_reduce_tracked(wk_comm *c, const wk_tensor *x);
/* all_gather along dim; backward: this rank's slice of the gradient
 * (reduce_scatter sum along dim: each rank's slice summed over ranks). */
wk_tensor *wk_dist_all_gather_tracked(wk_comm *c, const wk_tensor *x, int dim);
/* Tensor-parallel region entry (Megatron's f): identity forward,
 * all_reduce sum backward. */
wk_tensor *wk_dist_copy_to_region(wk_comm *c, const wk_tensor *x);
/* Tensor-parallel region exit (Megatron's g): all_reduce sum forward,
 * identity backward. */
wk_tensor *wk_dist_reduce_from_region(wk_comm *c, const wk_tensor *x);

/* Names: "sum", "avg", "max", "min", "prod"; "invalid". */
const char *wk_dist_op_name(wk_dist_op op);

#ifdef __cplusplus
}
#endif
#endif /* WICK_DIST_H */
