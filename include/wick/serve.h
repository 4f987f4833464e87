/* The serving engine: many generation requests over one model, decoded
 * together (continuous batching).
 *
 * Requests are submitted as token ids with their own sampling settings,
 * stop rules and seed. The engine admits them into slots and runs ONE
 * forward pass per step over a ragged batch (wk_lm_forward_batch): the next
 * chunk of the prompt of sequences still prefilling (chunked prefill, at
 * most max_step_tokens rows per step, so a long prompt never stalls the
 * others' decoding) and one token each for the rest. Every linear layer is
 * one product over all rows; attention runs per sequence over its own
 * cache. Batch-invariant: a request's tokens and logprobs do not depend on
 * what else is in the batch (wk_lm_forward_batch's promise), so a greedy
 * request gives what wk_generate gives for the same ids.
 *
 * KV caches are paged (wk_kv_pool, include/wick/lm.h; src/serve/engine_kv.c):
 * fixed-size blocks from one pool, a block table per request, no
 * per-sequence preallocation of the context. At admission a request
 * attaches the full blocks of its prompt's prefix an earlier request
 * computed (prefix_cache: a shared system prompt or chat history is stored
 * once; n_cached counts them) and takes the blocks for prompt + max_tokens
 * positions, so it can never run out of room mid-way; a request that does
 * not fit waits in the queue (first in, first out). Blocks no request uses
 * are kept for their prefix and evicted least recently used first when the
 * pool runs short. Keys and values are stored in kv_dtype.
 *
 * Threads: wk_engine_new starts one engine thread that runs the steps
 * (manual = true starts none: the caller drives wk_engine_step). submit,
 * cancel, stats and shutdown may be called from any thread at any time.
 * Events reach the caller through its callback ON THE ENGINE THREAD: the
 * callback must be quick and must not block (copy the event into your own
 * queue); it may call wk_engine_cancel, nothing else of the engine.
 *
 *   wk_engine *e = wk_engine_new(m, &eo);
 *   int64_t r = wk_engine_submit(e, ids, n, &ro, on_event, ctx);  // -1: wk_last_error (WK_ERR_BUSY: queue full)
 *   ... on_event(ctx, ev) per token, then one WK_EV_DONE or WK_EV_ERROR ...
 *   wk_engine_free(e);   // cancels what still runs
 */
#ifndef WICK_SERVE_H
#define WICK_SERVE_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "wick/lm.h"
#include "wick/generate.h"
#include "wick/grammar.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_engine wk_engine;

typedef struct wk_engine_opts {
    int slots;               /* sequences running at once (default 8) */
    int64_t ctx;             /* positions one sequence may use, prompt + output (<= 0: the model's context) */
    int64_t max_step_tokens; /* rows one forward step runs, prefill chunks included (default 512) */
    int64_t max_queue;       /* requests waiting for a slot; wk_engine_submit answers WK_ERR_BUSY beyond (default 64) */
    wk_dtype kv_dtype;       /* WK_F32 (0: default), WK_F16, WK_BF16 or WK_Q8_0 (head_dim % 32 == 0) */
    int64_t kv_block;        /* positions per KV block (default 16) */
    int64_t kv_blocks;       /* blocks in the pool (<= 0: enough for slots full contexts) */
    bool prefix_cache;       /* reuse full blocks of a prompt prefix computed before (default true) */
    bool manual;             /* no engine thread: the caller runs wk_engine_step */
} wk_engine_opts;
void wk_engine_opts_default(wk_engine_opts *o);

typedef struct wk_request_opts {
    wk_sampler_opts sampling;     /* temperature 0: greedy; seed: this request's own stream */
    int64_t max_tokens;           /* tokens to generate at most (<= 0: until EOS or the context is full) */
    const char *const *stop;      /* stop strings (copied at submit), n_stop of them */
    int n_stop;
    bool stop_at_eos;             /* default true: the config's and the tokenizer's eos end the text */
    bool end_of_turn;             /* with stop_at_eos, the families' end-of-turn ids (<|im_end|>,
                                   * <end_of_turn>, <|eot_id|>, <|end|>) end it too, as wk_gen_start does
                                   * for a chat prompt (default true: a served prompt usually is one) */
    int top_logprobs;             /* 0..20: the most likely ids and their logprobs with each token */
    bool logprobs;                /* report the sampled token's logprob */
    const wk_grammar *grammar;    /* NULL: free text; else only ids the grammar allows are sampled (borrowed
                                   * until the request's last event) */
} wk_request_opts;
/* wk_sampler_opts_default, max_tokens 128, stop_at_eos, end_of_turn, no stops, no logprobs, no grammar. */
void wk_request_opts_default(wk_request_opts *o);

