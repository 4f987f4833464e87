/* Reading OpenAI request bodies (tools/serve_req.h). */
#include "tools/serve_req.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/json.h"

typedef struct {
    wk__json p;
    char *msg, *param;
    size_t msglen, paramlen;
    bool failed;
} rd;

/* The first error wins: what is wrong, and with which field. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static bool bad(rd *r, const char *field, const char *fmt, ...) {
    if (r->failed) return false;
    r->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, r->msglen, fmt, ap);
    va_end(ap);
    snprintf(r->param, r->paramlen, "%s", field);
    return false;
}

/* The parser's own error (malformed JSON), reported once. */
static bool syntax(rd *r) {
    if (r->p.oom) return bad(r, "", "no memory to read the request body");
    return bad(r, "", "the request body is not valid JSON: %s", r->p.msg);
}

static const char *type_name(wk__json_type t) {
    switch (t) {
    case WK__JSON_NULL: return "null";
    case WK__JSON_BOOL: return "a boolean";
    case WK__JSON_NUMBER: return "a number";
    case WK__JSON_STRING: return "a string";
    case WK__JSON_ARRAY: return "an array";
    case WK__JSON_OBJECT: return "an object";
    default: return "not a JSON value";
    }
}

static bool want(rd *r, const char *field, wk__json_type t, const char *what) {
    wk__json_type got = wk__json_peek(&r->p);
    if (got == WK__JSON_BAD) return syntax(r);
    if (got != t) return bad(r, field, "'%s' must be %s, got %s", field, what, type_name(got));
    return true;
}

/* null stands for "not given" in optional fields */
static bool is_null(rd *r) {
    if (wk__json_peek(&r->p) != WK__JSON_NULL) return false;
    wk__json_null(&r->p);
    return true;
}

static bool read_str(rd *r, const char *field, char **out) {
    if (!want(r, field, WK__JSON_STRING, "a string")) return false;
    const char *s;
    size_t len;
    if (!wk__json_string(&r->p, &s, &len)) return syntax(r);
    if (strlen(s) != len) return bad(r, field, "'%s' holds a NUL character (\\u0000), which wick cannot pass on", field);
    char *c = malloc(len + 1);
    if (!c) return bad(r, field, "no memory for '%s'", field);
    memcpy(c, s, len + 1);
    free(*out);
    *out = c;
    return true;
}

static bool read_num(rd *r, const char *field, double lo, double hi, double *out) {
    if (!want(r, field, WK__JSON_NUMBER, "a number")) return false;
    const char *s;
    size_t len;
    if (!wk__json_number_text(&r->p, &s, &len)) return syntax(r);
    char tmp[64];
    if (len >= sizeof tmp) return bad(r, field, "'%s' has too many digits", field);
    memcpy(tmp, s, len);
    tmp[len] = 0;
    double v = strtod(tmp, NULL);
    if (!isfinite(v) || v < lo || v > hi) return bad(r, field, "'%s' must be from %g to %g, got %s", field, lo, hi, tmp);
    *out = v;
    return true;
}

static bool read_int(rd *r, const char *field, int64_t lo, int64_t hi, int64_t *out) {
    if (!want(r, field, WK__JSON_NUMBER, "an integer")) return false;
    int64_t v;
    size_t at = r->p.pos;
    if (!wk__json_int(&r->p, &v)) {
        /* a fraction or an exponent: the field's error, not the body's */
        if (r->p.oom) return syntax(r);
        (void)at;
        return bad(r, field, "'%s' must be an integer", field);
    }
    if (v < lo || v > hi)
        return bad(r, field, "'%s' must be from %lld to %lld, got %lld", field, (long long)lo, (long long)hi, (long long)v);
    *out = v;
    return true;
}

static bool read_bool(rd *r, const char *field, bool *out) {
    if (!want(r, field, WK__JSON_BOOL, "a boolean")) return false;
    if (!wk__json_bool(&r->p, out)) return syntax(r);
    return true;
}

