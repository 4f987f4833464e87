/* Backward rules of the fused nn ops (include/wick/nn.h): softmax /
 * log_softmax, rms_norm / layer_norm, rope / rope_thd, swiglu, attention.
 *
 * Each rule has two paths. The fused one calls the backend's optional
 * backward entry (src/tensor/backend.h: softmax_backward, norm_backward,
 * attention_backward) into fresh buffers: one pass, nothing recorded. The
 * composite one is written with public ops, so it runs on every backend and,
 * under create_graph, is itself recorded (second order). The composite is
 * taken when the entry is NULL, when the pass creates a graph, and where the
 * fused entry has no output for a wanted gradient (a tracked attention mask).
 * Composites compute f16 / bf16 / f8 through f32, as the forward does.
 * rope needs no entry: the backward of a rotation is the rotation by -angle,
 * the forward op itself with -sin. */
#include "nn/nn_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* to_work (wk__nn_to_work) and repeat_kv (wk__nn_repeat_kv): src/nn/nn.c;
 * the causal mask: wk__prim_causal_mask (src/ops/nn.c) */
/* t cast to edge i's dtype and set as its gradient (scope-owned temporaries). */
static wk_status set_as(wk__bw_ctx *c, int i, const wk_tensor *t) {
    return wk__bw_set(c, i, t ? wk_to_dtype(t, c->n->in[i].dtype) : NULL);
}
static wk_status set_zeros(wk__bw_ctx *c, int i) {
    const wk__edge *e = &c->n->in[i];
    return wk__bw_set(c, i, wk_zeros(e->shape, e->rank, e->dtype, e->dev));
}
static bool any_empty(wk__bw_ctx *c) {
    if (wk_numel(c->g) == 0) return true;
    for (int i = 0; i < c->n->nin; i++) {
        const wk__edge *e = &c->n->in[i];
        for (int d = 0; d < e->rank; d++)
            if (e->shape[d] == 0) return true;
    }
    return false;
}
/* Every wanted gradient is zeros (empty inputs or outputs). */
static wk_status set_all_zeros(wk__bw_ctx *c) {
    wk_status st = WK_OK;
    for (int i = 0; st == WK_OK && i < c->n->nin; i++)
        if (wk__bw_need(c, i)) st = set_zeros(c, i);
    return st;
}
/* A fresh contiguous buffer shaped like edge i (scope-owned). */
static wk_tensor *alloc_edge(wk__bw_ctx *c, int i) {
    const wk__edge *e = &c->n->in[i];
    return wk__tensor_alloc(c->n->name, e->dev, e->dtype, e->shape, e->rank);
}

/* ---- softmax / log_softmax: saved y (the output) ---- */

static wk_status softmax_backward(wk__bw_ctx *c) {
    const wk__args_softmax *a = &wk__nn_args_of(c->n)->softmax;
    int d = a->dim;
    bool logp = a->logp;
    wk_tensor *y = wk__bw_saved(c, 0);
    if (!y) return wk_last_status();
    if (wk_numel(y) == 0) return set_zeros(c, 0);
    const wk_backend *be = wk__be(y);
    if (be->softmax_backward && !c->create_graph) {
        wk_tensor *dx = alloc_edge(c, 0);
        if (!dx) return wk_last_status();
        wk_status st = be->softmax_backward(wk__dev(y), y->storage->buf, &y->layout, c->g->storage->buf,
                                            &c->g->layout, y->dtype, d, logp, dx->storage->buf);
        return st != WK_OK ? st : wk__bw_set(c, 0, dx);
    }
    wk_tensor *yw = wk__nn_to_work(y), *gw = wk__nn_to_work(c->g), *dx;
    if (logp) /* dx = g - exp(y) sum(g) */
        dx = wk_sub(gw, wk_mul(wk_exp(yw), wk_sum(gw, &d, 1, true)));
    else /* dx = y (g - sum(g y)) */
        dx = wk_mul(yw, wk_sub(gw, wk_sum(wk_mul(gw, yw), &d, 1, true)));
    return set_as(c, 0, dx);
}

