/* Sampling and text generation over a wk_lm. */
#ifndef WICK_GENERATE_H
#define WICK_GENERATE_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "wick/lm.h"
#include "wick/chat.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_sampler_opts {
    double temperature;    /* <= 0: greedy (argmax, lowest id on ties) */
    int64_t top_k;         /* <= 0: off */
    double top_p;          /* >= 1: off */
    double min_p;          /* <= 0: off; keep p >= min_p * p_max */
    double repeat_penalty; /* 1: off; llama.cpp's rule over the last repeat_last_n ids */
    int64_t repeat_last_n;
    uint64_t seed;         /* the same seed and inputs give the same ids */
} wk_sampler_opts;
/* temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1,
 * repeat_last_n 64 (0: off, < 0: the whole history), seed 0 (llama.cpp's
 * defaults, but a fixed seed). wk_sampler_new refuses top_p <= 0, min_p > 1,
 * repeat_penalty <= 0 and NaNs (WK_ERR_ARG). */
void wk_sampler_opts_default(wk_sampler_opts *o);

typedef struct wk_sampler wk_sampler;
wk_sampler *wk_sampler_new(const wk_sampler_opts *o);
void wk_sampler_free(wk_sampler *s);
/* Pick the next id from n logits (f32, host memory), penalising ids in
 * history[0..nh). Returns the id, or -1 on error (a NaN or +inf logit, all
 * -inf, a history id out of range). Candidates are ordered by logit, the
 * lower id first on ties, and drawn with xoshiro256**: the same seed and
 * logits give the same ids on every machine. */
int32_t wk_sampler_sample(wk_sampler *s, const float *logits, int64_t n, const int32_t *history, int64_t nh);

/* Render a chat prompt with the model's template: ChatML-style templates
 * (<|im_start|>role\ncontent<|im_end|>\n, as SmolLM2's) are recognised;
 * system may be NULL. Returns bytes needed (may exceed cap), or -1 when the
 * template is not one wick can render. */
int64_t wk_chat_render(const char *tmpl, const char *system, const char *user, char *out, size_t cap);
/* The length excludes the NUL, written when it fits; the generation prompt
 * <|im_start|>assistant\n always ends the text. A NULL system takes the
 * template's own default system message (a literal
 * '<|im_start|>system\n...<|im_end|>' in its text, as SmolLM2's), if any. */

typedef struct wk_generate_opts {
    int64_t max_new_tokens;       /* <= 0: until EOS or the context is full */
    wk_sampler_opts sampling;
    const char *const *stop;      /* stop strings (not printed), n_stop of them */
    int n_stop;
    bool chat;                    /* wrap the prompt in the chat template */
    bool stop_at_eos;             /* default true via wk_generate_opts_default */
    /* streamed text: complete UTF-8 only; return nonzero to stop early */
    int (*on_text)(void *ctx, const char *bytes, size_t n);
    void *ctx;
    const char *system;           /* chat: the system message; NULL: the template's default */
    int64_t max_ctx;              /* <= 0: the model's context; else at most this many positions */
} wk_generate_opts;
/* max_new_tokens 128, wk_sampler_opts_default, stop_at_eos true; no stop
 * strings, no chat, no callback, the model's whole context. */
void wk_generate_opts_default(wk_generate_opts *o);

/* Why generation ended. The values are stable (wk_generate_stats used the
 * plain numbers 0..4 before the enum was named). */
typedef enum wk_stop_reason {
    WK_STOP_NONE = -1,        /* not ended yet (or it failed with an error) */
    WK_STOP_MAX_TOKENS = 0,   /* max_new_tokens were sampled */
    WK_STOP_EOS = 1,          /* an end-of-sequence id was sampled (stop_at_eos) */
    WK_STOP_STRING = 2,       /* a stop string completed; the text ends before it */
    WK_STOP_CALLBACK = 3,     /* on_text returned nonzero (wk_generate), or the caller closed it */
    WK_STOP_CONTEXT_FULL = 4  /* the context (or max_ctx) could take no more tokens */
} wk_stop_reason;

/* n_generated counts every sampled token (an EOS that ended the text too).
 * prefill_ms: the prompt's forward pass and logits read-back. first_token_ms:
 * from the call (wk_generate, or wk_gen_start) until the first token is
 * sampled (tokenizing included). decode_ms: from then to the end of the last
 * step, n_generated - 1 forward passes with their sampling (the last token
 * is never run), so decode tokens/s is (n_generated - 1) / decode_ms.
 * stop_reason: WK_STOP_NONE until generation ended, and after an error. */
/* n_prefill: the prompt tokens the prefill ran (n_prompt for wk_generate /
 * wk_gen_start; for a chat session's reply only those after the
 * conversation prefix its KV cache held). n_refill: tokens run again
 * because a chat session's cache grew during the reply and its keys could
 * not be copied (longrope past the original context; 0 otherwise). */
typedef struct wk_generate_stats {
    int64_t n_prompt, n_generated;
    double prefill_ms, decode_ms, first_token_ms;
    wk_stop_reason stop_reason;
    int64_t n_prefill, n_refill;
} wk_generate_stats;

