/* The KV cache (a paged one is a block table: src/model/kv_pool.c, which
 * the functions here hand it to): the layer kit's store (per layer one (1, Hkv, cap, D) f32
 * tensor for keys and one for values, allocated once; a forward step writes
 * its new positions in place and attention reads a narrow of the filled
 * part), the filled length, and RoPE tables when the model's are short. */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "base/error.h"
#include <stdbool.h>
#include <stdlib.h>

/* The cache's own RoPE tables for cap positions: when cap exceeds the
 * model's tables (no bigger than its keys alone: cap x rope_dims/2 x 2
 * floats vs cap x Hkv x head_dim), or for longrope past the original
 * context, which takes the long factors (llama.cpp's rule; the context
 * decides once, so every key in the cache was rotated alike). */
static wk_status own_rope(const wk_lm *m, int64_t cap, wk__lm_rope *rope) {
    const wk_lm_config *c = &m->cfg;
    bool lng = m->rope_inv_long && cap > c->rope_orig_ctx;
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) {
        const double *inv = i == 0 && lng ? m->rope_inv_long : m->rope[i].inv;
        if (!inv || (cap <= wk_dim(m->rope[i].cos, 0) && !(i == 0 && lng))) continue;
        wk_status st = wk__lm_rope_build(m, inv, cap, &rope[i]);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

static void rope_free(wk__lm_rope *rope) {
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) {
        wk_tensor_free(rope[i].cos);
        wk_tensor_free(rope[i].sin);
        rope[i].cos = rope[i].sin = NULL;
    }
}

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
    if (own_rope(m, max_tokens, kc->rope) != WK_OK ||
        /* the layers this process runs (pipeline parallel: this rank's) */
        wk__kv_store_init(&kc->kv, wk__lm_l1(m) - wk__lm_l0(m), m->tp.hkv, max_tokens, c->head_dim, m->kv_dtype,
                          m->dev) != WK_OK) {
        wk_kv_cache_free(kc);
        return NULL;
    }
    return kc;
}

wk_status wk_kv_cache_reserve(wk_kv_cache *c, int64_t max_tokens) {
    const char *op = "wk_kv_cache_reserve";
    if (!c) return wk__err(WK_ERR_ARG, op, "cache is NULL");
    if (c->pool) return wk__kv_paged_reserve(c, max_tokens);
    const wk_lm *m = c->m;
    const wk_lm_config *cfg = &m->cfg;
    if (max_tokens <= c->kv.cap) return WK_OK;
    if (max_tokens > cfg->max_ctx)
        return wk__err(WK_ERR_ARG, op, "max_tokens %lld exceeds the model's context %lld", (long long)max_tokens,
                       (long long)cfg->max_ctx);
    if (m->rope_inv_long && c->len > 0 && c->kv.cap <= cfg->rope_orig_ctx && max_tokens > cfg->rope_orig_ctx)
        return wk__err(WK_ERR_ARG, op,
                       "growing past the original context %lld changes longrope's factors for the %lld keys "
                       "stored; make a new cache and run them again",
                       (long long)cfg->rope_orig_ctx, (long long)c->len);
    wk__kv_store kv;
    wk__lm_rope rope[WK__LM_ROPE_SETS] = {0};
    wk_status st = own_rope(m, max_tokens, rope);
    if (st == WK_OK)
        st = wk__kv_store_init(&kv, wk__lm_l1(m) - wk__lm_l0(m), m->tp.hkv, max_tokens, cfg->head_dim,
                               m->kv_dtype, m->dev);
    if (st != WK_OK) {
        rope_free(rope);
        return st;
    }
    /* the filled positions of every layer it holds (pipeline parallel:
     * this rank's), (1, Hkv, len, D) each */
    for (int64_t l = 0; st == WK_OK && c->len > 0 && l < kv.layers; l++) {
        wk_tensor *k = wk_narrow(c->kv.k[l], 2, 0, c->len), *v = wk_narrow(c->kv.v[l], 2, 0, c->len);
        if (!k || !v) st = wk_last_status();
        if (st == WK_OK) st = wk_slice_set(kv.k[l], k, 2, 0);
        if (st == WK_OK) st = wk_slice_set(kv.v[l], v, 2, 0);
        wk_tensor_free(k);
        wk_tensor_free(v);
    }
    if (st != WK_OK) {
        wk__kv_store_free(&kv);
        rope_free(rope);
        return st;
    }
    wk__kv_store_free(&c->kv);
    rope_free(c->rope);
    c->kv = kv;
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) c->rope[i] = rope[i];
    return WK_OK;
}

void wk_kv_cache_free(wk_kv_cache *c) {
    if (!c) return;
    if (c->pool) wk__kv_paged_free(c);
    wk__kv_store_free(&c->kv);
    rope_free(c->rope);
    free(c);
}

int64_t wk_kv_cache_len(const wk_kv_cache *c) { return c ? c->len : 0; }
int64_t wk_kv_cache_capacity(const wk_kv_cache *c) { return c ? c->kv.cap : 0; }

wk_status wk_kv_cache_truncate(wk_kv_cache *c, int64_t n) {
    if (!c) return wk__err(WK_ERR_ARG, "wk_kv_cache_truncate", "cache is NULL");
    if (n < 0) return wk__err(WK_ERR_ARG, "wk_kv_cache_truncate", "length %lld is negative", (long long)n);
    if (c->pool) return wk__kv_paged_truncate(c, n);
    if (n < c->len) c->len = n;
    return WK_OK;
}