wk_tensor *wk__ag_softmax(wk_tensor *r, const wk_tensor *x, int dim, bool logp) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_SOFTMAX, logp ? "wk_log_softmax" : "wk_softmax", softmax_backward, 1, &x);
    if (n) {
        wk__nn_args_of(n)->softmax = (wk__args_softmax){.dim = dim, .logp = logp};
        wk__node_save_out(n, r);
    }
    return wk__node_attach(n, r);
}

/* ---- rms_norm / layer_norm: saved x, w (an empty slot without weight) ---- */

static wk_status norm_backward(wk__bw_ctx *c) {
    const wk__args_nn_norm *a = &wk__nn_args_of(c->n)->norm;
    bool rms = a->rms, has_w = a->has_w;
    double eps = a->eps;
    bool nx = wk__bw_need(c, 0), nw = wk__bw_need(c, 1), nb = wk__bw_need(c, 2);
    wk_tensor *x = wk__bw_saved(c, 0), *w = NULL;
    if (!x || (has_w && !(w = wk__bw_saved(c, 1)))) return wk_last_status();
    if (any_empty(c)) return set_all_zeros(c);
    const wk_backend *be = wk__be(x);
    if (be->norm_backward && !c->create_graph) {
        wk_tensor *dx = alloc_edge(c, 0), *dw = nw ? alloc_edge(c, 1) : NULL, *db = nb ? alloc_edge(c, 2) : NULL;
        if (!dx || (nw && !dw) || (nb && !db)) return wk_last_status();
        wk_status st = be->norm_backward(wk__dev(x), x->storage->buf, &x->layout, w ? w->storage->buf : NULL,
                                         w ? &w->layout : NULL, c->g->storage->buf, &c->g->layout, x->dtype, eps,
                                         rms, dx->storage->buf, dw ? dw->storage->buf : NULL,
                                         db ? db->storage->buf : NULL);
        if (st != WK_OK) return st;
        if (nx) st = wk__bw_set(c, 0, dx);
        if (st == WK_OK && nw) st = wk__bw_set(c, 1, dw);
        if (st == WK_OK && nb) st = wk__bw_set(c, 2, db);
        return st;
    }
    int d = x->layout.rank - 1;
    wk_tensor *xw = wk__nn_to_work(x), *gw = wk__nn_to_work(c->g);
    wk_tensor *xc = rms ? xw : wk_sub(xw, wk_mean(xw, &d, 1, true));
    wk_tensor *rs = wk_recip(wk_sqrt(wk_affine(wk_mean(wk_sqr(xc), &d, 1, true), 1.0, eps))); /* 1 / rms */
    wk_tensor *xhat = wk_mul(xc, rs);
    wk_status st = WK_OK;
    if (nx) {
        /* dx = rs (gy - xhat mean(gy xhat) [- mean(gy)]), gy = g w */
        wk_tensor *gy = w ? wk_mul(gw, wk__nn_to_work(w)) : gw;
        wk_tensor *t = wk_sub(gy, wk_mul(xhat, wk_mean(wk_mul(gy, xhat), &d, 1, true)));
        if (!rms) t = wk_sub(t, wk_mean(gy, &d, 1, true));
        st = set_as(c, 0, wk_mul(t, rs));
    }
    if (st == WK_OK && nw) {
        const wk__edge *e = &c->n->in[1];
        st = set_as(c, 1, wk__sum_to(wk_mul(gw, xhat), e->shape, e->rank));
    }
    if (st == WK_OK && nb) {
        const wk__edge *e = &c->n->in[2];
        st = set_as(c, 2, wk__sum_to(gw, e->shape, e->rank));
    }
    return st;
}

wk_tensor *wk__ag_nn_norm(wk_tensor *r, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps,
                       bool rms) {
    if (!r) return NULL;
    const wk_tensor *in[3] = {x, w, b};
    wk__node *n = wk__node_new(WK__OP_NN_NORM, rms ? "wk_rms_norm" : "wk_layer_norm", norm_backward, 3, in);
    if (n) {
        wk__nn_args_of(n)->norm = (wk__args_nn_norm){.rms = rms, .has_w = w != NULL, .eps = eps};
        /* x is read by every gradient (the normalized rows); b by none */
        wk__node_save(n, x);
        wk__node_save(n, w);
    }
    return wk__node_attach(n, r);
}

/* ---- rope / rope_thd: saved x (only when cos or sin want a gradient), cos, sin ---- */

