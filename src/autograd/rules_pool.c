/* Backward of max / avg pool2d and nearest / bilinear upsampling through the
 * backend's optional pool2d_backward / upsample2d_backward entries (one
 * pass over the gradient, no index tensor kept from the forward: max pool
 * finds each window's first maximum again from the saved input).
 *
 * Higher order: each of these backward maps is linear in g, so under
 * create_graph its result is itself recorded as an op of g:
 *   avg pool   dx = A^T g  ->  its backward is A (avg_pool2d, same params)
 *   upsample   dx = U^T g  ->  its backward is U (the forward upsample)
 *   max pool   dx = M(x)^T g -> its backward would gather at the argmax of
 *              each window, which no public op computes: differentiating it
 *              again fails with WK_ERR_NOT_COMPILED naming the op (its
 *              gradient wrt x is zero almost everywhere). */
#include "autograd/record.h"

/* ---- the backward ops' own backward (create_graph) ---- */

static wk_status avg_pool_bw_backward(wk__bw_ctx *c) {
    wk_pool_params p = c->n->args.pool.p;
    return wk__bw_set(c, 0, wk_avg_pool2d(c->g, p.k[0], p.k[1], p.s[0], p.s[1], p.p[0], p.p[1], p.count_include_pad));
}

static wk_status max_pool_bw_backward(wk__bw_ctx *c) {
    return wk__err(WK_ERR_NOT_COMPILED, "wk_max_pool2d",
                   "no second-order gradient: the backward of max pool's backward (a gather at each window's "
                   "maximum) has no op in this build; use avg_pool2d, or keep max pools out of create_graph passes");
}

/* The pool's gradient: x (max only; NULL for avg), the input's edge, g. */
static wk_tensor *pool_grad(const char *op, const wk_tensor *x, const wk__edge *e, const wk_tensor *g,
                            const wk_pool_params *p) {
    const wk_backend *be = wk__be(g);
    if (!be->pool2d_backward) {
        wk__err(WK_ERR_NOT_COMPILED, op, "backward: the %s backend has no pool2d_backward entry", be->name);
        return NULL;
    }
    wk__ag_suspend();
    wk_tensor *dx = wk__tensor_alloc(op, e->dev, e->dtype, e->shape, e->rank);
    wk__ag_resume();
    if (!dx) return NULL;
    if (wk_numel(dx) > 0) {
        wk_status st;
        if (wk_numel(g) == 0) st = be->fill(e->dev, dx->storage->buf, &dx->layout, e->dtype, 0.0);
        else {
            /* avg pools do not read x: its shape is dx's */
            st = be->pool2d_backward(e->dev, x ? x->storage->buf : NULL, x ? &x->layout : &dx->layout,
                                     g->storage->buf, &g->layout, e->dtype, p, dx->storage->buf);
        }
        if (st != WK_OK) {
            wk_tensor_free(dx);
            return NULL;
        }
    }
    if (!wk__ag_on1(g)) return dx;
    /* create_graph: dx is a linear op of g */
    wk__node *n = wk__node_new(WK__OP_POOL2D_BACKWARD, p->is_max ? "wk_max_pool2d_backward" : "wk_avg_pool2d_backward",
                               p->is_max ? max_pool_bw_backward : avg_pool_bw_backward, 1, &g);
    if (n) n->args.pool.p = *p;
    return wk__node_attach(n, dx);
}

static wk_status pool_backward(wk__bw_ctx *c) {
    wk_pool_params p = c->n->args.pool.p;
    const wk_tensor *x = NULL;
    if (p.is_max && !(x = wk__bw_saved(c, 0))) return wk_last_status();
    return wk__bw_set(c, 0, pool_grad(c->n->name, x, &c->n->in[0], c->g, &p));
}

