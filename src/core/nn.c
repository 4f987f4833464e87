/* Fused neural-network ops (include/wick/nn.h): argument checks, then the
 * backend's optional entry, or, where it is NULL, a composite of public ops
 * (that is, of required entries only), so every backend runs them. The
 * composites compute f16 / bf16 / f8 through f32, as the CPU's fused
 * kernels do, and subtract the row max before exp (no overflow for large
 * inputs). */
#include "core/tensor.h"
#include "autograd/record.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

static bool check_float(const char *op, const wk_tensor *t) {
    if (wk_dtype_is_float(t->dtype)) return true;
    wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s (float dtypes only)", wk_dtype_name(t->dtype));
    return false;
}

/* The dtype a composite computes in. */
static wk_dtype work_dtype(wk_dtype dt) { return dt == WK_F64 ? WK_F64 : WK_F32; }

/* t in the work dtype (a view when it already is). */
static wk_tensor *to_work(const wk_tensor *t) { return t ? wk_to_dtype(t, work_dtype(t->dtype)) : NULL; }

/* Cast a composite's result r back to dt, consuming r. */
static wk_tensor *from_work(wk_tensor *r, wk_dtype dt) {
    if (!r || r->dtype == dt) return r;
    wk_tensor *c = wk_to_dtype(r, dt);
    wk_tensor_free(r);
    return c;
}

