/* A byte trie of a vocabulary's token strings, for the token-mask walk
 * (grammar_state.c): tokens that share a prefix are checked against the
 * grammar once for that prefix, and a subtree the grammar cannot enter is
 * skipped whole. Token ids are stored sorted by their bytes, so every
 * node's subtree is one contiguous run of ids (filled at once when the
 * grammar accepts everything under it). */
#ifndef WICK_TEXT_GRAMMAR_TRIE_H
#define WICK_TEXT_GRAMMAR_TRIE_H
#include <stdbool.h>
#include <stdint.h>
#include "wick/tokenizer.h"

/* Tokens longer than this are left out of the trie (never allowed). */
#define WK__GT_MAX_TOKEN 4096

typedef struct wk__gt_node {
    uint32_t child, nchild; /* children: nodes[child, + nchild), by byte */
    uint32_t lo, mid, hi;   /* ids[lo, mid): tokens ending here; ids[mid, hi): below */
    uint64_t below[2];      /* ASCII bytes on the edges under this node */
    uint32_t depth_below;   /* bytes of the longest token under this node, past it */
    uint8_t byte;           /* the edge into this node */
    bool below_high;        /* a byte >= 0x80 under this node */
} wk__gt_node;

typedef struct wk__gtrie {
    wk__gt_node *nodes;
    uint32_t nnodes;
    int32_t *ids;
    uint32_t nids;
} wk__gtrie;

/* Every id that is not special / control and has 1..WK__GT_MAX_TOKEN bytes. */
bool wk__gtrie_build(wk__gtrie *tr, const wk_tokenizer *t);
void wk__gtrie_free(wk__gtrie *tr);
/* The tokenizer's trie, built on its first use and kept with it (a
 * tokenizer is immutable, so one trie serves every state; two threads
 * racing to build keep one). NULL with wk_last_error. */
const wk__gtrie *wk__gtrie_of(const wk_tokenizer *t);
/* Frees a trie made by wk__gtrie_of (wk_tokenizer_free calls it). */
void wk__gtrie_release(wk__gtrie *tr);

#endif
