/* NCCL communicators: CUDA tensors reduced and moved on the device, on the
 * device's own stream (wk__device_stream), so NCCL's kernels queue behind
 * the ops that made their inputs and before the ops that read the results.
 *
 * Bootstrapping and control go over a private split of the MPI (or self)
 * communicator the NCCL one was made from: rank 0's unique id, the shape
 * records all_gather must agree on, and the shape header that travels
 * ahead of a broadcast or a send. The bytes themselves go through NCCL:
 *   all_reduce      ncclAllReduce (avg: ncclAvg)
 *   all_gather      ncclAllGather when every rank gives the same size, else
 *                   one grouped ncclBroadcast per rank of its block
 *   reduce_scatter  ncclReduceScatter when the dim divides evenly, else an
 *                   all_reduce of the whole and this rank's part of it
 *   broadcast       a header over the boot communicator, ncclBroadcast
 *   send / recv     a header over the boot communicator (with the tag),
 *                   ncclSend / ncclRecv (NCCL has no tags: between one pair
 *                   the receives must come in the order of the sends)
 *   barrier         a one-element ncclAllReduce, waited for
 * NCCL has no 16-bit integer type and reduces f8 only on sm90+: i16 is
 * reduced as i32 and f8e4m3 as f32, each converted back once at the end.
 *
 * The communicator is non-blocking (ncclConfig_t.blocking = 0): every wait
 * polls ncclCommGetAsyncError and the stream against the communicator's
 * timeout, and on a timeout or an NCCL error aborts the communicator
 * (ncclCommAbort) and breaks it, naming the collective and the rank (NCCL
 * does not say which peer is missing).
 *
 * Without NCCL compiled in (WICK_HAVE_NCCL), creation is a clean
 * WK_ERR_NOT_COMPILED. */
#include "dist/dist_internal.h"
#include "base/error.h"

#ifndef WICK_HAVE_NCCL
wk_comm *wk_comm_init_nccl(wk_comm *boot, wk_device *dev, const wk_comm_opts *opts) {
    (void)boot, (void)dev, (void)opts;
    wk__err(WK_ERR_NOT_COMPILED, "wk_comm_init_nccl", "this wick was built without NCCL (a CUDA build with nccl.h)");
    return NULL;
}
wk_tensor *wk__nccl_run(wk__dist_job *j) {
    wk__err(WK_ERR_NOT_COMPILED, j->op, "this wick was built without NCCL");
    return NULL;
}
void wk__nccl_free(wk_comm *c) { (void)c; }

#else /* WICK_HAVE_NCCL */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include "tensor/tensor.h"

typedef struct nccl_side {
    ncclComm_t comm;
    wk_comm *boot; /* our own split of the caller's boot communicator */
    cudaStream_t stream;
    cudaEvent_t done; /* recorded after each call: its completion, not the whole stream's */
    int ordinal;
    bool aborted;
} nccl_side;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap(long *ns) {
    struct timespec ts = {0, *ns};
    nanosleep(&ts, NULL);
    if (*ns < 1000000) *ns *= 2;
}

static void abort_side(nccl_side *s) {
    if (s->comm && !s->aborted) ncclCommAbort(s->comm);
    s->aborted = true;
}

/* Wait for the call that returned r (ncclSuccess / ncclInProgress) and then
 * for the stream, against the timeout; an error or a timeout aborts NCCL
 * and breaks c. */