static void free_all(wk_tensor **ts, int n) {
    for (int i = 0; i < n; i++) wk_tensor_free(ts[i]);
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

/* Autograd: each public op below, when an input is tracked, runs its body
 * with recording suspended (the composites call public ops) and attaches one
 * node whose rule (src/autograd/rules_nn.c) has a fused backward. */

/* ---- softmax ---- */

static wk_tensor *softmax_composite(const wk_tensor *t, int d, bool logp) {
    wk_tensor *tmp[6] = {0};
    tmp[0] = to_work(t);
    tmp[1] = wk_max(tmp[0], &d, 1, true);
    tmp[2] = wk_sub(tmp[0], tmp[1]); /* <= 0: exp cannot overflow */
    tmp[3] = wk_exp(tmp[2]);
    tmp[4] = wk_sum(tmp[3], &d, 1, true);
    wk_tensor *r;
    if (logp) {
        tmp[5] = wk_log(tmp[4]);
        r = wk_sub(tmp[2], tmp[5]);
    } else {
        r = wk_div(tmp[3], tmp[4]);
    }
    free_all(tmp, 6);
    return from_work(r, t->dtype);
}

static wk_tensor *softmax_run(const char *op, const wk_tensor *t, int dim, bool logp) {
    if (!wk__check_in(op, t) || !check_float(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    const wk_backend *be = wk__be(t);
    wk_status (*e)(wk_device *, const void *, const wk_layout *, wk_dtype, int, void *) =
        logp ? be->log_softmax : be->softmax;
    if (!e || wk_numel(t) == 0) {
        if (wk_numel(t) == 0) return wk__tensor_alloc(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank);
        return softmax_composite(t, d, logp);
    }
    RUN_FUSED(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank,
              e(wk__dev(t), t->storage->buf, &t->layout, t->dtype, d, dst));
}

static wk_tensor *softmax_rec(const char *op, const wk_tensor *t, int dim, bool logp) {
    if (!wk__ag_on1(t)) return softmax_run(op, t, dim, logp);
    wk__ag_suspend();
    wk_tensor *r = softmax_run(op, t, dim, logp);
    wk__ag_resume();
    int d = 0;
    if (r) wk__norm_dim(op, dim, t->layout.rank, &d); /* valid: the op succeeded */
    return wk__ag_softmax(r, t, d, logp);
}

wk_tensor *wk_softmax(const wk_tensor *t, int dim) { return softmax_rec("wk_softmax", t, dim, false); }
wk_tensor *wk_log_softmax(const wk_tensor *t, int dim) { return softmax_rec("wk_log_softmax", t, dim, true); }

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

static wk_tensor *norm_composite(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, bool rms) {
    int d = x->layout.rank - 1;
    wk_tensor *tmp[10] = {0};
    tmp[0] = to_work(x);
    const wk_tensor *c = tmp[0];
    if (!rms) {
        tmp[1] = wk_mean(tmp[0], &d, 1, true);
        tmp[2] = wk_sub(tmp[0], tmp[1]);
        c = tmp[2];
    }
    tmp[3] = wk_sqr(c);
    tmp[4] = wk_mean(tmp[3], &d, 1, true);
    tmp[5] = wk_affine(tmp[4], 1.0, eps);
    tmp[6] = wk_sqrt(tmp[5]);
    wk_tensor *r = wk_div(c, tmp[6]);
    if (w) {
        tmp[7] = to_work(w);
        wk_tensor *s = wk_mul(r, tmp[7]);
        wk_tensor_free(r);
        r = s;
    }
    if (b) {
        tmp[8] = to_work(b);
        wk_tensor *s = wk_add(r, tmp[8]);
        wk_tensor_free(r);
        r = s;
    }
    free_all(tmp, 10);
    return from_work(r, x->dtype);
}

static wk_tensor *norm_run(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps,
                           bool rms) {
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
    if (!fused) return norm_composite(x, w, b, eps, rms);
    const void *wb = w ? w->storage->buf : NULL, *bb = b ? b->storage->buf : NULL;
    const wk_layout *lw = w ? &w->layout : NULL, *lb = b ? &b->layout : NULL;
    RUN_FUSED(op, wk__dev(x), x->dtype, x->layout.shape, x->layout.rank,
              rms ? be->rms_norm(wk__dev(x), x->storage->buf, &x->layout, wb, lw, x->dtype, eps, dst)
                  : be->layer_norm(wk__dev(x), x->storage->buf, &x->layout, wb, lw, bb, lb, x->dtype, eps, dst));
}

static wk_tensor *norm_rec(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps,
                           bool rms) {
    if (!wk__ag_on3(x, w, b)) return norm_run(op, x, w, b, eps, rms);
    wk__ag_suspend();
    wk_tensor *r = norm_run(op, x, w, b, eps, rms);
    wk__ag_resume();
    return wk__ag_norm(r, x, w, b, eps, rms);
}

wk_tensor *wk_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps) {
    return norm_rec("wk_rms_norm", x, weight, NULL, eps, true);
}
wk_tensor *wk_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps) {
    return norm_rec("wk_layer_norm", x, weight, bias, eps, false);
}

/* ---- rope ---- */

/* x (B, H, T, D) or, thd, (B, T, H, D): cos / sin (T, D/2) broadcast over
 * B and H either way. */
static wk_tensor *rope_composite(const wk_tensor *x, const wk_tensor *cs, const wk_tensor *sn, bool interleaved,
                                 bool thd) {
    const int64_t *s = x->layout.shape;
    int64_t h = s[3] / 2;
    wk_tensor *tmp[16] = {0};
    tmp[0] = to_work(x);
    tmp[1] = to_work(cs);
    tmp[2] = to_work(sn);
    if (thd) {
        /* (T, D/2) -> (T, 1, D/2): broadcasts over the head dim */
        tmp[14] = wk_unsqueeze(tmp[1], 1);
        tmp[15] = wk_unsqueeze(tmp[2], 1);
    }
    const wk_tensor *c = thd ? tmp[14] : tmp[1], *sv = thd ? tmp[15] : tmp[2];
    const wk_tensor *a, *b;
    if (interleaved) {
        /* (..., D) -> (..., D/2, 2): pairs are the last dim */
        int64_t s5[5] = {s[0], s[1], s[2], h, 2};
        tmp[3] = wk_contiguous(tmp[0]);
        tmp[4] = wk_reshape(tmp[3], s5, 5);
        tmp[5] = wk_select(tmp[4], 4, 0);
        tmp[6] = wk_select(tmp[4], 4, 1);
    } else {
        tmp[5] = wk_narrow(tmp[0], 3, 0, h);
        tmp[6] = wk_narrow(tmp[0], 3, h, h);
    }
    a = tmp[5];
    b = tmp[6];
    tmp[7] = wk_mul(a, c);
    tmp[8] = wk_mul(b, sv);
    tmp[9] = wk_sub(tmp[7], tmp[8]); /* a cos - b sin */
    tmp[10] = wk_mul(a, sv);
    tmp[11] = wk_mul(b, c);
    tmp[12] = wk_add(tmp[10], tmp[11]); /* a sin + b cos */
    wk_tensor *parts[2] = {tmp[9], tmp[12]};
    wk_tensor *r;
    if (interleaved) {
        tmp[13] = wk_stack(parts, 2, 4);
        r = wk_reshape(tmp[13], s, 4);
    } else {
        r = wk_cat(parts, 2, 3);
    }
    free_all(tmp, 16);
    return from_work(r, x->dtype);
}

static wk_tensor *rope_run(const char *op, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin,
                           bool interleaved, bool thd) {
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
    if (!be->rope) return rope_composite(x, cos, sin, interleaved, thd);
    RUN_FUSED(op, wk__dev(x), x->dtype, lx->shape, 4,
              be->rope(wk__dev(x), x->storage->buf, lx, cos->storage->buf, lc, sin->storage->buf, ls, x->dtype,
                       interleaved, thd, dst));
}

static wk_tensor *rope_rec(const char *op, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin,
                           bool interleaved, bool thd) {
    if (!wk__ag_on3(x, cos, sin)) return rope_run(op, x, cos, sin, interleaved, thd);
    wk__ag_suspend();
    wk_tensor *r = rope_run(op, x, cos, sin, interleaved, thd);
    wk__ag_resume();
    return wk__ag_rope(r, x, cos, sin, interleaved, thd);
}

wk_tensor *wk_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved) {
    return rope_rec("wk_rope", x, cos, sin, interleaved, false);
}
wk_tensor *wk_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved) {
    return rope_rec("wk_rope_thd", x, cos, sin, interleaved, true);
}

