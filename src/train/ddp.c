/* Data-parallel training (include/wick/train.h, wk_ddp_*): the parameters
 * in buckets (reverse order, about bucket_mb each, one dtype and device per
 * bucket), each bucket one flat buffer reduced by one asynchronous
 * all_reduce.
 *
 * During wk_ddp_backward the pass's on_grad_ready hook marks parameters
 * ready; a bucket whose last parameter is ready is packed and its
 * all_reduce started at once, on the communicator's progress thread, while
 * backward goes on with the rest of the graph. Buckets start strictly in
 * index order (a complete bucket waits for the ones before it): ranks whose
 * graphs finish parameters in different orders still issue the same
 * collectives in the same order, which the ring algorithms need. After the
 * pass the buckets not yet started are packed and started in that same
 * order (a parameter with no gradient on this rank contributes zeros), all
 * are waited for and the reduced gradients put back into the store.
 *
 * Each bucket's buffer carries, after the gradients, one flag per parameter
 * (1 when this rank had a gradient for it): after the reduction a flag
 * above 0 says some rank had one, so "no rank reached it" (no gradient
 * kept) is known without another message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/node.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include "train/ddp_internal.h"
#include "train/train_internal.h"

typedef struct ddp_bucket {
    int first, count;      /* d->order[first .. first + count) */
    int64_t numel;         /* gradient elements; count flags follow */
    wk_tensor *flat;       /* numel + count elements, kept across steps */
    /* per pass */
    int pending;           /* parameters not ready yet */
    wk_dist_work *work;    /* started, not yet waited for */
    bool started, in_pass;
} ddp_bucket;

struct wk_ddp {
    wk_comm *c;
    int n;
    bool sum;
    wk_tensor **p;         /* references of the ddp's own */
    int *order;            /* parameter indices in bucket order (reverse of p) */
    int *bucket_of;        /* per parameter */
    int64_t *off;          /* per parameter: first element in its bucket's buffer */
    int *slot;             /* per parameter: its index within its bucket (its flag) */
    bool *ready;           /* per parameter, this pass */
    ddp_bucket *b;
    int nb, next;          /* next: the next bucket to start */
    /* key (wk_grad_key of a parameter) -> index + 1; open addressing */
    const void **kkey;
    int *kval;
    int kcap;
    /* this pass */
    wk_grad_store *gs;
    const wk_backward_opts *user;
    wk__ddp_stats stats;
};

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int key_find(const wk_ddp *d, const void *k) {
    for (uint64_t i = mix((uint64_t)(uintptr_t)k) & (uint64_t)(d->kcap - 1);; i = (i + 1) & (uint64_t)(d->kcap - 1)) {
        if (d->kkey[i] == k) return d->kval[i] - 1;
        if (!d->kkey[i]) return -1;
    }
}

void wk_ddp_free(wk_ddp *d) {
    if (!d) return;
    for (int i = 0; i < d->nb; i++) {
        if (d->b[i].work) wk_tensor_free(wk_dist_wait(d->b[i].work));
        wk_tensor_free(d->b[i].flat);
    }
    for (int i = 0; i < d->n; i++) wk_tensor_free(d->p ? d->p[i] : NULL);
    free(d->p); free(d->order); free(d->bucket_of); free(d->off); free(d->slot); free(d->ready);
    free(d->b); free(d->kkey); free(d->kval);
    free(d);
}

wk_comm *wk_ddp_comm(const wk_ddp *d) { return d ? d->c : NULL; }

/* The local checks of wk_ddp_new; WK_OK or the recorded error. */
static wk_status check_params(const char *op, wk_comm *c, wk_tensor *const *params, int n) {
    if (!c) return wk__err(WK_ERR_ARG, op, "NULL communicator");
    if (n < 1 || !params) return wk__err(WK_ERR_ARG, op, "no parameters (n = %d)", n);
    for (int i = 0; i < n; i++) {
        const wk_tensor *t = params[i];
        if (!t) return wk__err(WK_ERR_ARG, op, "parameter %d is NULL", i);
        if (!wk_is_leaf(t))
            return wk__err(WK_ERR_ARG, op, "parameter %d is not a tracked leaf (wk_param_new / wk_requires_grad)", i);
        if (!wk_dtype_is_float(t->dtype))
            return wk__err(WK_ERR_DTYPE, op, "parameter %d is %s, not a float dtype", i, wk_dtype_name(t->dtype));
        if (!wk_is_contiguous(t)) return wk__err(WK_ERR_ARG, op, "parameter %d is not contiguous", i);
        for (int j = 0; j < i; j++)
            if (params[j]->node == t->node) return wk__err(WK_ERR_ARG, op, "parameters %d and %d are the same", j, i);
    }
    return WK_OK;
}