static wk_status nccl_wait(wk_comm *c, const char *op, ncclResult_t r) {
    nccl_side *s = c->nccl;
    if (r != ncclSuccess && r != ncclInProgress) {
        abort_side(s);
        return wk__comm_fail(c, op, -1, "NCCL refused the call: %s (%s)", ncclGetErrorString(r), ncclGetLastError(s->comm));
    }
    double deadline = now_s() + c->timeout_s;
    long ns = 1000;
    bool recorded = false;
    for (;;) {
        ncclResult_t ae = ncclSuccess;
        ncclResult_t q = ncclCommGetAsyncError(s->comm, &ae);
        if (q != ncclSuccess) ae = q;
        if (ae != ncclSuccess && ae != ncclInProgress) {
            const char *why = ncclGetLastError(s->comm);
            abort_side(s);
            return wk__comm_fail(c, op, -1, "NCCL failed: %s (%s)", ncclGetErrorString(ae), why ? why : "");
        }
        if (ae == ncclSuccess) {
            /* enqueued (a non-blocking call may still be enqueuing while
             * ncclInProgress): mark the stream here and wait for the mark */
            cudaError_t e = recorded ? cudaSuccess : cudaEventRecord(s->done, s->stream);
            recorded = true;
            if (e == cudaSuccess) e = cudaEventQuery(s->done);
            if (e == cudaSuccess) return WK_OK;
            if (e != cudaErrorNotReady) {
                abort_side(s);
                return wk__comm_fail(c, op, -1, "CUDA error while NCCL ran: %s", cudaGetErrorString(e));
            }
        }
        if (now_s() > deadline) {
            abort_side(s);
            return wk__comm_fail(c, op, -1,
                                 "timed out after %.1f s waiting for the other %d rank(s) on NCCL (NCCL does not say "
                                 "which one is missing); the NCCL communicator is aborted",
                                 c->timeout_s, c->size - 1);
        }
        nap(&ns);
    }
}

static bool nccl_type(wk_dtype dt, ncclDataType_t *t) {
    switch (dt) {
    case WK_U8: *t = ncclUint8; return true;
    case WK_U32: *t = ncclUint32; return true;
    case WK_I32: *t = ncclInt32; return true;
    case WK_I64: *t = ncclInt64; return true;
    case WK_F16: *t = ncclFloat16; return true;
    case WK_BF16: *t = ncclBfloat16; return true;
    case WK_F32: *t = ncclFloat32; return true;
    case WK_F64: *t = ncclFloat64; return true;
    default: return false;
    }
}

/* The dtype a reduction runs in on NCCL. */
static wk_dtype wire_dtype(wk_dtype dt) { return dt == WK_I16 ? WK_I32 : dt == WK_F8E4M3 ? WK_F32 : dt; }

static ncclRedOp_t nccl_op(wk_dist_op op) {
    switch (op) {
    case WK_DIST_AVG: return ncclAvg;
    case WK_DIST_MAX: return ncclMax;
    case WK_DIST_MIN: return ncclMin;
    case WK_DIST_PROD: return ncclProd;
    default: return ncclSum;
    }
}

static void *dptr(const wk_tensor *t) { return wk__dist_host_ptr(t); /* buf + offset: a device address here */ }

/* A boot-communicator failure breaks the NCCL communicator too. */
static void boot_failed(wk_comm *c) {
    if (wk_last_status() == WK_ERR_COMM) atomic_store(&c->broken, true);
}

static wk_tensor *move_to_front(const wk_tensor *x, int d) {
    int r = wk_rank(x), perm[WK_MAX_RANK];
    perm[0] = d;
    for (int i = 0, k = 1; i < r; i++)
        if (i != d) perm[k++] = i;
    wk_tensor *v = wk_permute(x, perm, r), *out = v ? wk_contiguous(v) : NULL;
    wk_tensor_free(v);
    return out;
}
static wk_tensor *move_from_front(const wk_tensor *x, int d) {
    int r = wk_rank(x), perm[WK_MAX_RANK];
    for (int i = 0; i < r; i++) perm[i] = i < d ? i + 1 : i == d ? 0 : i;
    wk_tensor *v = wk_permute(x, perm, r), *out = v ? wk_contiguous(v) : NULL;
    wk_tensor_free(v);
    return out;
}

/* ------------------------------------------------------------ reductions */

/* A new contiguous tensor in the wire dtype: the op over every rank's xw
 * (xw contiguous, already in the wire dtype). */
