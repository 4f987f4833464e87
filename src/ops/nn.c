/* Fused neural-network ops, untracked: the public ops' argument checks, then
 * the backend's optional fused entry into a fresh tensor. Where a backend
 * has no entry, the prim records no error, sets *composite and returns
 * NULL: the public op (src/nn/nn.c, include/wick/nn.h) then computes it as a
 * composite of public ops (required entries only), so every backend runs
 * it. Nothing here records a graph. */
#include "ops/prim_nn.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool check_float(const char *op, const wk_tensor *t) {
    if (wk_dtype_is_float(t->dtype)) return true;
    wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s (float dtypes only)", wk_dtype_name(t->dtype));
    return false;
}

/* Run a fused entry into a fresh contiguous tensor shaped like `like`. */
#define RUN_FUSED(op, dev, dt, shape, rank, call)                                                                   \
    do {                                                                                                            \
        wk_tensor *out_ = wk__tensor_alloc(op, dev, dt, shape, rank);                                               \
        if (!out_ || wk_numel(out_) == 0) return out_;                                                              \
        void *dst = out_->storage->buf;                                                                             \
        if ((call) != WK_OK) {                                                                                      \
            wk_tensor_free(out_);                                                                                   \
            return NULL;                                                                                            \
        }                                                                                                           \
        return out_;                                                                                                \
    } while (0)

/* ---- softmax ---- */

static wk_tensor *softmax_prim(const char *op, const wk_tensor *t, int dim, bool logp, bool *composite) {
    *composite = false;
    if (!wk__check_in(op, t) || !check_float(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    const wk_backend *be = wk__be(t);
    wk_status (*e)(wk_device *, const void *, const wk_layout *, wk_dtype, int, void *) =
        logp ? be->log_softmax : be->softmax;
    if (wk_numel(t) == 0) return wk__tensor_alloc(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank);
    if (!e) {
        *composite = true;
        return NULL;
    }
    RUN_FUSED(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank,
              e(wk__dev(t), t->storage->buf, &t->layout, t->dtype, d, dst));
}

wk_tensor *wk__prim_softmax(const wk_tensor *t, int dim, bool *composite) {
    return softmax_prim("wk_softmax", t, dim, false, composite);
}
wk_tensor *wk__prim_log_softmax(const wk_tensor *t, int dim, bool *composite) {
    return softmax_prim("wk_log_softmax", t, dim, true, composite);
}

/* ---- rms_norm / layer_norm ---- */

/* x float, rank >= 1; a (weight or bias) NULL or 1-D of x's last size. */
static bool norm_check(const char *op, const wk_tensor *x, const wk_tensor *a, const char *what) {
    if (!a) return true;
    if (!wk__check_same(op, x, a)) return false;
    if (a->layout.rank != 1 || a->layout.shape[0] != x->layout.shape[x->layout.rank - 1]) {
        char bx[128], ba[128];
        wk__err(WK_ERR_SHAPE, op, "%s %s must be 1-D of the last dim of x %s", what,
                wk__shape_str(a->layout.shape, a->layout.rank, ba, sizeof ba),
                wk__shape_str(x->layout.shape, x->layout.rank, bx, sizeof bx));
        return false;
    }
    return true;
}

static wk_tensor *norm_prim(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps,
                           bool rms, bool *composite) {
    *composite = false;
    if (!wk__check_in(op, x) || !check_float(op, x)) return NULL;
    if (x->layout.rank < 1) {
        wk__err(WK_ERR_SHAPE, op, "needs rank >= 1 (the normalized dim is the last), got a scalar");
        return NULL;
    }
    if (!norm_check(op, x, w, "weight") || !norm_check(op, x, b, "bias")) return NULL;
    if (!(eps >= 0)) {
        wk__err(WK_ERR_ARG, op, "eps %g must be >= 0", eps);
        return NULL;
    }
    const wk_backend *be = wk__be(x);
    bool fused = rms ? be->rms_norm != NULL : be->layer_norm != NULL;
    if (wk_numel(x) == 0) return wk__tensor_alloc(op, wk__dev(x), x->dtype, x->layout.shape, x->layout.rank);
    if (!fused) {
        *composite = true;
        return NULL;
    }
    const void *wb = w ? w->storage->buf : NULL, *bb = b ? b->storage->buf : NULL;
    const wk_layout *lw = w ? &w->layout : NULL, *lb = b ? &b->layout : NULL;
    RUN_FUSED(op, wk__dev(x), x->dtype, x->layout.shape, x->layout.rank,
              rms ? be->rms_norm(wk__dev(x), x->storage->buf, &x->layout, wb, lw, x->dtype, eps, dst)
                  : be->layer_norm(wk__dev(x), x->storage->buf, &x->layout, wb, lw, bb, lb, x->dtype, eps, dst));
}

wk_tensor *wk__prim_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps, bool *composite) {
    return norm_prim("wk_rms_norm", x, weight, NULL, eps, true, composite);
}
wk_tensor *wk__prim_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps,
                               bool *composite) {
    return norm_prim("wk_layer_norm", x, weight, bias, eps, false, composite);
}

