/* A small strict JSON reader for model-file headers (safetensors' header and
 * its sharded index). It is a pull parser: the caller walks the document
 * with wk__json_object/key, wk__json_array/item and reads scalars, so no
 * tree is built and a hostile document cannot make it allocate more than
 * its longest string. Strict: RFC 8259 grammar only (no comments, trailing
 * commas, NaN, leading zeros or '+'), strings must be valid UTF-8 without raw
 * control characters, \uXXXX escapes must pair surrogates, nesting is
 * limited to WK__JSON_MAX_DEPTH, and integers are read as int64 with an
 * overflow check. The first error stops the parse: every later call fails,
 * and p->msg says what and where. */
#ifndef WICK_IO_JSON_H
#define WICK_IO_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WK__JSON_MAX_DEPTH 64

typedef enum wk__json_type {
    WK__JSON_BAD = 0, /* no value starts here (or the parse already failed) */
    WK__JSON_NULL,
    WK__JSON_BOOL,
    WK__JSON_NUMBER,
    WK__JSON_STRING,
    WK__JSON_ARRAY,
    WK__JSON_OBJECT
} wk__json_type;

typedef struct wk__json {
    const char *s;   /* the document (need not be NUL-terminated) */
    size_t n;        /* its length */
    size_t pos;      /* next byte to read */
    int depth;       /* open containers */
    uint64_t fresh;  /* bit d: the container at depth d has had no member yet */
    bool failed;
    bool oom;        /* the failure was the string scratch's allocation, not the document */
    char msg[160];   /* the first error, with its byte position */
    char *buf;       /* decoded string scratch (wk__json_string / key) */
    size_t cap;
} wk__json;

void wk__json_init(wk__json *p, const void *s, size_t n);
/* Frees the string scratch (the parser itself is the caller's). */
void wk__json_free(wk__json *p);
/* Records an error (first one wins) and returns false; for callers whose
 * own checks fail ("shape must be an array"), so one message reports both. */
bool wk__json_fail(wk__json *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Type of the value that starts at the cursor (skips whitespace). */
wk__json_type wk__json_peek(wk__json *p);

/* Consume '{'. Then call wk__json_key until it returns false: true means a
 * member follows (key decoded, NUL-terminated, in p's scratch, valid until
 * the next string or key; the cursor is at its value, which the caller must
 * read or skip); false means the closing '}' was consumed, or an error
 * (p->failed). */
bool wk__json_object(wk__json *p);
bool wk__json_key(wk__json *p, const char **key, size_t *len);
/* Consume '['; then wk__json_item returns true while an element follows
 * (the cursor at it), false after ']' or on error. */
bool wk__json_array(wk__json *p);
bool wk__json_item(wk__json *p);

/* A string value, decoded (escapes resolved) into p's scratch and
 * NUL-terminated; *len excludes the NUL and counts an escaped \u0000, so a
 * caller that needs C strings compares strlen(s) with *len. */
bool wk__json_string(wk__json *p, const char **s, size_t *len);
/* An integer number that fits int64 (a fraction, an exponent or overflow
 * is an error). */
bool wk__json_int(wk__json *p, int64_t *v);
/* A number's literal text (any valid JSON number), pointing into the
 * document: *len bytes, not NUL-terminated. */
bool wk__json_number_text(wk__json *p, const char **s, size_t *len);
bool wk__json_bool(wk__json *p, bool *v);
bool wk__json_null(wk__json *p);
/* Skip one value of any type, checking it like the readers above. Runs
 * without recursion. */
bool wk__json_skip(wk__json *p);
/* Nothing but whitespace remains after the top-level value. */
bool wk__json_finish(wk__json *p);

/* s[0, n) is valid UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF); the rule the string reader applies. */
bool wk__json_utf8_valid(const char *s, size_t n);

/* Check a whole document: one value and nothing after it. */
bool wk__json_validate(const void *s, size_t n, char *msg, size_t msglen);

#endif
