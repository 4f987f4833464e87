/* One engine step: take cancellations, admit queued requests into free
 * slots (FIFO), build one ragged batch, run ONE wk_lm_forward_batch, and
 * hand each sequence's logits row on (sample, take, events).
 *
 * The batch: every decoding sequence first, one row each (its last sampled
 * id), then the prefilling ones in admission order, each its next prompt
 * chunk, while the step has rows left (max_step_tokens >= slots, checked
 * at wk_engine_new, so decoding never waits): a long prompt is spread over
 * steps and never stalls the others. A chunk that does not finish its
 * prompt produces no token (its logits row is not read). */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wk__engine_finish(wk_engine *e, wk__req *r, wk_stop_reason stop, wk_status err, const char *msg) {
    wk_engine_event ev = {.request = r->id, .stop = stop, .n_prompt = r->n_prompt, .n_generated = r->n_generated,
                          .n_cached = r->n_cached, .id = -1, .text = "", .status = err};
    if (err != WK_OK) {
        ev.kind = WK_EV_ERROR;
        ev.stop = WK_STOP_NONE;
        ev.error = msg ? msg : "error";
    } else {
        ev.kind = WK_EV_DONE;
        /* what the last take flushed after its token's own text */
        if (r->out && r->n_out > r->n_tok_text) {
            ev.text = r->out + r->n_tok_text;
            ev.n_text = r->n_out - r->n_tok_text;
        }
    }
    if (r->cb) r->cb(r->ctx, &ev);
    pthread_mutex_lock(&e->mu);
    if (err != WK_OK) e->st.requests_failed++;
    else if (stop == WK_STOP_CALLBACK) e->st.requests_cancelled++;
    e->inflight--;
    if (e->inflight == 0) pthread_cond_broadcast(&e->idle_cv);
    pthread_mutex_unlock(&e->mu);
    wk__req_free(r);
}

/* Take r out of its slot (mu held). */
static void vacate(wk_engine *e, wk__req *r) {
    if (r->slot < 0) return;
    wk__engine_kv_release(e->kv, r->slot);
    e->slots[r->slot] = NULL;
    r->slot = -1;
    e->running--;
}

/* Cancellations and admissions, under mu; the requests to end now are
 * chained on *ended (through next), with *failed those refused a slot. */
static void admit(wk_engine *e, wk__req **ended, wk__req **failed) {
    for (wk__req *r = e->queue.head, *nx; r; r = nx) {
        nx = r->next;
        if (!r->cancelled) continue;
        wk__queue_remove(&e->queue, r);
        r->next = *ended;
        *ended = r;
    }
    for (int i = 0; i < e->o.slots; i++) {
        wk__req *r = e->slots[i];
        if (!r || !r->cancelled) continue;
        vacate(e, r);
        r->next = *ended;
        *ended = r;
    }
    for (int i = 0; i < e->o.slots && e->queue.head; i++) {
        if (e->slots[i]) continue;
        wk__req *r = e->queue.head;
        wk_status s = wk__engine_kv_acquire(e->kv, i, r);
        if (s == WK_ERR_BUSY && e->running > 0) {
            wk_clear_error(); /* no room until a running one ends: it waits, FIFO */
            break;
        }
        wk__queue_pop(&e->queue);
        if (s != WK_OK) { /* nothing runs and it still does not fit, or a real error */
            r->next = *failed;
            *failed = r;
            i--;
            continue;
        }
        r->slot = i;
        r->n_fed = r->n_cached;
        e->slots[i] = r;
        e->admitted_at[i] = e->admit_seq++;
        e->running++;
        e->st.prompt_tokens += r->n_prompt;
        e->st.cached_prompt_tokens += r->n_cached;
    }
}

/* The batch's rows (decode first, then prefill chunks); returns the count
 * of sequences. */
static int64_t build(wk_engine *e) {
    int64_t nb = 0, rows = 0;
    for (int i = 0; i < e->o.slots; i++) {
        wk__req *r = e->slots[i];
        if (!r || r->n_fed < r->n_prompt) continue;
        e->seqs[nb] = (wk_lm_seq){.cache = wk__engine_kv_cache(e->kv, i), .ids = &r->last, .n = 1};
        e->batch[nb++] = r;
        rows++;
    }
    for (;;) { /* prefilling slots, the earliest admitted first */
        int best = -1;
        for (int i = 0; i < e->o.slots; i++) {
            wk__req *r = e->slots[i];
            if (!r || r->n_fed >= r->n_prompt || r->in_batch) continue;
            if (best < 0 || e->admitted_at[i] < e->admitted_at[best]) best = i;
        }
        if (best < 0 || rows >= e->o.max_step_tokens) break;
        wk__req *r = e->slots[best];
        int64_t chunk = r->n_prompt - r->n_fed;
        if (chunk > e->o.max_step_tokens - rows) chunk = e->o.max_step_tokens - rows;
        r->in_batch = true;
        e->seqs[nb] = (wk_lm_seq){.cache = wk__engine_kv_cache(e->kv, best), .ids = r->ids + r->n_fed, .n = chunk};
        e->batch[nb++] = r;
        rows += chunk;
    }
    for (int64_t b = 0; b < nb; b++) e->batch[b]->in_batch = false;
    return nb;
}

