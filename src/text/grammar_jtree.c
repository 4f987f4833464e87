/* JSON text -> tree (grammar_jtree.h), on io/json.h's strict pull parser;
 * recursion follows the document's nesting, which that parser limits. */
#include <stdlib.h>
#include <string.h>
#include "text/grammar_jtree.h"

static char *dup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static bool push(wk__json *p, wk__jv *o, uint32_t *cap, bool keyed) {
    if (o->len < *cap) return true;
    uint32_t c = *cap ? *cap * 2 : 4;
    wk__jv *v = realloc(o->v, sizeof *v * c);
    if (v) o->v = v;
    if (keyed) {
        char **k = realloc(o->keys, sizeof *k * c);
        if (k) o->keys = k;
        size_t *kl = realloc(o->klen, sizeof *kl * c);
        if (kl) o->klen = kl;
        if (!k || !kl) v = NULL;
    }
    if (!v) return wk__json_fail(p, "out of memory");
    *cap = c;
    return true;
}

static bool value(wk__json *p, wk__jv *out) {
    memset(out, 0, sizeof *out);
    out->type = wk__json_peek(p);
    const char *s;
    size_t n;
    uint32_t cap = 0;
    switch (out->type) {
    case WK__JSON_NULL: return wk__json_null(p);
    case WK__JSON_BOOL: return wk__json_bool(p, &out->b);
    case WK__JSON_NUMBER:
        if (!wk__json_number_text(p, &s, &n)) return false;
        return (out->s = dup(s, n)) ? (out->n = n, true) : wk__json_fail(p, "out of memory");
    case WK__JSON_STRING:
        if (!wk__json_string(p, &s, &n)) return false;
        return (out->s = dup(s, n)) ? (out->n = n, true) : wk__json_fail(p, "out of memory");
    case WK__JSON_ARRAY:
        if (!wk__json_array(p)) return false;
        while (wk__json_item(p)) {
            if (!push(p, out, &cap, false)) return false;
            if (!value(p, &out->v[out->len++])) return false;
        }
        return !p->failed;
    case WK__JSON_OBJECT:
        if (!wk__json_object(p)) return false;
        while (wk__json_key(p, &s, &n)) {
            if (!push(p, out, &cap, true)) return false;
            out->keys[out->len] = dup(s, n);
            out->klen[out->len] = n;
            if (!out->keys[out->len]) {
                out->v[out->len].type = WK__JSON_NULL; /* so free sees a clean slot */
                out->len++;
                return wk__json_fail(p, "out of memory");
            }
            if (!value(p, &out->v[out->len++])) return false;
        }
        return !p->failed;
    default: return wk__json_fail(p, "expected a value");
    }
}

bool wk__jv_parse(const char *s, size_t n, wk__jv *out, char *msg, size_t msglen) {
    wk__json p;
    wk__json_init(&p, s, n);
    bool ok = value(&p, out) && wk__json_finish(&p);
    if (!ok) {
        if (msglen) {
            strncpy(msg, p.msg[0] ? p.msg : "malformed JSON", msglen - 1);
            msg[msglen - 1] = 0;
        }
        wk__jv_free(out);
    }
    wk__json_free(&p);
    return ok;
}

void wk__jv_free(wk__jv *v) {
    if (!v) return;
    for (uint32_t i = 0; i < v->len; i++) {
        wk__jv_free(&v->v[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->s);
    free(v->v);
    free(v->keys);
    free(v->klen);
    memset(v, 0, sizeof *v);
}

const wk__jv *wk__jv_get(const wk__jv *obj, const char *key) {
    if (!obj || obj->type != WK__JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < obj->len; i++)
        if (obj->klen[i] == n && memcmp(obj->keys[i], key, n) == 0) return &obj->v[i];
    return NULL;
}
