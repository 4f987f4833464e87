/* Chat sessions (wick/generate.h): a conversation's messages and the KV
 * cache kept across its replies. Each reply renders the whole conversation
 * and starts an ordinary wk_gen over the kept cache (model/generate.c's
 * wk__gen_start_kept), which reuses the prefix of ids the cache holds; when
 * the reply ends, its text comes back here as an assistant message. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/error.h"
#include "model/gen_internal.h"
#include "wick/chat.h"
#include "wick/generate.h"
#include "wick/lm.h"

struct wk_chat_session {
    const wk_lm *m;
    wk_chat_template *tmpl;
    wk_generate_opts o;    /* its stop strings and system: the session's copies below */
    char **stop, *system;
    wk_chat_message *msgs; /* role and content of each: the session's own strings */
    size_t n, cap, n_fixed; /* n_fixed: the system message from the options (reset keeps it) */
    int64_t now;           /* strftime_now's clock, pinned at creation */
    wk__gen_kept kept;
};

static const char *OP_NEW = "wk_chat_session_new", *OP_ADD = "wk_chat_session_add",
                  *OP_POP = "wk_chat_session_pop", *OP_RESET = "wk_chat_session_reset",
                  *OP_REPLY = "wk_chat_session_reply";

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void drop_last(wk_chat_session *s) {
    s->n--;
    free((char *)s->msgs[s->n].role);
    free((char *)s->msgs[s->n].content);
}

static wk_status push(wk_chat_session *s, const char *role, const char *content, size_t n_content, const char *op) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        wk_chat_message *m = realloc(s->msgs, cap * sizeof *m);
        if (!m) return wk__err(WK_ERR_OOM, op, "no memory for %zu messages", cap);
        s->msgs = m;
        s->cap = cap;
    }
    char *r = dup_str(role), *c = malloc(n_content + 1);
    if (!r || !c) {
        free(r);
        free(c);
        return wk__err(WK_ERR_OOM, op, "no memory for a %zu-byte message", n_content);
    }
    memcpy(c, content, n_content);
    c[n_content] = 0;
    s->msgs[s->n++] = (wk_chat_message){.role = r, .content = c};
    return WK_OK;
}

/* the reply's end (wk__gen_kept.on_end): its text joins the conversation */
static void reply_ended(void *ctx, const char *reply, size_t n, bool failed) {
    wk_chat_session *s = ctx;
    if (!failed) push(s, "assistant", reply, n, "wk_gen_step"); /* OOM: the turn is lost, the session stays whole */
}

static wk_status copy_opts(wk_chat_session *s, const wk_generate_opts *o) {
    s->o = *o;
    s->o.chat = true;
    s->o.on_text = NULL;
    s->o.ctx = NULL;
    s->o.stop = NULL;
    s->o.system = NULL;
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop))
        return wk__err(WK_ERR_ARG, OP_NEW, "%d stop strings but stop is %s", o->n_stop, o->stop ? "set" : "NULL");
    if (o->n_stop > 0) {
        if (!(s->stop = calloc((size_t)o->n_stop, sizeof *s->stop))) return wk__err(WK_ERR_OOM, OP_NEW, "no memory");
        for (int i = 0; i < o->n_stop; i++) {
            if (!o->stop[i] || !o->stop[i][0])
                return wk__err(WK_ERR_ARG, OP_NEW, "stop string %d is %s", i, o->stop[i] ? "empty" : "NULL");
            if (!(s->stop[i] = dup_str(o->stop[i]))) return wk__err(WK_ERR_OOM, OP_NEW, "no memory");
        }
        s->o.stop = (const char *const *)s->stop;
    }
    if (o->system) {
        if (!(s->system = dup_str(o->system))) return wk__err(WK_ERR_OOM, OP_NEW, "no memory");
        if (push(s, "system", o->system, strlen(o->system), OP_NEW)) return wk_last_status();
        s->n_fixed = 1;
    }
    return WK_OK;
}

