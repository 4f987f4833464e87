/* The small routes of `wick serve`: error and JSON replies, GET /v1/models,
 * GET /health, GET /metrics (Prometheus' text format) and POST
 * /v1/embeddings (tools/serve.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/serve.h"

static const char *error_type(unsigned status) {
    switch (status) {
    case 400: case 404: case 405: case 413: return "invalid_request_error";
    case 401: return "authentication_error";
    case 429: return "rate_limit_error";
    case 501: return "not_implemented_error";
    case 503: return "unavailable_error";
    default: return "server_error";
    }
}

void wk__reply_json(wk__reply *r, unsigned status, wk__sbuf *b) {
    size_t n;
    char *p = wk__sbuf_take(b, &n);
    free(r->body);
    if (!p) {
        static const char oom[] = "{\"error\":{\"message\":\"no memory for the reply\",\"type\":\"server_error\","
                                  "\"param\":null,\"code\":500}}";
        r->status = 500;
        r->body = malloc(sizeof oom);
        r->n = r->body ? sizeof oom - 1 : 0;
        if (r->body) memcpy(r->body, oom, sizeof oom);
    } else {
        r->status = status;
        r->body = p;
        r->n = n;
    }
    r->ctype = "application/json";
}

void wk__reply_error(wk__reply *r, unsigned status, const char *message, const char *param) {
    wk__sbuf b = {0};
    wk__sbuf_puts(&b, "{\"error\":{\"message\":");
    wk__json_w_cstr(&b, message);
    wk__sbuf_puts(&b, ",\"type\":");
    wk__json_w_cstr(&b, error_type(status));
    wk__sbuf_puts(&b, ",\"param\":");
    wk__json_w_cstr(&b, param && param[0] ? param : NULL);
    wk__sbuf_printf(&b, ",\"code\":%u}}", status);
    wk__reply_json(r, status, &b);
}

static void model_entry(wk__sbuf *b, const char *id, int64_t created, bool first) {
    if (!first) wk__sbuf_put(b, ",", 1);
    wk__sbuf_puts(b, "{\"id\":");
    wk__json_w_cstr(b, id);
    wk__sbuf_printf(b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"wick\"}", (long long)created);
}

void wk__srv_models(wk__srv *s, wk__reply *r) {
    wk__sbuf b = {0};
    wk__sbuf_puts(&b, "{\"object\":\"list\",\"data\":[");
    model_entry(&b, s->model_id, s->created, true);
    if (s->bert_id) model_entry(&b, s->bert_id, s->created, false);
    wk__sbuf_puts(&b, "]}");
    wk__reply_json(r, 200, &b);
}

void wk__srv_health(wk__srv *s, wk__reply *r) {
    int st = atomic_load(&s->state);
    wk__sbuf b = {0};
    if (st == WK__SRV_READY) {
        wk__sbuf_puts(&b, "{\"status\":\"ok\"}");
        wk__reply_json(r, 200, &b);
    } else {
        wk__sbuf_puts(&b, st == WK__SRV_LOADING ? "{\"status\":\"loading\"}" : "{\"status\":\"shutting down\"}");
        wk__reply_json(r, 503, &b);
    }
}

void wk__srv_count(wk__srv *s, int endpoint, unsigned status) {
    if (endpoint < 0 || endpoint >= WK__EP_COUNT || status >= 600) return;
    pthread_mutex_lock(&s->metrics_mu);
    s->by_status[endpoint][status]++;
    pthread_mutex_unlock(&s->metrics_mu);
}

static const char *const EP_NAMES[WK__EP_COUNT] = {"/v1/chat/completions", "/v1/completions", "/v1/embeddings",
                                                   "/v1/models", "/health", "/metrics", "other"};

static void metric(wk__sbuf *b, const char *name, const char *type, const char *help, int64_t v) {
    wk__sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name, (long long)v);
}

void wk__srv_metrics(wk__srv *s, wk__reply *r) {
    wk__sbuf b = {0};
    wk__sbuf_puts(&b, "# HELP wick_requests_total HTTP requests answered, by endpoint and status.\n"
                      "# TYPE wick_requests_total counter\n");
    pthread_mutex_lock(&s->metrics_mu);
    for (int e = 0; e < WK__EP_COUNT; e++)
        for (unsigned st = 100; st < 600; st++)
            if (s->by_status[e][st])
                wk__sbuf_printf(&b, "wick_requests_total{endpoint=\"%s\",status=\"%u\"} %lld\n", EP_NAMES[e], st,
                                (long long)s->by_status[e][st]);
    pthread_mutex_unlock(&s->metrics_mu);
    wk_engine_stats st;
    memset(&st, 0, sizeof st);
    if (s->engine) wk_engine_get_stats(s->engine, &st);
    metric(&b, "wick_prompt_tokens_total", "counter", "Prompt tokens of finished and running requests.", st.prompt_tokens);
    metric(&b, "wick_prompt_tokens_cached_total", "counter", "Prompt tokens reused from the prefix cache.",
           st.cached_prompt_tokens);
    metric(&b, "wick_generated_tokens_total", "counter", "Tokens generated.", st.generated_tokens);
    metric(&b, "wick_engine_requests_total", "counter", "Requests the engine accepted.", st.requests_total);
    metric(&b, "wick_engine_requests_failed_total", "counter", "Engine requests that failed.", st.requests_failed);
    metric(&b, "wick_engine_requests_cancelled_total", "counter", "Engine requests cancelled.", st.requests_cancelled);
    metric(&b, "wick_engine_steps_total", "counter", "Forward passes the engine ran.", st.steps);
    metric(&b, "wick_requests_running", "gauge", "Requests decoding now.", st.running);
    metric(&b, "wick_requests_queued", "gauge", "Requests waiting for a slot.", st.queued);
    metric(&b, "wick_kv_blocks_total", "gauge", "KV cache blocks in the pool.", st.kv_blocks_total);
    metric(&b, "wick_kv_blocks_used", "gauge", "KV cache blocks in use.", st.kv_blocks_used);
    metric(&b, "wick_kv_blocks_cached", "gauge", "KV cache blocks kept only for prefix reuse.", st.kv_blocks_cached);
    metric(&b, "wick_http_active", "gauge", "HTTP requests being answered.", (int64_t)atomic_load(&s->active));
    wk__reply_json(r, 200, &b);
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

/* OpenAI's encoding_format "base64": the little-endian float32 bytes, base64 in a JSON string. */
static void base64_f32(wk__sbuf *b, const float *v, int64_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t nb = (size_t)n * 4;
    unsigned char *by = malloc(nb ? nb : 1);
    if (!by) {
        b->oom = true;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) by[i * 4 + k] = (unsigned char)(u >> (8 * k));
    }
    wk__sbuf_put(b, "\"", 1);
    for (size_t i = 0; i < nb; i += 3) {
        uint32_t w = (uint32_t)by[i] << 16 | (i + 1 < nb ? (uint32_t)by[i + 1] << 8 : 0) | (i + 2 < nb ? by[i + 2] : 0);
        char o[4] = {A[w >> 18 & 63], A[w >> 12 & 63], i + 1 < nb ? A[w >> 6 & 63] : '=', i + 2 < nb ? A[w & 63] : '='};
        wk__sbuf_put(b, o, 4);
    }
    wk__sbuf_put(b, "\"", 1);
    free(by);
}

