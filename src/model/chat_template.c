/* Chat prompts for ChatML-style templates, without a Jinja interpreter.
 *
 * The templates this covers (SmolLM2, Qwen, ...) all render one turn as
 *     <|im_start|>ROLE\nCONTENT<|im_end|>\n
 * and the generation prompt as <|im_start|>assistant\n. What differs is the
 * system turn when the caller gives none: SmolLM2's template emits a fixed
 * string literal '<|im_start|>system\nYou are ...<|im_end|>\n' when the first
 * message is not a system message. So the template text is searched for
 * such a literal (opened by a quote right before <|im_start|>system, closed
 * by <|im_end|> before the quote closes) and it becomes the default system
 * message. Anything that is not ChatML (Llama-3 headers, [INST], ...) is
 * refused with -1 rather than rendered wrongly. */
#include <stdbool.h>
#include <string.h>
#include "base/error.h"
#include "wick/generate.h"

static const char IM_START[] = "<|im_start|>", IM_END[] = "<|im_end|>";

/* Appends to out[0..cap) at *len, always counting the bytes. */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n) {
    if (*len < cap) memcpy(out + *len, s, n < cap - *len ? n : cap - *len);
    *len += n;
}

/* One Jinja string-literal character at p (an escape counts as one);
 * sets *c and returns the bytes consumed. */
static size_t lit_char(const char *p, char *c) {
    if (p[0] == '\\' && p[1]) {
        switch (p[1]) {
        case 'n': *c = '\n'; return 2;
        case 't': *c = '\t'; return 2;
        case 'r': *c = '\r'; return 2;
        default: *c = p[1]; return 2; /* \' \" \\ */
        }
    }
    *c = p[0];
    return 1;
}

/* The default system message as [*start, *end) in tmpl (still escaped);
 * false when the template has none. */
static bool default_system(const char *tmpl, const char **start, const char **end) {
    static const char SYS[] = "<|im_start|>system";
    for (const char *p = strstr(tmpl, SYS); p; p = strstr(p + 1, SYS)) {
        if (p == tmpl || (p[-1] != '\'' && p[-1] != '"')) continue;
        char quote = p[-1], c;
        const char *q = p + strlen(SYS);
        q += lit_char(q, &c);
        if (c != '\n') continue;
        const char *body = q;
        while (*q && *q != quote && strncmp(q, IM_END, strlen(IM_END)) != 0) q += lit_char(q, &c);
        if (*q != '<') continue; /* the literal closed first: the content is an expression */
        *start = body;
        *end = q;
        return true;
    }
    return false;
}

int64_t wk_chat_render(const char *tmpl, const char *system, const char *user, char *out, size_t cap) {
    const char *op = "wk_chat_render";
    if (!tmpl || !user || (!out && cap)) {
        wk__err(WK_ERR_ARG, op, "%s is NULL", !tmpl ? "the template" : !user ? "the user message" : "out");
        return -1;
    }
    if (!strstr(tmpl, IM_START) || !strstr(tmpl, IM_END) || !strstr(tmpl, "role") || !strstr(tmpl, "content")) {
        wk__err(WK_ERR_ARG, op, "not a ChatML-style template (no <|im_start|>role ... <|im_end|> turns); "
                                "wick renders only those");
        return -1;
    }
    size_t len = 0;
    const char *ds, *de;
    if (system) {
        put(out, cap, &len, "<|im_start|>system\n", 19);
        put(out, cap, &len, system, strlen(system));
        put(out, cap, &len, "<|im_end|>\n", 11);
    } else if (default_system(tmpl, &ds, &de)) {
        put(out, cap, &len, "<|im_start|>system\n", 19);
        for (const char *p = ds; p < de;) {
            char c;
            p += lit_char(p, &c);
            put(out, cap, &len, &c, 1);
        }
        put(out, cap, &len, "<|im_end|>\n", 11);
    }
    put(out, cap, &len, "<|im_start|>user\n", 17);
    put(out, cap, &len, user, strlen(user));
    put(out, cap, &len, "<|im_end|>\n<|im_start|>assistant\n", 33);
    if (len < cap) out[len] = 0;
    else if (cap) out[cap - 1] = 0;
    return (int64_t)len;
}
