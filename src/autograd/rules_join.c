/* Backward rules of the joins, pads and slice writes: cat (each input gets
 * its narrow of the gradient; stack, roll and pad_with_same record through
 * it), pad_with_zeros (the narrow back), repeat (the copies summed), and
 * the writes of a region (slice_scatter / slice_set, slice_assign(_),
 * copy_): the region's gradient goes to src (summed back over the dims src
 * was broadcast along), the rest to the old value. Written with public ops,
 * so create_graph records them.
 *
 * The in-place writes rebase their destination (wk__ag_rebase): dst's node
 * becomes the write's node, whose edge 0 is dst's old node. Only the tensor
 * written through is rebased: other tensors viewing the same storage keep
 * their old nodes (and any value a backward saved from that storage fails
 * its version check instead of giving a wrong gradient). */
#include "autograd/record.h"
#include <stdlib.h>
#include <string.h>

wk_status wk__ag_rebase(wk_tensor *dst, wk__node *n, wk_status st) {
    if (st != WK_OK || !n) {
        wk__node_release(n);
        return st != WK_OK ? st : wk_last_status();
    }
    n->rank = dst->layout.rank;
    memcpy(n->shape, dst->layout.shape, sizeof(int64_t) * (size_t)dst->layout.rank);
    n->dtype = dst->dtype;
    n->dev = dst->storage->dev;
    wk__node_release(dst->node); /* n's edge 0 holds its own reference */
    dst->node = n;
    return WK_OK;
}

static int norm_dim(int dim, int rank) { return dim < 0 ? dim + rank : dim; }

/* ---------------------------------------------------------------- cat */

static wk_status cat_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    int d = n->args.cat.dim;
    int64_t off = 0;
    wk_status st = WK_OK;
    for (int k = 0; k < n->nin && st == WK_OK; k++) {
        int64_t len = n->in[k].shape[d];
        if (wk__bw_need(c, k)) st = wk__bw_set(c, k, wk_narrow(c->g, d, off, len));
        off += len;
    }
    return st;
}

wk_tensor *wk__ag_cat(wk_tensor *r, wk_tensor *const *ts, int n, int dim) {
    if (!r) return NULL;
    /* the offsets of the inputs are their sizes along dim, kept in the edges */
    wk__node *nd = wk__node_new(WK__OP_CAT, "wk_cat", cat_backward, n, (const wk_tensor *const *)ts);
    if (nd) nd->args.cat.dim = norm_dim(dim, r->layout.rank);
    return wk__node_attach(nd, r);
}

/* ------------------------------------------------------ pad_with_zeros */

static wk_status pad_zeros_backward(wk__bw_ctx *c) {
    const wk__args_pad *a = &c->n->args.pad;
    return wk__bw_set(c, 0, wk_narrow(c->g, a->dim, a->left, c->n->in[0].shape[a->dim]));
}

wk_tensor *wk__ag_pad_zeros(wk_tensor *r, const wk_tensor *x, int dim, int64_t left) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_PAD_ZEROS, "wk_pad_with_zeros", pad_zeros_backward, 1, &x);
    if (n) n->args.pad = (wk__args_pad){.dim = norm_dim(dim, x->layout.rank), .left = left};
    return wk__node_attach(n, r);
}

/* -------------------------------------------------------------- repeat */

/* Dim i of the output is reps[i] copies of size s: viewed as (pre, reps,
 * s, post) the copies are dim 1, summed away. Rank 4 whatever the rank, so
 * a rank-8 repeat never needs a ninth dim. */
static wk_status repeat_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    const wk__edge *e = &n->in[0];
    int nr = n->args.repeat.n, lead = nr - e->rank;
    int64_t shape[WK_MAX_RANK];
    for (int i = 0; i < nr; i++) shape[i] = c->g->layout.shape[i];
    const wk_tensor *cur = c->g;
    for (int i = 0; i < nr; i++) {
        int64_t rep = n->args.repeat.reps[i];
        if (rep == 1) continue;
        int64_t s = i < lead ? 1 : e->shape[i - lead], pre = 1, post = 1;
        for (int k = 0; k < i; k++) pre *= shape[k];
        for (int k = i + 1; k < nr; k++) post *= shape[k];
        int64_t four[4] = {pre, rep, s, post};
        int one = 1;
        wk_tensor *sum = wk_sum(wk_reshape(cur, four, 4), &one, 1, false);
        shape[i] = s;
        if (!(cur = wk_reshape(sum, shape, nr))) return wk__bw_set(c, 0, NULL);
    }
    return wk__bw_set(c, 0, wk_reshape(cur, e->shape, e->rank));
}

wk_tensor *wk__ag_repeat(wk_tensor *r, const wk_tensor *x, const int64_t *reps, int nreps) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_REPEAT, "wk_repeat", repeat_backward, 1, &x);
    if (n) {
        n->args.repeat.n = nreps; /* <= WK_MAX_RANK (the op checked); the bound is for the compiler */
        for (int i = 0; i < nreps && i < WK_MAX_RANK; i++) n->args.repeat.reps[i] = reps[i];
    }
    return wk__node_attach(n, r);
}

/* ------------------------------------------- slice_scatter / slice_set */

/* Inputs (t, src); args.slice: dim (normalised), start. The region is src's
 * extent along dim (edge 1's shape, kept even when src is untracked). */
