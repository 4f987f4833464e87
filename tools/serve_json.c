/* The JSON writer of `wick serve` (tools/serve_json.h). */
#include "tools/serve_json.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wk__sbuf_free(wk__sbuf *b) {
    free(b->p);
    *b = (wk__sbuf){0};
}

static bool reserve(wk__sbuf *b, size_t more) {
    if (b->oom) return false;
    if (b->n + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void wk__sbuf_put(wk__sbuf *b, const void *s, size_t n) {
    if (!reserve(b, n)) return;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void wk__sbuf_puts(wk__sbuf *b, const char *s) { wk__sbuf_put(b, s, strlen(s)); }

void wk__sbuf_printf(wk__sbuf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)k < sizeof small) {
        wk__sbuf_put(b, small, (size_t)k);
        return;
    }
    if (!reserve(b, (size_t)k)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

char *wk__sbuf_take(wk__sbuf *b, size_t *n) {
    if (b->oom || !reserve(b, 0)) {
        wk__sbuf_free(b);
        return NULL;
    }
    char *p = b->p;
    if (n) *n = b->n;
    *b = (wk__sbuf){0};
    return p;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid:
 * no overlong forms, surrogates or code points past U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

void wk__json_w_str(wk__sbuf *b, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    wk__sbuf_put(b, "\"", 1);
    size_t i = 0;
    while (i < n) {
        /* copy the longest run that needs no escaping at once */
        size_t j = i;
        while (j < n && u[j] >= 0x20 && u[j] < 0x80 && u[j] != '"' && u[j] != '\\') j++;
        if (j > i) {
            wk__sbuf_put(b, s + i, j - i);
            i = j;
            continue;
        }
        unsigned c = u[i];
        if (c >= 0x80) {
            size_t l = utf8_len(u + i, n - i);
            if (l) wk__sbuf_put(b, s + i, l), i += l;
            else wk__sbuf_puts(b, "\xEF\xBF\xBD"), i++; /* U+FFFD for each invalid byte */
            continue;
        }
        switch (c) {
        case '"': wk__sbuf_puts(b, "\\\""); break;
        case '\\': wk__sbuf_puts(b, "\\\\"); break;
        case '\n': wk__sbuf_puts(b, "\\n"); break;
        case '\r': wk__sbuf_puts(b, "\\r"); break;
        case '\t': wk__sbuf_puts(b, "\\t"); break;
        case '\b': wk__sbuf_puts(b, "\\b"); break;
        case '\f': wk__sbuf_puts(b, "\\f"); break;
        default: wk__sbuf_printf(b, "\\u%04x", c); break;
        }
        i++;
    }
    wk__sbuf_put(b, "\"", 1);
}

void wk__json_w_cstr(wk__sbuf *b, const char *s) {
    if (!s) wk__sbuf_puts(b, "null");
    else wk__json_w_str(b, s, strlen(s));
}

void wk__json_w_num(wk__sbuf *b, double v) {
    if (!isfinite(v)) wk__sbuf_puts(b, "null");
    else if (v == 0) wk__sbuf_puts(b, signbit(v) ? "-0.0" : "0.0");
    else wk__sbuf_printf(b, "%.17g", v);
}

void wk__json_w_f32(wk__sbuf *b, float v) {
    /* %.9g round-trips any float: the f32 an embedding or logprob really is */
    if (!isfinite(v)) wk__sbuf_puts(b, "null");
    else wk__sbuf_printf(b, "%.9g", (double)v);
}

void wk__json_w_int(wk__sbuf *b, int64_t v) { wk__sbuf_printf(b, "%lld", (long long)v); }

void wk__json_w_key(wk__sbuf *b, const char *key, bool first) {
    if (!first) wk__sbuf_put(b, ",", 1);
    wk__json_w_str(b, key, strlen(key));
    wk__sbuf_put(b, ":", 1);
}