/* ---- swiglu ---- */

static wk_tensor *swiglu_run(const wk_tensor *x) {
    const char *op = "wk_swiglu";
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
    if (be->swiglu && wk_numel(x) > 0)
        RUN_FUSED(op, wk__dev(x), x->dtype, oshape, r, be->swiglu(wk__dev(x), x->storage->buf, l, x->dtype, dst));
    wk_tensor *tmp[5] = {0};
    tmp[0] = to_work(x);
    tmp[1] = wk_narrow(tmp[0], r - 1, 0, h);
    tmp[2] = wk_narrow(tmp[0], r - 1, h, h);
    tmp[3] = wk_silu(tmp[1]);
    tmp[4] = wk_mul(tmp[3], tmp[2]);
    wk_tensor *o = tmp[4] ? wk_contiguous(tmp[4]) : NULL;
    free_all(tmp, 5);
    return from_work(o, x->dtype);
}

wk_tensor *wk_swiglu(const wk_tensor *x) {
    if (!wk__ag_on1(x)) return swiglu_run(x);
    wk__ag_suspend();
    wk_tensor *r = swiglu_run(x);
    wk__ag_resume();
    return wk__ag_swiglu(r, x);
}

/* ---- scaled dot-product attention ---- */

/* The additive causal mask (Lq, Lk) in dtype dt on dev: 0 where
 * j <= i + off, -inf elsewhere. */
static wk_tensor *causal_mask(wk_device *dev, wk_dtype dt, int64_t lq, int64_t lk, int64_t off) {
    size_t n = (size_t)(lq * lk), es = wk_dtype_size(dt);
    void *buf = malloc(n * es + 1);
    if (!buf) {
        wk__err(WK_ERR_OOM, "wk_attention", "cannot allocate a %lld x %lld causal mask", (long long)lq,
                (long long)lk);
        return NULL;
    }
    for (int64_t i = 0; i < lq; i++)
        for (int64_t j = 0; j < lk; j++) {
            double v = j <= i + off ? 0.0 : -INFINITY;
            if (dt == WK_F64) ((double *)buf)[i * lk + j] = v;
            else ((float *)buf)[i * lk + j] = (float)v;
        }
    int64_t shape[2] = {lq, lk};
    wk_tensor *m = wk_from_host(buf, n * es, shape, 2, dt, dev);
    free(buf);
    return m;
}

/* k (..., Hkv, L, D) -> (..., Hkv * group, L, D): each kv head repeated
 * group times in a row (head h of q reads kv head h / group). */
static wk_tensor *repeat_kv(const wk_tensor *k, int64_t group) {
    if (group == 1) return wk_narrow(k, 0, 0, k->layout.shape[0]); /* a view: scope-safe */
    int r = k->layout.rank;
    int64_t s[WK_MAX_RANK + 1], o[WK_MAX_RANK];
    wk_tensor *u = wk_unsqueeze(k, r - 2); /* (..., Hkv, 1, L, D) */
    if (!u) return NULL;
    memcpy(s, u->layout.shape, sizeof(int64_t) * (size_t)(r + 1));
    s[r - 2] = group;
    wk_tensor *b = wk_broadcast_as(u, s, r + 1);
    memcpy(o, k->layout.shape, sizeof(int64_t) * (size_t)r);
    o[r - 3] *= group;
    wk_tensor *res = b ? wk_reshape(b, o, r) : NULL; /* copies: broadcast dims do not fold */
    wk_tensor_free(u);
    wk_tensor_free(b);
    return res;
}