static int64_t pending(wk_engine *e) {
    pthread_mutex_lock(&e->mu);
    int64_t n = e->running + e->queue.n;
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* r failed during the step: out of its slot, then its ERROR event. */
static void fail(wk_engine *e, wk__req *r, wk_status s, const char *msg) {
    pthread_mutex_lock(&e->mu);
    vacate(e, r);
    pthread_mutex_unlock(&e->mu);
    wk__engine_finish(e, r, WK_STOP_NONE, s, msg);
}

static bool grow_logits(wk_engine *e, int64_t rows) {
    if (rows <= e->logits_rows) return true;
    float *l = realloc(e->logits, (size_t)(rows * e->vocab) * sizeof *l);
    if (!l) return false;
    e->logits = l;
    e->logits_rows = rows;
    return true;
}

/* One sequence's logits row: sample, take, events. */
static void emit_token(wk_engine *e, wk__req *r, float *row, int64_t *generated) {
    int32_t top_ids[WK__ENGINE_MAX_TOP];
    float top_lp[WK__ENGINE_MAX_TOP];
    wk_engine_event ev = {.kind = WK_EV_TOKEN, .request = r->id, .text = "", .stop = WK_STOP_NONE};
    int32_t id = wk__engine_sample(e, r, row, &ev, top_ids, top_lp);
    int stop = id < 0 ? -2 : wk__engine_take(e, r, id);
    if (stop == -2) {
        fail(e, r, wk_last_status(), wk_last_error());
        return;
    }
    (*generated)++;
    ev.id = id;
    ev.stop = (wk_stop_reason)stop;
    ev.n_prompt = r->n_prompt;
    ev.n_generated = r->n_generated;
    ev.n_cached = r->n_cached;
    if (r->out) {
        ev.text = r->out;
        ev.n_text = r->n_tok_text;
    }
    if (r->cb) r->cb(r->ctx, &ev);
    if (stop == WK_STOP_NONE) {
        r->last = id;
        return;
    }
    pthread_mutex_lock(&e->mu);
    vacate(e, r);
    pthread_mutex_unlock(&e->mu);
    wk__engine_finish(e, r, (wk_stop_reason)stop, WK_OK, NULL);
}

int64_t wk__engine_step(wk_engine *e) {
    wk__req *ended = NULL, *failed = NULL;
    pthread_mutex_lock(&e->mu);
    admit(e, &ended, &failed);
    pthread_mutex_unlock(&e->mu);
    while (ended) {
        wk__req *r = ended;
        ended = r->next;
        wk__engine_finish(e, r, WK_STOP_CALLBACK, WK_OK, NULL);
    }
    while (failed) {
        wk__req *r = failed;
        failed = r->next;
        wk__engine_finish(e, r, WK_STOP_NONE, wk_last_status() ? wk_last_status() : WK_ERR_BUSY,
                          "no KV cache room for this request even with nothing else running");
    }
    const int64_t nb = build(e);
    if (nb == 0) return pending(e);

    wk_tensor *l = wk_lm_forward_batch(e->m, e->seqs, nb);
    wk_status s = WK_OK;
    if (!l) s = wk_last_status();
    else if (!grow_logits(e, nb)) s = wk__err(WK_ERR_OOM, "wk_engine_step", "no memory for %lld logits rows", (long long)nb);
    else if (wk_tensor_dtype(l) == WK_F32) s = wk_to_host(l, e->logits, sizeof(float) * (size_t)(nb * e->vocab));
    else s = wk_to_host_f32(l, e->logits, (size_t)(nb * e->vocab));
    wk_tensor_free(l);
    pthread_mutex_lock(&e->mu);
    e->st.steps++;
    pthread_mutex_unlock(&e->mu);
    if (s != WK_OK) {
        /* the step's requests fail, the engine keeps serving (the message
         * is copied: the next call may overwrite the thread's error) */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        for (int64_t b = 0; b < nb; b++) fail(e, e->batch[b], s, msg);
        wk__err(s, "wk_engine_step", "%s", msg);
        return -1;
    }
    int64_t generated = 0;
    for (int64_t b = 0; b < nb; b++) {
        wk__req *r = e->batch[b];
        if (r->n_fed < r->n_prompt) {
            r->n_fed += e->seqs[b].n;
            if (r->n_fed < r->n_prompt) continue; /* a chunk mid-prompt: no token yet */
        }
        emit_token(e, r, e->logits + b * e->vocab, &generated);
    }
    pthread_mutex_lock(&e->mu);
    e->st.generated_tokens += generated;
    pthread_mutex_unlock(&e->mu);
    return pending(e);
}
