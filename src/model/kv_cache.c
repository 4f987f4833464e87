/* The KV cache: the layer kit's store (per layer one (1, Hkv, cap, D) f32
 * tensor for keys and one for values, allocated once; a forward step writes
 * its new positions in place and attention reads a narrow of the filled
 * part), the filled length, and RoPE tables when the model's are short. */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "base/error.h"
#include <stdlib.h>

wk_kv_cache *wk_kv_cache_new(const wk_lm *m, int64_t max_tokens) {
    const char *op = "wk_kv_cache_new";
    if (!m) {
        wk__err(WK_ERR_ARG, op, "model is NULL");
        return NULL;
    }
    const wk_lm_config *c = &m->cfg;
    if (max_tokens <= 0) max_tokens = c->max_ctx;
    if (max_tokens > c->max_ctx) {
        wk__err(WK_ERR_ARG, op, "max_tokens %lld exceeds the model's context %lld", (long long)max_tokens,
                (long long)c->max_ctx);
        return NULL;
    }
    wk_kv_cache *kc = calloc(1, sizeof *kc);
    if (!kc) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a cache for %lld layers", (long long)c->n_layers);
        return NULL;
    }
    kc->m = m;
    /* longer than the model's RoPE tables: this cache's own, no bigger than
     * its keys alone (cap x rope_dims/2 x 2 floats vs cap x Hkv x head_dim).
     * longrope: a cache longer than the original context takes the long
     * factors (llama.cpp's rule; the context decides once, so every key in
     * the cache was rotated alike). */
    bool lng = m->rope_inv_long && max_tokens > c->rope_orig_ctx;
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) {
        const double *inv = i == 0 && lng ? m->rope_inv_long : m->rope[i].inv;
        if (!inv || (max_tokens <= wk_dim(m->rope[i].cos, 0) && !(i == 0 && lng))) continue;
        if (wk__lm_rope_build(m, inv, max_tokens, &kc->rope[i]) != WK_OK) {
            wk_kv_cache_free(kc);
            return NULL;
        }
    }
    if (wk__kv_store_init(&kc->kv, c->n_layers, c->n_kv_heads, max_tokens, c->head_dim, m->dev) != WK_OK) {
        wk_kv_cache_free(kc);
        return NULL;
    }
    return kc;
}

void wk_kv_cache_free(wk_kv_cache *c) {
    if (!c) return;
    wk__kv_store_free(&c->kv);
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) {
        wk_tensor_free(c->rope[i].cos);
        wk_tensor_free(c->rope[i].sin);
    }
    free(c);
}

int64_t wk_kv_cache_len(const wk_kv_cache *c) { return c ? c->len : 0; }
int64_t wk_kv_cache_capacity(const wk_kv_cache *c) { return c ? c->kv.cap : 0; }

wk_status wk_kv_cache_truncate(wk_kv_cache *c, int64_t n) {
    if (!c) return wk__err(WK_ERR_ARG, "wk_kv_cache_truncate", "cache is NULL");
    if (n < 0) return wk__err(WK_ERR_ARG, "wk_kv_cache_truncate", "length %lld is negative", (long long)n);
    if (n < c->len) c->len = n;
    return WK_OK;
}
