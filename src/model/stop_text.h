/* The text side of generation (src/model/stop_text.c): decoded bytes go in,
 * and come out through the caller's callback except what could still turn
 * into a stop string, which is held until it cannot; a stop string that
 * completes ends the text right before it. */
#ifndef WICK_MODEL_STOP_TEXT_H
#define WICK_MODEL_STOP_TEXT_H
#include <stddef.h>

typedef struct wk__stop_text {
    const char *const *stop; /* non-empty strings */
    int n_stop;
    int (*on_text)(void *ctx, const char *bytes, size_t n); /* may be NULL: text is dropped */
    void *ctx;
    char *hold; /* bytes not passed on yet */
    size_t nhold, cap;
} wk__stop_text;

enum { WK__TEXT_GO_ON = 0, WK__TEXT_STOP_STRING = 2, WK__TEXT_CALLBACK = 3, WK__TEXT_OOM = -1 };

/* Feed n bytes (complete UTF-8). Returns WK__TEXT_GO_ON, WK__TEXT_STOP_STRING
 * (the text before the match was passed on, nothing after it will be),
 * WK__TEXT_CALLBACK (on_text returned nonzero) or WK__TEXT_OOM. */
int wk__stop_text_put(wk__stop_text *t, const char *bytes, size_t n);
/* The end of the text: pass on what is held (no stop string can complete
 * any more). Same return values. */
int wk__stop_text_finish(wk__stop_text *t);
void wk__stop_text_free(wk__stop_text *t);

#endif
