/* Template text -> tokens, with the whitespace rules transformers renders
 * chat templates under: trim_blocks (the first newline after a block or
 * comment tag goes), lstrip_blocks (spaces and tabs from the start of a
 * line up to a block or comment tag go), and the explicit controls:
 * `{%-` / `{{-` / `{#-` strip all whitespace before the tag, `-%}` / `-}}`
 * / `-#}` all whitespace after it, `{%+` keeps the line's indent and `+%}`
 * the newline. {% raw %} ... {% endraw %} passes its text through.
 *
 * Inside a tag the text is split into names, numbers, strings and
 * operators; an end delimiter counts only outside brackets, so `{{ {'a':
 * 1}}}` ends where jinja2's does. */
#include <stdlib.h>
#include <string.h>

#include "text/jinja.h"
#include "text/unicode.h"

typedef struct lexer {
    jj_rt *rt;
    const char *s;
    size_t n, pos;
    jj_toks *out;
    size_t line_pos; /* line counting cursor */
    int line;
} lexer;

static int line_of(lexer *L, size_t pos) {
    for (; L->line_pos < pos; L->line_pos++)
        if (L->s[L->line_pos] == '\n') L->line++;
    return L->line;
}

static void emit(lexer *L, int t, size_t at, const char *s, size_t n) {
    jj_toks *o = L->out;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 256;
        jj_tok *v = jj_alloc(L->rt, cap * sizeof *v);
        if (o->n) memcpy(v, o->v, o->n * sizeof *v);
        o->v = v;
        o->cap = cap;
    }
    jj_tok *k = &o->v[o->n++];
    memset(k, 0, sizeof *k);
    k->t = (uint8_t)t;
    k->line = line_of(L, at);
    k->s = s;
    k->n = n;
}

/* One whitespace character (Python's \s: str.isspace) at s[i..n); its
 * byte length, 0 when not whitespace. */
static int space_at(const char *s, size_t n, size_t i) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80) return (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) ? 1 : 0;
    int len;
    uint32_t cp = wk__utf8_next((const unsigned char *)s + i, n - i, &len);
    return jj_py_space(cp) ? len : 0;
}

static size_t skip_space(const char *s, size_t n, size_t i) {
    int k;
    while (i < n && (k = space_at(s, n, i)) > 0) i += (size_t)k;
    return i;
}

/* text.rstrip(): the length of s[0..n) without trailing whitespace. */
static size_t rstrip_len(const char *s, size_t n) {
    size_t keep = 0, i = 0;
    while (i < n) {
        int k = space_at(s, n, i);
        if (k) i += (size_t)k;
        else {
            int len;
            wk__utf8_next((const unsigned char *)s + i, n - i, &len);
            i += (size_t)len;
            keep = i;
        }
    }
    return keep;
}

/* The text before a tag, with the tag's strip sign and lstrip_blocks
 * applied; `block`: a block or comment tag (lstrip_blocks skips {{). */
static void emit_text(lexer *L, size_t from, size_t to, char sign, bool block, bool line_starting) {
    size_t n = to - from;
    const char *t = L->s + from;
    if (sign == '-') n = rstrip_len(t, n);
    else if (sign != '+' && block) {
        size_t l = n;
        while (l > 0 && t[l - 1] != '\n') l--;
        if ((l > 0 || line_starting) && l < n) {
            size_t i = l;
            int k;
            while (i < n && (k = space_at(t, n, i)) > 0) i += (size_t)k;
            if (i == n) n = l;
        }
    }
    if (n) emit(L, TK_DATA, from, t, n);
}

/* `{%[-+]?\s*WORD\s*(-%}\s*|%})` at pos (raw_begin when WORD is raw); the
 * end of the match, or 0. For endraw the `+%}` and trim_blocks forms too. */
static size_t match_word_tag(lexer *L, size_t pos, const char *word, bool endraw, char *sign) {
    const char *s = L->s;
    size_t n = L->n, i = pos + 2;
    if (pos + 2 > n || s[pos] != '{' || s[pos + 1] != '%') return 0;
    *sign = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) *sign = s[i++];
    i = skip_space(s, n, i);
    size_t w = strlen(word);
    if (n - i < w || memcmp(s + i, word, w) != 0) return 0;
    i = skip_space(s, n, i + w);
    if (endraw && n - i >= 3 && s[i] == '+' && s[i + 1] == '%' && s[i + 2] == '}') return i + 3;
    if (n - i >= 3 && s[i] == '-' && s[i + 1] == '%' && s[i + 2] == '}') return skip_space(s, n, i + 3);
    if (n - i >= 2 && s[i] == '%' && s[i + 1] == '}') {
        i += 2;
        if (endraw && i < n && s[i] == '\n') i++;
        return i;
    }
    return 0;
}