static wk_tensor *all_reduce_wire(wk_comm *c, const char *op, const wk_tensor *xw, wk_dist_op rop) {
    nccl_side *s = c->nccl;
    ncclDataType_t t = ncclUint8;
    if (!nccl_type(wk_tensor_dtype(xw), &t)) {
        wk__err(WK_ERR_DTYPE, op, "NCCL cannot reduce %s", wk_dtype_name(wk_tensor_dtype(xw)));
        return NULL;
    }
    int64_t shp[WK_MAX_RANK];
    for (int k = 0; k < wk_rank(xw); k++) shp[k] = wk_dim(xw, k);
    wk_tensor *out = wk_empty(shp, wk_rank(xw), wk_tensor_dtype(xw), c->dev);
    if (!out) return NULL;
    size_t n = (size_t)wk_numel(xw);
    if (n && nccl_wait(c, op, ncclAllReduce(dptr(xw), dptr(out), n, t, nccl_op(rop), s->comm, s->stream)) != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}

static wk_tensor *to_wire(const wk_tensor *x) {
    wk_dtype dt = wk_tensor_dtype(x), wt = wire_dtype(dt);
    if (wt == dt) return wk_contiguous(x);
    wk_tensor *w = wk_to_dtype(x, wt), *c = w ? wk_contiguous(w) : NULL;
    wk_tensor_free(w);
    return c;
}

/* Consumes w. */
static wk_tensor *from_wire(wk_tensor *w, wk_dtype dt) {
    if (!w || wk_tensor_dtype(w) == dt) return w;
    wk_tensor *o = wk_to_dtype(w, dt);
    wk_tensor_free(w);
    return o;
}

static wk_tensor *nccl_all_reduce(wk__dist_job *j) {
    wk_tensor *xw = to_wire(j->x);
    if (!xw) return NULL;
    wk_tensor *out = all_reduce_wire(j->c, j->op, xw, (wk_dist_op)j->a);
    wk_tensor_free(xw);
    return from_wire(out, wk_tensor_dtype(j->x));
}

static wk_tensor *nccl_reduce_scatter(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    int rank = wk_rank(j->x), d = j->a < 0 ? j->a + rank : j->a, N = c->size;
    wk_dist_op rop = (wk_dist_op)j->b;
    wk_tensor *xw = to_wire(j->x), *xm = xw ? move_to_front(xw, d) : NULL, *part = NULL;
    wk_tensor_free(xw);
    if (!xm) return NULL;
    int64_t n0 = wk_dim(xm, 0), cs = (n0 + N - 1) / N, lo = (int64_t)c->rank * cs, hi = lo + cs;
    if (lo > n0) lo = n0;
    if (hi > n0) hi = n0;
    int64_t shp[WK_MAX_RANK];
    for (int k = 0; k < rank; k++) shp[k] = wk_dim(xm, k);
    shp[0] = hi - lo;
    if (n0 % N == 0 && n0 > 0) {
        /* even parts: NCCL's own reduce-scatter */
        ncclDataType_t t = ncclUint8;
        nccl_type(wk_tensor_dtype(xm), &t);
        part = wk_empty(shp, rank, wk_tensor_dtype(xm), c->dev);
        size_t cnt = (size_t)(wk_numel(xm) / N);
        if (part && cnt &&
            nccl_wait(c, j->op, ncclReduceScatter(dptr(xm), dptr(part), cnt, t, nccl_op(rop), s->comm, s->stream)) != WK_OK) {
            wk_tensor_free(part);
            part = NULL;
        }
    } else {
        /* uneven (wk_chunk's split): reduce the whole, keep this rank's part */
        wk_tensor *full = all_reduce_wire(c, j->op, xm, rop);
        wk_tensor *v = full ? wk_narrow(full, 0, lo, hi - lo) : NULL;
        part = v ? wk_contiguous(v) : NULL;
        wk_tensor_free(v);
        wk_tensor_free(full);
    }
    wk_tensor_free(xm);
    wk_tensor *out = part ? move_from_front(part, d) : NULL;
    wk_tensor_free(part);
    return from_wire(out, wk_tensor_dtype(j->x));
}

/* ------------------------------------------------ shape records (control) */

#define REC_LEN (2 + WK_MAX_RANK)

static void rec_fill(const wk_tensor *x, int64_t *r) {
    memset(r, 0, sizeof(int64_t) * REC_LEN);
    r[0] = wk_tensor_dtype(x);
    r[1] = wk_rank(x);
    for (int k = 0; k < wk_rank(x); k++) r[2 + k] = wk_dim(x, k);
}

static bool rec_ok(const int64_t *r) {
    if (r[0] < 0 || r[0] >= WK_DTYPE_COUNT || r[1] < 0 || r[1] > WK_MAX_RANK) return false;
    for (int k = 0; k < r[1]; k++)
        if (r[2 + k] < 0) return false;
    return true;
}

static wk_tensor *rec_tensor(const int64_t *r) {
    int64_t n = REC_LEN;
    return wk_from_host(r, sizeof(int64_t) * REC_LEN, &n, 1, WK_I64, wk_cpu());
}

static bool rec_read(const wk_tensor *t, int64_t *r, size_t count) {
    return wk_numel(t) == (int64_t)count && wk_to_host(t, r, sizeof(int64_t) * count) == WK_OK;
}

/* ------------------------------------------------------------ all_gather */

static wk_tensor *nccl_all_gather(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    const char *op = j->op;
    int rank = wk_rank(j->x), d = j->a < 0 ? j->a + rank : j->a, N = c->size;
    wk_dtype dt = wk_tensor_dtype(j->x);
    int64_t mine[REC_LEN], *all = malloc(sizeof(int64_t) * REC_LEN * (size_t)N);
    size_t *offs = calloc(2 * (size_t)N, sizeof(size_t));
    wk_tensor *out = NULL, *xm = NULL, *res = NULL;
    if (!all || !offs) {
        wk__err(WK_ERR_OOM, op, "cannot allocate shape records");
        goto done;
    }
    rec_fill(j->x, mine);
    wk_tensor *rt = rec_tensor(mine), *g = rt ? wk_all_gather(s->boot, rt, 0) : NULL;
    bool got = g && rec_read(g, all, (size_t)REC_LEN * (size_t)N);
    wk_tensor_free(rt);
    wk_tensor_free(g);
    if (!got) {
        boot_failed(c);
        goto done;
    }
    int64_t total = 0;
    bool same = true;
    for (int i = 0; i < N; i++) {
        const int64_t *o = all + (size_t)i * REC_LEN;
        bool ok = o[0] == mine[0] && o[1] == mine[1];
        for (int k = 0; ok && k < rank; k++) ok = k == d || o[2 + k] == mine[2 + k];
        if (!ok) {
            char a[160], b[160];
            wk__err(WK_ERR_SHAPE, op, "rank %d of %d has %s %s, rank %d has %s %s: all dims but %d must agree", c->rank, N,
                    wk_dtype_name(dt), wk__shape_str(mine + 2, rank, a, sizeof a), i, wk_dtype_name((wk_dtype)o[0]),
                    wk__shape_str(o + 2, (int)o[1], b, sizeof b), d);
            goto done;
        }
        total += o[2 + d];
        same = same && o[2 + d] == mine[2 + d];
    }
    xm = move_to_front(j->x, d);
    if (!xm) goto done;
    int64_t shp[WK_MAX_RANK];
    for (int k = 0; k < rank; k++) shp[k] = wk_dim(xm, k);
    shp[0] = total;
    res = wk_empty(shp, rank, dt, c->dev);
    if (!res) goto done;
    size_t rb = wk_dim(xm, 0) ? wk__dist_nbytes(xm) / (size_t)wk_dim(xm, 0) : 0;
    if (!rb) { /* this rank's block is empty: the bytes per index from the shape */
        const wk_dtype_info *di = wk_dtype_info_of(dt);
        int64_t rest = 1;
        for (int k = 1; k < rank; k++) rest *= shp[k];
        rb = (size_t)(rest / di->block_elems * di->block_bytes);
    }
    size_t *lens = offs + N, o = 0;
    for (int i = 0; i < N; i++) {
        offs[i] = o;
        lens[i] = (size_t)all[(size_t)i * REC_LEN + 2 + d] * rb;
        o += lens[i];
    }
    ncclResult_t r = ncclSuccess;
    char *rbuf = dptr(res);
    if (same) {
        if (lens[0]) r = ncclAllGather(dptr(xm), rbuf, lens[0], ncclUint8, s->comm, s->stream);
    } else {
        /* uneven blocks: each rank broadcasts its own, in one group */
        ncclGroupStart();
        for (int i = 0; i < N && (r == ncclSuccess || r == ncclInProgress); i++)
            if (lens[i])
                r = ncclBroadcast(i == c->rank ? dptr(xm) : rbuf + offs[i], rbuf + offs[i], lens[i], ncclUint8, i,
                                  s->comm, s->stream);
        ncclResult_t e = ncclGroupEnd();
        if (r == ncclSuccess || r == ncclInProgress) r = e;
    }
    if (o && nccl_wait(c, op, r) != WK_OK) goto done;
    out = move_from_front(res, d);
done:
    wk_tensor_free(xm);
    wk_tensor_free(res);
    free(all);
    free(offs);
    return out;
}

/* ---------------------------------------------------- broadcast, send, recv */

static wk_tensor *nccl_broadcast(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    int root = j->a;
    bool is_root = c->rank == root;
    int64_t hdr[REC_LEN];
    if (is_root) rec_fill(j->x, hdr);
    wk_tensor *ht = is_root ? rec_tensor(hdr) : NULL;
    wk_tensor *hg = (!is_root || ht) ? wk_broadcast(s->boot, ht, root) : NULL;
    bool got = hg && rec_read(hg, hdr, REC_LEN);
    wk_tensor_free(ht);
    wk_tensor_free(hg);
    if (!got) {
        boot_failed(c);
        return NULL;
    }
    if (!rec_ok(hdr)) {
        wk__comm_fail(c, j->op, root, "received a malformed shape header from");
        return NULL;
    }
    wk_tensor *out = is_root ? wk_copy(j->x) : wk_empty(hdr + 2, (int)hdr[1], (wk_dtype)hdr[0], c->dev);
    if (!out) {
        atomic_store(&c->broken, true); /* the root still sends: this rank is out of step */
        return NULL;
    }
    size_t nb = wk__dist_nbytes(out);
    if (nb && nccl_wait(c, j->op, ncclBroadcast(dptr(out), dptr(out), nb, ncclUint8, root, s->comm, s->stream)) != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    if (!is_root && j->x) {
        int64_t want[REC_LEN];
        rec_fill(j->x, want);
        if (memcmp(want, hdr, sizeof want) != 0) {
            char a[160], b[160];
            wk__err(WK_ERR_SHAPE, j->op, "rank %d expected %s %s from root %d, which sent %s %s", c->rank,
                    wk_dtype_name((wk_dtype)want[0]), wk__shape_str(want + 2, (int)want[1], a, sizeof a), root,
                    wk_dtype_name((wk_dtype)hdr[0]), wk__shape_str(hdr + 2, (int)hdr[1], b, sizeof b));
            wk_tensor_free(out);
            return NULL;
        }
    }
    return out;
}

static wk_tensor *nccl_send(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    int64_t hdr[REC_LEN];
    rec_fill(j->x, hdr);
    wk_tensor *ht = rec_tensor(hdr);
    if (!ht) return NULL;
    wk_status st = wk_send(s->boot, ht, j->a, j->b);
    wk_tensor_free(ht);
    if (st != WK_OK) {
        boot_failed(c);
        return NULL;
    }
    wk_tensor *xc = wk_contiguous(j->x);
    if (!xc) {
        atomic_store(&c->broken, true); /* the peer now waits for the bytes */
        return NULL;
    }
    size_t nb = wk__dist_nbytes(xc);
    if (nb) nccl_wait(c, j->op, ncclSend(dptr(xc), nb, ncclUint8, j->a, s->comm, s->stream));
    wk_tensor_free(xc);
    return NULL; /* the status is the job's error state */
}

static wk_tensor *nccl_recv(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    int64_t hdr[REC_LEN];
    wk_tensor *ht = wk_recv(s->boot, j->a, j->b);
    bool got = ht && rec_read(ht, hdr, REC_LEN);
    wk_tensor_free(ht);
    if (!got) {
        boot_failed(c);
        return NULL;
    }
    if (!rec_ok(hdr)) {
        wk__comm_fail(c, j->op, j->a, "received a malformed shape header from");
        return NULL;
    }
    wk_tensor *out = wk_empty(hdr + 2, (int)hdr[1], (wk_dtype)hdr[0], c->dev);
    if (!out) {
        atomic_store(&c->broken, true);
        return NULL;
    }
    size_t nb = wk__dist_nbytes(out);
    if (nb && nccl_wait(c, j->op, ncclRecv(dptr(out), nb, ncclUint8, j->a, s->comm, s->stream)) != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}

static wk_tensor *nccl_barrier(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    int64_t one = 1;
    wk_tensor *t = wk_zeros(&one, 1, WK_F32, c->dev);
    if (!t) return NULL;
    nccl_wait(c, j->op, ncclAllReduce(dptr(t), dptr(t), 1, ncclFloat32, ncclSum, s->comm, s->stream));
    wk_tensor_free(t);
    return NULL;
}

/* ---------------------------------------------------------------- entry */

wk_tensor *wk__nccl_run(wk__dist_job *j) {
    wk_comm *c = j->c;
    nccl_side *s = c->nccl;
    if (!s || s->aborted) {
        wk__comm_fail(c, j->op, -1, "the NCCL communicator was aborted");
        return NULL;
    }
    if (j->x && !wk_same_device(wk_tensor_device(j->x), c->dev)) {
        wk__err(WK_ERR_DEVICE, j->op, "rank %d: the tensor is on %s, this NCCL communicator's device is %s", c->rank,
                wk_device_name(wk_tensor_device(j->x)), wk_device_name(c->dev));
        return NULL;
    }
    /* the job may run on the progress thread: NCCL and the stream query
     * need this device current there */
    cudaError_t e = cudaSetDevice(s->ordinal);
    if (e != cudaSuccess) {
        wk__err(WK_ERR_DEVICE, j->op, "cudaSetDevice(%d): %s", s->ordinal, cudaGetErrorString(e));
        return NULL;
    }
    /* the job's kind, by its public name (one name per kind, collectives.c) */
    const char *op = j->op;
    if (!strcmp(op, "wk_all_reduce")) return nccl_all_reduce(j);
    if (!strcmp(op, "wk_all_gather")) return nccl_all_gather(j);
    if (!strcmp(op, "wk_reduce_scatter")) return nccl_reduce_scatter(j);
    if (!strcmp(op, "wk_broadcast")) return nccl_broadcast(j);
    if (!strcmp(op, "wk_send")) return nccl_send(j);
    if (!strcmp(op, "wk_recv")) return nccl_recv(j);
    if (!strcmp(op, "wk_barrier")) return nccl_barrier(j);
    wk__err(WK_ERR_INTERNAL, op, "no NCCL form of this job");
    return NULL;
}

void wk__nccl_free(wk_comm *c) {
    nccl_side *s = c->nccl;
    if (!s) return;
    cudaSetDevice(s->ordinal);
    if (atomic_load(&c->broken) || s->aborted) {
        abort_side(s);
    } else if (s->comm) {
        /* finalize (flushes queued work) with the timeout, then destroy */
        ncclResult_t r = ncclCommFinalize(s->comm), ae = r;
        double deadline = now_s() + c->timeout_s;
        long ns = 1000;
        while (r == ncclSuccess || r == ncclInProgress) {
            if (ncclCommGetAsyncError(s->comm, &ae) != ncclSuccess || ae != ncclInProgress || now_s() > deadline) break;
            nap(&ns);
        }
        if (ae == ncclSuccess) ncclCommDestroy(s->comm);
        else abort_side(s);
    }
    if (s->done) cudaEventDestroy(s->done);
    wk_comm_free(s->boot);
    free(s);
    c->nccl = NULL;
}

wk_comm *wk_comm_init_nccl(wk_comm *boot, wk_device *dev, const wk_comm_opts *opts) {
    const char *op = "wk_comm_init_nccl";
    if (!wk__comm_check(op, boot)) return NULL;
    if (boot->backend == WK_COMM_NCCL) {
        wk__err(WK_ERR_ARG, op, "boot must be an MPI or self communicator, not an NCCL one");
        return NULL;
    }
    if (!dev || wk_device_kind_of(dev) != WK_DEVICE_CUDA) {
        wk__err(WK_ERR_DEVICE, op, "rank %d: NCCL needs a CUDA device (got %s)", boot->rank,
                dev ? wk_device_name(dev) : "NULL");
        return NULL;
    }
    wk_comm_opts o = {opts && opts->timeout_s > 0 ? opts->timeout_s : boot->timeout_s};
    /* our own copy of boot: control messages never mix with the caller's */
    wk_comm *own = wk_comm_split(boot, 0, boot->rank);
    if (!own) return NULL;
    /* rank 0's unique id, and whether it got one (the last byte) */
    unsigned char idb[sizeof(ncclUniqueId) + 1];
    memset(idb, 0, sizeof idb);
    if (own->rank == 0) {
        ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)idb);
        idb[sizeof(ncclUniqueId)] = r == ncclSuccess;
    }
    int64_t n = (int64_t)sizeof idb;
    wk_tensor *t = own->rank == 0 ? wk_from_host(idb, sizeof idb, &n, 1, WK_U8, wk_cpu()) : NULL;
    wk_tensor *g = (own->rank != 0 || t) ? wk_broadcast(own, t, 0) : NULL;
    bool got = g && wk_to_host(g, idb, sizeof idb) == WK_OK;
    wk_tensor_free(t);
    wk_tensor_free(g);
    if (!got || !idb[sizeof(ncclUniqueId)]) {
        if (got) wk__err(WK_ERR_COMM, op, "rank 0 could not get an NCCL unique id (ncclGetUniqueId failed there)");
        wk_comm_free(own);
        return NULL;
    }
    wk_comm *c = wk__comm_new(op, WK_COMM_NCCL, &o);
    nccl_side *s = calloc(1, sizeof *s);
    if (!c || !s) {
        if (c) wk__comm_delete(c);
        free(s);
        wk_comm_free(own);
        wk__err(WK_ERR_OOM, op, "cannot allocate an NCCL communicator");
        return NULL;
    }
    c->rank = own->rank;
    c->size = own->size;
    c->dev = dev;
    c->nccl = s;
    s->boot = own;
    s->ordinal = dev->ordinal;
    s->stream = (cudaStream_t)wk__device_stream(dev);
    cudaError_t ce = cudaSetDevice(s->ordinal);
    if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming);
    if (ce != cudaSuccess) {
        wk__err(WK_ERR_DEVICE, op, "cuda device %d: %s", s->ordinal, cudaGetErrorString(ce));
        wk__nccl_free(c);
        wk__comm_delete(c);
        return NULL;
    }
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0; /* every wait polls against the timeout (nccl_wait) */
    ncclResult_t r = ncclCommInitRankConfig(&s->comm, c->size, *(ncclUniqueId *)idb, c->rank, &cfg);
    wk_status st = WK_OK;
    if (r != ncclSuccess && r != ncclInProgress) {
        st = wk__comm_fail(c, op, -1, "ncclCommInitRankConfig failed: %s (%s)", ncclGetErrorString(r),
                           ncclGetLastError(NULL));
    } else {
        double deadline = now_s() + c->timeout_s;
        long ns = 1000;
        ncclResult_t ae = ncclInProgress;
        while (ae == ncclInProgress) {
            if (ncclCommGetAsyncError(s->comm, &ae) != ncclSuccess) break;
            if (ae == ncclInProgress && now_s() > deadline) {
                st = wk__comm_fail(c, op, -1, "timed out after %.1f s setting up NCCL with the other %d rank(s)",
                                   c->timeout_s, c->size - 1);
                break;
            }
            if (ae == ncclInProgress) nap(&ns);
        }
        if (st == WK_OK && ae != ncclSuccess)
            st = wk__comm_fail(c, op, -1, "NCCL setup failed: %s (%s)", ncclGetErrorString(ae), ncclGetLastError(s->comm));
    }
    if (st != WK_OK) {
        wk__nccl_free(c); /* aborts: c is broken */
        wk__comm_delete(c);
        return NULL;
    }
    return c;
}
#endif /* WICK_HAVE_NCCL */