/* The two rotated halves of t (..., D): the pairs (2i, 2i+1) when
 * interleaved, else (i, i + D/2). */
static void rope_halves(const wk_tensor *t, bool interleaved, wk_tensor **a, wk_tensor **b) {
    const int64_t *s = t->layout.shape;
    int64_t h = s[3] / 2;
    if (interleaved) {
        int64_t s5[5] = {s[0], s[1], s[2], h, 2};
        wk_tensor *p = wk_reshape(wk_contiguous(t), s5, 5);
        *a = wk_select(p, 4, 0);
        *b = wk_select(p, 4, 1);
    } else {
        *a = wk_narrow(t, 3, 0, h);
        *b = wk_narrow(t, 3, h, h);
    }
}

static wk_status rope_backward(wk__bw_ctx *c) {
    const wk__args_rope *ra = &wk__nn_args_of(c->n)->rope;
    bool interleaved = ra->interleaved, thd = ra->thd;
    bool nx = wk__bw_need(c, 0), nc = wk__bw_need(c, 1), ns = wk__bw_need(c, 2);
    wk_tensor *cs = wk__bw_saved(c, 1), *sn = wk__bw_saved(c, 2), *x = NULL;
    if (!cs || !sn || ((nc || ns) && !(x = wk__bw_saved(c, 0)))) return wk_last_status();
    if (any_empty(c)) return set_all_zeros(c);
    wk_status st = WK_OK;
    if (nx) { /* the rotation by -angle: the forward op (fused where the backend has it) with -sin */
        wk_tensor *ms = wk_neg(sn);
        st = wk__bw_set(c, 0, thd ? wk_rope_thd(c->g, cs, ms, interleaved) : wk_rope(c->g, cs, ms, interleaved));
    }
    if (st != WK_OK || !(nc || ns)) return st;
    /* y1 = a cos - b sin, y2 = a sin + b cos, summed over batch and heads */
    wk_tensor *a, *b, *g1, *g2;
    rope_halves(wk__nn_to_work(x), interleaved, &a, &b);
    rope_halves(wk__nn_to_work(c->g), interleaved, &g1, &g2);
    int dims[2] = {0, thd ? 2 : 1};
    if (nc) st = set_as(c, 1, wk_sum(wk_add(wk_mul(g1, a), wk_mul(g2, b)), dims, 2, false));
    if (st == WK_OK && ns) st = set_as(c, 2, wk_sum(wk_sub(wk_mul(g2, a), wk_mul(g1, b)), dims, 2, false));
    return st;
}

wk_tensor *wk__ag_rope(wk_tensor *r, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                       bool thd) {
    if (!r) return NULL;
    const wk_tensor *in[3] = {x, cos, sin};
    wk__node *n = wk__node_new(WK__OP_ROPE, thd ? "wk_rope_thd" : "wk_rope", rope_backward, 3, in);
    if (n) {
        wk__nn_args_of(n)->rope = (wk__args_rope){.interleaved = interleaved, .thd = thd};
        wk__node_save(n, n->in[1].node || n->in[2].node ? x : NULL);
        wk__node_save(n, cos);
        wk__node_save(n, sin);
    }
    return wk__node_attach(n, r);
}

/* ---- swiglu: saved x ---- */

/* [a, b] along the last dim from recorded ops only (a sum of the halves
 * broadcast against one-hot constants), for graphs that are differentiated
 * again: wk_cat records nothing (yet). */
static wk_tensor *join_halves(const wk_tensor *a, const wk_tensor *b) {
    if (!a || !b) return NULL;
    int r = a->layout.rank;
    int64_t h = a->layout.shape[r - 1], s[WK_MAX_RANK];
    double e0[2] = {1, 0}, e1[2] = {0, 1};
    int64_t es[2] = {2, 1};
    wk_tensor *t0 = wk_to_dtype(wk_from_host(e0, sizeof e0, es, 2, WK_F64, wk__dev(a)), a->dtype);
    wk_tensor *t1 = wk_to_dtype(wk_from_host(e1, sizeof e1, es, 2, WK_F64, wk__dev(a)), a->dtype);
    wk_tensor *j = wk_add(wk_mul(wk_unsqueeze(a, r - 1), t0), wk_mul(wk_unsqueeze(b, r - 1), t1)); /* (..., 2, h) */
    memcpy(s, a->layout.shape, sizeof(int64_t) * (size_t)r);
    s[r - 1] = 2 * h;
    return wk_reshape(j, s, r);
}

