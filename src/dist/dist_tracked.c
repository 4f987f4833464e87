/* The differentiable collectives (include/wick/dist.h, "differentiable
 * forms"): each runs the plain collective and, when its input is tracked,
 * records one node whose rule runs the adjoint collective on the same
 * communicator. The dist floor sits above autograd, so it records the way
 * the nn and train floors do (autograd/node.h): op ids in the range
 * node_args.h reserves for it (WK__OP_DIST_FIRST..) and the argument
 * struct in the node's raw block args.upper.
 *
 * The rules call the tracked forms again (all_reduce's adjoint is an
 * all_reduce, f's is g), so a pass with create_graph records them too.
 * Every rank must run backward through the same nodes in the same order:
 * the rules are collectives. The communicator is borrowed: it must outlive
 * the graph's backward. */
#include <stdint.h>
#include <string.h>
#include "autograd/node.h"
#include "base/error.h"
#include "dist/dist_internal.h"
#include "tensor/tensor.h"

#define WK__OP_DIST_ALL_REDUCE ((wk__op_id)(WK__OP_DIST_FIRST + 0)) /* no args but the comm */
#define WK__OP_DIST_ALL_GATHER ((wk__op_id)(WK__OP_DIST_FIRST + 1)) /* gather */
#define WK__OP_DIST_COPY_TO    ((wk__op_id)(WK__OP_DIST_FIRST + 2))
#define WK__OP_DIST_REDUCE_FROM ((wk__op_id)(WK__OP_DIST_FIRST + 3))
_Static_assert((int)WK__OP_DIST_FIRST + 4 <= (int)WK__OP_TRAIN_FIRST, "dist op ids run into the train floor's range");

typedef struct {
    wk_comm *c;
    int dim;        /* all_gather: normalised */
    bool chunked;   /* all_gather: every rank's size is wk_chunk's split, so reduce_scatter gives this rank's slice */
    int64_t off;    /* all_gather: this rank's first index along dim in the gathered tensor */
    int64_t len;    /* ... and its size there */
} wk__dist_args;
_Static_assert(sizeof(wk__dist_args) <= WK__ARGS_UPPER_BYTES, "dist args do not fit the node's block");
_Static_assert(_Alignof(wk__dist_args) <= _Alignof(wk__node_args), "dist args need more alignment than the block has");

static wk__dist_args *args_of(wk__node *n) { return (wk__dist_args *)(void *)n->args.upper; }

/* r with a node of op / rule over x, its args a; r NULL passes through. */
static wk_tensor *record(wk_tensor *r, const wk_tensor *x, wk__op_id id, const char *name, wk__bw_fn fn,
                         const wk__dist_args *a) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(id, name, fn, 1, &x);
    if (n) memcpy(args_of(n), a, sizeof *a);
    return wk__node_attach(n, r);
}

static wk_status all_reduce_bw(wk__bw_ctx *c) {
    return wk__bw_set(c, 0, wk_dist_all_reduce_tracked(args_of(c->n)->c, c->g));
}

static wk_status copy_to_bw(wk__bw_ctx *c) {
    /* f's adjoint is g: sum the partial gradients of the region's ranks */
    return wk__bw_set(c, 0, wk_dist_reduce_from_region(args_of(c->n)->c, c->g));
}

static wk_status reduce_from_bw(wk__bw_ctx *c) { return wk__bw_set(c, 0, c->g); }

static wk_status all_gather_bw(wk__bw_ctx *c) {
    const wk__dist_args *a = args_of(c->n);
    if (a->chunked) return wk__bw_set(c, 0, wk_reduce_scatter(a->c, c->g, a->dim, WK_DIST_SUM));
    /* uneven sizes that wk_chunk would not make: sum it all, keep our part */
    wk_tensor *s = wk_all_reduce(a->c, c->g, WK_DIST_SUM);
    return wk__bw_set(c, 0, s ? wk_narrow(s, a->dim, a->off, a->len) : NULL);
}

wk_tensor *wk_dist_all_reduce_tracked(wk_comm *c, const wk_tensor *x) {
    if (!wk__ag_on1(x)) return wk_all_reduce(c, x, WK_DIST_SUM);
    wk__ag_suspend();
    wk_tensor *r = wk_all_reduce(c, x, WK_DIST_SUM);
    wk__ag_resume();
    wk__dist_args a = {.c = c};
    return record(r, x, WK__OP_DIST_ALL_REDUCE, "wk_dist_all_reduce_tracked", all_reduce_bw, &a);
}

wk_tensor *wk_dist_reduce_from_region(wk_comm *c, const wk_tensor *x) {
    if (!wk__ag_on1(x)) return wk_all_reduce(c, x, WK_DIST_SUM);
    wk__ag_suspend();
    wk_tensor *r = wk_all_reduce(c, x, WK_DIST_SUM);
    wk__ag_resume();
    wk__dist_args a = {.c = c};
    return record(r, x, WK__OP_DIST_REDUCE_FROM, "wk_dist_reduce_from_region", reduce_from_bw, &a);
}

wk_tensor *wk_dist_copy_to_region(wk_comm *c, const wk_tensor *x) {
    const char *op = "wk_dist_copy_to_region";
    if (!wk__check_in(op, x) || !wk__comm_check(op, c)) return NULL;
    /* identity forward: a new header over x's values (the node goes on it) */
    wk_tensor *r = wk__tensor_view(x, &x->layout);
    if (!wk__ag_on1(x)) return r;
    wk__dist_args a = {.c = c};
    return record(r, x, WK__OP_DIST_COPY_TO, op, copy_to_bw, &a);
}

wk_tensor *wk_dist_all_gather_tracked(wk_comm *c, const wk_tensor *x, int dim) {
    const char *op = "wk_dist_all_gather_tracked";
    if (!wk__ag_on1(x)) return wk_all_gather(c, x, dim);
    wk__ag_suspend();
    wk_tensor *r = wk_all_gather(c, x, dim);
    wk_tensor *sizes = NULL;
    wk__dist_args a = {.c = c};
    if (r) {
        /* wk_all_gather checked dim; the backward needs every rank's size
         * along it (they may differ), so gather them too: one tiny message */
        int rank = x->layout.rank;
        a.dim = dim < 0 ? dim + rank : dim;
        a.len = wk_dim(x, a.dim);
        int64_t one = 1;
        wk_tensor *mine = wk_from_host(&a.len, sizeof a.len, &one, 1, WK_I64, wk_cpu());
        sizes = mine ? wk_all_gather(c, mine, 0) : NULL;
        wk_tensor_free(mine);
    }
    wk__ag_resume();
    if (!sizes) {
        wk_tensor_free(r);
        return NULL;
    }
    int N = wk_comm_size(c), me = wk_comm_rank(c);
    int64_t sz[N > 0 ? N : 1], total = 0;
    wk_status st = wk_to_host(sizes, sz, sizeof(int64_t) * (size_t)N);
    wk_tensor_free(sizes);
    if (st != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    for (int i = 0; i < N; i++) {
        if (i == me) a.off = total;
        total += sz[i];
    }
    /* wk_chunk's split of total into N: ceil(total / N) each, the tail short */
    int64_t per = (total + N - 1) / N;
    a.chunked = true;
    for (int i = 0; i < N; i++) {
        int64_t lo = per * i < total ? per * i : total, hi = per * (i + 1) < total ? per * (i + 1) : total;
        if (sz[i] != hi - lo) a.chunked = false;
    }
    (void)op;
    return record(r, x, WK__OP_DIST_ALL_GATHER, op, all_gather_bw, &a);
}
