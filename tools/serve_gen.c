/* POST /v1/chat/completions and /v1/completions (tools/serve.h): the
 * prompt (the chat template rendered, or the prompt string), the limits,
 * the grammar, one engine request per choice, then either the whole reply
 * once every choice is done or a server-sent event stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/serve.h"
#include "tools/serve_fmt.h"
#include "tools/serve_job.h"
#include "tools/serve_stream.h"

/* The chat template over the messages, with the generation prompt; a new string. */
static char *render_chat(wk__srv *s, const wk__hreq *q, wk__reply *r) {
    if (!s->tmpl) {
        wk__reply_error(r, 400, "the model has no chat template: use /v1/completions", "messages");
        return NULL;
    }
    wk_chat_message *m = calloc((size_t)q->n_msgs, sizeof *m);
    if (!m) {
        wk__reply_error(r, 500, "no memory", NULL);
        return NULL;
    }
    for (int i = 0; i < q->n_msgs; i++) {
        /* OpenAI's "developer" is the newer name of the system role */
        m[i].role = strcmp(q->msgs[i].role, "developer") ? q->msgs[i].role : "system";
        m[i].content = q->msgs[i].content;
    }
    wk_chat_opts co = {.bos_token = s->bos_text, .eos_token = s->eos_text, .add_generation_prompt = true};
    char *text = NULL;
    int64_t need = wk_chat_template_render(s->tmpl, m, (size_t)q->n_msgs, &co, NULL, 0);
    if (need >= 0 && (text = malloc((size_t)need + 1)) &&
        wk_chat_template_render(s->tmpl, m, (size_t)q->n_msgs, &co, text, (size_t)need + 1) == need) {
        free(m);
        return text;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "the chat template cannot render these messages: %s", wk_last_error());
    wk__reply_error(r, need < 0 ? 400 : 500, msg, "messages");
    free(text);
    free(m);
    return NULL;
}

/* Tokenize as wk_generate does: a rendered chat brings its own BOS, a plain prompt gets the specials the
 * tokenizer adds. */
static int32_t *tokenize(wk__srv *s, const char *text, bool chat, int64_t *n, wk__reply *r) {
    size_t len = strlen(text);
    unsigned flags = chat ? WK_TOK_PARSE_SPECIAL : WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL;
    int64_t cap = (int64_t)len + 8;
    for (int pass = 0; pass < 2; pass++) {
        int32_t *ids = malloc((size_t)cap * sizeof *ids);
        if (!ids) break;
        int64_t k = wk_tokenizer_encode(s->tok, text, len, flags, ids, cap);
        if (k >= 0 && k <= cap) {
            *n = k;
            return ids;
        }
        free(ids);
        if (k < 0) {
            char msg[300];
            snprintf(msg, sizeof msg, "cannot tokenize the prompt: %s", wk_last_error());
            wk__reply_error(r, 400, msg, chat ? "messages" : "prompt");
            return NULL;
        }
        cap = k;
    }
    wk__reply_error(r, 500, "no memory for the prompt's tokens", NULL);
    return NULL;
}

static bool make_grammar(const wk__hreq *q, wk_grammar **g, wk__reply *r) {
    *g = NULL;
    const char *param = q->grammar ? "grammar" : "response_format";
    if (q->grammar) *g = wk_grammar_from_gbnf(q->grammar, strlen(q->grammar), NULL);
    else if (q->format == WK__FMT_JSON_OBJECT) *g = wk_grammar_json_object();
    else if (q->format == WK__FMT_JSON_SCHEMA) *g = wk_grammar_from_json_schema(q->schema, strlen(q->schema));
    else return true;
    if (*g) return true;
    char msg[400];
    wk_status st = wk_last_status();
    snprintf(msg, sizeof msg, "%s: %s", param, wk_last_error()[0] ? wk_last_error() : wk_status_name(st));
    wk__reply_error(r, st == WK_ERR_NOT_COMPILED ? 501 : st == WK_ERR_OOM ? 500 : 400, msg, param);
    return false;
}

/* Per choice, what the whole (non-streaming) reply collects. */
typedef struct {
    wk__sbuf text, lp;
    wk__lp_cmpl lpc;
    wk_stop_reason stop;
    int64_t n_prompt, n_generated;
} choice_acc;

