/* The serving engine's handle (include/wick/serve.h): options, the slots
 * and their KV caches, submit / cancel / stats / shutdown / wait_idle from
 * any thread, and the engine thread, which runs steps while there is work
 * and sleeps on a condition variable when there is none. The step itself
 * is engine_step.c. */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *OP_NEW = "wk_engine_new";

void wk_engine_opts_default(wk_engine_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->slots = 8;
    o->max_step_tokens = 512;
    o->max_queue = 64;
    o->kv_dtype = WK_F32;
    o->kv_block = 16;
    o->prefix_cache = true;
}

void wk_request_opts_default(wk_request_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    wk_sampler_opts_default(&o->sampling);
    o->max_tokens = 128;
    o->stop_at_eos = true;
    o->end_of_turn = true;
}

static void *engine_main(void *arg);

static wk_status check_opts(const wk_lm *m, const wk_engine_opts *o) {
    if (!m) return wk__err(WK_ERR_ARG, OP_NEW, "the model is NULL");
    if (o->slots < 1 || o->slots > 4096) return wk__err(WK_ERR_ARG, OP_NEW, "slots is %d, not in 1..4096", o->slots);
    if (o->max_step_tokens < o->slots)
        return wk__err(WK_ERR_ARG, OP_NEW,
                       "max_step_tokens (%lld) is below slots (%d): every decoding sequence runs one row per step",
                       (long long)o->max_step_tokens, o->slots);
    if (o->max_queue < 0) return wk__err(WK_ERR_ARG, OP_NEW, "max_queue is %lld", (long long)o->max_queue);
    /* the paged pool stores these (q8_0 needs head_dim % 32 == 0: the pool says so) */
    if (o->kv_dtype != WK_F32 && o->kv_dtype != WK_F16 && o->kv_dtype != WK_BF16 && o->kv_dtype != WK_Q8_0)
        return wk__err(WK_ERR_ARG, OP_NEW, "kv_dtype %s: the KV pool stores f32, f16, bf16 or q8_0",
                       wk_dtype_name(o->kv_dtype));
    if (o->kv_blocks < 0) return wk__err(WK_ERR_ARG, OP_NEW, "kv_blocks is %lld", (long long)o->kv_blocks);
    const int64_t max_ctx = wk_lm_config_of(m)->max_ctx;
    if (o->ctx > max_ctx)
        return wk__err(WK_ERR_ARG, OP_NEW, "ctx %lld exceeds the model's context of %lld", (long long)o->ctx,
                       (long long)max_ctx);
    return WK_OK;
}

wk_engine *wk_engine_new(const wk_lm *m, const wk_engine_opts *opts) {
    wk_engine_opts defaults;
    wk_engine_opts_default(&defaults);
    wk_engine_opts o = opts ? *opts : defaults;
    if (o.max_step_tokens <= 0) o.max_step_tokens = defaults.max_step_tokens;
    if (o.kv_block <= 0) o.kv_block = defaults.kv_block;
    if (o.kv_dtype == 0) o.kv_dtype = WK_F32; /* zero-initialised options: the default */
    if (check_opts(m, &o)) return NULL;
    wk_engine *e = calloc(1, sizeof *e);
    if (!e) {
        wk__err(WK_ERR_OOM, OP_NEW, "no memory for an engine");
        return NULL;
    }
    e->m = m;
    e->tok = wk_lm_tokenizer(m);
    e->o = o;
    e->ctx = o.ctx > 0 ? o.ctx : wk_lm_config_of(m)->max_ctx;
    e->vocab = wk_lm_config_of(m)->vocab;
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->step_mu, NULL);
    pthread_cond_init(&e->work_cv, NULL);
    pthread_cond_init(&e->idle_cv, NULL);
    const size_t ns = (size_t)o.slots;
    e->slots = calloc(ns, sizeof *e->slots);
    e->admitted_at = calloc(ns, sizeof *e->admitted_at);
    e->seqs = calloc(ns, sizeof *e->seqs);
    e->batch = calloc(ns, sizeof *e->batch);
    e->lp = malloc((size_t)e->vocab * sizeof *e->lp);
    if (!e->slots || !e->admitted_at || !e->seqs || !e->batch || !e->lp) {
        wk__err(WK_ERR_OOM, OP_NEW, "no memory for %d slots", o.slots);
        goto fail;
    }
    if (!(e->kv = wk__engine_kv_new(m, o.slots, e->ctx, &o))) goto fail;
    if (!o.manual) {
        if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
            wk__err(WK_ERR_OOM, OP_NEW, "cannot start the engine thread");
            goto fail;
        }
        e->has_thread = true;
    }
    return e;
fail:
    wk_engine_free(e);
    return NULL;
}