/* A hash of the parameters' count, dtypes and shapes (62 bits: its
 * negation fits an int64). */
static int64_t shape_hash(wk_tensor *const *params, int n) {
    uint64_t h = 1469598103934665603ULL;
#define H(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ULL)
    H(n);
    for (int i = 0; i < n; i++) {
        H(params[i]->dtype);
        H(params[i]->layout.rank);
        for (int k = 0; k < params[i]->layout.rank; k++) H(params[i]->layout.shape[k]);
    }
#undef H
    return (int64_t)(mix(h) >> 2);
}

/* Every rank's verdict at once: [hash, -hash, refused] under max gives
 * the highest hash, minus the lowest, and whether any rank refused. */
static wk_status agree(const char *op, wk_comm *c, wk_status local, wk_tensor *const *params, int n) {
    int64_t h = local == WK_OK ? shape_hash(params, n) : 0;
    int64_t v[3] = {h, -h, local != WK_OK}, three = 3;
    wk_tensor *t = wk_from_host(v, sizeof v, &three, 1, WK_I64, wk_cpu());
    wk_tensor *r = t ? wk_all_reduce(c, t, WK_DIST_MAX) : NULL;
    wk_status st = r ? wk_to_host(r, v, sizeof v) : wk_last_status();
    wk_tensor_free(t);
    wk_tensor_free(r);
    if (local != WK_OK) return local; /* its own message stands */
    if (st != WK_OK) return st;
    if (v[2]) return wk__err(WK_ERR_ARG, op, "another rank refused its parameters (see its error)");
    if (v[0] != -v[1])
        return wk__err(WK_ERR_SHAPE, op, "the parameters' count, shapes or dtypes differ between ranks (rank %d of %d)",
                       wk_comm_rank(c), wk_comm_size(c));
    return WK_OK;
}

static wk_status layout(wk_ddp *d, double mb) {
    const char *op = "wk_ddp_new";
    int n = d->n;
    double cap = (mb > 0 ? mb : 25.0) * 1048576.0;
    d->b = calloc((size_t)n, sizeof *d->b);
    if (!d->b) return wk__err(WK_ERR_OOM, op, "cannot allocate %d buckets", n);
    double bytes = 0;
    for (int k = 0; k < n; k++) {
        int i = n - 1 - k;
        d->order[k] = i;
        const wk_tensor *t = d->p[i];
        double pb = (double)wk_numel(t) * (double)wk_dtype_size(t->dtype);
        ddp_bucket *cur = d->nb ? &d->b[d->nb - 1] : NULL;
        bool fresh = !cur || bytes + pb > cap || d->p[d->order[cur->first]]->dtype != t->dtype ||
                     wk__dev(d->p[d->order[cur->first]]) != wk__dev(t);
        if (fresh) {
            cur = &d->b[d->nb++];
            *cur = (ddp_bucket){.first = k};
            bytes = 0;
        }
        d->bucket_of[i] = d->nb - 1;
        d->off[i] = cur->numel;
        d->slot[i] = cur->count;
        cur->numel += wk_numel(t);
        cur->count++;
        bytes += pb;
    }
    for (int j = 0; j < d->nb; j++) {
        ddp_bucket *b = &d->b[j];
        const wk_tensor *t0 = d->p[d->order[b->first]];
        int64_t len = b->numel + b->count;
        wk_tensor *f = wk_zeros(&len, 1, t0->dtype, wk__dev(t0));
        if (!f) return wk_last_status();
        b->flat = wk_keep(f);
    }
    d->kcap = 16;
    while (d->kcap < 2 * n) d->kcap *= 2;
    d->kkey = calloc((size_t)d->kcap, sizeof *d->kkey);
    d->kval = calloc((size_t)d->kcap, sizeof *d->kval);
    if (!d->kkey || !d->kval) return wk__err(WK_ERR_OOM, op, "cannot allocate the parameter map");
    for (int i = 0; i < n; i++) {
        const void *k = wk_grad_key(d->p[i]);
        uint64_t s = mix((uint64_t)(uintptr_t)k) & (uint64_t)(d->kcap - 1);
        while (d->kkey[s]) s = (s + 1) & (uint64_t)(d->kcap - 1);
        d->kkey[s] = k;
        d->kval[s] = i + 1;
    }
    return WK_OK;
}