wk_tensor *wk__ag_pool2d(wk_tensor *r, const wk_tensor *x, const wk_pool_params *p, const char *op) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_POOL2D, op, pool_backward, 1, &x);
    if (n) {
        n->args.pool.p = *p;
        if (p->is_max) wk__node_save(n, x); /* the windows' maxima are found again; avg needs only shapes */
    }
    return wk__node_attach(n, r);
}

/* ---- upsampling ---- */

/* args.upsample: rank (3: 1-d), bilinear, align_corners; output sizes come
 * from the gradient. */
static wk_tensor *upsample_fwd(const wk_tensor *t, int rank, bool bilinear, bool ac, const int64_t *osz) {
    if (rank == 3) return wk_upsample_nearest1d(t, osz[2]);
    return bilinear ? wk_upsample_bilinear2d(t, osz[2], osz[3], ac) : wk_upsample_nearest2d(t, osz[2], osz[3]);
}

static wk_status upsample_bw_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    /* the backward op's input is the forward's output gradient: its shape is the edge's */
    const wk__args_upsample *a = &n->args.upsample;
    return wk__bw_set(c, 0, upsample_fwd(c->g, a->rank, a->bilinear, a->align_corners, n->in[0].shape));
}

static wk_tensor *upsample_grad(const char *op, const wk__edge *e, const wk_tensor *g, int rank, bool bilinear,
                                bool ac) {
    const wk_backend *be = wk__be(g);
    if (!be->upsample2d_backward) {
        wk__err(WK_ERR_NOT_COMPILED, op, "backward: the %s backend has no upsample2d_backward entry", be->name);
        return NULL;
    }
    wk__ag_suspend();
    wk_tensor *dx = wk__tensor_alloc(op, e->dev, e->dtype, e->shape, e->rank);
    wk__ag_resume();
    if (!dx) return NULL;
    if (wk_numel(dx) > 0) {
        /* 1-d: NCL seen as N C 1 L, as the forward passed it */
        wk_layout lg = g->layout, ldx;
        int64_t s4[4] = {e->shape[0], e->shape[1], rank == 3 ? 1 : e->shape[2], e->shape[rank - 1]};
        if (rank == 3) {
            lg.rank = 4;
            lg.shape[3] = g->layout.shape[2], lg.stride[3] = g->layout.stride[2];
            lg.shape[2] = 1, lg.stride[2] = 0;
        }
        wk__layout_contiguous(&ldx, s4, 4, 0);
        wk_status st = wk_numel(g) == 0
                           ? be->fill(e->dev, dx->storage->buf, &dx->layout, e->dtype, 0.0)
                           : be->upsample2d_backward(e->dev, g->storage->buf, &lg, dx->storage->buf, &ldx, e->dtype,
                                                     bilinear, ac);
        if (st != WK_OK) {
            wk_tensor_free(dx);
            return NULL;
        }
    }
    if (!wk__ag_on1(g)) return dx;
    wk__node *n = wk__node_new(WK__OP_UPSAMPLE_BACKWARD,
                               bilinear ? "wk_upsample_bilinear2d_backward" : "wk_upsample_nearest_backward",
                               upsample_bw_backward, 1, &g);
    if (n) n->args.upsample = (wk__args_upsample){.rank = rank, .bilinear = bilinear, .align_corners = ac};
    return wk__node_attach(n, dx);
}

static wk_status upsample_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    const wk__args_upsample *a = &n->args.upsample;
    return wk__bw_set(c, 0, upsample_grad(n->name, &n->in[0], c->g, a->rank, a->bilinear, a->align_corners));
}

wk_tensor *wk__ag_upsample(wk_tensor *r, const wk_tensor *x, int rank, bool bilinear, bool align_corners,
                           const char *op) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_UPSAMPLE, op, upsample_backward, 1, &x); /* linear: nothing saved */
    if (n) n->args.upsample = (wk__args_upsample){.rank = rank, .bilinear = bilinear, .align_corners = align_corners};
    return wk__node_attach(n, r);
}
