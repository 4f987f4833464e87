/* The layer kit (include/wick/layers.h, src/nn/layers.h): linear,
 * embedding and norm layers, RoPE tables, the KV cache store and cached
 * rotary attention, padding masks. The forwards are compositions of
 * recorded public ops. */
#include "nn/layers.h"
#include "autograd/node.h"
#include "ops/prim_qmatmul.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include <math.h>
#include <stdlib.h>

wk_tensor *wk__hand_over(wk_tensor *kept) {
    if (!kept) return NULL;
    wk_tensor *r = wk__alias(kept);
    wk_tensor_free(kept);
    return r;
}

int wk__list_params(wk_tensor *a, wk_tensor *b, wk_tensor **out, int cap) {
    int n = 0;
    wk_tensor *all[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (all[i]) {
            if (out && n < cap) out[n] = all[i];
            n++;
        }
    return n;
}

/* ---- Linear ---- */

/* wk_qmatmul's job: block weights, and f16 / bf16 weights under an x of
 * another dtype (widened, not trained). */
static bool use_qmatmul(const wk_tensor *w, const wk_tensor *x) {
    wk_dtype wd = w->dtype;
    if (wk_dtype_is_quantized(wd)) return true;
    return (wd == WK_F16 || wd == WK_BF16) && x->dtype == WK_F32 && !wk_is_tracked(w);
}

wk_tensor *wk_linear_forward(const wk_linear *l, const wk_tensor *x) {
    const char *op = "wk_linear_forward";
    if (!l || !l->weight) {
        wk__err(WK_ERR_ARG, op, "layer not initialised");
        return NULL;
    }
    if (!wk__check_in(op, x)) return NULL;
    const wk_tensor *w = l->weight;
    if (w->layout.rank != 2) {
        char a[160];
        wk__err(WK_ERR_SHAPE, op, "weight %s must be (out, in)", wk__shape_str(w->layout.shape, w->layout.rank, a, sizeof a));
        return NULL;
    }
    int64_t in = w->layout.shape[1];
    if (x->layout.rank < 1 || x->layout.shape[x->layout.rank - 1] != in) {
        char a[160];
        wk__err(WK_ERR_SHAPE, op, "x %s: the last dim must be in = %lld",
                wk__shape_str(x->layout.shape, x->layout.rank, a, sizeof a), (long long)in);
        return NULL;
    }
    bool tracked = wk_is_tracked(x) || wk_is_tracked(w) || (l->bias && wk_is_tracked(l->bias));
    if (x->layout.rank >= 2 && !tracked) {
        /* inference (a decode step runs hundreds of these): no scope, the
         * one temporary freed at once */
        wk_tensor *y;
        if (use_qmatmul(w, x)) {
            y = wk_qmatmul(x, w);
        } else {
            wk_tensor *wt = wk_t(w);
            y = wt ? wk_broadcast_matmul(x, wt) : NULL;
            wk_tensor_free(wt);
        }
        if (y && l->bias) {
            wk_tensor *yb = wk_add(y, l->bias);
            wk_tensor_free(y);
            y = yb;
        }
        return y;
    }
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    const wk_tensor *x2 = x->layout.rank == 1 ? wk_unsqueeze(x, 0) : x;
    wk_tensor *y = use_qmatmul(w, x) ? wk_qmatmul(x2, w) : wk_broadcast_matmul(x2, wk_t(w));
    if (l->bias) y = wk_add(y, l->bias);
    if (x->layout.rank == 1) y = wk_squeeze(y, 0);
    if (y) wk_keep(y);
    wk_scope_end();
    return wk__hand_over(y);
}

bool wk__linear_multi_is_one(const wk_linear *const *ls, int nw, const wk_tensor *x) {
    if (!ls || nw < 1 || nw > WK__QMM_MULTI_MAX || !x || x->layout.rank < 2 || wk_is_tracked(x)) return false;
    for (int i = 0; i < nw; i++) {
        const wk_tensor *w = ls[i] ? ls[i]->weight : NULL;
        if (!w || ls[i]->bias || wk_is_tracked(w) || w->dtype != ls[0]->weight->dtype || !use_qmatmul(w, x))
            return false;
    }
    return wk__be(ls[0]->weight)->qmatmul_multi != NULL;
}

wk_tensor *wk__linear_multi_forward(const wk_linear *const *ls, int nw, const wk_tensor *x) {
    const char *op = "wk__linear_multi_forward";
    if (!ls || nw < 1 || nw > WK__QMM_MULTI_MAX) {
        wk__err(WK_ERR_ARG, op, "%s (%d layers; 1..%d)", ls ? "layer count out of range" : "layers are NULL", nw,
                WK__QMM_MULTI_MAX);
        return NULL;
    }
    for (int i = 0; i < nw; i++)
        if (!ls[i] || !ls[i]->weight) {
            wk__err(WK_ERR_ARG, op, "layer %d not initialised", i);
            return NULL;
        }
    if (!wk__check_in(op, x)) return NULL;
    if (wk__linear_multi_is_one(ls, nw, x)) {
        const wk_tensor *ws[WK__QMM_MULTI_MAX];
        for (int i = 0; i < nw; i++) ws[i] = ls[i]->weight;
        return wk__prim_qmatmul_multi(x, ws, nw); /* checks the shapes */
    }
    if (nw == 1) return wk_linear_forward(ls[0], x);
    /* the parts are temporaries of a scope of their own (tracked ones feed
     * the cat's node) */
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    wk_tensor *parts[WK__QMM_MULTI_MAX] = {0}, *r = NULL;
    int i = 0;
    for (; i < nw; i++)
        if (!(parts[i] = wk_linear_forward(ls[i], x))) break;
    if (i == nw && (r = wk_cat(parts, nw, x->layout.rank - 1))) wk_keep(r);
    wk_scope_end();
    return wk__hand_over(r);
}

void wk_linear_free(wk_linear *l) {
    if (!l) return;
    wk_tensor_free(l->weight);
    wk_tensor_free(l->bias);
    l->weight = l->bias = NULL;
}

int wk_linear_params(const wk_linear *l, wk_tensor **out, int cap) {
    return l ? wk__list_params(l->weight, l->bias, out, cap) : 0;
}

wk_status wk__linear_pretranspose(wk_linear *l) {
    if (!l || !l->weight) return wk__err(WK_ERR_ARG, "wk__linear_pretranspose", "layer not initialised");
    if (wk_dtype_is_quantized(l->weight->dtype)) return WK_OK;
    wk_tensor *tt = wk_t(l->weight);
    wk_tensor *c = tt ? wk_contiguous(tt) : NULL;
    wk_tensor *w = c ? wk_t(c) : NULL;
    wk_tensor_free(tt);
    wk_tensor_free(c);
    if (!w) return wk_last_status();
    wk_tensor_free(l->weight);
    l->weight = w;
    return WK_OK;
}

/* ---- Embedding ---- */

wk_tensor *wk_embedding_layer_forward(const wk_embedding_layer *e, const wk_tensor *ids) {
    if (!e || !e->weight) {
        wk__err(WK_ERR_ARG, "wk_embedding_layer_forward", "layer not initialised");
        return NULL;
    }
    wk_tensor *r = wk_embedding(ids, e->weight);
    if (!r || !wk_dtype_is_quantized(r->dtype)) return r;
    wk_tensor *f = wk_dequantize(r, WK_F32);
    wk_tensor_free(r);
    return f;
}

void wk_embedding_layer_free(wk_embedding_layer *e) {
    if (!e) return;
    wk_tensor_free(e->weight);
    e->weight = NULL;
}

int wk_embedding_layer_params(const wk_embedding_layer *e, wk_tensor **out, int cap) {
    return e ? wk__list_params(e->weight, NULL, out, cap) : 0;
}

/* ---- LayerNorm / RmsNorm ---- */

wk_tensor *wk_norm_layer_forward(const wk_norm_layer *n, const wk_tensor *x) {
    if (!n || !n->weight) {
        wk__err(WK_ERR_ARG, "wk_norm_layer_forward", "layer not initialised");
        return NULL;
    }
    return n->rms ? wk_rms_norm(x, n->weight, n->eps) : wk_layer_norm(x, n->weight, n->bias, n->eps);
}

void wk_norm_layer_free(wk_norm_layer *n) {
    if (!n) return;
    wk_tensor_free(n->weight);
    wk_tensor_free(n->bias);
    n->weight = n->bias = NULL;
}

int wk_norm_layer_params(const wk_norm_layer *n, wk_tensor **out, int cap) {
    return n ? wk__list_params(n->weight, n->bias, out, cap) : 0;
}

/* ---- RoPE ---- */

wk_status wk__rope_inv_freq(const char *op, const wk__rope_freqs *p, const float *freq_factors, double **out) {
    int64_t half = p->head_dim / 2;
    double *inv = malloc(sizeof(double) * (size_t)(half ? half : 1));
    *out = NULL;
    if (!inv) return wk__err(WK_ERR_OOM, op, "cannot allocate %lld rope frequencies", (long long)half);
    const double PI = 3.14159265358979323846;
    for (int64_t i = 0; i < half; i++) {
        /* the frequencies transformers computes: theta^(-2i/D), in double */
        double f = 1.0 / pow(p->theta, (double)(2 * i) / (double)p->head_dim);
        if (p->scaling == WK__ROPE_LINEAR) {
            f /= p->factor;
        } else if (p->scaling == WK__ROPE_LLAMA3) {
            /* Llama 3.1: long wavelengths slowed by factor, short ones kept,
             * a smooth blend between */
            double lo_wl = (double)p->orig_ctx / p->low_freq_factor;
            double hi_wl = (double)p->orig_ctx / p->high_freq_factor;
            double wl = 2.0 * PI / f;
            if (wl > lo_wl) {
                f /= p->factor;
            } else if (wl >= hi_wl) {
                double sm = ((double)p->orig_ctx / wl - p->low_freq_factor) /
                            (p->high_freq_factor - p->low_freq_factor);
                f = (1.0 - sm) * f / p->factor + sm * f;
            }
        }
        if (freq_factors) f /= (double)freq_factors[i];
        inv[i] = f;
    }
    *out = inv;
    return WK_OK;
}

wk_status wk__rope_tables(const char *op, const double *inv, int64_t half, int64_t T, wk_device *dev, wk_tensor **cos,
                          wk_tensor **sin) {
    *cos = *sin = NULL;
    size_t nb = sizeof(float) * (size_t)(T * half);
    float *cb = malloc(nb ? nb : 1), *sb = malloc(nb ? nb : 1);
    if (!cb || !sb) {
        free(cb), free(sb);
        return wk__err(WK_ERR_OOM, op, "cannot allocate rope tables (%lld x %lld)", (long long)T, (long long)half);
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < half; i++) {
            /* angle in f32 as transformers does (positions * inv_freq in f32),
             * so long contexts round the same way */
            float a = (float)t * (float)inv[i];
            cb[t * half + i] = cosf(a);
            sb[t * half + i] = sinf(a);
        }
    int64_t shape[2] = {T, half};
    *cos = wk_from_host(cb, nb, shape, 2, WK_F32, dev);
    *sin = wk_from_host(sb, nb, shape, 2, WK_F32, dev);
    free(cb);
    free(sb);
    if (!*cos || !*sin) {
        wk_tensor_free(*cos);
        wk_tensor_free(*sin);
        *cos = *sin = NULL;
        return wk_last_status();
    }
    return WK_OK;
}

/* ---- KV cache, attention ---- */

wk_status wk__kv_store_init(wk__kv_store *s, int64_t layers, int64_t kv_heads, int64_t cap, int64_t head_dim,
                            wk_dtype dt, wk_device *dev) {
    const char *op = "wk_kv_cache_new";
    if (dt != WK_F32 && dt != WK_F16 && dt != WK_BF16) {
        *s = (wk__kv_store){0};
        return wk__err(WK_ERR_DTYPE, op, "a KV cache is f32, f16 or bf16, not %s", wk_dtype_name(dt));
    }
    s->layers = layers;
    s->cap = cap;
    s->k = calloc((size_t)layers, sizeof *s->k);
    s->v = calloc((size_t)layers, sizeof *s->v);
    if (!s->k || !s->v) {
        wk__kv_store_free(s);
        return wk__err(WK_ERR_OOM, op, "cannot allocate a cache for %lld layers", (long long)layers);
    }
    int64_t shape[4] = {1, kv_heads, cap, head_dim};
    for (int64_t l = 0; l < layers; l++) {
        /* zeros, not empty: positions past the filled length are never
         * read, but defined bytes keep sanitizers and debuggers quiet */
        s->k[l] = wk_zeros(shape, 4, dt, dev);
        s->v[l] = wk_zeros(shape, 4, dt, dev);
        if (!s->k[l] || !s->v[l]) {
            wk__kv_store_free(s);
            return wk_last_status();
        }
    }
    return WK_OK;
}

void wk__kv_store_free(wk__kv_store *s) {
    if (!s) return;
    for (int64_t l = 0; l < s->layers; l++) {
        if (s->k) wk_tensor_free(s->k[l]);
        if (s->v) wk_tensor_free(s->v[l]);
    }
    free(s->k);
    free(s->v);
    s->k = s->v = NULL;
    s->layers = s->cap = 0;
}

/* x (1, n, heads, D) with RoPE as h says: none (rope_skip: x itself, a
 * view), the whole head, or (rope_dims < D) the first rope_dims of each
 * head rotated and the rest passed through: rope_thd on that narrow, then
 * cat with the untouched rest (interleaved pairs and halves both live
 * inside the rotated part, so either layout narrows the same way). */
static wk_tensor *rope_heads(const wk__attn_heads *h, const wk_tensor *x, const wk_tensor *cos,
                             const wk_tensor *sin) {
    if (!x) return NULL;
    int64_t D = h->head_dim, R = h->rope_dims > 0 ? h->rope_dims : D;
    if (h->rope_skip) return wk_narrow(x, 3, 0, D);
    if (R == D) return wk_rope_thd(x, cos, sin, h->interleaved);
    wk_tensor *parts[2] = {wk_rope_thd(wk_narrow(x, 3, 0, R), cos, sin, h->interleaved), wk_narrow(x, 3, R, D - R)};
    if (!parts[0] || !parts[1]) return NULL;
    return wk_cat(parts, 2, 3);
}

wk_status wk__rope_qkv(const wk__attn_heads *h, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                       const wk_tensor *cos, const wk_tensor *sin, wk_dtype cdt, wk_tensor **qo, wk_tensor **ko,
                       wk_tensor **vo) {
    *qo = *ko = *vo = NULL;
    if (!q || !k || !v) return wk_last_status();
    const char *op = "wk__rope_cached_attention";
    int64_t H = h->q_heads, Hkv = h->kv_heads, D = h->head_dim, n = q->layout.shape[0];
    if (h->rope_dims < 0 || h->rope_dims > D || h->rope_dims % 2 != 0)
        return wk__err(WK_ERR_ARG, op, "rope_dims %lld must be even and within the head dim %lld (0: all)",
                       (long long)h->rope_dims, (long long)D);
    /* (n, H D) rows are (H, D) heads: a (1, n, H, D) view for rope_thd */
    int64_t sq[4] = {1, n, H, D}, skv[4] = {1, n, Hkv, D};
    wk_tensor *qr = rope_heads(h, wk_reshape(q, sq, 4), cos, sin);
    wk_tensor *kr = rope_heads(h, wk_reshape(k, skv, 4), cos, sin);
    wk_tensor *vv = wk_reshape(v, skv, 4);
    if (!qr || !kr || !vv) return wk_last_status();
    if (cdt != wk_tensor_dtype(q)) { /* a half cache under wider activations: round all three */
        qr = wk_to_dtype(qr, cdt);
        kr = wk_to_dtype(kr, cdt);
        vv = wk_to_dtype(vv, cdt);
        if (!qr || !kr || !vv) return wk_last_status();
    }
    /* (1, n, H, D) -> (1, H, n, D): views; the cache write and attention
     * take strides */
    *qo = wk_transpose(qr, 1, 2);
    *ko = wk_transpose(kr, 1, 2);
    *vo = wk_transpose(vv, 1, 2);
    return *qo && *ko && *vo ? WK_OK : wk_last_status();
}

wk_tensor *wk__cached_attend(const wk__attn_heads *h, const wk_tensor *qr, const wk_tensor *kc, const wk_tensor *vc,
                             int64_t pos, wk_dtype adt) {
    if (!qr || !kc || !vc) return NULL;
    int64_t H = h->q_heads, D = h->head_dim, n = qr->layout.shape[2];
    wk_attention_opts ao = {
        .causal = true, .q_offset = pos, .window = h->window, .softcap = h->softcap, .scale = h->scale};
    wk_tensor *a = wk_attention(qr, kc, vc, &ao); /* (1, H, n, D) */
    int64_t so[2] = {n, H * D};
    wk_tensor *o = wk_reshape(wk_transpose(a, 1, 2), so, 2); /* copies into (n, H D) */
    return o && wk_tensor_dtype(o) != adt ? wk_to_dtype(o, adt) : o;
}

wk_tensor *wk__rope_cached_attention(const wk__attn_heads *h, const wk_tensor *q, const wk_tensor *k,
                                     const wk_tensor *v, const wk_tensor *cos, const wk_tensor *sin,
                                     wk__kv_store *s, int64_t li, int64_t pos) {
    if (!q || !k || !v) return NULL;
    wk_tensor *qr, *kr, *vv;
    if (wk__rope_qkv(h, q, k, v, cos, sin, wk_tensor_dtype(s->k[li]), &qr, &kr, &vv) != WK_OK) return NULL;
    int64_t n = qr->layout.shape[2];
    if (wk_slice_set(s->k[li], kr, 2, pos) != WK_OK) return NULL;
    if (wk_slice_set(s->v[li], vv, 2, pos) != WK_OK) return NULL;
    wk_tensor *kc = wk_narrow(s->k[li], 2, 0, pos + n), *vc = wk_narrow(s->v[li], 2, 0, pos + n);
    return wk__cached_attend(h, qr, kc, vc, pos, wk_tensor_dtype(q));
}

wk_tensor *wk__key_padding_mask(const int64_t *lens, int64_t B, int64_t L, wk_device *dev) {
    float *m = malloc((size_t)(B * L) * sizeof *m);
    if (!m) {
        wk__err(WK_ERR_OOM, "wk__key_padding_mask", "cannot allocate a %lld x %lld mask", (long long)B, (long long)L);
        return NULL;
    }
    for (int64_t i = 0; i < B; i++)
        for (int64_t j = 0; j < L; j++) m[i * L + j] = j < lens[i] ? 0.0f : -INFINITY;
    int64_t sm[4] = {B, 1, 1, L};
    wk_tensor *r = wk_from_host(m, (size_t)(B * L) * sizeof *m, sm, 4, WK_F32, dev);
    free(m);
    return r;
}
