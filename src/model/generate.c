/* Text generation over a wk_lm, one implementation: the step API
 * (wk_gen_start / wk_gen_step, include/wick/generate.h) and wk_generate, a
 * loop over it. A session tokenizes and allocates at the start; its first
 * step prefills the prompt in one batch; each step samples one token, holding back text that could still become a
 * stop string (model/stop_text.c).
 *
 * A step runs the previous token through the model before it samples, so the
 * last token is never run: n tokens cost one prefill and n - 1 single-token
 * passes, and a cache of n_prompt + n - 1 positions is enough.
 *
 * Buffers, all owned by the session and bounded: the id history holds the
 * prompt plus every id that can be sampled before the context is full; a
 * token's text fits the piece buffer (3 * (the longest token + 4) + 64,
 * wk_token_stream_put's bound); the held-back text is at most the longest
 * stop string plus one piece; the step's text buffer grows to what one step
 * hands back (at most the held-back text plus one piece and the flush).
 *
 * A chat session's reply (model/chat_session.c) is the same session over a
 * cache it borrows (wk__gen_kept): only the prompt's ids after the prefix
 * the cache holds are prefilled, and the keeper hears once how it ended. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include <string.h>
#include <time.h>
#include "base/error.h"
#include "wick/chat.h"
#include "model/stop_text.h"
#include "model/gen_internal.h"
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

struct wk_gen {
    const wk_lm *m;
    const wk_tokenizer *tok;
    wk_sampler *sampler;
    wk_kv_cache *cache;
    int32_t *ids;          /* the prompt then every sampled id but an EOS (the sampler's history) */
    int64_t nh, max_new, vocab;
    bool limit_is_callers; /* max_new is o->max_new_tokens, not the context's room */
    float *logits;         /* the last forward pass's logits */
    char *piece;           /* one token's text */
    size_t piece_cap;
    wk_token_stream ts;
    wk__stop_text hold;
    char **stop;           /* the private copy of the stop strings (one allocation) */
    char *out;             /* this step's text, NUL-terminated */
    size_t n_out, out_cap;
    bool out_oom;
    int32_t eos[8];
    int n_eos;
    int32_t last;          /* the sampled id still to run through the model */
    bool need_prefill, need_forward, ended, failed;
    double t0, t_dec;
    wk_generate_stats stats;
    /* a chat session's reply: the keeper of the cache (NULL: the cache is
     * this session's own), the prompt ids it already held, the reply text */
    wk__gen_kept *kept;
    bool growable;         /* the cache grows when full (a chat reply's), up to ctx positions */
    bool fixed_ctx;        /* o->max_ctx was given: a kept cache is made that long at once */
    int64_t n_skip, ctx;
    char *reply;
    size_t n_reply, reply_cap;
    bool reply_oom, reported;
};

static const char *OP_START = "wk_gen_start", *OP_STEP = "wk_gen_step", *OP_GEN = "wk_generate";

static wk_status check_opts(const wk_lm *m, const char *prompt, const wk_generate_opts *o, const char *op) {
    if (!m || !prompt)
        return wk__err(WK_ERR_ARG, op, "%s is NULL", !m ? "the model" : "the prompt");
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop))
        return wk__err(WK_ERR_ARG, op, "%d stop strings but stop is %s", o->n_stop, o->stop ? "set" : "NULL");
    for (int i = 0; i < o->n_stop; i++)
        if (!o->stop[i] || !o->stop[i][0])
            return wk__err(WK_ERR_ARG, op, "stop string %d is %s", i, o->stop[i] ? "empty" : "NULL");
    return WK_OK;
}

/* stop_text's sink: the step's text buffer, grown as needed */
static int out_put(void *ctx, const char *bytes, size_t n) {
    wk_gen *g = ctx;
    if (g->n_out + n + 1 > g->out_cap) {
        size_t cap = (g->n_out + n + 1) * 2;
        char *b = realloc(g->out, cap);
        if (!b) {
            g->out_oom = true;
            return 1;
        }
        g->out = b;
        g->out_cap = cap;
    }
    memcpy(g->out + g->n_out, bytes, n);
    g->n_out += n;
    g->out[g->n_out] = 0;
    return 0;
}

