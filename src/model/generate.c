/* Text generation over a wk_llama: tokenize, prefill the prompt in one
 * batch, then sample one token at a time, streaming complete UTF-8 through
 * the caller's callback with stop strings held back (model/stop_text.c).
 *
 * The loop samples before it runs a token, so the last token is never run:
 * n tokens cost one prefill and n - 1 single-token passes, and a cache of
 * n_prompt + n - 1 positions is enough. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include "wick/llama.h"
#include <string.h>
#include <time.h>
#include "core/error.h"
#include "model/stop_text.h"
#include "wick/generate.h"

void wk_generate_opts_default(wk_generate_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->max_new_tokens = 128;
    wk_sampler_opts_default(&o->sampling);
    o->stop_at_eos = true;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Everything one call owns, freed in one place. */
typedef struct {
    char *text;
    int32_t *ids;
    float *logits;
    char *piece;
    wk_sampler *sampler;
    wk_kv_cache *cache;
    wk__stop_text out;
} gen_state;

static void gen_free(gen_state *g) {
    free(g->text);
    free(g->ids);
    free(g->logits);
    free(g->piece);
    wk_sampler_free(g->sampler);
    wk_kv_cache_free(g->cache);
    wk__stop_text_free(&g->out);
}

static const char *OP = "wk_generate";

static wk_status check_opts(const wk_llama *m, const char *prompt, const wk_generate_opts *o) {
    if (!m || !prompt || !o)
        return wk__err(WK_ERR_ARG, OP, "%s is NULL", !m ? "the model" : !prompt ? "the prompt" : "the options");
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop))
        return wk__err(WK_ERR_ARG, OP, "%d stop strings but stop is %s", o->n_stop, o->stop ? "set" : "NULL");
    for (int i = 0; i < o->n_stop; i++)
        if (!o->stop[i] || !o->stop[i][0])
            return wk__err(WK_ERR_ARG, OP, "stop string %d is %s", i, o->stop[i] ? "empty" : "NULL");
    return WK_OK;
}

/* The prompt as the model sees it: the chat template applied or not. */
static wk_status prompt_text(const wk_llama *m, const char *prompt, const wk_generate_opts *o, gen_state *g) {
    if (!o->chat) return WK_OK;
    const char *tmpl = wk_llama_chat_template(m);
    if (!tmpl) return wk__err(WK_ERR_ARG, OP, "chat: the model file has no chat template");
    int64_t need = wk_chat_render(tmpl, o->system, prompt, NULL, 0);
    if (need < 0)
        return wk__err(WK_ERR_ARG, OP, "chat: the model's chat template is not ChatML-style; wick cannot render it");
    g->text = malloc((size_t)need + 1);
    if (!g->text) return wk__err(WK_ERR_OOM, OP, "no memory for a %lld-byte chat prompt", (long long)need);
    wk_chat_render(tmpl, o->system, prompt, g->text, (size_t)need + 1);
    return WK_OK;
}

/* Tokenize into g->ids, with room after the prompt for every id that can
 * be sampled before the context is full (*room of them). */
static wk_status tokenize(const wk_tokenizer *tok, const char *text, int64_t ctx, gen_state *g, int64_t *n_prompt,
                          int64_t *room) {
    size_t len = strlen(text);
    unsigned flags = WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL;
    /* byte-level BPE never needs more ids than bytes, plus BOS/EOS */
    int64_t cap = (int64_t)len + 8;
    for (int pass = 0; pass < 2; pass++) {
        free(g->ids);
        g->ids = malloc((size_t)cap * sizeof *g->ids);
        if (!g->ids) return wk__err(WK_ERR_OOM, OP, "no memory for %lld prompt ids", (long long)cap);
        int64_t n = wk_tokenizer_encode(tok, text, len, flags, g->ids, cap);
        if (n < 0) return wk_last_status();
        if (n <= cap) {
            *n_prompt = n;
            break;
        }
        cap = n;
    }
    if (*n_prompt == 0) return wk__err(WK_ERR_ARG, OP, "the prompt is empty (no tokens, no BOS)");
    if (*n_prompt > ctx)
        return wk__err(WK_ERR_ARG, OP, "the prompt has %lld tokens, more than the context of %lld", (long long)*n_prompt,
                       (long long)ctx);
    /* the history buffer: the prompt plus every token that can be sampled */
    *room = ctx - *n_prompt + 1;
    int32_t *ids = realloc(g->ids, (size_t)(*n_prompt + *room) * sizeof *ids);
    if (!ids) return wk__err(WK_ERR_OOM, OP, "no memory for %lld ids", (long long)(*n_prompt + *room));
    g->ids = ids;
    return WK_OK;
}

/* Runs ids through the model and reads the last position's logits. */
static wk_status forward(const wk_llama *m, gen_state *g, const int32_t *ids, int64_t n, int64_t vocab) {
    wk_tensor *l = wk_llama_forward(m, g->cache, ids, n, false);
    if (!l) return wk_last_status();
    wk_status s = wk_to_host_f32(l, g->logits, (size_t)vocab);
    wk_tensor_free(l);
    return s;
}