static void write_whole(wk__srv *s, const wk__hreq *q, const char *id, int64_t created, choice_acc *c, wk__reply *r) {
    bool chat = q->kind == WK__HREQ_CHAT;
    wk__sbuf b = {0};
    wk__fmt_head(&b, id, chat ? "chat.completion" : "text_completion", created, s->model_id);
    wk__sbuf_puts(&b, ",\"choices\":[");
    int64_t gen = 0;
    for (int i = 0; i < q->n; i++) {
        gen += c[i].n_generated;
        wk__sbuf_printf(&b, "%s{\"index\":%d,", i ? "," : "", i);
        if (chat) {
            wk__sbuf_puts(&b, "\"message\":{\"role\":\"assistant\",\"content\":");
            wk__json_w_str(&b, c[i].text.p ? c[i].text.p : "", c[i].text.n);
            wk__sbuf_puts(&b, ",\"refusal\":null},\"logprobs\":");
            if (q->logprobs) {
                wk__sbuf_puts(&b, "{\"content\":[");
                if (c[i].lp.n) wk__sbuf_put(&b, c[i].lp.p, c[i].lp.n);
                wk__sbuf_puts(&b, "],\"refusal\":null}");
            } else wk__sbuf_puts(&b, "null");
        } else {
            /* echo: the prompt, then the completion, as one text */
            wk__sbuf t = {0};
            if (q->echo) wk__sbuf_puts(&t, q->prompt);
            wk__sbuf_put(&t, c[i].text.p ? c[i].text.p : "", c[i].text.n);
            wk__sbuf_puts(&b, "\"text\":");
            wk__json_w_str(&b, t.p ? t.p : "", t.n);
            if (t.oom) b.oom = true;
            wk__sbuf_free(&t);
            wk__sbuf_puts(&b, ",\"logprobs\":");
            if (q->logprobs) wk__lp_cmpl_write(&b, &c[i].lpc);
            else wk__sbuf_puts(&b, "null");
        }
        if (c[i].text.oom || c[i].lp.oom) b.oom = true;
        wk__sbuf_puts(&b, ",\"finish_reason\":");
        wk__json_w_cstr(&b, wk__finish_reason(c[i].stop));
        wk__sbuf_put(&b, "}", 1);
    }
    wk__sbuf_puts(&b, "]");
    wk__fmt_usage(&b, c[0].n_prompt, gen);
    wk__sbuf_puts(&b, ",\"system_fingerprint\":\"wick\"}");
    wk__reply_json(r, 200, &b);
}

/* Wait for every choice to end, collecting its text; false when the
 * client went away (the job is cancelled) or a choice failed (r says so). */
static bool collect(wk__srv *s, struct MHD_Connection *conn, const wk__hreq *q, wk__job *j, choice_acc *c,
                    wk__reply *r) {
    bool failed = false;
    for (;;) {
        wk__job_ev ev;
        int got = wk__job_wait(j, &ev, 200);
        if (got < 0) break;
        if (got == 0) {
            if (conn && wk__conn_gone(conn)) {
                wk__job_cancel(j);
                r->hangup = true;
                return false;
            }
            continue;
        }
        choice_acc *a = &c[ev.choice];
        if (ev.kind == WK_EV_ERROR) {
            if (!failed) {
                char msg[400];
                snprintf(msg, sizeof msg, "generation failed: %s", ev.text ? ev.text : wk_status_name(ev.status));
                wk__reply_error(r, ev.status == WK_ERR_ARG ? 400 : ev.status == WK_ERR_BUSY ? 503 : 500, msg, NULL);
                failed = true;
                wk__job_cancel(j);
            }
        } else {
            if (ev.kind == WK_EV_TOKEN && q->logprobs) {
                if (q->kind == WK__HREQ_CHAT) {
                    if (a->lp.n) wk__sbuf_put(&a->lp, ",", 1);
                    wk__fmt_lp_chat(&a->lp, s->tok, &ev);
                } else {
                    wk__lp_cmpl_add(&a->lpc, s->tok, &ev, (int64_t)a->text.n);
                }
            }
            if (ev.n_text) wk__sbuf_put(&a->text, ev.text, ev.n_text);
            if (ev.kind == WK_EV_DONE) {
                a->stop = ev.stop;
                a->n_prompt = ev.n_prompt;
                a->n_generated = ev.n_generated;
            }
        }
        free(ev.text);
    }
    return !failed;
}