static wk_tensor *attention_composite(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                      const wk_tensor *mask, const wk_attention_args *a) {
    int r = q->layout.rank;
    wk_tensor *tmp[12] = {0};
    tmp[0] = to_work(q);
    tmp[1] = to_work(k);
    tmp[2] = to_work(v);
    tmp[10] = tmp[1] ? repeat_kv(tmp[1], a->group) : NULL;
    tmp[11] = tmp[2] ? repeat_kv(tmp[2], a->group) : NULL;
    tmp[3] = wk_transpose(tmp[10], r - 2, r - 1);
    tmp[4] = wk_matmul(tmp[0], tmp[3]);
    tmp[5] = wk_affine(tmp[4], a->scale, 0.0);
    wk_tensor *s = tmp[5];
    if (mask) {
        tmp[6] = to_work(mask);
        tmp[7] = wk_add(s, tmp[6]);
        s = tmp[7];
    }
    if (a->causal && s) {
        tmp[8] = causal_mask(wk__dev(q), s->dtype, q->layout.shape[r - 2], k->layout.shape[r - 2], a->q_offset);
        tmp[9] = wk_add(s, tmp[8]);
        s = tmp[9];
    }
    wk_tensor *p = wk_softmax(s, -1);
    wk_tensor *o = wk_matmul(p, tmp[11]);
    wk_tensor_free(p);
    free_all(tmp, 12);
    return from_work(o, q->dtype);
}

static wk_tensor *attention_exec(const char *op, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                 const wk_tensor *mask, const wk_layout *lm, const wk_attention_args *ap,
                                 const int64_t *oshape, int64_t on);

static wk_tensor *attention_run(const char *op, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                const wk_tensor *mask, double scale, bool causal, int64_t q_offset, bool gqa) {
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
    wk_attention_args a = {.scale = scale, .causal = causal, .q_offset = q_offset, .group = group};
    const wk_tensor *ins[4] = {q, k, v, mask};
    if (!wk__ag_onn((wk_tensor *const *)ins, 4))
        return attention_exec(op, q, k, v, mask, mask ? &lm : NULL, &a, oshape, on);
    wk__ag_suspend();
    wk_tensor *res = attention_exec(op, q, k, v, mask, mask ? &lm : NULL, &a, oshape, on);
    wk__ag_resume();
    return wk__ag_attention(res, q, k, v, mask, &a, op);
}

/* The attention body once the arguments are checked: lm the mask's layout
 * broadcast to the scores' shape, oshape the output's (on elements). */
static wk_tensor *attention_exec(const char *op, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                 const wk_tensor *mask, const wk_layout *lm, const wk_attention_args *ap,
                                 const int64_t *oshape, int64_t on) {
    const wk_layout *lq = &q->layout, *lk = &k->layout, *lv = &v->layout;
    int r = lq->rank;
    const wk_backend *be = wk__be(q);
    wk_attention_args a = *ap;
    if (on == 0) return wk__tensor_alloc(op, wk__dev(q), q->dtype, oshape, r);
    /* no keys: softmax over nothing times an empty v is zeros (torch's math
     * path); decided here so that every backend agrees */
    if (lk->shape[r - 2] == 0) return wk_zeros(oshape, r, q->dtype, wk__dev(q));
    if (!be->attention) return attention_composite(q, k, v, mask, &a);
    RUN_FUSED(op, wk__dev(q), q->dtype, oshape, r,
              be->attention(wk__dev(q), q->storage->buf, lq, k->storage->buf, lk, v->storage->buf, lv,
                            mask ? mask->storage->buf : NULL, lm, q->dtype, &a, dst));
}

wk_tensor *wk_scaled_dot_product_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                           const wk_tensor *mask, double scale, bool causal) {
    return attention_run("wk_scaled_dot_product_attention", q, k, v, mask, scale, causal, 0, false);
}

wk_tensor *wk_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_attention_opts *o) {
    wk_attention_opts d = {0};
    if (!o) o = &d;
    return attention_run("wk_attention", q, k, v, o->mask, o->scale, o->causal, o->q_offset, true);
}

/* ---- block-quantized work ---- */

/* wk_qmatmul lives in core/qmatmul.c (it takes f16/bf16 weights too). */

/* wk_quantize / wk_dequantize: src/core/quantize.c */