static wk_status slice_scatter_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    int d = n->args.slice.dim;
    int64_t start = n->args.slice.start;
    const wk__edge *es = &n->in[1];
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) { /* g with the region zeroed: a stride-0 zero as the written value */
        wk_tensor *z = wk_broadcast_as(wk_zeros(NULL, 0, c->g->dtype, es->dev), es->shape, es->rank);
        st = wk__bw_set(c, 0, wk_slice_scatter(c->g, z, d, start));
    }
    if (st == WK_OK && wk__bw_need(c, 1)) st = wk__bw_set(c, 1, wk_narrow(c->g, d, start, es->shape[d]));
    return st;
}

static wk__node *slice_node(const char *name, const wk_tensor *t, const wk_tensor *src, int dim, int64_t start) {
    const wk_tensor *in[2] = {t, src};
    wk__node *n = wk__node_new(WK__OP_SLICE_SCATTER, name, slice_scatter_backward, 2, in);
    if (n) n->args.slice = (wk__args_slice){.dim = norm_dim(dim, t->layout.rank), .start = start};
    return n;
}

wk_tensor *wk__ag_slice_scatter(wk_tensor *r, const wk_tensor *t, const wk_tensor *src, int dim, int64_t start) {
    if (!r) return NULL;
    return wk__node_attach(slice_node("wk_slice_scatter", t, src, dim, start), r);
}

wk__node *wk__ag_slice_set_node(const wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset) {
    return slice_node("wk_slice_set", dst, src, dim, offset);
}

/* --------------------------------------------------------------- copy_ */

/* Every element is overwritten: dst's old value gets zeros (PyTorch's
 * gradient for it, so its leaves show a zero gradient, not none). */
static wk_status copy_backward(wk__bw_ctx *c) {
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) st = wk__bw_set(c, 0, wk_zeros_like(c->g));
    if (st == WK_OK && wk__bw_need(c, 1)) st = wk__bw_set(c, 1, c->g);
    return st;
}

wk__node *wk__ag_copy_node(const wk_tensor *dst, const wk_tensor *src) {
    const wk_tensor *in[2] = {dst, src};
    return wk__node_new(WK__OP_COPY, "wk_copy_", copy_backward, 2, in);
}

/* -------------------------------------------------------- slice_assign */

/* The sliced region of g: narrows, and index_select for steps > 1. */
static wk_tensor *region_of(const wk_tensor *g, const wk__slice_spec *sp) {
    const wk_tensor *cur = g;
    for (int i = 0; i < sp->n && cur; i++) {
        int64_t len = sp->len[i], start = sp->start[i], step = sp->step[i];
        if (len == cur->layout.shape[i]) continue; /* the whole dim (start 0, step 1 or unused) */
        if (step == 1 || len <= 1) {
            cur = wk_narrow(cur, i, start, len);
        } else {
            wk_tensor *ids = wk_arange((double)start, (double)start + (double)len * (double)step, (double)step,
                                       WK_I64, cur->storage->dev);
            cur = wk_index_select(cur, ids, i);
        }
    }
    return (wk_tensor *)cur;
}

static wk_status slice_assign_backward(wk__bw_ctx *c) {
    const wk__slice_spec *sp = c->n->args.slice_assign.spec;
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) {
        int64_t starts[WK_MAX_RANK], ends[WK_MAX_RANK];
        for (int i = 0; i < sp->n; i++) {
            starts[i] = sp->start[i];
            ends[i] = sp->len[i] ? sp->start[i] + (sp->len[i] - 1) * sp->step[i] + 1 : sp->start[i];
        }
        wk_tensor *z = wk_zeros(NULL, 0, c->g->dtype, c->g->storage->dev);
        st = wk__bw_set(c, 0, wk_slice_assign(c->g, starts, ends, sp->step, sp->n, z));
    }
    if (st == WK_OK && wk__bw_need(c, 1)) st = wk__bw_set_sum(c, 1, region_of(c->g, sp));
    return st;
}

static void slice_assign_node_free(wk__node *n) { free(n->args.slice_assign.spec); }

/* The slice is the one argument kept outside the node (malloc'd, freed by
 * on_free): three WK_MAX_RANK arrays, too large to sit in every node. */
static wk__node *slice_assign_node(const char *name, const wk_tensor *t, const wk__slice_spec *sp,
                                   const wk_tensor *src) {
    const wk_tensor *in[2] = {t, src};
    wk__node *n = wk__node_new(WK__OP_SLICE_ASSIGN, name, slice_assign_backward, 2, in);
    if (!n) return NULL;
    wk__slice_spec *mine = malloc(sizeof *mine);
    if (!mine) {
        wk__node_release(n);
        wk__err(WK_ERR_OOM, name, "cannot allocate an autograd node's slice");
        return NULL;
    }
    memcpy(mine, sp, sizeof *mine);
    n->args.slice_assign.spec = mine;
    n->on_free = slice_assign_node_free;
    return n;
}

wk_tensor *wk__ag_slice_assign(wk_tensor *r, const wk_tensor *t, const wk__slice_spec *sp, const wk_tensor *src) {
    if (!r) return NULL;
    return wk__node_attach(slice_assign_node("wk_slice_assign", t, sp, src), r);
}

wk__node *wk__ag_slice_assign_node(const wk_tensor *dst, const wk__slice_spec *sp, const wk_tensor *src) {
    return slice_assign_node("wk_slice_assign_", dst, sp, src);
}
