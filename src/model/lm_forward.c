/* wk_lm_forward: n tokens through every layer in one batched pass, the
 * block composed from the layer kit as the config's features say (one
 * block for every family: the families differ in features, not in code).
 * Activations are f32 (as llama.cpp keeps them); weights go through the
 * kit's wk_linear: wk_qmatmul (blocks, f16, bf16) or a matmul (f32, a
 * transposed view). */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_lm_forward";

/* An RMSNorm over every head of x (n, heads * D) (Qwen3's and Gemma 3's q
 * and k norms): the rows viewed as (n, heads, D). */
static wk_tensor *head_norm(const wk_norm_layer *nl, const wk_tensor *x, int64_t heads, int64_t D) {
    if (!x) return NULL;
    int64_t n = wk_dim(x, 0), s3[3] = {n, heads, D}, s2[2] = {n, heads * D};
    return wk_reshape(wk_norm_layer_forward(nl, wk_reshape(x, s3, 3)), s2, 2);
}

/* x (n, dim) -> x + [post_norm](attention(norm(x))) for layer li at
 * positions pos .. pos+n-1, writing the layer's new keys and values into
 * the cache. */
static wk_tensor *attention_block(const wk_lm *m, const wk__lm_layer *L, wk_kv_cache *c, int64_t li,
                                  const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos) {
    const wk_lm_config *cfg = &m->cfg;
    int64_t H = cfg->n_heads, Hkv = cfg->n_kv_heads, D = cfg->head_dim;
    wk_tensor *h = wk_norm_layer_forward(&L->attn_norm, x);
    wk_tensor *q, *k, *v;
    const wk_linear *qkv3[3] = {&L->q, &L->k, &L->v};
    if (L->qkv.weight || wk__linear_multi_is_one(qkv3, 3, h)) {
        /* q, k, v read h as one product (h quantized once, one parallel
         * region: a decode step's overhead, not its arithmetic), as a
         * fused weight does */
        wk_tensor *qkv = L->qkv.weight ? wk_linear_forward(&L->qkv, h) : wk__linear_multi_forward(qkv3, 3, h);
        q = wk_narrow(qkv, 1, 0, H * D); /* (n, (H + 2 Hkv) D) */
        k = wk_narrow(qkv, 1, H * D, Hkv * D);
        v = wk_narrow(qkv, 1, (H + Hkv) * D, Hkv * D);
    } else {
        q = wk_linear_forward(&L->q, h);
        k = wk_linear_forward(&L->k, h);
        v = wk_linear_forward(&L->v, h);
    }
    if (cfg->qk_norm) {
        q = head_norm(&L->q_norm, q, H, D);
        k = head_norm(&L->k_norm, k, Hkv, D);
    }
    bool sliding = (L->flags & WK_LM_SLIDING) != 0;
    wk__attn_heads ah = {.q_heads = H,
                         .kv_heads = Hkv,
                         .head_dim = D,
                         .interleaved = cfg->rope_interleaved,
                         /* a window as long as the sequence so far changes nothing */
                         .window = sliding && pos + wk_dim(x, 0) > cfg->sliding_window ? cfg->sliding_window : 0,
                         .softcap = cfg->attn_softcap,
                         .scale = cfg->attn_scale,
                         .rope_skip = (L->flags & WK_LM_NO_ROPE) != 0,
                         .rope_dims = cfg->rope_dims};
    wk_tensor *a = wk__rope_cached_attention(&ah, q, k, v, cos, sin, &c->kv, li, pos);
    if (!a) return NULL;
    a = wk_linear_forward(&L->o, a);
    if (cfg->post_norms) a = wk_norm_layer_forward(&L->post_attn_norm, a);
    return wk_add(x, a);
}

/* x + [post_norm](down(act)) */
static wk_tensor *ffn_out(const wk_lm_config *cfg, const wk__lm_layer *L, const wk_tensor *x, wk_tensor *act) {
    wk_tensor *d = wk_linear_forward(&L->down, act);
    if (cfg->post_norms) d = wk_norm_layer_forward(&L->post_ffn_norm, d);
    return wk_add(x, d);
}

