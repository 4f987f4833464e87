/* Fused neural-network ops (include/wick/nn.h), the public, tracked
 * entry points: the untracked prim (src/ops/nn.c: argument checks, the
 * backend's optional fused entry) or, where the backend has no entry, a
 * composite of public ops (that is, of required entries only), so every
 * backend runs them. The composites compute f16 / bf16 / f8 through f32, as
 * the CPU's fused kernels do, and subtract the row max before exp (no
 * overflow for large inputs).
 *
 * Autograd: each public op below, when an input is tracked, runs its body
 * with recording suspended (the composites call public ops) and attaches one
 * node whose rule (src/nn/rules_nn.c) has a fused backward.
 *
 * This floor sits above autograd: the composites are made of public
 * (recorded) ops, and the backward rules call the public nn ops again
 * (rope's backward is a rope, attention's recomputes a softmax). */
#include "nn/nn_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

/* The dtype a composite computes in. */
static wk_dtype work_dtype(wk_dtype dt) { return dt == WK_F64 ? WK_F64 : WK_F32; }

wk_tensor *wk__nn_to_work(const wk_tensor *t) { return t ? wk_to_dtype(t, work_dtype(t->dtype)) : NULL; }

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

/* ---- softmax ---- */

static wk_tensor *softmax_composite(const wk_tensor *t, int d, bool logp) {
    wk_tensor *tmp[6] = {0};
    tmp[0] = wk__nn_to_work(t);
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
    bool composite;
    wk_tensor *r = logp ? wk__prim_log_softmax(t, dim, &composite) : wk__prim_softmax(t, dim, &composite);
    if (!composite) return r;
    int d = 0;
    wk__norm_dim(op, dim, t->layout.rank, &d); /* valid: the prim checked it */
    return softmax_composite(t, d, logp);
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

static wk_tensor *norm_composite(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, bool rms) {
    int d = x->layout.rank - 1;
    wk_tensor *tmp[10] = {0};
    tmp[0] = wk__nn_to_work(x);
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
        tmp[7] = wk__nn_to_work(w);
        wk_tensor *s = wk_mul(r, tmp[7]);
        wk_tensor_free(r);
        r = s;
    }
    if (b) {
        tmp[8] = wk__nn_to_work(b);
        wk_tensor *s = wk_add(r, tmp[8]);
        wk_tensor_free(r);
        r = s;
    }
    free_all(tmp, 10);
    return from_work(r, x->dtype);
}

static wk_tensor *norm_run(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, bool rms) {
    bool composite;
    wk_tensor *r = rms ? wk__prim_rms_norm(x, w, eps, &composite) : wk__prim_layer_norm(x, w, b, eps, &composite);
    return composite ? norm_composite(x, w, b, eps, rms) : r;
}

static wk_tensor *norm_rec(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, bool rms) {
    if (!wk__ag_on3(x, w, b)) return norm_run(x, w, b, eps, rms);
    wk__ag_suspend();
    wk_tensor *r = norm_run(x, w, b, eps, rms);
    wk__ag_resume();
    return wk__ag_nn_norm(r, x, w, b, eps, rms);
}

wk_tensor *wk_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps) {
    return norm_rec(x, weight, NULL, eps, true);
}
wk_tensor *wk_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps) {
    return norm_rec(x, weight, bias, eps, false);
}

/* ---- rope ---- */

/* x (B, H, T, D) or, thd, (B, T, H, D): cos / sin (T, D/2) broadcast over
 * B and H either way. */
static wk_tensor *rope_composite(const wk_tensor *x, const wk_tensor *cs, const wk_tensor *sn, bool interleaved,
                                 bool thd) {
    const int64_t *s = x->layout.shape;
    int64_t h = s[3] / 2;
    wk_tensor *tmp[16] = {0};
    tmp[0] = wk__nn_to_work(x);
    tmp[1] = wk__nn_to_work(cs);
    tmp[2] = wk__nn_to_work(sn);
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

static wk_tensor *rope_run(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved, bool thd) {
    bool composite;
    wk_tensor *r = thd ? wk__prim_rope_thd(x, cos, sin, interleaved, &composite)
                       : wk__prim_rope(x, cos, sin, interleaved, &composite);
    return composite ? rope_composite(x, cos, sin, interleaved, thd) : r;
}

static wk_tensor *rope_rec(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                           bool thd) {
    if (!wk__ag_on3(x, cos, sin)) return rope_run(x, cos, sin, interleaved, thd);
    wk__ag_suspend();
    wk_tensor *r = rope_run(x, cos, sin, interleaved, thd);
    wk__ag_resume();
    return wk__ag_rope(r, x, cos, sin, interleaved, thd);
}

wk_tensor *wk_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved) {
    return rope_rec(x, cos, sin, interleaved, false);
}
wk_tensor *wk_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved) {
    return rope_rec(x, cos, sin, interleaved, true);
}

