/* The collectives: argument checks, packing any layout / device into a
 * contiguous host buffer, and wick's own algorithms over point-to-point
 * messages (mpi_p2p.c):
 *   all_reduce     small (<= 64 KiB): gather every rank's buffer, reduce in
 *                  rank order; large: ring reduce-scatter + ring all-gather.
 *                  Either way each element is reduced once, in a fixed order,
 *                  and the bytes are then copied: every rank holds the same bits.
 *   all_gather     ring, blocks of any size (sizes exchanged first)
 *   reduce_scatter ring over wk_chunk's split of dim
 *   broadcast      binomial tree from root (a shape header first)
 *   send / recv    a shape header, then the bytes
 * NCCL communicators hand the job to nccl_comm.c instead. */
#include <stdlib.h>
#include <string.h>
#include "dist/dist_internal.h"
#include "base/error.h"
#include "tensor/tensor.h"

#define SMALL_BYTES (64 * 1024)

static inline int mod(int a, int n) { return ((a % n) + n) % n; }

/* Dim d moved to the front (inverse: the front moved back to d). */
static wk_tensor *move_to_front(const wk_tensor *x, int d) {
    int r = wk_rank(x), perm[WK_MAX_RANK];
    perm[0] = d;
    for (int i = 0, k = 1; i < r; i++)
        if (i != d) perm[k++] = i;
    return wk_permute(x, perm, r);
}
static wk_tensor *move_from_front(const wk_tensor *x, int d) {
    int r = wk_rank(x), perm[WK_MAX_RANK];
    for (int i = 0; i < r; i++) perm[i] = i < d ? i + 1 : i == d ? 0 : i;
    return wk_permute(x, perm, r);
}

/* A contiguous host copy of x that the collective may write (its own storage). */
static wk_tensor *host_copy(const wk_tensor *x) {
    if (wk_device_kind_of(wk_tensor_device(x)) != WK_DEVICE_CPU) {
        wk_tensor *h = wk_to_device(x, wk_cpu());
        if (!h) return NULL;
        if (wk_is_contiguous(h) && h->storage->refs == 1) return h;
        wk_tensor *c = wk_copy(h);
        wk_tensor_free(h);
        return c;
    }
    return wk_copy(x);
}

/* Back onto dev (x's device) if that is not the CPU. Consumes h. */
static wk_tensor *to_dev(wk_tensor *h, wk_device *dev) {
    if (!h || wk_device_kind_of(dev) == WK_DEVICE_CPU) return h;
    wk_tensor *d = wk_to_device(h, dev);
    wk_tensor_free(h);
    return d;
}

