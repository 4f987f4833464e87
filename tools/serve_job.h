/* One HTTP generation request of `wick serve` while it runs: its n engine
 * requests (one per choice) and the events they sent, queued for the
 * connection's thread.
 *
 * The engine calls wk__job_on_event on its own thread; that must never
 * block on a client, so it only copies the event into the job's queue
 * (a mutex, a condition variable, a growing array) and returns. The
 * connection's thread takes events out with wk__job_wait. A client that
 * reads slowly makes the queue grow; past WK__JOB_MAX_QUEUED bytes the job
 * cancels its engine requests (a client that stopped reading must not make
 * the server hold its output without bound).
 *
 * Lifetime: a reference count, one for the connection and one per engine
 * request until its DONE / ERROR event; the last one frees the job (and
 * the grammar the engine borrowed). */
#ifndef WICK_TOOLS_SERVE_JOB_H
#define WICK_TOOLS_SERVE_JOB_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wick/serve.h"

#define WK__JOB_MAX_QUEUED ((size_t)16 << 20)
#define WK__JOB_MAX_TOP 20

/* One event, copied. */
typedef struct wk__job_ev {
    int choice;
    wk_engine_event_kind kind;
    int32_t id;
    char *text; /* n_text bytes, NUL-terminated (DONE: the held-back tail; ERROR: the message) */
    size_t n_text;
    float logprob;
    int n_top;
    int32_t top_ids[WK__JOB_MAX_TOP];
    float top_logprobs[WK__JOB_MAX_TOP];
    wk_stop_reason stop;
    int64_t n_prompt, n_generated;
    wk_status status;
} wk__job_ev;

typedef struct wk__job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    wk_engine *engine;
    int n;                /* choices */
    int64_t ids[16];      /* engine request ids, -1 until submitted */
    bool ended[16];       /* DONE / ERROR seen */
    int n_ended;
    wk__job_ev *q;        /* queued, not yet taken */
    size_t nq, capq, head;
    size_t queued_bytes;
    bool overflow;        /* the queue passed its cap: cancelled */
    wk_grammar *grammar;  /* owned; the engine borrows it until the last event */
} wk__job;

wk__job *wk__job_new(wk_engine *e, int n, wk_grammar *grammar);
/* The engine callback (ctx: the job). */
void wk__job_on_event(void *ctx, const wk_engine_event *ev);
/* Submit choice i; false with wk_last_error (nothing was queued for it). */
bool wk__job_submit(wk__job *j, int i, const int32_t *ids, int64_t n, const wk_request_opts *o);
/* Take the next event into *ev (the caller frees ev->text), waiting at most
 * timeout_ms. 1: got one; 0: timed out; -1: every choice has ended and the
 * queue is empty. */
int wk__job_wait(wk__job *j, wk__job_ev *ev, int timeout_ms);
/* Cancel the engine requests still running (the client went away). */
void wk__job_cancel(wk__job *j);
/* Drop the connection's reference. */
void wk__job_release(wk__job *j);

#endif
