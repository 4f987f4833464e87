/* The serving engine's parts (include/wick/serve.h), shared by the files of
 * src/serve/engine*.c, each with one job:
 *   engine.c        the handle: new / free, submit, cancel, stats, shutdown,
 *                   wait_idle, the engine thread;
 *   engine_queue.c  the FIFO of requests waiting for a slot;
 *   engine_step.c   one step: admit, build the ragged batch, one forward,
 *                   hand each sequence's logits on;
 *   engine_req.c    one request: options copied at submit, freed at its end;
 *   engine_sample.c grammar mask, logprobs, sampling of one sequence;
 *   engine_text.c   the sampled id's text and the stop rules;
 *   engine_kv.c     KV caches of the slots (the one place that knows how
 *                   they are made, reset and shared).
 *
 * Locking: one mutex (mu) guards the queue, the slot table, every
 * request's cancel flag, the stats and the shutdown flags. Only the
 * stepping thread (the engine thread, or the caller of wk_engine_step under
 * step_mu) changes a running request's other fields, and it calls the
 * callbacks with mu released, so a callback may call wk_engine_cancel. */
#ifndef WICK_SERVE_ENGINE_INTERNAL_H
#define WICK_SERVE_ENGINE_INTERNAL_H
#include "wick/serve.h"
#include "model/stop_text.h"
#include <pthread.h>

enum { WK__ENGINE_MAX_EOS = 8, WK__ENGINE_MAX_TOP = 20 };

typedef struct wk__req wk__req;
struct wk__req {
    int64_t id;
    wk__req *next;          /* the queue's link */
    wk_engine_cb cb;
    void *ctx;
    /* options (stop strings copied into one allocation) */
    wk_request_opts o;
    char **stop;
    /* the prompt then every sampled id but an EOS: the sampler's history */
    int32_t *ids;
    int64_t n_prompt, nh, cap;
    int64_t max_new;        /* tokens it may sample: max_tokens or the context's room */
    bool limit_is_callers;  /* max_new is the caller's max_tokens */
    int32_t eos[WK__ENGINE_MAX_EOS];
    int n_eos;
    /* progress */
    int slot;               /* -1 while queued */
    int64_t n_fed;          /* prompt ids run through the model so far */
    int64_t n_cached;       /* prompt ids the KV layer already held at admission */
    int64_t n_generated;
    int32_t last;           /* the sampled id still to run (decoding) */
    bool cancelled;         /* under mu */
    bool in_batch;          /* build's mark while it picks prefill chunks */
    /* sampling */
    wk_sampler *sampler;
    wk_grammar_state *gs;
    uint8_t *allowed;       /* the grammar's mask for the next id (vocab bytes) */
    int64_t n_allowed;      /* -1: not computed yet */
    /* text */
    wk_token_stream ts;
    wk__stop_text hold;
    char *piece;
    size_t piece_cap;
    char *out;              /* this step's final text, NUL-terminated */
    size_t n_out, out_cap;
    size_t n_tok_text;      /* out[0..n_tok_text): the token's own text; the rest was flushed at the end
                             * (held-back UTF-8 and stop-string prefix) and goes with WK_EV_DONE */
    bool out_oom;
};

/* The KV layer (engine_kv.c): per slot a cache; acquire makes it ready for
 * a request (WK_ERR_BUSY: no room now, the request stays queued), release
 * hands it back. */
typedef struct wk__engine_kv wk__engine_kv;
wk__engine_kv *wk__engine_kv_new(const wk_lm *m, int slots, int64_t ctx, const wk_engine_opts *o);
void wk__engine_kv_free(wk__engine_kv *kv);
/* Ready slot's cache for r (prompt + max_new positions); sets r->n_cached
 * (prompt ids already there: at most n_prompt - 1, the last is always run). */
wk_status wk__engine_kv_acquire(wk__engine_kv *kv, int slot, wk__req *r);
void wk__engine_kv_release(wk__engine_kv *kv, int slot);
wk_kv_cache *wk__engine_kv_cache(wk__engine_kv *kv, int slot);
/* blocks: total, used by running sequences, held only for prefix reuse */
void wk__engine_kv_usage(const wk__engine_kv *kv, int64_t *total, int64_t *used, int64_t *cached);

/* The queue (engine_queue.c): FIFO, singly linked. */
typedef struct wk__queue {
    wk__req *head, *tail;
    int64_t n;
} wk__queue;
void wk__queue_push(wk__queue *q, wk__req *r);
wk__req *wk__queue_pop(wk__queue *q);
/* Unlink r (true when it was there). */
bool wk__queue_remove(wk__queue *q, wk__req *r);
wk__req *wk__queue_find(const wk__queue *q, int64_t id);

struct wk_engine {
    const wk_lm *m;
    const wk_tokenizer *tok; /* may be NULL: ids only, no text */
    wk_engine_opts o;
    int64_t ctx, vocab;
    wk__engine_kv *kv;
    pthread_mutex_t mu, step_mu;
    pthread_cond_t work_cv;  /* the engine thread waits here for work */
    pthread_cond_t idle_cv;  /* wait_idle waits here */
    pthread_t thread;
    bool has_thread;
    bool stopping;           /* free: the thread ends once nothing runs */
    bool shut;               /* shutdown: submit refuses */
    int64_t next_id;
    wk__queue queue;
    wk__req **slots;         /* o.slots entries, NULL: free */
    int64_t running;         /* requests in slots */
    int64_t inflight;        /* submitted, last event not delivered yet */
    int64_t admit_seq;       /* admission order of the slots (prefill goes FIFO) */
    int64_t *admitted_at;
    wk_engine_stats st;      /* counters (running/queued/kv filled in on read) */
    /* the stepping thread's buffers */
    wk_lm_seq *seqs;
    wk__req **batch;
    float *logits;           /* rows x vocab, grown as needed */
    int64_t logits_rows;
    double *lp;              /* vocab: one row's log softmax */
};

/* engine_req.c */
wk__req *wk__req_new(wk_engine *e, const int32_t *ids, int64_t n, const wk_request_opts *o, wk_engine_cb cb,
                     void *ctx);
void wk__req_free(wk__req *r);

/* engine_step.c: one step (the caller holds step_mu). Returns the requests
 * running or queued after it, or -1 when the forward failed. */
int64_t wk__engine_step(wk_engine *e);
/* Send DONE / ERROR for r and free it (mu not held; r already out of the
 * queue and its slot). */
void wk__engine_finish(wk_engine *e, wk__req *r, wk_stop_reason stop, wk_status err, const char *msg);

/* engine_sample.c: sample r's next id from its logits row (the grammar
 * mask, then the logprobs it asked for into ev, then its sampler). -1 with
 * wk_last_error on error. */
int32_t wk__engine_sample(wk_engine *e, wk__req *r, float *logits, wk_engine_event *ev, int32_t *top_ids,
                          float *top_lp);

/* engine_text.c: take the sampled id: history, grammar, text, stop rules.
 * Sets r->out / n_out (the text to hand on) and returns the stop reason
 * (WK_STOP_NONE: go on), or -2 with wk_last_error on error. */
int wk__engine_take(wk_engine *e, wk__req *r, int32_t id);
/* The text sink of r->hold. */
int wk__engine_out_put(void *ctx, const char *bytes, size_t n);

#endif