/* x -> x + [post_norm](down(act(gate(h)) * up(h))), h = norm(x); act SiLU or
 * GELU-tanh */
static wk_tensor *ffn_block(const wk_lm *m, const wk__lm_layer *L, const wk_tensor *x) {
    const wk_lm_config *cfg = &m->cfg;
    wk_tensor *h = wk_norm_layer_forward(&L->ffn_norm, x);
    const wk_linear *gu2[2] = {&L->gate, &L->up};
    wk_tensor *act, *g, *u;
    /* gate and up as one (n, 2F) product where that is one backend call
     * (or the weight is fused), else separately */
    if (L->gate_up.weight || wk__linear_multi_is_one(gu2, 2, h)) {
        wk_tensor *gu = L->gate_up.weight ? wk_linear_forward(&L->gate_up, h) : wk__linear_multi_forward(gu2, 2, h);
        if (!cfg->gelu_mlp) return ffn_out(cfg, L, x, wk_swiglu(gu));
        g = wk_narrow(gu, 1, 0, cfg->ffn_dim);
        u = wk_narrow(gu, 1, cfg->ffn_dim, cfg->ffn_dim);
    } else {
        g = wk_linear_forward(&L->gate, h);
        u = wk_linear_forward(&L->up, h);
    }
    act = wk_mul(cfg->gelu_mlp ? wk_unary(g, WK_GELU) : wk_silu(g), u);
    return ffn_out(cfg, L, x, act);
}

/* The token rows as f32 (n, dim): the kit's embedding (a block table's
 * rows gathered as blocks, then dequantized), f16 / bf16 rows widened. */
static wk_tensor *embed(const wk_lm *m, const int32_t *ids, int64_t n) {
    int64_t shape[1] = {n};
    wk_tensor *idt = wk_from_host(ids, sizeof(int32_t) * (size_t)n, shape, 1, WK_I32, m->dev);
    wk_tensor *e = idt ? wk_embedding_layer_forward(&m->tok_embd, idt) : NULL;
    if (e && wk_tensor_dtype(e) != WK_F32) e = wk_to_dtype(e, WK_F32);
    /* Gemma: times sqrt(dim), rounded to f32 first as transformers does */
    if (e && m->cfg.embed_scale != 1.0) e = wk_affine(e, (double)(float)m->cfg.embed_scale, 0);
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
    /* the positions' rows of each RoPE set: the cache's own tables when it
     * has them (longer than the model's, or longrope's long factors) */
    wk_tensor *cos[WK__LM_ROPE_SETS] = {0}, *sin[WK__LM_ROPE_SETS] = {0};
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) {
        const wk__lm_rope *r = c->rope[i].cos ? &c->rope[i] : &m->rope[i];
        if (!r->cos) continue;
        cos[i] = wk_narrow(r->cos, 0, pos, n);
        sin[i] = wk_narrow(r->sin, 0, pos, n);
    }
    wk_tensor *x = wk_keep(embed(m, ids, n));
    for (int64_t l = 0; x && l < cfg->n_layers; l++) {
        /* one scope per layer: its temporaries are freed before the next */
        const wk__lm_layer *L = &m->layers[l];
        wk_tensor *y = NULL;
        if (wk__scope_open()) {
            int rs = wk__lm_rope_set(m, l);
            y = attention_block(m, L, c, l, x, cos[rs], sin[rs], pos);
            y = wk_keep(y ? ffn_block(m, L, y) : NULL);
        }
        wk_scope_end();
        wk_tensor_free(x);
        x = y;
    }
    if (x) {
        wk_tensor *last = all_logits ? x : wk_narrow(x, 0, n - 1, 1);
        wk_tensor *logits = wk_linear_forward(&m->output, wk_norm_layer_forward(&m->out_norm, last));
        /* Gemma 2: cap * tanh(logits / cap) */
        if (logits && cfg->final_softcap > 0)
            logits = wk_affine(wk_unary(wk_affine(logits, 1.0 / cfg->final_softcap, 0), WK_TANH),
                               cfg->final_softcap, 0);
        out = wk_keep(logits);
    }
    wk_tensor_free(x);
    wk_scope_end();
    if (out) c->len = pos + n;
    return out;
}
