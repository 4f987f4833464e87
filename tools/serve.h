/* `wick serve`: the OpenAI-compatible HTTP front over the serving engine
 * (include/wick/serve.h). What its files share: the server's state, the
 * reply a route hands back, and the routes themselves.
 *
 *   serve_main.c    options, loading, signals (SIGTERM drains), main
 *   serve_http.c    libmicrohttpd: connections, body limit, API key, routing
 *   serve_gen.c     chat/completions and completions: prompt, submit, wait
 *   serve_stream.c  server-sent events read from a job by MHD
 *   serve_fmt.c     the OpenAI JSON objects (completions, chunks, logprobs)
 *   serve_misc.c    models, health, metrics, embeddings
 *   serve_req.c     request bodies; serve_job.c the engine -> HTTP queue;
 *   serve_json.c    the JSON writer
 *
 * Why libmicrohttpd: a small, mature C library (GNU, Debian's
 * libmicrohttpd-dev) that brings what a server exposed to clients needs and
 * that is easy to get wrong by hand: its own connection threads, a
 * connection limit, per-connection memory limits and timeouts (slowloris),
 * chunked responses produced by a callback (server-sent events). It is
 * linked only into the CLI, never into libwick. */
#ifndef WICK_TOOLS_SERVE_H
#define WICK_TOOLS_SERVE_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tools/serve_json.h"
#include "tools/serve_req.h"
#include "wick/bert.h"
#include "wick/chat.h"
#include "wick/lm.h"
#include "wick/serve.h"

struct MHD_Connection;
struct MHD_Response;

enum { WK__SRV_LOADING = 0, WK__SRV_READY = 1, WK__SRV_DRAINING = 2 };

/* the endpoints the metrics count by */
enum { WK__EP_CHAT, WK__EP_COMPLETIONS, WK__EP_EMBEDDINGS, WK__EP_MODELS, WK__EP_HEALTH, WK__EP_METRICS, WK__EP_OTHER,
       WK__EP_COUNT };

typedef struct wk__srv {
    wk_lm *lm;
    const wk_tokenizer *tok;
    wk_chat_template *tmpl; /* NULL: the model has none (chat answers 400) */
    char *bos_text, *eos_text;
    wk_engine *engine;
    wk_bert *bert;          /* --embedding-model; NULL without */
    pthread_mutex_t bert_mu;
    char *model_id, *bert_id;
    const char *api_key;
    int64_t max_body, max_prompt, max_tokens_limit, ctx;
    int64_t created;        /* the models' "created" (the server's start) */
    atomic_int state;
    atomic_llong active;    /* requests being answered */
    atomic_ullong seq;      /* ids and seeds of requests that give none */
    pthread_mutex_t metrics_mu;
    int64_t by_status[WK__EP_COUNT][600]; /* requests answered, by endpoint and HTTP status */
} wk__srv;

/* What a route answers: a JSON body (or an SSE stream) with its status. */
typedef struct wk__reply {
    unsigned status;
    char *body; /* malloc'd */
    size_t n;
    const char *ctype;
    int retry_after;               /* > 0: a Retry-After header */
    struct MHD_Response *stream;   /* an SSE response (status 200) instead of body */
    bool hangup;                   /* the client went away: close without answering */
} wk__reply;

/* {"error":{"message","type","param","code"}} with its status. */
void wk__reply_error(wk__reply *r, unsigned status, const char *message, const char *param);
void wk__reply_json(wk__reply *r, unsigned status, wk__sbuf *b); /* takes b's bytes (500 on oom) */

/* routes (conn: for the disconnect check while waiting) */
void wk__srv_generate(wk__srv *s, struct MHD_Connection *conn, wk__hreq_kind kind, const char *body, size_t n,
                      wk__reply *r);
void wk__srv_embeddings(wk__srv *s, const char *body, size_t n, wk__reply *r);
void wk__srv_models(wk__srv *s, wk__reply *r);
void wk__srv_health(wk__srv *s, wk__reply *r);
void wk__srv_metrics(wk__srv *s, wk__reply *r);
void wk__srv_count(wk__srv *s, int endpoint, unsigned status);

/* true when the client closed its end (checked while a reply waits) */
bool wk__conn_gone(struct MHD_Connection *conn);

/* the HTTP daemon (serve_http.c); port 0 picks one, *port gets it */
struct MHD_Daemon;
struct MHD_Daemon *wk__srv_listen(wk__srv *s, const char *host, int *port, int max_conns, int timeout_s);

#endif