/* ---- rope ---- */

static wk_tensor *rope_prim(const char *op, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin,
                            bool interleaved, bool thd, bool *composite) {
    *composite = false;
    if (!wk__check_same(op, x, cos) || !wk__check_same(op, x, sin) || !check_float(op, x)) return NULL;
    char bx[128], bc[128], bs[128];
    const wk_layout *lx = &x->layout, *lc = &cos->layout, *ls = &sin->layout;
    int tdim = thd ? 1 : 2;
    if (lx->rank != 4 || lx->shape[3] % 2 != 0 || lc->rank != 2 || ls->rank != 2 || lc->shape[0] != lx->shape[tdim] ||
        lc->shape[1] != lx->shape[3] / 2 || ls->shape[0] != lc->shape[0] || ls->shape[1] != lc->shape[1]) {
        wk__err(WK_ERR_SHAPE, op, "needs x %s with D even and cos, sin (T, D/2): x %s, cos %s, sin %s",
                thd ? "(B, T, H, D)" : "(B, H, T, D)", wk__shape_str(lx->shape, lx->rank, bx, sizeof bx),
                wk__shape_str(lc->shape, lc->rank, bc, sizeof bc), wk__shape_str(ls->shape, ls->rank, bs, sizeof bs));
        return NULL;
    }
    if (wk_numel(x) == 0) return wk__tensor_alloc(op, wk__dev(x), x->dtype, lx->shape, 4);
    const wk_backend *be = wk__be(x);
    if (!be->rope) {
        *composite = true;
        return NULL;
    }
    RUN_FUSED(op, wk__dev(x), x->dtype, lx->shape, 4,
              be->rope(wk__dev(x), x->storage->buf, lx, cos->storage->buf, lc, sin->storage->buf, ls, x->dtype,
                       interleaved, thd, dst));
}

wk_tensor *wk__prim_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                         bool *composite) {
    return rope_prim("wk_rope", x, cos, sin, interleaved, false, composite);
}
wk_tensor *wk__prim_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                             bool *composite) {
    return rope_prim("wk_rope_thd", x, cos, sin, interleaved, true, composite);
}

/* ---- swiglu ---- */

/* An empty x also takes the composite (which makes its empty result). */
wk_tensor *wk__prim_swiglu(const wk_tensor *x, bool *composite) {
    const char *op = "wk_swiglu";
    *composite = false;
    if (!x) return NULL;
    if (!wk__check_in(op, x) || !check_float(op, x)) return NULL;
    const wk_layout *l = &x->layout;
    if (l->rank < 1 || l->shape[l->rank - 1] % 2 != 0) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "needs a last dim of even size: x %s", wk__shape_str(l->shape, l->rank, b, sizeof b));
        return NULL;
    }
    int r = l->rank;
    int64_t h = l->shape[r - 1] / 2, oshape[WK_MAX_RANK];
    memcpy(oshape, l->shape, sizeof(int64_t) * (size_t)r);
    oshape[r - 1] = h;
    const wk_backend *be = wk__be(x);
    if (!be->swiglu || wk_numel(x) == 0) {
        *composite = true;
        return NULL;
    }
    RUN_FUSED(op, wk__dev(x), x->dtype, oshape, r, be->swiglu(wk__dev(x), x->storage->buf, l, x->dtype, dst));
}

/* ---- scaled dot-product attention ---- */

wk_tensor *wk__prim_causal_mask(const char *op, wk_device *dev, wk_dtype dt, int64_t lq, int64_t lk,
                                const wk_attention_args *a) {
    int64_t off = a->q_offset, w = a->window;
    size_t n = (size_t)(lq * lk), es = wk_dtype_size(dt);
    void *buf = malloc(n * es + 1);
    if (!buf) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a %lld x %lld causal mask", (long long)lq, (long long)lk);
        return NULL;
    }
    for (int64_t i = 0; i < lq; i++)
        for (int64_t j = 0; j < lk; j++) {
            bool seen = (!a->causal || j <= i + off) && (w <= 0 || i + off - j < w);
            double v = seen ? 0.0 : -INFINITY;
            if (dt == WK_F64) ((double *)buf)[i * lk + j] = v;
            else ((float *)buf)[i * lk + j] = (float)v;
        }
    int64_t shape[2] = {lq, lk};
    wk_tensor *m = wk_from_host(buf, n * es, shape, 2, dt, dev);
    free(buf);
    return m;
}

