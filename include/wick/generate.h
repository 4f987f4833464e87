/* Sampling and text generation over a wk_llama. */
#ifndef WICK_GENERATE_H
#define WICK_GENERATE_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "wick/llama.h"

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

/* n_generated counts every sampled token (an EOS that ended the text too).
 * prefill_ms: the prompt's forward pass and logits read-back. first_token_ms:
 * from the call until the first token is sampled (tokenizing included).
 * decode_ms: from then to the end, n_generated - 1 forward passes with their
 * sampling (the last token is never run), so decode tokens/s is
 * (n_generated - 1) / decode_ms. */
typedef struct wk_generate_stats {
    int64_t n_prompt, n_generated;
    double prefill_ms, decode_ms, first_token_ms;
    int stop_reason; /* 0 max tokens, 1 eos, 2 stop string, 3 callback, 4 context full */
} wk_generate_stats;

/* Tokenize prompt (special tokens parsed, BOS as the model says), prefill in
 * one batch, then sample token by token into a fresh KV cache. The sampler's
 * history (repetition penalty) is the prompt then the generated ids. EOS:
 * the config's and the tokenizer's eos, and <|im_end|> with chat. Control
 * tokens are not printed. st may be NULL (it is filled as far as generation
 * got, also on an error). WK_ERR_ARG when the prompt does not fit the
 * context, the chat template is not one wk_chat_render knows, or an
 * option is bad (an empty stop string, bad sampling options). */
wk_status wk_generate(const wk_llama *m, const char *prompt, const wk_generate_opts *o, wk_generate_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* WICK_GENERATE_H */
