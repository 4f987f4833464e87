/* OpenAI response pieces (tools/serve_fmt.h). */
#include "tools/serve_fmt.h"
#include <stdlib.h>
#include <string.h>

const char *wk__finish_reason(wk_stop_reason r) {
    return r == WK_STOP_MAX_TOKENS || r == WK_STOP_CONTEXT_FULL ? "length" : "stop";
}

void wk__fmt_head(wk__sbuf *b, const char *id, const char *object, int64_t created, const char *model) {
    wk__sbuf_puts(b, "{\"id\":");
    wk__json_w_cstr(b, id);
    wk__sbuf_puts(b, ",\"object\":");
    wk__json_w_cstr(b, object);
    wk__sbuf_printf(b, ",\"created\":%lld,\"model\":", (long long)created);
    wk__json_w_cstr(b, model);
}

void wk__fmt_usage(wk__sbuf *b, int64_t prompt, int64_t completion) {
    wk__sbuf_printf(b, ",\"usage\":{\"prompt_tokens\":%lld,\"completion_tokens\":%lld,\"total_tokens\":%lld}",
                    (long long)prompt, (long long)completion, (long long)(prompt + completion));
}

/* One id's bytes (special tokens as their text); *n bytes in buf. */
static const char *piece(const wk_tokenizer *t, int32_t id, char *buf, size_t cap, size_t *n) {
    int64_t k = wk_tokenizer_decode(t, &id, 1, false, buf, cap);
    if (k < 0) k = 0;
    if ((size_t)k >= cap) k = (int64_t)cap - 1; /* a token longer than the buffer: cut (never in practice) */
    *n = (size_t)k;
    return buf;
}

static void bytes_array(wk__sbuf *b, const char *s, size_t n) {
    wk__sbuf_put(b, "[", 1);
    for (size_t i = 0; i < n; i++) wk__sbuf_printf(b, i ? ",%u" : "%u", (unsigned)(unsigned char)s[i]);
    wk__sbuf_put(b, "]", 1);
}

static void token_entry(wk__sbuf *b, const wk_tokenizer *t, int32_t id, float lp) {
    char buf[1024];
    size_t n;
    piece(t, id, buf, sizeof buf, &n);
    wk__sbuf_puts(b, "{\"token\":");
    wk__json_w_str(b, buf, n);
    wk__sbuf_puts(b, ",\"logprob\":");
    wk__json_w_f32(b, lp);
    wk__sbuf_puts(b, ",\"bytes\":");
    bytes_array(b, buf, n);
}

void wk__fmt_lp_chat(wk__sbuf *b, const wk_tokenizer *t, const wk__job_ev *ev) {
    token_entry(b, t, ev->id, ev->logprob);
    wk__sbuf_puts(b, ",\"top_logprobs\":[");
    for (int k = 0; k < ev->n_top; k++) {
        if (k) wk__sbuf_put(b, ",", 1);
        token_entry(b, t, ev->top_ids[k], ev->top_logprobs[k]);
        wk__sbuf_put(b, "}", 1);
    }
    wk__sbuf_puts(b, "]}");
}

void wk__lp_cmpl_add(wk__lp_cmpl *l, const wk_tokenizer *t, const wk__job_ev *ev, int64_t offset) {
    char buf[1024];
    size_t n;
    const char *sep = l->n ? "," : "";
    piece(t, ev->id, buf, sizeof buf, &n);
    wk__sbuf_puts(&l->tokens, sep);
    wk__json_w_str(&l->tokens, buf, n);
    wk__sbuf_puts(&l->token_logprobs, sep);
    wk__json_w_f32(&l->token_logprobs, ev->logprob);
    wk__sbuf_printf(&l->text_offset, "%s%lld", sep, (long long)offset);
    wk__sbuf_puts(&l->top_logprobs, sep);
    wk__sbuf_put(&l->top_logprobs, "{", 1);
    for (int k = 0; k < ev->n_top; k++) {
        piece(t, ev->top_ids[k], buf, sizeof buf, &n);
        if (k) wk__sbuf_put(&l->top_logprobs, ",", 1);
        wk__json_w_str(&l->top_logprobs, buf, n);
        wk__sbuf_put(&l->top_logprobs, ":", 1);
        wk__json_w_f32(&l->top_logprobs, ev->top_logprobs[k]);
    }
    wk__sbuf_put(&l->top_logprobs, "}", 1);
    l->n++;
}

static void arr(wk__sbuf *b, const char *key, const wk__sbuf *items, bool first) {
    wk__json_w_key(b, key, first);
    wk__sbuf_put(b, "[", 1);
    if (items->n) wk__sbuf_put(b, items->p, items->n);
    wk__sbuf_put(b, "]", 1);
    if (items->oom) b->oom = true;
}

void wk__lp_cmpl_write(wk__sbuf *b, const wk__lp_cmpl *l) {
    wk__sbuf_put(b, "{", 1);
    arr(b, "tokens", &l->tokens, true);
    arr(b, "token_logprobs", &l->token_logprobs, false);
    arr(b, "top_logprobs", &l->top_logprobs, false);
    arr(b, "text_offset", &l->text_offset, false);
    wk__sbuf_put(b, "}", 1);
}

void wk__lp_cmpl_free(wk__lp_cmpl *l) {
    wk__sbuf_free(&l->tokens);
    wk__sbuf_free(&l->token_logprobs);
    wk__sbuf_free(&l->top_logprobs);
    wk__sbuf_free(&l->text_offset);
    l->n = 0;
}