/* Ring all-gather of blocks (offs[i], lens[i]) of buf; block `rank` is in place. */
static wk_status ring_gather(wk_comm *c, const char *op, char *buf, const size_t *offs, const size_t *lens) {
    int r = c->rank, n = c->size, right = mod(r + 1, n), left = mod(r - 1, n);
    for (int s = 0; s < n - 1; s++) {
        int si = mod(r - s, n), ri = mod(r - s - 1, n);
        wk_status st = wk__p2p_exchange(c, op, buf + offs[si], lens[si], right, buf + offs[ri], lens[ri], left, WK__TAG_COLL);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

/* Ring reduce-scatter of element chunks (offs / cnts in elements); chunk
 * `rank` ends fully reduced on this rank. */
static wk_status ring_reduce_scatter(wk_comm *c, const char *op, wk_dtype dt, wk_dist_op rop, char *buf, size_t es,
                                     const int64_t *offs, const int64_t *cnts) {
    int r = c->rank, n = c->size, right = mod(r + 1, n), left = mod(r - 1, n);
    int64_t maxc = 0;
    for (int i = 0; i < n; i++) maxc = cnts[i] > maxc ? cnts[i] : maxc;
    char *tmp = wk__comm_scratch(c, op, maxc ? (size_t)maxc * es : 1);
    if (!tmp) return wk_last_status();
    wk_status st = WK_OK;
    for (int s = 0; s < n - 1 && st == WK_OK; s++) {
        int si = mod(r - s - 1, n), ri = mod(r - s - 2, n);
        st = wk__p2p_exchange(c, op, buf + (size_t)offs[si] * es, (size_t)cnts[si] * es, right, tmp,
                              (size_t)cnts[ri] * es, left, WK__TAG_COLL);
        if (st == WK_OK) wk__dist_reduce(dt, rop, buf + (size_t)offs[ri] * es, tmp, cnts[ri]);
    }
    return st;
}

static bool check_reducible(const char *op, wk_dtype dt, wk_dist_op rop) {
    if ((unsigned)rop >= WK_DIST_OP_COUNT) {
        wk__err(WK_ERR_ARG, op, "unknown reduction %d", (int)rop);
        return false;
    }
    if (!wk__dist_reducible(dt, rop)) {
        wk__err(WK_ERR_DTYPE, op, "%s is not defined on %s%s", wk_dist_op_name(rop), wk_dtype_name(dt),
                wk_dtype_is_quantized(dt) ? " (a block dtype: dequantize first)" : " (avg needs a float dtype)");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ all_reduce */

static wk_tensor *run_all_reduce(wk__dist_job *j) {
    wk_comm *c = j->c;
    const char *op = j->op;
    wk_dist_op rop = (wk_dist_op)j->a;
    if (!check_reducible(op, wk_tensor_dtype(j->x), rop)) return NULL;
    if (c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    wk_tensor *out = host_copy(j->x);
    if (!out || c->size == 1) return to_dev(out, wk_tensor_device(j->x));
    wk_dtype dt = wk_tensor_dtype(out);
    size_t es = wk_dtype_size(dt);
    int64_t n = wk_numel(out);
    int N = c->size;
    char *buf = wk__dist_host_ptr(out);
    wk_status st = WK_OK;
    if ((size_t)n * es <= SMALL_BYTES || n < N) {
        size_t b = (size_t)n * es;
        char *all = wk__comm_scratch(c, op, b * (size_t)N + 1);
        size_t *offs = malloc(sizeof *offs * (size_t)N * 2);
        if (!all || !offs) {
            free(offs);
            wk_tensor_free(out);
            wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes", b * (size_t)N);
            return NULL;
        }
        size_t *lens = offs + N;
        for (int i = 0; i < N; i++) offs[i] = b * (size_t)i, lens[i] = b;
        if (b) memcpy(all + offs[c->rank], buf, b);
        st = ring_gather(c, op, all, offs, lens);
        if (st == WK_OK && b) {
            memcpy(buf, all, b);
            for (int i = 1; i < N; i++) wk__dist_reduce(dt, rop, buf, all + offs[i], n);
            if (rop == WK_DIST_AVG) wk__dist_divide(dt, buf, n, N);
        }
        free(offs);
    } else {
        int64_t *offs = malloc(sizeof *offs * (size_t)N * 2);
        size_t *boffs = malloc(sizeof *boffs * (size_t)N * 2);
        if (!offs || !boffs) {
            free(offs);
            free(boffs);
            wk_tensor_free(out);
            wk__err(WK_ERR_OOM, op, "cannot allocate chunk tables");
            return NULL;
        }
        int64_t *cnts = offs + N;
        size_t *blens = boffs + N;
        for (int i = 0, o = 0; i < N; i++) {
            cnts[i] = n / N + (i < n % N);
            offs[i] = o;
            o += cnts[i];
            boffs[i] = (size_t)offs[i] * es;
            blens[i] = (size_t)cnts[i] * es;
        }
        st = ring_reduce_scatter(c, op, dt, rop, buf, es, offs, cnts);
        if (st == WK_OK && rop == WK_DIST_AVG) wk__dist_divide(dt, buf + boffs[c->rank], cnts[c->rank], N);
        /* rank r holds reduced chunk r: ring_gather's first step sends it */
        if (st == WK_OK) st = ring_gather(c, op, buf, boffs, blens);
        free(offs);
        free(boffs);
    }
    if (st != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return to_dev(out, wk_tensor_device(j->x));
}

/* ------------------------------------------------------------ all_gather */

/* Every rank's small fixed-size record, in rank order, into all (size * len). */
static wk_status gather_records(wk_comm *c, const char *op, const void *mine, size_t len, void *all) {
    size_t *o = malloc(sizeof *o * (size_t)c->size * 2);
    if (!o) return wk__err(WK_ERR_OOM, op, "cannot allocate record tables");
    size_t *l = o + c->size;
    for (int i = 0; i < c->size; i++) o[i] = len * (size_t)i, l[i] = len;
    memcpy((char *)all + o[c->rank], mine, len);
    wk_status st = ring_gather(c, op, all, o, l);
    free(o);
    return st;
}

typedef struct shape_rec {
    int64_t dtype, rank, shape[WK_MAX_RANK];
} shape_rec;

static shape_rec rec_of(const wk_tensor *x) {
    shape_rec r;
    memset(&r, 0, sizeof r);
    r.dtype = wk_tensor_dtype(x);
    r.rank = wk_rank(x);
    for (int i = 0; i < wk_rank(x); i++) r.shape[i] = wk_dim(x, i);
    return r;
}

static wk_tensor *run_all_gather(wk__dist_job *j) {
    wk_comm *c = j->c;
    const char *op = j->op;
    wk_tensor *x = j->x;
    int rank = wk_rank(x), d = j->a;
    if (rank == 0) {
        wk__err(WK_ERR_SHAPE, op, "a scalar has no dim to gather along (reshape it to (1))");
        return NULL;
    }
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) {
        wk__err(WK_ERR_INDEX, op, "dim %d out of range for rank %d", j->a, rank);
        return NULL;
    }
    wk_dtype dt = wk_tensor_dtype(x);
    if (wk_dtype_is_quantized(dt) && d == rank - 1) {
        wk__err(WK_ERR_DTYPE, op, "%s: gathering along the last dim would split blocks (gather along another dim)",
                wk_dtype_name(dt));
        return NULL;
    }
    if (c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    int N = c->size;
    shape_rec mine = rec_of(x);
    shape_rec *all = malloc(sizeof *all * (size_t)N);
    if (!all) {
        wk__err(WK_ERR_OOM, op, "cannot allocate shape records");
        return NULL;
    }
    wk_status st = N > 1 ? gather_records(c, op, &mine, sizeof mine, all) : WK_OK;
    if (N == 1) all[0] = mine;
    int64_t total = 0;
    for (int i = 0; st == WK_OK && i < N; i++) {
        bool ok = all[i].dtype == mine.dtype && all[i].rank == mine.rank;
        for (int k = 0; ok && k < rank; k++) ok = k == d || all[i].shape[k] == mine.shape[k];
        if (!ok) {
            char a[160], b[160];
            st = wk__err(WK_ERR_SHAPE, op, "rank %d of %d has %s %s, rank %d has %s %s: all dims but %d must agree",
                         c->rank, N, wk_dtype_name(dt), wk__shape_str(mine.shape, rank, a, sizeof a), i,
                         wk_dtype_name((wk_dtype)all[i].dtype), wk__shape_str(all[i].shape, (int)all[i].rank, b, sizeof b), d);
        }
        total += all[i].shape[d];
    }
    wk_tensor *xm = NULL, *res = NULL, *out = NULL;
    if (st == WK_OK) {
        wk_tensor *v = move_to_front(x, d);
        xm = v ? host_copy(v) : NULL;
        wk_tensor_free(v);
        if (!xm) st = wk_last_status();
    }
    if (st == WK_OK) {
        int64_t shp[WK_MAX_RANK];
        for (int k = 0; k < rank; k++) shp[k] = wk_dim(xm, k);
        shp[0] = total;
        res = wk_empty(shp, rank, dt, wk_cpu());
        if (!res) st = wk_last_status();
    }
    if (st == WK_OK) {
        size_t rb = 0;
        {
            /* bytes per index of the gathered dim (the same on every rank) */
            int64_t rest = 1;
            for (int k = 1; k < rank; k++) rest *= wk_dim(xm, k);
            const wk_dtype_info *di = wk_dtype_info_of(dt);
            rb = (size_t)(rest / di->block_elems * di->block_bytes);
        }
        size_t *offs = malloc(sizeof *offs * (size_t)N * 2);
        if (!offs) st = wk__err(WK_ERR_OOM, op, "cannot allocate block tables");
        else {
            size_t *lens = offs + N, o = 0;
            for (int i = 0; i < N; i++) {
                offs[i] = o;
                lens[i] = (size_t)all[i].shape[d] * rb;
                o += lens[i];
            }
            char *buf = wk__dist_host_ptr(res);
            if (lens[c->rank]) memcpy(buf + offs[c->rank], wk__dist_host_ptr(xm), lens[c->rank]);
            if (N > 1) st = ring_gather(c, op, buf, offs, lens);
            free(offs);
        }
    }
    if (st == WK_OK) {
        wk_tensor *v = move_from_front(res, d);
        out = v ? wk_contiguous(v) : NULL;
        wk_tensor_free(v);
        out = to_dev(out, wk_tensor_device(x));
    }
    wk_tensor_free(xm);
    wk_tensor_free(res);
    free(all);
    return out;
}

/* -------------------------------------------------------- reduce_scatter */

static wk_tensor *run_reduce_scatter(wk__dist_job *j) {
    wk_comm *c = j->c;
    const char *op = j->op;
    wk_tensor *x = j->x;
    wk_dist_op rop = (wk_dist_op)j->b;
    int rank = wk_rank(x), d = j->a;
    if (!check_reducible(op, wk_tensor_dtype(x), rop)) return NULL;
    if (rank == 0) {
        wk__err(WK_ERR_SHAPE, op, "a scalar has no dim to scatter along");
        return NULL;
    }
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) {
        wk__err(WK_ERR_INDEX, op, "dim %d out of range for rank %d", j->a, rank);
        return NULL;
    }
    if (c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    int N = c->size;
    wk_tensor *v = move_to_front(x, d);
    wk_tensor *xm = v ? host_copy(v) : NULL;
    wk_tensor_free(v);
    if (!xm) return NULL;
    wk_dtype dt = wk_tensor_dtype(xm);
    size_t es = wk_dtype_size(dt);
    int64_t n0 = wk_dim(xm, 0), rest = n0 ? wk_numel(xm) / n0 : 0, csz = (n0 + N - 1) / N;
    int64_t *offs = malloc(sizeof *offs * (size_t)N * 2);
    if (!offs) {
        wk_tensor_free(xm);
        wk__err(WK_ERR_OOM, op, "cannot allocate chunk tables");
        return NULL;
    }
    int64_t *cnts = offs + N, my_lo = 0, my_rows = 0;
    for (int i = 0; i < N; i++) {
        int64_t lo = (int64_t)i * csz, hi = lo + csz;
        if (lo > n0) lo = n0;
        if (hi > n0) hi = n0;
        offs[i] = lo * rest;
        cnts[i] = (hi - lo) * rest;
        if (i == c->rank) my_lo = lo, my_rows = hi - lo;
    }
    char *buf = wk__dist_host_ptr(xm);
    wk_status st = N > 1 ? ring_reduce_scatter(c, op, dt, rop, buf, es, offs, cnts) : WK_OK;
    if (st == WK_OK && rop == WK_DIST_AVG) wk__dist_divide(dt, buf + (size_t)offs[c->rank] * es, cnts[c->rank], N);
    wk_tensor *out = NULL;
    if (st == WK_OK) {
        wk_tensor *part = wk_narrow(xm, 0, my_lo, my_rows);
        wk_tensor *back = part ? move_from_front(part, d) : NULL;
        out = back ? wk_copy(back) : NULL;
        wk_tensor_free(part);
        wk_tensor_free(back);
        out = to_dev(out, wk_tensor_device(x));
    }
    free(offs);
    wk_tensor_free(xm);
    return out;
}

/* ------------------------------------------------------------- broadcast */

/* Binomial tree from root: len bytes of buf. */
static wk_status tree_bcast(wk_comm *c, const char *op, void *buf, size_t len, int root, int tag) {
    int N = c->size, vr = mod(c->rank - root, N), mask = 1;
    while (mask < N) {
        if (vr & mask) {
            wk_status st = wk__p2p_exchange(c, op, NULL, 0, -1, buf, len, mod(vr - mask + root, N), tag);
            if (st != WK_OK) return st;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < N) {
            wk_status st = wk__p2p_exchange(c, op, buf, len, mod(vr + mask + root, N), NULL, 0, -1, tag);
            if (st != WK_OK) return st;
        }
    return WK_OK;
}

static size_t rec_bytes(const shape_rec *r) {
    const wk_dtype_info *di = wk_dtype_info_of((wk_dtype)r->dtype);
    if (!di) return 0;
    int64_t n = 1;
    for (int k = 0; k < r->rank; k++) n *= r->shape[k];
    return (size_t)(n / di->block_elems * di->block_bytes);
}

static bool rec_valid(const shape_rec *r) {
    if (r->dtype < 0 || r->dtype >= WK_DTYPE_COUNT || r->rank < 0 || r->rank > WK_MAX_RANK) return false;
    for (int k = 0; k < r->rank; k++)
        if (r->shape[k] < 0) return false;
    return true;
}

static wk_tensor *run_broadcast(wk__dist_job *j) {
    wk_comm *c = j->c;
    const char *op = j->op;
    int root = j->a;
    if (root < 0 || root >= c->size) {
        wk__err(WK_ERR_ARG, op, "root %d out of range for a communicator of %d", root, c->size);
        return NULL;
    }
    bool is_root = c->rank == root;
    if (is_root && !j->x) {
        wk__err(WK_ERR_ARG, op, "the root (rank %d) needs a tensor", root);
        return NULL;
    }
    if (c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    shape_rec hdr;
    memset(&hdr, 0, sizeof hdr);
    if (is_root) hdr = rec_of(j->x);
    wk_status st = c->size > 1 ? tree_bcast(c, op, &hdr, sizeof hdr, root, WK__TAG_COLL) : WK_OK;
    if (st != WK_OK) return NULL;
    if (!rec_valid(&hdr)) {
        wk__comm_fail(c, op, root, "received a malformed shape header from");
        return NULL;
    }
    wk_tensor *out = is_root ? host_copy(j->x) : wk_empty(hdr.shape, (int)hdr.rank, (wk_dtype)hdr.dtype, wk_cpu());
    if (!out) {
        atomic_store(&c->broken, true); /* the root still sends: this rank is out of step now */
        return NULL;
    }
    if (c->size > 1) st = tree_bcast(c, op, wk__dist_host_ptr(out), rec_bytes(&hdr), root, WK__TAG_COLL);
    if (st != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    if (!is_root && j->x) {
        shape_rec want = rec_of(j->x);
        if (memcmp(&want, &hdr, sizeof hdr) != 0) {
            char a[160], b[160];
            wk__err(WK_ERR_SHAPE, op, "rank %d expected %s %s from root %d, which sent %s %s", c->rank,
                    wk_dtype_name((wk_dtype)want.dtype), wk__shape_str(want.shape, (int)want.rank, a, sizeof a), root,
                    wk_dtype_name((wk_dtype)hdr.dtype), wk__shape_str(hdr.shape, (int)hdr.rank, b, sizeof b));
            wk_tensor_free(out);
            return NULL;
        }
    }
    return to_dev(out, j->x ? wk_tensor_device(j->x) : wk_cpu());
}

/* ------------------------------------------------------ send / recv / barrier */

static bool check_peer(wk__dist_job *j, int peer, int tag) {
    wk_comm *c = j->c;
    if (c->backend == WK_COMM_SELF || c->size == 1) {
        wk__err(WK_ERR_ARG, j->op, "a communicator of size 1 has no peer to send to or receive from");
        return false;
    }
    if (peer < 0 || peer >= c->size || peer == c->rank) {
        wk__err(WK_ERR_ARG, j->op, "peer %d is not another rank of this communicator (rank %d of %d)", peer, c->rank, c->size);
        return false;
    }
    if (tag < 0 || tag > WK__TAG_USER_MAX) {
        wk__err(WK_ERR_ARG, j->op, "tag %d out of range [0, %d]", tag, WK__TAG_USER_MAX);
        return false;
    }
    return true;
}

static wk_tensor *run_send(wk__dist_job *j) {
    if (!check_peer(j, j->a, j->b)) return NULL;
    if (j->c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    wk_tensor *h = wk_device_kind_of(wk_tensor_device(j->x)) == WK_DEVICE_CPU ? wk_contiguous(j->x) : host_copy(j->x);
    if (!h) return NULL;
    shape_rec hdr = rec_of(h);
    if (j->is_async) {
        /* post and leave the queue: the progress thread completes it, so a
         * later receive in this queue can match the peer's send meanwhile */
        _Static_assert(sizeof j->hdr >= sizeof hdr, "job header room");
        memcpy(j->hdr, &hdr, sizeof hdr);
        j->keep = h;
        wk__p2p_post_send(j->c, j->op, j->hdr, sizeof hdr, WK__TAG_P2P_HDR + j->b, wk__dist_host_ptr(h),
                          wk__dist_nbytes(h), j->a, j->b, &j->post);
        return NULL;
    }
    wk_status st = wk__p2p_exchange(j->c, j->op, &hdr, sizeof hdr, j->a, NULL, 0, -1, WK__TAG_P2P_HDR + j->b);
    if (st == WK_OK)
        st = wk__p2p_exchange(j->c, j->op, wk__dist_host_ptr(h), wk__dist_nbytes(h), j->a, NULL, 0, -1, j->b);
    wk_tensor_free(h);
    return NULL; /* status is the job's error state */
}

/* A posted receive's steps: the header in -> allocate and post the payload;
 * the payload in -> the result. */
static int recv_advance(wk__dist_job *j, size_t got) {
    if (j->phase == 1) {
        shape_rec hdr;
        memcpy(&hdr, j->hdr, sizeof hdr);
        if (got != sizeof hdr || !rec_valid(&hdr)) {
            wk__comm_fail(j->c, j->op, j->a, "received a malformed shape header from");
            return -1;
        }
        wk_tensor *out = wk_empty(hdr.shape, (int)hdr.rank, (wk_dtype)hdr.dtype, wk_cpu());
        if (!out) {
            atomic_store(&j->c->broken, true); /* the payload still comes: out of step */
            return -1;
        }
        j->result = out;
        j->phase = 2;
        return wk__p2p_post_recv(j->c, j->op, wk__dist_host_ptr(out), rec_bytes(&hdr), j->a, j->b, &j->post) == WK_OK
                   ? 0
                   : -1;
    }
    if (got != wk__dist_nbytes(j->result)) {
        wk__comm_fail(j->c, j->op, j->a, "expected %zu bytes but got %zu from", wk__dist_nbytes(j->result), got);
        return -1;
    }
    return 1;
}

static wk_tensor *run_recv(wk__dist_job *j) {
    if (!check_peer(j, j->a, j->b)) return NULL;
    if (j->c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    if (j->is_async) {
        /* post the header's receive and leave the queue (recv_advance) */
        _Static_assert(sizeof j->hdr >= sizeof(shape_rec), "job header room");
        j->advance = recv_advance;
        j->phase = 1;
        wk__p2p_post_recv(j->c, j->op, j->hdr, sizeof(shape_rec), j->a, WK__TAG_P2P_HDR + j->b, &j->post);
        return NULL;
    }
    shape_rec hdr;
    size_t got = 0;
    wk_status st = wk__p2p_recv_any(j->c, j->op, &hdr, sizeof hdr, &got, j->a, WK__TAG_P2P_HDR + j->b);
    if (st != WK_OK) return NULL;
    if (got != sizeof hdr || !rec_valid(&hdr)) {
        wk__comm_fail(j->c, j->op, j->a, "received a malformed shape header from");
        return NULL;
    }
    wk_tensor *out = wk_empty(hdr.shape, (int)hdr.rank, (wk_dtype)hdr.dtype, wk_cpu());
    if (!out) return NULL;
    st = wk__p2p_exchange(j->c, j->op, NULL, 0, -1, wk__dist_host_ptr(out), rec_bytes(&hdr), j->a, j->b);
    if (st != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}

static wk_tensor *run_barrier(wk__dist_job *j) {
    if (j->c->size == 1) return NULL;
    if (j->c->backend == WK_COMM_NCCL) return wk__nccl_run(j);
    wk__mpi_barrier(j->c, j->op);
    return NULL;
}

/* ---------------------------------------------------------------- entry */

static wk__dist_job *make(const char *op, wk_comm *c, const wk_tensor *x, bool need_x,
                          wk_tensor *(*run)(wk__dist_job *), int a, int b) {
    if (!wk__comm_check(op, c)) return NULL;
    /* block dtypes pass here: the reductions refuse them (check_reducible),
     * broadcast / all_gather / send move whole blocks */
    if (need_x && !wk__check_in_blocks(op, x)) return NULL;
    if (need_x && wk_dtype_is_quantized(x->dtype) && !wk__check_block_layout(op, x->dtype, &x->layout)) return NULL;
    return wk__dist_job_new(c, op, x, run, a, b);
}

wk_tensor *wk_all_reduce(wk_comm *c, const wk_tensor *x, wk_dist_op op) {
    return wk__dist_run_sync(make("wk_all_reduce", c, x, true, run_all_reduce, (int)op, 0));
}
wk_tensor *wk_all_gather(wk_comm *c, const wk_tensor *x, int dim) {
    return wk__dist_run_sync(make("wk_all_gather", c, x, true, run_all_gather, dim, 0));
}
wk_tensor *wk_reduce_scatter(wk_comm *c, const wk_tensor *x, int dim, wk_dist_op op) {
    return wk__dist_run_sync(make("wk_reduce_scatter", c, x, true, run_reduce_scatter, dim, (int)op));
}
wk_tensor *wk_broadcast(wk_comm *c, const wk_tensor *x, int root) {
    bool need = c && c->rank == root;
    return wk__dist_run_sync(make("wk_broadcast", c, x, need, run_broadcast, root, 0));
}
wk_status wk_send(wk_comm *c, const wk_tensor *x, int peer, int tag) {
    wk_status st = WK_OK;
    wk__dist_run_sync_status(make("wk_send", c, x, true, run_send, peer, tag), &st);
    return st;
}
wk_tensor *wk_recv(wk_comm *c, int peer, int tag) {
    /* always the posted path, so receives from one peer on one tag take
     * their messages in issue order whether waited for at once or not */
    wk_dist_work *w = wk__dist_run_async(make("wk_recv", c, NULL, false, run_recv, peer, tag));
    return w ? wk_dist_wait(w) : NULL;
}
wk_status wk_barrier(wk_comm *c) {
    wk_status st = WK_OK;
    wk__dist_run_sync_status(make("wk_barrier", c, NULL, false, run_barrier, 0, 0), &st);
    return st;
}

wk_dist_work *wk_all_reduce_async(wk_comm *c, const wk_tensor *x, wk_dist_op op) {
    return wk__dist_run_async(make("wk_all_reduce", c, x, true, run_all_reduce, (int)op, 0));
}
wk_dist_work *wk_all_gather_async(wk_comm *c, const wk_tensor *x, int dim) {
    return wk__dist_run_async(make("wk_all_gather", c, x, true, run_all_gather, dim, 0));
}
wk_dist_work *wk_reduce_scatter_async(wk_comm *c, const wk_tensor *x, int dim, wk_dist_op op) {
    return wk__dist_run_async(make("wk_reduce_scatter", c, x, true, run_reduce_scatter, dim, (int)op));
}
wk_dist_work *wk_broadcast_async(wk_comm *c, const wk_tensor *x, int root) {
    bool need = c && c->rank == root;
    return wk__dist_run_async(make("wk_broadcast", c, x, need, run_broadcast, root, 0));
}
wk_dist_work *wk_send_async(wk_comm *c, const wk_tensor *x, int peer, int tag) {
    return wk__dist_run_async(make("wk_send", c, x, true, run_send, peer, tag));
}
wk_dist_work *wk_recv_async(wk_comm *c, int peer, int tag) {
    return wk__dist_run_async(make("wk_recv", c, NULL, false, run_recv, peer, tag));
}