/* The text of the value at the cursor (any type), copied out. */
static bool read_raw(rd *r, const char *field, char **out) {
    if (wk__json_peek(&r->p) == WK__JSON_BAD) return syntax(r);
    size_t a = r->p.pos;
    if (!wk__json_skip(&r->p)) return syntax(r);
    size_t n = r->p.pos - a;
    char *c = malloc(n + 1);
    if (!c) return bad(r, field, "no memory for '%s'", field);
    memcpy(c, r->p.s + a, n);
    c[n] = 0;
    free(*out);
    *out = c;
    return true;
}

/* Keys are compared at once: the parser's scratch holds them only until the
 * next string is read. */
#define KEY(name) (!strcmp(key, name))

/* content: a string, null, or a list of parts {"type":"text","text":...}
 * (the texts joined; other part types are refused). */
static bool read_content(rd *r, const char *field, char **out) {
    if (is_null(r)) return true;
    wk__json_type t = wk__json_peek(&r->p);
    if (t == WK__JSON_STRING) return read_str(r, field, out);
    if (t != WK__JSON_ARRAY) {
        if (t == WK__JSON_BAD) return syntax(r);
        return bad(r, field, "'%s' must be a string or an array of text parts, got %s", field, type_name(t));
    }
    size_t total = 0;
    char *joined = calloc(1, 1);
    if (!joined) return bad(r, field, "no memory");
    wk__json_array(&r->p);
    while (wk__json_item(&r->p)) {
        if (!want(r, field, WK__JSON_OBJECT, "an array of objects")) break;
        wk__json_object(&r->p);
        char *type = NULL, *text = NULL;
        const char *key;
        size_t kl;
        while (!r->failed && wk__json_key(&r->p, &key, &kl)) {
            if (KEY("type")) read_str(r, "content[].type", &type);
            else if (KEY("text")) read_str(r, "content[].text", &text);
            else if (!wk__json_skip(&r->p)) syntax(r);
        }
        if (!r->failed && (!type || strcmp(type, "text")))
            bad(r, "content[].type", "content parts must be of type 'text' (got %s%s%s)", type ? "'" : "",
                type ? type : "none", type ? "'" : "");
        if (!r->failed && !text) bad(r, "content[].text", "a text part needs 'text'");
        if (!r->failed) {
            size_t l = strlen(text);
            char *j = realloc(joined, total + l + 1);
            if (!j) bad(r, field, "no memory");
            else {
                joined = j;
                memcpy(joined + total, text, l + 1);
                total += l;
            }
        }
        free(type);
        free(text);
        if (r->failed) break;
    }
    if (!r->failed && r->p.failed) syntax(r);
    if (r->failed) {
        free(joined);
        return false;
    }
    free(*out);
    *out = joined;
    return true;
}

static bool read_messages(rd *r, wk__hreq *q) {
    if (!want(r, "messages", WK__JSON_ARRAY, "an array")) return false;
    wk__json_array(&r->p);
    while (wk__json_item(&r->p)) {
        if (!want(r, "messages", WK__JSON_OBJECT, "an array of objects")) return false;
        if (q->n_msgs >= 4096) return bad(r, "messages", "more than 4096 messages");
        wk__hreq_msg *m = realloc(q->msgs, (size_t)(q->n_msgs + 1) * sizeof *m);
        if (!m) return bad(r, "messages", "no memory");
        q->msgs = m;
        m = &q->msgs[q->n_msgs++];
        *m = (wk__hreq_msg){0};
        bool has_content = false;
        wk__json_object(&r->p);
        const char *key;
        size_t kl;
        while (!r->failed && wk__json_key(&r->p, &key, &kl)) {
            if (KEY("role")) read_str(r, "messages[].role", &m->role);
            else if (KEY("content")) has_content = true, read_content(r, "messages[].content", &m->content);
            else if (!wk__json_skip(&r->p)) syntax(r);
        }
        if (r->failed) return false;
        if (!m->role) return bad(r, "messages[].role", "every message needs a 'role'");
        if (strcmp(m->role, "system") && strcmp(m->role, "user") && strcmp(m->role, "assistant") &&
            strcmp(m->role, "developer"))
            return bad(r, "messages[].role", "'role' must be system, developer, user or assistant, got '%s'", m->role);
        if (!has_content) return bad(r, "messages[].content", "every message needs a 'content'");
        if (!m->content && !(m->content = calloc(1, 1))) return bad(r, "messages", "no memory");
    }
    if (r->p.failed) return syntax(r);
    if (!r->failed && q->n_msgs == 0) return bad(r, "messages", "'messages' must not be empty");
    return !r->failed;
}

