/* Server-sent events for a streaming generation request: an MHD response
 * whose content reader takes the job's events and writes each as one
 * `data: {chunk}\n\n` event, then `data: [DONE]\n\n`. */
#ifndef WICK_TOOLS_SERVE_STREAM_H
#define WICK_TOOLS_SERVE_STREAM_H
#include "tools/serve.h"
#include "tools/serve_job.h"

typedef struct wk__sse_opts {
    wk__hreq_kind kind;
    int n;
    bool logprobs, include_usage;
    const char *id;    /* copied */
    int64_t created;
    const char *echo;  /* completions with echo: the prompt, sent first (copied) */
} wk__sse_opts;

/* NULL on no memory. The response owns the job's connection reference
 * from then on (released, cancelling what still runs, when MHD frees it). */
struct MHD_Response *wk__sse_response(wk__srv *s, struct MHD_Connection *conn, wk__job *j, const wk__sse_opts *o);

#endif
