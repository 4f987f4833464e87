/* The matcher: where a parse can be after some text, as a set of pushdown
 * stacks, and how that set moves over one code point.
 *
 * A stack is a chain of nodes (an element position, the node below it);
 * nodes are hash-consed, so two equal stacks are one node id, and a stack
 * set (its top node ids, sorted, plus "the empty stack is in it": the text
 * may end here) is interned too, so a set is one int. Transitions
 * (set, code point) -> set are memoised: after the first time, a step is a
 * hash lookup, which is what makes a token-mask walk over a vocabulary
 * trie cheap (grammar_state.c). A set's top elements are always character
 * matchers (CHAR / SET / ANY): references are expanded when a node is
 * pushed, which terminates because compile refused left recursion.
 *
 * One matcher belongs to one sequence (not thread-safe); it only grows,
 * until wk__gm_rebase keeps one set and drops the rest. */
#ifndef WICK_TEXT_GRAMMAR_MATCH_H
#define WICK_TEXT_GRAMMAR_MATCH_H
#include <stdbool.h>
#include <stdint.h>
#include "text/grammar_internal.h"

#define WK__GM_DEAD (-2) /* no stack survives: the text cannot go on this way */
#define WK__GM_ERR (-1)  /* wk_last_error says why (out of memory, a limit) */

typedef struct wk__gm_set {
    uint32_t off, n;       /* tops in pool[off, off + n) */
    bool complete;         /* the empty stack: the text so far is a sentence */
    int32_t succ;          /* the set most ASCII bytes lead to (chosen on first use; -1: not yet) */
    uint64_t same[2], known[2]; /* ASCII byte b leads to succ (same), once computed (known) */
} wk__gm_set;

typedef struct wk__gm {
    const wk_grammar *g;
    /* nodes */
    uint32_t *npos;
    int32_t *npar;
    uint32_t *nseen;
    uint32_t nn, capn, gen;
    uint32_t *nh;
    uint64_t nhmask;
    /* sets */
    uint32_t *pool;
    uint64_t npool, cappool;
    wk__gm_set *sets;
    uint32_t ns, caps;
    uint32_t *sh;
    uint64_t shmask;
    /* transitions: key set << 21 | cp, value the next set or WK__GM_DEAD */
    uint64_t *tk;
    int32_t *tv;
    uint64_t tmask, nt;
    /* scratch */
    uint32_t *tmp, *work;
    uint32_t ntmp, captmp, nwork, capwork;
} wk__gm;

/* A matcher over g, at g's start; returns the start set, or WK__GM_ERR. */
int32_t wk__gm_init(wk__gm *m, const wk_grammar *g);
void wk__gm_free(wk__gm *m);
/* The set after code point cp, WK__GM_DEAD, or WK__GM_ERR. */
int32_t wk__gm_next(wk__gm *m, int32_t set, uint32_t cp);
/* Whether some code point in [lo, hi] can follow (a partial character). */
bool wk__gm_can_range(const wk__gm *m, int32_t set, uint32_t lo, uint32_t hi);
static inline bool wk__gm_complete(const wk__gm *m, int32_t set) { return m->sets[set].complete; }
/* Whether every ASCII byte of bytes[] (a 128-bit set, not empty) leads
 * from set to one and the same live set: 1 with *next set, 0 if not, -1 on
 * error. Inside a string (or a counted run of characters) nearly every
 * byte does, so the mask walk can take whole trie subtrees at once. */
int wk__gm_uniform(wk__gm *m, int32_t set, const uint64_t bytes[2], int32_t *next);
/* Drop every node, set and transition except set's own; returns its new id. */
int32_t wk__gm_rebase(wk__gm *m, int32_t set);
/* Memory in use is past the point where a rebase is worth it. */
static inline bool wk__gm_big(const wk__gm *m) { return m->nn > (1u << 20) || m->nt > (1u << 21) || m->ns > (1u << 18); }

#endif
