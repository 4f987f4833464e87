/* `wick serve`'s output side: a growable byte buffer and a small JSON
 * writer over it. Strings are escaped and their UTF-8 checked (an invalid
 * byte becomes U+FFFD, so a token that ends inside a character still gives
 * valid JSON); numbers that are NaN or infinite are written as null, never
 * as text JSON cannot hold. An allocation failure sets oom and later writes
 * do nothing: the caller checks once at the end. */
#ifndef WICK_TOOLS_SERVE_JSON_H
#define WICK_TOOLS_SERVE_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wk__sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} wk__sbuf;

void wk__sbuf_free(wk__sbuf *b);
void wk__sbuf_put(wk__sbuf *b, const void *s, size_t n);
void wk__sbuf_puts(wk__sbuf *b, const char *s);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void wk__sbuf_printf(wk__sbuf *b, const char *fmt, ...);
/* Take the bytes (NUL-terminated) and leave b empty; NULL after oom. */
char *wk__sbuf_take(wk__sbuf *b, size_t *n);

/* A JSON string literal of s[0, n) with its quotes. */
void wk__json_w_str(wk__sbuf *b, const char *s, size_t n);
void wk__json_w_cstr(wk__sbuf *b, const char *s); /* NULL: null */
/* A number that round-trips the float/double (null when not finite). */
void wk__json_w_num(wk__sbuf *b, double v);
void wk__json_w_f32(wk__sbuf *b, float v);
void wk__json_w_int(wk__sbuf *b, int64_t v);
/* "key": (a comma first unless first) */
void wk__json_w_key(wk__sbuf *b, const char *key, bool first);

#endif