/* Rank 0's values into every rank's parameters. */
static wk_status broadcast_params(wk_ddp *d) {
    if (wk_comm_size(d->c) == 1) return WK_OK;
    wk_status st = WK_OK;
    for (int i = 0; st == WK_OK && i < d->n; i++) {
        wk_tensor *r = wk_broadcast(d->c, d->p[i], 0);
        if (!r) st = wk_last_status();
        else if (wk_comm_rank(d->c) != 0) st = wk_param_assign_(d->p[i], r);
        wk_tensor_free(r);
    }
    return st;
}

wk_ddp *wk_ddp_new(wk_comm *c, wk_tensor *const *params, int n, const wk_ddp_opts *o) {
    const char *op = "wk_ddp_new";
    wk_status local = check_params(op, c, params, n);
    if (!c) return NULL;
    if (agree(op, c, local, params, n) != WK_OK) return NULL;
    wk_ddp *d = calloc(1, sizeof *d);
    if (!d) {
        wk__err(WK_ERR_OOM, op, "cannot allocate");
        return NULL;
    }
    d->c = c;
    d->n = n;
    d->sum = o && o->sum;
    d->p = calloc((size_t)n, sizeof *d->p);
    d->order = calloc((size_t)n, sizeof *d->order);
    d->bucket_of = calloc((size_t)n, sizeof *d->bucket_of);
    d->off = calloc((size_t)n, sizeof *d->off);
    d->slot = calloc((size_t)n, sizeof *d->slot);
    d->ready = calloc((size_t)n, sizeof *d->ready);
    if (!d->p || !d->order || !d->bucket_of || !d->off || !d->slot || !d->ready) {
        wk__err(WK_ERR_OOM, op, "cannot allocate the tables of %d parameters", n);
        wk_ddp_free(d);
        return NULL;
    }
    /* own headers (wk__alias), not retains: a retained scope-owned parameter
     * freed here would be taken out of its caller's scope (see node.h) */
    for (int i = 0; i < n; i++) {
        if (!(d->p[i] = wk__alias(params[i]))) {
            wk_ddp_free(d);
            return NULL;
        }
        wk_keep(d->p[i]);
    }
    /* layout is local and the same on every rank (the shapes agree), so a
     * failure there is an allocation failure; the broadcast is collective */
    wk_status st = layout(d, o ? o->bucket_mb : 0);
    if (st == WK_OK) {
        wk_scope_begin();
        st = broadcast_params(d);
        wk_scope_end();
    }
    if (st != WK_OK) {
        wk_ddp_free(d);
        return NULL;
    }
    return d;
}

/* Pack bucket j from the store (zeros and a 0 flag where this rank has no
 * gradient) and start its all_reduce. */
static wk_status start_bucket(wk_ddp *d, int j, bool in_pass) {
    ddp_bucket *b = &d->b[j];
    wk_status st = WK_OK;
    /* unrecorded even in a create_graph pass: the buffer is ours, not the graph's */
    wk_no_grad_begin();
    wk_scope_begin();
    for (int k = 0; k < b->count && st == WK_OK; k++) {
        int i = d->order[b->first + k];
        const wk_tensor *g = wk_grad(d->gs, d->p[i]);
        wk_tensor *dst = wk_narrow(b->flat, 0, d->off[i], wk_numel(d->p[i]));
        wk_tensor *flag = wk_narrow(b->flat, 0, b->numel + d->slot[i], 1);
        wk_tensor *gv = g ? wk_reshape(g, &dst->layout.shape[0], 1) : NULL;
        if (!dst || !flag || (g && !gv)) st = wk_last_status();
        else if (g) st = wk_copy_(dst, gv);
        else st = wk_fill_(dst, 0.0);
        if (st == WK_OK) st = wk_fill_(flag, g ? 1.0 : 0.0);
    }
    wk_scope_end();
    wk_no_grad_end();
    if (st != WK_OK) return st;
    b->work = wk_all_reduce_async(d->c, b->flat, d->sum ? WK_DIST_SUM : WK_DIST_AVG);
    if (!b->work) return wk_last_status();
    b->started = true;
    b->in_pass = in_pass;
    d->stats.buckets++;
    if (in_pass) d->stats.started_in_pass++;
    return WK_OK;
}