void wk__srv_generate(wk__srv *s, struct MHD_Connection *conn, wk__hreq_kind kind, const char *body, size_t n,
                      wk__reply *r) {
    wk__hreq q;
    char msg[512], param[64];
    if (!wk__hreq_parse(&q, kind, body, n, msg, sizeof msg, param, sizeof param)) {
        wk__reply_error(r, 400, msg, param[0] ? param : NULL);
        return;
    }
    bool chat = kind == WK__HREQ_CHAT;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    wk_grammar *g = NULL;
    wk__job *j = NULL;
    char *text = chat ? render_chat(s, &q, r) : q.prompt;
    if (!text) goto out;
    ids = tokenize(s, text, chat, &n_ids, r);
    if (!ids) goto out;
    if (n_ids == 0) {
        wk__reply_error(r, 400, "the prompt is empty (no tokens)", chat ? "messages" : "prompt");
        goto out;
    }
    if (s->max_prompt > 0 && n_ids > s->max_prompt) {
        snprintf(msg, sizeof msg, "the prompt has %lld tokens, more than this server's limit of %lld",
                 (long long)n_ids, (long long)s->max_prompt);
        wk__reply_error(r, 400, msg, chat ? "messages" : "prompt");
        goto out;
    }
    if (s->max_tokens_limit > 0 && q.max_tokens > s->max_tokens_limit) {
        snprintf(msg, sizeof msg, "max_tokens %lld is more than this server's limit of %lld", (long long)q.max_tokens,
                 (long long)s->max_tokens_limit);
        wk__reply_error(r, 400, msg, "max_tokens");
        goto out;
    }
    if (n_ids >= s->ctx) {
        snprintf(msg, sizeof msg, "the prompt has %lld tokens: no room left in the context of %lld",
                 (long long)n_ids, (long long)s->ctx);
        wk__reply_error(r, 400, msg, chat ? "messages" : "prompt");
        goto out;
    }
    if (!make_grammar(&q, &g, r)) goto out;

    wk_request_opts o;
    wk_request_opts_default(&o);
    o.sampling.temperature = q.temperature;
    o.sampling.top_p = q.top_p;
    o.sampling.top_k = q.top_k;
    o.sampling.min_p = q.min_p;
    o.sampling.repeat_penalty = q.repeat_penalty;
    o.stop_at_eos = !q.ignore_eos;
    o.max_tokens = q.max_tokens > 0 ? q.max_tokens : s->max_tokens_limit > 0 ? s->max_tokens_limit : 0;
    o.stop = (const char *const *)q.stops;
    o.n_stop = q.n_stops;
    o.logprobs = q.logprobs;
    o.top_logprobs = q.logprobs ? q.top_logprobs : 0;
    o.grammar = g;
    /* a plain prompt ends only at EOS, as `wick generate -p` does; a chat reply at its end-of-turn too */
    o.end_of_turn = chat;
    uint64_t seq = atomic_fetch_add(&s->seq, 1);
    uint64_t seed = q.has_seed ? q.seed : (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ seq;
    if (!(j = wk__job_new(s->engine, q.n, g))) {
        wk_grammar_free(g);
        wk__reply_error(r, 500, "no memory", NULL);
        goto out;
    }
    g = NULL; /* the job owns it */
    for (int i = 0; i < q.n; i++) {
        o.sampling.seed = seed + (uint64_t)i; /* n choices: seeds seed, seed+1, ... */
        if (!wk__job_submit(j, i, ids, n_ids, &o)) {
            wk_status st = wk_last_status();
            snprintf(msg, sizeof msg, "%s", wk_last_error()[0] ? wk_last_error() : wk_status_name(st));
            wk__job_cancel(j);
            if (st == WK_ERR_BUSY && atomic_load(&s->state) == WK__SRV_DRAINING)
                wk__reply_error(r, 503, "the server is shutting down", NULL);
            else if (st == WK_ERR_BUSY) {
                wk__reply_error(r, 429, "the server is busy (its queue is full): retry later", NULL);
                r->retry_after = 1;
            } else wk__reply_error(r, st == WK_ERR_ARG ? 400 : 500, msg, NULL);
            /* wait for the choices already submitted to end: they hold the job */
            wk__job_ev ev;
            while (wk__job_wait(j, &ev, 1000) >= 0) free(ev.text);
            goto out;
        }
    }
    char id[48];
    snprintf(id, sizeof id, "%s-%llx%llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)time(NULL),
             (unsigned long long)seq);
    int64_t created = (int64_t)time(NULL);
    if (q.stream) {
        wk__sse_opts so = {.kind = kind, .n = q.n, .logprobs = q.logprobs, .include_usage = q.include_usage,
                           .id = id, .created = created, .echo = q.echo ? q.prompt : NULL};
        r->stream = wk__sse_response(s, conn, j, &so);
        if (r->stream) j = NULL; /* the response holds it now */
        else wk__reply_error(r, 500, "no memory for the stream", NULL);
    } else {
        choice_acc c[WK__SERVE_MAX_N];
        memset(c, 0, sizeof c);
        if (collect(s, conn, &q, j, c, r)) write_whole(s, &q, id, created, c, r);
        for (int i = 0; i < q.n; i++) {
            wk__sbuf_free(&c[i].text);
            wk__sbuf_free(&c[i].lp);
            wk__lp_cmpl_free(&c[i].lpc);
        }
    }
out:
    if (j) {
        wk__job_cancel(j);
        wk__job_release(j);
    }
    wk_grammar_free(g);
    free(ids);
    if (chat) free(text);
    wk__hreq_free(&q);
}