wk_chat_session *wk_chat_session_new(const wk_lm *m, const wk_generate_opts *opts) {
    wk_generate_opts defaults;
    if (!opts) wk_generate_opts_default(&defaults);
    const wk_generate_opts *o = opts ? opts : &defaults;
    if (!m) {
        wk__err(WK_ERR_ARG, OP_NEW, "the model is NULL");
        return NULL;
    }
    if (!wk_lm_tokenizer(m)) {
        wk__err(WK_ERR_ARG, OP_NEW, "the model has no tokenizer");
        return NULL;
    }
    const char *src = wk_lm_chat_template(m);
    if (!src) {
        wk__err(WK_ERR_ARG, OP_NEW, "the model file has no chat template");
        return NULL;
    }
    wk_chat_session *s = calloc(1, sizeof *s);
    if (!s) {
        wk__err(WK_ERR_OOM, OP_NEW, "no memory for a chat session");
        return NULL;
    }
    s->m = m;
    s->now = (int64_t)time(NULL);
    s->kept.on_end = reply_ended;
    s->kept.ctx = s;
    if (copy_opts(s, o)) goto fail;
    /* the sampler's options are checked now, not at the first reply */
    wk_sampler *probe = wk_sampler_new(&s->o.sampling);
    if (!probe) goto fail;
    wk_sampler_free(probe);
    if (!(s->tmpl = wk_chat_template_compile(src))) {
        wk__err(wk_last_status(), OP_NEW, "chat template: %s", wk_last_error());
        goto fail;
    }
    return s;
fail:
    wk_chat_session_free(s);
    return NULL;
}

void wk_chat_session_free(wk_chat_session *s) {
    if (!s) return;
    if (s->kept.open) wk__gen_detach(s->kept.open); /* the open reply owns the cache now */
    else wk_kv_cache_free(s->kept.cache);
    free(s->kept.ids);
    while (s->n) drop_last(s);
    free(s->msgs);
    for (int i = 0; s->stop && i < s->o.n_stop; i++) free(s->stop[i]);
    free(s->stop);
    free(s->system);
    wk_chat_template_free(s->tmpl);
    free(s);
}

static wk_status check_idle(const wk_chat_session *s, const char *op) {
    if (!s) return wk__err(WK_ERR_ARG, op, "the session is NULL");
    if (s->kept.open) return wk__err(WK_ERR_ARG, op, "a reply is still open: step it to its end or free it first");
    return WK_OK;
}

wk_status wk_chat_session_add(wk_chat_session *s, const char *role, const char *content) {
    if (check_idle(s, OP_ADD)) return wk_last_status();
    if (!role || !role[0] || !content)
        return wk__err(WK_ERR_ARG, OP_ADD, "the %s is %s", !content && role && role[0] ? "content" : "role",
                       (role && !role[0]) ? "empty" : "NULL");
    return push(s, role, content, strlen(content), OP_ADD);
}

wk_status wk_chat_session_pop(wk_chat_session *s) {
    if (check_idle(s, OP_POP)) return wk_last_status();
    if (!s->n) return wk__err(WK_ERR_ARG, OP_POP, "the conversation has no messages");
    drop_last(s);
    if (s->n < s->n_fixed) s->n_fixed = s->n;
    return WK_OK;
}

wk_status wk_chat_session_reset(wk_chat_session *s) {
    if (check_idle(s, OP_RESET)) return wk_last_status();
    while (s->n > s->n_fixed) drop_last(s);
    return WK_OK;
}

wk_gen *wk_chat_session_reply(wk_chat_session *s) {
    if (check_idle(s, OP_REPLY)) return NULL;
    if (!s->n) {
        wk__err(WK_ERR_ARG, OP_REPLY, "the conversation has no messages (add a user message first)");
        return NULL;
    }
    char *text;
    if (wk__gen_render(s->m, s->tmpl, s->msgs, s->n, s->now, &text, OP_REPLY)) return NULL;
    wk_gen *g = wk__gen_start_kept(s->m, text, &s->o, OP_REPLY, &s->kept);
    free(text);
    return g;
}

const wk_chat_message *wk_chat_session_messages(const wk_chat_session *s, size_t *n) {
    if (n) *n = s ? s->n : 0;
    return s && s->n ? s->msgs : NULL;
}

int64_t wk_chat_session_cached(const wk_chat_session *s) { return s ? wk_kv_cache_len(s->kept.cache) : 0; }
int64_t wk_chat_session_capacity(const wk_chat_session *s) { return s ? wk_kv_cache_capacity(s->kept.cache) : 0; }
