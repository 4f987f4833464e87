/* The KV cache: per layer one (1, Hkv, cap, D) f32 tensor for keys and one
 * for values, allocated once; a forward step writes its new positions in
 * place and attention reads a narrow of the filled part. */
#include "model/llama_internal.h"
#include "wick/llama.h"
#include "base/error.h"
#include <stdlib.h>

wk_kv_cache *wk_kv_cache_new(const wk_llama *m, int64_t max_tokens) {
    const char *op = "wk_kv_cache_new";
    if (!m) {
        wk__err(WK_ERR_ARG, op, "model is NULL");
        return NULL;
    }
    const wk_llama_config *c = &m->cfg;
    if (max_tokens <= 0) max_tokens = c->max_ctx;
    if (max_tokens > c->max_ctx) {
        wk__err(WK_ERR_ARG, op, "max_tokens %lld exceeds the model's context %lld", (long long)max_tokens,
                (long long)c->max_ctx);
        return NULL;
    }
    wk_kv_cache *kc = calloc(1, sizeof *kc);
    if (kc) {
        kc->k = calloc((size_t)c->n_layers, sizeof *kc->k);
        kc->v = calloc((size_t)c->n_layers, sizeof *kc->v);
    }
    if (!kc || !kc->k || !kc->v) {
        wk_kv_cache_free(kc);
        wk__err(WK_ERR_OOM, op, "cannot allocate a cache for %lld layers", (long long)c->n_layers);
        return NULL;
    }
    kc->m = m;
    kc->cap = max_tokens;
    /* longer than the model's RoPE tables: this cache's own, no bigger than
     * its keys alone (cap x head_dim/2 x 2 floats vs cap x Hkv x head_dim) */
    if (max_tokens > wk_dim(m->rope_cos, 0) &&
        wk__llama_rope_tables(m->rope_inv, c->head_dim / 2, max_tokens, m->dev, &kc->rope_cos, &kc->rope_sin) !=
            WK_OK) {
        wk_kv_cache_free(kc);
        return NULL;
    }
    int64_t shape[4] = {1, c->n_kv_heads, max_tokens, c->head_dim};
    for (int64_t l = 0; l < c->n_layers; l++) {
        /* zeros, not empty: positions past len are never read, but a cache
         * with defined bytes keeps sanitizers and debuggers quiet */
        kc->k[l] = wk_zeros(shape, 4, WK_F32, m->dev);
        kc->v[l] = wk_zeros(shape, 4, WK_F32, m->dev);
        if (!kc->k[l] || !kc->v[l]) {
            wk_kv_cache_free(kc);
            return NULL;
        }
    }
    return kc;
}

void wk_kv_cache_free(wk_kv_cache *c) {
    if (!c) return;
    if (c->m)
        for (int64_t l = 0; l < c->m->cfg.n_layers; l++) {
            if (c->k) wk_tensor_free(c->k[l]);
            if (c->v) wk_tensor_free(c->v[l]);
        }
    free(c->k);
    free(c->v);
    wk_tensor_free(c->rope_cos);
    wk_tensor_free(c->rope_sin);
    free(c);
}

int64_t wk_kv_cache_len(const wk_kv_cache *c) { return c ? c->len : 0; }
int64_t wk_kv_cache_capacity(const wk_kv_cache *c) { return c ? c->cap : 0; }

wk_status wk_kv_cache_truncate(wk_kv_cache *c, int64_t n) {
    if (!c) return wk__err(WK_ERR_ARG, "wk_kv_cache_truncate", "cache is NULL");
    if (n < 0) return wk__err(WK_ERR_ARG, "wk_kv_cache_truncate", "length %lld is negative", (long long)n);
    if (n < c->len) c->len = n;
    return WK_OK;
}
