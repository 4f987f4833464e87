/* The KV caches of the engine's slots: paged caches from one pool
 * (wk_kv_pool, include/wick/lm.h), one per running request.
 *
 * Admission makes the request a paged cache, attaches the full blocks of
 * its prompt's prefix that an earlier request computed (prefix_cache; at
 * least the last prompt id is always run, for its logits) and then takes
 * every block the request can fill, prompt + max_new - 1 positions (the
 * last sampled id is never run): a running request can never run out of
 * room, and a request that does not fit now is told WK_ERR_BUSY and waits
 * in the queue, first in first out. Release frees the cache: its blocks go
 * back to the pool, the full ones kept for their prefix (evicted least
 * recently used first when the pool runs short).
 *
 * The pool: kv_blocks blocks of kv_block positions (<= 0: enough for every
 * slot's whole context, so admission waits only for slots), in kv_dtype. */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <stdlib.h>

struct wk__engine_kv {
    wk_kv_pool *pool;
    wk_kv_cache **c; /* per slot: the running request's cache, or NULL */
    int slots;
    bool prefix;
};

wk__engine_kv *wk__engine_kv_new(const wk_lm *m, int slots, int64_t ctx, const wk_engine_opts *o) {
    wk__engine_kv *kv = calloc(1, sizeof *kv);
    if (!kv || !(kv->c = calloc((size_t)slots, sizeof *kv->c))) {
        free(kv);
        wk__err(WK_ERR_OOM, "wk_engine_new", "no memory for %d slots", slots);
        return NULL;
    }
    kv->slots = slots;
    kv->prefix = o->prefix_cache;
    int64_t block = o->kv_block > 0 ? o->kv_block : 16;
    wk_kv_pool_opts po = {.block = block,
                          .blocks = o->kv_blocks > 0 ? o->kv_blocks : (int64_t)slots * ((ctx + block - 1) / block),
                          .dtype = o->kv_dtype,
                          .prefix_cache = o->prefix_cache};
    if (!(kv->pool = wk_kv_pool_new(m, &po))) {
        free(kv->c);
        free(kv);
        return NULL;
    }
    return kv;
}

void wk__engine_kv_free(wk__engine_kv *kv) {
    if (!kv) return;
    for (int i = 0; i < kv->slots; i++) wk_kv_cache_free(kv->c[i]);
    wk_kv_pool_free(kv->pool);
    free(kv->c);
    free(kv);
}

wk_status wk__engine_kv_acquire(wk__engine_kv *kv, int slot, wk__req *r) {
    int64_t need = r->n_prompt + r->max_new - 1;
    if (need < r->n_prompt) need = r->n_prompt;
    wk_kv_cache *c = wk_kv_cache_new_paged(kv->pool, need);
    if (!c) return wk_last_status();
    int64_t cached = 0;
    if (kv->prefix && r->n_prompt > 1) {
        cached = wk_kv_cache_reuse_prefix(c, r->ids, r->n_prompt);
        if (cached < 0) {
            wk_kv_cache_free(c);
            return wk_last_status();
        }
    }
    wk_status s = wk_kv_cache_reserve(c, need);
    if (s != WK_OK) { /* WK_ERR_BUSY: no room now; the prefix blocks go back */
        wk_kv_cache_free(c);
        return s;
    }
    kv->c[slot] = c;
    r->n_cached = cached;
    return WK_OK;
}

void wk__engine_kv_release(wk__engine_kv *kv, int slot) {
    wk_kv_cache_free(kv->c[slot]);
    kv->c[slot] = NULL;
}

wk_kv_cache *wk__engine_kv_cache(wk__engine_kv *kv, int slot) { return kv->c[slot]; }

void wk__engine_kv_usage(const wk__engine_kv *kv, int64_t *total, int64_t *used, int64_t *cached) {
    wk_kv_pool_stats st;
    wk_kv_pool_get_stats(kv->pool, &st);
    *total = st.blocks;
    *used = st.used;
    *cached = st.cached;
}
