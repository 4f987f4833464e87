/* The KV caches of the engine's slots, behind one small interface so the
 * paged pool (wk_kv_cache_new_paged, prefix reuse, reserve at admission)
 * replaces this file alone.
 *
 * This version: one contiguous cache per slot, ctx positions, made at
 * engine start and truncated to 0 when a slot is reused. No prefix is
 * shared (n_cached is always 0) and admission never waits for room: every
 * slot owns a whole context. Blocks are reported in units of kv_block
 * positions so the stats already read as the pool's will. */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <stdlib.h>

struct wk__engine_kv {
    wk_kv_cache **c;
    int slots;
    int64_t ctx, block;
    bool *busy;
};

wk__engine_kv *wk__engine_kv_new(const wk_lm *m, int slots, int64_t ctx, const wk_engine_opts *o) {
    wk__engine_kv *kv = calloc(1, sizeof *kv);
    if (!kv || !(kv->c = calloc((size_t)slots, sizeof *kv->c)) || !(kv->busy = calloc((size_t)slots, 1))) {
        if (kv) free(kv->c);
        free(kv);
        wk__err(WK_ERR_OOM, "wk_engine_new", "no memory for %d slots", slots);
        return NULL;
    }
    kv->slots = slots;
    kv->ctx = ctx;
    kv->block = o->kv_block > 0 ? o->kv_block : 16;
    for (int i = 0; i < slots; i++)
        if (!(kv->c[i] = wk_kv_cache_new(m, ctx))) {
            wk__engine_kv_free(kv);
            return NULL;
        }
    return kv;
}

void wk__engine_kv_free(wk__engine_kv *kv) {
    if (!kv) return;
    for (int i = 0; i < kv->slots; i++) wk_kv_cache_free(kv->c[i]);
    free(kv->c);
    free(kv->busy);
    free(kv);
}

wk_status wk__engine_kv_acquire(wk__engine_kv *kv, int slot, wk__req *r) {
    wk_status s = wk_kv_cache_truncate(kv->c[slot], 0);
    if (s) return s;
    kv->busy[slot] = true;
    r->n_cached = 0;
    return WK_OK;
}

void wk__engine_kv_release(wk__engine_kv *kv, int slot) {
    wk_kv_cache_truncate(kv->c[slot], 0);
    kv->busy[slot] = false;
}

wk_kv_cache *wk__engine_kv_cache(wk__engine_kv *kv, int slot) { return kv->c[slot]; }

void wk__engine_kv_usage(const wk__engine_kv *kv, int64_t *total, int64_t *used, int64_t *cached) {
    int64_t per = (kv->ctx + kv->block - 1) / kv->block, u = 0;
    for (int i = 0; i < kv->slots; i++)
        if (kv->busy[i]) u += per; /* a slot holds its whole context */
    *total = per * kv->slots;
    *used = u;
    *cached = 0;
}