static wk_status swiglu_backward(wk__bw_ctx *c) {
    wk_tensor *x = wk__bw_saved(c, 0);
    if (!x) return wk_last_status();
    if (any_empty(c)) return set_all_zeros(c);
    int r = x->layout.rank;
    int64_t h = x->layout.shape[r - 1] / 2;
    wk_tensor *xw = wk__nn_to_work(x), *gw = wk__nn_to_work(c->g);
    wk_tensor *a = wk_narrow(xw, r - 1, 0, h), *b = wk_narrow(xw, r - 1, h, h);
    wk_tensor *s = wk_sigmoid(a);
    /* silu'(a) = s (1 + a (1 - s)) */
    wk_tensor *ds = wk_mul(s, wk_affine(wk_mul(a, wk_affine(s, -1.0, 1.0)), 1.0, 1.0));
    wk_tensor *parts[2] = {wk_mul(wk_mul(gw, b), ds), wk_mul(gw, wk_mul(a, s))};
    if (!c->create_graph) return set_as(c, 0, wk_cat(parts, 2, r - 1));
    return set_as(c, 0, join_halves(parts[0], parts[1]));
}

wk_tensor *wk__ag_swiglu(wk_tensor *r, const wk_tensor *x) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_SWIGLU, "wk_swiglu", swiglu_backward, 1, &x);
    wk__node_save(n, x);
    return wk__node_attach(n, r);
}

/* ---- attention: saved q, k, v, mask (an empty slot without), o ---- */

/* The inverse: t (..., Hkv * group, L, D) summed over each group. */
static wk_tensor *sum_groups(const wk_tensor *t, int64_t group) {
    if (!t || group == 1) return (wk_tensor *)t;
    int r = t->layout.rank;
    int64_t s[WK_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++) {
        if (i == r - 3) {
            s[j++] = t->layout.shape[i] / group;
            s[j++] = group;
        } else {
            s[j++] = t->layout.shape[i];
        }
    }
    int d = r - 2;
    return wk_sum(wk_reshape(wk_contiguous(t), s, r + 1), &d, 1, false);
}
static wk_status attention_fused(wk__bw_ctx *c, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                 const wk_tensor *mask, const wk_tensor *o, const wk_attention_args *a) {
    const wk_backend *be = wk__be(q);
    int r = q->layout.rank;
    wk_layout lm;
    if (mask) {
        int64_t sshape[WK_MAX_RANK];
        memcpy(sshape, q->layout.shape, sizeof(int64_t) * (size_t)r);
        sshape[r - 1] = k->layout.shape[r - 2];
        if (wk__layout_broadcast(c->n->name, &mask->layout, sshape, r, &lm) != WK_OK) return wk_last_status();
    }
    wk_tensor *dq = alloc_edge(c, 0), *dk = alloc_edge(c, 1), *dv = alloc_edge(c, 2);
    if (!dq || !dk || !dv) return wk_last_status();
    wk_status st = be->attention_backward(wk__dev(q), q->storage->buf, &q->layout, k->storage->buf, &k->layout,
                                          v->storage->buf, &v->layout, mask ? mask->storage->buf : NULL,
                                          mask ? &lm : NULL, o->storage->buf, &o->layout, c->g->storage->buf,
                                          &c->g->layout, q->dtype, a, dq->storage->buf, dk->storage->buf,
                                          dv->storage->buf);
    if (st != WK_OK) return st;
    if (wk__bw_need(c, 0)) st = wk__bw_set(c, 0, dq);
    if (st == WK_OK && wk__bw_need(c, 1)) st = wk__bw_set(c, 1, dk);
    if (st == WK_OK && wk__bw_need(c, 2)) st = wk__bw_set(c, 2, dv);
    return st;
}

