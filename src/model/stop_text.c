/* Stop strings over streamed text. Every byte that has been passed on is
 * known not to begin a stop string: before passing bytes on, the longest
 * tail of the held text that is a proper prefix of some stop string is kept
 * back. So a match can only start inside the held text, and searching the
 * held text after each append finds every match, the earliest first. */
#include "model/stop_text.h"
#include <stdlib.h>
#include <string.h>

static int emit(wk__stop_text *t, size_t n) {
    if (n == 0 || !t->on_text) return WK__TEXT_GO_ON;
    return t->on_text(t->ctx, t->hold, n) ? WK__TEXT_CALLBACK : WK__TEXT_GO_ON;
}

/* The earliest start of a complete stop string in the held text, or nhold. */
static size_t first_match(const wk__stop_text *t) {
    size_t best = t->nhold;
    for (int i = 0; i < t->n_stop; i++) {
        size_t ls = strlen(t->stop[i]);
        for (size_t p = 0; p + ls <= t->nhold && p < best; p++)
            if (memcmp(t->hold + p, t->stop[i], ls) == 0) {
                best = p;
                break;
            }
    }
    return best;
}

/* The length of the longest tail of the held text that is a proper prefix
 * of a stop string. */
static size_t partial_tail(const wk__stop_text *t) {
    size_t best = 0;
    for (int i = 0; i < t->n_stop; i++) {
        size_t ls = strlen(t->stop[i]);
        for (size_t l = ls - 1 < t->nhold ? ls - 1 : t->nhold; l > best; l--)
            if (memcmp(t->hold + t->nhold - l, t->stop[i], l) == 0) {
                best = l;
                break;
            }
    }
    return best;
}

int wk__stop_text_put(wk__stop_text *t, const char *bytes, size_t n) {
    if (n == 0) return WK__TEXT_GO_ON;
    if (t->n_stop == 0) { /* nothing to hold back */
        if (!t->on_text) return WK__TEXT_GO_ON;
        return t->on_text(t->ctx, bytes, n) ? WK__TEXT_CALLBACK : WK__TEXT_GO_ON;
    }
    if (t->nhold + n > t->cap) {
        size_t cap = (t->nhold + n) * 2;
        char *h = realloc(t->hold, cap);
        if (!h) return WK__TEXT_OOM;
        t->hold = h;
        t->cap = cap;
    }
    memcpy(t->hold + t->nhold, bytes, n);
    t->nhold += n;
    size_t m = first_match(t);
    if (m < t->nhold) {
        int rc = emit(t, m);
        t->nhold = 0;
        return rc == WK__TEXT_GO_ON ? WK__TEXT_STOP_STRING : rc;
    }
    size_t out = t->nhold - partial_tail(t);
    /* the held tail starts a stop string, so it starts a UTF-8 character
     * when the stop strings are UTF-8; back off continuation bytes anyway */
    while (out > 0 && out < t->nhold && ((unsigned char)t->hold[out] & 0xC0) == 0x80) out--;
    int rc = emit(t, out);
    memmove(t->hold, t->hold + out, t->nhold - out);
    t->nhold -= out;
    return rc;
}

int wk__stop_text_finish(wk__stop_text *t) {
    int rc = emit(t, t->nhold);
    t->nhold = 0;
    return rc;
}

void wk__stop_text_free(wk__stop_text *t) {
    free(t->hold);
    t->hold = NULL;
    t->nhold = t->cap = 0;
}
