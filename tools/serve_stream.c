/* Streaming replies as server-sent events (tools/serve_stream.h).
 *
 * The reader runs on the connection's own thread (MHD's thread per
 * connection): it may wait for the next event there without holding up the
 * engine or the other connections. While it waits it looks at the socket
 * every 200 ms, so a client that hung up is noticed (and its requests
 * cancelled) even between tokens. */
#include "tools/serve_stream.h"
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/serve_fmt.h"

typedef struct {
    wk__srv *s;
    struct MHD_Connection *conn;
    wk__job *j;
    wk__sse_opts o;
    char id[48];
    char *echo;    /* owned copy of o.echo */
    wk__sbuf out;  /* bytes not yet handed to MHD, from off */
    size_t off;
    bool began, finished;
    int64_t n_prompt, n_generated;
    int64_t offset[WK__SERVE_MAX_N]; /* completions' text_offset, per choice */
} sse;

static void head(sse *x, wk__sbuf *b) {
    wk__sbuf_puts(b, "data: ");
    wk__fmt_head(b, x->id, x->o.kind == WK__HREQ_CHAT ? "chat.completion.chunk" : "text_completion", x->o.created,
                 x->s->model_id);
    wk__sbuf_puts(b, ",\"system_fingerprint\":\"wick\",\"choices\":[");
}

/* One chunk for choice c: its text (may be empty), the token's logprobs
 * (ev, or NULL) and finish_reason (NULL: null). */
static void chunk(sse *x, int c, const char *text, size_t n, const wk__job_ev *ev, const char *finish, bool role) {
    wk__sbuf *b = &x->out;
    head(x, b);
    wk__sbuf_printf(b, "{\"index\":%d,", c);
    if (x->o.kind == WK__HREQ_CHAT) {
        wk__sbuf_puts(b, "\"delta\":{");
        bool first = true;
        if (role) wk__sbuf_puts(b, "\"role\":\"assistant\""), first = false;
        if (text) {
            wk__json_w_key(b, "content", first);
            wk__json_w_str(b, text, n);
        }
        wk__sbuf_puts(b, "},\"logprobs\":");
        if (ev && x->o.logprobs) {
            wk__sbuf_puts(b, "{\"content\":[");
            wk__fmt_lp_chat(b, x->s->tok, ev);
            wk__sbuf_puts(b, "],\"refusal\":null}");
        } else wk__sbuf_puts(b, "null");
    } else {
        wk__sbuf_puts(b, "\"text\":");
        wk__json_w_str(b, text ? text : "", text ? n : 0);
        wk__sbuf_puts(b, ",\"logprobs\":");
        if (ev && x->o.logprobs) {
            wk__lp_cmpl l = {0};
            wk__lp_cmpl_add(&l, x->s->tok, ev, x->offset[c]);
            wk__lp_cmpl_write(b, &l);
            wk__lp_cmpl_free(&l);
        } else wk__sbuf_puts(b, "null");
        x->offset[c] += (int64_t)n;
    }
    wk__sbuf_puts(b, ",\"finish_reason\":");
    wk__json_w_cstr(b, finish);
    wk__sbuf_puts(b, "}]}\n\n");
}

static void on_event(sse *x, const wk__job_ev *ev) {
    int c = ev->choice;
    if (ev->kind == WK_EV_TOKEN) {
        /* a token whose text is held back (a possible stop string) sends nothing, unless logprobs are wanted */
        if (ev->n_text || x->o.logprobs) chunk(x, c, ev->text ? ev->text : "", ev->n_text, ev, NULL, false);
    } else if (ev->kind == WK_EV_DONE) {
        if (ev->n_text) chunk(x, c, ev->text, ev->n_text, NULL, NULL, false);
        chunk(x, c, NULL, 0, NULL, wk__finish_reason(ev->stop), false);
        x->n_prompt = ev->n_prompt;
        x->n_generated += ev->n_generated;
    } else {
        /* the status line went out long ago: the error travels as an event */
        wk__sbuf *b = &x->out;
        wk__sbuf_puts(b, "data: {\"error\":{\"message\":");
        wk__json_w_cstr(b, ev->text ? ev->text : wk_status_name(ev->status));
        wk__sbuf_puts(b, ",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n");
    }
}

static void finish(sse *x) {
    if (x->o.include_usage) {
        head(x, &x->out);
        wk__sbuf_puts(&x->out, "]");
        wk__fmt_usage(&x->out, x->n_prompt, x->n_generated);
        wk__sbuf_puts(&x->out, "}\n\n");
    }
    wk__sbuf_puts(&x->out, "data: [DONE]\n\n");
    x->finished = true;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    sse *x = cls;
    for (;;) {
        if (x->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (x->off < x->out.n) {
            size_t k = x->out.n - x->off < max ? x->out.n - x->off : max;
            memcpy(buf, x->out.p + x->off, k);
            x->off += k;
            return (ssize_t)k;
        }
        x->out.n = 0;
        x->off = 0;
        if (x->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!x->began) {
            /* OpenAI's first chunk: the role, empty content */
            x->began = true;
            if (x->o.kind == WK__HREQ_CHAT)
                for (int c = 0; c < x->o.n; c++) chunk(x, c, "", 0, NULL, NULL, true);
            else if (x->echo)
                for (int c = 0; c < x->o.n; c++) chunk(x, c, x->echo, strlen(x->echo), NULL, NULL, false);
            continue;
        }
        wk__job_ev ev;
        int got = wk__job_wait(x->j, &ev, 200);
        if (got < 0) finish(x);
        else if (got == 0) {
            if (wk__conn_gone(x->conn)) {
                wk__job_cancel(x->j);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        } else {
            on_event(x, &ev);
            free(ev.text);
        }
    }
}

static void release(void *cls) {
    sse *x = cls;
    wk__job_cancel(x->j); /* a no-op when every choice ended */
    wk__job_release(x->j);
    wk__sbuf_free(&x->out);
    free(x->echo);
    free(x);
}

struct MHD_Response *wk__sse_response(wk__srv *s, struct MHD_Connection *conn, wk__job *j, const wk__sse_opts *o) {
    sse *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->s = s;
    x->conn = conn;
    x->j = j;
    x->o = *o;
    snprintf(x->id, sizeof x->id, "%s", o->id);
    x->o.id = x->id;
    if (o->echo && !(x->echo = strdup(o->echo))) {
        free(x);
        return NULL;
    }
    x->o.echo = x->echo;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, x, release);
    if (!resp) {
        free(x->echo);
        free(x);
        return NULL;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    return resp;
}