static wk_status attention_backward(wk__bw_ctx *c) {
    wk__node *n = c->n;
    const wk__args_attention *args = &wk__nn_args_of(n)->attention;
    wk_attention_args a = args->a;
    bool has_mask = args->has_mask;
    wk_tensor *q = wk__bw_saved(c, 0), *k = wk__bw_saved(c, 1), *v = wk__bw_saved(c, 2), *mask = NULL;
    if (!q || !k || !v || (has_mask && !(mask = wk__bw_saved(c, 3)))) return wk_last_status();
    int r = q->layout.rank;
    if (any_empty(c) || k->layout.shape[r - 2] == 0) return set_all_zeros(c);
    const wk_backend *be = wk__be(q);
    if (be->attention_backward && !c->create_graph && !(has_mask && wk__bw_need(c, 3))) {
        wk_tensor *o = wk__bw_saved(c, 4);
        if (!o) return wk_last_status();
        return attention_fused(c, q, k, v, mask, o, &a);
    }
    /* the composite: P recomputed with public ops, then the softmax rule by hand */
    wk_tensor *qw = wk__nn_to_work(q), *gw = wk__nn_to_work(c->g);
    wk_tensor *kr = wk__nn_repeat_kv(wk__nn_to_work(k), a.group), *vr = wk__nn_repeat_kv(wk__nn_to_work(v), a.group);
    wk_tensor *s = wk_affine(wk_matmul(qw, wk_transpose(kr, r - 2, r - 1)), a.scale, 0.0), *th = NULL;
    if (a.softcap > 0 && s) { /* s = cap tanh(s / cap); th = tanh(s / cap) for its derivative */
        th = wk_tanh(wk_affine(s, 1.0 / a.softcap, 0.0));
        s = wk_affine(th, a.softcap, 0.0);
    }
    if (mask) s = wk_add(s, wk__nn_to_work(mask));
    if ((a.causal || a.window > 0) && s)
        s = wk_add(s, wk__prim_causal_mask(n->name, wk__dev(q), s->dtype, q->layout.shape[r - 2],
                                           k->layout.shape[r - 2], &a));
    wk_tensor *p = wk_softmax(s, -1);
    wk_tensor *dp = wk_matmul(gw, wk_transpose(vr, r - 2, r - 1));
    wk_tensor *ds = wk_mul(p, wk_sub(dp, wk_sum(wk_mul(dp, p), (int[]){r - 1}, 1, true))); /* d scores */
    /* through the cap: d raw = d capped * (1 - tanh^2); the mask's
     * gradient is the capped scores' (the mask is added after the cap) */
    wk_tensor *dsr = th ? wk_sub(ds, wk_mul(ds, wk_mul(th, th))) : ds;
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) st = set_as(c, 0, wk_affine(wk_matmul(dsr, kr), a.scale, 0.0));
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *dkr = wk_affine(wk_matmul(wk_transpose(dsr, r - 2, r - 1), qw), a.scale, 0.0);
        st = set_as(c, 1, sum_groups(dkr, a.group));
    }
    if (st == WK_OK && wk__bw_need(c, 2))
        st = set_as(c, 2, sum_groups(wk_matmul(wk_transpose(p, r - 2, r - 1), gw), a.group));
    if (st == WK_OK && wk__bw_need(c, 3)) {
        const wk__edge *e = &n->in[3];
        st = set_as(c, 3, wk__sum_to(ds, e->shape, e->rank));
    }
    return st;
}

wk_tensor *wk__ag_attention(wk_tensor *r, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                            const wk_tensor *mask, const wk_attention_args *a, const char *op) {
    if (!r) return NULL;
    const wk_tensor *in[4] = {q, k, v, mask};
    wk__node *n = wk__node_new(WK__OP_ATTENTION, op, attention_backward, 4, in);
    if (n) {
        wk__nn_args_of(n)->attention = (wk__args_attention){.a = *a, .has_mask = mask != NULL};
        /* every gradient reads q, k and v (the scores are recomputed, never
         * kept: memory O(inputs), not O(Lq * Lk)); only the fused entry reads
         * o, so o is kept only where that entry can run */
        wk__node_save(n, q);
        wk__node_save(n, k);
        wk__node_save(n, v);
        wk__node_save(n, mask);
        if (wk__be(q)->attention_backward && !(mask && n->in[3].node)) wk__node_save_out(n, r);
    }
    return wk__node_attach(n, r);
}