/* Tokenize prompt (special tokens parsed, BOS as the model says), prefill in
 * one batch, then sample token by token into a fresh KV cache. The sampler's
 * history (repetition penalty) is the prompt then the generated ids. EOS:
 * the config's and the tokenizer's eos, and <|im_end|> with chat. Control
 * tokens are not printed. st may be NULL (it is filled as far as generation
 * got, also on an error). WK_ERR_ARG when the prompt does not fit the
 * context, the chat template is not one wk_chat_render knows, or an
 * option is bad (an empty stop string, bad sampling options).
 * A loop over the step API below: wk_gen_start, wk_gen_step until the
 * session ends, each step's text passed to o->on_text (when it is not empty;
 * a nonzero return ends generation with WK_STOP_CALLBACK). */
wk_status wk_generate(const wk_lm *m, const char *prompt, const wk_generate_opts *o, wk_generate_stats *st);

/* ---- the step API: one generation session, driven a token at a time ----
 *
 * A session owns everything one sequence needs: a private copy of the stop
 * strings, its KV cache, sampler, id history and text buffers; nothing is
 * global. The model is only read, so any number of sessions may run over one
 * wk_lm at once, each from its own thread (wk_lm_forward's rule). One
 * session must not be used by two threads at the same time; it may move
 * between threads between calls (errors are reported on the calling thread,
 * wk_last_error). The model must outlive its sessions.
 *
 *   wk_gen *g = wk_gen_start(m, prompt, &o);        // NULL: wk_last_error()
 *   wk_gen_token t;
 *   do {
 *       if (wk_gen_step(g, &t) != WK_OK) break;     // an error
 *       fwrite(t.text, 1, t.n_text, stdout);
 *   } while (t.stop == WK_STOP_NONE);
 *   wk_gen_free(g);
 */
typedef struct wk_gen wk_gen;

/* What one step produced. */
typedef struct wk_gen_token {
    int32_t id;          /* the id sampled by this step (an EOS too); -1 after an error */
    const char *text;    /* the text that became printable with this step: complete UTF-8, */
    size_t n_text;       /* n_text bytes (may be 0), NUL-terminated; held back while it may */
                         /* still begin a stop string; valid until the next step or free */
    wk_stop_reason stop; /* WK_STOP_NONE: go on; else this step ended generation (text is final) */
} wk_gen_token;

/* Check the options, render the chat template (o->chat), tokenize, make a
 * fresh KV cache (for the prompt and every token that may be sampled) and
 * the sampler. The model is not run yet: the first wk_gen_step runs the
 * prompt in one batch (prefill_ms), so starting is cheap and every error a
 * start can have (a prompt too long, bad options, no memory) comes before
 * any compute. o NULL: the defaults (wk_generate_opts_default); o->on_text
 * and o->ctx are not used (each step hands back its text); the stop strings
 * and system message are copied. Returns NULL on error with wk_last_error
 * set (the errors of wk_generate). */
wk_gen *wk_gen_start(const wk_lm *m, const char *prompt, const wk_generate_opts *o);
/* Run the model (the first step: the prompt; later ones: the token the
 * step before sampled), sample one token and apply the stop rules: EOS, a
 * completed stop string, max_new_tokens, the context full. WK_OK with *out
 * filled; out->stop tells whether this step ended the session. WK_ERR_ARG for NULL arguments or a
 * session that already ended (it then stays as it was); any other error
 * (a forward pass, the sampler, memory) ends the session, and later steps
 * return WK_ERR_ARG. */
wk_status wk_gen_step(wk_gen *g, wk_gen_token *out);
/* The statistics so far (wk_generate_stats' meanings; zeros for NULL). */
void wk_gen_stats(const wk_gen *g, wk_generate_stats *st);
/* WK_STOP_NONE while the session can step (and for NULL, or after an error). */
wk_stop_reason wk_gen_stop_reason(const wk_gen *g);
/* Frees the session (its KV cache included); NULL is fine. */
void wk_gen_free(wk_gen *g);

