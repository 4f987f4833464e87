/* wk_chat_render (wick/generate.h): one system + user turn through the
 * model's real chat template, rendered by the Jinja interpreter of the
 * text floor (wick/chat.h) with add_generation_prompt. A template that
 * brings its own default system message (SmolLM2's) renders it when
 * `system` is NULL, because the template itself says so.
 *
 * One check of its own: the rendered prompt must contain the user's
 * message. A template that drops it (a template that is not a chat
 * template at all, say "{{ nonsense }}") would make generation answer a
 * prompt the caller never wrote, so that is an error, not a result. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "wick/chat.h"
#include "wick/generate.h"

int64_t wk_chat_render(const char *tmpl, const char *system, const char *user, char *out, size_t cap) {
    const char *op = "wk_chat_render";
    if (!tmpl || !user || (!out && cap)) {
        wk__err(WK_ERR_ARG, op, "%s is NULL", !tmpl ? "the template" : !user ? "the user message" : "out");
        return -1;
    }
    wk_chat_message msgs[2] = {{.role = "system", .content = system}, {.role = "user", .content = user}};
    wk_chat_opts o = {.add_generation_prompt = true};
    wk_chat_template *t = wk_chat_template_compile(tmpl);
    if (!t) return -1;
    int64_t need = wk_chat_template_render(t, system ? msgs : msgs + 1, system ? 2 : 1, &o, NULL, 0);
    int64_t r = -1;
    if (need >= 0) {
        /* render whole to look for the user message, then copy out */
        char *full = need + 1 > 0 ? (char *)malloc((size_t)need + 1) : NULL;
        if (!full) wk__err(WK_ERR_OOM, op, "out of memory");
        else {
            wk_chat_template_render(t, system ? msgs : msgs + 1, system ? 2 : 1, &o, full, (size_t)need + 1);
            if (user[0] && !strstr(full, user)) {
                wk__err(WK_ERR_ARG, op, "the template's output does not contain the user message (not a chat template?)");
            } else {
                if (cap) {
                    size_t k = (size_t)need < cap ? (size_t)need : cap - 1;
                    memcpy(out, full, k);
                    out[k] = 0;
                }
                r = need;
            }
            free(full);
        }
    }
    wk_chat_template_free(t);
    return r;
}