static wk_status copy_stops(wk_gen *g, const wk_generate_opts *o, const char *op) {
    if (o->n_stop == 0) return WK_OK;
    size_t bytes = (size_t)o->n_stop * sizeof(char *);
    for (int i = 0; i < o->n_stop; i++) bytes += strlen(o->stop[i]) + 1;
    if (!(g->stop = malloc(bytes))) return wk__err(WK_ERR_OOM, op, "no memory for %d stop strings", o->n_stop);
    char *p = (char *)(g->stop + o->n_stop);
    for (int i = 0; i < o->n_stop; i++) {
        size_t l = strlen(o->stop[i]) + 1;
        memcpy(p, o->stop[i], l);
        g->stop[i] = p;
        p += l;
    }
    return WK_OK;
}

/* The text of special id `id` (the template's bos_token / eos_token), or
 * NULL when the tokenizer has none; a new string. */
static char *special_text(const wk_tokenizer *tok, int32_t id) {
    if (id < 0) return NULL;
    int64_t n = wk_tokenizer_decode(tok, &id, 1, false, NULL, 0);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && wk_tokenizer_decode(tok, &id, 1, false, s, (size_t)n + 1) < 0) {
        free(s);
        s = NULL;
    }
    return s;
}

wk_status wk__gen_render(const wk_lm *m, const wk_chat_template *tmpl, const wk_chat_message *msgs, size_t n,
                         int64_t now, char **text, const char *op) {
    *text = NULL;
    wk_chat_template *own = NULL;
    if (!tmpl) {
        const char *src = wk_lm_chat_template(m);
        if (!src) return wk__err(WK_ERR_ARG, op, "chat: the model file has no chat template");
        if (!(tmpl = own = wk_chat_template_compile(src)))
            return wk__err(wk_last_status(), op, "chat: %s", wk_last_error());
    }
    const wk_tokenizer *tok = wk_lm_tokenizer(m);
    char *bos = special_text(tok, wk_tokenizer_bos(tok)), *eos = special_text(tok, wk_tokenizer_eos(tok));
    wk_chat_opts co = {.bos_token = bos ? bos : "", .eos_token = eos ? eos : "", .add_generation_prompt = true,
                       .now = now};
    wk_status st = WK_OK;
    int64_t need = wk_chat_template_render(tmpl, msgs, n, &co, NULL, 0);
    if (need < 0) st = wk__err(wk_last_status(), op, "chat: %s", wk_last_error());
    else if (!(*text = malloc((size_t)need + 1)))
        st = wk__err(WK_ERR_OOM, op, "no memory for a %lld-byte chat prompt", (long long)need);
    else if (wk_chat_template_render(tmpl, msgs, n, &co, *text, (size_t)need + 1) != need)
        st = wk__err(WK_ERR_ARG, op, "chat: the template rendered differently twice");
    free(bos);
    free(eos);
    wk_chat_template_free(own);
    if (st != WK_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}

/* The prompt as the model sees it: the model's chat template rendered (the
 * Jinja interpreter, wick/chat.h) over [system,] user with the tokenizer's
 * bos / eos texts and the generation prompt (a new string in *text), or
 * not (*text stays NULL). Like transformers' apply_chat_template, the
 * template writes the BOS itself: tokenize() then adds no specials. */
static wk_status chat_text(const wk_lm *m, const char *prompt, const wk_generate_opts *o, char **text,
                           const char *op) {
    *text = NULL;
    if (!o->chat) return WK_OK;
    wk_chat_message msgs[2] = {{.role = "system", .content = o->system}, {.role = "user", .content = prompt}};
    return wk__gen_render(m, NULL, o->system ? msgs : msgs + 1, o->system ? 2 : 1, 0, text, op);
}

/* Tokenize into g->ids, with room after the prompt for every id that can
 * be sampled before the context is full (*room of them). */
static wk_status tokenize(wk_gen *g, const char *text, bool chat, int64_t ctx, int64_t *room, const char *op) {
    size_t len = strlen(text);
    unsigned flags = chat ? WK_TOK_PARSE_SPECIAL : WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL;
    /* byte-level BPE never needs more ids than bytes, plus BOS/EOS */
    int64_t cap = (int64_t)len + 8, n_prompt = 0;
    for (int pass = 0; pass < 2; pass++) {
        free(g->ids);
        g->ids = malloc((size_t)cap * sizeof *g->ids);
        if (!g->ids) return wk__err(WK_ERR_OOM, op, "no memory for %lld prompt ids", (long long)cap);
        int64_t n = wk_tokenizer_encode(g->tok, text, len, flags, g->ids, cap);
        if (n < 0) return wk_last_status();
        if (n <= cap) {
            n_prompt = n;
            break;
        }
        cap = n;
    }
    if (n_prompt == 0) return wk__err(WK_ERR_ARG, op, "the prompt is empty (no tokens, no BOS)");
    if (n_prompt > ctx)
        return wk__err(WK_ERR_ARG, op, "the %s has %lld tokens, more than the context of %lld%s",
                       g->kept ? "conversation" : "prompt", (long long)n_prompt, (long long)ctx,
                       g->kept ? " (drop turns: wk_chat_session_pop / _reset)" : "");
    /* the history buffer: the prompt plus every token that can be sampled */
    *room = ctx - n_prompt + 1;
    int32_t *ids = realloc(g->ids, (size_t)(n_prompt + *room) * sizeof *ids);
    if (!ids) return wk__err(WK_ERR_OOM, op, "no memory for %lld ids", (long long)(n_prompt + *room));
    g->ids = ids;
    g->nh = n_prompt;
    return WK_OK;
}

/* Runs ids through the model and reads the last position's logits. */
static wk_status forward(wk_gen *g, const int32_t *ids, int64_t n) {
    wk_tensor *l = wk_lm_forward(g->m, g->cache, ids, n, false);
    if (!l) return wk_last_status();
    /* f32 logits (the usual case) are read as they are: the f32 -> f32 cast
     * walked the 49152 values of a small model's step element by element */
    wk_status s = wk_tensor_dtype(l) == WK_F32 ? wk_to_host(l, g->logits, sizeof(float) * (size_t)g->vocab)
                                                : wk_to_host_f32(l, g->logits, (size_t)g->vocab);
    wk_tensor_free(l);
    return s;
}

static bool is_eos(const wk_gen *g, int32_t id) {
    for (int i = 0; i < g->n_eos; i++)
        if (g->eos[i] == id) return true;
    return false;
}

/* Tell the keeper how the reply ended, once: the ids its cache holds now
 * (every id run so far is in g->ids, in order), then the text. */
static void report(wk_gen *g) {
    if (!g->kept || g->reported) return;
    g->reported = true;
    wk__gen_kept *k = g->kept;
    k->open = NULL;
    int64_t n = wk_kv_cache_len(k->cache);
    if (n > k->ids_cap) {
        int32_t *ids = realloc(k->ids, (size_t)n * sizeof *ids);
        if (!ids) n = 0; /* no memory to remember them: the cache is refilled next time */
        else {
            k->ids = ids;
            k->ids_cap = n;
        }
    }
    if (n > 0) memcpy(k->ids, g->ids, (size_t)n * sizeof *g->ids);
    k->n = n;
    wk_kv_cache_truncate(k->cache, n);
    if (k->on_end) k->on_end(k->ctx, g->reply ? g->reply : "", g->n_reply, g->failed || g->reply_oom);
}

void wk__gen_detach(wk_gen *g) {
    if (g) g->kept = NULL; /* wk_gen_free frees the cache now; it may still grow it */
}

void wk_gen_free(wk_gen *g) {
    if (!g) return;
    report(g);
    if (g->kept) g->cache = NULL; /* the keeper's */
    free(g->reply);
    free(g->ids);
    free(g->logits);
    free(g->piece);
    free(g->stop);
    free(g->out);
    wk_sampler_free(g->sampler);
    wk_kv_cache_free(g->cache);
    wk__stop_text_free(&g->hold);
    free(g);
}

/* kept's cache, made or grown to hold need positions (at most ctx; a new
 * cache holds nothing), truncated to the longest prefix of g->ids[0..nh)
 * it holds, but for the last id: the prefill runs g->ids[n_skip..nh). */
static wk_status reuse_cache(wk_gen *g, wk__gen_kept *k, int64_t need, int64_t ctx, const char *op) {
    if (!k->cache || wk_kv_cache_capacity(k->cache) < need) {
        /* doubling: a conversation grows its cache O(log ctx) times, each
         * a copy of what it holds (refilled only where the copy cannot
         * serve: longrope past the original context) */
        /* the caller's max_ctx: allocated once, never grown */
        int64_t cap = k->cache ? 2 * wk_kv_cache_capacity(k->cache) : g->fixed_ctx ? ctx : 256;
        if (cap < need) cap = need;
        if (cap > ctx) cap = ctx;
        if (!k->cache || wk_kv_cache_reserve(k->cache, cap) != WK_OK) {
            wk_clear_error();
            wk_kv_cache_free(k->cache);
            k->n = 0;
            if (!(k->cache = wk_kv_cache_new(g->m, cap))) return wk_last_status();
        }
    }
    int64_t keep = 0, lim = k->n < g->nh - 1 ? k->n : g->nh - 1;
    if (lim > wk_kv_cache_len(k->cache)) lim = wk_kv_cache_len(k->cache);
    while (keep < lim && k->ids[keep] == g->ids[keep]) keep++;
    wk_status s = wk_kv_cache_truncate(k->cache, keep);
    if (s) return wk__err(s, op, "%s", wk_last_error());
    k->n = keep;
    g->n_skip = keep;
    g->cache = k->cache;
    return WK_OK;
}

int wk__gen_eos_ids(const wk_lm *m, bool chat, int32_t *eos, int cap) {
    const wk_lm_config *cfg = wk_lm_config_of(m);
    const wk_tokenizer *tok = wk_lm_tokenizer(m);
    int n = 0;
    if (cfg && cfg->eos >= 0 && n < cap) eos[n++] = cfg->eos;
    if (tok && wk_tokenizer_eos(tok) >= 0 && n < cap) eos[n++] = wk_tokenizer_eos(tok);
    /* the end-of-turn tokens of the families' templates */
    static const char *const turn_ends[] = {"<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>"};
    for (size_t i = 0; tok && chat && i < sizeof turn_ends / sizeof *turn_ends; i++) {
        int32_t id = wk_tokenizer_find(tok, turn_ends[i]);
        if (id >= 0 && n < cap) eos[n++] = id;
    }
    return n;
}

/* wk_gen_start with the caller's name for errors and its start time; text
 * rendered: the prompt is a chat template's output (kept: over its cache). */
static wk_gen *gen_start(const wk_lm *m, const char *prompt, const wk_generate_opts *opts, const char *op,
                         double t0, bool rendered, wk__gen_kept *kept) {
    wk_generate_opts defaults;
    if (!opts) wk_generate_opts_default(&defaults);
    const wk_generate_opts *o = opts ? opts : &defaults;
    if (check_opts(m, prompt, o, op)) return NULL;
    const wk_lm_config *cfg = wk_lm_config_of(m);
    const wk_tokenizer *tok = wk_lm_tokenizer(m);
    if (!cfg || !tok) {
        wk__err(WK_ERR_ARG, op, "the model has no %s", cfg ? "tokenizer" : "config");
        return NULL;
    }
    wk_gen *g = calloc(1, sizeof *g);
    if (!g) {
        wk__err(WK_ERR_OOM, op, "no memory for a generation session");
        return NULL;
    }
    g->m = m;
    g->tok = tok;
    g->t0 = t0;
    g->kept = kept;
    g->growable = kept != NULL;
    g->stats.stop_reason = WK_STOP_NONE;
    char *text = NULL;
    int64_t ctx = cfg->max_ctx, room = 0;
    if (o->max_ctx > 0 && o->max_ctx < ctx) ctx = o->max_ctx;
    g->ctx = ctx;
    g->fixed_ctx = o->max_ctx > 0;
    if (copy_stops(g, o, op)) goto fail;
    if (!(g->sampler = wk_sampler_new(&o->sampling))) goto fail;
    const bool chat = rendered || o->chat;
    if (!rendered && chat_text(m, prompt, o, &text, op)) goto fail;
    wk_status s = tokenize(g, text ? text : prompt, chat, ctx, &room, op);
    free(text);
    if (s) goto fail;
    const int64_t n_prompt = g->nh;
    g->limit_is_callers = o->max_new_tokens > 0 && o->max_new_tokens <= room;
    g->max_new = o->max_new_tokens > 0 && o->max_new_tokens < room ? o->max_new_tokens : room;

    if (o->stop_at_eos) g->n_eos = wk__gen_eos_ids(m, chat, g->eos, (int)(sizeof g->eos / sizeof g->eos[0]));
    g->vocab = cfg->vocab;
    /* wk_token_stream_put's bound for any vocabulary (tokenizer.h) */
    g->piece_cap = 3 * (wk_tokenizer_max_token_bytes(tok) + 4) + 64;
    g->out_cap = g->piece_cap + 1;
    g->logits = malloc((size_t)g->vocab * sizeof *g->logits);
    g->piece = malloc(g->piece_cap);
    g->out = malloc(g->out_cap);
    if (!g->logits || !g->piece || !g->out) {
        wk__err(WK_ERR_OOM, op, "no memory for %lld logits", (long long)g->vocab);
        goto fail;
    }
    g->out[0] = 0;
    g->hold = (wk__stop_text){.stop = (const char *const *)g->stop, .n_stop = o->n_stop, .on_text = out_put, .ctx = g};
    /* every sampled token but the last is run */
    if (kept) {
        /* room for the prompt only: the cache grows as the reply does */
        if (reuse_cache(g, kept, n_prompt, ctx, op)) goto fail;
    } else if (!(g->cache = wk_kv_cache_new(m, n_prompt + g->max_new - 1)))
        goto fail;
    g->stats.n_prompt = n_prompt;
    g->stats.n_prefill = n_prompt - g->n_skip;
    g->need_prefill = true; /* the first step runs the prompt */
    return g;
fail:
    g->reported = true; /* a start that failed is no reply: the keeper hears nothing */
    wk_gen_free(g);
    return NULL;
}

wk_gen *wk_gen_start(const wk_lm *m, const char *prompt, const wk_generate_opts *o) {
    return gen_start(m, prompt, o, OP_START, now_ms(), false, NULL);
}

wk_gen *wk__gen_start_kept(const wk_lm *m, const char *text, const wk_generate_opts *o, const char *op,
                           wk__gen_kept *kept) {
    if (kept->open) {
        wk__err(WK_ERR_ARG, op, "a reply is still open: step it to its end or free it first");
        return NULL;
    }
    wk_gen *g = gen_start(m, text, o, op, now_ms(), true, kept);
    if (g) kept->open = g;
    return g;
}

/* A growable cache that cannot take the next token: twice as long (at
 * most ctx positions), its keys and values copied (wk_kv_cache_reserve),
 * then the token. Where the copy cannot serve (longrope past the original
 * context) a new cache is refilled with every id the old one held, in one
 * batched pass: amortised over the doublings, O(1) per token either way. */
static wk_status grow_and_forward(wk_gen *g) {
    int64_t len = wk_kv_cache_len(g->cache), cap = 2 * wk_kv_cache_capacity(g->cache);
    if (cap > g->ctx) cap = g->ctx;
    if (wk_kv_cache_reserve(g->cache, cap) == WK_OK) return forward(g, &g->last, 1);
    wk_clear_error();
    wk_kv_cache *c = wk_kv_cache_new(g->m, cap);
    if (!c) return wk_last_status();
    wk_kv_cache_free(g->cache);
    g->cache = c;
    if (g->kept) {
        g->kept->cache = c;
        g->kept->n = 0;
    }
    g->stats.n_refill += len;
    return forward(g, g->ids, len + 1); /* g->ids[len] is the token to run */
}

/* An error inside a step ends the session. */
static wk_status step_failed(wk_gen *g, wk_status s) {
    g->ended = g->failed = true;
    g->stats.stop_reason = WK_STOP_NONE;
    g->n_out = 0;
    g->out[0] = 0;
    report(g);
    return s;
}

wk_status wk_gen_step(wk_gen *g, wk_gen_token *out) {
    if (out) *out = (wk_gen_token){.id = -1, .text = "", .n_text = 0, .stop = WK_STOP_NONE};
    if (!g || !out) return wk__err(WK_ERR_ARG, OP_STEP, "%s is NULL", !g ? "the session" : "out");
    if (g->ended)
        return wk__err(WK_ERR_ARG, OP_STEP, "the session has ended (%s); start another",
                       g->failed ? "after an error" : "its stop rule was met");
    g->n_out = 0;
    g->out[0] = 0;
    wk_status s;
    if (g->need_prefill) {
        g->need_prefill = false;
        const double t_pf = now_ms();
        if ((s = forward(g, g->ids + g->n_skip, g->nh - g->n_skip))) return step_failed(g, s);
        g->stats.prefill_ms = now_ms() - t_pf;
    } else if (g->need_forward) {
        g->need_forward = false;
        if (g->growable && wk_kv_cache_len(g->cache) >= wk_kv_cache_capacity(g->cache)) s = grow_and_forward(g);
        else s = forward(g, &g->last, 1);
        if (s) return step_failed(g, s);
    }
    int32_t id = wk_sampler_sample(g->sampler, g->logits, g->vocab, g->ids, g->nh);
    if (id < 0) return step_failed(g, wk_last_status());
    if (g->stats.n_generated++ == 0) {
        g->t_dec = now_ms();
        g->stats.first_token_ms = g->t_dec - g->t0;
    }
    wk_stop_reason r = WK_STOP_NONE;
    int rc = WK__TEXT_GO_ON;
    if (is_eos(g, id)) r = WK_STOP_EOS;
    else {
        g->ids[g->nh++] = id;
        int64_t np = wk_token_stream_put(g->tok, &g->ts, id, true, g->piece, g->piece_cap);
        if (np < 0) return step_failed(g, wk_last_status());
        rc = wk__stop_text_put(&g->hold, g->piece, (size_t)np);
        if (rc == WK__TEXT_STOP_STRING) r = WK_STOP_STRING;
        else if (g->stats.n_generated >= g->max_new)
            /* the caller's limit, or the context's when that came first */
            r = g->limit_is_callers ? WK_STOP_MAX_TOKENS : WK_STOP_CONTEXT_FULL;
    }
    if (rc == WK__TEXT_GO_ON && r != WK_STOP_NONE) {
        /* the end of the text: the UTF-8 held back, then the stop holdback */
        int64_t np = wk_token_stream_flush(&g->ts, g->piece, g->piece_cap);
        if (np < 0) return step_failed(g, wk_last_status());
        rc = wk__stop_text_put(&g->hold, g->piece, (size_t)np);
        if (rc == WK__TEXT_GO_ON) rc = wk__stop_text_finish(&g->hold);
        if (rc == WK__TEXT_STOP_STRING) r = WK_STOP_STRING;
    }
    /* stop_text's own OOM, or the step buffer's (its sink returned nonzero) */
    if (g->out_oom || (rc != WK__TEXT_GO_ON && rc != WK__TEXT_STOP_STRING))
        return step_failed(g, wk__err(WK_ERR_OOM, OP_STEP, "no memory for the generated text"));
    /* a reply's text, for its keeper (its own OOM drops the reply, not the step) */
    if (g->kept && g->n_out && !g->reply_oom) {
        if (g->n_reply + g->n_out + 1 > g->reply_cap) {
            size_t cap = (g->n_reply + g->n_out + 1) * 2;
            char *b = realloc(g->reply, cap);
            if (!b) g->reply_oom = true;
            else {
                g->reply = b;
                g->reply_cap = cap;
            }
        }
        if (!g->reply_oom) {
            memcpy(g->reply + g->n_reply, g->out, g->n_out + 1);
            g->n_reply += g->n_out;
        }
    }
    if (r == WK_STOP_NONE) {
        g->last = id;
        g->need_forward = true;
    } else {
        g->ended = true;
        g->stats.stop_reason = r;
    }
    g->stats.decode_ms = now_ms() - g->t_dec;
    if (g->ended) report(g);
    *out = (wk_gen_token){.id = id, .text = g->out, .n_text = g->n_out, .stop = r};
    return WK_OK;
}

void wk_gen_stats(const wk_gen *g, wk_generate_stats *st) {
    if (!st) return;
    if (g) *st = g->stats;
    else *st = (wk_generate_stats){.stop_reason = WK_STOP_NONE};
}

wk_stop_reason wk_gen_stop_reason(const wk_gen *g) { return g ? g->stats.stop_reason : WK_STOP_NONE; }

wk_status wk_generate(const wk_lm *m, const char *prompt, const wk_generate_opts *o, wk_generate_stats *st) {
    const double t0 = now_ms();
    wk_generate_stats stats = {.stop_reason = WK_STOP_NONE};
    wk_status s = WK_OK;
    wk_gen *g = NULL;
    if (!o) s = wk__err(WK_ERR_ARG, OP_GEN, "%s is NULL", !m ? "the model" : !prompt ? "the prompt" : "the options");
    else if (!(g = gen_start(m, prompt, o, OP_GEN, t0, false, NULL))) s = wk_last_status();
    bool stopped_by_callback = false;
    while (g) {
        wk_gen_token t;
        if ((s = wk_gen_step(g, &t))) break;
        if (t.n_text && o->on_text && o->on_text(o->ctx, t.text, t.n_text)) {
            stopped_by_callback = true;
            break;
        }
        if (t.stop != WK_STOP_NONE) break;
    }
    if (g) {
        wk_gen_stats(g, &stats);
        if (stopped_by_callback) stats.stop_reason = WK_STOP_CALLBACK;
        wk_gen_free(g);
    }
    if (st) *st = stats;
    return s;
}
