/* Chat templates: the Jinja subset that models' chat templates are written
 * in (GGUF `tokenizer.chat_template`, tokenizer_config.json
 * `chat_template`), rendered as Hugging Face transformers renders them
 * (jinja2 with trim_blocks and lstrip_blocks, its sandbox's rules, the
 * globals raise_exception / strftime_now / namespace / dict / range and
 * transformers' tojson). Byte for byte the same output as transformers on
 * llama.cpp's collection of real templates (tests/test_chat_template.c).
 *
 * A compiled template is immutable: any number of threads may render with
 * one at once. Errors: NULL / -1 with wk_last_error naming the construct
 * and its template line ("jinja: line 3: filter 'xyz' is not supported");
 * a template's raise_exception(msg) is an error carrying msg. Hostile
 * templates hit limits (nesting depth, loop iterations, output and memory
 * size), never a crash. */
#ifndef WICK_CHAT_H
#define WICK_CHAT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_chat_template wk_chat_template;

/* One message. role and content are required (content NULL: the message
 * has no content key, as an assistant turn that only calls tools). The
 * optional fields, when not NULL, become keys of the message dict:
 * content_json replaces content with any JSON value (a list of
 * {"type": "text", "text": ...} parts, say); tool_calls_json is a JSON
 * array; tool_call_id and name are strings. */
typedef struct wk_chat_message {
    const char *role, *content;
    const char *content_json, *tool_calls_json, *tool_call_id, *name;
} wk_chat_message;

/* The render context besides `messages`. tools_json NULL: tools is none
 * (as transformers passes it without tools=); extra_json, when set, is a
 * JSON object whose members
 * become more template variables (enable_thinking, documents, ...).
 * NULL bos_token / eos_token: those variables are not defined. */
typedef struct wk_chat_opts {
    const char *bos_token, *eos_token;
    bool add_generation_prompt;
    const char *tools_json;
    const char *extra_json;
    /* strftime_now's clock (seconds since the epoch, UTC); 0: time(NULL).
     * Tests pin it so renders are reproducible. */
    int64_t now;
} wk_chat_opts;

/* Parse a template once; render it many times. */
wk_chat_template *wk_chat_template_compile(const char *src);
void wk_chat_template_free(wk_chat_template *t);

/* Render into out[0..cap) snprintf-style: returns the full length (the
 * text is cut and NUL-terminated when cap is too small; out may be NULL
 * with cap 0), -1 on failure. */
int64_t wk_chat_template_render(const wk_chat_template *t, const wk_chat_message *msgs, size_t n,
                                const wk_chat_opts *o, char *out, size_t cap);

/* compile + render + free in one call. */
int64_t wk_chat_apply(const char *tmpl, const wk_chat_message *msgs, size_t n, const wk_chat_opts *o, char *out,
                      size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* WICK_CHAT_H */