static bool read_stop(rd *r, wk__hreq *q) {
    if (is_null(r)) return true;
    wk__json_type t = wk__json_peek(&r->p);
    if (t == WK__JSON_STRING) {
        if (!read_str(r, "stop", &q->stops[0])) return false;
        q->n_stops = 1;
    } else if (t == WK__JSON_ARRAY) {
        wk__json_array(&r->p);
        while (wk__json_item(&r->p)) {
            if (q->n_stops >= WK__SERVE_MAX_STOPS) return bad(r, "stop", "at most %d stop strings", WK__SERVE_MAX_STOPS);
            if (!read_str(r, "stop", &q->stops[q->n_stops])) return false;
            q->n_stops++;
        }
        if (r->p.failed) return syntax(r);
    } else {
        if (t == WK__JSON_BAD) return syntax(r);
        return bad(r, "stop", "'stop' must be a string or an array of strings, got %s", type_name(t));
    }
    for (int i = 0; i < q->n_stops; i++)
        if (!q->stops[i][0]) return bad(r, "stop", "stop strings must not be empty");
    return true;
}

/* prompt (completions): a string, or a list of exactly one string */
static bool read_prompt(rd *r, wk__hreq *q) {
    wk__json_type t = wk__json_peek(&r->p);
    if (t == WK__JSON_STRING) return read_str(r, "prompt", &q->prompt);
    if (t != WK__JSON_ARRAY) {
        if (t == WK__JSON_BAD) return syntax(r);
        return bad(r, "prompt", "'prompt' must be a string or an array of one string, got %s", type_name(t));
    }
    int k = 0;
    wk__json_array(&r->p);
    while (wk__json_item(&r->p)) {
        if (k++) return bad(r, "prompt", "wick serves one prompt per request (got a list of several)");
        if (!read_str(r, "prompt", &q->prompt)) return false;
    }
    if (r->p.failed) return syntax(r);
    if (!q->prompt) return bad(r, "prompt", "'prompt' must not be an empty list");
    return true;
}

static bool read_inputs(rd *r, wk__hreq *q) {
    wk__json_type t = wk__json_peek(&r->p);
    if (t == WK__JSON_STRING) {
        if (!(q->inputs = calloc(1, sizeof *q->inputs))) return bad(r, "input", "no memory");
        q->n_inputs = 1;
        return read_str(r, "input", &q->inputs[0]);
    }
    if (t != WK__JSON_ARRAY) {
        if (t == WK__JSON_BAD) return syntax(r);
        return bad(r, "input", "'input' must be a string or an array of strings, got %s", type_name(t));
    }
    wk__json_array(&r->p);
    while (wk__json_item(&r->p)) {
        if (q->n_inputs >= 2048) return bad(r, "input", "at most 2048 inputs per request");
        char **in = realloc(q->inputs, (size_t)(q->n_inputs + 1) * sizeof *in);
        if (!in) return bad(r, "input", "no memory");
        q->inputs = in;
        in[q->n_inputs++] = NULL;
        if (!read_str(r, "input", &in[q->n_inputs - 1])) return false;
    }
    if (r->p.failed) return syntax(r);
    if (!q->n_inputs) return bad(r, "input", "'input' must not be empty");
    return true;
}

static bool read_stream_options(rd *r, wk__hreq *q) {
    if (is_null(r)) return true;
    if (!want(r, "stream_options", WK__JSON_OBJECT, "an object")) return false;
    wk__json_object(&r->p);
    const char *key;
    size_t kl;
    while (!r->failed && wk__json_key(&r->p, &key, &kl)) {
        if (KEY("include_usage")) read_bool(r, "stream_options.include_usage", &q->include_usage);
        else if (!wk__json_skip(&r->p)) syntax(r);
    }
    if (!r->failed && r->p.failed) syntax(r);
    return !r->failed;
}