/* ---- chat sessions: a multi-turn conversation over one KV cache ----
 *
 * A session holds the messages of one conversation and a KV cache that
 * outlives each reply, with the ids it holds. A reply renders the WHOLE
 * conversation with the model's chat template (add_generation_prompt),
 * tokenizes it, keeps the longest prefix of those ids the cache already
 * holds (at least the last prompt token is run again, for its logits) and
 * prefills only the rest: turn k costs its new tokens, not the history.
 * Because every reply is computed from the rendered conversation, the kept
 * cache is only a shortcut: a reply is the reply a fresh session would give
 * for the same messages and options, bit for bit (the forward pass is
 * chunk-invariant, wk_lm_forward_batch), whatever the template does to
 * earlier turns.
 *
 *   wk_chat_session *s = wk_chat_session_new(m, &o);  // o->system: a first system message
 *   wk_chat_session_add(s, "user", "Hi!");
 *   wk_gen *g = wk_chat_session_reply(s);              // step it as any wk_gen
 *   ... wk_gen_step until t.stop != WK_STOP_NONE ...
 *   wk_gen_free(g);                                    // the reply is now an assistant message
 *   wk_chat_session_add(s, "user", "And then?");  ...
 *   wk_chat_session_free(s);
 *
 * The context: a conversation uses at most o->max_ctx positions (<= 0: the
 * model's). With o->max_ctx > 0 the cache is allocated once, that long;
 * with 0 it starts small (256 positions, or the prompt) and grows by
 * doubling up to the model's context, also during a reply: a grown cache
 * keeps its keys and values (wk_kv_cache_reserve copies them; nothing runs
 * again), except where a copy cannot serve (Phi-3's longrope past the
 * original context): that cache is refilled with the whole conversation in
 * one batch (shown in n_prefill, or n_refill during a reply). When the
 * rendered conversation plus one reply
 * token no longer fits, wk_chat_session_reply fails with WK_ERR_ARG saying
 * so; nothing is dropped behind the caller's back: pop or reset turns
 * (wk_chat_session_pop / _reset) and try again. A reply that fills the
 * context ends with WK_STOP_CONTEXT_FULL, as wk_gen_step's do.
 *
 * Options (copied at wk_chat_session_new): sampling, stop strings,
 * stop_at_eos, max_new_tokens (per reply) and max_ctx as for wk_gen_start;
 * chat is implied (the families' end-of-turn tokens end a reply); on_text
 * and ctx are not used. Every reply samples with the same seed, so a reply
 * depends only on the conversation and the options. Template clock
 * (strftime_now) is pinned when the session is made, so renders of one
 * session agree with each other.
 *
 * Threads: one session at a time per thread (as a wk_gen); the model may be
 * shared by any number of sessions. */
typedef struct wk_chat_session wk_chat_session;

/* NULL with wk_last_error when the model has no chat template or
 * tokenizer, the template does not compile, or an option is bad. o NULL:
 * wk_generate_opts_default. */
wk_chat_session *wk_chat_session_new(const wk_lm *m, const wk_generate_opts *o);
/* Frees the session, its messages and its cache. A reply still open is
 * detached (it keeps working, owning the cache, and is freed by
 * wk_gen_free as usual; its text goes nowhere). NULL is fine. */
void wk_chat_session_free(wk_chat_session *s);

/* Append a message (role "system", "user", "assistant", "tool" or
 * whatever the template knows; both strings are copied). WK_ERR_ARG for
 * NULL / empty role, NULL content, or while a reply is open. */
wk_status wk_chat_session_add(wk_chat_session *s, const char *role, const char *content);
/* Drop the last message (WK_ERR_ARG when there is none or a reply is
 * open): to retry a turn after an error, or to regenerate a reply. */
wk_status wk_chat_session_pop(wk_chat_session *s);
/* Forget every message but the system message given at creation. The
 * cache is kept: the next reply still reuses the common prefix (the
 * system prompt). WK_ERR_ARG while a reply is open. */
wk_status wk_chat_session_reset(wk_chat_session *s);

/* Start the assistant's reply to the conversation so far: a wk_gen to drive
 * with wk_gen_step / wk_gen_stats / wk_gen_free (its stats: n_prompt is the
 * whole rendered conversation, n_prefill the tokens the prefill ran). When
 * the reply ends (its last step), or when it is freed before that, the text
 * its steps handed back becomes an "assistant" message; a reply that
 * failed adds nothing (the cache is kept consistent either way). One reply
 * open at a time: NULL (WK_ERR_ARG) while another is; NULL with
 * wk_last_error for a conversation that no longer fits, a template error
 * (raise_exception: roles not alternating, ...) and the like. */
wk_gen *wk_chat_session_reply(wk_chat_session *s);

/* The messages so far (borrowed: valid until the session changes; *n set),
 * or NULL with *n 0 when there are none. */
const wk_chat_message *wk_chat_session_messages(const wk_chat_session *s, size_t *n);
/* Positions of the KV cache in use (the ids it holds), and its capacity. */
int64_t wk_chat_session_cached(const wk_chat_session *s);
int64_t wk_chat_session_capacity(const wk_chat_session *s);

/* Perplexity as llama.cpp's llama-perplexity measures it: ids cut into
 * floor(n / ctx) chunks, each run alone from position 0 with its first id
 * replaced by bos (>= 0; -1 keeps it: pass the BOS id where the model adds
 * one, wk_tokenizer_adds_bos), the second half of each chunk scored by
 * -log softmax of the next id. WK_ERR_ARG when n < ctx or ctx is outside
 * [4, the model's context]. */
typedef struct wk_perplexity {
    double ppl;     /* exp(nll) */
    double nll;     /* mean negative log-likelihood per scored token */
    int64_t chunks; /* chunks run */
    int64_t scored; /* tokens scored: chunks * (ctx/2 - 1) */
} wk_perplexity;
wk_status wk_lm_perplexity(const wk_lm *m, const int32_t *ids, int64_t n, int64_t ctx, int32_t bos,
                           wk_perplexity *out);

#ifdef __cplusplus
}
#endif
#endif /* WICK_GENERATE_H */
