/* wk_lm_forward: n tokens through every layer in one batched pass.
 * Activations are f32 (as llama.cpp keeps them); weights go through
 * the layer kit's wk_linear: wk_qmatmul (blocks, f16, bf16) or a matmul
 * (f32, a transposed view). */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_lm_forward";

/* x (n, dim) -> x + attention(rms_norm(x)) for layer li at positions
 * pos .. pos+n-1, writing the layer's new keys and values into the cache. */
static wk_tensor *attention_block(const wk_lm *m, const wk__lm_layer *L, wk_kv_cache *c, int64_t li,
                                  const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos) {
    const wk_lm_config *cfg = &m->cfg;
    int64_t H = cfg->n_heads, Hkv = cfg->n_kv_heads, D = cfg->head_dim;
    wk_tensor *h = wk_norm_layer_forward(&L->attn_norm, x);
    wk_tensor *q, *k, *v;
    if (L->qkv.weight) {
        wk_tensor *qkv = wk_linear_forward(&L->qkv, h); /* (n, (H + 2 Hkv) D) */
        q = wk_narrow(qkv, 1, 0, H * D);
        k = wk_narrow(qkv, 1, H * D, Hkv * D);
        v = wk_narrow(qkv, 1, (H + Hkv) * D, Hkv * D);
    } else {
        q = wk_linear_forward(&L->q, h);
        k = wk_linear_forward(&L->k, h);
        v = wk_linear_forward(&L->v, h);
    }
    wk__attn_heads ah = {.q_heads = H, .kv_heads = Hkv, .head_dim = D, .interleaved = cfg->rope_interleaved};
    wk_tensor *a = wk__rope_cached_attention(&ah, q, k, v, cos, sin, &c->kv, li, pos);
    return a ? wk_add(x, wk_linear_forward(&L->o, a)) : NULL;
}

/* x -> x + down(silu(gate(h)) * up(h)), h = rms_norm(x) */
static wk_tensor *ffn_block(const wk__lm_layer *L, const wk_tensor *x) {
    wk_tensor *h = wk_norm_layer_forward(&L->ffn_norm, x);
    wk_tensor *act;
    if (L->gate_up.weight) act = wk_swiglu(wk_linear_forward(&L->gate_up, h));
    else act = wk_mul(wk_silu(wk_linear_forward(&L->gate, h)), wk_linear_forward(&L->up, h));
    return wk_add(x, wk_linear_forward(&L->down, act));
}

/* The token rows as f32 (n, dim): the kit's embedding (a block table's
 * rows gathered as blocks, then dequantized), f16 / bf16 rows widened. */
static wk_tensor *embed(const wk_lm *m, const int32_t *ids, int64_t n) {
    int64_t shape[1] = {n};
    wk_tensor *idt = wk_from_host(ids, sizeof(int32_t) * (size_t)n, shape, 1, WK_I32, m->dev);
    wk_tensor *e = idt ? wk_embedding_layer_forward(&m->tok_embd, idt) : NULL;
    if (e && wk_tensor_dtype(e) != WK_F32) return wk_to_dtype(e, WK_F32);
    return e;
}

wk_tensor *wk_lm_forward(const wk_lm *m, wk_kv_cache *c, const int32_t *ids, int64_t n, bool all_logits) {
    if (!m || !c || !ids) {
        wk__err(WK_ERR_ARG, OP, "model, cache and ids must not be NULL");
        return NULL;
    }
    if (c->m != m) {
        wk__err(WK_ERR_ARG, OP, "the cache was made for another model");
        return NULL;
    }
    if (n <= 0) {
        wk__err(WK_ERR_ARG, OP, "needs at least one token (n = %lld)", (long long)n);
        return NULL;
    }
    if (n > c->kv.cap - c->len) {
        wk__err(WK_ERR_ARG, OP, "cache overflow: %lld tokens after %lld do not fit its %lld positions", (long long)n,
                (long long)c->len, (long long)c->kv.cap);
        return NULL;
    }
    const wk_lm_config *cfg = &m->cfg;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= cfg->vocab) {
            wk__err(WK_ERR_ARG, OP, "token id %d at %lld is out of range (vocab %lld)", ids[i], (long long)i,
                    (long long)cfg->vocab);
            return NULL;
        }
    int64_t pos = c->len;
    wk_tensor *out = NULL;
    /* a scope that could not open would leave every temporary to nobody:
     * fail instead (the OOM is recorded) */
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    /* the cache's own RoPE tables when it is longer than the model's */
    const wk_tensor *rc = c->rope_cos ? c->rope_cos : m->rope_cos, *rs = c->rope_sin ? c->rope_sin : m->rope_sin;
    wk_tensor *cos = wk_narrow(rc, 0, pos, n), *sin = wk_narrow(rs, 0, pos, n);
    wk_tensor *x = wk_keep(embed(m, ids, n));
    for (int64_t l = 0; x && l < cfg->n_layers; l++) {
        /* one scope per layer: its temporaries are freed before the next */
        const wk__lm_layer *L = &m->layers[l];
        wk_tensor *y = NULL;
        if (wk__scope_open()) {
            y = attention_block(m, L, c, l, x, cos, sin, pos);
            y = wk_keep(y ? ffn_block(L, y) : NULL);
        }
        wk_scope_end();
        wk_tensor_free(x);
        x = y;
    }
    if (x) {
        wk_tensor *last = all_logits ? x : wk_narrow(x, 0, n - 1, 1);
        out = wk_keep(wk_linear_forward(&m->output, wk_norm_layer_forward(&m->out_norm, last)));
    }
    wk_tensor_free(x);
    wk_scope_end();
    if (out) c->len = pos + n;
    return out;
}