/* {"type":"text"|"json_object"} or {"type":"json_schema","json_schema":{"schema":{...},...}} */
static bool read_format(rd *r, wk__hreq *q) {
    if (is_null(r)) return true;
    if (!want(r, "response_format", WK__JSON_OBJECT, "an object")) return false;
    char *type = NULL;
    bool has_js = false;
    wk__json_object(&r->p);
    const char *key;
    size_t kl;
    while (!r->failed && wk__json_key(&r->p, &key, &kl)) {
        if (KEY("type")) {
            read_str(r, "response_format.type", &type);
        } else if (KEY("json_schema")) {
            has_js = true;
            if (!want(r, "response_format.json_schema", WK__JSON_OBJECT, "an object")) break;
            wk__json_object(&r->p);
            while (!r->failed && wk__json_key(&r->p, &key, &kl)) {
                if (KEY("schema")) {
                    if (want(r, "response_format.json_schema.schema", WK__JSON_OBJECT, "an object"))
                        read_raw(r, "response_format.json_schema.schema", &q->schema);
                } else if (!wk__json_skip(&r->p)) syntax(r);
            }
        } else if (!wk__json_skip(&r->p)) syntax(r);
    }
    if (!r->failed && r->p.failed) syntax(r);
    if (!r->failed) {
        if (!type) bad(r, "response_format.type", "'response_format' needs a 'type'");
        else if (!strcmp(type, "text")) q->format = WK__FMT_TEXT;
        else if (!strcmp(type, "json_object")) q->format = WK__FMT_JSON_OBJECT;
        else if (!strcmp(type, "json_schema")) {
            q->format = WK__FMT_JSON_SCHEMA;
            if (!has_js || !q->schema)
                bad(r, "response_format.json_schema.schema", "type json_schema needs json_schema.schema (an object)");
        } else bad(r, "response_format.type", "'response_format.type' must be text, json_object or json_schema, got '%s'", type);
    }
    free(type);
    return !r->failed;
}

static void defaults(wk__hreq *q, wk__hreq_kind kind) {
    *q = (wk__hreq){0};
    q->kind = kind;
    q->max_tokens = -1;
    q->temperature = 1.0; /* OpenAI's defaults: plain sampling at temperature 1 */
    q->top_p = 1.0;
    q->min_p = 0;
    q->top_k = 0;
    q->repeat_penalty = 1.0;
    q->n = 1;
}

static bool field(rd *r, wk__hreq *q, const char *key) {
    bool gen = q->kind != WK__HREQ_EMBEDDING;
    int64_t v;
    double d;
    if (KEY("model")) return read_str(r, "model", &q->model);
    if (q->kind == WK__HREQ_CHAT && KEY("messages")) return read_messages(r, q);
    if (q->kind == WK__HREQ_COMPLETION && KEY("prompt")) return read_prompt(r, q);
    if (q->kind == WK__HREQ_EMBEDDING && KEY("input")) return read_inputs(r, q);
    if (q->kind == WK__HREQ_EMBEDDING && KEY("encoding_format")) {
        char *f = NULL;
        bool ok = read_str(r, "encoding_format", &f) &&
                  (!strcmp(f, "float") || !strcmp(f, "base64") ||
                   bad(r, "encoding_format", "'encoding_format' must be float or base64, got '%s'", f));
        if (ok) q->base64 = !strcmp(f, "base64");
        free(f);
        return ok;
    }
    if (!gen) return wk__json_skip(&r->p) || syntax(r);
    /* optional fields: null means "not given" */
    if (is_null(r)) return true;
    if (KEY("stream")) return read_bool(r, "stream", &q->stream);
    if (KEY("ignore_eos")) return read_bool(r, "ignore_eos", &q->ignore_eos);
    if (KEY("stream_options")) return read_stream_options(r, q);
    if (KEY("stop")) return read_stop(r, q);
    if (KEY("max_tokens") || KEY("max_completion_tokens")) {
        const char *f = KEY("max_tokens") ? "max_tokens" : "max_completion_tokens";
        if (!read_int(r, f, 1, INT32_MAX, &v)) return false;
        q->max_tokens = v;
        return true;
    }
    if (KEY("temperature")) return read_num(r, "temperature", 0, 2, &q->temperature);
    if (KEY("top_p")) return read_num(r, "top_p", 0, 1, &q->top_p) && (q->top_p > 0 || bad(r, "top_p", "'top_p' must be above 0"));
    if (KEY("min_p")) return read_num(r, "min_p", 0, 1, &q->min_p);
    if (KEY("top_k")) return read_int(r, "top_k", 0, INT32_MAX, &q->top_k);
    if (KEY("repeat_penalty")) return read_num(r, "repeat_penalty", 1e-3, 100, &q->repeat_penalty);
    if (KEY("seed")) {
        if (!read_int(r, "seed", INT64_MIN, INT64_MAX, &v)) return false;
        q->has_seed = true;
        q->seed = (uint64_t)v;
        return true;
    }
    if (KEY("n")) {
        if (!read_int(r, "n", 1, WK__SERVE_MAX_N, &v)) return false;
        q->n = (int)v;
        return true;
    }
    if (KEY("logprobs")) {
        if (q->kind == WK__HREQ_CHAT) return read_bool(r, "logprobs", &q->logprobs);
        /* completions: logprobs is how many alternatives (0..5) */
        if (!read_int(r, "logprobs", 0, 5, &v)) return false;
        q->logprobs = true;
        q->top_logprobs = (int)v;
        return true;
    }
    if (q->kind == WK__HREQ_CHAT && KEY("top_logprobs")) {
        if (!read_int(r, "top_logprobs", 0, 20, &v)) return false;
        q->top_logprobs = (int)v;
        return true;
    }
    if (q->kind == WK__HREQ_COMPLETION && KEY("echo")) return read_bool(r, "echo", &q->echo);
    if (KEY("response_format")) return read_format(r, q);
    if (KEY("grammar")) return read_str(r, "grammar", &q->grammar);
    if (KEY("presence_penalty") || KEY("frequency_penalty")) {
        const char *f = KEY("presence_penalty") ? "presence_penalty" : "frequency_penalty";
        if (!read_num(r, f, -2, 2, &d)) return false;
        if (d != 0) return bad(r, f, "'%s' is not supported by wick (only 0); use repeat_penalty", f);
        return true;
    }
    return wk__json_skip(&r->p) || syntax(r);
}