void wk__srv_embeddings(wk__srv *s, const char *body, size_t n, wk__reply *r) {
    wk__hreq q;
    char msg[512], param[64];
    if (!wk__hreq_parse(&q, WK__HREQ_EMBEDDING, body, n, msg, sizeof msg, param, sizeof param)) {
        wk__reply_error(r, 400, msg, param[0] ? param : NULL);
        return;
    }
    if (!s->bert) {
        wk__reply_error(r, 400, "this server has no embedding model (start it with --embedding-model DIR)", "model");
        wk__hreq_free(&q);
        return;
    }
    /* tokens for usage: the texts as the encoder sees them ([CLS] ... [SEP], cut to its length) */
    int64_t tokens = 0, maxt = wk_bert_max_tokens(s->bert);
    for (int i = 0; i < q.n_inputs; i++) {
        int64_t k = wk_tokenizer_encode(wk_bert_tokenizer(s->bert), q.inputs[i], strlen(q.inputs[i]),
                                        WK_TOK_ADD_SPECIAL, NULL, 0);
        tokens += k < 0 ? 0 : k > maxt && maxt > 0 ? maxt : k;
    }
    int64_t dim = wk_bert_dim(s->bert);
    float *v = malloc((size_t)q.n_inputs * (size_t)dim * sizeof *v);
    wk_status st = WK_ERR_OOM;
    char err[400] = "no memory for the embeddings";
    if (v) {
        /* one encoder call at a time: its scratch is the model's */
        pthread_mutex_lock(&s->bert_mu);
        wk_tensor *e = wk_bert_embed(s->bert, (const char *const *)q.inputs, q.n_inputs);
        st = e ? wk_to_host_f32(e, v, (size_t)q.n_inputs * (size_t)dim) : wk_last_status();
        if (st != WK_OK) snprintf(err, sizeof err, "embedding failed: %s", wk_last_error());
        wk_tensor_free(e);
        pthread_mutex_unlock(&s->bert_mu);
    }
    if (st != WK_OK) {
        wk__reply_error(r, st == WK_ERR_ARG ? 400 : 500, err, st == WK_ERR_ARG ? "input" : NULL);
    } else {
        wk__sbuf b = {0};
        wk__sbuf_puts(&b, "{\"object\":\"list\",\"data\":[");
        for (int i = 0; i < q.n_inputs; i++) {
            wk__sbuf_printf(&b, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i ? "," : "", i);
            const float *row = v + (size_t)i * (size_t)dim;
            if (q.base64) {
                base64_f32(&b, row, dim);
            } else {
                wk__sbuf_put(&b, "[", 1);
                for (int64_t k = 0; k < dim; k++) {
                    if (k) wk__sbuf_put(&b, ",", 1);
                    wk__json_w_f32(&b, row[k]);
                }
                wk__sbuf_put(&b, "]", 1);
            }
            wk__sbuf_puts(&b, "}");
        }
        wk__sbuf_puts(&b, "],\"model\":");
        wk__json_w_cstr(&b, s->bert_id);
        wk__sbuf_printf(&b, ",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", (long long)tokens,
                        (long long)tokens);
        wk__reply_json(r, 200, &b);
    }
    free(v);
    wk__hreq_free(&q);
}
