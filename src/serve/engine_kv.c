/* The KV caches of the engine's slots, behind one small interface so the
 * paged pool (wk_kv_cache_new_paged, prefix reuse, reserve at admission)
 * replaces this file alone.
 *
 * This version: one contiguous cache per slot, made at the slot's first
 * request and grown (wk_kv_cache_reserve, or a new cache where reserve
 * refuses: longrope) to what a request can use, prompt + max_tokens - 1
 * positions (the last sampled id is never run), truncated to 0 when the
 * slot is reused: memory follows the requests, not slots x ctx. No prefix
 * is shared (n_cached is always 0) and admission never waits for room.
 * Blocks are reported in units of kv_block positions so the stats already
 * read as the pool's will: total = slots x ctx, used = what running
 * requests may fill. */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <stdlib.h>

struct wk__engine_kv {
    const wk_lm *m;
    wk_kv_cache **c;
    int64_t *need;   /* positions the slot's request may fill (0: free) */
    int slots;
    int64_t ctx, block;
    bool *busy;
};

wk__engine_kv *wk__engine_kv_new(const wk_lm *m, int slots, int64_t ctx, const wk_engine_opts *o) {
    wk__engine_kv *kv = calloc(1, sizeof *kv);
    if (!kv || !(kv->c = calloc((size_t)slots, sizeof *kv->c)) || !(kv->busy = calloc((size_t)slots, 1)) ||
        !(kv->need = calloc((size_t)slots, sizeof *kv->need))) {
        if (kv) {
            free(kv->c);
            free(kv->busy);
        }
        free(kv);
        wk__err(WK_ERR_OOM, "wk_engine_new", "no memory for %d slots", slots);
        return NULL;
    }
    kv->slots = slots;
    kv->ctx = ctx;
    kv->block = o->kv_block > 0 ? o->kv_block : 16;
    kv->m = m;
    return kv;
}

void wk__engine_kv_free(wk__engine_kv *kv) {
    if (!kv) return;
    for (int i = 0; i < kv->slots; i++) wk_kv_cache_free(kv->c[i]);
    free(kv->c);
    free(kv->busy);
    free(kv->need);
    free(kv);
}

wk_status wk__engine_kv_acquire(wk__engine_kv *kv, int slot, wk__req *r) {
    int64_t need = r->n_prompt + r->max_new - 1;
    if (need < r->n_prompt) need = r->n_prompt;
    wk_kv_cache **c = &kv->c[slot];
    if (*c) {
        wk_status s = wk_kv_cache_truncate(*c, 0);
        if (s) return s;
        if (wk_kv_cache_capacity(*c) < need && wk_kv_cache_reserve(*c, need) != WK_OK) {
            wk_clear_error(); /* reserve refuses (longrope): a new cache */
            wk_kv_cache_free(*c);
            *c = NULL;
        }
    }
    if (!*c && !(*c = wk_kv_cache_new(kv->m, need))) return wk_last_status();
    kv->need[slot] = need;
    kv->busy[slot] = true;
    r->n_cached = 0;
    return WK_OK;
}

void wk__engine_kv_release(wk__engine_kv *kv, int slot) {
    if (kv->c[slot]) wk_kv_cache_truncate(kv->c[slot], 0);
    kv->busy[slot] = false;
    kv->need[slot] = 0;
}

wk_kv_cache *wk__engine_kv_cache(wk__engine_kv *kv, int slot) { return kv->c[slot]; }

void wk__engine_kv_usage(const wk__engine_kv *kv, int64_t *total, int64_t *used, int64_t *cached) {
    int64_t per = (kv->ctx + kv->block - 1) / kv->block, u = 0;
    for (int i = 0; i < kv->slots; i++)
        if (kv->busy[i]) u += (kv->need[i] + kv->block - 1) / kv->block;
    *total = per * kv->slots;
    *used = u;
    *cached = 0;
}