static uint32_t hexval(lexer *L, size_t at, const char *p, int k) {
    uint32_t v = 0;
    for (int j = 0; j < k; j++) {
        char c = p[j];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) jj_fail(L->rt, line_of(L, at), "bad escape in a string literal");
        v = v * 16 + (uint32_t)d;
    }
    return v;
}

/* A string literal's body, unescaped as Python's unicode-escape does. */
static void lex_string(lexer *L, size_t start) {
    const char *s = L->s;
    char q = s[start];
    size_t i = start + 1;
    while (i < L->n && s[i] != q) i += (s[i] == '\\' && i + 1 < L->n) ? 2 : 1;
    if (i >= L->n) jj_fail(L->rt, line_of(L, start), "unterminated string literal");
    size_t end = i;
    char *o = jj_alloc(L->rt, end - start + 4);
    size_t k = 0;
    for (i = start + 1; i < end;) {
        if (s[i] != '\\') {
            o[k++] = s[i++];
            continue;
        }
        char c = s[i + 1];
        i += 2;
        uint32_t cp;
        switch (c) {
        case 'n': o[k++] = '\n'; continue;
        case 't': o[k++] = '\t'; continue;
        case 'r': o[k++] = '\r'; continue;
        case 'a': o[k++] = '\a'; continue;
        case 'b': o[k++] = '\b'; continue;
        case 'f': o[k++] = '\f'; continue;
        case 'v': o[k++] = '\v'; continue;
        case '\\': case '\'': case '"': o[k++] = c; continue;
        case '\n': continue; /* a backslash-newline joins the lines */
        case 'x': case 'u': case 'U': {
            int w = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            if (end - i < (size_t)w) jj_fail(L->rt, line_of(L, start), "truncated \\%c escape in a string literal", c);
            cp = hexval(L, start, s + i, w);
            i += (size_t)w;
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                cp = (uint32_t)(c - '0');
                for (int j = 0; j < 2 && i < end && s[i] >= '0' && s[i] <= '7'; j++) cp = cp * 8 + (uint32_t)(s[i++] - '0');
                break;
            }
            o[k++] = '\\'; /* unknown escapes stay as written */
            o[k++] = c;
            continue;
        }
        if (cp >= 0x110000 || (cp >= 0xD800 && cp < 0xE000))
            jj_fail(L->rt, line_of(L, start), "escape \\U%08x in a string literal is not a character wick can store", (unsigned)cp);
        k += (size_t)wk__utf8_put(cp, (unsigned char *)o + k);
    }
    o[k] = 0;
    emit(L, TK_STRING, start, o, k);
    L->pos = end + 1;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* digits with single underscores between them: (\d+_)*\d+ */
static size_t digits(const char *s, size_t n, size_t i) {
    if (i >= n || !is_digit(s[i])) return i;
    while (i < n && is_digit(s[i])) {
        i++;
        if (i + 1 < n && s[i] == '_' && is_digit(s[i + 1])) i++;
    }
    return i;
}

static void lex_number(lexer *L) {
    const char *s = L->s;
    size_t n = L->n, start = L->pos, i = digits(s, n, start);
    bool is_float = false;
    if (!(start > 0 && s[start - 1] == '.')) { /* (?<!\.): x.0.1 is two subscripts */
        size_t j = i;
        if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {
            j = digits(s, n, j + 1);
            is_float = true;
        }
        if (j < n && s[j] == 'e') {
            size_t e = j + 1;
            if (e < n && (s[e] == '+' || s[e] == '-')) e++;
            if (e < n && is_digit(s[e])) {
                j = digits(s, n, e);
                is_float = true;
            }
        }
        if (is_float) i = j;
    }
    char buf[80];
    size_t k = 0;
    for (size_t p = start; p < i && k < sizeof buf - 1; p++)
        if (s[p] != '_') buf[k++] = s[p];
    buf[k] = 0;
    emit(L, is_float ? TK_FLOAT : TK_INT, start, s + start, i - start);
    jj_tok *t = &L->out->v[L->out->n - 1];
    if (is_float) t->f = strtod(buf, NULL);
    else {
        int64_t v = 0;
        for (size_t p = 0; p < k; p++) {
            if (v > (INT64_MAX - (buf[p] - '0')) / 10) jj_fail(L->rt, t->line, "integer literal %s is too large", buf);
            v = v * 10 + (buf[p] - '0');
        }
        t->i = v;
    }
    L->pos = i;
}

static const char *const OPS2[] = {"//", "**", "==", "!=", ">=", "<="};

/* The inside of a {{ }} or {% %} tag, up to and including its end. */
static bool lex_tag(lexer *L, bool block, bool *line_starting) {
    const char *s = L->s;
    size_t n = L->n;
    char close = block ? '%' : '}';
    char stack[JJ_MAX_DEPTH];
    int depth = 0;
    for (;;) {
        size_t i = L->pos;
        if (i >= n) jj_fail(L->rt, line_of(L, i), "unexpected end of template inside a %s tag", block ? "{% %}" : "{{ }}");
        if (depth == 0) {
            size_t end = 0;
            if (block && n - i >= 3 && s[i] == '+' && s[i + 1] == '%' && s[i + 2] == '}') end = i + 3;
            else if (n - i >= 3 && s[i] == '-' && s[i + 1] == close && s[i + 2] == '}') end = skip_space(s, n, i + 3);
            else if (n - i >= 2 && s[i] == close && s[i + 1] == '}') {
                end = i + 2;
                if (block && end < n && s[end] == '\n') end++; /* trim_blocks */
            }
            if (end) {
                emit(L, block ? TK_BLOCK_END : TK_VAR_END, i, s + i, end - i);
                *line_starting = s[end - 1] == '\n';
                L->pos = end;
                return true;
            }
        }
        int k = space_at(s, n, i);
        if (k) {
            L->pos = skip_space(s, n, i);
            continue;
        }
        char c = s[i];
        if (is_digit(c)) {
            lex_number(L);
            continue;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            size_t j = i + 1;
            while (j < n && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') || s[j] == '_' || is_digit(s[j]))) j++;
            emit(L, TK_NAME, i, s + i, j - i);
            L->pos = j;
            continue;
        }
        if (c == '\'' || c == '"') {
            lex_string(L, i);
            continue;
        }
        size_t len = 0;
        for (size_t o = 0; o < sizeof OPS2 / sizeof OPS2[0]; o++)
            if (n - i >= 2 && s[i] == OPS2[o][0] && s[i + 1] == OPS2[o][1]) len = 2;
        if (!len && c && strchr("+-/*%~[](){}><=.:|,;", c)) len = 1;
        if (!len) jj_fail(L->rt, line_of(L, i), "unexpected character '%c' in a tag", c);
        if (len == 1 && (c == '(' || c == '[' || c == '{')) {
            if (depth == JJ_MAX_DEPTH) jj_fail(L->rt, line_of(L, i), "brackets nested too deeply");
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
            if (depth == 0) jj_fail(L->rt, line_of(L, i), "unexpected '%c'", c);
            if (stack[--depth] != c) jj_fail(L->rt, line_of(L, i), "unexpected '%c', expected '%c'", c, stack[depth]);
        }
        emit(L, TK_OP, i, s + i, len);
        L->pos = i + len;
    }
}

void jj_lex(jj_rt *rt, const char *src, size_t n, jj_toks *out) {
    lexer L = {.rt = rt, .s = src, .n = n, .out = out, .line = 1};
    bool line_starting = true;
    while (L.pos < n) {
        /* the next tag start */
        size_t t = L.pos;
        const char *p = NULL;
        for (;;) {
            p = memchr(src + t, '{', n - t);
            if (!p || (size_t)(p - src) + 1 >= n) {
                p = NULL;
                break;
            }
            char c = p[1];
            if (c == '{' || c == '%' || c == '#') break;
            t = (size_t)(p - src) + 1;
        }
        if (!p) {
            emit(&L, TK_DATA, L.pos, src + L.pos, n - L.pos);
            break;
        }
        t = (size_t)(p - src);
        char kind = p[1], sign = (t + 2 < n && (p[2] == '-' || p[2] == '+')) ? p[2] : 0, rsign;
        size_t raw_end = kind == '%' ? match_word_tag(&L, t, "raw", false, &rsign) : 0;
        emit_text(&L, L.pos, t, sign, kind != '{', line_starting);
        if (raw_end) {
            bool ls = src[raw_end - 1] == '\n';
            size_t q = raw_end, e = 0;
            char esign = 0;
            for (; q + 1 < n; q++)
                if (src[q] == '{' && src[q + 1] == '%' && (e = match_word_tag(&L, q, "endraw", true, &esign))) break;
            if (!e) jj_fail(rt, line_of(&L, t), "missing end of raw directive ({%% endraw %%})");
            emit_text(&L, raw_end, q, esign, true, ls);
            line_starting = src[e - 1] == '\n';
            L.pos = e;
            continue;
        }
        size_t body = t + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            const char *e = NULL;
            for (size_t q = body; q + 1 < n; q++)
                if (src[q] == '#' && src[q + 1] == '}') {
                    e = src + q;
                    break;
                }
            if (!e) jj_fail(rt, line_of(&L, t), "missing end of comment tag");
            size_t q = (size_t)(e - src), end = q + 2;
            if (q > body && src[q - 1] == '-') end = skip_space(src, n, end);
            else if (!(q > body && src[q - 1] == '+') && end < n && src[end] == '\n') end++;
            line_starting = src[end - 1] == '\n';
            L.pos = end;
            continue;
        }
        emit(&L, kind == '%' ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, t, src + t, body - t);
        L.pos = body;
        lex_tag(&L, kind == '%', &line_starting);
    }
    emit(&L, TK_EOF, n, src + n, 0);
}
