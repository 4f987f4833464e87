/* The pieces of OpenAI's response objects that `wick serve` writes both
 * whole (one JSON reply) and streamed (server-sent event chunks). */
#ifndef WICK_TOOLS_SERVE_FMT_H
#define WICK_TOOLS_SERVE_FMT_H
#include "tools/serve_job.h"
#include "tools/serve_json.h"
#include "wick/tokenizer.h"

/* "stop" or "length" (the context filling up counts as length, as OpenAI's). */
const char *wk__finish_reason(wk_stop_reason r);
/* {"id":id,"object":object,"created":created,"model":model  (no closing brace) */
void wk__fmt_head(wk__sbuf *b, const char *id, const char *object, int64_t created, const char *model);
/* "usage":{...} preceded by a comma */
void wk__fmt_usage(wk__sbuf *b, int64_t prompt, int64_t completion);
/* Chat's logprobs.content[] entry for one token: {"token","logprob","bytes","top_logprobs":[...]} */
void wk__fmt_lp_chat(wk__sbuf *b, const wk_tokenizer *t, const wk__job_ev *ev);

/* The legacy completions logprobs: four parallel arrays built token by token. */
typedef struct wk__lp_cmpl {
    wk__sbuf tokens, token_logprobs, top_logprobs, text_offset;
    int64_t n;
} wk__lp_cmpl;
void wk__lp_cmpl_add(wk__lp_cmpl *l, const wk_tokenizer *t, const wk__job_ev *ev, int64_t offset);
/* {"tokens":[...],...} */
void wk__lp_cmpl_write(wk__sbuf *b, const wk__lp_cmpl *l);
void wk__lp_cmpl_free(wk__lp_cmpl *l);

#endif