/* ---- swiglu ---- */

static wk_tensor *swiglu_run(const wk_tensor *x) {
    bool composite;
    wk_tensor *o = wk__prim_swiglu(x, &composite);
    if (!composite) return o;
    int r = x->layout.rank;
    int64_t h = x->layout.shape[r - 1] / 2;
    wk_tensor *tmp[5] = {0};
    tmp[0] = wk__nn_to_work(x);
    tmp[1] = wk_narrow(tmp[0], r - 1, 0, h);
    tmp[2] = wk_narrow(tmp[0], r - 1, h, h);
    tmp[3] = wk_silu(tmp[1]);
    tmp[4] = wk_mul(tmp[3], tmp[2]);
    o = tmp[4] ? wk_contiguous(tmp[4]) : NULL;
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

/* k (..., Hkv, L, D) -> (..., Hkv * group, L, D): each kv head repeated
 * group times in a row (head h of q reads kv head h / group). Public ops:
 * its gradient sums back over the group. Always a new tensor (group 1: a
 * view), so the caller frees it, or leaves it to the scope. */
wk_tensor *wk__nn_repeat_kv(const wk_tensor *k, int64_t group) {
    if (!k) return NULL;
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

wk_tensor *wk__nn_softcap(const wk_tensor *s, double cap) {
    wk_tensor *a = wk_affine(s, 1.0 / cap, 0.0), *t = wk_tanh(a);
    wk_tensor *r = wk_affine(t, cap, 0.0);
    wk_tensor_free(a);
    wk_tensor_free(t);
    return r;
}

static wk_tensor *attention_composite(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                      const wk_tensor *mask, const wk_attention_args *a) {
    int r = q->layout.rank;
    wk_tensor *tmp[12] = {0};
    tmp[0] = wk__nn_to_work(q);
    tmp[1] = wk__nn_to_work(k);
    tmp[2] = wk__nn_to_work(v);
    tmp[10] = tmp[1] ? wk__nn_repeat_kv(tmp[1], a->group) : NULL;
    tmp[11] = tmp[2] ? wk__nn_repeat_kv(tmp[2], a->group) : NULL;
    tmp[3] = wk_transpose(tmp[10], r - 2, r - 1);
    tmp[4] = wk_matmul(tmp[0], tmp[3]);
    tmp[5] = wk_affine(tmp[4], a->scale, 0.0);
    wk_tensor *s = tmp[5];
    if (a->softcap > 0 && s) {
        wk_tensor *capped = wk__nn_softcap(s, a->softcap);
        wk_tensor_free(tmp[5]);
        s = tmp[5] = capped;
    }
    if (mask) {
        tmp[6] = wk__nn_to_work(mask);
        tmp[7] = wk_add(s, tmp[6]);
        s = tmp[7];
    }
    if ((a->causal || a->window > 0) && s) {
        tmp[8] = wk__prim_causal_mask("wk_attention", wk__dev(q), s->dtype, q->layout.shape[r - 2],
                                      k->layout.shape[r - 2], a);
        tmp[9] = wk_add(s, tmp[8]);
        s = tmp[9];
    }
    wk_tensor *p = wk_softmax(s, -1);
    wk_tensor *o = wk_matmul(p, tmp[11]);
    wk_tensor_free(p);
    free_all(tmp, 12);
    return from_work(o, q->dtype);
}

/* req: the options as given (scale, causal, q_offset, window, softcap) */
static wk_tensor *attention_rec(const char *op, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                const wk_tensor *mask, const wk_attention_args *req, bool gqa) {
    const wk_tensor *ins[4] = {q, k, v, mask};
    bool ag = wk__ag_onn((wk_tensor *const *)ins, 4), composite;
    wk_attention_args a = {0};
    if (ag) wk__ag_suspend();
    wk_tensor *r = gqa ? wk__prim_attention(q, k, v, mask, req, &a, &composite)
                       : wk__prim_scaled_dot_product_attention(q, k, v, mask, req->scale, req->causal, &a,
                                                               &composite);
    if (composite) r = attention_composite(q, k, v, mask, &a);
    if (!ag) return r;
    wk__ag_resume();
    return wk__ag_attention(r, q, k, v, mask, &a, op);
}

wk_tensor *wk_scaled_dot_product_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                           const wk_tensor *mask, double scale, bool causal) {
    wk_attention_args req = {.scale = scale, .causal = causal};
    return attention_rec("wk_scaled_dot_product_attention", q, k, v, mask, &req, false);
}

wk_tensor *wk_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_attention_opts *o) {
    wk_attention_opts d = {0};
    if (!o) o = &d;
    wk_attention_args req = {
        .scale = o->scale, .causal = o->causal, .q_offset = o->q_offset, .window = o->window, .softcap = o->softcap};
    return attention_rec("wk_attention", q, k, v, o->mask, &req, true);
}
