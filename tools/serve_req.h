/* `wick serve`'s request bodies: OpenAI's chat/completions, completions
 * and embeddings JSON read with wick's strict pull parser (src/io/json.h)
 * into one plain struct. Every wrong type, unknown enum value or value out
 * of range is an error naming the field (the 400 body's message and
 * param); unknown fields are skipped, as OpenAI's server does. */
#ifndef WICK_TOOLS_SERVE_REQ_H
#define WICK_TOOLS_SERVE_REQ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WK__SERVE_MAX_STOPS 16
#define WK__SERVE_MAX_N 16

typedef enum { WK__HREQ_CHAT, WK__HREQ_COMPLETION, WK__HREQ_EMBEDDING } wk__hreq_kind;
typedef enum { WK__FMT_TEXT, WK__FMT_JSON_OBJECT, WK__FMT_JSON_SCHEMA } wk__hreq_format;

typedef struct wk__hreq_msg {
    char *role, *content; /* content: the string, or the text parts joined */
} wk__hreq_msg;

typedef struct wk__hreq {
    wk__hreq_kind kind;
    char *model;
    wk__hreq_msg *msgs;   /* chat */
    int n_msgs;
    char *prompt;        /* completion */
    char **inputs;       /* embeddings */
    int n_inputs;
    bool stream, include_usage, echo;
    bool base64;         /* embeddings: encoding_format "base64" (the openai client's default) */
    bool ignore_eos; /* llama-server's extension: generate past EOS (benchmarks: equal work on both) */
    char *stops[WK__SERVE_MAX_STOPS];
    int n_stops;
    int64_t max_tokens;  /* -1: not given */
    double temperature, top_p, min_p, repeat_penalty;
    int64_t top_k;
    bool has_seed;
    uint64_t seed;
    int n;               /* choices */
    bool logprobs;
    int top_logprobs;
    wk__hreq_format format;
    char *schema;        /* json_schema: the schema object's text */
    char *grammar;       /* GBNF (llama-server's extension) */
} wk__hreq;

/* Parse body[0, n) as a request of this kind into r (zeroed first, then
 * OpenAI's defaults). false: msg holds the problem, param the field's
 * name ("" when it is the body itself); r is freed. */
bool wk__hreq_parse(wk__hreq *r, wk__hreq_kind kind, const char *body, size_t n, char *msg, size_t msglen, char *param,
                   size_t paramlen);
void wk__hreq_free(wk__hreq *r);

#endif