bool wk__hreq_parse(wk__hreq *q, wk__hreq_kind kind, const char *body, size_t n, char *msg, size_t msglen, char *param,
                   size_t paramlen) {
    defaults(q, kind);
    rd r = {.msg = msg, .param = param, .msglen = msglen, .paramlen = paramlen};
    msg[0] = param[0] = 0;
    wk__json_init(&r.p, body, n);
    if (wk__json_peek(&r.p) != WK__JSON_OBJECT) {
        if (wk__json_peek(&r.p) == WK__JSON_BAD) syntax(&r);
        else bad(&r, "", "the request body must be a JSON object");
    } else {
        wk__json_object(&r.p);
        const char *key;
        size_t kl;
        while (!r.failed && wk__json_key(&r.p, &key, &kl)) {
            /* the key lives in the parser's scratch: copy it before reading the value */
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            field(&r, q, k);
        }
        if (!r.failed && (r.p.failed || !wk__json_finish(&r.p))) syntax(&r);
    }
    if (!r.failed) {
        if (kind == WK__HREQ_CHAT && !q->msgs) bad(&r, "messages", "'messages' is required");
        else if (kind == WK__HREQ_COMPLETION && !q->prompt) bad(&r, "prompt", "'prompt' is required");
        else if (kind == WK__HREQ_EMBEDDING && !q->inputs) bad(&r, "input", "'input' is required");
        else if (q->top_logprobs > 0 && kind == WK__HREQ_CHAT && !q->logprobs)
            bad(&r, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        else if (q->grammar && q->format != WK__FMT_TEXT)
            bad(&r, "grammar", "give 'grammar' or a JSON 'response_format', not both");
    }
    wk__json_free(&r.p);
    if (r.failed) wk__hreq_free(q);
    return !r.failed;
}

void wk__hreq_free(wk__hreq *q) {
    free(q->model);
    for (int i = 0; i < q->n_msgs; i++) free(q->msgs[i].role), free(q->msgs[i].content);
    free(q->msgs);
    free(q->prompt);
    for (int i = 0; i < q->n_inputs; i++) free(q->inputs[i]);
    free(q->inputs);
    for (int i = 0; i < q->n_stops; i++) free(q->stops[i]);
    free(q->schema);
    free(q->grammar);
    *q = (wk__hreq){0};
}