int64_t wk_engine_submit(wk_engine *e, const int32_t *ids, int64_t n, const wk_request_opts *opts, wk_engine_cb cb,
                         void *ctx) {
    static const char *OP = "wk_engine_submit";
    if (!e) {
        wk__err(WK_ERR_ARG, OP, "the engine is NULL");
        return -1;
    }
    wk_request_opts defaults;
    wk_request_opts_default(&defaults);
    wk__req *r = wk__req_new(e, ids, n, opts ? opts : &defaults, cb, ctx);
    if (!r) return -1;
    pthread_mutex_lock(&e->mu);
    if (e->shut || e->stopping || e->queue.n >= e->o.max_queue) {
        const bool shut = e->shut || e->stopping;
        const int64_t q = e->queue.n;
        pthread_mutex_unlock(&e->mu);
        wk__req_free(r);
        if (shut) wk__err(WK_ERR_BUSY, OP, "the engine is shutting down");
        else wk__err(WK_ERR_BUSY, OP, "the queue is full (%lld requests wait)", (long long)q);
        return -1;
    }
    r->id = e->next_id++;
    wk__queue_push(&e->queue, r);
    e->inflight++;
    e->st.requests_total++;
    const int64_t id = r->id;
    pthread_cond_signal(&e->work_cv);
    pthread_mutex_unlock(&e->mu);
    return id;
}

void wk_engine_cancel(wk_engine *e, int64_t request) {
    if (!e || request < 0) return;
    pthread_mutex_lock(&e->mu);
    wk__req *r = wk__queue_find(&e->queue, request);
    for (int i = 0; !r && i < e->o.slots; i++)
        if (e->slots[i] && e->slots[i]->id == request) r = e->slots[i];
    if (r) {
        r->cancelled = true;
        pthread_cond_signal(&e->work_cv);
    }
    pthread_mutex_unlock(&e->mu);
}

int64_t wk_engine_step(wk_engine *e) {
    if (!e) {
        wk__err(WK_ERR_ARG, "wk_engine_step", "the engine is NULL");
        return -1;
    }
    if (e->has_thread) {
        wk__err(WK_ERR_ARG, "wk_engine_step", "the engine has its own thread (manual is false)");
        return -1;
    }
    pthread_mutex_lock(&e->step_mu);
    int64_t n = wk__engine_step(e);
    pthread_mutex_unlock(&e->step_mu);
    return n;
}

void wk_engine_get_stats(wk_engine *e, wk_engine_stats *st) {
    if (!st) return;
    memset(st, 0, sizeof *st);
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    *st = e->st;
    st->running = e->running;
    st->queued = e->queue.n;
    wk__engine_kv_usage(e->kv, &st->kv_blocks_total, &st->kv_blocks_used, &st->kv_blocks_cached);
    pthread_mutex_unlock(&e->mu);
}

/* mu held: every request asked to end */
static void cancel_all(wk_engine *e) {
    for (wk__req *r = e->queue.head; r; r = r->next) r->cancelled = true;
    for (int i = 0; i < e->o.slots; i++)
        if (e->slots[i]) e->slots[i]->cancelled = true;
}

void wk_engine_shutdown(wk_engine *e, bool drain) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->shut = true;
    if (!drain) cancel_all(e);
    pthread_cond_broadcast(&e->work_cv);
    pthread_mutex_unlock(&e->mu);
}

bool wk_engine_wait_idle(wk_engine *e, int64_t timeout_ms) {
    if (!e) return true;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    if (timeout_ms > 0) {
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&e->mu);
    while (e->inflight > 0 && timeout_ms != 0) {
        if (timeout_ms < 0) pthread_cond_wait(&e->idle_cv, &e->mu);
        else if (pthread_cond_timedwait(&e->idle_cv, &e->mu, &dl) == ETIMEDOUT) break;
    }
    const bool idle = e->inflight == 0;
    pthread_mutex_unlock(&e->mu);
    return idle;
}

/* The engine thread: steps while anything runs or waits; sleeps on work_cv
 * otherwise; ends when free asked and everything has ended. */
static void *engine_main(void *arg) {
    wk_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stopping && e->inflight == 0) pthread_cond_wait(&e->work_cv, &e->mu);
        if (e->stopping && e->inflight == 0) break;
        pthread_mutex_unlock(&e->mu);
        pthread_mutex_lock(&e->step_mu);
        wk__engine_step(e);
        pthread_mutex_unlock(&e->step_mu);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

void wk_engine_free(wk_engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->shut = e->stopping = true;
    cancel_all(e);
    pthread_cond_broadcast(&e->work_cv);
    pthread_mutex_unlock(&e->mu);
    if (e->has_thread) pthread_join(e->thread, NULL);
    else if (e->slots && e->kv) {
        /* manual: deliver the cancellations' DONE events here */
        pthread_mutex_lock(&e->step_mu);
        while (wk__engine_step(e) > 0) {
        }
        pthread_mutex_unlock(&e->step_mu);
    }
    wk__engine_kv_free(e->kv);
    free(e->slots);
    free(e->admitted_at);
    free(e->seqs);
    free(e->batch);
    free(e->logits);
    free(e->lp);
    pthread_cond_destroy(&e->work_cv);
    pthread_cond_destroy(&e->idle_cv);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->step_mu);
    free(e);
}
