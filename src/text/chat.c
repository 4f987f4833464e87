/* wick/chat.h: compile a chat template once, render it with the context
 * transformers' apply_chat_template builds (messages, tools -- none when
 * not given --, documents = none, add_generation_prompt, bos/eos tokens,
 * extra variables). */
#include <stdlib.h>
#include <string.h>

#include "text/jinja.h"
#include "wick/chat.h"

#define PARSE_LIMIT ((size_t)256 << 20)
#define RENDER_LIMIT ((size_t)512 << 20)

struct wk_chat_template {
    jj_rt rt;
    char *src;
    jj_node *body;
};

/* jinja2 reads \r\n and \r as \n and drops one trailing newline. */
static char *normalize(const char *src, size_t *n_out) {
    size_t n = strlen(src);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            s[k++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n') i++;
        } else s[k++] = src[i];
    }
    if (k && s[k - 1] == '\n') k--;
    s[k] = 0;
    *n_out = k;
    return s;
}

/* The longjmp target of a parse, in a frame of its own (no locals to clobber). */
static bool parse(wk_chat_template *t, size_t n) {
    if (setjmp(t->rt.jb)) return false;
    t->body = jj_parse(&t->rt, t->src, n);
    return true;
}

wk_chat_template *wk_chat_template_compile(const char *src) {
    const char *op = "wk_chat_template_compile";
    if (!src) {
        wk__err(WK_ERR_ARG, op, "the template is NULL");
        return NULL;
    }
    wk_chat_template *t = calloc(1, sizeof *t);
    size_t n = 0;
    if (!t || !(t->src = normalize(src, &n))) {
        free(t);
        wk__err(WK_ERR_OOM, op, "out of memory");
        return NULL;
    }
    jj_rt_init(&t->rt, PARSE_LIMIT);
    if (!parse(t, n)) {
        wk__err(t->rt.status, op, "%s", t->rt.msg);
        wk_chat_template_free(t);
        return NULL;
    }
    return t;
}

void wk_chat_template_free(wk_chat_template *t) {
    if (!t) return;
    jj_rt_free(&t->rt);
    free(t->src);
    free(t);
}

static jv json_or_null(jj_rt *rt, const char *what, const char *s) {
    return s ? jv_from_json(rt, what, s, strlen(s)) : jv_none();
}

static void set(jj_rt *rt, jj_dict *d, const char *k, jv v) { jj_dict_set(rt, d, jv_cstr(rt, k), v); }

static jv messages(jj_rt *rt, const wk_chat_message *msgs, size_t n) {
    jv l = jv_list(rt, n);
    for (size_t i = 0; i < n; i++) {
        const wk_chat_message *m = &msgs[i];
        if (!m->role) jj_fail(rt, 0, "message %zu has no role", i);
        jv d = jv_dict(rt);
        set(rt, d.u.d, "role", jv_cstr(rt, m->role));
        if (m->content_json) set(rt, d.u.d, "content", json_or_null(rt, "a message's content_json", m->content_json));
        else if (m->content) set(rt, d.u.d, "content", jv_cstr(rt, m->content));
        if (m->tool_calls_json) set(rt, d.u.d, "tool_calls", json_or_null(rt, "a message's tool_calls_json", m->tool_calls_json));
        if (m->tool_call_id) set(rt, d.u.d, "tool_call_id", jv_cstr(rt, m->tool_call_id));
        if (m->name) set(rt, d.u.d, "name", jv_cstr(rt, m->name));
        jj_list_push(rt, l.u.l, d);
    }
    return l;
}

/* The longjmp target of a render, in a frame of its own. */
static bool render(jj_rt *rt, const wk_chat_template *t, const wk_chat_message *msgs, size_t n, const wk_chat_opts *o,
                   jj_buf *buf) {
    if (setjmp(rt->jb)) return false;
    jv vars = jv_dict(rt);
    jj_dict *d = vars.u.d;
    set(rt, d, "messages", messages(rt, msgs, n));
    set(rt, d, "tools", json_or_null(rt, "tools_json", o->tools_json));
    set(rt, d, "documents", jv_none());
    set(rt, d, "add_generation_prompt", jv_bool(o->add_generation_prompt));
    if (o->bos_token) set(rt, d, "bos_token", jv_cstr(rt, o->bos_token));
    if (o->eos_token) set(rt, d, "eos_token", jv_cstr(rt, o->eos_token));
    if (o->extra_json) {
        jv x = jv_from_json(rt, "extra_json", o->extra_json, strlen(o->extra_json));
        if (x.t != JV_DICT) jj_fail(rt, 0, "extra_json must be a JSON object");
        for (size_t i = 0; i < x.u.d->n; i++) jj_dict_set(rt, d, x.u.d->k[i], x.u.d->v[i]);
    }
    jj_ctx ctx = {.rt = rt, .vars = d, .out = buf, .now = o->now};
    jj_render(&ctx, t->body);
    return true;
}

int64_t wk_chat_template_render(const wk_chat_template *t, const wk_chat_message *msgs, size_t n,
                                const wk_chat_opts *o, char *out, size_t cap) {
    const char *op = "wk_chat_template_render";
    if (!t || (!msgs && n) || (!out && cap)) {
        wk__err(WK_ERR_ARG, op, "%s is NULL", !t ? "the template" : !out && cap ? "out" : "msgs");
        return -1;
    }
    static const wk_chat_opts none = {0};
    if (!o) o = &none;
    jj_rt rt;
    jj_rt_init(&rt, RENDER_LIMIT);
    jj_buf buf = {0};
    if (!render(&rt, t, msgs, n, o, &buf)) {
        wk__err(rt.status, op, "%s", rt.msg);
        jj_rt_free(&rt);
        return -1;
    }
    size_t len = buf.n;
    if (cap) {
        size_t k = len < cap ? len : cap - 1;
        if (k) memcpy(out, buf.p, k);
        out[k] = 0;
    }
    jj_rt_free(&rt);
    return (int64_t)len;
}

int64_t wk_chat_apply(const char *tmpl, const wk_chat_message *msgs, size_t n, const wk_chat_opts *o, char *out,
                      size_t cap) {
    wk_chat_template *t = wk_chat_template_compile(tmpl);
    if (!t) return -1;
    int64_t r = wk_chat_template_render(t, msgs, n, o, out, cap);
    wk_chat_template_free(t);
    return r;
}
