/* The layer kit (include/wick/layers.h, src/nn/layers.h): linear,
 * embedding and norm layers; the forwards are compositions of recorded
 * public ops. */
#include "nn/layers.h"
#include "autograd/node.h"
#include "base/error.h"
#include "tensor/tensor.h"

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
