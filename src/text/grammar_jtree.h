/* A JSON document as a tree, for the JSON-schema compiler (which follows
 * $ref pointers and so needs random access; io/json.h only pulls). */
#ifndef WICK_TEXT_GRAMMAR_JTREE_H
#define WICK_TEXT_GRAMMAR_JTREE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "io/json.h"

typedef struct wk__jv {
    wk__json_type type;
    char *s;      /* a string (decoded, NUL-terminated) or a number's text */
    size_t n;     /* its length */
    bool b;       /* a bool */
    uint32_t len; /* members of an object, items of an array */
    char **keys;  /* object keys (decoded, NUL-terminated) */
    size_t *klen;
    struct wk__jv *v;
} wk__jv;

/* The whole text as one value; false with msg set. */
bool wk__jv_parse(const char *s, size_t n, wk__jv *out, char *msg, size_t msglen);
void wk__jv_free(wk__jv *v);
/* An object's member (the first with that key), or NULL. */
const wk__jv *wk__jv_get(const wk__jv *obj, const char *key);

#endif
