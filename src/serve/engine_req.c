/* One request: its options checked and copied at submit (the stop strings
 * into one allocation, the caller's array may go away), its history buffer
 * (the prompt plus every id it may sample), sampler, grammar state and
 * text buffers; freed after its last event. */
#include "serve/engine_internal.h"
#include "model/gen_internal.h"
#include "base/error.h"
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_engine_submit";

static wk_status check(const wk_engine *e, const int32_t *ids, int64_t n, const wk_request_opts *o) {
    if (!ids || n < 1) return wk__err(WK_ERR_ARG, OP, "needs n >= 1 prompt ids (got %lld%s)", (long long)n, ids ? "" : ", ids NULL");
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= e->vocab)
            return wk__err(WK_ERR_ARG, OP, "prompt id %lld is %d, outside the vocabulary of %lld", (long long)i,
                           (int)ids[i], (long long)e->vocab);
    if (n > e->ctx)
        return wk__err(WK_ERR_ARG, OP, "the prompt has %lld ids, more than the context of %lld", (long long)n,
                       (long long)e->ctx);
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop))
        return wk__err(WK_ERR_ARG, OP, "%d stop strings but stop is %s", o->n_stop, o->stop ? "set" : "NULL");
    for (int i = 0; i < o->n_stop; i++)
        if (!o->stop[i] || !o->stop[i][0])
            return wk__err(WK_ERR_ARG, OP, "stop string %d is %s", i, o->stop[i] ? "empty" : "NULL");
    if (o->top_logprobs < 0 || o->top_logprobs > WK__ENGINE_MAX_TOP)
        return wk__err(WK_ERR_ARG, OP, "top_logprobs is %d, not in 0..%d", o->top_logprobs, WK__ENGINE_MAX_TOP);
    if (!e->tok && (o->n_stop > 0 || o->grammar))
        return wk__err(WK_ERR_ARG, OP, "the model has no tokenizer: %s need one",
                       o->grammar ? "a grammar and its masks" : "stop strings");
    return WK_OK;
}

static wk_status copy_stops(wk__req *r, const wk_request_opts *o) {
    r->o.stop = NULL;
    if (o->n_stop == 0) return WK_OK;
    size_t bytes = (size_t)o->n_stop * sizeof(char *);
    for (int i = 0; i < o->n_stop; i++) bytes += strlen(o->stop[i]) + 1;
    if (!(r->stop = malloc(bytes))) return wk__err(WK_ERR_OOM, OP, "no memory for %d stop strings", o->n_stop);
    char *p = (char *)(r->stop + o->n_stop);
    for (int i = 0; i < o->n_stop; i++) {
        size_t l = strlen(o->stop[i]) + 1;
        memcpy(p, o->stop[i], l);
        r->stop[i] = p;
        p += l;
    }
    r->o.stop = (const char *const *)r->stop;
    return WK_OK;
}

wk__req *wk__req_new(wk_engine *e, const int32_t *ids, int64_t n, const wk_request_opts *o, wk_engine_cb cb,
                     void *ctx) {
    if (check(e, ids, n, o)) return NULL;
    wk__req *r = calloc(1, sizeof *r);
    if (!r) {
        wk__err(WK_ERR_OOM, OP, "no memory for a request");
        return NULL;
    }
    r->o = *o;
    r->cb = cb;
    r->ctx = ctx;
    r->slot = -1;
    r->n_allowed = -1;
    if (copy_stops(r, o)) goto fail;
    if (!(r->sampler = wk_sampler_new(&o->sampling))) goto fail;
    /* as wk_gen_start: the last sampled id is never run, so a prompt of n
     * leaves ctx - n + 1 ids to sample */
    const int64_t room = e->ctx - n + 1;
    r->limit_is_callers = o->max_tokens > 0 && o->max_tokens <= room;
    r->max_new = o->max_tokens > 0 && o->max_tokens < room ? o->max_tokens : room;
    r->n_prompt = r->nh = n;
    r->cap = n + r->max_new;
    if (!(r->ids = malloc((size_t)r->cap * sizeof *r->ids))) {
        wk__err(WK_ERR_OOM, OP, "no memory for %lld ids", (long long)r->cap);
        goto fail;
    }
    memcpy(r->ids, ids, (size_t)n * sizeof *ids);
    if (o->stop_at_eos) r->n_eos = wk__gen_eos_ids(e->m, o->end_of_turn, r->eos, WK__ENGINE_MAX_EOS);
    if (e->tok) {
        /* wk_token_stream_put's bound for any vocabulary (tokenizer.h) */
        r->piece_cap = 3 * (wk_tokenizer_max_token_bytes(e->tok) + 4) + 64;
        r->out_cap = r->piece_cap + 1;
        if (!(r->piece = malloc(r->piece_cap)) || !(r->out = malloc(r->out_cap))) {
            wk__err(WK_ERR_OOM, OP, "no memory for text buffers");
            goto fail;
        }
        r->out[0] = 0;
    }
    r->hold = (wk__stop_text){.stop = r->o.stop, .n_stop = o->n_stop, .on_text = wk__engine_out_put, .ctx = r};
    if (o->grammar) {
        if (!(r->gs = wk_grammar_state_new(o->grammar, e->tok))) goto fail;
        if (!(r->allowed = malloc((size_t)e->vocab))) {
            wk__err(WK_ERR_OOM, OP, "no memory for a grammar mask of %lld ids", (long long)e->vocab);
            goto fail;
        }
    }
    return r;
fail:
    wk__req_free(r);
    return NULL;
}

void wk__req_free(wk__req *r) {
    if (!r) return;
    wk_sampler_free(r->sampler);
    wk_grammar_state_free(r->gs);
    wk__stop_text_free(&r->hold);
    free(r->allowed);
    free(r->stop);
    free(r->ids);
    free(r->piece);
    free(r->out);
    free(r);
}