typedef enum wk_engine_event_kind {
    WK_EV_TOKEN = 0, /* one token sampled */
    WK_EV_DONE = 1,  /* the request ended (stop says why); no more events for it */
    WK_EV_ERROR = 2  /* the request failed (status, error); no more events for it */
} wk_engine_event_kind;

/* Every sampled id gets one WK_EV_TOKEN, an EOS that ends the text too (its text is empty; stop says
 * WK_STOP_EOS). The TOKEN that ends a request carries the reason in stop (WK_STOP_NONE on the others);
 * WK_EV_DONE follows at once with the text that was held back until the end (a stop string's prefix that
 * never completed, an incomplete UTF-8 tail), often empty. So the whole output is the concatenation of
 * every TOKEN's text and the DONE's. A cancelled request gets no more TOKEN events, only DONE (WK_STOP_CALLBACK,
 * empty text: what was held back is dropped). */
typedef struct wk_engine_event {
    wk_engine_event_kind kind;
    int64_t request;        /* the id wk_engine_submit returned */
    /* WK_EV_TOKEN */
    int32_t id;             /* the sampled id */
    const char *text;       /* text that became final with this token (complete UTF-8; held back while it */
    size_t n_text;          /* may still begin a stop string), n_text bytes; valid during the callback */
    float logprob;          /* log softmax of the sampled id (logprobs or top_logprobs): the model's
                             * distribution (the logits as the forward gave them, after the grammar's mask,
                             * before repetition penalty, temperature and top-k / top-p / min-p) */
    int n_top;              /* top_logprobs entries: */
    const int32_t *top_ids; /* ids, most likely first */
    const float *top_logprobs;
    /* WK_EV_DONE: why it ended, with the final text (text held back for a stop string that never completed);
     * WK_EV_TOKEN: the reason when this token ended the request, else WK_STOP_NONE */
    wk_stop_reason stop;
    int64_t n_prompt, n_generated, n_cached; /* n_cached: prompt positions reused from the prefix cache */
    /* WK_EV_ERROR */
    wk_status status;
    const char *error;
} wk_engine_event;

typedef void (*wk_engine_cb)(void *ctx, const wk_engine_event *ev);

/* NULL with wk_last_error for bad options (slots < 1, a kv_dtype the pool cannot store, ctx beyond the
 * model's) or no memory. The model must outlive the engine. */
wk_engine *wk_engine_new(const wk_lm *m, const wk_engine_opts *o);
/* Queue a request of n >= 1 prompt ids. Returns its id (>= 0), or -1 with wk_last_error: WK_ERR_BUSY when
 * max_queue requests already wait or the engine is shutting down, WK_ERR_ARG for bad ids or options or a
 * prompt that leaves no room in ctx. cb gets every event of this request. */
int64_t wk_engine_submit(wk_engine *e, const int32_t *ids, int64_t n, const wk_request_opts *o, wk_engine_cb cb,
                         void *ctx);
/* Ask the engine to drop a request: at its next step it ends with WK_EV_DONE and WK_STOP_CALLBACK, and its
 * slot and blocks are free. Unknown or finished ids are ignored. Returns at once. */
void wk_engine_cancel(wk_engine *e, int64_t request);
/* manual engines: run one step (admit, one forward, sample). Returns the requests still running or
 * queued, or -1 with wk_last_error when the forward itself failed (its requests got WK_EV_ERROR). */
int64_t wk_engine_step(wk_engine *e);

typedef struct wk_engine_stats {
    int64_t running, queued;            /* now */
    int64_t requests_total, requests_failed, requests_cancelled;
    int64_t prompt_tokens, cached_prompt_tokens, generated_tokens;
    int64_t steps;                      /* forward passes run */
    int64_t kv_blocks_total, kv_blocks_used, kv_blocks_cached; /* cached: held only for prefix reuse */
} wk_engine_stats;
/* (Named get_stats: a function named wk_engine_stats would clash with the type's name in C.) */
void wk_engine_get_stats(wk_engine *e, wk_engine_stats *st);

/* Stop accepting requests (submit answers WK_ERR_BUSY); drain: let running and queued requests finish,
 * else cancel them. Returns at once; wk_engine_wait_idle waits for the end. */
void wk_engine_shutdown(wk_engine *e, bool drain);
/* Wait until nothing runs or waits, at most timeout_ms (< 0: forever). true when idle. */
bool wk_engine_wait_idle(wk_engine *e, int64_t timeout_ms);
/* Cancel what still runs, stop the thread, free everything. NULL is fine. */
void wk_engine_free(wk_engine *e);

#ifdef __cplusplus
}
#endif
#endif /* WICK_SERVE_H */
