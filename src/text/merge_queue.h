/* The queue of candidate merges both BPE forms share (bpe.c: by rank;
 * spm.c: by score or rank): a binary heap popping the lowest key first,
 * ties to the leftmost pair (as HF, SentencePiece and llama.cpp do).
 * Stale entries are the caller's to skip on pop. x and y are the caller's:
 * the pair's ids (bpe.c) or the merged id and the pair's byte length
 * (spm.c), what it needs to tell a stale entry. */
#ifndef WICK_TEXT_MERGE_QUEUE_H
#define WICK_TEXT_MERGE_QUEUE_H
#include <stdbool.h>
#include <stdint.h>

typedef struct wk__merge_cand {
    double key;   /* lower first: a rank, or minus a score (exact in a double) */
    int32_t left; /* the pair's left symbol */
    int32_t x, y;
} wk__merge_cand;

static inline bool wk__merge_before(const wk__merge_cand *p, const wk__merge_cand *q) {
    return p->key != q->key ? p->key < q->key : p->left < q->left;
}

static inline void wk__merge_push(wk__merge_cand *h, int32_t *n, wk__merge_cand c) {
    int32_t i = (*n)++;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!wk__merge_before(&c, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static inline wk__merge_cand wk__merge_pop(wk__merge_cand *h, int32_t *n) {
    wk__merge_cand top = h[0], last = h[--*n];
    int32_t i = 0;
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        const wk__merge_cand *best = &last;
        if (l < *n && wk__merge_before(&h[l], best)) m = l, best = &h[l];
        if (r < *n && wk__merge_before(&h[r], best)) m = r;
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (*n > 0) h[i] = last;
    return top;
}

#endif
