/* A sampled id taken into its request, with wk_gen_step's rules (so a
 * greedy request ends where wk_generate does): an EOS ends the text
 * without being printed or added to the history; any other id joins the
 * history, advances the grammar, becomes text (complete UTF-8, control
 * tokens not printed) held back while it may begin a stop string; then
 * the stop rules: a completed stop string, max_tokens (or the context's
 * room), a grammar that is complete with nothing but an EOS to follow.
 * At the end what is held back is flushed into the final text. */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_engine_step";

int wk__engine_out_put(void *ctx, const char *bytes, size_t n) {
    wk__req *r = ctx;
    if (r->n_out + n + 1 > r->out_cap) {
        size_t cap = (r->n_out + n + 1) * 2;
        char *b = realloc(r->out, cap);
        if (!b) {
            r->out_oom = true;
            return 1;
        }
        r->out = b;
        r->out_cap = cap;
    }
    memcpy(r->out + r->n_out, bytes, n);
    r->n_out += n;
    r->out[r->n_out] = 0;
    return 0;
}

static bool is_eos(const wk__req *r, int32_t id) {
    for (int i = 0; i < r->n_eos; i++)
        if (r->eos[i] == id) return true;
    return false;
}

/* The grammar's mask for the next id; true when nothing but an EOS (or
 * nothing at all) may follow: the output is complete. */
static int grammar_next(wk_engine *e, wk__req *r, bool *done) {
    *done = false;
    r->n_allowed = wk_grammar_state_mask(r->gs, r->eos, r->n_eos, r->allowed, e->vocab);
    if (r->n_allowed < 0) return -1;
    int64_t other = r->n_allowed;
    for (int i = 0; i < r->n_eos; i++)
        if (r->allowed[r->eos[i]]) other--;
    *done = other <= 0 && wk_grammar_state_complete(r->gs);
    if (r->n_allowed == 0) *done = true;
    return 0;
}

int wk__engine_take(wk_engine *e, wk__req *r, int32_t id) {
    r->n_out = r->n_tok_text = 0;
    if (r->out) r->out[0] = 0;
    r->n_generated++;
    wk_stop_reason stop = WK_STOP_NONE;
    int rc = WK__TEXT_GO_ON;
    if (is_eos(r, id)) stop = WK_STOP_EOS;
    else {
        r->ids[r->nh++] = id;
        if (r->gs) {
            if (wk_grammar_state_accept(r->gs, id)) return -2;
            r->n_allowed = -1;
        }
        if (e->tok) {
            int64_t np = wk_token_stream_put(e->tok, &r->ts, id, true, r->piece, r->piece_cap);
            if (np < 0) return -2;
            rc = wk__stop_text_put(&r->hold, r->piece, (size_t)np);
        }
        if (rc == WK__TEXT_STOP_STRING) stop = WK_STOP_STRING;
        else if (r->n_generated >= r->max_new)
            stop = r->limit_is_callers ? WK_STOP_MAX_TOKENS : WK_STOP_CONTEXT_FULL;
        else if (r->gs && rc == WK__TEXT_GO_ON) {
            bool done;
            if (grammar_next(e, r, &done)) return -2;
            if (done) stop = WK_STOP_EOS;
        }
    }
    r->n_tok_text = r->n_out;
    if (e->tok && rc == WK__TEXT_GO_ON && stop != WK_STOP_NONE) {
        /* the end of the text: the UTF-8 held back, then the stop holdback */
        int64_t np = wk_token_stream_flush(&r->ts, r->piece, r->piece_cap);
        if (np < 0) return -2;
        rc = wk__stop_text_put(&r->hold, r->piece, (size_t)np);
        if (rc == WK__TEXT_GO_ON) rc = wk__stop_text_finish(&r->hold);
        if (rc == WK__TEXT_STOP_STRING) stop = WK_STOP_STRING;
    }
    if (r->out_oom || (rc != WK__TEXT_GO_ON && rc != WK__TEXT_STOP_STRING)) {
        wk__err(WK_ERR_OOM, OP, "no memory for the generated text");
        return -2;
    }
    return (int)stop;
}