static wk_tensor *attention_prim(const char *op, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                 const wk_tensor *mask, const wk_attention_args *req, bool gqa,
                                 wk_attention_args *ap, bool *composite) {
    double scale = req->scale;
    int64_t q_offset = req->q_offset;
    *composite = false;
    if (!wk__check_same(op, q, k) || !wk__check_same(op, q, v) || (mask && !wk__check_same(op, q, mask)) ||
        !check_float(op, q))
        return NULL;
    const wk_layout *lq = &q->layout, *lk = &k->layout, *lv = &v->layout;
    int r = lq->rank;
    bool ok = r >= (gqa ? 3 : 2) && lk->rank == r && lv->rank == r && lq->shape[r - 1] == lk->shape[r - 1] &&
              lk->shape[r - 2] == lv->shape[r - 2];
    int64_t group = 1;
    for (int i = 0; ok && i < r - 2; i++) {
        if (gqa && i == r - 3) {
            ok = lk->shape[i] == lv->shape[i] && lk->shape[i] > 0 && lq->shape[i] % lk->shape[i] == 0;
            if (ok) group = lq->shape[i] / lk->shape[i];
        } else {
            ok = lq->shape[i] == lk->shape[i] && lq->shape[i] == lv->shape[i];
        }
    }
    if (!ok) {
        char bq[128], bk[128], bv[128];
        wk__err(WK_ERR_SHAPE, op,
                gqa ? "needs q (..., Hq, Lq, D), k (..., Hkv, Lk, D), v (..., Hkv, Lk, Dv), equal batch dims, Hkv dividing Hq: q %s, k %s, v %s"
                    : "needs q (..., Lq, D), k (..., Lk, D), v (..., Lk, Dv) with equal batch dims: q %s, k %s, v %s",
                wk__shape_str(lq->shape, lq->rank, bq, sizeof bq), wk__shape_str(lk->shape, lk->rank, bk, sizeof bk),
                wk__shape_str(lv->shape, lv->rank, bv, sizeof bv));
        return NULL;
    }
    if (q_offset < 0) {
        wk__err(WK_ERR_ARG, op, "q_offset %lld is negative", (long long)q_offset);
        return NULL;
    }
    if (req->window < 0) {
        wk__err(WK_ERR_ARG, op, "window %lld is negative (0 means no window)", (long long)req->window);
        return NULL;
    }
    if (!(req->softcap >= 0) || isinf(req->softcap)) {
        wk__err(WK_ERR_ARG, op, "softcap %g is not a finite number >= 0 (0 means off)", req->softcap);
        return NULL;
    }
    int64_t oshape[WK_MAX_RANK];
    memcpy(oshape, lq->shape, sizeof(int64_t) * (size_t)r);
    oshape[r - 1] = lv->shape[r - 1];
    wk_layout lm;
    if (mask) {
        /* broadcast to the scores' shape (..., Hq, Lq, Lk) */
        int64_t sshape[WK_MAX_RANK];
        memcpy(sshape, lq->shape, sizeof(int64_t) * (size_t)r);
        sshape[r - 1] = lk->shape[r - 2];
        if (wk__layout_broadcast(op, &mask->layout, sshape, r, &lm) != WK_OK) return NULL;
    }
    if (!(scale > 0)) scale = 1.0 / sqrt((double)(lq->shape[r - 1] ? lq->shape[r - 1] : 1));
    int64_t on = 1;
    for (int i = 0; i < r; i++) on *= oshape[i];
    *ap = (wk_attention_args){.scale = scale,
                              .causal = req->causal,
                              .q_offset = q_offset,
                              .group = group,
                              .window = req->window,
                              .softcap = req->softcap};
    const wk_layout *lm_ = mask ? &lm : NULL; /* the mask broadcast to the scores' shape */
    if (on == 0) return wk__tensor_alloc(op, wk__dev(q), q->dtype, oshape, r);
    /* no keys: softmax over nothing times an empty v is zeros (torch's math
     * path); decided here so that every backend agrees */
    if (lk->shape[r - 2] == 0) return wk_zeros(oshape, r, q->dtype, wk__dev(q));
    const wk_backend *be = wk__be(q);
    if (!be->attention) {
        *composite = true;
        return NULL;
    }
    RUN_FUSED(op, wk__dev(q), q->dtype, oshape, r,
              be->attention(wk__dev(q), q->storage->buf, lq, k->storage->buf, lk, v->storage->buf, lv,
                            mask ? mask->storage->buf : NULL, lm_, q->dtype, ap, dst));
}

wk_tensor *wk__prim_scaled_dot_product_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                                 const wk_tensor *mask, double scale, bool causal, wk_attention_args *a,
                                                 bool *composite) {
    wk_attention_args req = {.scale = scale, .causal = causal};
    return attention_prim("wk_scaled_dot_product_attention", q, k, v, mask, &req, false, a, composite);
}

wk_tensor *wk__prim_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_tensor *mask,
                              const wk_attention_args *req, wk_attention_args *a, bool *composite) {
    return attention_prim("wk_attention", q, k, v, mask, req, true, a, composite);
}