/* Start the complete buckets at the head of the order. */
static wk_status start_ready(wk_ddp *d) {
    while (d->next < d->nb && d->b[d->next].pending == 0) {
        wk_status st = start_bucket(d, d->next++, true);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

static wk_status on_ready(void *ctx, wk_grad_store *gs, const void *key) {
    wk_ddp *d = ctx;
    int i = key_find(d, key);
    if (i >= 0 && !d->ready[i]) {
        d->ready[i] = true;
        if (--d->b[d->bucket_of[i]].pending == 0) {
            wk_status st = start_ready(d);
            if (st != WK_OK) return st;
        }
    }
    if (d->user && d->user->on_grad_ready) return d->user->on_grad_ready(d->user->on_grad_ready_ctx, gs, key);
    return WK_OK;
}

/* Wait for bucket j and put its reduced gradients into the store. */
static wk_status finish_bucket(wk_ddp *d, int j) {
    ddp_bucket *b = &d->b[j];
    wk_tensor *r = wk_dist_wait(b->work);
    b->work = NULL;
    if (!r) return wk_last_status();
    wk_status st = WK_OK;
    wk_no_grad_begin();
    wk_scope_begin();
    double flags[b->count];
    wk_tensor *ft = wk_to_dtype(wk_narrow(r, 0, b->numel, b->count), WK_F64);
    st = ft ? wk_to_host(ft, flags, sizeof flags) : wk_last_status();
    for (int k = 0; k < b->count && st == WK_OK; k++) {
        int i = d->order[b->first + k];
        if (!(flags[k] > 0)) continue; /* no rank had a gradient for it */
        const wk_tensor *p = d->p[i];
        wk_tensor *g = wk_reshape(wk_narrow(r, 0, d->off[i], wk_numel(p)), p->layout.shape, p->layout.rank);
        st = g ? wk_grad_set(d->gs, p, g) : wk_last_status();
    }
    wk_scope_end();
    wk_no_grad_end();
    wk_tensor_free(r);
    return st;
}

wk_status wk_ddp_backward(wk_ddp *d, const wk_tensor *loss, wk_grad_store *gs, const wk_backward_opts *opts) {
    const char *op = "wk_ddp_backward";
    if (!d) return wk__err(WK_ERR_ARG, op, "NULL ddp");
    if (!gs) return wk__err(WK_ERR_ARG, op, "NULL gradient store");
    for (int j = 0; j < d->nb; j++) {
        d->b[j].pending = d->b[j].count;
        d->b[j].started = d->b[j].in_pass = false;
    }
    memset(d->ready, 0, (size_t)d->n * sizeof *d->ready);
    d->next = 0;
    d->gs = gs;
    d->user = opts;
    wk_backward_opts bo = {0};
    if (opts) bo = *opts;
    bo.on_grad_ready = on_ready;
    bo.on_grad_ready_ctx = d;
    wk_status st = wk_backward(loss, gs, &bo);
    for (int j = 0; j < d->nb; j++)
        if (d->b[j].work && wk_dist_test(d->b[j].work)) d->stats.done_in_pass++;
    /* the rest in the fixed order, even after a failed pass: the other
     * ranks are in these collectives too */
    wk_status fl = WK_OK;
    while (d->next < d->nb && fl == WK_OK) fl = start_bucket(d, d->next++, false);
    for (int j = 0; j < d->nb; j++) {
        if (!d->b[j].work) continue;
        wk_status fs = finish_bucket(d, j);
        if (fl == WK_OK) fl = fs;
    }
    d->gs = NULL;
    d->user = NULL;
    return st != WK_OK ? st : fl;
}

void wk__ddp_get_stats(const wk_ddp *d, wk__ddp_stats *s) {
    if (d && s) *s = d->stats;
}

int wk__ddp_bucket_count(const wk_ddp *d) { return d ? d->nb : 0; }

wk_tensor *const *wk__ddp_params(const wk_ddp *d, int *n) {
    if (n) *n = d ? d->n : 0;
    return d ? d->p : NULL;
}
