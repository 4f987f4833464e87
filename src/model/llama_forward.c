/* wk_llama_forward: n tokens through every layer in one batched pass.
 * Activations are f32 (as llama.cpp keeps them); weights go through
 * the layer kit's wk_linear: wk_qmatmul (blocks, f16, bf16) or a matmul
 * (f32, a transposed view). */
#include "model/llama_internal.h"
#include "wick/llama.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_llama_forward";

/* x (n, dim) -> x + attention(rms_norm(x)) for layer li at positions
 * pos .. pos+n-1, writing the layer's new keys and values into the cache. */
static wk_tensor *attention_block(const wk_llama *m, const wk__llama_layer *L, wk_kv_cache *c, int64_t li,
                                  const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, int64_t pos,
                                  int64_t n) {
    const wk_llama_config *cfg = &m->cfg;
    int64_t H = cfg->n_heads, Hkv = cfg->n_kv_heads, D = cfg->head_dim;
    wk_tensor *h = wk_rms_norm(x, L->attn_norm, cfg->rms_eps);
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
    /* (n, H D) rows are (H, D) heads: a (1, n, H, D) view for rope_thd */
    int64_t sq[4] = {1, n, H, D}, skv[4] = {1, n, Hkv, D};
    wk_tensor *qr = wk_rope_thd(wk_reshape(q, sq, 4), cos, sin, cfg->rope_interleaved);
    wk_tensor *kr = wk_rope_thd(wk_reshape(k, skv, 4), cos, sin, cfg->rope_interleaved);
    wk_tensor *vv = wk_reshape(v, skv, 4);
    /* (1, n, H, D) -> (1, H, n, D): views; the cache write and attention
     * take strides */
    if (wk_slice_set(c->k[li], wk_transpose(kr, 1, 2), 2, pos) != WK_OK) return NULL;
    if (wk_slice_set(c->v[li], wk_transpose(vv, 1, 2), 2, pos) != WK_OK) return NULL;
    wk_tensor *kc = wk_narrow(c->k[li], 2, 0, pos + n), *vc = wk_narrow(c->v[li], 2, 0, pos + n);
    wk_attention_opts ao = {.causal = true, .q_offset = pos};
    wk_tensor *a = wk_attention(wk_transpose(qr, 1, 2), kc, vc, &ao); /* (1, H, n, D) */
    int64_t so[2] = {n, H * D};
    wk_tensor *ao2 = wk_reshape(wk_transpose(a, 1, 2), so, 2); /* copies into (n, H D) */
    return wk_add(x, wk_linear_forward(&L->o, ao2));
}

/* x -> x + down(silu(gate(h)) * up(h)), h = rms_norm(x) */
static wk_tensor *ffn_block(const wk_llama *m, const wk__llama_layer *L, const wk_tensor *x) {
    wk_tensor *h = wk_rms_norm(x, L->ffn_norm, m->cfg.rms_eps);
    wk_tensor *act;
    if (L->gate_up.weight) act = wk_swiglu(wk_linear_forward(&L->gate_up, h));
    else act = wk_mul(wk_silu(wk_linear_forward(&L->gate, h)), wk_linear_forward(&L->up, h));
    return wk_add(x, wk_linear_forward(&L->down, act));
}

/* The token rows as f32 (n, dim): a block table's rows are gathered as
 * blocks, then dequantized. */
static wk_tensor *embed(const wk_llama *m, const int32_t *ids, int64_t n) {
    int64_t shape[1] = {n};
    wk_tensor *idt = wk_from_host(ids, sizeof(int32_t) * (size_t)n, shape, 1, WK_I32, m->dev);
    wk_tensor *e = wk_embedding(idt, m->tok_embd);
    if (!e) return NULL;
    wk_dtype dt = wk_tensor_dtype(e);
    if (wk_dtype_is_quantized(dt)) return wk_dequantize(e, WK_F32);
    if (dt != WK_F32) return wk_to_dtype(e, WK_F32);
    return e;
}

wk_tensor *wk_llama_forward(const wk_llama *m, wk_kv_cache *c, const int32_t *ids, int64_t n, bool all_logits) {
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
    if (n > c->cap - c->len) {
        wk__err(WK_ERR_ARG, OP, "cache overflow: %lld tokens after %lld do not fit its %lld positions", (long long)n,
                (long long)c->len, (long long)c->cap);
        return NULL;
    }
    const wk_llama_config *cfg = &m->cfg;
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
        const wk__llama_layer *L = &m->layers[l];
        wk_tensor *y = NULL;
        if (wk__scope_open()) {
            y = attention_block(m, L, c, l, x, cos, sin, pos, n);
            y = wk_keep(y ? ffn_block(m, L, y) : NULL);
        }
        wk_scope_end();
        wk_tensor_free(x);
        x = y;
    }
    if (x) {
        wk_tensor *last = all_logits ? x : wk_narrow(x, 0, n - 1, 1);
        out = wk_keep(wk_linear_forward(&m->output, wk_rms_norm(last, m->out_norm, cfg->rms_eps)));
    }
    wk_tensor_free(x);
    wk_scope_end();
    if (out) c->len = pos + n;
    return out;
}