static bool is_eos(const int32_t *eos, int n, int32_t id) {
    for (int i = 0; i < n; i++)
        if (eos[i] == id) return true;
    return false;
}

wk_status wk_generate(const wk_llama *m, const char *prompt, const wk_generate_opts *o, wk_generate_stats *st) {
    const double t0 = now_ms();
    wk_generate_stats stats = {0};
    gen_state g = {0};
    wk_status s = check_opts(m, prompt, o);
    if (s) goto done;
    const wk_llama_config *cfg = wk_llama_config_of(m);
    const wk_tokenizer *tok = wk_llama_tokenizer(m);
    if (!cfg || !tok) {
        s = wk__err(WK_ERR_ARG, OP, "the model has no %s", cfg ? "tokenizer" : "config");
        goto done;
    }
    if (!(g.sampler = wk_sampler_new(&o->sampling))) {
        s = wk_last_status();
        goto done;
    }
    if ((s = prompt_text(m, prompt, o, &g))) goto done;

    int64_t ctx = cfg->max_ctx, n_prompt = 0, room = 0;
    if (o->max_ctx > 0 && o->max_ctx < ctx) ctx = o->max_ctx;
    if ((s = tokenize(tok, g.text ? g.text : prompt, ctx, &g, &n_prompt, &room))) goto done;
    stats.n_prompt = n_prompt;
    int64_t max_new = o->max_new_tokens > 0 && o->max_new_tokens < room ? o->max_new_tokens : room;

    int32_t eos[3];
    int n_eos = 0;
    if (cfg->eos >= 0) eos[n_eos++] = cfg->eos;
    if (wk_tokenizer_eos(tok) >= 0) eos[n_eos++] = wk_tokenizer_eos(tok);
    if (o->chat && wk_tokenizer_find(tok, "<|im_end|>") >= 0) eos[n_eos++] = wk_tokenizer_find(tok, "<|im_end|>");
    if (!o->stop_at_eos) n_eos = 0;

    const int64_t vocab = cfg->vocab;
    const size_t piece_cap = 64 + 4096;
    g.logits = malloc((size_t)vocab * sizeof *g.logits);
    g.piece = malloc(piece_cap);
    if (!g.logits || !g.piece) {
        s = wk__err(WK_ERR_OOM, OP, "no memory for %lld logits", (long long)vocab);
        goto done;
    }
    /* every sampled token but the last is run */
    if (!(g.cache = wk_kv_cache_new(m, n_prompt + max_new - 1))) {
        s = wk_last_status();
        goto done;
    }
    g.out = (wk__stop_text){.stop = o->stop, .n_stop = o->n_stop, .on_text = o->on_text, .ctx = o->ctx};

    const double t_pf = now_ms();
    if ((s = forward(m, &g, g.ids, n_prompt, vocab))) goto done;
    stats.prefill_ms = now_ms() - t_pf;

    wk_token_stream ts = {0};
    int64_t nh = n_prompt;
    double t_dec = 0;
    int text_rc = WK__TEXT_GO_ON;
    for (;;) {
        int32_t id = wk_sampler_sample(g.sampler, g.logits, vocab, g.ids, nh);
        if (id < 0) {
            s = wk_last_status();
            goto done;
        }
        if (stats.n_generated++ == 0) {
            t_dec = now_ms();
            stats.first_token_ms = t_dec - t0;
        }
        if (is_eos(eos, n_eos, id)) {
            stats.stop_reason = 1;
            break;
        }
        g.ids[nh++] = id;
        int64_t np = wk_token_stream_put(tok, &ts, id, true, g.piece, piece_cap);
        if (np < 0) {
            s = wk_last_status();
            goto done;
        }
        if ((text_rc = wk__stop_text_put(&g.out, g.piece, (size_t)np)) != WK__TEXT_GO_ON) break;
        if (stats.n_generated >= max_new) {
            /* the caller's limit, or the context's when that came first */
            stats.stop_reason = o->max_new_tokens > 0 && o->max_new_tokens <= room ? 0 : 4;
            break;
        }
        if ((s = forward(m, &g, &id, 1, vocab))) goto done;
    }
    if (text_rc == WK__TEXT_GO_ON) {
        int64_t np = wk_token_stream_flush(&ts, g.piece, piece_cap);
        if (np < 0) {
            s = wk_last_status();
            goto done;
        }
        text_rc = wk__stop_text_put(&g.out, g.piece, (size_t)np);
        if (text_rc == WK__TEXT_GO_ON) text_rc = wk__stop_text_finish(&g.out);
    }
    if (text_rc == WK__TEXT_OOM) s = wk__err(WK_ERR_OOM, OP, "no memory for the held-back text");
    else if (text_rc != WK__TEXT_GO_ON) stats.stop_reason = text_rc;
    stats.decode_ms = now_ms() - t_dec;
done:
    gen_free(&g);
    if (st) *st = stats;
    return s;
}
